// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cgroup/cgroup.h"
#include "custode/resolver.h"
#include "daemon/control.h"
#include "daemon/loop.h"
#include "daemon/service.h"
#include "daemon/stream.h"
#include "dns/resolver.h"
#include "engine/maps.h"
#include "metrics/metrics.h"
#include "state/runstate.h"
#include "util/fsutil.h"
#include "util/sockaddr.h"

#define SNAPSHOT_MS 2000
#define MAPS_REFRESH_S 30
#define TABLE_SLOTS 8192 /* > 2 * CUSTODE_MAX_RUNS */
#define MAX_HTTP 16
#define HTTP_TIMEOUT_MS 5000

/* A run as the last snapshot saw it: its counts retire into the totals when it goes. */
struct runrec {
	bool used;
	__u64 cgid, run_id;
	bool attached;
	char policy[128];
	struct custode_counters c;
};

struct dnsrec {
	bool used;
	__u64 cgid;
	struct custode_dns_counters c;
};

struct retired {
	char policy[128];
	__u64 d[CUSTODE_REASON_KERNEL_MAX];
};

struct mapinfo {
	char name[64];
	long long entries; /* -1: not counted (arrays are always full) */
	unsigned max_entries;
};

struct http {
	bool used;
	int fd;
	char in[8192];
	size_t inlen;
	char *out;
	size_t outlen, off;
	uint64_t started;
};

static struct {
	struct custode_engine *e;
	struct custode_service_opts o;
	struct runrec *runs;
	struct dnsrec *dns;
	struct retired *ret;
	size_t n_ret;
	struct custode_dns_counters dns_retired;
	struct mapinfo maps[64];
	size_t n_maps;
	time_t maps_at;
	int http_fd, stats_fd, estats_fd, dnsc_fd;
	struct http http[MAX_HTTP];
	uint64_t reaped;
} V = {.http_fd = -1, .stats_fd = -1, .estats_fd = -1, .dnsc_fd = -1};

/* ---- reporting adoption and reaping ---- */

static void report(void *ctx, const char *action, const char *detail, const json_t *run)
{
	const char *rid = json_string_value(json_object_get(run, "run_id"));
	const char *kind = json_string_value(json_object_get(run, "kind"));
	const char *cg = json_string_value(json_object_get(run, "cgroup"));
	const char *pol = json_string_value(json_object_get(json_object_get(run, "policy"), "name"));
	__u64 id;

	(void)ctx;
	if (!strcmp(action, "reaped"))
		V.reaped++;
	if (rid && pol && custode_run_id_parse(rid, &id) == 0)
		custode_stream_set_policy(id, pol);
	/* an unverified policy is a refusal to trust it again: name its reason code */
	fprintf(stderr, "custode daemon: %s run %s (%s%s%s%s%s)%s%s%s\n", action, rid ? rid : "?", kind ? kind : "?",
		cg ? ", " : "", cg ? cg : "", pol ? ", policy " : "", pol ? pol : "", detail ? ": " : "",
		!strcmp(action, "unverified") ? "policy.unverified: " : "", detail ? detail : "");
}

int custode_service_adopt(struct custode_engine *e, const struct custode_policy_source *src)
{
	int n = custode_attach_adopt(e, src, report, NULL);

	if (n >= 0)
		fprintf(stderr, "custode daemon: adopted %d registered run%s\n", n, n == 1 ? "" : "s");
	return n;
}

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

static void snapshot(void)
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

static void maps_refresh(void)
{
	DIR *d = opendir(CUSTODE_PIN_MAPS);
	struct dirent *de;

	V.n_maps = 0;
	while (d && (de = readdir(d)) && V.n_maps < sizeof(V.maps) / sizeof(V.maps[0])) {
		struct bpf_map_info info;
		__u32 len = sizeof(info);
		unsigned char k[512], nk[512];
		char path[PATH_MAX];
		void *prev = NULL;
		long long n = 0;
		int fd;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", CUSTODE_PIN_MAPS, de->d_name);
		fd = bpf_obj_get(path);
		memset(&info, 0, sizeof(info));
		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) < 0) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		if (info.type == BPF_MAP_TYPE_HASH || info.type == BPF_MAP_TYPE_LRU_HASH ||
		    info.type == BPF_MAP_TYPE_LPM_TRIE) {
			if (info.key_size > sizeof(k)) {
				close(fd);
				continue;
			}
			while (n < 4000000 && bpf_map_get_next_key(fd, prev, nk) == 0) {
				memcpy(k, nk, info.key_size);
				prev = k;
				n++;
			}
		} else {
			n = -1;
		}
		close(fd);
		snprintf(V.maps[V.n_maps].name, sizeof(V.maps[0].name), "%s", de->d_name);
		V.maps[V.n_maps].entries = n;
		V.maps[V.n_maps++].max_entries = info.type == BPF_MAP_TYPE_RINGBUF ? 0 : info.max_entries;
	}
	if (d)
		closedir(d);
	V.maps_at = time(NULL);
}

