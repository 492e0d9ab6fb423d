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
#include "engine/engine.h"
#include "util/reasons.h"

struct custode_service_opts {
	const char *metrics_listen; /* "ADDR:PORT" (loopback recommended), or NULL */
	const char *metrics_file;   /* a textfile for node_exporter, rewritten atomically, or NULL */
	unsigned metrics_interval;  /* seconds between textfile writes (default 15) */
	struct custode_policy_source src;
	bool resolver;              /* the resolver runs in this daemon */
	int64_t started;            /* unix seconds */
};

/* Adopt what the pinned registry and the state directory hold; report each run on stderr. */
int custode_service_adopt(struct custode_engine *e, const struct custode_policy_source *src);
/* Register the timers and the metrics endpoint in the daemon's loop. */
int custode_service_start(struct custode_engine *e, const struct custode_service_opts *o, struct custode_refusal *why);
void custode_service_stop(void);
/* The control socket's handler for every command but "ping" and "events". */
json_t *custode_service_handle(void *ctx, const char *cmd, const json_t *req, struct custode_refusal *why);
/* The metrics text (Prometheus); caller frees. */
char *custode_service_metrics(void);

#endif
