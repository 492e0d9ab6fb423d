/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * Maps and helpers shared by every custode BPF object. Maps are pinned by
 * name under CUSTODE_PIN_MAPS, so each object loaded later reuses the same
 * runs, rules, events and stats maps.
 */
#ifndef CUSTODE_BPF_H
#define CUSTODE_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "custode/abi.h"
#include "custode/event.h"

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

/*
 * kernfs_node.parent, renamed __parent (and RCU-protected) in 6.15: the
 * flavour the running kernel has, by CO-RE. Each flavour is read in its own
 * subprogram: inlined, clang merges the two reads into one load at a
 * selected offset, which reaches the relocation that can't be resolved on
 * this kernel (libbpf poisons it) whatever bpf_core_field_exists said. The
 * _btf form is a direct load from a trusted BTF pointer; the other reads
 * through probe reads.
 */
struct kernfs_node___parent {
	struct kernfs_node *parent;
} __attribute__((preserve_access_index));

struct kernfs_node___rcu_parent {
	struct kernfs_node *__parent;
} __attribute__((preserve_access_index));

static __noinline struct kernfs_node *custode_kn_parent_btf_old(struct kernfs_node *kn)
{
	return kn ? ((struct kernfs_node___parent *)kn)->parent : NULL;
}

static __noinline struct kernfs_node *custode_kn_parent_btf_rcu(struct kernfs_node *kn)
{
	return kn ? ((struct kernfs_node___rcu_parent *)kn)->__parent : NULL;
}

static __always_inline struct kernfs_node *custode_kn_parent_btf(struct kernfs_node *kn)
{
	if (bpf_core_field_exists(struct kernfs_node___rcu_parent, __parent))
		return custode_kn_parent_btf_rcu(kn);
	return custode_kn_parent_btf_old(kn);
}

static __noinline struct kernfs_node *custode_kn_parent_old(struct kernfs_node *kn)
{
	return BPF_CORE_READ((struct kernfs_node___parent *)kn, parent);
}

static __noinline struct kernfs_node *custode_kn_parent_rcu(struct kernfs_node *kn)
{
	return BPF_CORE_READ((struct kernfs_node___rcu_parent *)kn, __parent);
}

static __always_inline struct kernfs_node *custode_kn_parent(struct kernfs_node *kn)
{
	if (bpf_core_field_exists(struct kernfs_node___rcu_parent, __parent))
		return custode_kn_parent_rcu(kn);
	return custode_kn_parent_old(kn);
}

#define EPERM 1
#define EACCES 13
#define ENAMETOOLONG 36
#define ENOENT 2

/*
 * Where custode's runs live: the runs are the children of the cgroup with id
 * custode_root_cgid, which sits at level custode_root_level. Set by the
 * loader before load; read-only afterwards, so the verifier folds them.
 */
const volatile __u64 custode_root_cgid = 0;
const volatile __u32 custode_root_level = 0;