static int snapshot_timer(void *arg)
{
	int n;

	(void)arg;
	n = custode_attach_reap_vanished(V.e, report, NULL);
	(void)n;
	snapshot();
	if (time(NULL) - V.maps_at >= MAPS_REFRESH_S)
		maps_refresh();
	return 0;
}

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

static void percpu_sum(int fd, size_t size, void *out)
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

char *custode_service_metrics(void)
{
	struct custode_prom *p = custode_prom_new();
	struct custode_stream_stats ss;
	struct custode_control_stats cs;
	struct custode_stats es = {0};
	struct custode_event_stats xs = {0};
	struct custode_dns_counters dns = V.dns_retired;
	struct bundle_ctx bc = {p};
	size_t clients, followers;
	int ncpu = libbpf_num_possible_cpus();
	char *text;

	if (!p)
		return NULL;
	custode_prom_family(p, "custode_daemon_start_time_seconds", "gauge", "When this daemon started (unix seconds).");
	custode_prom_add(p, "custode_daemon_start_time_seconds", (double)V.o.started, NULL);
	custode_prom_family(p, "custode_runs_active", "gauge", "Registered runs, by kind (launched: custode run; attached: custode attach).");
	custode_prom_add(p, "custode_runs_active", 0, "kind", "launched", NULL);
	custode_prom_add(p, "custode_runs_active", 0, "kind", "attached", NULL);
	custode_prom_family(p, "custode_denials_total", "counter",
			    "Denials by policy and reason: the engine's exact per-run counters, plus those of runs that "
			    "ended while this daemon ran (as last read, every 2 s).");
	for (size_t i = 0; V.runs && i < TABLE_SLOTS; i++) {
		const struct runrec *r = &V.runs[i];

		if (!r->used)
			continue;
		custode_prom_add(p, "custode_runs_active", 1, "kind", r->attached ? "attached" : "launched", NULL);
		for (int k = 0; k < CUSTODE_REASON_KERNEL_MAX; k++)
			if (r->c.denials[k])
				custode_prom_add(p, "custode_denials_total", (double)r->c.denials[k], "policy", r->policy,
						 "reason", custode_reason_name(k) ? custode_reason_name(k) : "unknown", NULL);
	}
	for (size_t i = 0; i < V.n_ret; i++)
		for (int k = 0; k < CUSTODE_REASON_KERNEL_MAX; k++)
			if (V.ret[i].d[k])
				custode_prom_add(p, "custode_denials_total", (double)V.ret[i].d[k], "policy", V.ret[i].policy,
						 "reason", custode_reason_name(k) ? custode_reason_name(k) : "unknown", NULL);
	custode_prom_family(p, "custode_policy_bundle_version", "gauge", "Version of the accepted bundle of each policy.");
	custode_prom_family(p, "custode_policy_bundle_not_before_seconds", "gauge", "notBefore of that bundle (unix seconds).");
	custode_prom_family(p, "custode_policy_bundle_not_after_seconds", "gauge",
			    "notAfter of that bundle (unix seconds): alert well before it passes.");
	custode_metrics_each_bundle(bundle_metric, &bc);
	/* the resolver */
	for (size_t i = 0; V.dns && i < TABLE_SLOTS; i++) {
		if (!V.dns[i].used)
			continue;
		dns.queries += V.dns[i].c.queries;
		dns.answered += V.dns[i].c.answered;
		dns.pins += V.dns[i].c.pins;
		for (int k = 0; k < CUSTODE_DNS_REASONS; k++)
			dns.denials[k] += V.dns[i].c.denials[k];
	}
	custode_prom_family(p, "custode_resolver_up", "gauge", "1 when this daemon runs the resolver.");
	custode_prom_add(p, "custode_resolver_up", V.o.resolver ? 1 : 0, NULL);
	custode_prom_family(p, "custode_resolver_queries_total", "counter", "DNS queries of runs, attributed to their run.");
	custode_prom_add(p, "custode_resolver_queries_total", (double)dns.queries, NULL);
	custode_prom_family(p, "custode_resolver_answered_total", "counter", "Queries answered with at least one vetted address.");
	custode_prom_add(p, "custode_resolver_answered_total", (double)dns.answered, NULL);
	custode_prom_family(p, "custode_resolver_pins_total", "counter", "Pins written or renewed.");
	custode_prom_add(p, "custode_resolver_pins_total", (double)dns.pins, NULL);
	custode_prom_family(p, "custode_resolver_refusals_total", "counter", "Resolver refusals by reason.");
	for (int k = 0; k < CUSTODE_DNS_REASONS; k++) {
		const char *name = custode_reason_name(CUSTODE_REASON_DNS_NAME_DENIED + k);

		if (name)
			custode_prom_add(p, "custode_resolver_refusals_total", (double)dns.denials[k], "reason", name, NULL);
	}
	/* the engine's records */
	percpu_sum(V.stats_fd, sizeof(es), &es);
	percpu_sum(V.estats_fd, sizeof(xs), &xs);
	custode_prom_family(p, "custode_events_total", "counter", "Records the engine wrote to its ring buffer (since it loaded).");
	custode_prom_add(p, "custode_events_total", (double)es.events, NULL);
	custode_prom_family(p, "custode_events_dropped_total", "counter",
			    "Records lost because the ring buffer was full, per CPU (since the engine loaded).");
	if (V.stats_fd >= 0 && ncpu > 0) {
		struct custode_stats *per = calloc((size_t)ncpu, sizeof(*per));
		__u32 zero = 0;

		if (per && bpf_map_lookup_elem(V.stats_fd, &zero, per) == 0)
			for (int c = 0; c < ncpu; c++) {
				char cpu[16];

				snprintf(cpu, sizeof(cpu), "%d", c);
				custode_prom_add(p, "custode_events_dropped_total", (double)per[c].events_dropped, "cpu", cpu, NULL);
			}
		free(per);
	}
	custode_prom_family(p, "custode_events_suppressed_total", "counter",
			    "Denials counted but not recorded: in-kernel throttling per run and reason.");
	custode_prom_add(p, "custode_events_suppressed_total", (double)xs.suppressed, NULL);
	custode_prom_family(p, "custode_events_throttle_records_total", "counter", "Throttle records the engine wrote.");
	custode_prom_add(p, "custode_events_throttle_records_total", (double)xs.throttle_records, NULL);
	/* the stream */
	custode_stream_stats(&ss);
	custode_control_counts(&clients, &followers);
	custode_prom_family(p, "custode_stream_records_total", "counter", "Decision records this daemon published.");
	custode_prom_add(p, "custode_stream_records_total", (double)ss.records, NULL);
	custode_prom_family(p, "custode_stream_throttle_records_total", "counter", "Throttle records this daemon published (kernel and its own).");
	custode_prom_add(p, "custode_stream_throttle_records_total", (double)ss.throttle_records, NULL);
	custode_prom_family(p, "custode_stream_bad_records_total", "counter", "Records of an unknown version or size.");
	custode_prom_add(p, "custode_stream_bad_records_total", (double)ss.bad, NULL);
	custode_prom_family(p, "custode_stream_sink_dropped_total", "counter", "Lines a slow or absent sink lost (never blocking).");
	custode_prom_add(p, "custode_stream_sink_dropped_total", (double)ss.sink_dropped[0], "sink", "stdout", NULL);
	custode_prom_add(p, "custode_stream_sink_dropped_total", (double)ss.sink_dropped[1], "sink", "file", NULL);
	custode_prom_family(p, "custode_stream_resolver_records_total", "counter", "Resolver decisions (DNS denials, filtered answers) published in the stream.");
	custode_prom_add(p, "custode_stream_resolver_records_total", (double)ss.injected, NULL);
	custode_prom_family(p, "custode_stream_resolver_records_dropped_total", "counter", "Resolver decisions lost before the daemon's loop took them (its queue was full).");
	custode_prom_add(p, "custode_stream_resolver_records_dropped_total", (double)ss.inject_dropped, NULL);
	custode_prom_family(p, "custode_stream_file_reopens_total", "counter", "Times the events file was renamed or removed under the daemon (logrotate) and opened again.");
	custode_prom_add(p, "custode_stream_file_reopens_total", (double)ss.file_reopens, NULL);
	custode_control_stats(&cs);
	custode_prom_family(p, "custode_control_overflow_disconnects_total", "counter", "Control clients disconnected: their unread answers passed the hard cap.");
	custode_prom_add(p, "custode_control_overflow_disconnects_total", (double)cs.overflow_disconnects, NULL);
	custode_prom_family(p, "custode_stream_follower_lost_total", "counter", "Records skipped for followers too slow to take them (each told {\"lost\": N}).");
	custode_prom_add(p, "custode_stream_follower_lost_total", (double)cs.follower_lost, NULL);
	custode_prom_family(p, "custode_stream_followers", "gauge", "Clients following the stream (custode events --follow).");
	custode_prom_add(p, "custode_stream_followers", (double)followers, NULL);
	custode_prom_family(p, "custode_runs_reaped_total", "counter", "Runs this daemon reaped because their cgroup was gone.");
	custode_prom_add(p, "custode_runs_reaped_total", (double)V.reaped, NULL);
	/* map fill levels */
	custode_prom_family(p, "custode_map_entries", "gauge", "Entries in each hash or trie map of the engine (counted every 30 s and at attach/detach).");
	custode_prom_family(p, "custode_map_capacity", "gauge", "max_entries of each map of the engine.");
	for (size_t i = 0; i < V.n_maps; i++) {
		if (V.maps[i].entries >= 0)
			custode_prom_add(p, "custode_map_entries", (double)V.maps[i].entries, "map", V.maps[i].name, NULL);
		if (V.maps[i].max_entries)
			custode_prom_add(p, "custode_map_capacity", (double)V.maps[i].max_entries, "map", V.maps[i].name, NULL);
	}
	text = custode_prom_render(p);
	custode_prom_free(p);
	return text;
}

