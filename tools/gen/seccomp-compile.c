// SPDX-License-Identifier: Apache-2.0
/*
 * The launcher's seccomp filter (userspace/run/seccomp.h says what it
 * denies), compiled by libseccomp. A build step (tools/gen/seccomp-gen.c)
 * runs this once per variant and writes the programs into the binary, so
 * `custode run` neither links libseccomp nor compiles at every start;
 * selftests/unit/test_seccomp.c checks the embedded programs against a
 * fresh compile.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <seccomp.h>

#include "seccomp-compile.h"

#ifndef AF_MAX_COMPAT
#define AF_MAX_COMPAT 64 /* beyond the kernel's AF_MAX, so new families are denied too */
#endif

/* Namespace flags of clone(2) and unshare(2) (linux/sched.h); CLONE_NEWTIME only for unshare. */
#define NS_CLONE_NEWNS 0x00020000UL
#define NS_CLONE_NEWCGROUP 0x02000000UL
#define NS_CLONE_NEWUTS 0x04000000UL
#define NS_CLONE_NEWIPC 0x08000000UL
#define NS_CLONE_NEWUSER 0x10000000UL
#define NS_CLONE_NEWPID 0x20000000UL
#define NS_CLONE_NEWNET 0x40000000UL
#define NS_CLONE_NEWTIME 0x00000080UL /* in clone(2)'s flags this bit is part of the exit signal */

static int deny_all(scmp_filter_ctx ctx, const char *const *names)
{
	for (; *names; names++) {
		int nr = seccomp_syscall_resolve_name(*names);
		int err;

		if (nr == __NR_SCMP_ERROR)
			return -ENOSYS; /* fail closed: a denylist with a hole is not the one documented */
		if ((err = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0)))
			return err;
	}
	return 0;
}

static int add_rules(scmp_filter_ctx ctx, const struct custode_seccomp_opts *o)
{
	static const unsigned long ns_flags[] = {NS_CLONE_NEWNS,  NS_CLONE_NEWCGROUP, NS_CLONE_NEWUTS, NS_CLONE_NEWIPC,
						 NS_CLONE_NEWUSER, NS_CLONE_NEWPID,   NS_CLONE_NEWNET};
	uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
	int err;

	if ((err = deny_all(ctx, custode_seccomp_denied)))
		return err;
	if (!o->allow_ptrace && (err = deny_all(ctx, custode_seccomp_ptrace_calls)))
		return err;
	for (size_t i = 0; i < sizeof(ns_flags) / sizeof(ns_flags[0]); i++) {
		if ((err = seccomp_rule_add(ctx, eperm, SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]))))
			return err;
		if ((err = seccomp_rule_add(ctx, eperm, SCMP_SYS(unshare), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]))))
			return err;
	}
	if ((err = seccomp_rule_add(ctx, eperm, SCMP_SYS(unshare), 1,
				    SCMP_A0(SCMP_CMP_MASKED_EQ, NS_CLONE_NEWTIME, NS_CLONE_NEWTIME))))
		return err;
	/* clone3's flags live in user memory: ENOSYS makes libc fall back to clone(2), filtered above */
	if ((err = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0)))
		return err;

	/* socket(2)'s domain is an int: compare the low 32 bits only, so high garbage can't slip by */
	for (int af = 0; af < AF_MAX_COMPAT; af++) {
		if (af == AF_UNIX || af == AF_INET || af == AF_INET6 || af == AF_NETLINK)
			continue;
		if ((err = seccomp_rule_add(ctx, eperm, SCMP_SYS(socket), 1, SCMP_A0_32(SCMP_CMP_EQ, (uint32_t)af))))
			return err;
	}
	if ((err = seccomp_rule_add(ctx, eperm, SCMP_SYS(socket), 1, SCMP_A0_32(SCMP_CMP_GE, AF_MAX_COMPAT))) ||
	    (err = seccomp_rule_add(ctx, eperm, SCMP_SYS(socket), 2, SCMP_A0_32(SCMP_CMP_EQ, AF_NETLINK),
				    SCMP_A2_32(SCMP_CMP_NE, NETLINK_ROUTE))) ||
	    (err = seccomp_rule_add(ctx, eperm, SCMP_SYS(socketpair), 1, SCMP_A0_32(SCMP_CMP_NE, AF_UNIX))))
		return err;
	return 0;
}

int custode_seccomp_compile(const struct custode_seccomp_opts *o, struct custode_seccomp_prog *out)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	struct sock_filter *insns = NULL;
	int err, fd = -1;
	off_t size;

	if (!ctx)
		return -ENOMEM;
	/*
	 * Only the native ABI is in the filter; a syscall of any other (i386
	 * through int 0x80, and x32 numbers, which libseccomp checks on x86_64)
	 * takes the bad-arch action: kill the whole process.
	 */
	err = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (!err)
		err = add_rules(ctx, o);
	if (err)
		goto out;
	/* Export the compiled program: the child installs it with one syscall, no allocation. */
	fd = memfd_create("custode-seccomp", MFD_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	if ((err = seccomp_export_bpf(ctx, fd)))
		goto out;
	size = lseek(fd, 0, SEEK_END);
	if (size <= 0 || size % (off_t)sizeof(struct sock_filter) || size / (off_t)sizeof(struct sock_filter) > 65535) {
		err = -EINVAL;
		goto out;
	}
	insns = malloc((size_t)size);
	if (!insns) {
		err = -ENOMEM;
		goto out;
	}
	if (pread(fd, insns, (size_t)size, 0) != size) {
		err = -EIO;
		free(insns);
		goto out;
	}
	out->insns = insns;
	out->len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
out:
	if (fd >= 0)
		close(fd);
	seccomp_release(ctx);
	return err;
}
