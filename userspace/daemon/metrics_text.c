// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "daemon/service_impl.h"
#include "daemon/control.h"
#include "daemon/stream.h"
#include "metrics/metrics.h"
#include "state/ended.h"
#include "util/fsutil.h"

/* ---- metrics ---- */

struct bundle_ctx {
	struct custode_prom *p;
};

static void bundle_metric(void *ctx, const char *policy, uint64_t version, int64_t not_before, int64_t not_after)
{
	struct bundle_ctx *b = ctx;

	custode_prom_add(b->p, "custode_policy_bundle_version", (double)version, "policy", policy, NULL);
	custode_prom_add(b->p, "custode_policy_bundle_not_before_seconds", (double)not_before, "policy", policy, NULL);
	custode_prom_add(b->p, "custode_policy_bundle_not_after_seconds", (double)not_after, "policy", policy, NULL);
}

void service_percpu_sum(int fd, size_t size, void *out)
{
	int ncpu = libbpf_num_possible_cpus();
	unsigned char *per;
	__u32 zero = 0;

	memset(out, 0, size);
	if (fd < 0 || ncpu <= 0 || !(per = calloc((size_t)ncpu, size)))
		return;
	if (bpf_map_lookup_elem(fd, &zero, per) == 0)
		for (int c = 0; c < ncpu; c++)
			for (size_t w = 0; w < size / 8; w++)
				((__u64 *)out)[w] += ((__u64 *)(per + (size_t)c * size))[w];
	free(per);
}

/* The daemon, the runs and their denials (live runs' and ended runs'), the bundles. */
static void metrics_runs(struct custode_service *v, struct custode_prom *p)
{
	struct bundle_ctx bc = {p};
	struct custode_table_iter it;
	char abi[16];
	void *val;

	snprintf(abi, sizeof(abi), "%d", CUSTODE_ABI_VERSION);
	custode_prom_family(p, "custode_build_info", "gauge", "Always 1: this daemon's version and the engine ABI it speaks.");
	custode_prom_add(p, "custode_build_info", 1, "version", CUSTODE_VERSION, "abi", abi, NULL);
	custode_prom_one(p, "custode_daemon_start_time_seconds", "gauge", "When this daemon started (unix seconds).", (double)v->o.started);
	custode_prom_family(p, "custode_runs_active", "gauge", "Registered runs, by kind (launched: custode run; attached: custode attach).");
	custode_prom_add(p, "custode_runs_active", 0, "kind", "launched", NULL);
	custode_prom_add(p, "custode_runs_active", 0, "kind", "attached", NULL);
	custode_prom_family(p, "custode_denials_total", "counter",
			    "Denials by policy and reason: the engine's exact per-run counters of live runs, plus the "
			    "final counters of every run that ended (kept in " CUSTODE_ENDED_FILE ").");
	custode_table_iter_init(&v->runs, &it);
	while (custode_table_iter_next(&v->runs, &it, NULL, &val)) {
		const struct runrec *r = val;

		custode_prom_add(p, "custode_runs_active", 1, "kind", r->attached ? "attached" : "launched", NULL);
	}
	for (size_t i = 0; i < v->n_den; i++)
		for (int k = 0; k < CUSTODE_REASON_KERNEL_MAX; k++)
			if (v->den[i].d[k])
				custode_prom_add(p, "custode_denials_total", (double)v->den[i].d[k], "policy", v->den[i].policy,
						 "reason", custode_reason_name(k) ? custode_reason_name(k) : "unknown", NULL);
	custode_prom_family(p, "custode_policy_bundle_version", "gauge", "Version of the accepted bundle of each policy.");
	custode_prom_family(p, "custode_policy_bundle_not_before_seconds", "gauge", "notBefore of that bundle (unix seconds).");
	custode_prom_family(p, "custode_policy_bundle_not_after_seconds", "gauge",
			    "notAfter of that bundle (unix seconds): alert well before it passes.");
	custode_metrics_each_bundle(bundle_metric, &bc);
}

/* The resolver's counts: those of live runs, plus those of every run that ended (service_totals). */
static void metrics_resolver(struct custode_service *v, struct custode_prom *p)
{
	const struct custode_dns_counters dns = v->dns_total;

	custode_prom_one(p, "custode_resolver_up", "gauge", "1 when this daemon runs the resolver.", v->o.resolver ? 1 : 0);
	custode_prom_one(p, "custode_resolver_queries_total", "counter", "DNS queries of runs, attributed to their run.", (double)dns.queries);
	custode_prom_one(p, "custode_resolver_answered_total", "counter", "Queries answered with at least one vetted address.", (double)dns.answered);
	custode_prom_one(p, "custode_resolver_pins_total", "counter", "Pins written or renewed.", (double)dns.pins);
	custode_prom_family(p, "custode_resolver_refusals_total", "counter", "Resolver refusals by reason.");
	for (int k = 0; k < CUSTODE_DNS_REASONS; k++) {
		const char *name = custode_reason_name(CUSTODE_REASON_DNS_NAME_DENIED + k);

		if (name)
			custode_prom_add(p, "custode_resolver_refusals_total", (double)dns.denials[k], "reason", name, NULL);
	}
}

