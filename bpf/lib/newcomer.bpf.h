/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Newcomers (docs/operations.md, "Containers below an attached cgroup"): a
 * process that a process in no run placed into an attached run's cgroup,
 * while it was itself in no run — a container runtime's init moved into the
 * new container's cgroup (cgroup.procs, or clone3 CLONE_INTO_CGROUP). Until
 * its next exec (the entrypoint) it is treated as outside the run by the
 * file, mount and process hooks: its set-up (mounts, pivot_root, host paths
 * under the runtime's storage, /proc, setns) happens before the entrypoint
 * and is the runtime's, not the run's. The exec ends the window: from its
 * first LSM hook that has the file (bprm_creds_for_exec) on, everything is
 * the run's, the entrypoint's own exec check included.
 *
 * The mark is set only by bpf/proc.bpf.c (fentry/fexit cgroup_attach_task,
 * tp_btf/task_newtask) and lives in task storage on the thread-group leader,
 * so a threadgroup move covers every thread. A newcomer's fork child (still
 * the runtime's code: runc's nsexec stages, crun exec after setns into a pid
 * namespace) inherits it until its own exec; a resident's child never has one. Nothing inside a run can make one: the mover must be in no run and
 * the moved process in no run either.
 *
 * Objects whose hooks treat newcomers as outside the run define
 * CUSTODE_NEWCOMERS_OUTSIDE before their first include (file, proc); the
 * others (net) see a newcomer as the resident it will become.
 */
#ifndef CUSTODE_NEWCOMER_BPF_H
#define CUSTODE_NEWCOMER_BPF_H

#include "maps.bpf.h"

/* No entry: not a newcomer (a resident, or a process outside every run). */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct custode_newcomer);
	CUSTODE_PIN_BY_NAME(custode_newcomers);
} custode_newcomers SEC(".maps");

/*
 * How many marks may exist, host-wide: raised before a mark is made, lowered
 * after one is removed (the exec that ends a window, the exit of a process
 * that never exec'd: bpf/proc.bpf.c). While it is 0 — no container is being
 * set up anywhere, the usual state — the hooks skip the task-storage lookup
 * (≈770 ns of guest time per hook on 7.3, docs/benchmarks.md). Counting
 * errs one way only: a mark removed some other way (the storage freed with
 * its task, a delete refused by the kernel) leaves the count high, which
 * costs lookups, never a missed mark.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	CUSTODE_PIN_BY_NAME(custode_newcomers_live);
} custode_newcomers_live SEC(".maps");

/* May any task be a newcomer now? An inlined array load, no helper call. */
static __always_inline bool custode_newcomers_possible(void)
{
	__u32 zero = 0;
	__u64 *live = bpf_map_lookup_elem(&custode_newcomers_live, &zero);

	return !live || *(volatile __u64 *)live != 0;
}

/* Is t (any thread of it) a newcomer placed into run `run_cgid`? A mark of another run is stale: not here. */
static __always_inline bool custode_newcomer_task(struct task_struct *t, __u64 run_cgid)
{
	struct custode_newcomer *n;

	if (!t || !run_cgid || !custode_newcomers_possible())
		return false;
	n = bpf_task_storage_get(&custode_newcomers, t->group_leader, NULL, 0);
	return n && n->run_cgid == run_cgid;
}

/*
 * Is the current task a newcomer of run `run_cgid` (its attached run)? A
 * global function: verified once per program, so the hot hooks that find
 * their run through run.bpf.h (file_open has no verifier headroom on 6.1)
 * pay one call, not its body at every call site.
 */
__noinline int custode_newcomer_here(__u64 run_cgid)
{
	return custode_newcomer_task(bpf_get_current_task_btf(), run_cgid);
}

#endif
