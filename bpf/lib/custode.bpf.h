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

/* Engine-wide event sequence number, shared by every object (hence a map). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} custode_seq SEC(".maps");

enum custode_lookup {
	CUSTODE_NOT_IN_RUN = 0,
	CUSTODE_IN_RUN = 1,
	CUSTODE_UNREGISTERED = 2,
};

/*
 * Find the current task's run. The cheap test comes first: a task whose
 * ancestor at custode's root level is not custode's root is outside every run
 * and costs one helper call, no map lookup. Only tasks below custode's root
 * pay the hash lookup. Child cgroups a run creates stay inside the run,
 * because the run is identified by the ancestor one level below the root.
 */
static __always_inline int custode_current_run(struct custode_run **runp, __u64 *run_cgid)
{
	__u64 id;

	if (!custode_root_cgid)
		return CUSTODE_NOT_IN_RUN;
	if (bpf_get_current_ancestor_cgroup_id(custode_root_level) != custode_root_cgid)
		return CUSTODE_NOT_IN_RUN;
	id = bpf_get_current_ancestor_cgroup_id(custode_root_level + 1);
	if (!id) /* a task in custode's root cgroup itself: not a run */
		return CUSTODE_NOT_IN_RUN;
	*run_cgid = id;
	*runp = bpf_map_lookup_elem(&custode_runs, &id);
	return *runp ? CUSTODE_IN_RUN : CUSTODE_UNREGISTERED;
}

/* The run cgroup of the current task, or 0 when it is outside every run (no map lookup). */
static __always_inline __u64 custode_current_run_cgid(void)
{
	if (!custode_root_cgid)
		return 0;
	if (bpf_get_current_ancestor_cgroup_id(custode_root_level) != custode_root_cgid)
		return 0;
	return bpf_get_current_ancestor_cgroup_id(custode_root_level + 1);
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
}

#endif
