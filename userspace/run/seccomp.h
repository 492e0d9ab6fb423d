/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CUSTODE_RUN_SECCOMP_H
#define CUSTODE_RUN_SECCOMP_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/filter.h>

/*
 * The launcher's seccomp denylist (docs/process.md), defence in depth below
 * the BPF-LSM hooks, installed in every run's first process before exec:
 *
 * - EPERM: mount family (mount, umount2, pivot_root, chroot, move_mount,
 *   open_tree, fsopen, fsconfig, fsmount, fspick, mount_setattr), setns,
 *   unshare and clone with a namespace flag, bpf, perf_event_open, io_uring_*,
 *   userfaultfd, keyctl, add_key, request_key, module and kexec calls, reboot,
 *   swapon/swapoff, clock and time setting, open_by_handle_at, acct, iopl,
 *   ioperm, quotactl; ptrace and process_vm_readv/writev unless the policy
 *   lets the run trace itself ("ptrace": "run": the LSM then keeps it inside).
 * - ENOSYS: clone3 (its flags are in memory a filter cannot read; libc then
 *   falls back to clone, whose flags it can).
 * - socket() only for AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK with
 *   NETLINK_ROUTE (getaddrinfo); socketpair() only AF_UNIX.
 * - Any syscall of a foreign ABI (i386 through int 0x80, x32) kills the process.
 *
 * The filter is compiled by libseccomp at build time (tools/gen/, one
 * program per variant of the options below, so a syscall libseccomp doesn't
 * know fails the build) and installed in the child by one seccomp(2) call.
 */
struct custode_seccomp_opts {
	bool allow_ptrace; /* "ptrace": "run" */
};

struct custode_seccomp {
	const struct sock_filter *insns;
	unsigned short len;
};

/*
 * The filter for o. libseccomp compiled it at build time
 * (tools/gen/seccomp-gen.c): nothing is compiled or allocated here.
 * Returns 0 or -EINVAL.
 */
int custode_seccomp_build(const struct custode_seccomp_opts *o, struct custode_seccomp *out);
/* Install it in the calling thread's process (needs no_new_privs or CAP_SYS_ADMIN). Async-signal-safe. */
int custode_seccomp_apply(const struct custode_seccomp *f);
void custode_seccomp_free(struct custode_seccomp *f);

/* The names of the syscalls denied outright, NULL-terminated (for receipts and docs). */
extern const char *const custode_seccomp_denied[];
/* Denied too unless allow_ptrace, NULL-terminated. */
extern const char *const custode_seccomp_ptrace_calls[];
/* The compiled programs, [allow_ptrace] (generated: seccomp_filters.c in the build directory). */
extern const struct custode_seccomp custode_seccomp_filters[2];

#endif
