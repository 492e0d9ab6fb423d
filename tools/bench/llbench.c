// SPDX-License-Identifier: Apache-2.0
/*
 * llbench ITERATIONS PATH NRULES: the Landlock anchor for openbench. Builds a
 * Landlock ruleset with the same shape as custode's benchmark policy (read
 * and execute on the system directories, read on /etc, and NRULES extra
 * read-only directories /tmp/bench/d<i>, which must exist), restricts
 * itself, then times open()+close() of PATH like openbench.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "landlock_rule.h"

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n, nrules;
	int ruleset;
	double t0, t1;
	char dir[64];

	if (argc != 4 || (n = atol(argv[1])) <= 0 || (nrules = atol(argv[3])) < 0) {
		fprintf(stderr, "usage: llbench ITERATIONS PATH NRULES\n");
		return 2;
	}
	ruleset = landlock_system_ruleset();
	if (ruleset < 0)
		return 1;
	for (long i = 0; i < nrules; i++) {
		snprintf(dir, sizeof(dir), "/tmp/bench/d%ld", i);
		if (add_rule(ruleset, dir, LL_RD) < 0)
			return perror(dir), 1;
	}
	if (landlock_enforce(ruleset) < 0)
		return 1;
	for (long i = 0; i < n / 10 + 1; i++) {
		int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return perror(argv[2]), 1;
		close(fd);
	}
	t0 = now_ns();
	for (long i = 0; i < n; i++) {
		int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return perror(argv[2]), 1;
		close(fd);
	}
	t1 = now_ns();
	printf("%.1f\n", (t1 - t0) / n);
	return 0;
}
