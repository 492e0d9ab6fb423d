// SPDX-License-Identifier: Apache-2.0
/* The launcher's seccomp filter (run/seccomp.h): the program compiled at build time, installed in the child. */
#include <errno.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/seccomp.h>

#include "run/seccomp.h"

int custode_seccomp_build(const struct custode_seccomp_opts *o, struct custode_seccomp *out)
{
	const struct custode_seccomp *f = &custode_seccomp_filters[o->allow_ptrace ? 1 : 0];

	if (!f->insns || !f->len)
		return -EINVAL;
	*out = *f;
	return 0;
}

int custode_seccomp_apply(const struct custode_seccomp *f)
{
	struct sock_fprog prog = {.len = f->len, .filter = (struct sock_filter *)f->insns}; /* only read */

	if (!f->insns)
		return -EINVAL;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return -errno;
	return 0;
}

void custode_seccomp_free(struct custode_seccomp *f)
{
	f->insns = NULL;
	f->len = 0;
}
