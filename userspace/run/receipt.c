// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>

#include "run/receipt.h"
#include "util/fsutil.h"
#include "util/reasons.h"

static json_t *rfc3339(int64_t ns)
{
	char buf[64];
	time_t s = (time_t)(ns / 1000000000);
	struct tm tm;

	gmtime_r(&s, &tm);
	snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min, tm.tm_sec, (int)((ns % 1000000000) / 1000000));
	return json_string(buf);
}

static json_t *strings(const char *const *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static json_t *argv_json(char *const *argv)
{
	json_t *a = json_array();

	for (; argv && *argv; argv++) {
		json_t *s = json_string(*argv);
		json_array_append_new(a, s ? s : json_string("(not UTF-8)"));
	}
	return a;
}

json_t *custode_receipt_json(const struct custode_receipt *r)
{
	static const char *const file_hooks[] = {"lsm/file_open"};
	static const char *const net_hooks[] = {"cgroup/connect4", "cgroup/connect6", "cgroup/sendmsg4",
						"cgroup/sendmsg6", "cgroup/sock_create", "cgroup/bind4", "cgroup/bind6"};
	const struct custode_policy *p = r->policy;
	json_t *o, *enforced = json_array(), *not_enforced = json_array(), *by_reason = json_object(), *pol, *ex;
	char hex[17];
	uint64_t total = 0;

	custode_run_id_format(r->st->run_id, hex);

	if (p->has_filesystem)
		json_array_append_new(enforced, json_pack("{s:s, s:s, s:o, s:i}", "class", "file", "mechanism", "bpf-lsm",
							  "hooks", strings(file_hooks, 1), "rules", (int)p->n_fs));
	else
		json_array_append_new(not_enforced,
				      json_pack("{s:s, s:s}", "class", "file", "reason", "not requested by the policy"));
	if (p->has_network) {
		json_array_append_new(enforced, json_pack("{s:s, s:s, s:o, s:I, s:I, s:b}", "class", "egress", "mechanism",
							  "cgroup-bpf", "hooks", strings(net_hooks, 7), "egress_keys",
							  (json_int_t)r->egress_keys, "private_grants",
							  (json_int_t)r->private_grants, "listen", p->listen));
		json_array_append_new(enforced, json_pack("{s:s, s:s, s:s}", "class", "sockets", "mechanism", "seccomp",
							  "detail",
							  "socket families unix, inet, inet6 and netlink route only; "
							  "io_uring_setup refused"));
	} else {
		json_array_append_new(not_enforced,
				      json_pack("{s:s, s:s}", "class", "egress", "reason", "not requested by the policy"));
	}
	json_array_append_new(not_enforced, json_pack("{s:s, s:s}", "class", "process", "reason",
						      p->has_process ? "not implemented" : "not requested by the policy"));
	json_array_append_new(not_enforced, json_pack("{s:s, s:s}", "class", "limits", "reason",
						      p->has_limits ? "not implemented" : "not requested by the policy"));
	json_array_append_new(enforced, json_pack("{s:s, s:s, s:i, s:i, s:s, s:b, s:s}", "class", "credentials",
						  "mechanism", "setresuid, capset, prctl", "uid", (int)r->user->uid, "gid",
						  (int)r->user->gid, "user", r->user->name, "no_new_privs", 1,
						  "capabilities", "none (bounding, ambient, permitted, effective)"));
	json_array_append_new(enforced, json_pack("{s:s, s:s, s:s}", "class", "containment", "mechanism", "cgroup v2",
						  "detail", "the run's cgroup is killed (cgroup.kill) and removed at the end"));

	for (int i = 0; r->counters && i < CUSTODE_REASON_KERNEL_MAX; i++) {
		const char *name = custode_reason_name(i);

		if (!r->counters->denials[i])
			continue;
		total += r->counters->denials[i];
		json_object_set_new(by_reason, name ? name : "unknown", json_integer((json_int_t)r->counters->denials[i]));
	}

	pol = json_pack("{s:s, s:I, s:s, s:s}", "name", p->name, "version", (json_int_t)p->version, "source",
			r->policy_source, "ref", r->policy_ref);
	if (r->policy_digest)
		json_object_set_new(pol, "content_digest", json_string(r->policy_digest));
	if (r->bundle)
		json_object_set(pol, "bundle", (json_t *)r->bundle);

	ex = json_pack("{s:i}", "code", r->exit_code);
	if (r->wait_status >= 0 && WIFEXITED(r->wait_status))
		json_object_set_new(ex, "status", json_integer(WEXITSTATUS(r->wait_status)));
	if (r->wait_status >= 0 && WIFSIGNALED(r->wait_status)) {
		json_object_set_new(ex, "signal", json_integer(WTERMSIG(r->wait_status)));
		json_object_set_new(ex, "signal_name", json_string(sigabbrev_np(WTERMSIG(r->wait_status))
									   ? sigabbrev_np(WTERMSIG(r->wait_status))
									   : "?"));
	}
	json_object_set_new(ex, "cancelled", r->cancelled ? json_string(r->cancelled) : json_null());

	o = json_pack("{s:i, s:s, s:s, s:I, s:o, s:s, s:s, s:o, s:s, s:o, s:o, s:{s:I, s:o}, s:o, s:o, s:o, s:I, s:b}",
		      "receipt_version", CUSTODE_RECEIPT_VERSION, "run_id", hex, "cgroup", r->st->cgroup, "cgroup_id",
		      (json_int_t)r->st->cgroup_id, "command", argv_json(r->argv), "workspace", r->st->workspace, "tmp",
		      r->st->tmp, "policy", pol, "mode", r->audit ? "audit" : "enforce", "enforced", enforced,
		      "not_enforced", not_enforced, "denials", "total", (json_int_t)total, "by_reason", by_reason, "exit",
		      ex, "started", rfc3339(r->started_ns), "ended", rfc3339(r->ended_ns), "duration_ms",
		      (json_int_t)((r->ended_ns - r->started_ns) / 1000000), "cleaned_up", r->reaped);
	if (o) {
		json_t *res = json_object();
		json_object_set_new(res, "memory_peak_bytes", r->memory_peak >= 0 ? json_integer(r->memory_peak) : json_null());
		json_object_set_new(res, "pids_peak", r->pids_peak >= 0 ? json_integer(r->pids_peak) : json_null());
		json_object_set_new(o, "resources", res);
	}
	return o;
}

int custode_receipt_write(const char *path, const json_t *receipt)
{
	char *text = json_dumps(receipt, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	int err = 0;

	if (!text)
		return -ENOMEM;
	if (!strcmp(path, "-")) {
		if (printf("%s\n", text) < 0 || fflush(stdout) != 0)
			err = -EIO;
	} else {
		size_t len = strlen(text);
		text[len] = '\n';
		err = custode_write_file_atomic(path, text, len + 1, 0644);
	}
	free(text);
	return err;
}
