// SPDX-License-Identifier: Apache-2.0
/*
 * One scheme across the CLI (docs/output.md): every shown time in the one
 * RFC 3339 form (receipts, a bundle's window, `engine status`), documents as
 * one JSON value (`profiles --json`, `engine status --json`), and
 * `engine status` as text by default.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>
#include <jansson.h>

#include "bundle/source.h"
#include "cli/output.h"
#include "policy/profiles.h"
#include "run/receipt.h"

#define NS 1000000000LL
/* 2026-01-01T00:00:00Z */
#define WALL_2026 1767225600LL

/* What call prints to f, as a string to free. */
#define CAPTURE(out, call)                                                                                            \
	do {                                                                                                          \
		size_t len_;                                                                                          \
		FILE *f = open_memstream(&(out), &len_);                                                              \
		cr_assert(f != NULL);                                                                                 \
		call;                                                                                                 \
		fclose(f);                                                                                            \
	} while (0)

Test(output, receipt_times_have_microseconds)
{
	static struct custode_runstate st = {.run_id = 1, .cgroup_id = 2, .cgroup = "/c", .tmp = "/t", .workspace = "/w"};
	struct custode_run_user user = {.uid = 65534, .gid = 65534, .name = "nobody"};
	const struct custode_builtin_profile *bp = custode_profile_find("net-only");
	struct custode_policy *pol = NULL;
	struct custode_refusal why;
	struct custode_receipt r = {0};
	json_t *o;

	cr_assert(bp != NULL);
	cr_assert_eq(custode_policy_parse(bp->text, bp->len, &pol, &why), 0);
	r.st = &st;
	r.policy = pol;
	r.policy_source = "profile";
	r.policy_ref = "net-only";
	r.user = &user;
	r.wait_status = -1;
	r.output_cap = -1;
	r.memory_peak = r.pids_peak = -1;
	r.started_ns = WALL_2026 * NS + 123456789;
	r.ended_ns = WALL_2026 * NS + 2 * NS + 5000;
	o = custode_receipt_json(&r);
	cr_assert(o != NULL);
	cr_expect_str_eq(json_string_value(json_object_get(o, "started")), "2026-01-01T00:00:00.123456Z");
	cr_expect_str_eq(json_string_value(json_object_get(o, "ended")), "2026-01-01T00:00:02.000005Z");
	cr_expect_eq(json_integer_value(json_object_get(o, "duration_ms")), 1876);
	json_decref(o);
	custode_policy_free(pol);
}

Test(output, bundle_window_as_rfc3339_beside_the_old_integers)
{
	json_t *o = json_object();

	cr_assert_eq(custode_bundle_window_json(o, WALL_2026, WALL_2026 + 86400), 0);
	cr_expect_str_eq(json_string_value(json_object_get(o, "not_before_time")), "2026-01-01T00:00:00.000000Z");
	cr_expect_str_eq(json_string_value(json_object_get(o, "not_after_time")), "2026-01-02T00:00:00.000000Z");
	/* deprecated, unchanged for the readers that parse them */
	cr_expect_eq(json_integer_value(json_object_get(o, "not_before")), WALL_2026);
	cr_expect_eq(json_integer_value(json_object_get(o, "not_after")), WALL_2026 + 86400);
	json_decref(o);
}

Test(output, document_is_one_line)
{
	json_t *doc = json_pack("[{s:i}, {s:i}]", "a", 1, "b", 2);
	char *out = NULL;

	CAPTURE(out, cr_expect_eq(custode_print_document(doc, f), 0));
	cr_expect_str_eq(out, "[{\"a\":1},{\"b\":2}]\n");
	free(out);
	json_decref(doc);
}

Test(output, engine_status_text)
{
	json_t *st = json_pack("{s:b, s:s, s:i, s:[s,s], s:I, s:i, s:I, s:I, s:I, s:s, s:s, s:s, s:{s:i, s:i}}", "loaded",
			       1, "pin_root", "/sys/fs/bpf/custode", "abi_version", 4, "classes", "file", "egress",
			       "cgroup_root_id", (json_int_t)25, "runs", 2, "events", (json_int_t)7, "events_dropped",
			       (json_int_t)1, "loaded_at", (json_int_t)WALL_2026, "loaded_at_time",
			       "2026-01-01T00:00:00.000000Z", "cgroup_root", "/sys/fs/cgroup/custode", "run_cache", "off",
			       "entries", "custode_runs", 2, "custode_pins", 0);
	char *out = NULL;

	cr_assert(st != NULL);
	json_object_set_new(st, "decisions",
			    json_pack("{s:i, s:i, s:i, s:i, s:[]}", "slots", 65536, "bytes", 4718592, "slots_used", 37,
				      "slots_of_ended_runs", 5, "runs"));
	json_object_set_new(st, "scratch",
			    json_pack("{s:i, s:[i,i,i,i], s:[i,i,i,i], s:i, s:i}", "slots", 4, "claims", 900, 12, 1, 0,
				      "held", 0, 0, 0, 0, "steals", 0, "lost", 0));
	json_object_set_new(st, "admitted",
			    json_pack("[{s:I, s:I, s:i, s:i, s:s}]", "dev", (json_int_t)(8 << 20 | 1), "ino",
				      (json_int_t)4242, "abi_version", 6, "by_pid", 77, "admitted_at",
				      "2026-01-01T00:00:05Z"));
	CAPTURE(out, custode_print_engine_status(st, f));
	cr_expect_str_eq(out, "pin root         /sys/fs/bpf/custode\n"
			      "loaded at        2026-01-01T00:00:00.000000Z\n"
			      "abi version      4\n"
			      "classes          file, egress\n"
			      "cgroup root      /sys/fs/cgroup/custode (id 25)\n"
			      "runs             2\n"
			      "events           7 (1 dropped)\n"
			      "run cache        off\n"
			      "decisions        65536 slots shared by the runs (4608 KiB), 37 used (5 of them by ended runs)\n"
			      "path buffers     claims 900/12/1/0 by slot; 0 steals, 0 refused\n"
			      "admitted         1\n"
			      "  dev 8:1 ino 4242, ABI 6, 2026-01-01T00:00:05Z\n"
			      "map entries\n"
			      "  custode_runs                   2\n"
			      "  custode_pins                   0\n");
	free(out);
	json_decref(st);
}

Test(output, profiles_text_and_rows)
{
	json_t *rows = json_array();
	char *out = NULL;

	json_array_append_new(rows, custode_profile_row("read", "builtin/read", 1, 41));
	json_array_append_new(rows, custode_profile_row("net-only", "builtin/net-only", 3, 0));
	CAPTURE(out, custode_print_profiles(rows, f));
	cr_expect_str_eq(out, "read             builtin/read v1, 41 filesystem rules\n"
			      "net-only         builtin/net-only v3, 0 filesystem rules\n");
	free(out);
	out = json_dumps(json_array_get(rows, 0), JSON_COMPACT);
	cr_expect_str_eq(out, "{\"name\":\"read\",\"policy\":\"builtin/read\",\"version\":1,\"rules\":41}",
			 "the fields profiles --json always had");
	free(out);
	json_decref(rows);
}
