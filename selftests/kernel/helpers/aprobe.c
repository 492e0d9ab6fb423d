// SPDX-License-Identifier: Apache-2.0
/*
 * aprobe: the kernel tests' process inside attached (and launched) runs.
 *
 *   aprobe repl         print "ready PID", then one answer line per command line:
 *                         open PATH          "ok" or the errno name (O_RDONLY)
 *                         kill PID SIG       kill(2): "ok" or the errno name
 *                         forkkill           fork a child that sleeps, SIGTERM it: "ok" or the errno name
 *                         flood N PATH       open PATH N times: "denied D ok O other X"
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
#include <sys/wait.h>

static const char *errname(int e)
{
	switch (e) {
	case 0: return "ok";
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case ESRCH: return "ESRCH";
	case EINVAL: return "EINVAL";
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

static void one(char *line)
{
	char path[4096];
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
