// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "daemon/service_impl.h"
#include "daemon/control.h"
#include "daemon/stream.h"
#include "engine/admit.h"
#include "engine/hostaddrs.h"
#include "engine/maps.h"
#include "metrics/metrics.h"
#include "util/time.h"

/* ---- control commands ---- */

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

json_t *service_dns_serve(struct custode_service *v, const char *cg, __u64 cgid)
{
	struct custode_refusal why = {0};
	struct custode_run info;
	int fd = custode_map_open(CUSTODE_MAP_RUNS), pid, err;

	err = fd >= 0 ? bpf_map_lookup_elem(fd, &cgid, &info) : -1;
	if (fd >= 0)
		close(fd);
	if (err < 0 || !(info.flags & CUSTODE_RUN_NET))
		return NULL;
	if (!v->o.dns_serve)
		return json_pack("{s:b, s:s, s:s}", "served", 0, "reason", custode_reason_name(CUSTODE_REASON_DNS_NO_RESOLVER),
				 "detail", v->o.resolver ? "the resolver is starting" : "this daemon runs without the resolver (--no-resolver)");
	pid = custode_hostaddrs_cgroup_pid(cg);
	if (pid <= 0)
		return json_pack("{s:b, s:s, s:s}", "served", 0, "reason",
				 custode_reason_name(CUSTODE_REASON_DNS_NETNS_UNSERVED), "detail",
				 "no process in the cgroup yet: its namespace is served at the run's first DNS query "
				 "(which is denied)");
	if ((err = v->o.dns_serve(v->o.dns_ctx, pid, cgid, &why)) < 0) {
		fprintf(stderr, "custode daemon: resolver: run cgroup %s: %s: %s\n", cg, custode_reason_name(why.reason),
			why.detail);
		return json_pack("{s:b, s:s, s:s}", "served", 0, "reason", custode_reason_name(why.reason), "detail",
				 why.detail);
	}
	return json_pack("{s:b}", "served", 1);
}

static json_t *cmd_attach(struct custode_service *v, const json_t *req, struct custode_refusal *why)
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
	/*
	 * A restarted systemd unit gets a new cgroup at the same path, and its
	 * ExecStartPre=+custode attach --unit %n may come before the periodic
	 * reap noticed the old one is gone: reap first, or the attach would
	 * be refused as attach.exists by a run whose cgroup no longer exists.
	 */
	custode_attach_reap_vanished(v->e, service_report, v);
	err = custode_attach(v->e, &a, &v->o.src, &run, why);
	if (err) {
		fprintf(stderr, "custode daemon: attach %s refused: %s: %s\n", a.cgroup, custode_reason_name(why->reason),
			why->detail);
		return NULL;
	}
	{
		json_t *dns = service_dns_serve(v, a.cgroup, (__u64)json_integer_value(json_object_get(run, "cgroup_id")));

		if (dns)
			json_object_set_new(run, "dns", dns);
	}
	pol = json_object_get(run, "policy");
	service_report(v, "attached", NULL, run);
	if (json_object_get(pol, "not_after"))
		custode_metrics_set_bundle(jstr(pol, "name"), (uint64_t)json_integer_value(json_object_get(pol, "version")),
					   json_integer_value(json_object_get(pol, "not_before")),
					   json_integer_value(json_object_get(pol, "not_after")));
	service_snapshot(v);
	service_maps_refresh(v);
	return json_pack("{s:o}", "run", run);
}

static json_t *cmd_detach(struct custode_service *v, const json_t *req, struct custode_refusal *why)
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
	service_snapshot(v); /* its last counts are in the totals */
	if (custode_detach(v->e, id, cg, &run, why)) {
		fprintf(stderr, "custode daemon: detach %s refused: %s: %s\n", rid ? rid : cg, custode_reason_name(why->reason),
			why->detail);
		return NULL;
	}
	service_report(v, "detached", NULL, run);
	service_snapshot(v);
	service_maps_refresh(v);
	return json_pack("{s:o}", "run", run);
}

/*
 * "admit": the peer asks that its own executable may open the engine (an
 * upgrade: docs/process.md). The peer is root and outside every run (the
 * server's checks); its executable is opened through /proc/PID/exe — the
 * file the kernel runs for it, whatever path it was started by — and must be
 * a custode binary of the engine's ABI, root's alone (engine/admit.h). The
 * peer waits for this answer, so its pid is not reused meanwhile.
 */
