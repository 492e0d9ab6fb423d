// SPDX-License-Identifier: Apache-2.0
/*
 * The resolver's refusals reach the daemon's denial stream: a name the
 * policy does not grant shows up in `custode events` (through the daemon) as
 * a "dns" record of the run, valid against docs/events.schema.json, in JSON
 * and in the human format; a granted name does not.
 */
#include <limits.h>

#include "schema.h"
#include "test_dns_fixture.h"

#define POLICY(f) dns_policy(f, "stream", "{\"host\":\"ok.test\",\"ports\":[8080]}", NULL)

static json_t *schema_load(void)
{
	char path[PATH_MAX], *slash;

	if (!realpath(ktest_custode(), path)) /* <repo>/build/custode */
		return NULL;
	for (int i = 0; i < 2; i++) {
		slash = strrchr(path, '/');
		if (!slash)
			return NULL;
		*slash = 0;
	}
	strncat(path, "/docs/events.schema.json", sizeof(path) - strlen(path) - 1);
	return json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
}

/* `custode events ARGS...` through the daemon, output in r. */
static void events(struct ktest_result *r, const char *rid, bool json)
{
	char *argv[] = {(char *)ktest_custode(), "events", "--run", (char *)rid, "--reason", "dns.*",
			json ? "--json" : NULL, NULL};

	ktest_run(argv, -1, 30000, r);
}

/* Wait until the run's dns record for name is in the stream; false on a hang detector's timeout (ktest_slack). */
static bool wait_dns_record(const char *rid, const char *name, int timeout_ms)
{
	static struct ktest_result e;
	char needle[300];
	long end = kt_ms() + ktest_slack(timeout_ms);

	snprintf(needle, sizeof(needle), "\"name\":\"%s\"", name);
	for (;;) {
		events(&e, rid, true);
		if (strstr(e.out, needle))
			return true;
		if (kt_ms() >= end)
			return false;
		usleep(100000);
	}
}

KTEST(dns_denials_in_the_stream)
{
	static struct ktest_result r, e;
	struct dnsfix f;
	const char *pol, *p;
	char rid[17] = "", rid2[17] = "";
	json_t *schema = schema_load(), *found = NULL;
	int dns_lines = 0;

	if (!ASSERT_TRUE(schema != NULL, "docs/events.schema.json") || !dns_setup(&f, NULL)) {
		json_decref(schema);
		return;
	}
	pol = POLICY(&f);
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "other.test", "A"));
	ASSERT_CONTAINS(r.out, "rcode REFUSED", "a name the policy does not grant");
	p = strstr(r.err, "custode: run ");
	if (!ASSERT_TRUE(p && sscanf(p, "custode: run %16[0-9a-f]", rid) == 1, "the run's id on stderr")) {
		ktest_log("%s", r.err);
		goto out;
	}
	/* the daemon publishes from its loop: give it a moment */
	for (int tries = 0; tries < 50 && !found; tries++) {
		char *save = NULL;

		events(&e, rid, true);
		for (char *l = strtok_r(e.out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			json_t *o = json_loads(l, 0, NULL);
			char err[256] = "";

			if (!o)
				continue;
			if (!strcmp(json_string_value(json_object_get(o, "type")) ?: "", "dns")) {
				dns_lines++;
				if (!ASSERT_EQ(custode_schema_validate(schema, o, err, sizeof(err)), 0, "valid against the schema"))
					ktest_log("%s: %s", l, err);
				if (!found && !strcmp(json_string_value(json_object_get(json_object_get(o, "dns"), "name")) ?: "",
						      "other.test"))
					found = json_incref(o);
			}
			json_decref(o);
		}
		if (!found) {
			dns_lines = 0;
			usleep(100000);
		}
	}
	if (ASSERT_TRUE(found != NULL, "the refusal is in the stream")) {
		json_t *d = json_object_get(found, "dns");

		ASSERT_STREQ(json_string_value(json_object_get(found, "reason")), "dns.name.denied", "reason");
		ASSERT_STREQ(json_string_value(json_object_get(found, "run_id")), rid, "the run");
		ASSERT_STREQ(json_string_value(json_object_get(found, "source")), "resolver", "source");
		ASSERT_STREQ(json_string_value(json_object_get(d, "decision")), "denied", "decision");
		ASSERT_STREQ(json_string_value(json_object_get(d, "qtype")), "A", "query type");
		ASSERT_STREQ(json_string_value(json_object_get(d, "proto")), "udp", "protocol");
		ASSERT_EQ(json_integer_value(json_object_get(d, "rcode")), 5, "REFUSED");
		ASSERT_TRUE(json_is_true(json_object_get(found, "enforced")), "enforced");
	}
	ASSERT_EQ(dns_lines, 1, "one record for the one refused query");
	/* a granted name: no record */
	{
		char receipt[400];
		json_t *rc;

		snprintf(receipt, sizeof(receipt), "%s/receipt.json", f.d.root);
		dns_run(&r, pol, DARGS("--receipt", receipt), DARGS("query", "8.8.8.8", "53", "udp", "ok.test", "A"));
		rc = json_load_file(receipt, 0, NULL);
		snprintf(rid2, sizeof(rid2), "%s", json_string_value(json_object_get(rc, "run_id")) ?: "");
		json_decref(rc);
	}
	ASSERT_CONTAINS(r.out, "rcode NOERROR", "the granted name resolves");
	if (ASSERT_TRUE(strlen(rid2) == 16, "the second run's id (receipt)")) {
		/*
		 * an absence needs a barrier: the resolver reports in order, so once a
		 * later run's refusal is in the stream, a record of the granted query
		 * would be there too
		 */
		char rid3[17] = "";
		bool barrier = false;

		dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "other.test", "A"));
		p = strstr(r.err, "custode: run ");
		if (p && sscanf(p, "custode: run %16[0-9a-f]", rid3) == 1)
			barrier = wait_dns_record(rid3, "other.test", 30000);
		if (!barrier)
			ktest_log("the barrier (a later refusal, run %s) is not in the stream: %s", rid3, r.err);
		events(&e, rid2, true);
		ASSERT_STREQ(e.out, "", "no record for a granted name");
	}
	/* the human format */
	events(&e, rid, false);
	ASSERT_CONTAINS(e.out, "dns dns.name.denied denied other.test/A", "the human line");
out:
	json_decref(found);
	json_decref(schema);
	dns_teardown(&f);
}