/*
 * Registered runs, keyed by the run cgroup's id. A task below custode's root
 * whose run cgroup is missing here is denied (run.unregistered): state that
 * is missing means deny.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CUSTODE_MAX_RUNS);
	__type(key, __u64);
	__type(value, struct custode_run);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} custode_runs SEC(".maps");

/* Per-run, per-reason denial counters, keyed like custode_runs. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CUSTODE_MAX_RUNS);
	__type(key, __u64);
	__type(value, struct custode_counters);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} custode_counters SEC(".maps");

/* File rules of every run, longest prefix wins; no match means denied. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, CUSTODE_MAX_PATH_RULES);
	__type(key, struct custode_path_key);
	__type(value, struct custode_path_rule);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} custode_path_rules SEC(".maps");

/*
 * Rule paths by identity (device + inode, resolved when the rules are
 * loaded): restricting rules hold for an inode whatever path reaches it, and
 * hooks that see only a dentry find their rule by walking up identities.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CUSTODE_MAX_IDENTITIES);
	__type(key, struct custode_identity_key);
	__type(value, struct custode_identity);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} custode_identities SEC(".maps");

/*
 * The file decision cache's generation: bumped by the kernel on unlink,
 * rmdir, link (any process) and by userspace when a run is cancelled,
 * unregistered or its rules change. A cached decision holds only while it
 * is unchanged (bpf/file.bpf.c).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} custode_fs_gen SEC(".maps");

/* Denial records (include/custode/event.h). A full buffer drops and counts. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, CUSTODE_EVENTS_BYTES);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} custode_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct custode_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} custode_stats SEC(".maps");

/*
 * Where attached runs are (include/custode/abi.h, struct custode_gates).
 * All zero: no attached run, and a task outside custode's subtree is outside
 * every run.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct custode_gates);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} custode_gates SEC(".maps");

/*
 * Throttle state per (run, reason). LRU: an evicted entry only restarts its
 * window (more records, never fewer counts).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, CUSTODE_MAX_THROTTLE);
	__type(key, struct custode_throttle_key);
	__type(value, struct custode_throttle);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} custode_throttle SEC(".maps");

/* Throttle settings, written by the daemon; zero means the defaults. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct custode_event_cfg);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} custode_event_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct custode_event_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} custode_event_stats SEC(".maps");

/* Engine-wide event sequence number, shared by every object (hence a map). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} custode_seq SEC(".maps");

/* Bumped by userspace after every change to custode_runs or custode_gates (the run cache's validity). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} custode_runs_gen SEC(".maps");

/*
 * The run cache (include/custode/abi.h, struct custode_run_cache): cgroup
 * storage, so an entry goes with its cgroup. On kernels without
 * BPF_MAP_TYPE_CGRP_STORAGE (6.1) the loader turns this into a one-entry
 * array that nothing uses, and leaves custode_use_run_cache at 0 (the code
 * that would use it is never verified there).
 */
#define CUSTODE_MAP_TYPE_CGRP_STORAGE 32 /* BPF_MAP_TYPE_CGRP_STORAGE (6.2); not in 6.1's headers */

struct {
	__uint(type, CUSTODE_MAP_TYPE_CGRP_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct custode_run_cache);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} custode_run_cache SEC(".maps");

/* Set by the loader: 1 where the kernel has cgroup storage and this object may call its helpers (LSM objects). */
const volatile __u32 custode_use_run_cache = 0;

enum custode_lookup {
	CUSTODE_NOT_IN_RUN = 0,
	CUSTODE_IN_RUN = 1,
	CUSTODE_UNREGISTERED = 2,
};

/*
 * The levels below custode's root level where the current task may be in an
 * attached run: those of the gate whose id is `top` (the task's ancestor at
 * the root level), or 0. An inlined array lookup and compares: no helper call.
 *
 * The levels of EVERY slot whose id matches are OR'ed, not the first
 * match's: userspace rewrites the value while hooks read it, and a torn read
 * (include/custode/abi.h) may show a slot being freed or reused with an id
 * that transiently equals `top` next to stale levels. The slot that really
 * holds `top` keeps its id and every level bit both versions hold, so the OR
 * never loses a bit that is set before and after the update; a spurious bit
 * only costs one more ancestor-id call and hash lookup (custode_attached_run
 * checks the run). Branch-free: a mask per slot, no early exit.
 */
static __always_inline __u32 custode_gate_levels(__u64 top)
{
	struct custode_gates *g;
	__u32 zero = 0, levels = 0;

	if (!top)
		return 0;
	g = bpf_map_lookup_elem(&custode_gates, &zero);
	if (!g || !g->used)
		return 0;
#pragma unroll
	for (int i = 0; i < CUSTODE_MAX_GATES; i++)
		levels |= g->gate[i].levels & (0u - (__u32)(g->gate[i].id == top));
	return levels;
}

