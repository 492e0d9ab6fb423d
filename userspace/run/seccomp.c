// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <seccomp.h>

#include "run/seccomp.h"

#ifndef AF_MAX_COMPAT
#define AF_MAX_COMPAT 64 /* beyond the kernel's AF_MAX, so new families are denied too */
#endif

int custode_seccomp_sockets(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	uint32_t deny = SCMP_ACT_ERRNO(EPERM);
	int err = 0;

	if (!ctx)
		return -ENOMEM;
	/* socket(2)'s domain is an int: compare the low 32 bits only, so high garbage can't slip by */
	for (int af = 0; af < AF_MAX_COMPAT && !err; af++) {
		if (af == AF_UNIX || af == AF_INET || af == AF_INET6 || af == AF_NETLINK)
			continue;
		err = seccomp_rule_add(ctx, deny, SCMP_SYS(socket), 1, SCMP_A0_32(SCMP_CMP_EQ, (uint32_t)af));
	}
	if (!err)
		err = seccomp_rule_add(ctx, deny, SCMP_SYS(socket), 1, SCMP_A0_32(SCMP_CMP_GE, AF_MAX_COMPAT));
	if (!err)
		err = seccomp_rule_add(ctx, deny, SCMP_SYS(socket), 2, SCMP_A0_32(SCMP_CMP_EQ, AF_NETLINK),
				       SCMP_A2_32(SCMP_CMP_NE, NETLINK_ROUTE));
	if (!err)
		err = seccomp_rule_add(ctx, deny, SCMP_SYS(socketpair), 1, SCMP_A0_32(SCMP_CMP_NE, AF_UNIX));
	if (!err)
		err = seccomp_rule_add(ctx, deny, SCMP_SYS(io_uring_setup), 0);
	if (!err)
		err = seccomp_load(ctx);
	seccomp_release(ctx);
	return err;
}
