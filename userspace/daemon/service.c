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

struct service_state custode_service_V = {.http_fd = -1, .stats_fd = -1, .estats_fd = -1, .dnsc_fd = -1};

/* ---- reporting adoption and reaping ---- */

void service_report(void *ctx, const char *action, const char *detail, const json_t *run)
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
	int n = custode_attach_adopt(e, src, service_report, NULL);

	if (n >= 0)
		fprintf(stderr, "custode daemon: adopted %d registered run%s\n", n, n == 1 ? "" : "s");
	return n;
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
	service_snapshot();
	service_maps_refresh();
	if ((err = custode_loop_timer(SNAPSHOT_MS, service_snapshot_timer, NULL)) < 0)
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "event loop: %s", strerror(-err));
	if (o->metrics_listen && (err = service_http_listen(o->metrics_listen, why)))
		return err;
	if (o->metrics_file) {
		service_textfile_timer(NULL);
		if ((err = custode_loop_timer(V.o.metrics_interval * 1000, service_textfile_timer, NULL)) < 0)
			return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "event loop: %s", strerror(-err));
	}
	return 0;
}

void custode_service_stop(void)
{
	for (int i = 0; i < MAX_HTTP; i++)
		if (V.http[i].used)
			service_http_close(&V.http[i]);
	if (V.http_fd >= 0) {
		custode_loop_del(V.http_fd);
		close(V.http_fd);
	}
	if (V.o.metrics_file)
		service_textfile_timer(NULL);
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