/*
 * The attached run of the current task, which lies below a gate: its
 * ancestor at each level the gate lists, looked up in custode_runs. Attached
 * cgroups never nest (custode attach refuses it), so at most one matches.
 */
static __always_inline int custode_attached_run(__u32 levels, struct custode_run **runp, __u64 *run_cgid)
{
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < CUSTODE_GATE_LEVELS; i++) {
		struct custode_run *r;
		__u64 id;

		if (!(levels >> i))
			break;
		if (!((levels >> i) & 1))
			continue;
		id = bpf_get_current_ancestor_cgroup_id(custode_root_level + i);
		if (!id)
			break; /* the task's cgroup is above this level */
		r = bpf_map_lookup_elem(&custode_runs, &id);
		if (r && (r->flags & CUSTODE_RUN_ATTACHED)) {
			*runp = r;
			*run_cgid = id;
			return CUSTODE_IN_RUN;
		}
	}
	return CUSTODE_NOT_IN_RUN;
}

/*
 * The attached run of the current task below a gate, through the run cache
 * where the kernel has one: a storage lookup on the task's cgroup, valid
 * while custode_runs_gen is unchanged; else (a miss, or 6.1) the lookups of
 * custode_attached_run, whose answer is then cached.
 */
static __always_inline int custode_gated_run(__u32 levels, struct custode_run **runp, __u64 *run_cgid)
{
	struct custode_run_cache *c;
	volatile struct custode_run_cache *v;
	struct task_struct *task;
	struct cgroup *cg;
	struct custode_run *r;
	__u64 gen, tag, id, seen;
	__u32 zero = 0;
	__u64 *g;
	int where;

	if (!custode_use_run_cache)
		return custode_attached_run(levels, runp, run_cgid);
	g = bpf_map_lookup_elem(&custode_runs_gen, &zero);
	if (!g)
		return custode_attached_run(levels, runp, run_cgid);
	gen = *(volatile __u64 *)g;
	tag = CUSTODE_RUN_CACHE_VALID | gen;
	task = bpf_get_current_task_btf();
	cg = task->cgroups->dfl_cgrp;
	c = bpf_cgrp_storage_get(&custode_run_cache, cg, 0, 0);
	if (c) {
		v = c;
		seen = v->gen;
		id = v->run_cgid;
		if (seen == tag && v->gen == seen) {
			if (!id)
				return CUSTODE_NOT_IN_RUN;
			r = bpf_map_lookup_elem(&custode_runs, &id);
			if (!r || !(r->flags & CUSTODE_RUN_ATTACHED))
				return CUSTODE_NOT_IN_RUN; /* the run ended; the next bump invalidates */
			*runp = r;
			*run_cgid = id;
			return CUSTODE_IN_RUN;
		}
	}
	where = custode_attached_run(levels, runp, run_cgid);
	if (!c)
		c = bpf_cgrp_storage_get(&custode_run_cache, cg, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (c) {
		v = c;
		seen = v->gen;
		/* claim it; another writer holding it means we just don't cache this time */
		if (seen != CUSTODE_RUN_CACHE_BUSY &&
		    __sync_val_compare_and_swap(&c->gen, seen, CUSTODE_RUN_CACHE_BUSY) == seen) {
			v->run_cgid = where == CUSTODE_IN_RUN ? *run_cgid : 0;
			v->gen = tag;
		}
	}
	return where;
}

/*
 * Find the current task's run. The cheap test comes first: a task whose
 * ancestor at custode's root level is neither custode's root nor a gate of
 * attached runs is outside every run and costs one helper call, an inlined
 * array lookup and compares — no hash lookup. Tasks below custode's root pay
 * one hash lookup; tasks below a gate one per level the gate lists. Child
 * cgroups stay inside their run: a launcher run is the ancestor one level
 * below the root, an attached run the attached cgroup, whatever lies below.
 */
static __always_inline int custode_current_run(struct custode_run **runp, __u64 *run_cgid)
{
	__u64 id, top;
	__u32 levels;

	if (!custode_root_cgid)
		return CUSTODE_NOT_IN_RUN;
	top = bpf_get_current_ancestor_cgroup_id(custode_root_level);
	if (top != custode_root_cgid) {
		levels = custode_gate_levels(top);
		if (!levels)
			return CUSTODE_NOT_IN_RUN;
		return custode_gated_run(levels, runp, run_cgid);
	}
	id = bpf_get_current_ancestor_cgroup_id(custode_root_level + 1);
	if (!id) /* a task in custode's root cgroup itself: not a run */
		return CUSTODE_NOT_IN_RUN;
	*run_cgid = id;
	*runp = bpf_map_lookup_elem(&custode_runs, &id);
	return *runp ? CUSTODE_IN_RUN : CUSTODE_UNREGISTERED;
}

/*
 * The run cgroup of the current task, or 0 when it is outside every run. No
 * map lookup for tasks outside custode's root and every gate; below custode's
 * root the id is returned unchecked (the caller looks it up); below a gate it
 * is an attached run's, found by lookups.
 */
static __always_inline __u64 custode_current_run_cgid(void)
{
	struct custode_run *run = NULL;
	__u64 top, id = 0;
	__u32 levels;

	if (!custode_root_cgid)
		return 0;
	top = bpf_get_current_ancestor_cgroup_id(custode_root_level);
	if (top != custode_root_cgid) {
		levels = custode_gate_levels(top);
		if (!levels || custode_gated_run(levels, &run, &id) != CUSTODE_IN_RUN)
			return 0;
		return id;
	}
	return bpf_get_current_ancestor_cgroup_id(custode_root_level + 1);
}

/*
 * The run of another task's cgroup (`cg` a trusted BTF pointer: direct loads,
 * no probe reads): 0 when it is in no run, CUSTODE_RUN_UNKNOWN when it is
 * nested too deeply to walk (callers treat that like another run). Walks
 * kernfs parents up to custode's root level: a child of custode's root is a
 * launcher run; below a gate, the ancestors at the gate's levels are looked
 * up among the attached runs.
 */
#define CUSTODE_CGROUP_WALK 33
#define CUSTODE_RUN_UNKNOWN (~0ULL)

static __always_inline __u64 custode_cgroup_run_btf(struct cgroup *cg)
{
	struct kernfs_node *kn, *below = NULL;
	int level, root = (int)custode_root_level;
	__u32 levels;

	if (!custode_root_cgid || !cg)
		return 0;
	level = cg->level;
	if (level < root)
		return 0;
	kn = cg->kn;
	for (int i = 0; i < CUSTODE_CGROUP_WALK && level > root && kn; i++) {
		below = kn;
		kn = custode_kn_parent_btf(kn);
		level--;
	}
	if (level != root)
		return CUSTODE_RUN_UNKNOWN;
	if (!kn)
		return 0;
	if (kn->id == custode_root_cgid)
		return below ? below->id : 0;
	levels = custode_gate_levels(kn->id);
	if (!levels)
		return 0;
	kn = cg->kn;
	level = cg->level;
	for (int i = 0; i < CUSTODE_CGROUP_WALK && level >= root && kn; i++) {
		int bit = level - root;

		if (bit < CUSTODE_GATE_LEVELS && ((levels >> bit) & 1)) {
			__u64 id = kn->id;
			struct custode_run *r = bpf_map_lookup_elem(&custode_runs, &id);

			if (r && (r->flags & CUSTODE_RUN_ATTACHED))
				return id;
		}
		kn = custode_kn_parent_btf(kn);
		level--;
	}
	return 0;
}

/*
 * Is cgroup `cg` (a pointer read with probe reads) inside run `run_cgid`?
 * Launcher runs: its ancestor one level below custode's root (one read).
 * Attached runs, at any level: a walk up the kernfs parents. Deeper than the
 * walk goes: not inside (callers deny).
 */
/*
 * Is kernfs node kn (read with probe reads) the run's cgroup directory, or
 * below it? A walk up its parents, at most max of them (a constant).
 */
static __always_inline bool custode_kn_in_run(struct kernfs_node *kn, __u64 run_cgid, const int max)
{
	for (int i = 0; i < max && kn; i++) {
		if (BPF_CORE_READ(kn, id) == run_cgid)
			return true;
		kn = custode_kn_parent(kn);
	}
	return false;
}

static __always_inline bool custode_cgroup_in_run(struct cgroup *cg, __u64 run_cgid)
{
	struct cgroup *anc = NULL;
	unsigned long anc_addr;
	int level;

	if (!cg || !run_cgid)
		return false;
	level = BPF_CORE_READ(cg, level);
	if (level >= (int)custode_root_level + 1) {
		anc_addr = (unsigned long)cg + bpf_core_field_offset(struct cgroup, ancestors) +
			   (custode_root_level + 1) * sizeof(void *);
		if (!bpf_probe_read_kernel(&anc, sizeof(anc), (void *)anc_addr) && anc &&
		    BPF_CORE_READ(anc, kn, id) == run_cgid)
			return true;
	}
	return custode_kn_in_run(BPF_CORE_READ(cg, kn), run_cgid, CUSTODE_CGROUP_WALK);
}

static __always_inline void custode_count(__u64 run_cgid, __u32 reason)
{
	struct custode_counters *c;

	if (!run_cgid || reason >= CUSTODE_REASON_KERNEL_MAX)
		return;
	c = bpf_map_lookup_elem(&custode_counters, &run_cgid);
	if (c)
		__sync_fetch_and_add(&c->denials[reason], 1);
}

static __always_inline void custode_count_stat(int dropped)
{
	__u32 zero = 0;
	struct custode_stats *st = bpf_map_lookup_elem(&custode_stats, &zero);

	if (!st)
		return;
	if (dropped)
		st->events_dropped++;
	else
		st->events++;
}

/* Fill the fields every record has. */
static __always_inline void custode_event_init(struct custode_event *ev, __u16 hook, __u16 reason,
					       struct custode_run *run, __u32 enforced)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u64 uid_gid = bpf_get_current_uid_gid();
	struct task_struct *task = bpf_get_current_task_btf();
	struct mm_struct *mm = task->mm;
	__u32 zero = 0;
	__u64 *seq = bpf_map_lookup_elem(&custode_seq, &zero);

	ev->version = CUSTODE_EVENT_VERSION;
	ev->size = sizeof(*ev);
	ev->hook = hook;
	ev->reason = reason;
	ev->flags = enforced ? CUSTODE_EVENT_ENFORCED : 0;
	ev->access = 0;
	ev->seq = seq ? __sync_fetch_and_add(seq, 1) : 0;
	ev->boot_ns = bpf_ktime_get_boot_ns();
	ev->run_id = run ? run->run_id : 0;
	ev->cgroup_id = bpf_get_current_cgroup_id();
	ev->pid = (__u32)pid_tgid;
	ev->tgid = pid_tgid >> 32;
	ev->uid = (__u32)uid_gid;
	ev->gid = uid_gid >> 32;
	ev->ruleset = run ? run->ruleset : 0;
	ev->object = CUSTODE_OBJECT_NONE;
	ev->_pad0 = 0;
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
	__builtin_memset(&ev->obj, 0, sizeof(ev->obj));
	/*
	 * The executable by identity (direct BTF loads, cheap in every hook);
	 * the reader turns it into a path, verified against this identity.
	 */
	ev->exe_dev = 0;
	ev->exe_ino = 0;
	if (mm) {
		struct file *exe = mm->exe_file;

		if (exe) {
			struct inode *inode = exe->f_inode;

			if (inode) {
				ev->exe_dev = inode->i_sb->s_dev;
				ev->exe_ino = inode->i_ino;
			}
		}
	}
	ev->policy_version = run ? run->policy_version : 0;
	ev->_pad1 = 0;
}

