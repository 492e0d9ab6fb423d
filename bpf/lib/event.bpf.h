/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Denial records and counts: the per-run counters, the one way a record
 * reaches the ring buffer (custode_event_reserve/submit, custode_event_output),
 * and the throttle that decides whether a denial writes one
 * (custode_record).
 */
#ifndef CUSTODE_EVENT_BPF_H
#define CUSTODE_EVENT_BPF_H

#include "maps.bpf.h"

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
	/* atomic even per CPU: a program preempted between a load and its store would lose another's count */
	if (dropped)
		__sync_fetch_and_add(&st->events_dropped, 1);
	else
		__sync_fetch_and_add(&st->events, 1);
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
}

/*
 * The one way a record reaches the ring buffer: reserve one (its common
 * fields filled), fill its object, submit it. A full buffer drops the record
 * and counts the drop (custode_stats); the verdict never depends on it.
 */
static __always_inline struct custode_event *custode_event_reserve(__u16 hook, __u32 reason, struct custode_run *run,
								   __u32 enforced)
{
	struct custode_event *ev = bpf_ringbuf_reserve(&custode_events, sizeof(*ev), 0);

	if (!ev) {
		custode_count_stat(1);
		return NULL;
	}
	custode_event_init(ev, hook, reason, run, enforced);
	return ev;
}

static __always_inline void custode_event_submit(struct custode_event *ev)
{
	bpf_ringbuf_submit(ev, 0);
	custode_count_stat(0);
}

/* A record of `size` bytes built elsewhere (a scratch buffer with a path after the record): copied in. */
static __always_inline void custode_event_output(void *ev, __u32 size)
{
	long err = bpf_ringbuf_output(&custode_events, ev, size, 0);

	custode_count_stat(err != 0);
}

/*
 * One throttle record: `count` denials of (run, reason) were not recorded.
 * Spelled out rather than through custode_event_reserve/submit: it is
 * inlined into every hook, and the helpers make clang schedule
 * custode_file_open's stack stores differently — that program has no
 * verifier headroom on 6.1, so its instructions stay as they were.
 */
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
		__sync_fetch_and_add(&es->throttle_records, 1);
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
		__sync_fetch_and_add(&es->suppressed, 1);
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
