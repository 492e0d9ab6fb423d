// SPDX-License-Identifier: Apache-2.0
/*
 * seccomponly COMMAND [ARG...]: run COMMAND under the seccomp filter every
 * custode run gets (userspace/run/seccomp.c, the same build), and nothing
 * else: the "seccomp alone" column of the benches, so custode's BPF cost and
 * its filter's cost are told apart.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>

#include "run/seccomp.h"

int main(int argc, char **argv)
{
	struct custode_seccomp_opts o = {0};
	struct custode_seccomp f;
	int err;

	if (argc < 2) {
		fprintf(stderr, "usage: seccomponly COMMAND [ARG...]\n");
		return 2;
	}
	if ((err = custode_seccomp_build(&o, &f))) {
		fprintf(stderr, "seccomponly: build: %s\n", strerror(-err));
		return 1;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || (err = custode_seccomp_apply(&f))) {
		fprintf(stderr, "seccomponly: apply: %s\n", strerror(err ? -err : errno));
		return 1;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "seccomponly: %s: %s\n", argv[1], strerror(errno));
	return 127;
}
