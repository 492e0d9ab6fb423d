// SPDX-License-Identifier: Apache-2.0
/*
 * Fitting LSM programs to the running kernel's hooks (CUSTODE_LSM in
 * bpf/lib/custode.bpf.h). Each LSM program carries the argument count of the
 * hook prototype it was written for; the kernel's BTF says what the hook
 * takes here (the FUNC bpf_lsm_<hook>). Only programs that fit are loaded,
 * and every hook an object uses must keep exactly one: a hook that none fits
 * (missing, or a prototype custode doesn't know) refuses the whole class —
 * never a class with a hole in it. Tracing programs (fentry, fexit, tp_btf)
 * are fitted the same way by fit_tracing.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "engine/hooks.h"
#include "engine/maps.h"

#define NARGS_PREFIX "custode_hook_nargs__"
#define HOOK_OPTIONAL 0x10000 /* CUSTODE_HOOK_OPTIONAL in bpf/lib/lsm.bpf.h */
#define TRACED_LEADING 0x20000 /* CUSTODE_TRACED_LEADING in bpf/lib/lsm.bpf.h: at least this many */

static struct btf *kernel_btf;

static const struct btf *vmlinux_btf(void)
{
	if (!kernel_btf) {
		kernel_btf = btf__load_vmlinux_btf();
		if (!kernel_btf)
			kernel_btf = NULL; /* libbpf returns NULL and sets errno */
	}
	return kernel_btf;
}

void custode_hooks_release(void)
{
	btf__free(kernel_btf);
	kernel_btf = NULL;
}

int custode_kernel_hook_nargs(const struct btf *btf, const char *hook)
{
	char fn[128];
	const struct btf_type *t;
	int id;

	if (!btf)
		return -ENODATA;
	if (snprintf(fn, sizeof(fn), "bpf_lsm_%s", hook) >= (int)sizeof(fn))
		return -ENAMETOOLONG;
	id = btf__find_by_name_kind(btf, fn, BTF_KIND_FUNC);
	if (id < 0)
		return -ENOENT;
	t = btf__type_by_id(btf, id);
	t = t ? btf__type_by_id(btf, t->type) : NULL;
	if (!t || !btf_is_func_proto(t))
		return -EINVAL;
	return btf_vlen(t);
}

/* The hook an LSM program attaches to ("lsm/NAME", "lsm.s/NAME"), or NULL. */
const char *custode_lsm_hook_of(const char *section)
{
	const char *slash;

	if (strncmp(section, "lsm/", 4) && strncmp(section, "lsm.s/", 6))
		return NULL;
	slash = strchr(section, '/');
	return slash && slash[1] ? slash + 1 : NULL;
}

/* The object's .rodata map and its BTF section, for the declared counts. */
struct declared {
	const struct btf *btf;
	const struct btf_type *sec;
	const char *data;
	size_t size;
};

static int declared_open(struct bpf_object *obj, struct declared *d)
{
	struct bpf_map *map;
	int id;

	memset(d, 0, sizeof(*d));
	d->btf = bpf_object__btf(obj);
	if (!d->btf)
		return -ENODATA;
	id = btf__find_by_name_kind(d->btf, ".rodata", BTF_KIND_DATASEC);
	if (id < 0)
		return -ENOENT;
	d->sec = btf__type_by_id(d->btf, id);
	bpf_object__for_each_map(map, obj) {
		const char *name = bpf_map__name(map);
		size_t n = strlen(name);

		if (bpf_map__is_internal(map) && n >= 7 && !strcmp(name + n - 7, ".rodata")) {
			d->data = bpf_map__initial_value(map, &d->size);
			break;
		}
	}
	return d->data ? 0 : -ENOENT;
}

/* The argument count program `prog` declares, or -ENOENT. */
static int declared_nargs(const struct declared *d, const char *prog)
{
	const struct btf_var_secinfo *vi = btf_var_secinfos(d->sec);

	for (int i = 0; i < btf_vlen(d->sec); i++, vi++) {
		const struct btf_type *var = btf__type_by_id(d->btf, vi->type);
		const char *name = var ? btf__name_by_offset(d->btf, var->name_off) : NULL;
		__u32 v;

		if (!name || strncmp(name, NARGS_PREFIX, strlen(NARGS_PREFIX)) || strcmp(name + strlen(NARGS_PREFIX), prog))
			continue;
		if (vi->size != sizeof(v) || (size_t)vi->offset + sizeof(v) > d->size)
			return -EINVAL;
		memcpy(&v, d->data + vi->offset, sizeof(v));
		return (int)v;
	}
	return -ENOENT;
}

