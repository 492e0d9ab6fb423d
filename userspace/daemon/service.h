/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the daemon serves besides the stream: the control commands (status,
 * runs, attach, detach, metrics), restart adoption and the reaping of
 * vanished runs, and metrics (a local HTTP endpoint and/or a textfile).
 */
#ifndef CUSTODE_DAEMON_SERVICE_H
#define CUSTODE_DAEMON_SERVICE_H

#include <stdbool.h>
#include <jansson.h>

#include "attach/attach.h"
#include "daemon/stream.h"
#include "engine/engine.h"
#include "util/reasons.h"

/* The service: a handle, from custode_service_new, passed to every function below. */
struct custode_service;
struct custode_control_server;
struct custode_loop;

struct custode_service_opts {
	const char *metrics_listen; /* "ADDR:PORT" (loopback recommended), or NULL */
	const char *metrics_file;   /* a textfile for node_exporter, rewritten atomically, or NULL */
	unsigned metrics_interval;  /* seconds between textfile writes (default 15) */
	struct custode_policy_source src;
	bool resolver;              /* the resolver runs in this daemon */
	int64_t started;            /* unix seconds */
	const char *ended_file;     /* the totals of ended runs (state/ended.h); NULL: CUSTODE_ENDED_FILE */
	/* the resolver's listening in a process's network namespace (custode_service_set_resolver) */
	int (*dns_serve)(void *ctx, int pid, __u64 run_cgid, struct custode_refusal *why);
	void *dns_ctx;
};

/*
 * The service of engine e, telling stream (run ids, policy names) and
 * reading its counts, its timers and endpoint in loop (loop, e and stream
 * outlive it); the options are copied (src's trust is borrowed). Nothing is
 * opened yet. 0 and *out, or -ENOMEM.
 */
int custode_service_new(struct custode_loop *loop, struct custode_engine *e, struct custode_stream *stream,
			const struct custode_service_opts *o, struct custode_service **out);
/* Adopt what the pinned registry and the state directory hold; report each run on stderr. */
int custode_service_adopt(struct custode_service *v);
/*
 * Register the timers and the metrics endpoint in the daemon's loop. On
 * failure, what it registered stays until the loop ends: the caller frees
 * the service without stopping it.
 */
int custode_service_start(struct custode_service *v, struct custode_refusal *why);
/*
 * The control server that answers for the service (custode_service_handle
 * its handler): the service's peer check is set on it, and its clients and
 * counters go into status and the metrics (none yet: 0). NULL before that
 * server shuts down: its counters are kept for the metrics written after.
 */
void custode_service_set_control(struct custode_service *v, struct custode_control_server *srv);
/* Undo a started service: the metrics endpoint closed, the textfile written a last time. */
void custode_service_stop(struct custode_service *v);
/* Close the service's map fds and free it (after custode_service_stop if it started). NULL: nothing. */
void custode_service_free(struct custode_service *v);
/*
 * The resolver started: attached runs get DNS in their own network namespace
 * through serve(ctx, ...) (custode_resolver_serve_netns) — asked for at
 * attach, and now for every adopted attached run (a restart re-serves them).
 */
void custode_service_set_resolver(struct custode_service *v,
				  int (*serve)(void *ctx, int pid, __u64 run_cgid, struct custode_refusal *why), void *ctx);
/* The control socket's handler for every command but "ping" and "events" (ctx: the service). */
json_t *custode_service_handle(void *ctx, const char *cmd, const json_t *req, int peer_pid, struct custode_refusal *why);
/* The metrics text (Prometheus); caller frees. */
char *custode_service_metrics(struct custode_service *v);

#endif
