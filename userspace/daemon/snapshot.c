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
#include "state/ended.h"
#include "state/runstate.h"

/* ---- snapshots: live counts, and the counts of runs that ended ---- */

/* The entry of a policy in *arr (added, zero, if missing), or NULL without memory. */
static struct policy_denials *policy_entry(struct policy_denials **arr, size_t *n, const char *policy)
{
	struct policy_denials *t;

	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*arr)[i].policy, policy))
			return &(*arr)[i];
	t = realloc(*arr, (*n + 1) * sizeof(*t));
	if (!t)
		return NULL;
	*arr = t;
	t = &t[(*n)++];
	memset(t, 0, sizeof(*t));
	snprintf(t->policy, sizeof(t->policy), "%s", policy);
	return t;
}

static __u64 max_u64(__u64 a, __u64 b)
{
	return a > b ? a : b;
}

/* The ended runs' denials, by policy, from the totals file's "denials". */
static void ended_denials(const json_t *ended, struct policy_denials **arr, size_t *n)
{
	const char *policy, *reason;
	json_t *by, *cnt;

	json_object_foreach(json_object_get(ended, "denials"), policy, by) {
		struct policy_denials *t = policy_entry(arr, n, policy);

		json_object_foreach(by, reason, cnt) {
			int k = custode_reason_from_name(reason);

			if (t && k >= 0 && k < CUSTODE_REASON_KERNEL_MAX && json_is_integer(cnt))
				t->d[k] += (__u64)json_integer_value(cnt);
		}
	}
}

/* The ended runs' resolver counts, from the totals file's "resolver". */
static void ended_dns(const json_t *ended, struct custode_dns_counters *d)
{
	const json_t *res = json_object_get(ended, "resolver");

	d->queries += (__u64)json_integer_value(json_object_get(res, "queries"));
	d->answered += (__u64)json_integer_value(json_object_get(res, "answered"));
	d->pins += (__u64)json_integer_value(json_object_get(res, "pins"));
	for (int k = 0; k < CUSTODE_DNS_REASONS; k++) {
		const char *name = custode_reason_name(CUSTODE_REASON_DNS_NAME_DENIED + k);

		if (name)
			d->denials[k] += (__u64)json_integer_value(json_object_get(json_object_get(res, "refusals"), name));
	}
}

void service_totals(struct custode_service *v, const json_t *ended)
{
	struct policy_denials *fresh = NULL;
	struct custode_dns_counters dns = {0};
	struct custode_table_iter it;
	size_t n = 0;
	void *val;

	ended_denials(ended, &fresh, &n);
	custode_table_iter_init(&v->runs, &it);
	while (custode_table_iter_next(&v->runs, &it, NULL, &val)) {
		const struct runrec *r = val;
		struct policy_denials *t = policy_entry(&fresh, &n, r->policy);

		for (int k = 0; t && k < CUSTODE_REASON_KERNEL_MAX; k++)
			t->d[k] += r->c.denials[k];
	}
	/* counters never go down: a policy or count shown before stays at least that */
	for (size_t i = 0; i < v->n_den; i++) {
		struct policy_denials *t = policy_entry(&fresh, &n, v->den[i].policy);

		for (int k = 0; t && k < CUSTODE_REASON_KERNEL_MAX; k++)
			t->d[k] = max_u64(t->d[k], v->den[i].d[k]);
	}
	free(v->den);
	v->den = fresh;
	v->n_den = n;
	ended_dns(ended, &dns);
	custode_table_iter_init(&v->dns, &it);
	while (custode_table_iter_next(&v->dns, &it, NULL, &val)) {
		const struct custode_dns_counters *c = val;

		dns.queries += c->queries;
		dns.answered += c->answered;
		dns.pins += c->pins;
		for (int k = 0; k < CUSTODE_DNS_REASONS; k++)
			dns.denials[k] += c->denials[k];
	}
	v->dns_total.queries = max_u64(v->dns_total.queries, dns.queries);
	v->dns_total.answered = max_u64(v->dns_total.answered, dns.answered);
	v->dns_total.pins = max_u64(v->dns_total.pins, dns.pins);
	for (int k = 0; k < CUSTODE_DNS_REASONS; k++)
		v->dns_total.denials[k] = max_u64(v->dns_total.denials[k], dns.denials[k]);
}

/*
 * The tables are walked in slot order, which nothing sees: the metrics text
 * sorts a family's samples by their labels (metrics/metrics.c), and the
 * counts are summed.
 */
void service_snapshot(struct custode_service *v)
{
	/*
	 * Growing tables, sized by what is there: made anew every SNAPSHOT_MS,
	 * tables of RUNS_SLOTS and DNS_SLOTS slots cost an idle daemon ≈7 MiB
	 * of zeroed (resident) heap each time, twice over (this one and the
	 * last). The bounds are kept by the count checks below.
	 */
	const struct custode_table_spec runs = {.key_size = sizeof(__u64), .val_size = sizeof(struct runrec), .slots = 64};
	const struct custode_table_spec dns = {
		.key_size = sizeof(__u64), .val_size = sizeof(struct custode_dns_counters), .slots = 64};
	struct custode_table now = {0}, dnow = {0};
	struct custode_runstate *st = malloc(sizeof(*st));
	json_t *ended = NULL;
	struct custode_table_iter it;
	const void *cgid;
	__u64 key, next;
	void *prev = NULL, *val;

	if (custode_table_init(&now, &runs) < 0 || custode_table_init(&dnow, &dns) < 0 || !st)
		goto out;
	/* before the live runs: a run unregistered meanwhile is in neither (never in both) */
	if (custode_ended_load(v->o.ended_file, &ended) < 0)
		ended = NULL;
	while (bpf_map_get_next_key(v->e->runs_fd, prev, &next) == 0) {
		struct custode_run run;
		struct runrec *r, *old;

		key = next;
		prev = &key;
		if (custode_table_count(&now) >= RUNS_SLOTS / 4 * 3 || bpf_map_lookup_elem(v->e->runs_fd, &key, &run) < 0 ||
		    custode_table_insert(&now, &key, &val) < 0)
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
	custode_table_free(&v->runs);
	v->runs = now;
	now = (struct custode_table){0};
	/* the resolver's per-run counts: they go when the run's are read (or a minute after it ended) */
	if (v->dnsc_fd >= 0) {
		prev = NULL;
		while (bpf_map_get_next_key(v->dnsc_fd, prev, &next) == 0) {
			key = next;
			prev = &key;
			if (custode_table_count(&dnow) < DNS_SLOTS / 4 * 3 && custode_table_insert(&dnow, &key, &val) >= 0 &&
			    bpf_map_lookup_elem(v->dnsc_fd, &key, val) < 0)
				custode_table_delete(&dnow, &key);
		}
		custode_table_iter_init(&v->dns, &it);
		while (custode_table_iter_next(&v->dns, &it, &cgid, &val)) {
			const struct custode_dns_counters *o = val;

			if (!custode_table_find(&dnow, cgid)) /* the resolver let go of an ended run's counts */
				custode_ended_add(v->o.ended_file, NULL, NULL, o);
		}
		custode_table_free(&v->dns);
		v->dns = dnow;
		dnow = (struct custode_table){0};
	}
	service_totals(v, ended);
out:
	json_decref(ended);
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

