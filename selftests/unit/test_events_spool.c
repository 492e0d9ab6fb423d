// SPDX-License-Identifier: Apache-2.0
/*
 * Reading without the daemon (userspace/events/spool.c): a filtered read
 * never loses what it doesn't show. A fake ring buffer (a list of raw
 * records, consumed as the real one is) and a spool in a temporary
 * directory: what one read's filter refuses, a later read shows, oldest
 * first, before newer ring records; the spool's bound drops the oldest and
 * says how many; the daemon takes the whole spool.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <criterion/criterion.h>
#include <jansson.h>

#include "events/events.h"
#include "util/fsutil.h"
#include "util/reasons.h"

#define MAX_RECS 64

/* The fake ring buffer: records waiting, each handed once. */
struct fake_ring {
	struct custode_event ev[MAX_RECS];
	size_t n;
};

static int fake_drain(void *ctx, int (*fn)(void *arg, void *data, size_t size), void *arg)
{
	struct fake_ring *fr = ctx;
	size_t n = fr->n;

	for (size_t i = 0; i < n; i++)
		fn(arg, &fr->ev[i], sizeof(fr->ev[i]));
	fr->n = 0;
	return (int)n;
}

static void push(struct fake_ring *fr, unsigned seq, int reason, __u64 run_id)
{
	struct custode_event *ev = &fr->ev[fr->n++];

	memset(ev, 0, sizeof(*ev));
	ev->version = CUSTODE_EVENT_VERSION;
	ev->size = sizeof(*ev);
	ev->hook = CUSTODE_HOOK_FILE_OPEN;
	ev->reason = (__u16)reason;
	ev->flags = CUSTODE_EVENT_ENFORCED;
	ev->seq = seq;
	ev->boot_ns = 1000000000ull * seq;
	ev->run_id = run_id;
	memcpy(ev->comm, "t", 2);
}

/* What a read showed: the seq numbers, in order. */
struct shown {
	long seq[MAX_RECS];
	size_t n;
};

static void show(void *arg, const json_t *ev)
{
	struct shown *s = arg;

	s->seq[s->n++] = (long)json_integer_value(json_object_get(ev, "seq"));
}

static char dir[] = "/tmp/custode-spool-XXXXXX";
static char path[128];

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/events.spool", dir);
}

static void teardown(void)
{
	custode_rm_rf(dir);
	memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
}

TestSuite(events_spool, .init = setup, .fini = teardown);

static int read_once(struct fake_ring *fr, const struct custode_event_filter *f, struct shown *s,
		     struct custode_event_read *out)
{
	struct custode_event_source src = {fake_drain, fr};
	struct custode_event_read r = {.spool = path, .filter = f, .show = show, .arg = s, .max_kept = out->max_kept};
	int err;

	memset(s, 0, sizeof(*s));
	err = custode_event_read_once(&r, fr ? &src : NULL);
	*out = r;
	return err;
}

static void expect_seqs(const struct shown *s, const long *want, size_t n, const char *what)
{
	cr_expect_eq(s->n, n, "%s: %zu records shown, expected %zu", what, s->n, n);
	for (size_t i = 0; i < n && i < s->n; i++)
		cr_expect_eq(s->seq[i], want[i], "%s: record %zu is seq %ld, expected %ld", what, i, s->seq[i], want[i]);
}

Test(events_spool, a_filtered_read_keeps_what_it_does_not_show)
{
	struct fake_ring fr = {0};
	struct custode_event_filter f = {0};
	struct custode_event_read r = {0};
	struct shown s;

	push(&fr, 1, CUSTODE_REASON_FILE_READ_DENIED, 1);
	push(&fr, 2, CUSTODE_REASON_NET_EGRESS_DENIED, 1);
	push(&fr, 3, CUSTODE_REASON_FILE_READ_DENIED, 2);
	push(&fr, 4, CUSTODE_REASON_NET_EGRESS_DENIED, 2);
	snprintf(f.reason, sizeof(f.reason), "net.*");
	cr_assert_eq(read_once(&fr, &f, &s, &r), 0);
	expect_seqs(&s, (long[]){2, 4}, 2, "--reason net.*");
	cr_expect_eq(r.kept, 2);
	cr_expect_eq(fr.n, 0, "the ring buffer was drained");

	/* a later read without a filter shows the two it did not, and the spool is gone */
	cr_assert_eq(read_once(&fr, NULL, &s, &r), 0);
	expect_seqs(&s, (long[]){1, 3}, 2, "the next read");
	cr_expect_eq(r.kept, 0);
	cr_expect_eq(access(path, F_OK), -1, "an empty spool is removed");
	cr_assert_eq(read_once(&fr, NULL, &s, &r), 0);
	expect_seqs(&s, NULL, 0, "the third read");
}

