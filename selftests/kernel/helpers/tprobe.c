// SPDX-License-Identifier: Apache-2.0
/*
 * tprobe: tries one operation and prints its outcome ("ok" or the errno
 * name), for kernel tests that run it inside a custode run.
 *
 *   tprobe open PATH MODE          MODE: r w rw a t (O_RDONLY|O_TRUNC) c (O_CREAT|O_WRONLY)
 *   tprobe wait-open PATH MODE     print "ready PID", read a line, open, print the
 *                                  outcome, then block until stdin closes or a kill
 *   tprobe exec PATH [ARG...]      execv, print the errno on failure
 * Exit: 0 ok, 1 the operation failed, 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *errname(int e)
{
	switch (e) {
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EEXIST: return "EEXIST";
	case EISDIR: return "EISDIR";
	case ENOTDIR: return "ENOTDIR";
	case ENAMETOOLONG: return "ENAMETOOLONG";
	case ELOOP: return "ELOOP";
	case EROFS: return "EROFS";
	case EXDEV: return "EXDEV";
	case ENOEXEC: return "ENOEXEC";
	default: return "E?";
	}
}

static int flags_of(const char *m)
{
	if (!strcmp(m, "r")) return O_RDONLY;
	if (!strcmp(m, "w")) return O_WRONLY;
	if (!strcmp(m, "rw")) return O_RDWR;
	if (!strcmp(m, "a")) return O_WRONLY | O_APPEND;
	if (!strcmp(m, "t")) return O_RDONLY | O_TRUNC;
	if (!strcmp(m, "c")) return O_WRONLY | O_CREAT;
	return -1;
}

static int do_open(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC, 0644);

	if (fd < 0) {
		printf("%s\n", errname(errno));
		return 1;
	}
	close(fd);
	printf("ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc >= 4 && !strcmp(argv[1], "open")) {
		int f = flags_of(argv[3]);
		return f < 0 ? 2 : do_open(argv[2], f);
	}
	if (argc >= 4 && !strcmp(argv[1], "wait-open")) {
		char line[64];
		int f = flags_of(argv[3]), r;

		if (f < 0)
			return 2;
		printf("ready %d\n", (int)getpid());
		if (!fgets(line, sizeof(line), stdin))
			return 2;
		r = do_open(argv[2], f);
		while (fgets(line, sizeof(line), stdin))
			;
		return r;
	}
	if (argc >= 3 && !strcmp(argv[1], "exec")) {
		execv(argv[2], argv + 2);
		printf("%s\n", errname(errno));
		return 1;
	}
	fprintf(stderr, "usage: tprobe open|wait-open PATH MODE | exec PATH [ARG...]\n");
	return 2;
}
