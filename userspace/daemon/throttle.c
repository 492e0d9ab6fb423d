// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/stream_impl.h"
#include "state/runstate.h"
#include "util/time.h"

/* ---- throttle records: kernel and daemon, reconciled by the monotonic totals ---- */

/*
 * A pair's entry in the reconcile table, made when create and the table is
 * below RECONCILE_MAX (util/table.h's bounded table); NULL when absent, or
 * when full: the pair is then reported as the kernel says. A new entry's
 * total is 0. The pointer is valid until the next sweep.
 */
struct reconcile *stream_rec_slot(struct custode_stream *s, __u64 cgid, __u32 reason, bool create)
{
	struct custode_throttle_key key;
	struct reconcile *r;
	void *val;
	int ret;

	memset(&key, 0, sizeof(key));
	key.run_cgid = cgid;
	key.reason = reason;
	if (!create)
		return custode_table_find(&s->rec, &key);
	if ((ret = custode_table_insert(&s->rec, &key, &val)) < 0)
		return NULL; /* -ENOSPC: full, reported as the kernel says */
	r = val;
	if (ret == 1)
		r->pass = s->rec_pass;
	return r;
}

/*
 * After a complete pass over the kernel map: the entries of pairs whose
 * kernel entry it did not see (evicted, or gone with their run) go.
 */
void stream_rec_sweep(struct custode_stream *s)
{
	struct custode_table_iter it;
	void *val;

	custode_table_iter_init(&s->rec, &it);
	while (custode_table_iter_next(&s->rec, &it, NULL, &val))
		if (((struct reconcile *)val)->pass != s->rec_pass)
			custode_table_iter_remove(&s->rec, &it);
}

/*
 * A kernel throttle record: its count is what the kernel had not reported;
 * the daemon may have reported part of it already (a quiet window's
 * summary). Keep what's new; a record with nothing new is not published.
 */
bool stream_reconcile_kernel(struct custode_stream *s, json_t *ev)
{
	json_t *t = json_object_get(ev, "throttle");
	__u64 cgid = (__u64)json_integer_value(json_object_get(t, "run_cgid"));
	__u64 total = (__u64)json_integer_value(json_object_get(t, "total"));
	int reason = custode_reason_from_name(json_string_value(json_object_get(ev, "reason")));
	struct reconcile *r = reason >= 0 ? stream_rec_slot(s, cgid, (__u32)reason, false) : NULL;
	bool fresh = false;
	__u64 count;

	{
		const char *rid = json_string_value(json_object_get(ev, "run_id"));
		__u64 id;

		if (rid && custode_run_id_parse(rid, &id) == 0 && id)
			custode_stream_note_run(s, cgid, id,
						(__u64)json_integer_value(json_object_get(json_object_get(ev, "policy"), "version")));
	}
	if (!r && reason >= 0)
		fresh = (r = stream_rec_slot(s, cgid, (__u32)reason, true)) != NULL;
	if (!r)
		return true;
	/*
	 * A record written before this daemon started (left in the ring buffer by
	 * the last one) whose total the baseline already holds: covered by the
	 * baseline, not an eviction (it would be reported twice).
	 */
	if (!fresh && total <= r->total &&
	    (__u64)json_integer_value(json_object_get(ev, "boot_ns")) < s->baseline_boot_ns)
		return false;
	/*
	 * Nothing said about this entry yet (a new slot), or the kernel's entry
	 * was evicted and started again: what the kernel had not reported.
	 */
	if (fresh || total < r->total)
		count = (__u64)json_integer_value(json_object_get(t, "count"));
	else
		count = total - r->total;
	r->total = total;
	if (!count)
		return false;
	json_object_set_new(t, "count", json_integer((json_int_t)count));
	s->st.throttle_records++;
	s->st.throttled += count;
	return true;
}

/* Remembered in the known-runs table, an evicting one (stream_impl.h: which run a new one past KNOWN_MAX evicts). */
void custode_stream_note_run(struct custode_stream *s, __u64 cgid, __u64 run_id, __u64 version)
{
	struct known_run *k;
	void *val;

	if (!cgid || custode_table_insert(&s->known, &cgid, &val) < 0)
		return;
	k = val;
	k->run_id = run_id;
	k->version = version;
}

/* A run by cgroup id: registered now, or seen while it was (its summary may come after it ended). */
__u64 stream_run_id_of(struct custode_stream *s, __u64 cgid, __u64 *version)
{
	struct custode_run run;
	struct known_run *k;

	*version = 0;
	if (s->runs_fd >= 0 && s->maps.lookup_elem(s->maps.ctx, s->runs_fd, &cgid, &run) == 0) {
		custode_stream_note_run(s, cgid, run.run_id, run.policy_version);
		*version = run.policy_version;
		return run.run_id;
	}
	k = custode_table_find(&s->known, &cgid);
	if (!k)
		return 0;
	*version = k->version;
	return k->run_id;
}

/*
 * Suppressed denials the kernel has not summarised because no later denial
 * of that run and reason came (the storm stopped): once the window is over,
 * the daemon says so itself.
 */
