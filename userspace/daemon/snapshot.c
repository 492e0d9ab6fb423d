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

/*
 * The tables are walked in slot order, which nothing sees: the metrics text
 * sorts a family's samples by their labels (metrics/metrics.c), and what
 * runs retire into the totals is summed.
 */
void service_snapshot(struct custode_service *v)
{
	const struct custode_table_spec runs = {
		.key_size = sizeof(__u64), .val_size = sizeof(struct runrec), .slots = RUNS_SLOTS, .max = RUNS_SLOTS / 4 * 3};
	const struct custode_table_spec dns = {.key_size = sizeof(__u64), .val_size = sizeof(struct custode_dns_counters),
					       .slots = DNS_SLOTS, .max = DNS_SLOTS / 4 * 3};
	struct custode_table now = {0}, dnow = {0};
	struct custode_runstate *st = malloc(sizeof(*st));
	struct custode_table_iter it;
	const void *cgid;
	__u64 key, next;
	void *prev = NULL, *val;

	if (custode_table_init(&now, &runs) < 0 || custode_table_init(&dnow, &dns) < 0 || !st)
		goto out;
	while (bpf_map_get_next_key(v->e->runs_fd, prev, &next) == 0) {
		struct custode_run run;
		struct runrec *r, *old;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(v->e->runs_fd, &key, &run) < 0 || custode_table_insert(&now, &key, &val) < 0)
			continue;
		r = val;
		r->run_id = run.run_id;
		r->attached = run.flags & CUSTODE_RUN_ATTACHED;
		custode_stream_note_run(v->stream, key, run.run_id, run.policy_version);
		old = custode_table_find(&v->runs, &key);
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
	custode_table_iter_init(&v->runs, &it);
	while (custode_table_iter_next(&v->runs, &it, &cgid, &val))
		if (!custode_table_find(&now, cgid))
			retire(v, val);
	custode_table_free(&v->runs);
	v->runs = now;
	now = (struct custode_table){0};
	/* the resolver's per-run counts: they go when the run's are read (or a minute after it ended) */
	if (v->dnsc_fd >= 0) {
		prev = NULL;
		while (bpf_map_get_next_key(v->dnsc_fd, prev, &next) == 0) {
			key = next;
			prev = &key;
			if (custode_table_insert(&dnow, &key, &val) >= 0 && bpf_map_lookup_elem(v->dnsc_fd, &key, val) < 0)
				custode_table_delete(&dnow, &key);
		}
		custode_table_iter_init(&v->dns, &it);
		while (custode_table_iter_next(&v->dns, &it, &cgid, &val)) {
			const struct custode_dns_counters *o = val;

			if (custode_table_find(&dnow, cgid))
				continue;
			v->dns_retired.queries += o->queries;
			v->dns_retired.answered += o->answered;
			v->dns_retired.pins += o->pins;
			for (int k = 0; k < CUSTODE_DNS_REASONS; k++)
				v->dns_retired.denials[k] += o->denials[k];
		}
		custode_table_free(&v->dns);
		v->dns = dnow;
		dnow = (struct custode_table){0};
	}
out:
	custode_table_free(&now);
	custode_table_free(&dnow);
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

