/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CUSTODE_RUN_SECCOMP_H
#define CUSTODE_RUN_SECCOMP_H

/*
 * Install, in the run's first process before exec, the seccomp filter that
 * limits sockets to what the cgroup hooks can police: AF_UNIX, AF_INET,
 * AF_INET6, and AF_NETLINK with NETLINK_ROUTE only (glibc's getaddrinfo
 * needs it; changing routes needs CAP_NET_ADMIN). Other families (packet,
 * vsock, bluetooth, ...) and io_uring (which can create sockets without the
 * socket syscall) get EPERM. Returns 0 or -errno.
 */
int custode_seccomp_sockets(void);

#endif
