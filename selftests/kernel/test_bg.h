/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Background processes and their output files, shared by the kernel tests'
 * fixtures (daemon, DNS): start one with its stdout/stderr in files, wait
 * for a line in a file, stop it. Every process started gets a parent-death
 * signal, so a failing test leaves nothing behind for the next one.
 */
#ifndef TEST_BG_H
#define TEST_BG_H

#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include "ktest.h"

static inline long kt_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* Bytes of a file (static buffer; "" if unreadable). */
static inline const char *kt_slurp(const char *path)
{
	static char buf[4 << 20];
	int fd = open(path, O_RDONLY);
	ssize_t n = 0, r;

	buf[0] = 0;
	if (fd < 0)
		return buf;
	while (n < (ssize_t)sizeof(buf) - 1 && (r = read(fd, buf + n, sizeof(buf) - 1 - (size_t)n)) > 0)
		n += r;
	buf[n] = 0;
	close(fd);
	return buf;
}

/* Wait until path holds needle; false on timeout or if pid exits first. */
static inline bool kt_wait_for(const char *path, const char *needle, int pid, int timeout_ms)
{
	long end = kt_ms() + ktest_slack(timeout_ms);
	int st;

	while (kt_ms() < end) {
		if (strstr(kt_slurp(path), needle))
			return true;
		if (pid > 0 && waitpid(pid, &st, WNOHANG) == pid)
			return strstr(kt_slurp(path), needle) != NULL;
		usleep(20000);
	}
	return false;
}

/* Start argv in the background, stdout and stderr to files (NULL: /dev/null); it gets SIGTERM if the test dies. */
static inline int kt_bg(char *const argv[], const char *out, const char *err)
{
	pid_t pid = fork();

	if (pid == 0) {
		int n = open("/dev/null", O_RDWR);
		int o = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0644);
		int e = open(err ? err : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0644);

		prctl(PR_SET_PDEATHSIG, SIGTERM);
		dup2(n, 0);
		dup2(o, 1);
		dup2(e, 2);
		execv(argv[0], argv);
		_exit(98);
	}
	return pid;
}

/* Signal *pid, wait up to 10 s (then SIGKILL), reap it; *pid becomes 0. */
static inline void kt_stop(int *pid, int sig)
{
	int st;

	if (*pid <= 0)
		return;
	kill(*pid, sig);
	for (int i = 0; i < 1000; i++) {
		if (waitpid(*pid, &st, WNOHANG) == *pid) {
			*pid = 0;
			return;
		}
		usleep(10000);
	}
	kill(*pid, SIGKILL);
	waitpid(*pid, &st, 0);
	*pid = 0;
}

#endif