/* One throttle record: `count` denials of (run, reason) were not recorded. */
static __always_inline void custode_throttle_event(__u16 hook, __u32 reason, struct custode_run *run, __u64 run_cgid,
						   __u32 enforced, __u64 count, __u64 total, __u64 since_ns)
{
	struct custode_event *ev = bpf_ringbuf_reserve(&custode_events, sizeof(*ev), 0);
	struct custode_event_stats *es;
	__u32 zero = 0;

	if (!ev) {
		custode_count_stat(1);
		return;
	}
	custode_event_init(ev, hook, reason, run, enforced);
	ev->flags |= CUSTODE_EVENT_THROTTLE;
	ev->object = CUSTODE_OBJECT_THROTTLE;
	ev->obj.throttle.count = count;
	ev->obj.throttle.total = total;
	ev->obj.throttle.since_ns = since_ns;
	ev->obj.throttle.run_cgid = run_cgid;
	bpf_ringbuf_submit(ev, 0);
	custode_count_stat(0);
	es = bpf_map_lookup_elem(&custode_event_stats, &zero);
	if (es)
		es->throttle_records++;
}

/*
 * May this denial write a record? At most `burst` per run, reason and
 * window; the rest are counted as suppressed. The first denial of a new
 * window (one CPU wins the cmpxchg) writes a throttle record for what the
 * previous windows suppressed. Missing state: record (reporting fails open;
 * the verdict never depends on this).
 */
