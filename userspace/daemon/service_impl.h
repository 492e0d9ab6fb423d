/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon service's parts, private to the files it is split into
 * (service.c adoption, the control peer check, start and stop; snapshot.c
 * the snapshots of live and ended runs' counts; metrics_text.c the metrics
 * text and textfile; metrics_http.c the HTTP endpoint; commands.c the
 * control commands). The service is a handle (struct custode_service,
 * below), passed to every function of these files, and the ctx of its loop
 * callbacks, control handler and peer check; it holds the loop and the
 * control server (handles too).
 */
#ifndef CUSTODE_DAEMON_SERVICE_IMPL_H
#define CUSTODE_DAEMON_SERVICE_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "custode/abi.h"
#include "custode/resolver.h"
#include "daemon/control.h"
#include "daemon/service.h"
#include "util/table.h"

#define SNAPSHOT_MS 2000
#define REAP_MS 2000 /* orphaned runs (custode_run_reap_orphans) */
#define MAPS_REFRESH_S 30
/* the snapshots' tables (snapshot.c): bounded at 3/4 of their slots, more than custode_runs and _dns_counters hold */
#define RUNS_SLOTS (2 * CUSTODE_MAX_RUNS)
#define DNS_SLOTS (4 * CUSTODE_MAX_RUNS)
_Static_assert(RUNS_SLOTS / 4 * 3 > CUSTODE_MAX_RUNS && DNS_SLOTS / 4 * 3 > 2 * CUSTODE_MAX_RUNS, "room for every run");
#define MAX_HTTP 16
#define HTTP_TIMEOUT_MS 5000


/* A live run as the last snapshot saw it (by cgroup id); its final counts go to the ended totals (state/ended.h). */
struct runrec {
	__u64 run_id;
	bool attached;
	char policy[128];
	struct custode_counters c;
};

/* custode_denials_total of one policy: ended runs' totals plus live runs' counts, never less than shown before */
struct policy_denials {
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
	struct custode_service *v; /* whose metrics it serves */
	int fd;
	char in[8192];
	size_t inlen;
	char *out;
	size_t outlen, off;
	uint64_t started;
};

struct custode_service {
	struct custode_engine *e;
	struct custode_loop *loop; /* its timers and the metrics endpoint */
	struct custode_control_server *control; /* answering for it (custode_service_set_control), or NULL */
	struct custode_control_stats control_kept; /* the last server's counters once it is gone */
	struct custode_stream *stream; /* run ids and policy names for its records; its counts in the metrics */
	struct custode_service_opts o;
	struct custode_table runs; /* cgroup id -> struct runrec, as the last snapshot saw them */
	struct custode_table dns;  /* cgroup id -> struct custode_dns_counters, as the last snapshot saw them */
	struct policy_denials *den; /* the denial counters as shown (service_totals) */
	size_t n_den;
	struct custode_dns_counters dns_total; /* the resolver's counters as shown */
	struct mapinfo maps[64];
	size_t n_maps;
	time_t maps_at;
	int http_fd, stats_fd, estats_fd, dnsc_fd;
	struct http http[MAX_HTTP];
	uint64_t reaped;
	uint64_t orphans_reaped; /* launched runs reaped by the gc pass (service_gc_report) */
	bool started; /* custode_service_start finished: /readyz */
};

/* service.c: one line on stderr per adopted or reaped run (ctx: the service) */
void service_report(void *ctx, const char *action, const char *detail, const json_t *run);
/* service.c: the control server's clients, followers and counters (none yet: 0; gone: its last counters) */
void service_control_counts(struct custode_service *v, size_t *clients, size_t *followers,
			    struct custode_control_stats *st);
/*
 * commands.c: DNS for an attached run (cgroup cg, id cgid) in its network
 * namespace: the attach answer's "dns" ({"served": bool, "reason", "detail"}),
 * NULL when the run's policy has no network section.
 */
json_t *service_dns_serve(struct custode_service *v, const char *cg, __u64 cgid);
/* snapshot.c */
void service_snapshot(struct custode_service *v);
/*
 * The counters shown: the totals of ended runs (state/ended.h, loaded before
 * the live runs were read) plus the live runs' and the resolver's counts in
 * v->runs and v->dns, each never below what was shown before (a run between
 * its unregistration and its addition to the totals is in neither).
 */
void service_totals(struct custode_service *v, const json_t *ended);
void service_maps_refresh(struct custode_service *v);
int service_snapshot_timer(void *arg); /* arg: the service */
/* metrics_text.c */
void service_percpu_sum(int fd, size_t size, void *out);
int service_textfile_timer(void *arg); /* arg: the service */
/* metrics_http.c */
void service_http_close(struct http *h);
int service_http_listen(struct custode_service *v, const char *spec, struct custode_refusal *why);
/*
 * The whole answer (status, headers, body; malloc'd, *len its length) to a
 * request's head: GET or HEAD of /metrics (or /), /healthz (200 while the
 * loop answers), /readyz (200 once started with a control server, else 503
 * and why); 404 other paths, 405 other methods, 400 what is not a request.
 * NULL: out of memory.
 */
char *service_http_respond(struct custode_service *v, const char *in, size_t *len);

#endif