static int textfile_timer(void *arg)
{
	char *text = custode_service_metrics();

	(void)arg;
	if (text && custode_write_file_atomic(V.o.metrics_file, text, strlen(text), 0644) < 0)
		fprintf(stderr, "custode daemon: metrics: writing %s: %s\n", V.o.metrics_file, strerror(errno));
	free(text);
	return 0;
}

/* ---- the HTTP endpoint: GET /metrics, one request per connection ---- */

static void http_close(struct http *h)
{
	custode_loop_del(h->fd);
	close(h->fd);
	free(h->out);
	memset(h, 0, sizeof(*h));
}

static int http_event(void *arg, uint32_t revents)
{
	struct http *h = arg;

	if (!h->out && (revents & EPOLLIN)) {
		ssize_t n = recv(h->fd, h->in + h->inlen, sizeof(h->in) - 1 - h->inlen, MSG_DONTWAIT);
		char *body = NULL;
		bool ok;

		if (n <= 0 && !(n < 0 && errno == EAGAIN)) {
			http_close(h);
			return 0;
		}
		if (n > 0)
			h->inlen += (size_t)n;
		h->in[h->inlen] = 0;
		if (!strstr(h->in, "\r\n\r\n") && !strstr(h->in, "\n\n") && h->inlen < sizeof(h->in) - 1)
			return 0;
		ok = !strncmp(h->in, "GET /metrics ", 13) || !strncmp(h->in, "GET / ", 6);
		if (ok)
			body = custode_service_metrics();
		{
			size_t bl = body ? strlen(body) : 0;
			size_t cap = bl + 256;

			h->out = malloc(cap);
			if (!h->out) {
				free(body);
				http_close(h);
				return 0;
			}
			h->outlen = (size_t)snprintf(h->out, cap,
						     "HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: "
						     "close\r\n\r\n",
						     ok ? "200 OK" : "404 Not Found",
						     ok ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain", ok ? bl : 10);
			if (ok) {
				memcpy(h->out + h->outlen, body, bl);
				h->outlen += bl;
			} else {
				memcpy(h->out + h->outlen, "not found\n", 10);
				h->outlen += 10;
			}
		}
		free(body);
		custode_loop_mod(h->fd, EPOLLOUT);
	}
	if (h->out && (revents & (EPOLLOUT | EPOLLIN))) {
		while (h->off < h->outlen) {
			ssize_t w = send(h->fd, h->out + h->off, h->outlen - h->off, MSG_DONTWAIT | MSG_NOSIGNAL);

			if (w < 0 && errno == EAGAIN)
				return 0;
			if (w <= 0)
				break;
			h->off += (size_t)w;
		}
		http_close(h);
		return 0;
	}
	if (revents & (EPOLLERR | EPOLLHUP))
		http_close(h);
	return 0;
}

static int http_accept(void *arg, uint32_t revents)
{
	(void)arg;
	(void)revents;
	for (;;) {
		int fd = accept4(V.http_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct http *h = NULL;

		if (fd < 0)
			return 0;
		for (int i = 0; i < MAX_HTTP && !h; i++)
			if (!V.http[i].used)
				h = &V.http[i];
		if (!h || custode_loop_add(fd, EPOLLIN, http_event, h) < 0) {
			close(fd);
			continue;
		}
		h->used = true;
		h->fd = fd;
		h->started = custode_loop_now_ms();
	}
}

static int http_timer(void *arg)
{
	uint64_t now = custode_loop_now_ms();

	(void)arg;
	for (int i = 0; i < MAX_HTTP; i++)
		if (V.http[i].used && now - V.http[i].started > HTTP_TIMEOUT_MS)
			http_close(&V.http[i]);
	return 0;
}

/* "127.0.0.1:9464", "[::1]:9464": any port, the port required (no DNS default, no DNS port rules) */
static int http_listen(const char *spec, struct custode_refusal *why)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int one = 1, fd, err;

	if (custode_sockaddr_parse(spec, 0, &ss, &len) < 0)
		return custode_refuse(why, EINVAL, CUSTODE_REASON_RUN_USAGE,
				      "--metrics-listen %s: the metrics listener needs ADDR:PORT, a numeric IPv4 or "
				      "[IPv6] address and a port 1-65535 (e.g. 127.0.0.1:9464)", spec);
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "metrics socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 16) < 0) {
		err = errno;
		close(fd);
		return custode_refuse(why, err, CUSTODE_REASON_RUN_SETUP_FAILED, "--metrics-listen %s: %s", spec,
				      strerror(err));
	}
	V.http_fd = fd;
	if ((err = custode_loop_add(fd, EPOLLIN, http_accept, NULL)) || (err = custode_loop_timer(1000, http_timer, NULL)) < 0)
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "event loop: %s", strerror(-err));
	return 0;
}