/* The engine's records: written, lost to a full ring buffer (per CPU), suppressed by throttling. */
static void metrics_engine(struct custode_service *v, struct custode_prom *p)
{
	struct custode_stats es = {0};
	struct custode_event_stats xs = {0};
	int ncpu = libbpf_num_possible_cpus();

	service_percpu_sum(v->stats_fd, sizeof(es), &es);
	service_percpu_sum(v->estats_fd, sizeof(xs), &xs);
	custode_prom_one(p, "custode_events_total", "counter", "Records the engine wrote to its ring buffer (since it loaded).", (double)es.events);
	custode_prom_family(p, "custode_events_dropped_total", "counter",
			    "Records lost because the ring buffer was full, per CPU (since the engine loaded).");
	if (v->stats_fd >= 0 && ncpu > 0) {
		struct custode_stats *per = calloc((size_t)ncpu, sizeof(*per));
		__u32 zero = 0;

		if (per && bpf_map_lookup_elem(v->stats_fd, &zero, per) == 0)
			for (int c = 0; c < ncpu; c++) {
				char cpu[16];

				snprintf(cpu, sizeof(cpu), "%d", c);
				custode_prom_add(p, "custode_events_dropped_total", (double)per[c].events_dropped, "cpu", cpu, NULL);
			}
		free(per);
	}
	custode_prom_one(p, "custode_events_suppressed_total", "counter",
			 "Denials counted but not recorded: in-kernel throttling per run and reason.", (double)xs.suppressed);
	custode_prom_one(p, "custode_events_throttle_records_total", "counter", "Throttle records the engine wrote.", (double)xs.throttle_records);
}

/* The stream and its readers (the control server's clients). */
static void metrics_stream(struct custode_service *v, struct custode_prom *p)
{
	struct custode_stream_stats ss;
	struct custode_control_stats cs;
	size_t clients, followers;

	custode_stream_stats(v->stream, &ss);
	service_control_counts(v, &clients, &followers, &cs);
	custode_prom_one(p, "custode_stream_records_total", "counter", "Decision records this daemon published.", (double)ss.records);
	custode_prom_one(p, "custode_stream_throttle_records_total", "counter", "Throttle records this daemon published (kernel and its own).", (double)ss.throttle_records);
	custode_prom_one(p, "custode_stream_bad_records_total", "counter", "Records of an unknown version or size.", (double)ss.bad);
	custode_prom_family(p, "custode_stream_sink_dropped_total", "counter", "Lines a slow or absent sink lost (never blocking).");
	custode_prom_add(p, "custode_stream_sink_dropped_total", (double)ss.sink_dropped[0], "sink", "stdout", NULL);
	custode_prom_add(p, "custode_stream_sink_dropped_total", (double)ss.sink_dropped[1], "sink", "file", NULL);
	custode_prom_one(p, "custode_stream_resolver_records_total", "counter", "Resolver decisions (DNS denials, filtered answers) published in the stream.", (double)ss.injected);
	custode_prom_one(p, "custode_stream_resolver_records_dropped_total", "counter", "Resolver decisions lost before the daemon's loop took them (its queue was full).", (double)ss.inject_dropped);
	custode_prom_one(p, "custode_stream_file_reopens_total", "counter", "Times the events file was renamed or removed under the daemon (logrotate) and opened again.", (double)ss.file_reopens);
	custode_prom_one(p, "custode_control_overflow_disconnects_total", "counter", "Control clients disconnected: their unread answers passed the hard cap.", (double)cs.overflow_disconnects);
	custode_prom_one(p, "custode_stream_follower_lost_total", "counter", "Records skipped for followers too slow to take them (each told {\"lost\": N}).", (double)cs.follower_lost);
	custode_prom_one(p, "custode_stream_followers", "gauge", "Clients following the stream (custode events --follow).", (double)followers);
	custode_prom_one(p, "custode_runs_reaped_total", "counter", "Runs this daemon reaped because their cgroup was gone.", (double)v->reaped);
	custode_prom_one(p, "custode_runs_orphans_reaped_total", "counter", "Launched runs this daemon reaped because their launcher was gone (what custode gc does).", (double)v->orphans_reaped);
}

/* The engine's maps' fill levels, as last counted. */
static void metrics_maps(struct custode_service *v, struct custode_prom *p)
{
	custode_prom_family(p, "custode_map_entries", "gauge", "Entries in each hash or trie map of the engine (counted every 30 s and at attach/detach).");
	custode_prom_family(p, "custode_map_capacity", "gauge", "max_entries of each map of the engine.");
	for (size_t i = 0; i < v->n_maps; i++) {
		if (v->maps[i].entries >= 0)
			custode_prom_add(p, "custode_map_entries", (double)v->maps[i].entries, "map", v->maps[i].name, NULL);
		if (v->maps[i].max_entries)
			custode_prom_add(p, "custode_map_capacity", (double)v->maps[i].max_entries, "map", v->maps[i].name, NULL);
	}
}

char *custode_service_metrics(struct custode_service *v)
{
	struct custode_prom *p = custode_prom_new();
	char *text;

	if (!p)
		return NULL;
	metrics_runs(v, p);
	metrics_resolver(v, p);
	metrics_engine(v, p);
	metrics_stream(v, p);
	metrics_maps(v, p);
	text = custode_prom_render(p);
	custode_prom_free(p);
	return text;
}

int service_textfile_timer(void *arg)
{
	struct custode_service *v = arg;
	char *text = custode_service_metrics(v);

	if (text && custode_write_file_atomic(v->o.metrics_file, text, strlen(text), 0644) < 0)
		fprintf(stderr, "custode daemon: metrics: writing %s: %s\n", v->o.metrics_file, strerror(errno));
	free(text);
	return 0;
}

