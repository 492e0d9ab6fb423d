// SPDX-License-Identifier: Apache-2.0
/* custode run --receipt: checked field by field against what happened. */
#include <stdio.h>
#include <stdlib.h>

#include "ktest.h"

static json_t *load(const char *path)
{
	json_error_t e;
	json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, &e);

	if (!o)
		ktest_log("receipt %s: %s", path, e.text);
	return o;
}

static json_t *find_class(json_t *arr, const char *cls)
{
	size_t i;
	json_t *e;

	json_array_foreach(arr, i, e) if (!strcmp(json_string_value(json_object_get(e, "class")) ?: "", cls)) return e;
	return NULL;
}

KTEST(receipt_egress_run)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	char path[400];
	json_t *o, *pol, *den, *ex, *e;

	ktest_need_cgroup_bpf();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs") || !ASSERT_TRUE(ktest_netns(), "netns"))
		return;
	snprintf(path, sizeof(path), "%s/receipt.json", d.root);
	char *argv[] = {(char *)ktest_custode(), "run", "--profile", "net-only", "--allow", "203.0.113.10:8080",
			"--receipt", path, "--", (char *)ktest_tprobe(), "connect", "203.0.113.10", "8081", NULL};
	ktest_run(argv, -1, 60000, &r);
	ASSERT_EQ(r.code, 1, "the command's status (its connect was denied)");
	o = load(path);
	if (!ASSERT_TRUE(o != NULL, "receipt written"))
		return;
	ASSERT_EQ(json_integer_value(json_object_get(o, "receipt_version")), 1, "version");
	ASSERT_EQ(json_string_length(json_object_get(o, "run_id")), 16, "run id");
	ASSERT_CONTAINS(json_string_value(json_object_get(o, "cgroup")), "/custode/run-", "cgroup");
	ASSERT_STREQ(json_string_value(json_array_get(json_object_get(o, "command"), 1)), "connect", "command");
	pol = json_object_get(o, "policy");
	ASSERT_STREQ(json_string_value(json_object_get(pol, "name")), "builtin/net-only", "policy name");
	ASSERT_STREQ(json_string_value(json_object_get(pol, "source")), "profile", "policy source");
	ASSERT_EQ(strncmp(json_string_value(json_object_get(pol, "content_digest")) ?: "", "sha256:", 7), 0, "digest");
	e = find_class(json_object_get(o, "enforced"), "egress");
	if (ASSERT_TRUE(e != NULL, "egress enforced")) {
		ASSERT_STREQ(json_string_value(json_object_get(e, "mechanism")), "cgroup-bpf", "mechanism");
		ASSERT_EQ(json_integer_value(json_object_get(e, "egress_keys")), 1, "the --allow key");
	}
	e = find_class(json_object_get(o, "not_enforced"), "file");
	if (ASSERT_TRUE(e != NULL, "file not enforced"))
		ASSERT_STREQ(json_string_value(json_object_get(e, "reason")), "not requested by the policy", "why");
	e = find_class(json_object_get(o, "not_enforced"), "process");
	ASSERT_TRUE(e != NULL, "process listed as not enforced");
	e = find_class(json_object_get(o, "enforced"), "credentials");
	if (ASSERT_TRUE(e != NULL, "credentials"))
		ASSERT_EQ(json_integer_value(json_object_get(e, "uid")), 65534, "uid");
	den = json_object_get(o, "denials");
	ASSERT_EQ(json_integer_value(json_object_get(den, "total")), 1, "exactly one denial");
	ASSERT_EQ(json_integer_value(json_object_get(json_object_get(den, "by_reason"), "net.egress.denied")), 1, "by reason");
	ex = json_object_get(o, "exit");
	ASSERT_EQ(json_integer_value(json_object_get(ex, "code")), 1, "exit code");
	ASSERT_TRUE(json_is_null(json_object_get(ex, "cancelled")), "not cancelled");
	ASSERT_TRUE(json_is_true(json_object_get(o, "cleaned_up")), "cleaned up");
	ASSERT_TRUE(strcmp(json_string_value(json_object_get(o, "started")) ?: "",
			   json_string_value(json_object_get(o, "ended")) ?: "") <= 0, "started <= ended");
	json_decref(o);
}

KTEST(receipt_timeout_and_stdout)
{
	static struct ktest_result r;
	char *argv[] = {(char *)ktest_custode(), "run", "--profile", "net-only", "--timeout", "1", "--receipt", "-", "--",
			"/bin/sleep", "30", NULL};
	char *bad[] = {(char *)ktest_custode(), "run", "--profile", "net-only", "--receipt", "/nonexistent/dir/r.json",
		       "--", "/bin/echo", "RAN", NULL};
	json_t *o;

	ktest_need_cgroup_bpf();
	ktest_run(argv, -1, 60000, &r);
	ASSERT_EQ(r.code, 124, "timeout");
	o = json_loads(r.out, 0, NULL);
	if (ASSERT_TRUE(o != NULL, "receipt on stdout")) {
		ASSERT_STREQ(json_string_value(json_object_get(json_object_get(o, "exit"), "cancelled")), "timeout", "cancelled");
		ASSERT_EQ(json_integer_value(json_object_get(json_object_get(o, "exit"), "signal")), 9, "killed by SIGKILL");
		ASSERT_TRUE(json_is_true(json_object_get(o, "cleaned_up")), "cleaned up");
	}
	json_decref(o);
	ktest_run(bad, -1, 60000, &r);
	ASSERT_EQ(r.code, 125, "an unwritable receipt path is refused before the command runs");
	ASSERT_TRUE(strstr(r.out, "RAN") == NULL, "nothing ran");
}

/* The read profile: file enforcement by BPF-LSM, and resource peaks from cgroup v2 (guest). */
KTEST(receipt_file_run)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	char path[400];
	json_t *o, *e;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	snprintf(path, sizeof(path), "%s/receipt.json", d.root);
	char *argv[] = {(char *)ktest_custode(), "run", "--workspace", d.ws, "--receipt", path, "--",
			(char *)ktest_tprobe(), "open", d.outside, "r", NULL};
	ktest_run(argv, -1, 60000, &r);
	o = load(path);
	if (!ASSERT_TRUE(o != NULL, "receipt"))
		return;
	e = find_class(json_object_get(o, "enforced"), "file");
	if (ASSERT_TRUE(e != NULL, "file enforced"))
		ASSERT_STREQ(json_string_value(json_object_get(e, "mechanism")), "bpf-lsm", "mechanism");
	ASSERT_EQ(json_integer_value(json_object_get(json_object_get(json_object_get(o, "denials"), "by_reason"),
						     "file.read.denied")),
		  1, "file.read.denied counted");
	ASSERT_STREQ(json_string_value(json_object_get(o, "workspace")), d.ws, "workspace");
	ASSERT_TRUE(json_integer_value(json_object_get(json_object_get(o, "resources"), "memory_peak_bytes")) > 0,
		    "memory.peak read (cgroup v2 with the memory controller)");
	json_decref(o);
}
