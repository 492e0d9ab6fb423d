// SPDX-License-Identifier: Apache-2.0
/*
 * execbench [--landlock] [--uid UID] ITERATIONS PATH: fork, execve PATH (no
 * arguments, empty environment), wait, ITERATIONS times after ITERATIONS/10
 * warm-up ones; prints the mean ns per fork+exec+exit+wait (guest clock).
 * With PATH a directory: the first exec of each of PATH/t0 .. PATH/t<N-1>
 * (copies of one program, so N inodes never decided before), after the
 * warm-up on PATH/warm.
 * The helper of exec-bench (tools/bench). PATH should be a dynamically
 * linked program, so each exec also maps its libraries with PROT_EXEC (the
 * mmap_file hook) besides the binary and its interpreter (bprm_check).
 *
 * --landlock: restrict itself first with Landlock the shape of the bench's
 * custode policy (read+execute on /usr /bin /sbin /lib /lib64, read on
 * /etc). --uid UID: drop to UID/GID first (a custode run's CMD runs as nobody).
 */
#include <errno.h>
#include <grp.h>
#include <linux/landlock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "landlock_rule.h"

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int landlock(void)
{
	int ruleset = landlock_system_ruleset();

	return ruleset < 0 ? -1 : landlock_enforce(ruleset);
}

static int loop(long n, char *path, const char *dir)
{
	char one[4096], *argv[] = {path, NULL}, *envp[] = {NULL};

	for (long i = 0; i < n; i++) {
		int st;
		pid_t pid;

		if (dir) {
			snprintf(one, sizeof(one), "%s/t%ld", dir, i);
			path = argv[0] = one;
		}
		pid = fork();

		if (pid < 0)
			return perror("fork"), -1;
		if (pid == 0) {
			execve(path, argv, envp);
			_exit(127);
		}
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "execbench: %s did not exit 0 (status 0x%x)\n", path, st);
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	int ll = 0, i = 1;
	long n, uid = -1;
	char warm[4096];
	const char *dir = NULL;
	struct stat st;
	double t0, t1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--landlock"))
			ll = 1;
		else if (!strcmp(argv[i], "--uid") && i + 1 < argc)
			uid = atol(argv[++i]);
		else
			break;
	}
	if (argc - i != 2 || (n = atol(argv[i])) <= 0) {
		fprintf(stderr, "usage: execbench [--landlock] [--uid UID] ITERATIONS PATH\n");
		return 2;
	}
	if (uid >= 0 && (setgroups(0, NULL) < 0 || setresgid((gid_t)uid, (gid_t)uid, (gid_t)uid) < 0 ||
			 setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) < 0))
		return perror("execbench: --uid"), 1;
	if (ll && landlock() < 0)
		return 1;
	if (stat(argv[i + 1], &st) == 0 && S_ISDIR(st.st_mode)) {
		dir = argv[i + 1];
		snprintf(warm, sizeof(warm), "%s/warm", dir);
	} else {
		snprintf(warm, sizeof(warm), "%s", argv[i + 1]);
	}
	if (loop(n / 10 + 1, warm, NULL) < 0)
		return 1;
	t0 = now_ns();
	if (loop(n, warm, dir) < 0)
		return 1;
	t1 = now_ns();
	printf("%.1f\n", (t1 - t0) / (double)n);
	return 0;
}
