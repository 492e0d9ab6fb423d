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

/* Is t (any thread of it) a newcomer placed into run `run_cgid`? A mark of another run is stale: not here. */
static __always_inline bool custode_newcomer_task(struct task_struct *t, __u64 run_cgid)
{
	struct custode_newcomer *n;

	if (!t || !run_cgid)
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