static json_t *cmd_admit(struct custode_service *v, int peer_pid, struct custode_refusal *why)
{
	char path[64], exe[PATH_MAX];
	json_t *out = NULL;
	ssize_t n;
	int fd, err;

	snprintf(path, sizeof(path), "/proc/%d/exe", peer_pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		custode_refuse(why, errno, CUSTODE_REASON_ENGINE_ADMIT_REFUSED, "peer pid %d: its executable: %s",
			       peer_pid, strerror(errno));
		return NULL;
	}
	err = custode_engine_admit_fd(fd, peer_pid, v->e->meta.abi_version, peer_pid, &out, why);
	close(fd);
	if (err < 0) {
		fprintf(stderr, "custode daemon: admit of %s (pid %d) refused: %s: %s\n", exe, peer_pid,
			custode_reason_name(why->reason), why->detail);
		return NULL;
	}
	json_object_set_new(out, "path", json_string(exe));
	if (!err)
		fprintf(stderr, "custode daemon: admitted %s (pid %d, dev %lld, ino %lld) to the engine\n", exe, peer_pid,
			(long long)json_integer_value(json_object_get(out, "dev")),
			(long long)json_integer_value(json_object_get(out, "ino")));
	return json_pack("{s:o}", "admitted", out);
}

static json_t *cmd_status(struct custode_service *v)
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
	custode_stream_stats(v->stream, &ss);
	service_control_counts(v, &clients, &followers, &cs);
	service_percpu_sum(v->stats_fd, sizeof(es), &es);
	service_percpu_sum(v->estats_fd, sizeof(xs), &xs);
	st = json_pack("{s:{s:i, s:s, s:I, s:b}, s:{s:I, s:I, s:I, s:I, s:o}, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
			 "s:I, s:I}, s:{s:I, s:I}}",
			 "daemon", "pid", (int)getpid(), "version", CUSTODE_VERSION, "started", (json_int_t)v->o.started,
			 "resolver", v->o.resolver, "engine", "classes", (json_int_t)v->e->meta.classes, "events",
			 (json_int_t)es.events, "events_dropped", (json_int_t)es.events_dropped, "suppressed",
			 (json_int_t)xs.suppressed, "gates", gates, "stream", "records", (json_int_t)ss.records,
			 "throttle_records", (json_int_t)ss.throttle_records, "throttled", (json_int_t)ss.throttled,
			 "dropped", (json_int_t)ss.dropped, "bad", (json_int_t)ss.bad, "stdout_dropped",
			 (json_int_t)ss.sink_dropped[0], "file_dropped", (json_int_t)ss.sink_dropped[1], "file_rotations",
			 (json_int_t)ss.file_rotations, "history", (json_int_t)ss.history, "control", "clients",
			 (json_int_t)clients, "followers", (json_int_t)followers);
	if (st) {
		json_t *sj = json_object_get(st, "stream"), *cj = json_object_get(st, "control");
		char when[CUSTODE_TIME_LEN];

		/* "started" stays Unix seconds, deprecated (docs/output.md) */
		json_object_set_new(json_object_get(st, "daemon"), "started_time",
				    json_string(custode_time_show_sec(v->o.started, when, sizeof(when))));

		json_object_set_new(sj, "file_reopens", json_integer((json_int_t)ss.file_reopens));
		json_object_set_new(sj, "resolver_records", json_integer((json_int_t)ss.injected));
		json_object_set_new(sj, "resolver_records_dropped", json_integer((json_int_t)ss.inject_dropped));
		json_object_set_new(cj, "overflow_disconnects", json_integer((json_int_t)cs.overflow_disconnects));
		json_object_set_new(cj, "follower_lost", json_integer((json_int_t)cs.follower_lost));
	}
	return st;
}

json_t *custode_service_handle(void *ctx, const char *cmd, const json_t *req, int peer_pid, struct custode_refusal *why)
{
	struct custode_service *v = ctx;

	if (!strcmp(cmd, "attach"))
		return cmd_attach(v, req, why);
	if (!strcmp(cmd, "detach"))
		return cmd_detach(v, req, why);
	if (!strcmp(cmd, "runs"))
		return json_pack("{s:o}", "runs", custode_runs_list(v->e, &v->o.src, !json_is_false(json_object_get(req, "verify"))));
	if (!strcmp(cmd, "status"))
		return cmd_status(v);
	if (!strcmp(cmd, "admit"))
		return cmd_admit(v, peer_pid, why);
	if (!strcmp(cmd, "metrics")) {
		char *text = custode_service_metrics(v);
		json_t *o = text ? json_pack("{s:s}", "text", text) : NULL;

		free(text);
		if (!o)
			custode_refuse(why, ENOMEM, CUSTODE_REASON_RUN_SETUP_FAILED, "out of memory");
		return o;
	}
	custode_refuse(why, EINVAL, CUSTODE_REASON_DAEMON_PROTOCOL,
		       "unknown command '%s' (ping, status, runs, attach, detach, admit, events, metrics)", cmd);
	return NULL;
}
