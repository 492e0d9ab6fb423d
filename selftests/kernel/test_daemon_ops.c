// SPDX-License-Identifier: Apache-2.0
/*
 * The daemon as an operator meets it:
 *  - a restart under keys that no longer verify an attached run's bundle:
 *    the run is reported (policy.unverified) and stays on its last good policy;
 *  - a stdout nobody reads and a rotating events file: enforcement and the
 *    daemon go on, stdout loses lines (counted), the file rotates whole lines;
 *  - `custode events --follow` through the daemon, with --run and --reason.
 */
#include "test_daemon_fixture.h"
#include "util/time.h"

/* text is a time in the one form every output shows (docs/output.md); its second, or -1 */
static int64_t shown_time_sec(const json_t *text)
{
	const char *s = json_string_value(text);
	int64_t sec;

	if (!s || strlen(s) != 27 || custode_time_parse(s, CUSTODE_TIME_SHOW_DIGITS, &sec, NULL))
		return -1;
	return sec;
}

/* want, in that form, is text */
static bool shown_time(const json_t *text, int64_t want)
{
	return shown_time_sec(text) == want;
}

/* attach's bundle window and the daemon's start: RFC 3339 beside the deprecated Unix seconds */
static void check_shown_times(const json_t *attached)
{
	const json_t *pol = json_object_get(json_object_get(attached, "run"), "policy");
	json_t *st = df_call(json_pack("{s:s}", "cmd", "status"));
	const json_t *d = json_object_get(st, "daemon");

	ASSERT_TRUE(shown_time(json_object_get(pol, "not_before_time"),
			       json_integer_value(json_object_get(pol, "not_before"))), "attach: not_before_time");
	ASSERT_TRUE(shown_time(json_object_get(pol, "not_after_time"),
			       json_integer_value(json_object_get(pol, "not_after"))), "attach: not_after_time");
	ASSERT_TRUE(shown_time(json_object_get(d, "started_time"), json_integer_value(json_object_get(d, "started"))),
		    "status: daemon.started_time");
	json_decref(st);
}

