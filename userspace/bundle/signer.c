// SPDX-License-Identifier: Apache-2.0
/* --signer-cmd: the PAE bytes go to an external command (KMS/HSM wrapper); its stdout is the signature. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "bundle/sign.h"

#define SIGNER(why, err, ...) custode_refuse(why, err, CUSTODE_REASON_BUNDLE_SIGNER, __VA_ARGS__)

extern char **environ;

int custode_signer_cmd_sign(const char *cmd, const void *msg, size_t len, struct custode_bundle_sig *out,
			    struct custode_refusal *why)
{
	posix_spawn_file_actions_t fa;
	int to_child[2] = {-1, -1}, from_child[2] = {-1, -1};
	unsigned char buf[CUSTODE_BUNDLE_MAX_SIG + 1];
	size_t got = 0, sent = 0;
	sigset_t pipe_set, old_set;
	bool overflow = false, short_read = false;
	int status = 0, err = 0;
	pid_t pid;
	char *argv[] = {"sh", "-c", (char *)cmd, NULL};

	if (!cmd || !cmd[0])
		return SIGNER(why, EINVAL, "empty signer command");
	if (pipe2(to_child, O_CLOEXEC) < 0 || pipe2(from_child, O_CLOEXEC) < 0) {
		err = SIGNER(why, errno, "pipe: %s", strerror(errno));
		goto close_pipes;
	}
	if ((err = posix_spawn_file_actions_init(&fa))) {
		err = SIGNER(why, err, "spawn: %s", strerror(err));
		goto close_pipes;
	}
	/* dup2 clears O_CLOEXEC on the child's 0 and 1; every other pipe end closes on exec. */
	posix_spawn_file_actions_adddup2(&fa, to_child[0], 0);
	posix_spawn_file_actions_adddup2(&fa, from_child[1], 1);
	err = posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (err) {
		err = SIGNER(why, err, "cannot run /bin/sh: %s", strerror(err));
		goto close_pipes;
	}
	close(to_child[0]);
	close(from_child[1]);
	to_child[0] = from_child[1] = -1;
	fcntl(to_child[1], F_SETFL, O_NONBLOCK);
	fcntl(from_child[0], F_SETFL, O_NONBLOCK);

	/*
	 * A signer that exits without reading all its input would raise
	 * SIGPIPE in this process: block it for the exchange (a library must
	 * not change dispositions) and discard a pending one afterwards.
	 */
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);

	/* Write the message and read the signature at once: neither side can block the other. */
	while (from_child[0] >= 0) {
		struct pollfd p[2] = {{.fd = from_child[0], .events = POLLIN}, {.fd = to_child[1], .events = POLLOUT}};
		int n = poll(p, to_child[1] >= 0 ? 2 : 1, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			break;
		}
		if (to_child[1] >= 0 && (p[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t w = sent < len ? write(to_child[1], (const char *)msg + sent, len - sent) : 0;
			if (w > 0)
				sent += (size_t)w;
			if (w < 0 && errno != EAGAIN && errno != EINTR)
				short_read = true; /* EPIPE: the signer stopped reading */
			if (sent == len || short_read) {
				close(to_child[1]);
				to_child[1] = -1;
			}
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t r = read(from_child[0], buf + got, got < sizeof(buf) ? sizeof(buf) - got : 0);
			if (r > 0)
				got += (size_t)r;
			if (got >= sizeof(buf)) {
				overflow = true; /* stop reading; the signer gets EPIPE */
				r = 0;
			}
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
				close(from_child[0]);
				from_child[0] = -1;
			}
		}
	}
	if (to_child[1] >= 0) {
		close(to_child[1]);
		to_child[1] = -1;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	{
		struct timespec zero = {0, 0};
		sigset_t pending;
		sigpending(&pending);
		if (sigismember(&pending, SIGPIPE))
			sigtimedwait(&pipe_set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old_set, NULL);

	if (err)
		return SIGNER(why, err, "signer I/O: %s", strerror(err));
	if (WIFSIGNALED(status))
		return SIGNER(why, ECHILD, "signer command killed by signal %d", WTERMSIG(status));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return SIGNER(why, ECHILD, "signer command exited with status %d", WEXITSTATUS(status));
	if (short_read || sent != len)
		return SIGNER(why, EPIPE, "signer command exited after reading %zu of the %zu message bytes", sent, len);
	if (overflow)
		return SIGNER(why, EMSGSIZE, "signer output is longer than %d bytes (it must be the raw signature)",
			      CUSTODE_BUNDLE_MAX_SIG);
	if (got == 0)
		return SIGNER(why, ENODATA, "signer command printed no signature");
	out->sig = malloc(got);
	if (!out->sig)
		return SIGNER(why, ENOMEM, "out of memory");
	memcpy(out->sig, buf, got);
	out->sig_len = got;
	out->keyid = NULL;
	return 0;

close_pipes:
	for (int i = 0; i < 2; i++) {
		if (to_child[i] >= 0)
			close(to_child[i]);
		if (from_child[i] >= 0)
			close(from_child[i]);
	}
	return err;
}
