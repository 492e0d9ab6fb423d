// SPDX-License-Identifier: Apache-2.0
/*
 * The daemon's counters include every run (userspace/daemon/snapshot.c,
 * userspace/state/ended.c): a run that ends between two snapshots is counted
 * from the totals its unregistration wrote; the totals survive a daemon
 * restart; no counter ever goes down or counts a run twice. A service
 * without the engine (no BPF): its tables of live runs filled by hand, the
 * totals file in a temporary directory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <criterion/criterion.h>

#include "daemon/service_impl.h"
#include "daemon/stream.h"
#include "state/ended.h"
#include "util/fsutil.h"
#include "util/reasons.h"

struct custode_stream *custode_test_stream_history(size_t n);

static char dir[] = "/tmp/custode-ended-XXXXXX";
static char path[128];

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ended-totals.json", dir);
}

static void teardown(void)
{
	custode_rm_rf(dir);
	memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
}

TestSuite(daemon_totals, .init = setup, .fini = teardown);

static struct custode_service *service(void)
{
	const struct custode_table_spec runs = {
		.key_size = sizeof(__u64), .val_size = sizeof(struct runrec), .slots = RUNS_SLOTS, .max = RUNS_SLOTS / 4 * 3};
	const struct custode_table_spec dns = {.key_size = sizeof(__u64), .val_size = sizeof(struct custode_dns_counters),
					       .slots = DNS_SLOTS, .max = DNS_SLOTS / 4 * 3};
	struct custode_service_opts o = {.ended_file = path};
	struct custode_service *v;

	cr_assert_eq(custode_service_new(NULL, NULL, custode_test_stream_history(0), &o, &v), 0);
	cr_assert_eq(custode_table_init(&v->runs, &runs), 0);
	cr_assert_eq(custode_table_init(&v->dns, &dns), 0);
	return v;
}

/* The service and its stream (the daemon closes them apart). */
static void service_free(struct custode_service *v)
{
	struct custode_stream *s = v->stream;

	custode_service_free(v);
	custode_stream_close(s);
}

/* A snapshot as service_snapshot takes it: the totals file first, then the live runs already in the tables. */
static void snapshot(struct custode_service *v)
{
	json_t *ended;

	cr_assert_eq(custode_ended_load(path, &ended), 0);
	service_totals(v, ended);
	json_decref(ended);
}

static void live_run(struct custode_service *v, __u64 cgid, const char *policy, int reason, __u64 n)
{
	struct runrec *r;
	void *val;

	if (!(r = custode_table_find(&v->runs, &cgid))) {
		cr_assert_geq(custode_table_insert(&v->runs, &cgid, &val), 0);
		r = val;
		snprintf(r->policy, sizeof(r->policy), "%s", policy);
	}
	r->c.denials[reason] = n;
}

/* A run's end as the engine's unregistration records it. */
static void ended_run(const char *policy, int reason, __u64 n)
{
	struct custode_counters c = {0};

	c.denials[reason] = n;
	cr_assert_eq(custode_ended_add(path, policy, &c, NULL), 0);
}

/* The value of custode_denials_total{policy, reason}, or -1 when absent. */
static double denials(struct custode_service *v, const char *policy, const char *reason)
{
	char *text = custode_service_metrics(v), want[256], *at;
	double val = -1;

	cr_assert_not_null(text);
	snprintf(want, sizeof(want), "custode_denials_total{policy=\"%s\",reason=\"%s\"} ", policy, reason);
	if ((at = strstr(text, want)))
		val = strtod(at + strlen(want), NULL);
	free(text);
	return val;
}

static double metric(struct custode_service *v, const char *line_start)
{
	char *text = custode_service_metrics(v), *at;
	double val = -1;

	cr_assert_not_null(text);
	if ((at = strstr(text, line_start)))
		val = strtod(at + strlen(line_start), NULL);
	free(text);
	return val;
}

Test(daemon_totals, a_run_between_two_snapshots_is_counted)
{
	struct custode_service *v = service();

	snapshot(v);
	cr_expect_eq(denials(v, "agents/x", "file.read.denied"), -1);
	/* registered, denied 3 times, unregistered: all between two snapshots */
	ended_run("agents/x", CUSTODE_REASON_FILE_READ_DENIED, 3);
	snapshot(v);
	cr_expect_eq(denials(v, "agents/x", "file.read.denied"), 3);
	service_free(v);
}