KTEST(daemon_restart_unverified_policy_keeps_last_good)
{
	struct dfix f;
	struct ktest_proc a = {.pid = 0};
	char cg[PATH_MAX], bundle[400], pub1[400], pub2[400], name[64], rid[17] = "", needle[128], dir[400];
	/* --trust comes with a --bundles directory (empty here: the run's bundle is attached by file) */
	const char *extra1[] = {"--bundles", dir, "--trust", pub1, "--bundle-state", f.d.root, NULL};
	const char *extra2[] = {"--bundles", dir, "--trust", pub2, "--bundle-state", f.d.root, NULL};
	json_t *resp, *run;

	ktest_need_lsm();
	cg[0] = 0;
	if (!df_setup(&f))
		return;
	snprintf(bundle, sizeof(bundle), "%s/policy.dsse.json", f.d.root);
	snprintf(dir, sizeof(dir), "%s/bundles", f.d.root);
	if (!ASSERT_EQ(mkdir(dir, 0755), 0, "bundles dir"))
		return;
	snprintf(pub1, sizeof(pub1), "%s/key1.pub", f.d.root);
	snprintf(pub2, sizeof(pub2), "%s/key2.pub", f.d.root);
	snprintf(name, sizeof(name), "test/unverified-%d", (int)getpid());
	if (!ASSERT_TRUE(df_keygen(&f, "key1") && df_keygen(&f, "key2"), "two keys") ||
	    !ASSERT_TRUE(df_sign(&f, "key1", df_read_policy(name, 2, NULL), bundle), "a bundle signed with key1"))
		return;
	if (!ASSERT_TRUE(df_daemon_start(&f, extra1), "daemon trusting key1"))
		return;
	snprintf(cg, sizeof(cg), "%s/ktest-unverified-%d", f.cgmount, (int)getpid());
	if (!ASSERT_TRUE(df_cg_make(cg) && df_probe(cg, &a), "probe"))
		goto out;
	resp = df_call(json_pack("{s:s, s:s, s:s, s:s}", "cmd", "attach", "cgroup", cg, "bundle", bundle, "workspace",
				 f.d.ws));
	if (!ASSERT_TRUE(resp != NULL, "attach --bundle"))
		goto out;
	check_shown_times(resp);
	snprintf(rid, sizeof(rid), "%s", json_string_value(json_object_get(json_object_get(resp, "run"), "run_id")));
	json_decref(resp);
	ASSERT_STREQ(df_ask(&a, "open %s", f.d.outside), "EACCES", "denied under the bundle's policy");
	ASSERT_STREQ(df_ask(&a, "open %s", f.d.ws_file), "ok", "the bundle grants the workspace");

	/* the daemon dies; it comes back trusting only key2: the run's bundle no longer verifies */
	kt_stop(&f.pid, SIGKILL);
	ASSERT_STREQ(df_ask(&a, "open %s", f.d.outside), "EACCES", "denied while no daemon runs");
	if (!ASSERT_TRUE(df_daemon_start(&f, extra2), "daemon trusting key2 only"))
		goto out;
	snprintf(needle, sizeof(needle), "unverified run %s", rid);
	ASSERT_CONTAINS(kt_slurp(f.err), needle, "the run is reported at start");
	ASSERT_CONTAINS(kt_slurp(f.err), "policy.unverified", "with its reason code");
	run = df_run(rid);
	if (ASSERT_TRUE(run != NULL, "still registered")) {
		json_t *pol = json_object_get(run, "policy");

		ASSERT_TRUE(json_is_false(json_object_get(pol, "verified")), "runs: verified false");
		ASSERT_TRUE(json_string_length(json_object_get(pol, "unverified")) > 0, "runs: why");
		ASSERT_EQ(json_integer_value(json_object_get(pol, "version")), 2, "the last good version");
		ASSERT_STREQ(json_string_value(json_object_get(pol, "name")), name, "the policy's name");
		ASSERT_TRUE(shown_time_sec(json_object_get(run, "started")) > 0, "runs: started in the one time form");
		json_decref(run);
	}
	/* the last good policy still holds, both ways */
	ASSERT_STREQ(df_ask(&a, "open %s", f.d.outside), "EACCES", "still denied");
	ASSERT_STREQ(df_ask(&a, "open %s", f.d.ws_file), "ok", "still the same policy: the workspace is readable");
	run = df_run(rid);
	if (run) {
		ASSERT_EQ(df_denials(run, "file.read.denied"), 3, "counts carried across the restart");
		json_decref(run);
	}
	/* and this daemon does not accept that bundle for a new run */
	{
		char cg2[PATH_MAX + 8];
		const char *why;

		snprintf(cg2, sizeof(cg2), "%s-2", cg);
		if (ASSERT_TRUE(df_cg_make(cg2), "second cgroup")) {
			why = df_refusal(json_pack("{s:s, s:s, s:s}", "cmd", "attach", "cgroup", cg2, "bundle", bundle));
			ASSERT_TRUE(why[0] != 0, "a bundle the daemon's keys don't verify is refused");
			ASSERT_CONTAINS(why, "bundle.", "with a bundle reason code");
			rmdir(cg2);
		}
	}
out:
	if (rid[0])
		json_decref(df_call(json_pack("{s:s, s:s}", "cmd", "detach", "run_id", rid)));
	df_probe_end(&a);
	if (cg[0])
		df_cg_remove(cg);
	kt_stop(&f.pid, SIGTERM);
}

/* Every line of path is a JSON object with a "type"; the decisions' seq numbers, in order, appended to seqs. */
static long check_lines(const char *path, long long *seqs, long *n, long max, long *bad)
{
	FILE *fp = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	long lines = 0;

	if (!fp)
		return -1;
	while (getline(&line, &cap, fp) > 0) {
		json_t *o = json_loads(line, 0, NULL);

		lines++;
		if (!o || !json_is_string(json_object_get(o, "type")) || line[strlen(line) - 1] != '\n') {
			(*bad)++;
		} else if (!strcmp(json_string_value(json_object_get(o, "type")), "decision") && *n < max) {
			seqs[(*n)++] = json_integer_value(json_object_get(o, "seq"));
		}
		json_decref(o);
	}
	free(line);
	fclose(fp);
	return lines;
}

