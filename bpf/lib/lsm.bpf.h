/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * How an LSM program of custode is declared (CUSTODE_LSM and its variants)
 * and how its verdict leaves (custode_lsm_verdict); the errno values the
 * programs return.
 */
#ifndef CUSTODE_LSM_BPF_H
#define CUSTODE_LSM_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

/*
 * An LSM program and the argument count of the hook it was written for.
 * Hooks change their prototypes between kernels (after 6.1 inode_setattr
 * gained the mount's idmap and perf_event_open lost its attr; after 6.12 bpf
 * gained a `kernel` flag): a program written for another prototype would
 * read its arguments, and the previous LSM's verdict (the trampoline's last
 * argument), from the wrong slots. The loader (userspace/engine/hooks.c)
 * compares each program's count, kept in .rodata as custode_hook_nargs__<name>,
 * with the hook's prototype in the running kernel's BTF (bpf_lsm_<hook>) and
 * loads only the programs that fit; a hook none of whose programs fits
 * refuses the class (kernel.hook_unsupported). Variants of one hook for
 * different kernels are programs of the same hook with different counts.
 *
 * Every verdict leaves through custode_lsm_verdict: newer verifiers (6.12)
 * check that an LSM program returns 0 or -errno (-4095..0), and they can't
 * bound some values the compiler computes (a negation of a flag, say).
 */
#define CUSTODE_LSM(hook, name, args...) CUSTODE_LSM_(hook, name, 0, args)
/*
 * A hook that only some kernels of the matrix have (file_ioctl_compat:
 * 6.8+): where the kernel lacks it, its programs are simply not loaded.
 * Where it exists with a prototype custode doesn't know, the class is
 * refused as for any other hook.
 */
#define CUSTODE_HOOK_OPTIONAL 0x10000u
#define CUSTODE_LSM_OPTIONAL(hook, name, args...) CUSTODE_LSM_(hook, name, CUSTODE_HOOK_OPTIONAL, args)
/* A void hook (d_instantiate, *_free_security): no previous verdict follows the arguments. */
#define CUSTODE_LSM_VOID(hook, name, args...)                                                              \
	const volatile __u32 custode_hook_nargs__##name = ___bpf_narg(args);                              \
	SEC("lsm/" #hook) int BPF_PROG(name, args)
#define CUSTODE_LSM_(hook, name, flags, args...)                                                          \
	const volatile __u32 custode_hook_nargs__##name = (___bpf_narg(args) - 1) | (flags);              \
	static __always_inline int ____##name(unsigned long long *ctx, ##args);                            \
	SEC("lsm/" #hook) int name(unsigned long long *ctx)                                                \
	{                                                                                                  \
		_Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wint-conversion\"")      \
		return custode_lsm_verdict(____##name(___bpf_ctx_cast(args)));                            \
		_Pragma("GCC diagnostic pop")                                                              \
	}                                                                                                  \
	static __always_inline int ____##name(unsigned long long *ctx, ##args)

/*
 * An LSM program whose body gets a per-invocation state, `T *w` (zeroed),
 * and whose verdict passes through END(w, verdict) on its way out, whatever
 * return the body took: file.bpf.c's hooks release there the per-CPU buffer
 * they claimed (struct who).
 */
#define CUSTODE_LSM_WITH(hook, name, T, END, args...)                                                     \
	const volatile __u32 custode_hook_nargs__##name = (___bpf_narg(args) - 1);                        \
	static __always_inline int ____##name(T *w, unsigned long long *ctx, ##args);                      \
	SEC("lsm/" #hook) int name(unsigned long long *ctx)                                                \
	{                                                                                                  \
		T w_ = {};                                                                                 \
		int v_;                                                                                    \
		_Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wint-conversion\"")      \
		v_ = ____##name(&w_, ___bpf_ctx_cast(args));                                               \
		_Pragma("GCC diagnostic pop")                                                              \
		return custode_lsm_verdict(END(&w_, v_));                                                  \
	}                                                                                                  \
	static __always_inline int ____##name(T *w, unsigned long long *ctx, ##args)

/*
 * A tracing program (fentry/fexit on a kernel function, tp_btf on a
 * tracepoint) and the argument count of the function or tracepoint it was
 * written for (without fexit's return value): the loader
 * (userspace/engine/hooks.c fit_tracing) refuses the class when the running
 * kernel's BTF has no such target, or one with another count.
 */
#define CUSTODE_TRACED(sec, name, args...)                                                                 \
	const volatile __u32 custode_hook_nargs__##name = ___bpf_narg(args);                              \
	SEC(sec) int BPF_PROG(name, args)
/*
 * A tracepoint that later kernels extend with more arguments at the end
 * (sched_process_exit gained group_dead in 6.16): the program reads the
 * leading `args` only, and fits any kernel whose tracepoint has at least
 * that many.
 */
#define CUSTODE_TRACED_LEADING 0x20000u
#define CUSTODE_TRACED_PREFIX(sec, name, args...)                                                          \
	const volatile __u32 custode_hook_nargs__##name = ___bpf_narg(args) | CUSTODE_TRACED_LEADING;     \
	SEC(sec) int BPF_PROG(name, args)
/* fexit: the function's arguments, then its return value (not counted) */
#define CUSTODE_TRACED_EXIT(fn, name, args...)                                                             \
	const volatile __u32 custode_hook_nargs__##name = ___bpf_narg(args) - 1;                          \
	SEC("fexit/" #fn) int BPF_PROG(name, args)

#define CUSTODE_MAX_ERRNO 4095

/* 0, or the -errno v is; anything else (never produced) denies with -EPERM. */
static __always_inline int custode_lsm_verdict(int v)
{
	asm volatile("" : "+r"(v)); /* unknown to the compiler: the checks stay branches the verifier follows */
	if (v == 0)
		return 0;
	if (v > 0 || v < -CUSTODE_MAX_ERRNO)
		return -1; /* -EPERM: fail closed */
	return v;
}

#define EPERM 1
#define EACCES 13
#define ENAMETOOLONG 36
#define ENOENT 2

#endif
