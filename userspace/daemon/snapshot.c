// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "daemon/service_impl.h"
#include "daemon/stream.h"
#include "engine/maps.h"
#include "state/runstate.h"

/* ---- snapshots: live counts, and the counts of runs that ended ---- */

static size_t slot_of(__u64 cgid)
{
	return (size_t)((cgid * 0x9e3779b97f4a7c15ull) >> 40) % TABLE_SLOTS;
}

static struct runrec *run_find(struct runrec *t, __u64 cgid, bool create)
{
	for (size_t i = 0, h = slot_of(cgid); i < TABLE_SLOTS; i++) {
		struct runrec *r = &t[(h + i) % TABLE_SLOTS];

		if (r->used && r->cgid == cgid)
			return r;
		if (!r->used) {
			if (!create)
				return NULL;
			memset(r, 0, sizeof(*r));
			r->used = true;
			r->cgid = cgid;
			return r;
		}
	}
	return NULL;
}

static struct dnsrec *dns_find(struct dnsrec *t, __u64 cgid, bool create)
{
	for (size_t i = 0, h = slot_of(cgid); i < TABLE_SLOTS; i++) {
		struct dnsrec *r = &t[(h + i) % TABLE_SLOTS];

		if (r->used && r->cgid == cgid)
			return r;
		if (!r->used) {
			if (!create)
				return NULL;
			memset(r, 0, sizeof(*r));
			r->used = true;
			r->cgid = cgid;
			return r;
		}
	}
	return NULL;
}

static void retire(const struct runrec *r)
{
	struct retired *t = NULL;

	for (size_t i = 0; i < V.n_ret; i++)
		if (!strcmp(V.ret[i].policy, r->policy))
			t = &V.ret[i];
	if (!t) {
		struct retired *nr = realloc(V.ret, (V.n_ret + 1) * sizeof(*nr));

		if (!nr)
			return;
		V.ret = nr;
		t = &V.ret[V.n_ret++];
		memset(t, 0, sizeof(*t));
		snprintf(t->policy, sizeof(t->policy), "%s", r->policy);
	}
	for (int k = 0; k < CUSTODE_REASON_KERNEL_MAX; k++)
		t->d[k] += r->c.denials[k];
}

void service_snapshot(void)
{
	struct runrec *now = calloc(TABLE_SLOTS, sizeof(*now));
	struct dnsrec *dnow = calloc(TABLE_SLOTS, sizeof(*dnow));
	struct custode_runstate *st = malloc(sizeof(*st));
	__u64 key, next;
	void *prev = NULL;

	if (!now || !dnow || !st)
		goto out;
	while (bpf_map_get_next_key(V.e->runs_fd, prev, &next) == 0) {
		struct custode_run run;
		struct runrec *r, *old;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(V.e->runs_fd, &key, &run) < 0 || !(r = run_find(now, key, true)))
			continue;
		r->run_id = run.run_id;
		r->attached = run.flags & CUSTODE_RUN_ATTACHED;
		custode_stream_note_run(key, run.run_id, run.policy_version);
		old = V.runs ? run_find(V.runs, key, false) : NULL;
		if (old && old->run_id == run.run_id && old->policy[0] && strcmp(old->policy, "unknown"))
			snprintf(r->policy, sizeof(r->policy), "%s", old->policy);
		else if (custode_runstate_read(run.run_id, st) == 0)
			snprintf(r->policy, sizeof(r->policy), "%s", st->policy);
		if (r->policy[0])
			custode_stream_set_policy(run.run_id, r->policy); /* its records after it ended still name it */
		else
			snprintf(r->policy, sizeof(r->policy), "unknown");
		if (custode_engine_get_counters(V.e, key, &r->c) < 0 && old)
			r->c = old->c;
	}
	for (size_t i = 0; V.runs && i < TABLE_SLOTS; i++)
		if (V.runs[i].used && !run_find(now, V.runs[i].cgid, false))
			retire(&V.runs[i]);
	free(V.runs);
	V.runs = now;
	now = NULL;
	/* the resolver's per-run counts: they go when the run's are read (or a minute after it ended) */
	if (V.dnsc_fd >= 0) {
		prev = NULL;
		while (bpf_map_get_next_key(V.dnsc_fd, prev, &next) == 0) {
			struct dnsrec *r;

			key = next;
			prev = &key;
			if ((r = dns_find(dnow, key, true)) && bpf_map_lookup_elem(V.dnsc_fd, &key, &r->c) < 0)
				r->used = false;
		}
		for (size_t i = 0; V.dns && i < TABLE_SLOTS; i++) {
			const struct dnsrec *o = &V.dns[i];

			if (!o->used || dns_find(dnow, o->cgid, false))
				continue;
			V.dns_retired.queries += o->c.queries;
			V.dns_retired.answered += o->c.answered;
			V.dns_retired.pins += o->c.pins;
			for (int k = 0; k < CUSTODE_DNS_REASONS; k++)
				V.dns_retired.denials[k] += o->c.denials[k];
		}
		free(V.dns);
		V.dns = dnow;
		dnow = NULL;
	}
out:
	free(now);
	free(dnow);
	free(st);
}

static int note_map(const struct custode_map_count *m, void *arg)
{
	(void)arg;
	snprintf(V.maps[V.n_maps].name, sizeof(V.maps[0].name), "%s", m->name);
	V.maps[V.n_maps].entries = m->entries;
	V.maps[V.n_maps++].max_entries = m->type == BPF_MAP_TYPE_RINGBUF ? 0 : m->max_entries;
	return V.n_maps == sizeof(V.maps) / sizeof(V.maps[0]);
}

void service_maps_refresh(void)
{
	V.n_maps = 0;
	custode_map_entries(4000000, note_map, NULL);
	V.maps_at = time(NULL);
}

int service_snapshot_timer(void *arg)
{
	int n;

	(void)arg;
	n = custode_attach_reap_vanished(V.e, service_report, NULL);
	(void)n;
	service_snapshot();
	if (time(NULL) - V.maps_at >= MAPS_REFRESH_S)
		service_maps_refresh();
	return 0;
}