/*
 * Control peers inside a run are refused: root in an attached unit or pod
 * must not detach its own run. The peer's cgroup (from /proc/PID/cgroup) and
 * each ancestor are looked up among the registered runs; anything below
 * custode's own root is a launched run (or an unregistered cgroup).
 */
static int peer_check(int pid, struct custode_refusal *why)
{
	char cg[PATH_MAX];
	struct custode_run run;
	size_t root_len = strlen(V.e->cg_root);
	__u64 id;
	int err;

	if ((err = custode_cgroup_of_pid(V.e->cg_mount, pid, cg, sizeof(cg))) < 0)
		return custode_refuse(why, -err, CUSTODE_REASON_DAEMON_PEER, "peer pid %d: its cgroup is unknown (%s)", pid,
				      strerror(-err));
	if (!strncmp(cg, V.e->cg_root, root_len) && (cg[root_len] == '/' || !cg[root_len]))
		return custode_refuse(why, EPERM, CUSTODE_REASON_DAEMON_PEER,
				      "peer pid %d is below custode's cgroup root (%s): runs may not drive the daemon", pid, cg);
	for (;;) {
		char *slash;

		if (custode_cgroup_id(cg, &id) == 0 && custode_engine_get_run(V.e, id, &run) == 0) {
			char hex[17];

			custode_run_id_format(run.run_id, hex);
			return custode_refuse(why, EPERM, CUSTODE_REASON_DAEMON_PEER,
					      "peer pid %d is inside run %s (%s): runs may not drive the daemon", pid, hex, cg);
		}
		if (strlen(cg) <= strlen(V.e->cg_mount))
			break;
		slash = strrchr(cg, '/');
		if (!slash)
			break;
		*slash = 0;
	}
	return 0;
}

