// SPDX-License-Identifier: Apache-2.0
/* Run ids and the launcher's state record (what `custode gc` reads back). */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>
#include <jansson.h>

#include "state/runstate.h"

/* ---- run ids ---- */

Test(run_id, format)
{
	char out[17];

	custode_run_id_format(0, out);
	cr_assert_str_eq(out, "0000000000000000");
	custode_run_id_format(0x0123456789abcdefull, out);
	cr_assert_str_eq(out, "0123456789abcdef");
	custode_run_id_format(UINT64_MAX, out);
	cr_assert_str_eq(out, "ffffffffffffffff");
	custode_run_id_format(0xa, out);
	cr_assert_str_eq(out, "000000000000000a");
}

Test(run_id, round_trip)
{
	uint64_t v = 0x243f6a8885a308d3ull;

	for (int i = 0; i < 200; i++) {
		char out[17];
		__u64 back = 0;

		custode_run_id_format(v, out);
		cr_assert_eq(strlen(out), 16);
		cr_assert_eq(custode_run_id_parse(out, &back), 0, "%s", out);
		cr_assert_eq(back, v, "%s", out);
		v = v * 6364136223846793005ull + 1442695040888963407ull;
	}
}

Test(run_id, parse_accepts_run_prefix)
{
	__u64 id = 0;

	cr_assert_eq(custode_run_id_parse("run-0123456789abcdef", &id), 0);
	cr_assert_eq(id, 0x0123456789abcdefull);
	cr_assert_eq(custode_run_id_parse("ffffffffffffffff", &id), 0);
	cr_assert_eq(id, UINT64_MAX);
}

Test(run_id, parse_refuses)
{
	static const char *const bad[] = {
		"",
		"run-",
		"0123456789abcde",    /* 15 */
		"0123456789abcdef0",  /* 17 */
		"0123456789ABCDEF",   /* uppercase */
		"0123456789abcdeF",
		"0123456789abcdeg",   /* not hex */
		"0x23456789abcdef",
		" 123456789abcdef",
		"0123456789abcde ",
		"-123456789abcdef",
		"RUN-0123456789abcdef",
		"run-run-0123456789abcdef",
		"run0123456789abcdef",
		"run-0123456789abcde",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		__u64 id = 0x5555;
		cr_assert_eq(custode_run_id_parse(bad[i], &id), -EINVAL, "\"%s\" accepted", bad[i]);
		cr_assert_eq(id, 0x5555, "\"%s\": id written on failure", bad[i]);
	}
}

/* ---- the state record ---- */

#define VALID_FIELDS                                                                                                   \
	"\"run_id\":\"0123456789abcdef\",\"cgroup_id\":4242,\"ruleset\":17,\"launcher_pid\":999,"                      \
	"\"started\":1767225600,\"cgroup\":\"/sys/fs/cgroup/custode/run-0123456789abcdef\","                          \
	"\"tmp\":\"/tmp/custode-0123456789abcdef\",\"workspace\":\"/home/u/ws\",\"policy\":\"builtin/read\""

static void fill_sentinel(struct custode_runstate *st)
{
	memset(st, 0xa5, sizeof(*st));
}

static void expect_sentinel(const struct custode_runstate *st, const char *text)
{
	struct custode_runstate ref;

	fill_sentinel(&ref);
	cr_assert(memcmp(st, &ref, sizeof(ref)) == 0, "state written on failure for %s", text);
}

static void refused(const char *text)
{
	struct custode_runstate *st = malloc(sizeof(*st));

	fill_sentinel(st);
	cr_assert_eq(custode_runstate_parse(text, st), -EINVAL, "accepted: %.300s", text);
	expect_sentinel(st, text);
	free(st);
}

Test(runstate, parse_valid)
{
	struct custode_runstate *st = malloc(sizeof(*st));

	fill_sentinel(st);
	cr_assert_eq(custode_runstate_parse("{" VALID_FIELDS "}", st), 0);
	cr_assert_eq(st->run_id, 0x0123456789abcdefull);
	cr_assert_eq(st->cgroup_id, 4242);
	cr_assert_eq(st->ruleset, 17);
	cr_assert_eq(st->launcher_pid, 999);
	cr_assert_eq(st->started, 1767225600);
	cr_assert_str_eq(st->cgroup, "/sys/fs/cgroup/custode/run-0123456789abcdef");
	cr_assert_str_eq(st->tmp, "/tmp/custode-0123456789abcdef");
	cr_assert_str_eq(st->workspace, "/home/u/ws");
	cr_assert_str_eq(st->policy, "builtin/read");
	free(st);
}

Test(runstate, field_order_does_not_matter)
{
	struct custode_runstate *st = malloc(sizeof(*st));
	const char *text = "{\"policy\":\"p\",\"workspace\":\"/w\",\"tmp\":\"/t\",\"cgroup\":\"/c\",\"started\":1,"
			   "\"launcher_pid\":2,\"ruleset\":3,\"cgroup_id\":4,\"run_id\":\"run-000000000000000f\"}";

	cr_assert_eq(custode_runstate_parse(text, st), 0);
	cr_assert_eq(st->run_id, 15);
	cr_assert_eq(st->cgroup_id, 4);
	cr_assert_str_eq(st->policy, "p");
	free(st);
}

