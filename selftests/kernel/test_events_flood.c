// SPDX-License-Identifier: Apache-2.0
/*
 * A storm of denials from one run: 1,000,000 denied opens. The host stays
 * responsive; the stream carries a bounded number of records plus throttle
 * records; the counters are exact; and records + throttled + dropped adds up
 * to the exact count. Then the ring buffer is made to overflow (no
 * throttling, the daemon stopped): drops are counted per CPU and reported.
 */
#include "test_daemon_fixture.h"

#define FLOOD 1000000

struct tally {
	long long decisions, throttled, throttle_records, dropped, dropped_records;
};

static void tally(json_t *evs, const char *run_id, const char *path, struct tally *t)
{
	size_t i;
	json_t *e;

	memset(t, 0, sizeof(*t));
	json_array_foreach(evs, i, e) {
		const char *type = json_string_value(json_object_get(e, "type"));
		const char *rid = json_string_value(json_object_get(e, "run_id"));

		if (!strcmp(type, "dropped")) {
			t->dropped += json_integer_value(json_object_get(e, "count"));
			t->dropped_records++;
			continue;
		}
		if (!rid || strcmp(rid, run_id) || strcmp(json_string_value(json_object_get(e, "reason")), "file.read.denied"))
			continue;
		if (!strcmp(type, "throttle")) {
			t->throttled += json_integer_value(json_object_get(json_object_get(e, "throttle"), "count"));
			t->throttle_records++;
		} else if (!path || !strcmp(json_string_value(json_object_get(json_object_get(e, "file"), "path")), path)) {
			t->decisions++;
		}
	}
}

/* The stream accounts for all `want` denials of the run (records + throttled + dropped). */
struct accounted {
	const char *run_id, *path;
	long long want;
};

static bool accounted(json_t *evs, void *arg)
{
	const struct accounted *w = arg;
	struct tally t;

	tally(evs, w->run_id, w->path, &t);
	return t.decisions + t.throttled + t.dropped >= w->want;
}

/* The run's id and its exact file.read.denied count, from its receipt. */
static bool receipt(const char *path, char *run_id, long long *denied, long long *total)
{
	json_t *r = json_loads(kt_slurp(path), 0, NULL);
	bool ok = r != NULL;

	if (ok) {
		snprintf(run_id, 17, "%s", json_string_value(json_object_get(r, "run_id")));
		*denied = json_integer_value(json_object_get(json_object_get(json_object_get(r, "denials"), "by_reason"),
							     "file.read.denied"));
		*total = json_integer_value(json_object_get(json_object_get(r, "denials"), "total"));
	}
	json_decref(r);
	return ok;
}

KTEST(events_flood_throttled_exact_counts)
{
	static const char *const extra[] = {"--throttle", "100/10", "--history", "100000", NULL};
	struct dfix f;
	struct ktest_proc run;
	struct tally t;
	char rpath[400], count[32], line[256], rid[17] = "";
	long long denied = 0, total = 0, max_ping = 0, max_open = 0, pings = 0;
	long t0, elapsed;
	json_t *evs;
	int code;

	ktest_need_lsm();
	if (!df_setup(&f) || !ASSERT_TRUE(df_daemon_start(&f, extra), "daemon"))
		return;
	snprintf(rpath, sizeof(rpath), "%s/receipt.json", f.d.root);
	snprintf(count, sizeof(count), "%d", FLOOD);
	{
		char *argv[] = {(char *)ktest_custode(), "run", "--profile", "read", "--workspace", f.d.ws, "--receipt", rpath,
				"--", (char *)df_aprobe(), "flood", count, f.d.outside, NULL};

		if (!ASSERT_EQ(ktest_spawn(argv, -1, &run), 0, "flood run"))
			goto out;
	}
	ktest_close_stdin(&run);
	t0 = kt_ms();
	/* while the storm lasts: the daemon answers, and the host's own opens stay quick */
	code = -1;
	while (kt_ms() - t0 < 900000) {
		long a = kt_ms(), b;
		json_t *p;
		int st;

		if (waitpid(run.pid, &st, WNOHANG) == run.pid) {
			code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			break;
		}
		p = df_call(json_pack("{s:s}", "cmd", "ping"));
		b = kt_ms();
		if (!ASSERT_TRUE(p != NULL, "the daemon answers during the storm")) {
			ktest_log("daemon log: %s", kt_slurp(f.err));
			break;
		}
		if (b - a > max_ping)
			max_ping = b - a;
		json_decref(p);
		pings++;
		a = kt_ms();
		for (int i = 0; i < 100; i++) {
			int fd = open(f.d.outside, O_RDONLY);
			if (fd >= 0)
				close(fd);
		}
		b = kt_ms();
		if (b - a > max_open)
			max_open = b - a;
		usleep(500000);
	}
	elapsed = kt_ms() - t0;
	if (code < 0)
		code = ktest_wait(&run, 600000);
	ktest_read_line(run.out, line, sizeof(line), 5000);
	ktest_log("flood: %d denials in %ld ms; %lld pings, slowest %lld ms; 100 host opens, slowest %lld ms", FLOOD,
		  elapsed, pings, max_ping, max_open);
	ASSERT_EQ(code, 0, "the run ended normally");
	snprintf(count, sizeof(count), "denied %d ok 0 other 0", FLOOD);
	ASSERT_STREQ(line, count, "every open was denied");
	ASSERT_TRUE(max_ping < 5000, "the daemon stayed responsive (TCG guest: generous bound)");
	ASSERT_TRUE(max_open < 5000, "the host stayed responsive");
	if (!ASSERT_TRUE(receipt(rpath, rid, &denied, &total), "receipt"))
		goto out;
	ASSERT_EQ(denied, FLOOD, "the counter is exact");
	ASSERT_EQ(total, FLOOD, "and there is nothing else");

	/*
	 * the last window's suppressed denials are summarised once it is over
	 * (10 s after it began): until the stream accounts for every denial, or a
	 * hang detector's timeout
	 */
	{
		struct accounted w = {rid, NULL, FLOOD};

		evs = df_events_until(NULL, accounted, &w, 30000);
	}
	tally(evs, rid, NULL, &t);
	json_decref(evs);
	ktest_log("stream: %lld records, %lld throttle records covering %lld, %lld dropped", t.decisions,
		  t.throttle_records, t.throttled, t.dropped);
	ASSERT_EQ(t.decisions + t.throttled + t.dropped, FLOOD, "records + throttled + dropped = the exact count");
	ASSERT_TRUE(t.throttle_records >= 1, "throttle records");
	/* bounded: 100 per 10 s window (+ what CPUs racing a window's start may add) */
	ASSERT_TRUE(t.decisions <= 100 * (elapsed / 10000 + 3) + 16, "a bounded number of records");
	ASSERT_TRUE(t.throttle_records <= elapsed / 10000 + 3, "one throttle record per window");
out:
	ktest_proc_close(&run);
	kt_stop(&f.pid, SIGTERM);
}

