// SPDX-License-Identifier: Apache-2.0
/*
 * The receipt of a run with process, limits and env sections, checked field
 * by field against what the run did: two signal denials and one ptrace
 * denial toward a host process of the same uid, a known output, exit 3.
 */
#include <time.h>

#include "procutil.h"

#define RECEIPT_POLICY                                                                                             \
	POLICY("receipt", "{\"process\":{\"ptrace\":\"none\",\"signals\":\"run\"},"                                  \
			  "\"limits\":{\"pids\":64,\"memoryBytes\":268435456,\"wallSeconds\":60,\"outputBytes\":100000}," \
			  "\"env\":[\"FOO\"]}")

static bool has_string(json_t *arr, const char *s)
{
	size_t i;
	json_t *v;

	json_array_foreach(arr, i, v) if (json_string_value(v) && !strcmp(json_string_value(v), s)) return true;
	return false;
}

KTEST(lifecycle_receipt_fields)
{
	static struct ktest_result r;
	struct ktest_proc t;
	struct ktest_dirs d;
	char receipt[400], script[1024], want_cg[64], want_tmp[64], env_foo[] = "FOO=bar";
	const char *pol;
	unsigned long addr;
	int pid = 0;
	time_t before, after;
	json_t *rc, *e, *pol_j, *ex, *den, *res;

	ktest_need_lsm();
	ASSERT_TRUE(ktest_make_dirs(&d), "dirs");
	pol = pu_policy(d.root, "receipt", RECEIPT_POLICY);
	snprintf(receipt, sizeof(receipt), "%s/receipt.json", d.root);
	if (!ASSERT_TRUE(pu_host_target(NOBODY, &t, &pid, &addr), "host target"))
		return;
	snprintf(script, sizeof(script), "P=%s; $P kill %d 0; $P read /proc/%d/environ; $P kill %d 9; echo out; exit 3",
		 ktest_helper("pprobe"), pid, pid, pid);
	{
		char *argv[] = {"/usr/bin/env", env_foo, (char *)ktest_custode(), "run", "--policy", (char *)pol,
				"--workspace", d.ws, "--receipt", receipt, "--", "/bin/sh", "-c", script, NULL};
		if (access(argv[0], X_OK) != 0)
			argv[0] = "/bin/env";
		before = time(NULL);
		ktest_run(argv, -1, 120000, &r);
		after = time(NULL);
	}
	ASSERT_EQ(r.code, 3, "the command's status");
	ASSERT_STREQ(r.out, "EPERM\nEACCES\nEPERM\nout\n", "what the command saw");
	ASSERT_TRUE(ktest_pid_alive(pid), "the host process survived");
	pu_stop(&t);

	rc = pu_load_json(receipt);
	if (!ASSERT_TRUE(rc != NULL, "receipt"))
		return;
	ASSERT_EQ(json_integer_value(json_object_get(rc, "receipt_version")), 1, "receipt_version");
	ASSERT_EQ(json_string_length(json_object_get(rc, "run_id")), 16, "run_id");
	snprintf(want_cg, sizeof(want_cg), "/custode/run-%s", json_string_value(json_object_get(rc, "run_id")) ?: "");
	ASSERT_CONTAINS(json_string_value(json_object_get(rc, "cgroup")), want_cg, "cgroup named after the run");
	ASSERT_TRUE(json_integer_value(json_object_get(rc, "cgroup_id")) > 0, "cgroup_id");
	ASSERT_STREQ(json_string_value(json_array_get(json_object_get(rc, "command"), 0)), "/bin/sh", "command[0]");
	ASSERT_STREQ(json_string_value(json_array_get(json_object_get(rc, "command"), 2)), script, "command[2]");
	ASSERT_STREQ(json_string_value(json_object_get(rc, "workspace")), d.ws, "workspace");
	snprintf(want_tmp, sizeof(want_tmp), "/tmp/custode-%s", json_string_value(json_object_get(rc, "run_id")) ?: "");
	ASSERT_STREQ(json_string_value(json_object_get(rc, "tmp")), want_tmp, "tmp");
	ASSERT_TRUE(access(want_tmp, F_OK) != 0, "tmp removed");

	pol_j = json_object_get(rc, "policy");
	ASSERT_STREQ(json_string_value(json_object_get(pol_j, "name")), "test/receipt", "policy.name");
	ASSERT_EQ(json_integer_value(json_object_get(pol_j, "version")), 1, "policy.version");
	ASSERT_STREQ(json_string_value(json_object_get(pol_j, "source")), "file", "policy.source");
	ASSERT_STREQ(json_string_value(json_object_get(pol_j, "ref")), pol, "policy.ref");
	ASSERT_EQ(json_string_length(json_object_get(pol_j, "content_digest")), 7 + 64, "policy.content_digest");
	ASSERT_STREQ(json_string_value(json_object_get(rc, "mode")), "enforce", "mode");

	e = pu_class(rc, "enforced", "process", NULL);
	if (ASSERT_TRUE(e != NULL, "process enforced")) {
		ASSERT_STREQ(json_string_value(json_object_get(e, "mechanism")), "bpf-lsm", "process: mechanism");
		ASSERT_STREQ(json_string_value(json_object_get(e, "ptrace")), "none", "process: ptrace");
		ASSERT_STREQ(json_string_value(json_object_get(e, "signals")), "run", "process: signals");
		ASSERT_TRUE(has_string(json_object_get(e, "hooks"), "lsm/task_kill"), "process: hooks");
	}
	e = pu_class(rc, "enforced", "syscalls", NULL);
	if (ASSERT_TRUE(e != NULL, "seccomp enforced")) {
		ASSERT_STREQ(json_string_value(json_object_get(e, "mechanism")), "seccomp", "syscalls: mechanism");
		ASSERT_TRUE(has_string(json_object_get(e, "denied"), "ptrace"), "ptrace in the denylist (ptrace none)");
		ASSERT_TRUE(has_string(json_object_get(e, "denied"), "bpf"), "bpf in the denylist");
	}
	e = pu_class(rc, "enforced", "limits", NULL);
	if (ASSERT_TRUE(e != NULL, "limits enforced")) {
		json_t *cg = json_object_get(e, "cgroup");
		ASSERT_STREQ(json_string_value(json_object_get(e, "mechanism")), "cgroup v2", "limits: mechanism");
		ASSERT_STREQ(json_string_value(json_object_get(cg, "pids.max")), "64", "pids.max");
		ASSERT_STREQ(json_string_value(json_object_get(cg, "memory.max")), "268435456", "memory.max");
		ASSERT_TRUE(json_object_get(cg, "cpu.max") == NULL, "no cpu limit asked");
	}
	e = pu_class(rc, "enforced", "timeout", NULL);
	ASSERT_TRUE(e && json_integer_value(json_object_get(e, "seconds")) == 60, "timeout 60 s from the policy");
	e = pu_class(rc, "enforced", "output", NULL);
	if (ASSERT_TRUE(e != NULL, "output cap")) {
		ASSERT_EQ(json_integer_value(json_object_get(e, "limit_bytes")), 100000, "output: limit");
		ASSERT_EQ(json_integer_value(json_object_get(e, "written_bytes")), (long long)strlen(r.out), "output: written");
	}
	e = pu_class(rc, "enforced", "environment", NULL);
	if (ASSERT_TRUE(e != NULL, "environment")) {
		ASSERT_STREQ(json_string_value(json_object_get(e, "allowlist")), "policy", "env: from the policy");
		ASSERT_EQ(json_array_size(json_object_get(e, "kept")), 1, "env: one kept");
		ASSERT_TRUE(has_string(json_object_get(e, "kept"), "FOO"), "env: FOO kept");
		ASSERT_TRUE(has_string(json_object_get(e, "set"), "TMPDIR") && has_string(json_object_get(e, "set"), "HOME"),
			    "env: TMPDIR and HOME set by custode");
	}
	e = pu_class(rc, "enforced", "credentials", NULL);
	ASSERT_TRUE(e && json_integer_value(json_object_get(e, "uid")) == NOBODY, "credentials: uid");
	ASSERT_TRUE(pu_class(rc, "enforced", "file_descriptors", NULL) != NULL, "fds");
	ASSERT_TRUE(pu_class(rc, "enforced", "containment", NULL) != NULL, "containment");
	e = pu_class(rc, "not_enforced", "file", NULL);
	ASSERT_TRUE(e && !strcmp(json_string_value(json_object_get(e, "reason")) ?: "", "not requested by the policy"),
		    "file not requested");
	ASSERT_TRUE(pu_class(rc, "not_enforced", "egress", NULL) != NULL, "egress not requested");
	ASSERT_TRUE(pu_class(rc, "not_enforced", "process", NULL) == NULL, "process is not in not_enforced");
	ASSERT_TRUE(pu_class(rc, "not_enforced", "limits", NULL) == NULL, "limits are not in not_enforced");

	den = json_object_get(rc, "denials");
	ASSERT_EQ(json_integer_value(json_object_get(den, "total")), 3, "denials.total");
	ASSERT_EQ(pu_denials(rc, "process.signal.denied"), 2, "two signals");
	ASSERT_EQ(pu_denials(rc, "process.ptrace.denied"), 1, "one ptrace read");
	ASSERT_EQ(json_object_size(json_object_get(den, "by_reason")), 2, "no other reason");

	ex = json_object_get(rc, "exit");
	ASSERT_EQ(json_integer_value(json_object_get(ex, "code")), 3, "exit.code");
	ASSERT_EQ(json_integer_value(json_object_get(ex, "status")), 3, "exit.status");
	ASSERT_TRUE(json_object_get(ex, "signal") == NULL, "no exit.signal");
	ASSERT_TRUE(json_is_null(json_object_get(ex, "cancelled")), "not cancelled");
	ASSERT_TRUE(json_is_true(json_object_get(rc, "cleaned_up")), "cleaned_up");

	{
		struct tm tm = {0};
		const char *s = json_string_value(json_object_get(rc, "started"));
		const char *en = json_string_value(json_object_get(rc, "ended"));
		time_t st;
		if (ASSERT_TRUE(s && en && strptime(s, "%Y-%m-%dT%H:%M:%S", &tm), "started is RFC 3339")) {
			st = timegm(&tm);
			ASSERT_TRUE(st >= before - 1 && st <= after + 1, "started within the run");
			ASSERT_TRUE(strcmp(s, en) <= 0, "started <= ended");
		}
		ASSERT_TRUE(json_integer_value(json_object_get(rc, "duration_ms")) >= 0 &&
				    json_integer_value(json_object_get(rc, "duration_ms")) <= (after - before + 1) * 1000,
			    "duration_ms");
	}
	res = json_object_get(rc, "resources");
	ASSERT_TRUE(json_integer_value(json_object_get(res, "memory_peak_bytes")) > 0, "memory peak");
	ASSERT_TRUE(json_integer_value(json_object_get(res, "pids_peak")) >= 2, "pids peak: sh and a probe");
	ASSERT_TRUE(json_integer_value(json_object_get(res, "pids_peak")) <= 64, "pids peak within pids.max");
	json_decref(rc);
}
