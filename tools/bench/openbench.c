// SPDX-License-Identifier: Apache-2.0
/*
 * openbench ITERATIONS PATH: open()+close() PATH in a loop and print the
 * mean cost per iteration in (guest-clock) nanoseconds. One warm-up pass of
 * ITERATIONS/10 first.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int loop(long n, const char *path)
{
	for (long i = 0; i < n; i++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			perror(path);
			return -1;
		}
		close(fd);
	}
	return 0;
}

int main(int argc, char **argv)
{
	long n;
	double t0, t1;

	if (argc != 3 || (n = atol(argv[1])) <= 0) {
		fprintf(stderr, "usage: openbench ITERATIONS PATH\n");
		return 2;
	}
	if (loop(n / 10, argv[2]) < 0)
		return 1;
	t0 = now_ns();
	if (loop(n, argv[2]) < 0)
		return 1;
	t1 = now_ns();
	printf("%.1f\n", (t1 - t0) / n);
	return 0;
}