Test(runstate, missing_fields)
{
	static const char *const fields[] = {"run_id", "cgroup_id", "ruleset", "launcher_pid", "started",
					     "cgroup", "tmp",       "workspace", "policy"};
	static const char all[] = VALID_FIELDS;

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		char text[1024], key[32];
		const char *start, *end;
		size_t off;

		/* cut "key":value, out of the object */
		snprintf(key, sizeof(key), "\"%s\":", fields[i]);
		start = strstr(all, key);
		cr_assert_not_null(start);
		end = strchr(start + strlen(key) + 1, ',');
		off = (size_t)(start - all);
		text[0] = '{';
		memcpy(text + 1, all, off);
		if (end)
			snprintf(text + 1 + off, sizeof(text) - 1 - off, "%s}", end + 1);
		else
			snprintf(text + off, sizeof(text) - off, "}"); /* drop the comma before the last field */
		/* the cut document is well-formed and lacks exactly that field */
		json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
		cr_assert(json_is_object(o), "%s", text);
		cr_assert_eq(json_object_size(o), 8, "%s", text);
		cr_assert_null(json_object_get(o, fields[i]));
		json_decref(o);
		refused(text);
	}
}

Test(runstate, wrong_types)
{
	refused("{\"run_id\":81985529216486895,\"cgroup_id\":4242,\"ruleset\":17,\"launcher_pid\":999,"
		"\"started\":1,\"cgroup\":\"/c\",\"tmp\":\"/t\",\"workspace\":\"/w\",\"policy\":\"p\"}");
	refused("{\"run_id\":\"0123456789abcdef\",\"cgroup_id\":\"4242\",\"ruleset\":17,\"launcher_pid\":999,"
		"\"started\":1,\"cgroup\":\"/c\",\"tmp\":\"/t\",\"workspace\":\"/w\",\"policy\":\"p\"}");
	refused("{\"run_id\":\"0123456789abcdef\",\"cgroup_id\":4242,\"ruleset\":17.5,\"launcher_pid\":999,"
		"\"started\":1,\"cgroup\":\"/c\",\"tmp\":\"/t\",\"workspace\":\"/w\",\"policy\":\"p\"}");
	refused("{\"run_id\":\"0123456789abcdef\",\"cgroup_id\":4242,\"ruleset\":17,\"launcher_pid\":null,"
		"\"started\":1,\"cgroup\":\"/c\",\"tmp\":\"/t\",\"workspace\":\"/w\",\"policy\":\"p\"}");
	refused("{\"run_id\":\"0123456789abcdef\",\"cgroup_id\":4242,\"ruleset\":17,\"launcher_pid\":999,"
		"\"started\":true,\"cgroup\":\"/c\",\"tmp\":\"/t\",\"workspace\":\"/w\",\"policy\":\"p\"}");
	refused("{\"run_id\":\"0123456789abcdef\",\"cgroup_id\":4242,\"ruleset\":17,\"launcher_pid\":999,"
		"\"started\":1,\"cgroup\":[\"/c\"],\"tmp\":\"/t\",\"workspace\":\"/w\",\"policy\":\"p\"}");
	refused("{\"run_id\":\"0123456789abcdef\",\"cgroup_id\":4242,\"ruleset\":17,\"launcher_pid\":999,"
		"\"started\":1,\"cgroup\":\"/c\",\"tmp\":{},\"workspace\":\"/w\",\"policy\":\"p\"}");
	refused("{\"run_id\":\"0123456789abcdef\",\"cgroup_id\":4242,\"ruleset\":17,\"launcher_pid\":999,"
		"\"started\":1,\"cgroup\":\"/c\",\"tmp\":\"/t\",\"workspace\":1,\"policy\":\"p\"}");
	refused("{\"run_id\":\"0123456789abcdef\",\"cgroup_id\":4242,\"ruleset\":17,\"launcher_pid\":999,"
		"\"started\":1,\"cgroup\":\"/c\",\"tmp\":\"/t\",\"workspace\":\"/w\",\"policy\":false}");
}

Test(runstate, bad_run_id)
{
	refused("{\"run_id\":\"0123456789ABCDEF\",\"cgroup_id\":1,\"ruleset\":1,\"launcher_pid\":1,"
		"\"started\":1,\"cgroup\":\"/c\",\"tmp\":\"/t\",\"workspace\":\"/w\",\"policy\":\"p\"}");
	refused("{\"run_id\":\"0123456789abcdef0123456789abcdef0\",\"cgroup_id\":1,\"ruleset\":1,\"launcher_pid\":1,"
		"\"started\":1,\"cgroup\":\"/c\",\"tmp\":\"/t\",\"workspace\":\"/w\",\"policy\":\"p\"}");
	refused("{\"run_id\":\"\",\"cgroup_id\":1,\"ruleset\":1,\"launcher_pid\":1,"
		"\"started\":1,\"cgroup\":\"/c\",\"tmp\":\"/t\",\"workspace\":\"/w\",\"policy\":\"p\"}");
}