int custode_service_start(struct custode_engine *e, const struct custode_service_opts *o, struct custode_refusal *why)
{
	int err;

	V.e = e;
	V.o = *o;
	if (!V.o.metrics_interval)
		V.o.metrics_interval = 15;
	custode_control_set_peer_check(peer_check);
	V.stats_fd = custode_map_open(CUSTODE_MAP_STATS);
	V.estats_fd = custode_map_open(CUSTODE_MAP_EVENT_STATS);
	V.dnsc_fd = custode_map_open(CUSTODE_MAP_DNS_COUNTERS);
	snapshot();
	maps_refresh();
	if ((err = custode_loop_timer(SNAPSHOT_MS, snapshot_timer, NULL)) < 0)
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "event loop: %s", strerror(-err));
	if (o->metrics_listen && (err = http_listen(o->metrics_listen, why)))
		return err;
	if (o->metrics_file) {
		textfile_timer(NULL);
		if ((err = custode_loop_timer(V.o.metrics_interval * 1000, textfile_timer, NULL)) < 0)
			return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "event loop: %s", strerror(-err));
	}
	return 0;
}

void custode_service_stop(void)
{
	for (int i = 0; i < MAX_HTTP; i++)
		if (V.http[i].used)
			http_close(&V.http[i]);
	if (V.http_fd >= 0) {
		custode_loop_del(V.http_fd);
		close(V.http_fd);
	}
	if (V.o.metrics_file)
		textfile_timer(NULL);
	{
		int fds[] = {V.stats_fd, V.estats_fd, V.dnsc_fd};
		for (size_t i = 0; i < 3; i++)
			if (fds[i] >= 0)
				close(fds[i]);
	}
	free(V.runs);
	free(V.dns);
	free(V.ret);
	memset(&V, 0, sizeof(V));
	V.http_fd = V.stats_fd = V.estats_fd = V.dnsc_fd = -1;
}