Test(events_spool, run_filter_then_spool_first_in_order)
{
	struct fake_ring fr = {0};
	struct custode_event_filter f = {.has_run = true, .run_id = 7};
	struct custode_event_read r = {0};
	struct shown s;

	push(&fr, 1, CUSTODE_REASON_FILE_READ_DENIED, 5);
	push(&fr, 2, CUSTODE_REASON_FILE_READ_DENIED, 7);
	push(&fr, 3, CUSTODE_REASON_FILE_READ_DENIED, 6);
	cr_assert_eq(read_once(&fr, &f, &s, &r), 0);
	expect_seqs(&s, (long[]){2}, 1, "--run 7");

	/* another filtered read: it matches one spooled record, keeps the other */
	f.run_id = 6;
	push(&fr, 4, CUSTODE_REASON_FILE_READ_DENIED, 5);
	push(&fr, 5, CUSTODE_REASON_FILE_READ_DENIED, 6);
	cr_assert_eq(read_once(&fr, &f, &s, &r), 0);
	expect_seqs(&s, (long[]){3, 5}, 2, "--run 6: the spool's first, then the ring's");
	cr_expect_eq(r.kept, 2);

	/* --since: records without the time it asks are kept too */
	memset(&f, 0, sizeof(f));
	f.has_since = true;
	f.since_wall_ns = INT64_MAX;
	push(&fr, 6, CUSTODE_REASON_FILE_READ_DENIED, 5);
	cr_assert_eq(read_once(&fr, &f, &s, &r), 0);
	expect_seqs(&s, NULL, 0, "--since the future");
	cr_expect_eq(r.kept, 3);
	cr_assert_eq(read_once(&fr, NULL, &s, &r), 0);
	expect_seqs(&s, (long[]){1, 4, 6}, 3, "everything left, oldest first");
}

Test(events_spool, bounded_drops_the_oldest_and_says_so)
{
	struct fake_ring fr = {0};
	struct custode_event_filter f = {0};
	struct custode_event_read r = {.max_kept = 3};
	struct shown s;

	snprintf(f.reason, sizeof(f.reason), "net.egress.denied");
	for (unsigned i = 1; i <= 5; i++)
		push(&fr, i, CUSTODE_REASON_FILE_READ_DENIED, 1);
	cr_assert_eq(read_once(&fr, &f, &s, &r), 0);
	cr_expect_eq(r.kept, 3);
	cr_expect_eq(r.dropped, 2, "dropped and counted, never silent");
	r.max_kept = 3;
	cr_assert_eq(read_once(&fr, &f, &s, &r), 0);
	cr_expect_eq(r.dropped, 2, "still told to the next filtered reader");
	r.max_kept = 3;
	cr_assert_eq(read_once(&fr, NULL, &s, &r), 0);
	expect_seqs(&s, (long[]){3, 4, 5}, 3, "the newest three");
	cr_expect_eq(r.dropped, 2);
	r.max_kept = 3;
	cr_assert_eq(read_once(&fr, NULL, &s, &r), 0);
	cr_expect_eq(r.dropped, 0, "told once to a reader that saw everything");
	cr_expect_eq(access(path, F_OK), -1);
}

Test(events_spool, bad_records_are_counted_not_kept)
{
	struct fake_ring fr = {0};
	struct custode_event_read r = {0};
	struct shown s;

	push(&fr, 1, CUSTODE_REASON_FILE_READ_DENIED, 1);
	fr.ev[0].version = 99;
	push(&fr, 2, CUSTODE_REASON_FILE_READ_DENIED, 1);
	cr_assert_eq(read_once(&fr, NULL, &s, &r), 0);
	expect_seqs(&s, (long[]){2}, 1, "the good one");
	cr_expect_eq(r.bad, 1);
	cr_expect_eq(r.kept, 0);
}

static void collect(void *arg, const json_t *ev)
{
	show(arg, ev);
}

Test(events_spool, the_daemon_takes_the_whole_spool)
{
	struct fake_ring fr = {0};
	struct custode_event_filter f = {.has_run = true, .run_id = 9};
	struct custode_event_read r = {0};
	struct shown s, taken = {0};
	uint64_t dropped = 99;

	push(&fr, 1, CUSTODE_REASON_FILE_READ_DENIED, 1);
	push(&fr, 2, CUSTODE_REASON_NET_EGRESS_DENIED, 2);
	cr_assert_eq(read_once(&fr, &f, &s, &r), 0);
	cr_assert_eq(custode_event_spool_take(path, collect, &taken, &dropped), 2);
	expect_seqs(&taken, (long[]){1, 2}, 2, "taken");
	cr_expect_eq(dropped, 0);
	cr_expect_eq(access(path, F_OK), -1);
	cr_expect_eq(custode_event_spool_take(path, collect, &taken, &dropped), 0, "nothing left");
}

Test(events_spool, unwritable_spool_drains_nothing)
{
	struct fake_ring fr = {0};
	struct custode_event_read r = {0};
	struct shown s;

	push(&fr, 1, CUSTODE_REASON_FILE_READ_DENIED, 1);
	snprintf(path, sizeof(path), "%s/missing/events.spool", dir);
	cr_expect_eq(read_once(&fr, NULL, &s, &r), -ENOENT);
	cr_expect_eq(fr.n, 1, "the lock could not be taken: the ring buffer was not touched");
}