/*
 * The kernel function or tracepoint a tracing program attaches to
 * ("fentry/NAME", "fexit/NAME", "tp_btf/NAME"), or NULL for other sections;
 * *tp set for a tracepoint.
 */
static const char *tracing_target_of(const char *section, bool *tp)
{
	static const char *const kinds[] = {"fentry/", "fexit/", "tp_btf/"};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		size_t n = strlen(kinds[i]);

		if (!strncmp(section, kinds[i], n) && section[n]) {
			*tp = i == 2;
			return section + n;
		}
	}
	return NULL;
}

int custode_kernel_traced_nargs(const struct btf *btf, const char *fn, bool tp)
{
	const struct btf_type *t;
	char name[128];
	int id;

	if (!tp) {
		id = btf__find_by_name_kind(btf, fn, BTF_KIND_FUNC);
		t = id > 0 ? btf__type_by_id(btf, id) : NULL;
		t = t ? btf__type_by_id(btf, t->type) : NULL;
		return !t ? -ENOENT : btf_is_func_proto(t) ? btf_vlen(t) : -EINVAL;
	}
	if (snprintf(name, sizeof(name), "btf_trace_%s", fn) >= (int)sizeof(name))
		return -ENAMETOOLONG;
	id = btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	if (t && (t = btf__type_by_id(btf, t->type)) && btf_is_ptr(t))
		t = btf__type_by_id(btf, t->type);
	return !t ? -ENOENT : btf_is_func_proto(t) && btf_vlen(t) > 0 ? btf_vlen(t) - 1 : -EINVAL;
}

/*
 * The tracing programs of an object (the process class's newcomer marks:
 * fentry/fexit cgroup_attach_task, tp_btf/task_newtask) have no variants:
 * each must find its kernel function or tracepoint, with the argument
 * count it declares (CUSTODE_TRACED), or the class is refused as a whole
 * (kernel.hook_unsupported) — never a class that can't see who placed a
 * process where. The kernel checks the prototype again at load.
 */
static int fit_tracing(struct bpf_object *obj, const struct btf *kbtf, const struct declared *d, const char *what,
		       struct custode_refusal *why)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj) {
		bool tp = false;
		const char *target = tracing_target_of(bpf_program__section_name(prog), &tp);
		int want, have;

		if (!target || bpf_program__type(prog) != BPF_PROG_TYPE_TRACING)
			continue;
		want = declared_nargs(d, bpf_program__name(prog));
		if (want < 0)
			return custode_refuse(why, -want, CUSTODE_REASON_ENGINE_LOAD_FAILED,
					      "%s: program %s declares no argument count (use CUSTODE_TRACED)", what,
					      bpf_program__name(prog));
		have = custode_kernel_traced_nargs(kbtf, target, tp);
		if (have == -ENOENT)
			return custode_refuse(why, ENOENT, CUSTODE_REASON_KERNEL_HOOK_UNSUPPORTED,
					      "%s: this kernel has no %s %s to trace (not in its BTF: inlined, renamed "
					      "or absent), so it can't see processes placed into attached runs",
					      what, tp ? "tracepoint" : "function", target);
		if (((want & TRACED_LEADING) && tp) ? have < (want & ~TRACED_LEADING) : have != want)
			return custode_refuse(why, EINVAL, CUSTODE_REASON_KERNEL_HOOK_UNSUPPORTED,
					      "%s: %s %s takes %d arguments on this kernel; custode's program %s takes %s%d",
					      what, tp ? "tracepoint" : "function", target, have, bpf_program__name(prog),
					      (want & TRACED_LEADING) ? "at least " : "", want & ~TRACED_LEADING);
	}
	return 0;
}

