// SPDX-License-Identifier: Apache-2.0
/* Run a helper program and take its stdout (capture.h). */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attach/capture.h"

extern char **environ;

int custode_capture(char *const argv[], size_t max, bool quiet, char **text, int *status)
{
	posix_spawn_file_actions_t fa;
	size_t len = 0;
	char *buf = malloc(max + 1);
	int p[2], err;
	pid_t pid;

	if (!buf)
		return -ENOMEM;
	if (pipe2(p, O_CLOEXEC) < 0) {
		err = errno;
		free(buf);
		return -err;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
	if (quiet)
		posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (err) {
		close(p[0]);
		free(buf);
		return -err;
	}
	for (;;) {
		ssize_t r = read(p[0], buf + len, max - len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		if (len == max)
			break;
	}
	close(p[0]);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	buf[len] = 0;
	if (len == max) {
		free(buf);
		return -E2BIG;
	}
	*text = buf;
	return 0;
}