KTEST(events_drops_counted_per_cpu)
{
	static const char *const extra[] = {"--no-throttle", "--history", "200000", NULL};
	struct dfix f;
	struct tally t;
	char rpath[400], rid[17] = "", count[32];
	long long denied = 0, total = 0, before = 0, after = 0, per_cpu = 0;
	struct ktest_result r;
	json_t *st, *evs, *e;
	size_t i;

	ktest_need_lsm();
	if (!df_setup(&f) || !ASSERT_TRUE(df_daemon_start(&f, extra), "daemon"))
		return;
	st = df_call(json_pack("{s:s}", "cmd", "status"));
	before = json_integer_value(json_object_get(json_object_get(st, "engine"), "events_dropped"));
	json_decref(st);
	snprintf(rpath, sizeof(rpath), "%s/receipt.json", f.d.root);
	snprintf(count, sizeof(count), "%d", 60000);
	/* the consumer stopped: the 4 MiB ring buffer holds about 25,000 records of this size */
	kill(f.pid, SIGSTOP);
	{
		char *argv[] = {(char *)ktest_custode(), "run", "--profile", "read", "--workspace", f.d.ws, "--receipt", rpath,
				"--", (char *)df_aprobe(), "flood", count, f.d.outside, NULL};

		ktest_run(argv, -1, 600000, &r);
	}
	kill(f.pid, SIGCONT);
	ASSERT_EQ(r.code, 0, "the run");
	ASSERT_CONTAINS(r.out, "denied 60000 ok 0", "every open denied");
	if (!ASSERT_TRUE(receipt(rpath, rid, &denied, &total), "receipt"))
		goto out;
	ASSERT_EQ(denied, 60000, "the counter is exact despite the drops");
	/*
	 * the daemon catches up and reports the drops: until the stream accounts
	 * for all 60000 denials (kept + the dropped record), or a hang detector's timeout
	 */
	{
		struct accounted w = {rid, f.d.outside, 60000};

		evs = df_events_until(NULL, accounted, &w, 30000);
	}
	st = df_call(json_pack("{s:s}", "cmd", "status"));
	after = json_integer_value(json_object_get(json_object_get(st, "engine"), "events_dropped"));
	json_decref(st);
	tally(evs, rid, f.d.outside, &t);
	json_array_foreach(evs, i, e)
		if (!strcmp(json_string_value(json_object_get(e, "type")), "dropped")) {
			json_t *c;
			size_t k;
			long long sum = 0;

			json_array_foreach(json_object_get(e, "per_cpu"), k, c) sum += json_integer_value(c);
			per_cpu = sum;
			ASSERT_EQ(json_integer_value(json_object_get(e, "total")), sum, "total = the sum of the per-CPU counts");
		}
	json_decref(evs);
	ktest_log("drops: %lld records kept, %lld dropped (engine: %lld -> %lld, per CPU sum %lld)", t.decisions, t.dropped,
		  before, after, per_cpu);
	ASSERT_TRUE(t.dropped > 0, "records were dropped");
	ASSERT_TRUE(t.decisions > 0, "records were kept");
	ASSERT_EQ(t.decisions + t.dropped, 60000, "kept + dropped = the exact count");
	ASSERT_EQ(after - before, t.dropped, "the stream reports every drop the engine counted");
	ASSERT_EQ(t.throttled, 0, "no throttling");
	/* metrics show the per-CPU counters too */
	{
		json_t *m = df_call(json_pack("{s:s}", "cmd", "metrics"));
		const char *text = json_string_value(json_object_get(m, "text"));

		ASSERT_CONTAINS(text, "custode_events_dropped_total{cpu=\"0\"}", "per-CPU drops in the metrics");
		json_decref(m);
	}
out:
	kt_stop(&f.pid, SIGTERM);
}