Test(daemon_totals, live_and_ended_runs_add_up_once)
{
	struct custode_service *v = service();

	live_run(v, 10, "agents/x", CUSTODE_REASON_FILE_READ_DENIED, 5);
	ended_run("agents/x", CUSTODE_REASON_FILE_READ_DENIED, 2);
	snapshot(v);
	cr_expect_eq(denials(v, "agents/x", "file.read.denied"), 7);
	/* the run is unregistered: gone from the runs, not yet in the totals */
	custode_table_delete(&v->runs, &(__u64){10});
	snapshot(v);
	cr_expect_eq(denials(v, "agents/x", "file.read.denied"), 7, "a counter never goes down");
	/* its final count (one more denial since the last snapshot) reaches the totals */
	ended_run("agents/x", CUSTODE_REASON_FILE_READ_DENIED, 6);
	snapshot(v);
	cr_expect_eq(denials(v, "agents/x", "file.read.denied"), 8, "counted once, with its last denial");
	service_free(v);
}

Test(daemon_totals, a_restart_keeps_the_totals)
{
	struct custode_service *v = service();

	ended_run("agents/x", CUSTODE_REASON_NET_EGRESS_DENIED, 4);
	ended_run("builtin/read", CUSTODE_REASON_FILE_READ_DENIED, 1);
	snapshot(v);
	cr_expect_eq(denials(v, "agents/x", "net.egress.denied"), 4);
	service_free(v);
	v = service(); /* the next daemon */
	snapshot(v);
	cr_expect_eq(denials(v, "agents/x", "net.egress.denied"), 4);
	cr_expect_eq(denials(v, "builtin/read", "file.read.denied"), 1);
	service_free(v);
}

Test(daemon_totals, resolver_counts_of_ended_runs_kept)
{
	struct custode_service *v = service();
	struct custode_dns_counters d = {.queries = 9, .answered = 7, .pins = 5};
	void *val;

	d.denials[0] = 2;
	cr_assert_geq(custode_table_insert(&v->dns, &(__u64){10}, &val), 0);
	*(struct custode_dns_counters *)val = d;
	snapshot(v);
	cr_expect_eq(metric(v, "\ncustode_resolver_queries_total "), 9);
	/* the resolver lets go of the run's counts; the snapshot adds them to the totals */
	custode_table_delete(&v->dns, &(__u64){10});
	cr_assert_eq(custode_ended_add(path, NULL, NULL, &d), 0);
	service_free(v);
	v = service();
	snapshot(v);
	cr_expect_eq(metric(v, "\ncustode_resolver_queries_total "), 9);
	cr_expect_eq(metric(v, "\ncustode_resolver_answered_total "), 7);
	cr_expect_eq(metric(v, "\ncustode_resolver_pins_total "), 5);
	cr_expect_eq(metric(v, "\ncustode_resolver_refusals_total{reason=\"dns.name.denied\"} "), 2);
	service_free(v);
}

Test(daemon_totals, policies_past_the_bound_are_counted_as_other)
{
	struct custode_counters c = {0};
	json_t *t = json_object();
	char name[32];

	c.denials[CUSTODE_REASON_FILE_READ_DENIED] = 1;
	for (int i = 0; i < CUSTODE_ENDED_MAX_POLICIES + 3; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		cr_assert_eq(custode_ended_fold(t, name, &c, NULL), 0);
	}
	cr_expect_eq(json_object_size(json_object_get(t, "denials")), CUSTODE_ENDED_MAX_POLICIES + 1);
	cr_expect_eq(json_integer_value(json_object_get(
			     json_object_get(json_object_get(t, "denials"), CUSTODE_ENDED_OTHER), "file.read.denied")),
		     3);
	json_decref(t);
}

Test(daemon_totals, nothing_to_add_writes_nothing)
{
	struct custode_counters c = {0};

	cr_assert_eq(custode_ended_add(path, "agents/x", &c, NULL), 0);
	cr_expect_eq(access(path, F_OK), -1, "a run without denials costs no write");
}
