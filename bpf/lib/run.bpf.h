/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Which run the current task (or a cgroup) is in: custode's root and the
 * gates of attached runs, the run cache, the cgroup walks; and the two
 * decisions every hook shares — is this task in a live run
 * (custode_live_run), and is this denial enforced (custode_enforced).
 */
#ifndef CUSTODE_RUN_BPF_H
#define CUSTODE_RUN_BPF_H

#include "maps.bpf.h"
#ifdef CUSTODE_NEWCOMERS_OUTSIDE
#include "newcomer.bpf.h"
#endif

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

/*
 * Where custode's runs live: the runs are the children of the cgroup with id
 * custode_root_cgid, which sits at level custode_root_level. Set by the
 * loader before load; read-only afterwards, so the verifier folds them.
 */
const volatile __u64 custode_root_cgid = 0;
const volatile __u32 custode_root_level = 0;

/*
 * Set by the loader for LSM objects: CUSTODE_RUN_CACHE_CGROUP where the
 * kernel has cgroup storage, else CUSTODE_RUN_CACHE_TASK (6.1: task storage,
 * custode_task_run_cache below); 0 (none) in the others.
 */
const volatile __u32 custode_use_run_cache = 0;

#ifdef CUSTODE_LSM_OBJECT
/*
 * The run cache per task (include/custode/abi.h), used where
 * custode_use_run_cache is CUSTODE_RUN_CACHE_TASK. LSM objects only: the
 * cgroup programs never cache (they can't get the task's BTF pointer).
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct custode_task_run_cache);
} custode_task_run_cache SEC(".maps");
#endif

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
	__u32 zero = 0, levels = 0, used;

	if (!top)
		return 0;
	g = bpf_map_lookup_elem(&custode_gates, &zero);
	if (!g)
		return 0;
	used = *(volatile __u32 *)&g->used;
	/*
	 * Only the slots `used` names, lowest first, stopping after the highest:
	 * a slot that holds `top` before and after an update has its bit in both
	 * (the word is read once), so the OR still keeps every level it holds.
	 */
#pragma unroll
	for (int i = 0; i < CUSTODE_MAX_GATES; i++) {
		if (!(used >> i))
			break;
		if ((used >> i) & 1)
			levels |= g->gate[i].levels & (0u - (__u32)(g->gate[i].id == top));
	}
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

/* The cached answer `id` (the run's cgroup, 0: none) as a lookup's result. */
static __always_inline int custode_cached_run(__u64 id, struct custode_run **runp, __u64 *run_cgid)
{
	struct custode_run *r;

	if (!id)
		return CUSTODE_NOT_IN_RUN;
	r = bpf_map_lookup_elem(&custode_runs, &id);
	if (!r || !(r->flags & CUSTODE_RUN_ATTACHED))
		return CUSTODE_NOT_IN_RUN; /* the run ended; the next bump invalidates */
	*runp = r;
	*run_cgid = id;
	return CUSTODE_IN_RUN;
}

/*
 * The answer a cache entry holds for tag (and, where the entry has a cgroup
 * cell, task storage, for cgroup cgid) in *id: 1, or 0 if it holds none.
 * `gen` is read again after the rest: an entry rewritten meanwhile (see
 * custode_run_cache_put) doesn't hold.
 */
static __always_inline int custode_run_cache_get(struct custode_run_cache *c, __u64 *cgid_cell, __u64 cgid, __u64 tag,
						 __u64 *id)
{
	volatile struct custode_run_cache *v = c;
	__u64 seen = v->gen, cg;

	*id = v->run_cgid;
	cg = cgid_cell ? *(volatile __u64 *)cgid_cell : cgid;
	return seen == tag && cg == cgid && v->gen == seen;
}

/*
 * Keep an answer in a cache entry: claim it (gen -> BUSY by compare and
 * swap; another writer holding it means we just don't cache this time),
 * write, then gen last. cgid: where the entry has one (task storage).
 */
static __always_inline void custode_run_cache_put(struct custode_run_cache *c, __u64 *cgid_cell, __u64 cgid, __u64 tag,
						  __u64 id)
{
	volatile struct custode_run_cache *v = c;
	__u64 seen = v->gen;

	if (seen == CUSTODE_RUN_CACHE_BUSY || __sync_val_compare_and_swap(&c->gen, seen, CUSTODE_RUN_CACHE_BUSY) != seen)
		return;
	if (cgid_cell)
		*(volatile __u64 *)cgid_cell = cgid;
	v->run_cgid = id;
	v->gen = tag;
}

#ifdef CUSTODE_LSM_OBJECT
/*
 * 6.1's run cache: the answer kept on the task, for the cgroup it is in
 * (custode_task_run_cache). Only the task itself reads and writes its
 * entry; a hook in interrupt context on its CPU may, hence the same
 * claim and re-read as the cgroup's.
 */
