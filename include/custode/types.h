/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Fixed-width types for the ABI headers, from vmlinux.h in BPF, from <linux/types.h> in userspace. */
#ifndef CUSTODE_TYPES_H
#define CUSTODE_TYPES_H
#ifdef __bpf__
/* vmlinux.h, included first by every BPF program, defines __u8..__u64. */
#else
#include <linux/types.h>
#endif
#endif
