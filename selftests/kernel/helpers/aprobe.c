// SPDX-License-Identifier: Apache-2.0
/*
 * aprobe: the kernel tests' process inside attached (and launched) runs.
 *
 *   aprobe repl         print "ready PID", then one answer line per command line:
 *                         open PATH          "ok" or the errno name (O_RDONLY)
 *                         kill PID SIG       kill(2): "ok" or the errno name
 *                         forkkill           fork a child that sleeps, SIGTERM it: "ok" or the errno name
 *                         flood N PATH       open PATH N times: "denied D ok O other X"
 *                         write PATH TEXT    open PATH O_WRONLY, write TEXT: "ok" or the errno name
 *                         clone_into DIR     clone3(CLONE_INTO_CGROUP) with an O_PATH fd of the cgroup
 *                                            directory DIR: "ok CGROUP" (the child's cgroup v2 path,
 *                                            from /proc/CHILD/cgroup; the child then exits) or the
 *                                            errno name
 *                         cgroup             "ok CGROUP": its own cgroup v2 path (/proc/self/cgroup)
 *                         mkdir PATH         mkdir(PATH, 0755): "ok" or the errno name
 *                         exit               exit 0
 *   aprobe flood N PATH print "denied D ok O other X" after N opens, exit 0
 *
 * Exit: 0, or 2 on usage errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/sched.h>

static const char *errname(int e)
{
	switch (e) {
	case 0: return "ok";
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case ESRCH: return "ESRCH";
	case EINVAL: return "EINVAL";
	case EBUSY: return "EBUSY";
	case EBADF: return "EBADF";
	case ENOTDIR: return "ENOTDIR";
	case ENOSYS: return "ENOSYS";
	case E2BIG: return "E2BIG";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EEXIST: return "EEXIST";
	default: return "E?";
	}
}

static void flood(long n, const char *path)
{
	long denied = 0, ok = 0, other = 0;

	for (long i = 0; i < n; i++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		if (fd >= 0) {
			ok++;
			close(fd);
		} else if (errno == EACCES || errno == EPERM) {
			denied++;
		} else {
			other++;
		}
	}
	printf("denied %ld ok %ld other %ld\n", denied, ok, other);
	fflush(stdout);
}

/* The cgroup v2 path ("0::" line) of /proc/PID/cgroup, or "" */
static void cgroup_of(const char *pid, char *out, size_t len)
{
	char path[64], l[4200];
	FILE *f;

	out[0] = 0;
	snprintf(path, sizeof(path), "/proc/%s/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(l, sizeof(l), f))
		if (!strncmp(l, "0::", 3)) {
			l[strcspn(l, "\n")] = 0;
			snprintf(out, len, "%s", l + 3);
		}
	fclose(f);
}

static void clone_into(const char *dir)
{
	struct clone_args args;
	char pid[32], cg[4200], b;
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC), hold[2], r;
	long c;

	if (fd < 0) {
		printf("%s\n", errname(errno));
		return;
	}
	/* the child waits for EOF on a pipe: it ends without a signal (a run may not signal it once outside) */
	if (pipe2(hold, O_CLOEXEC) < 0) {
		printf("%s\n", errname(errno));
		close(fd);
		return;
	}
	memset(&args, 0, sizeof(args));
	args.flags = CLONE_INTO_CGROUP;
	args.exit_signal = SIGCHLD;
	args.cgroup = (unsigned long)fd;
	c = syscall(SYS_clone3, &args, sizeof(args));
	r = errno;
	if (c == 0) {
		close(hold[1]);
		while (read(hold[0], &b, 1) > 0)
			;
		_exit(0);
	}
	close(fd);
	close(hold[0]);
	if (c < 0) {
		close(hold[1]);
		printf("%s\n", errname(r));
		return;
	}
	snprintf(pid, sizeof(pid), "%ld", c);
	cgroup_of(pid, cg, sizeof(cg));
	close(hold[1]);
	waitpid((pid_t)c, NULL, 0);
	printf("ok %s\n", cg);
}

static void one(char *line)
{
	char path[4096], text[256];
	long a, b;

	line[strcspn(line, "\n")] = 0;
	if (sscanf(line, "open %4095s", path) == 1) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		printf("%s\n", errname(fd >= 0 ? 0 : errno));
		if (fd >= 0)
			close(fd);
	} else if (sscanf(line, "kill %ld %ld", &a, &b) == 2) {
		printf("%s\n", errname(kill((pid_t)a, (int)b) == 0 ? 0 : errno));
	} else if (!strcmp(line, "forkkill")) {
		pid_t c = fork();
		int st, r;

		if (c == 0) {
			pause();
			_exit(0);
		}
		if (c < 0) {
			printf("%s\n", errname(errno));
		} else {
			r = kill(c, SIGTERM) == 0 ? 0 : errno;
			if (r)
				kill(c, SIGKILL); /* may fail too: then the reaper of the run does it */
			waitpid(c, &st, 0);
			printf("%s\n", errname(r));
		}
	} else if (sscanf(line, "flood %ld %4095s", &a, path) == 2) {
		flood(a, path);
		return;
	} else if (sscanf(line, "write %4095s %255s", path, text) == 2) {
		int fd = open(path, O_WRONLY | O_CLOEXEC), r = 0;

		if (fd < 0)
			r = errno;
		else if (write(fd, text, strlen(text)) < 0)
			r = errno;
		if (fd >= 0)
			close(fd);
		printf("%s\n", errname(r));
	} else if (sscanf(line, "mkdir %4095s", path) == 1) {
		printf("%s\n", errname(mkdir(path, 0755) == 0 ? 0 : errno));
	} else if (sscanf(line, "clone_into %4095s", path) == 1) {
		clone_into(path);
	} else if (!strcmp(line, "cgroup")) {
		char cg[4200];

		cgroup_of("self", cg, sizeof(cg));
		printf("ok %s\n", cg);
	} else if (!strcmp(line, "exit")) {
		exit(0);
	} else {
		printf("usage\n");
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	char line[8192];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && !strcmp(argv[1], "flood")) {
		flood(atol(argv[2]), argv[3]);
		return 0;
	}
	if (argc != 2 || strcmp(argv[1], "repl")) {
		fprintf(stderr, "usage: aprobe repl | aprobe flood N PATH\n");
		return 2;
	}
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin))
		one(line);
	return 0;
}
