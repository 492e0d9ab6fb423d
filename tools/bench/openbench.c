// SPDX-License-Identifier: Apache-2.0
/*
 * openbench ITERATIONS PATH [create]: open()+close() PATH in a loop and
 * print the mean cost per iteration in (guest-clock) nanoseconds. One
 * warm-up pass of ITERATIONS/10 first. With `create`, each iteration
 * creates PATH (a new inode, and a dentry given it: d_instantiate), closes
 * and unlinks it.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int loop(long n, const char *path, int create)
{
	for (long i = 0; i < n; i++) {
		int fd = create ? open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			perror(path);
			return -1;
		}
		close(fd);
		if (create && unlink(path) < 0) {
			perror(path);
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	long n;
	double t0, t1;
	int create = argc == 4 && !strcmp(argv[3], "create");

	if ((argc != 3 && !create) || (n = atol(argv[1])) <= 0) {
		fprintf(stderr, "usage: openbench ITERATIONS PATH [create]\n");
		return 2;
	}
	if (loop(n / 10, argv[2], create) < 0)
		return 1;
	t0 = now_ns();
	if (loop(n, argv[2], create) < 0)
		return 1;
	t1 = now_ns();
	printf("%.1f\n", (t1 - t0) / n);
	return 0;
}
