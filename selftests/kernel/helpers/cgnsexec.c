// SPDX-License-Identifier: Apache-2.0
/*
 * cgnsexec: start PROG in a cgroup namespace of its own, as a container
 * runtime starts a container's process: moves itself into CGROUP (a
 * directory of the cgroup v2 tree), unshares its cgroup namespace (so its
 * own cgroup reads as "/"), then execs PROG. Exit 2 usage, 1 a step failed.
 *
 *   cgnsexec CGROUP PROG [ARG...]
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char procs[4096];
	int fd, n;

	if (argc < 3) {
		fprintf(stderr, "usage: cgnsexec CGROUP PROG [ARG...]\n");
		return 2;
	}
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", argv[1]);
	fd = open(procs, O_WRONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : dprintf(fd, "%d\n", (int)getpid());
	if (fd < 0 || n < 0) {
		fprintf(stderr, "cgnsexec: %s: %s\n", procs, strerror(errno));
		return 1;
	}
	close(fd);
	if (unshare(CLONE_NEWCGROUP) < 0) {
		perror("cgnsexec: unshare(CLONE_NEWCGROUP)");
		return 1;
	}
	execvp(argv[2], argv + 2);
	fprintf(stderr, "cgnsexec: %s: %s\n", argv[2], strerror(errno));
	return 1;
}