int custode_fit_hooks(struct bpf_object *obj, const char *what, struct custode_refusal *why)
{
	const struct btf *kbtf = vmlinux_btf();
	struct bpf_program *prog, *other;
	struct declared d;
	int err;

	if (!kbtf)
		return custode_refuse(why, ENODATA, CUSTODE_REASON_KERNEL_NO_BTF,
				      "%s: the kernel's BTF (/sys/kernel/btf/vmlinux) cannot be read, so its LSM hook "
				      "prototypes are unknown",
				      what);
	err = declared_open(obj, &d);
	if (err)
		return custode_refuse(why, -err, CUSTODE_REASON_ENGINE_LOAD_FAILED,
				      "%s: no hook argument counts in the object (.rodata): %s", what, strerror(-err));
	bpf_object__for_each_program(prog, obj) {
		const char *hook = custode_lsm_hook_of(bpf_program__section_name(prog));
		int want, have;

		if (!hook || bpf_program__type(prog) != BPF_PROG_TYPE_LSM)
			continue;
		want = declared_nargs(&d, bpf_program__name(prog));
		if (want < 0)
			return custode_refuse(why, -want, CUSTODE_REASON_ENGINE_LOAD_FAILED,
					      "%s: program %s declares no hook argument count (use CUSTODE_LSM)", what,
					      bpf_program__name(prog));
		have = custode_kernel_hook_nargs(kbtf, hook);
		bpf_program__set_autoload(prog, have == (want & ~HOOK_OPTIONAL));
	}
	/* every hook keeps exactly one program (each hook checked at its first program) */
	bpf_object__for_each_program(prog, obj) {
		const char *hook = custode_lsm_hook_of(bpf_program__section_name(prog));
		bool seen = false, before = true, optional = true;
		char known[256] = "";
		size_t len = 0;
		int fitting = 0, have;

		if (!hook || bpf_program__type(prog) != BPF_PROG_TYPE_LSM)
			continue;
		bpf_object__for_each_program(other, obj) {
			const char *h = custode_lsm_hook_of(bpf_program__section_name(other));

			if (other == prog)
				before = false;
			if (!h || strcmp(h, hook))
				continue;
			if (before)
				seen = true;
			fitting += bpf_program__autoload(other);
			optional &= (declared_nargs(&d, bpf_program__name(other)) & HOOK_OPTIONAL) != 0;
			if (len < sizeof(known))
				len += (size_t)snprintf(known + len, sizeof(known) - len, "%s%d", len ? " or " : "",
							declared_nargs(&d, bpf_program__name(other)) & ~HOOK_OPTIONAL);
		}
		if (seen || fitting == 1)
			continue;
		have = custode_kernel_hook_nargs(kbtf, hook);
		if (!fitting && optional && have == -ENOENT)
			continue; /* a hook this kernel doesn't have, and custode can do without */
		if (fitting > 1)
			return custode_refuse(why, EINVAL, CUSTODE_REASON_ENGINE_LOAD_FAILED,
					      "%s: %d programs fit LSM hook %s (%d arguments); one must", what, fitting,
					      hook, have);
		if (have == -ENOENT)
			return custode_refuse(why, ENOENT, CUSTODE_REASON_KERNEL_HOOK_UNSUPPORTED,
					      "%s: this kernel has no LSM hook %s (no bpf_lsm_%s in its BTF)", what, hook,
					      hook);
		return custode_refuse(why, EINVAL, CUSTODE_REASON_KERNEL_HOOK_UNSUPPORTED,
				      "%s: LSM hook %s takes %d arguments on this kernel; custode's programs for it "
				      "take %s",
				      what, hook, have, known);
	}
	return fit_tracing(obj, kbtf, &d, what, why);
}

/* Does this kernel's BTF name enumerator `name` of enum `type`? */
static bool kernel_enum_has(const struct btf *btf, const char *type, const char *name)
{
	int id = btf ? btf__find_by_name_kind(btf, type, BTF_KIND_ENUM) : -1;
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	const struct btf_enum *e;

	if (!t)
		return false;
	e = btf_enum(t);
	for (int i = 0; i < btf_vlen(t); i++, e++)
		if (!strcmp(btf__name_by_offset(btf, e->name_off), name))
			return true;
	return false;
}

bool custode_kernel_has_cgrp_storage(void)
{
	const struct btf *btf = vmlinux_btf();

	return kernel_enum_has(btf, "bpf_map_type", "BPF_MAP_TYPE_CGRP_STORAGE") &&
	       kernel_enum_has(btf, "bpf_func_id", "BPF_FUNC_cgrp_storage_get");
}

int custode_fit_run_cache(struct bpf_object *obj, bool *use)
{
	struct bpf_map *map = bpf_object__find_map_by_name(obj, custode_map_name(CUSTODE_MAP_RUN_CACHE));
	bool have = custode_kernel_has_cgrp_storage();

	*use = have;
	if (!map)
		return -ENOENT;
	if (have)
		return 0;
	/* 6.1: a placeholder nothing reads (custode_use_run_cache stays 0, that code is never verified) */
	if (bpf_map__set_type(map, BPF_MAP_TYPE_ARRAY) || bpf_map__set_map_flags(map, 0) ||
	    bpf_map__set_max_entries(map, 1))
		return -EINVAL;
	return 0;
}