static __always_inline int custode_throttle_pass(__u64 run_cgid, __u16 hook, __u32 reason, struct custode_run *run,
						 __u32 enforced)
{
	struct custode_throttle_key k = {.run_cgid = run_cgid, .reason = reason};
	struct custode_event_stats *es;
	struct custode_event_cfg *cfg;
	struct custode_throttle *t;
	__u64 now, window = CUSTODE_THROTTLE_WINDOW_NS, ws, sup, rep;
	__u32 zero = 0, burst = CUSTODE_THROTTLE_BURST;

	cfg = bpf_map_lookup_elem(&custode_event_cfg, &zero);
	if (cfg) {
		if (cfg->flags & CUSTODE_EVENT_CFG_NO_THROTTLE)
			return 1;
		if (cfg->window_ns)
			window = cfg->window_ns;
		if (cfg->burst)
			burst = cfg->burst;
	}
	now = bpf_ktime_get_boot_ns();
	t = bpf_map_lookup_elem(&custode_throttle, &k);
	if (!t) {
		struct custode_throttle init = {.window_start_ns = now};

		bpf_map_update_elem(&custode_throttle, &k, &init, BPF_NOEXIST);
		t = bpf_map_lookup_elem(&custode_throttle, &k);
		if (!t)
			return 1;
	}
	ws = t->window_start_ns;
	if (now - ws >= window && __sync_val_compare_and_swap(&t->window_start_ns, ws, now) == ws) {
		t->in_window = 0; /* increments racing this store are lost: a window may pass a few more */
		sup = t->suppressed;
		rep = t->reported;
		if (sup > rep) {
			t->reported = sup;
			custode_throttle_event(hook, reason, run, run_cgid, enforced, sup - rep, sup, ws);
		}
	}
	if (__sync_fetch_and_add(&t->in_window, 1) < burst)
		return 1;
	__sync_fetch_and_add(&t->suppressed, 1);
	es = bpf_map_lookup_elem(&custode_event_stats, &zero);
	if (es)
		es->suppressed++;
	return 0;
}

/*
 * Count a denial (exactly, always) and say whether to write its record
 * (throttling). Every denial site: `if (custode_record(...)) write the record`.
 */
static __always_inline int custode_record(__u64 run_cgid, __u16 hook, __u32 reason, struct custode_run *run,
					  __u32 enforced)
{
	custode_count(run_cgid, reason);
	return custode_throttle_pass(run_cgid, hook, reason, run, enforced);
}

#endif
