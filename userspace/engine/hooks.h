/* SPDX-License-Identifier: Apache-2.0 */
/* LSM programs fitted to the running kernel's hook prototypes (engine/hooks.c). */
#ifndef CUSTODE_ENGINE_HOOKS_H
#define CUSTODE_ENGINE_HOOKS_H

#include <stdbool.h>

#include "util/reasons.h"

struct bpf_object;
struct btf;

/*
 * Set each LSM program of obj to load only if its declared argument count
 * (CUSTODE_LSM) is its hook's in this kernel's BTF. Refuses (nothing loaded)
 * when a hook keeps no program: kernel.hook_unsupported, naming the hook.
 * `what` names the class in messages.
 */
int custode_fit_hooks(struct bpf_object *obj, const char *what, struct custode_refusal *why);

/* The argument count of LSM hook `hook` in btf (bpf_lsm_<hook>), or -ENOENT if it has none. */
int custode_kernel_hook_nargs(const struct btf *btf, const char *hook);

/*
 * The argument count of kernel function `fn` (a FUNC in btf), or with tp of
 * tracepoint `fn` (the btf_trace_<fn> typedef, whose first argument is the
 * context, not counted); -ENOENT if the kernel has no such one.
 */
int custode_kernel_traced_nargs(const struct btf *btf, const char *fn, bool tp);

/* "file_open" for "lsm/file_open" or "lsm.s/file_open"; NULL for other sections. */
const char *custode_lsm_hook_of(const char *section);

/* Whether the kernel has BPF_MAP_TYPE_CGRP_STORAGE and its helpers (6.2+), from its BTF. */
bool custode_kernel_has_cgrp_storage(void);

/*
 * Fit obj's custode_run_cache map to this kernel: cgroup storage where it
 * exists (*use = true: the object may enable the run cache), else a
 * placeholder array (*use = false). Every object that holds the map needs
 * this before load, so the pinned map is the same for all of them.
 */
int custode_fit_run_cache(struct bpf_object *obj, bool *use);

/* Free the kernel BTF kept between calls. */
void custode_hooks_release(void);

#endif
