// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/service_impl.h"
#include "cgroup/cgroup.h"
#include "daemon/control.h"
#include "daemon/loop.h"
#include "daemon/stream.h"
#include "engine/maps.h"
#include "run/run.h"
#include "state/ended.h"

#define MAX_ATTACHED CUSTODE_MAX_RUNS

/* ---- reporting adoption and reaping ---- */

void service_report(void *ctx, const char *action, const char *detail, const json_t *run)
{
	const char *rid = json_string_value(json_object_get(run, "run_id"));
	const char *kind = json_string_value(json_object_get(run, "kind"));
	const char *cg = json_string_value(json_object_get(run, "cgroup"));
	const char *pol = json_string_value(json_object_get(json_object_get(run, "policy"), "name"));
	struct custode_service *v = ctx;
	__u64 id;

	if (!strcmp(action, "reaped"))
		v->reaped++;
	if (rid && pol && custode_run_id_parse(rid, &id) == 0)
		custode_stream_set_policy(v->stream, id, pol);
	/* an unverified policy is a refusal to trust it again: name its reason code */
	fprintf(stderr, "custode daemon: %s run %s (%s%s%s%s%s)%s%s%s\n", action, rid ? rid : "?", kind ? kind : "?",
		cg ? ", " : "", cg ? cg : "", pol ? ", policy " : "", pol ? pol : "", detail ? ": " : "",
		!strcmp(action, "unverified") ? "policy.unverified: " : "", detail ? detail : "");
}

/* What the daemon's orphan reaping did (the shared gc pass, custode_run_reap_orphans). */
static void service_gc_report(void *ctx, const char *hex, const char *what, int err)
{
	struct custode_service *v = ctx;

	/* "reaped orphaned run", "reaped run without state", "removed registration of a vanished cgroup" */
	if (!err && (!strncmp(what, "reaped ", 7) || !strncmp(what, "removed ", 8)))
		v->orphans_reaped++;
	if (err)
		fprintf(stderr, "custode daemon: gc: run %s: %s failed: %s\n", hex, what, strerror(-err));
	else
		fprintf(stderr, "custode daemon: gc: run %s: %s\n", hex, what);
}

/*
 * Runs whose launcher was killed keep their command running, confined, until
 * reaped: the daemon does what `custode gc` does, on a timer. A run that does
 * not empty within reap's wait stays confined and is tried again next time.
 */
static int service_reap_timer(void *arg)
{
	struct custode_service *v = arg;

	custode_run_reap_orphans(v->e, service_gc_report, v);
	return 0;
}