/* ---- control commands ---- */

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static json_t *cmd_attach(const json_t *req, struct custode_refusal *why)
{
	struct custode_attach_req a = {0};
	const char *rid = jstr(req, "run_id");
	json_t *run = NULL, *pol;
	int err;

	a.cgroup = jstr(req, "cgroup");
	a.profile = jstr(req, "profile");
	a.policy = jstr(req, "policy");
	a.bundle = jstr(req, "bundle");
	a.workspace = jstr(req, "workspace");
	if (rid) {
		if (custode_run_id_parse(rid, &a.run_id) < 0) {
			custode_refuse(why, EINVAL, CUSTODE_REASON_RUN_USAGE, "run_id '%s' is not 16 hex digits", rid);
			return NULL;
		}
		a.has_run_id = true;
	}
	if (!a.cgroup) {
		custode_refuse(why, EINVAL, CUSTODE_REASON_RUN_USAGE, "attach needs \"cgroup\"");
		return NULL;
	}
	err = custode_attach(V.e, &a, &V.o.src, &run, why);
	if (err) {
		fprintf(stderr, "custode daemon: attach %s refused: %s: %s\n", a.cgroup, custode_reason_name(why->reason),
			why->detail);
		return NULL;
	}
	pol = json_object_get(run, "policy");
	report(NULL, "attached", NULL, run);
	if (json_object_get(pol, "not_after"))
		custode_metrics_set_bundle(jstr(pol, "name"), (uint64_t)json_integer_value(json_object_get(pol, "version")),
					   json_integer_value(json_object_get(pol, "not_before")),
					   json_integer_value(json_object_get(pol, "not_after")));
	snapshot();
	maps_refresh();
	return json_pack("{s:o}", "run", run);
}

static json_t *cmd_detach(const json_t *req, struct custode_refusal *why)
{
	const char *rid = jstr(req, "run_id"), *cg = jstr(req, "cgroup");
	json_t *run = NULL;
	__u64 id = 0;

	if (!!rid == !!cg) {
		custode_refuse(why, EINVAL, CUSTODE_REASON_RUN_USAGE, "detach needs \"run_id\" or \"cgroup\"");
		return NULL;
	}
	if (rid && custode_run_id_parse(rid, &id) < 0) {
		custode_refuse(why, EINVAL, CUSTODE_REASON_RUN_USAGE, "run_id '%s' is not 16 hex digits", rid);
		return NULL;
	}
	snapshot(); /* its last counts are in the totals */
	if (custode_detach(V.e, id, cg, &run, why)) {
		fprintf(stderr, "custode daemon: detach %s refused: %s: %s\n", rid ? rid : cg, custode_reason_name(why->reason),
			why->detail);
		return NULL;
	}
	report(NULL, "detached", NULL, run);
	snapshot();
	maps_refresh();
	return json_pack("{s:o}", "run", run);
}