static __always_inline int custode_task_cached_run(__u32 levels, __u64 tag, struct custode_run **runp,
						   __u64 *run_cgid)
{
	struct custode_task_run_cache *t;
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 cgid = bpf_get_current_cgroup_id(), id;
	int where;

	t = bpf_task_storage_get(&custode_task_run_cache, task, 0, 0);
	if (t && custode_run_cache_get(&t->c, &t->cgid, cgid, tag, &id))
		return custode_cached_run(id, runp, run_cgid);
	where = custode_attached_run(levels, runp, run_cgid);
	if (!t)
		t = bpf_task_storage_get(&custode_task_run_cache, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (t)
		custode_run_cache_put(&t->c, &t->cgid, cgid, tag, where == CUSTODE_IN_RUN ? *run_cgid : 0);
	return where;
}
#endif

/*
 * The attached run of the current task below a gate, through the run cache
 * where there is one: a storage lookup on the task's cgroup (6.2+) or, for
 * a gate of two levels or more, on the task (6.1), valid while
 * custode_runs_gen is unchanged; else (a miss, or no cache) the lookups of
 * custode_attached_run, whose answer is then cached.
 */
static __always_inline int custode_gated_run(__u32 levels, struct custode_run **runp, __u64 *run_cgid)
{
	struct custode_run_cache *c;
	struct task_struct *task;
	struct cgroup *cg;
	__u64 gen, tag, id;
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
#ifdef CUSTODE_LSM_OBJECT
	/*
	 * Per task, only where the gate lists two levels or more: with one, the
	 * lookups cost an ancestor-id call and a hash lookup, no more than the
	 * cache's cgroup-id call, storage lookup and (in a run) hash lookup.
	 */
	if (custode_use_run_cache == CUSTODE_RUN_CACHE_TASK)
		return levels & (levels - 1) ? custode_task_cached_run(levels, tag, runp, run_cgid)
					     : custode_attached_run(levels, runp, run_cgid);
#endif
	task = bpf_get_current_task_btf();
	cg = task->cgroups->dfl_cgrp;
	c = bpf_cgrp_storage_get(&custode_run_cache, cg, 0, 0);
	if (c && custode_run_cache_get(c, NULL, 0, tag, &id))
		return custode_cached_run(id, runp, run_cgid);
	where = custode_attached_run(levels, runp, run_cgid);
	if (!c)
		c = bpf_cgrp_storage_get(&custode_run_cache, cg, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (c)
		custode_run_cache_put(c, NULL, 0, tag, where == CUSTODE_IN_RUN ? *run_cgid : 0);
	return where;
}

/*
 * An attached run's newcomer in its set-up window counts as outside the run
 * (bpf/lib/newcomer.bpf.h) in the objects that ask for it; elsewhere, and
 * for launcher runs (no newcomer is ever marked there), the run stands.
 */
static __always_inline int custode_gated_current(__u32 levels, struct custode_run **runp, __u64 *run_cgid)
{
	int where = custode_gated_run(levels, runp, run_cgid);

#ifdef CUSTODE_NEWCOMERS_OUTSIDE
	if (where == CUSTODE_IN_RUN && custode_newcomer_here(*run_cgid))
		return CUSTODE_NOT_IN_RUN;
#endif
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
		return custode_gated_current(levels, runp, run_cgid);
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
		if (!levels || custode_gated_current(levels, &run, &id) != CUSTODE_IN_RUN)
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

/*
 * Is cgroup `cg` (a pointer read with probe reads) inside run `run_cgid`?
 * Launcher runs: its ancestor one level below custode's root (one read).
 * Attached runs, at any level: a walk up the kernfs parents. Deeper than the
 * walk goes: not inside (callers deny).
 */
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

/*
 * The run-level verdict that comes before any policy, for a task that
 * custode_current_run found in a run (`where`, `run` as it returned them):
 * 0 for a live run, or the reason every hook refuses it with —
 * run.unregistered (below custode's root in no registered run: state that
 * is missing means deny; run is NULL) or run.cancelled.
 */
static __always_inline __u32 custode_run_denial(int where, const struct custode_run *run)
{
	if (where == CUSTODE_UNREGISTERED || !run)
		return CUSTODE_REASON_RUN_UNREGISTERED;
	if (run->flags & CUSTODE_RUN_CANCELLED)
		return CUSTODE_REASON_RUN_CANCELLED;
	return 0;
}

/*
 * Is the current task in a run, and is that run live? 0: in no run (the
 * hooks allow). 1: in a run, *runp and *run_cgid set, and *denial the
 * run-level verdict (custode_run_denial): 0 to go on with the policy, else
 * the reason to refuse with (*runp is NULL for run.unregistered).
 */
static __always_inline int custode_live_run(struct custode_run **runp, __u64 *run_cgid, __u32 *denial)
{
	int where = custode_current_run(runp, run_cgid);

	if (where == CUSTODE_NOT_IN_RUN)
		return 0;
	*denial = custode_run_denial(where, *runp);
	return 1;
}

/*
 * Is a denial enforced, or only recorded (audit mode allows)? Enforced when
 * no registered run stands behind it, when the run is cancelled, and for
 * the reasons that protect the engine itself whatever the mode (bpf() from
 * a run, custode's objects from outside).
 *
 * CUSTODE_RUN_ENFORCES is the run-level part alone, for bpf/file.bpf.c,
 * whose denials never carry those reasons: a macro, because it must expand
 * to what custode_file_open always had (that program has no verifier
 * headroom on 6.1; the reason tests, or the same expression behind a
 * function call, make clang lay it out differently).
 */
#define CUSTODE_RUN_ENFORCES(run)                                                                          \
	(!(run) || !((run)->flags & CUSTODE_RUN_AUDIT) || ((run)->flags & CUSTODE_RUN_CANCELLED))

static __always_inline __u32 custode_enforced(const struct custode_run *run, __u32 reason)
{
	return CUSTODE_RUN_ENFORCES(run) || reason == CUSTODE_REASON_RUN_CANCELLED ||
	       reason == CUSTODE_REASON_RUN_UNREGISTERED || reason == CUSTODE_REASON_PROCESS_BPF_DENIED ||
	       reason == CUSTODE_REASON_ENGINE_PROTECTED;
}

#endif