int custode_service_new(struct custode_loop *loop, struct custode_engine *e, struct custode_stream *stream,
			const struct custode_service_opts *o, struct custode_service **out)
{
	struct custode_service *v = calloc(1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	v->http_fd = v->stats_fd = v->estats_fd = v->dnsc_fd = -1;
	v->loop = loop;
	v->e = e;
	v->stream = stream;
	v->o = *o;
	if (!v->o.metrics_interval)
		v->o.metrics_interval = 15;
	if (!v->o.ended_file)
		v->o.ended_file = CUSTODE_ENDED_FILE;
	*out = v;
	return 0;
}

int custode_service_adopt(struct custode_service *v)
{
	int n = custode_attach_adopt(v->e, &v->o.src, service_report, v);

	if (n >= 0)
		fprintf(stderr, "custode daemon: adopted %d registered run%s\n", n, n == 1 ? "" : "s");
	return n;
}

void custode_service_set_resolver(struct custode_service *v,
				  int (*serve)(void *ctx, int pid, __u64 run_cgid, struct custode_refusal *why), void *ctx)
{
	struct custode_attached *a = calloc(MAX_ATTACHED, sizeof(*a));
	int n;

	v->o.dns_serve = serve;
	v->o.dns_ctx = ctx;
	if (!a)
		return;
	n = custode_attached_list(a, MAX_ATTACHED);
	for (int i = 0; i < n; i++) {
		json_t *dns = service_dns_serve(v, a[i].cgroup, a[i].cgroup_id);

		json_decref(dns); /* refusals are logged; a namespace with no process yet is served when it asks */
	}
	free(a);
}

/*
 * Control peers inside a run are refused: root in an attached unit or pod
 * must not detach its own run. The peer's cgroup (from /proc/PID/cgroup) and
 * each ancestor are looked up among the registered runs; anything below
 * custode's own root is a launched run (or an unregistered cgroup).
 */
static int peer_check(void *ctx, int pid, struct custode_refusal *why)
{
	struct custode_service *v = ctx;
	char cg[PATH_MAX];
	struct custode_run run;
	size_t root_len = strlen(v->e->cg_root);
	__u64 id;
	int err;

	if ((err = custode_cgroup_of_pid(v->e->cg_mount, pid, cg, sizeof(cg))) < 0)
		return custode_refuse(why, -err, CUSTODE_REASON_DAEMON_PEER, "peer pid %d: its cgroup is unknown (%s)", pid,
				      strerror(-err));
	if (!strncmp(cg, v->e->cg_root, root_len) && (cg[root_len] == '/' || !cg[root_len]))
		return custode_refuse(why, EPERM, CUSTODE_REASON_DAEMON_PEER,
				      "peer pid %d is below custode's cgroup root (%s): runs may not drive the daemon", pid, cg);
	for (;;) {
		char *slash;

		if (custode_cgroup_id(cg, &id) == 0 && custode_engine_get_run(v->e, id, &run) == 0) {
			char hex[17];

			custode_run_id_format(run.run_id, hex);
			return custode_refuse(why, EPERM, CUSTODE_REASON_DAEMON_PEER,
					      "peer pid %d is inside run %s (%s): runs may not drive the daemon", pid, hex, cg);
		}
		if (strlen(cg) <= strlen(v->e->cg_mount))
			break;
		slash = strrchr(cg, '/');
		if (!slash)
			break;
		*slash = 0;
	}
	return 0;
}

void custode_service_set_control(struct custode_service *v, struct custode_control_server *srv)
{
	if (v->control && !srv)
		custode_control_stats(v->control, &v->control_kept);
	v->control = srv;
	if (srv)
		custode_control_set_peer_check(srv, peer_check, v);
}

void service_control_counts(struct custode_service *v, size_t *clients, size_t *followers,
			    struct custode_control_stats *st)
{
	if (!v->control) {
		*clients = *followers = 0;
		*st = v->control_kept;
		return;
	}
	custode_control_counts(v->control, clients, followers);
	custode_control_stats(v->control, st);
}

int custode_service_start(struct custode_service *v, struct custode_refusal *why)
{
	int err;

	v->stats_fd = custode_map_open(CUSTODE_MAP_STATS);
	v->estats_fd = custode_map_open(CUSTODE_MAP_EVENT_STATS);
	v->dnsc_fd = custode_map_open(CUSTODE_MAP_DNS_COUNTERS);
	service_snapshot(v);
	service_maps_refresh(v);
	if ((err = custode_loop_timer(v->loop, SNAPSHOT_MS, service_snapshot_timer, v)) < 0)
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "event loop: %s", strerror(-err));
	service_reap_timer(v);
	if ((err = custode_loop_timer(v->loop, REAP_MS, service_reap_timer, v)) < 0)
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "event loop: %s", strerror(-err));
	if (v->o.metrics_listen && (err = service_http_listen(v, v->o.metrics_listen, why)))
		return err;
	if (v->o.metrics_file) {
		service_textfile_timer(v);
		if ((err = custode_loop_timer(v->loop, v->o.metrics_interval * 1000, service_textfile_timer, v)) < 0)
			return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "event loop: %s", strerror(-err));
	}
	v->started = true;
	return 0;
}

void custode_service_stop(struct custode_service *v)
{
	v->started = false; /* stopping: no longer ready */
	for (int i = 0; i < MAX_HTTP; i++)
		if (v->http[i].used)
			service_http_close(&v->http[i]);
	if (v->http_fd >= 0) {
		custode_loop_del(v->loop, v->http_fd);
		close(v->http_fd);
		v->http_fd = -1;
	}
	if (v->o.metrics_file)
		service_textfile_timer(v);
}

void custode_service_free(struct custode_service *v)
{
	if (!v)
		return;
	{
		/* http_fd: still open after a start that failed once it listened */
		int fds[] = {v->stats_fd, v->estats_fd, v->dnsc_fd, v->http_fd};

		for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
			if (fds[i] >= 0)
				close(fds[i]);
	}
	custode_table_free(&v->runs);
	custode_table_free(&v->dns);
	free(v->den);
	free(v);
}
