/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CUSTODE_GEN_SECCOMP_COMPILE_H
#define CUSTODE_GEN_SECCOMP_COMPILE_H

#include <linux/filter.h>

#include "run/seccomp.h"

/* A program libseccomp compiled (malloc'd insns). */
struct custode_seccomp_prog {
	struct sock_filter *insns;
	unsigned short len;
};

/* Compile the filter for o. Returns 0 or -errno (-ENOSYS: a syscall unknown to this libseccomp). */
int custode_seccomp_compile(const struct custode_seccomp_opts *o, struct custode_seccomp_prog *out);

#endif