Test(runstate, duplicate_keys)
{
	refused("{" VALID_FIELDS ",\"cgroup\":\"/sys/fs/cgroup\"}");
	refused("{\"run_id\":\"0000000000000001\"," VALID_FIELDS "}");
}

Test(runstate, not_an_object)
{
	refused("");
	refused("[]");
	refused("null");
	refused("\"x\"");
	refused("{");
	refused("{" VALID_FIELDS "} trailing");
}

static char *doc_with(const char *field, size_t len)
{
	/* VALID_FIELDS with one string field replaced by `len` bytes of 'a' */
	char *val = malloc(len + 1), *text = malloc(len + 1024);

	memset(val, 'a', len);
	val[len] = 0;
	snprintf(text, len + 1024,
		 "{\"run_id\":\"0123456789abcdef\",\"cgroup_id\":1,\"ruleset\":1,\"launcher_pid\":1,\"started\":1,"
		 "\"cgroup\":\"%s\",\"tmp\":\"%s\",\"workspace\":\"%s\",\"policy\":\"%s\"}",
		 strcmp(field, "cgroup") ? "/c" : val, strcmp(field, "tmp") ? "/t" : val,
		 strcmp(field, "workspace") ? "/w" : val, strcmp(field, "policy") ? "p" : val);
	free(val);
	return text;
}

Test(runstate, overlong_strings)
{
	struct custode_runstate *st = malloc(sizeof(*st));
	char *text;

	/* limits: sizeof the field including the NUL */
	text = doc_with("policy", sizeof(st->policy));
	refused(text);
	free(text);
	text = doc_with("policy", sizeof(st->policy) - 1);
	cr_assert_eq(custode_runstate_parse(text, st), 0);
	cr_assert_eq(strlen(st->policy), sizeof(st->policy) - 1);
	free(text);

	text = doc_with("cgroup", PATH_MAX);
	refused(text);
	free(text);
	text = doc_with("tmp", PATH_MAX);
	refused(text);
	free(text);
	text = doc_with("workspace", PATH_MAX + 100);
	refused(text);
	free(text);
	text = doc_with("workspace", PATH_MAX - 1);
	cr_assert_eq(custode_runstate_parse(text, st), 0);
	cr_assert_eq(strlen(st->workspace), PATH_MAX - 1);
	free(text);
	free(st);
}

/*
 * Every --allow grant a run takes survives the state file, whole: a live
 * policy swap grants them again from it (it kept 16, and cut each at 95
 * characters, so grant 17 was lost at the first swap and a long host name cut).
 */
Test(runstate, allows_round_trip_all_and_whole)
{
	struct custode_runstate *st = calloc(1, sizeof(*st)), *back = malloc(sizeof(*back));
	char host[300];
	json_t *doc, *a;
	char *text;

	cr_assert(st && back);
	memset(host, 'h', 253);
	host[0] = 'x';
	for (int i = 62; i < 253; i += 63)
		host[i] = '.';
	snprintf(host + 253, sizeof(host) - 253, ":65535/udp");
	cr_assert_eq(strlen(host), 263);
	cr_assert(strlen(host) < CUSTODE_ALLOW_TEXT_MAX);
	/* the document a launcher writes: VALID_FIELDS and CUSTODE_RUN_MAX_ALLOWS grants, the last a long host */
	doc = json_loads("{" VALID_FIELDS "}", 0, NULL);
	cr_assert_not_null(doc);
	a = json_array();
	for (int i = 0; i < CUSTODE_RUN_MAX_ALLOWS - 1; i++) {
		char g[64];

		snprintf(g, sizeof(g), "203.0.113.%d:%d", i % 250, 40000 + i);
		json_array_append_new(a, json_string(g));
	}
	json_array_append_new(a, json_string(host));
	json_object_set_new(doc, "allows", a);
	text = json_dumps(doc, JSON_COMPACT);
	cr_assert_not_null(text);
	fill_sentinel(back);
	cr_assert_eq(custode_runstate_parse(text, back), 0);
	cr_assert_eq(back->n_allows, CUSTODE_RUN_MAX_ALLOWS);
	cr_assert_str_eq(back->allows[16], "203.0.113.16:40016", "grant 17 kept");
	cr_assert_str_eq(back->allows[CUSTODE_RUN_MAX_ALLOWS - 1], host, "a long host grant kept whole");
	free(text);

	/* one more than a run takes: refused, nothing written */
	json_array_append_new(a, json_string("203.0.113.1:1"));
	text = json_dumps(doc, JSON_COMPACT);
	refused(text);
	free(text);
	json_decref(doc);
	free(st);
	free(back);
}
