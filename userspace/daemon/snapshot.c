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

static void retire(struct custode_service *v, const struct runrec *r)
{
	struct retired *t = NULL;

	for (size_t i = 0; i < v->n_ret; i++)
		if (!strcmp(v->ret[i].policy, r->policy))
			t = &v->ret[i];
	if (!t) {
		struct retired *nr = realloc(v->ret, (v->n_ret + 1) * sizeof(*nr));

		if (!nr)
			return;
		v->ret = nr;
		t = &v->ret[v->n_ret++];
		memset(t, 0, sizeof(*t));
		snprintf(t->policy, sizeof(t->policy), "%s", r->policy);
	}
	for (int k = 0; k < CUSTODE_REASON_KERNEL_MAX; k++)
		t->d[k] += r->c.denials[k];
}

void service_snapshot(struct custode_service *v)
{
	struct runrec *now = calloc(TABLE_SLOTS, sizeof(*now));
	struct dnsrec *dnow = calloc(TABLE_SLOTS, sizeof(*dnow));
	struct custode_runstate *st = malloc(sizeof(*st));
	__u64 key, next;
	void *prev = NULL;

	if (!now || !dnow || !st)
		goto out;
	while (bpf_map_get_next_key(v->e->runs_fd, prev, &next) == 0) {
		struct custode_run run;
		struct runrec *r, *old;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(v->e->runs_fd, &key, &run) < 0 || !(r = run_find(now, key, true)))
			continue;
		r->run_id = run.run_id;
		r->attached = run.flags & CUSTODE_RUN_ATTACHED;
		custode_stream_note_run(v->stream, key, run.run_id, run.policy_version);
		old = v->runs ? run_find(v->runs, key, false) : NULL;
		if (old && old->run_id == run.run_id && old->policy[0] && strcmp(old->policy, "unknown"))
			snprintf(r->policy, sizeof(r->policy), "%s", old->policy);
		else if (custode_runstate_read(run.run_id, st) == 0)
			snprintf(r->policy, sizeof(r->policy), "%s", st->policy);
		if (r->policy[0])
			custode_stream_set_policy(v->stream, run.run_id, r->policy); /* its records after it ended still name it */
		else
			snprintf(r->policy, sizeof(r->policy), "unknown");
		if (custode_engine_get_counters(v->e, key, &r->c) < 0 && old)
			r->c = old->c;
	}
	for (size_t i = 0; v->runs && i < TABLE_SLOTS; i++)
		if (v->runs[i].used && !run_find(now, v->runs[i].cgid, false))
			retire(v, &v->runs[i]);
	free(v->runs);
	v->runs = now;
	now = NULL;
	/* the resolver's per-run counts: they go when the run's are read (or a minute after it ended) */
	if (v->dnsc_fd >= 0) {
		prev = NULL;
		while (bpf_map_get_next_key(v->dnsc_fd, prev, &next) == 0) {
			struct dnsrec *r;

			key = next;
			prev = &key;
			if ((r = dns_find(dnow, key, true)) && bpf_map_lookup_elem(v->dnsc_fd, &key, &r->c) < 0)
				r->used = false;
		}
		for (size_t i = 0; v->dns && i < TABLE_SLOTS; i++) {
			const struct dnsrec *o = &v->dns[i];

			if (!o->used || dns_find(dnow, o->cgid, false))
				continue;
			v->dns_retired.queries += o->c.queries;
			v->dns_retired.answered += o->c.answered;
			v->dns_retired.pins += o->c.pins;
			for (int k = 0; k < CUSTODE_DNS_REASONS; k++)
				v->dns_retired.denials[k] += o->c.denials[k];
		}
		free(v->dns);
		v->dns = dnow;
		dnow = NULL;
	}
out:
	free(now);
	free(dnow);
	free(st);
}

static int note_map(const struct custode_map_count *m, void *arg)
{
	struct custode_service *v = arg;

	snprintf(v->maps[v->n_maps].name, sizeof(v->maps[0].name), "%s", m->name);
	v->maps[v->n_maps].entries = m->entries;
	v->maps[v->n_maps++].max_entries = m->type == BPF_MAP_TYPE_RINGBUF ? 0 : m->max_entries;
	return v->n_maps == sizeof(v->maps) / sizeof(v->maps[0]);
}

void service_maps_refresh(struct custode_service *v)
{
	v->n_maps = 0;
	custode_map_entries(4000000, note_map, v);
	v->maps_at = time(NULL);
}

int service_snapshot_timer(void *arg)
{
	struct custode_service *v = arg;
	int n;

	n = custode_attach_reap_vanished(v->e, service_report, v);
	(void)n;
	service_snapshot(v);
	if (time(NULL) - v->maps_at >= MAPS_REFRESH_S)
		service_maps_refresh(v);
	return 0;
}