static json_t *cmd_status(void)
{
	struct custode_stream_stats ss;
	struct custode_control_stats cs;
	json_t *st;
	struct custode_stats es = {0};
	struct custode_event_stats xs = {0};
	size_t clients, followers;
	json_t *gates = json_array();
	int fd = custode_map_open(CUSTODE_MAP_GATES);

	if (fd >= 0) {
		struct custode_gates g;
		__u32 zero = 0;

		if (bpf_map_lookup_elem(fd, &zero, &g) == 0)
			for (int k = 0; k < CUSTODE_MAX_GATES; k++)
				if (g.gate[k].id)
					json_array_append_new(gates, json_pack("{s:I, s:I}", "cgroup_id", (json_int_t)g.gate[k].id,
									       "levels", (json_int_t)g.gate[k].levels));
		close(fd);
	}
	custode_stream_stats(&ss);
	custode_control_counts(&clients, &followers);
	percpu_sum(V.stats_fd, sizeof(es), &es);
	percpu_sum(V.estats_fd, sizeof(xs), &xs);
	st = json_pack("{s:{s:i, s:s, s:I, s:b}, s:{s:I, s:I, s:I, s:I, s:o}, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
			 "s:I, s:I}, s:{s:I, s:I}}",
			 "daemon", "pid", (int)getpid(), "version", CUSTODE_VERSION, "started", (json_int_t)V.o.started,
			 "resolver", V.o.resolver, "engine", "classes", (json_int_t)V.e->meta.classes, "events",
			 (json_int_t)es.events, "events_dropped", (json_int_t)es.events_dropped, "suppressed",
			 (json_int_t)xs.suppressed, "gates", gates, "stream", "records", (json_int_t)ss.records,
			 "throttle_records", (json_int_t)ss.throttle_records, "throttled", (json_int_t)ss.throttled,
			 "dropped", (json_int_t)ss.dropped, "bad", (json_int_t)ss.bad, "stdout_dropped",
			 (json_int_t)ss.sink_dropped[0], "file_dropped", (json_int_t)ss.sink_dropped[1], "file_rotations",
			 (json_int_t)ss.file_rotations, "history", (json_int_t)ss.history, "control", "clients",
			 (json_int_t)clients, "followers", (json_int_t)followers);
	if (st) {
		json_t *sj = json_object_get(st, "stream"), *cj = json_object_get(st, "control");

		custode_control_stats(&cs);
		json_object_set_new(sj, "file_reopens", json_integer((json_int_t)ss.file_reopens));
		json_object_set_new(sj, "resolver_records", json_integer((json_int_t)ss.injected));
		json_object_set_new(sj, "resolver_records_dropped", json_integer((json_int_t)ss.inject_dropped));
		json_object_set_new(cj, "overflow_disconnects", json_integer((json_int_t)cs.overflow_disconnects));
		json_object_set_new(cj, "follower_lost", json_integer((json_int_t)cs.follower_lost));
	}
	return st;
}

json_t *custode_service_handle(void *ctx, const char *cmd, const json_t *req, struct custode_refusal *why)
{
	(void)ctx;
	if (!strcmp(cmd, "attach"))
		return cmd_attach(req, why);
	if (!strcmp(cmd, "detach"))
		return cmd_detach(req, why);
	if (!strcmp(cmd, "runs"))
		return json_pack("{s:o}", "runs", custode_runs_list(V.e, &V.o.src, !json_is_false(json_object_get(req, "verify"))));
	if (!strcmp(cmd, "status"))
		return cmd_status();
	if (!strcmp(cmd, "metrics")) {
		char *text = custode_service_metrics();
		json_t *o = text ? json_pack("{s:s}", "text", text) : NULL;

		free(text);
		if (!o)
			custode_refuse(why, ENOMEM, CUSTODE_REASON_RUN_SETUP_FAILED, "out of memory");
		return o;
	}
	custode_refuse(why, EINVAL, CUSTODE_REASON_DAEMON_PROTOCOL,
		       "unknown command '%s' (ping, status, runs, attach, detach, events, metrics)", cmd);
	return NULL;
}