KTEST(daemon_stream_sink_never_blocks_and_file_rotates)
{
	static long long seqs[200000];
	struct dfix f;
	struct ktest_result r;
	char evfile[400], rot[420], count[32];
	int out[2] = {-1, -1};
	long n = 0, bad = 0;
	long long stdout_dropped = 0, rotations = 0;
	json_t *st;

	ktest_need_lsm();
	if (!df_setup(&f))
		return;
	snprintf(evfile, sizeof(evfile), "%s/events.jsonl", f.d.root);
	/* stdout: a pipe this test never reads */
	if (!ASSERT_EQ(pipe(out), 0, "pipe"))
		return;
	{
		char *argv[] = {(char *)ktest_custode(), "daemon", "--no-resolver", "--no-throttle", "--events-file", evfile,
				"--events-file-max", "64K", "--events-file-keep", "3", NULL};

		f.pid = fork();
		if (f.pid == 0) {
			int e = open(f.err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			int z = open("/dev/null", O_RDONLY);

			prctl(PR_SET_PDEATHSIG, SIGTERM);
			dup2(z, 0);
			dup2(out[1], 1);
			dup2(e, 2);
			close(out[0]);
			execv(argv[0], argv);
			_exit(98);
		}
		close(out[1]);
		if (!ASSERT_TRUE(kt_wait_for(f.err, "custode daemon: ready", f.pid, 60000), "daemon ready")) {
			ktest_log("%s", kt_slurp(f.err));
			goto out;
		}
	}
	snprintf(count, sizeof(count), "%d", 20000);
	{
		char *argv[] = {(char *)ktest_custode(), "run", "--profile", "read", "--workspace", f.d.ws,
				"--", (char *)df_aprobe(), "flood", count, f.d.outside, NULL};

		ktest_run(argv, -1, 600000, &r);
	}
	ASSERT_EQ(r.code, 0, "the run ends normally: enforcement never waits for a sink");
	ASSERT_CONTAINS(r.out, "denied 20000 ok 0", "every open denied");
	/*
	 * the daemon drains the ring buffer: until its stream has taken every one
	 * of the 20000 denials (a record, or one the full ring buffer lost and
	 * the stream reported), or a hang detector's timeout
	 */
	{
		long end = kt_ms() + ktest_slack(60000);

		for (;;) {
			json_t *s;

			st = df_call(json_pack("{s:s}", "cmd", "status"));
			s = json_object_get(st, "stream");
			if (!st || json_integer_value(json_object_get(s, "records")) +
						   json_integer_value(json_object_get(s, "dropped")) +
						   json_integer_value(json_object_get(s, "bad")) >=
					   20000 ||
			    kt_ms() >= end)
				break;
			json_decref(st);
			usleep(200000);
		}
	}
	if (ASSERT_TRUE(st != NULL, "the daemon answers with its stdout full")) {
		json_t *s = json_object_get(st, "stream");

		stdout_dropped = json_integer_value(json_object_get(s, "stdout_dropped"));
		rotations = json_integer_value(json_object_get(s, "file_rotations"));
		ktest_log("stream: %lld records, stdout dropped %lld, file rotations %lld, ring buffer drops %lld",
			  (long long)json_integer_value(json_object_get(s, "records")), stdout_dropped, rotations,
			  (long long)json_integer_value(json_object_get(json_object_get(st, "engine"), "events_dropped")));
		ASSERT_TRUE(stdout_dropped > 0, "the unread stdout lost lines, counted");
		ASSERT_TRUE(rotations >= 4, "the events file rotated");
		ASSERT_EQ(json_integer_value(json_object_get(s, "file_dropped")), 0, "the file lost nothing");
		json_decref(st);
	}
	{
		json_t *m = df_call(json_pack("{s:s}", "cmd", "metrics"));
		const char *text = json_string_value(json_object_get(m, "text"));

		ASSERT_CONTAINS(text, "custode_stream_sink_dropped_total{sink=\"stdout\"}", "the metric");
		ASSERT_TRUE(text && !strstr(text, "custode_stream_sink_dropped_total{sink=\"stdout\"} 0\n"),
			    "and it is not zero");
		json_decref(m);
	}
	/* PATH.3 (oldest) .. PATH.1, PATH: whole JSON lines, bounded sizes, seq increasing across them */
	for (int k = 3; k >= 0; k--) {
		struct stat sb;
		long lines;

		if (k)
			snprintf(rot, sizeof(rot), "%s.%d", evfile, k);
		else
			snprintf(rot, sizeof(rot), "%s", evfile);
		lines = check_lines(rot, seqs, &n, 200000, &bad);
		if (!ASSERT_TRUE(lines >= 0, "the rotated file exists"))
			ktest_log("missing: %s", rot);
		if (k && stat(rot, &sb) == 0)
			ASSERT_TRUE(sb.st_size <= 65536 + 8192, "a rotated file stays near its maximum");
		if (k && lines >= 0)
			ASSERT_TRUE(lines > 10, "a rotated file holds records");
	}
	snprintf(rot, sizeof(rot), "%s.4", evfile);
	ASSERT_TRUE(access(rot, F_OK) < 0, "--events-file-keep 3: no PATH.4");
	ASSERT_EQ(bad, 0, "every line is a whole JSON record");
	{
		long inversions = 0;

		for (long i = 1; i < n; i++)
			if (seqs[i] <= seqs[i - 1])
				inversions++;
		ASSERT_EQ(inversions, 0, "records in order across the rotated files");
		ASSERT_TRUE(n > 40, "decisions in the files");
	}
out:
	if (out[0] >= 0)
		close(out[0]);
	kt_stop(&f.pid, SIGTERM);
}

/* The next line of a follower, parsed (NULL on timeout). */
static json_t *next_event(struct ktest_proc *p)
{
	static char line[16384];

	if (!ktest_read_line(p->out, line, sizeof(line), 30000))
		return NULL;
	return json_loads(line, 0, NULL);
}

KTEST(events_follow_through_daemon)
{
	struct dfix f;
	struct ktest_proc a = {.pid = 0}, all = {.pid = 0}, proc = {.pid = 0};
	char cg[PATH_MAX], rid[17] = "";
	json_t *resp, *e;

	ktest_need_lsm();
	cg[0] = 0;
	if (!df_setup(&f) || !ASSERT_TRUE(df_daemon_start(&f, NULL), "daemon"))
		return;
	snprintf(cg, sizeof(cg), "%s/ktest-follow-%d", f.cgmount, (int)getpid());
	if (!ASSERT_TRUE(df_cg_make(cg) && df_probe(cg, &a), "probe"))
		goto out;
	resp = df_call(json_pack("{s:s, s:s, s:s, s:s}", "cmd", "attach", "cgroup", cg, "profile", "read", "workspace",
				 f.d.ws));
	if (!ASSERT_TRUE(resp != NULL, "attach"))
		goto out;
	snprintf(rid, sizeof(rid), "%s", json_string_value(json_object_get(json_object_get(resp, "run"), "run_id")));
	json_decref(resp);
	{
		char *argv1[] = {(char *)ktest_custode(), "events", "--follow", "--json", "--run", rid, NULL};
		char *argv2[] = {(char *)ktest_custode(), "events", "--follow", "--json", "--run", rid, "--reason", "file.proc.*",
				 NULL};

		if (!ASSERT_EQ(ktest_spawn(argv1, -1, &all), 0, "events --follow --run") ||
		    !ASSERT_EQ(ktest_spawn(argv2, -1, &proc), 0, "events --follow --run --reason"))
			goto out;
	}
	/* records made after the followers started: in their history part or followed live, never missed */
	ASSERT_STREQ(df_ask(&a, "open %s", f.d.outside), "EACCES", "a file denial");
	e = next_event(&all);
	if (ASSERT_TRUE(e != NULL, "the follower prints it")) {
		ASSERT_STREQ(json_string_value(json_object_get(e, "reason")), "file.read.denied", "reason");
		ASSERT_STREQ(json_string_value(json_object_get(e, "run_id")), rid, "run");
		ASSERT_STREQ(json_string_value(json_object_get(json_object_get(e, "file"), "path")), f.d.outside, "path");
		json_decref(e);
	}
	/* a second one, certainly after the follower caught up: followed live */
	ASSERT_STREQ(df_ask(&a, "open /proc/1/status"), "EACCES", "a /proc denial");
	e = next_event(&all);
	if (ASSERT_TRUE(e != NULL, "followed live")) {
		ASSERT_STREQ(json_string_value(json_object_get(e, "reason")), "file.proc.denied", "reason");
		json_decref(e);
	}
	/* the --reason follower skipped the file.read.denied record: its first line is the /proc one */
	e = next_event(&proc);
	if (ASSERT_TRUE(e != NULL, "the --reason follower prints")) {
		ASSERT_STREQ(json_string_value(json_object_get(e, "reason")), "file.proc.denied", "only its reason");
		json_decref(e);
	}
	ASSERT_TRUE(ktest_pid_alive(all.pid) && ktest_pid_alive(proc.pid), "followers keep following");
out:
	if (all.pid > 0)
		df_probe_end(&all);
	if (proc.pid > 0)
		df_probe_end(&proc);
	if (rid[0])
		json_decref(df_call(json_pack("{s:s, s:s}", "cmd", "detach", "run_id", rid)));
	df_probe_end(&a);
	if (cg[0])
		df_cg_remove(cg);
	kt_stop(&f.pid, SIGTERM);
}