void stream_throttle_flush(struct custode_stream *s, uint64_t window_ns)
{
	struct custode_throttle_key key, next;
	struct custode_throttle val;
	struct timespec bt;
	void *prev = NULL;
	size_t keys = 0;
	__u64 now;
	int err;

	if (s->throttle_fd < 0)
		return;
	clock_gettime(CLOCK_BOOTTIME, &bt);
	now = (__u64)bt.tv_sec * 1000000000ull + (__u64)bt.tv_nsec;
	s->rec_pass++;
	/*
	 * The kernel makes an entry for the first denial of every (run,
	 * reason); only those with suppressed denials need a slot. Each entry
	 * seen marks its slot for this pass; after a complete pass the rest go.
	 */
	while ((err = s->maps.get_next_key(s->maps.ctx, s->throttle_fd, prev, &next)) == 0 && keys++ < THROTTLE_PASS_MAX) {
		struct reconcile *r;
		char when[64], since[64], hex[17];
		__u64 version;
		__u64 run_id;
		json_t *ev;

		key = next;
		prev = &key;
		if (s->maps.lookup_elem(s->maps.ctx, s->throttle_fd, &key, &val) < 0)
			continue;
		r = stream_rec_slot(s, key.run_cgid, key.reason, val.suppressed > 0);
		if (!r)
			continue;
		r->pass = s->rec_pass;
		if (val.suppressed < r->total)
			r->total = 0; /* suppressed only grows: the entry was evicted and made again since */
		if (val.suppressed <= r->total || now - val.window_start_ns < window_ns)
			continue;
		run_id = stream_run_id_of(s, key.run_cgid, &version);
		custode_run_id_format(run_id, hex);
		custode_time_show((int64_t)now + s->boot_to_wall, when, sizeof(when));
		custode_time_show((int64_t)val.window_start_ns + s->boot_to_wall, since, sizeof(since));
		ev = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:{s:I}, s:{s:I, s:I, s:s, s:I}}", "version",
			       CUSTODE_EVENT_VERSION, "type", "throttle", "source", "daemon", "time", when, "run_id", hex,
			       "reason", custode_reason_name((int)key.reason) ? custode_reason_name((int)key.reason) : "unknown",
			       "policy", "version", (json_int_t)version, "throttle", "count",
			       (json_int_t)(val.suppressed - r->total), "total", (json_int_t)val.suppressed, "since", since,
			       "run_cgid", (json_int_t)key.run_cgid);
		s->st.throttle_records++;
		s->st.throttled += val.suppressed - r->total;
		r->total = val.suppressed;
		if (ev) {
			custode_event_enrich(s->en, ev);
			stream_publish(s, ev);
			json_decref(ev);
		}
	}
	if (err == -ENOENT) /* the whole map was seen (not cut by an error or endless restarts) */
		stream_rec_sweep(s);
}

/* Start from what the kernel holds: what happened before this daemon is not reported again. */
void stream_throttle_baseline(struct custode_stream *s)
{
	struct custode_throttle_key key, next;
	struct custode_throttle val;
	void *prev = NULL;
	size_t keys = 0;

	if (s->throttle_fd < 0)
		return;
	while (s->maps.get_next_key(s->maps.ctx, s->throttle_fd, prev, &next) == 0 && keys++ < THROTTLE_PASS_MAX) {
		struct reconcile *r;

		key = next;
		prev = &key;
		/* an entry with nothing suppressed needs no slot: a new slot's total is 0 */
		if (s->maps.lookup_elem(s->maps.ctx, s->throttle_fd, &key, &val) == 0 && val.suppressed &&
		    (r = stream_rec_slot(s, key.run_cgid, key.reason, true)))
			r->total = val.suppressed;
	}
}

/* Records the full ring buffer lost, per CPU: one "dropped" record when the count moved. */
void stream_drops_check(struct custode_stream *s, bool baseline)
{
	struct custode_stats *per;
	__u32 zero = 0;
	__u64 total = 0;
	json_t *ev, *arr;
	char when[64];

	if (s->stats_fd < 0 || s->ncpu <= 0 || !(per = calloc((size_t)s->ncpu, sizeof(*per))))
		return;
	if (s->maps.lookup_elem(s->maps.ctx, s->stats_fd, &zero, per) < 0) {
		free(per);
		return;
	}
	arr = json_array();
	for (int i = 0; i < s->ncpu; i++) {
		total += per[i].events_dropped;
		json_array_append_new(arr, json_integer((json_int_t)per[i].events_dropped));
	}
	free(per);
	if (baseline || total <= s->last_dropped) {
		s->last_dropped = total;
		json_decref(arr);
		return;
	}
	{
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		custode_time_show(now.tv_sec * 1000000000LL + now.tv_nsec, when, sizeof(when));
	}
	ev = json_pack("{s:i, s:s, s:s, s:s, s:I, s:I, s:o}", "version", CUSTODE_EVENT_VERSION, "type", "dropped",
		       "source", "daemon", "time", when, "count", (json_int_t)(total - s->last_dropped), "total",
		       (json_int_t)total, "per_cpu", arr);
	s->st.dropped += total - s->last_dropped;
	s->last_dropped = total;
	if (ev) {
		stream_publish(s, ev);
		json_decref(ev);
	}
}

