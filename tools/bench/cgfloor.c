// SPDX-License-Identifier: Apache-2.0
/*
 * cgfloor [--bare] PARENT COMMAND [ARG...]: the least a launcher keyed on cgroups does
 * to run COMMAND the way `custode run` does, with none of custode's own work
 * (no policy, engine, maps, state files or resolver): make a cgroup below
 * PARENT, clone3 the child into it with a new IPC namespace, and in the child
 * a session, no_new_privs, the bounding set dropped, nobody's credentials and
 * custode's seccomp filter (the same embedded program); exec; wait; remove
 * the cgroup. tools/bench/lifecycle-bench's "cgroup floor" row: what is left
 * of `custode run` above it is custode's own. --bare: none of that, a plain
 * fork and exec through a second program (the "launcher floor": what any
 * launcher binary costs, bwrap's and custode's alike).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "run/seccomp.h"

#define NOBODY 65534

static int child(char **argv, int errfd)
{
	gid_t g = NOBODY;
	int e;

	setsid();
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		goto fail;
	for (int cap = 0; cap < 64; cap++)
		if (prctl(PR_CAPBSET_DROP, cap) < 0 && errno != EINVAL)
			goto fail;
	if (setgroups(1, &g) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 || setresuid(NOBODY, NOBODY, NOBODY) < 0)
		goto fail;
	if ((e = custode_seccomp_apply(&custode_seccomp_filters[0])) < 0) {
		errno = -e;
		goto fail;
	}
	execv(argv[0], argv);
fail:
	e = errno;
	if (write(errfd, &e, sizeof(e)) != sizeof(e))
		_exit(126);
	_exit(127);
}

/* --bare: fork, exec, wait. */
static int bare(char **argv)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0) {
		fprintf(stderr, "cgfloor: %s\n", strerror(errno));
		return 1;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
	struct clone_args a = {0};
	char cg[4096];
	int cgfd, errpipe[2], e = 0, st;
	long pid;

	if (argc >= 4 && !strcmp(argv[1], "--bare"))
		return bare(argv + 3);
	if (argc < 3) {
		fprintf(stderr, "usage: cgfloor [--bare] PARENT COMMAND [ARG...]\n");
		return 2;
	}
	snprintf(cg, sizeof(cg), "%s/cgfloor-%d", argv[1], (int)getpid());
	if (mkdir(cg, 0755) < 0 || (cgfd = open(cg, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 || pipe2(errpipe, O_CLOEXEC) < 0) {
		fprintf(stderr, "cgfloor: %s: %s\n", cg, strerror(errno));
		rmdir(cg);
		return 1;
	}
	a.flags = CLONE_INTO_CGROUP | CLONE_NEWIPC;
	a.exit_signal = SIGCHLD;
	a.cgroup = (unsigned long long)cgfd;
	pid = syscall(SYS_clone3, &a, sizeof(a));
	if (pid == 0) {
		close(errpipe[0]);
		child(argv + 2, errpipe[1]);
	}
	close(errpipe[1]);
	close(cgfd);
	if (pid < 0) {
		fprintf(stderr, "cgfloor: clone3: %s\n", strerror(errno));
		rmdir(cg);
		return 1;
	}
	if (read(errpipe[0], &e, sizeof(e)) == sizeof(e))
		fprintf(stderr, "cgfloor: %s: %s\n", argv[2], strerror(e));
	if (waitpid((pid_t)pid, &st, 0) < 0 || rmdir(cg) < 0) {
		fprintf(stderr, "cgfloor: %s: %s\n", cg, strerror(errno));
		return 1;
	}
	return e ? 127 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
