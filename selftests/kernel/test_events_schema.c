// SPDX-License-Identifier: Apache-2.0
/*
 * `custode events --json` against docs/events.schema.json: every record kind
 * the engine and the daemon write — file, network and task decisions,
 * kernel and daemon throttle records, dropped records — read through the
 * daemon and straight from the ring buffer, each line validated by the
 * schema validator (selftests/lib/schema.c). Control: the validator
 * rejects records that break the schema.
 */
#include "schema.h"
#include "test_daemon_fixture.h"

static json_t *load_schema(void)
{
	char path[PATH_MAX], *slash;
	json_error_t err;
	json_t *s;

	if (!realpath(ktest_custode(), path)) /* <repo>/build/custode */
		return NULL;
	slash = strrchr(path, '/');
	if (!slash)
		return NULL;
	*slash = 0; /* <repo>/build */
	slash = strrchr(path, '/');
	if (!slash)
		return NULL;
	snprintf(slash, sizeof(path) - (size_t)(slash - path), "/docs/events.schema.json");
	s = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
	if (!s)
		ktest_log("%s: %s", path, err.text);
	return s;
}

/* Count a record's kind: file, network, task decisions; kernel, daemon throttle records; dropped records. */
static void count_kind(const json_t *o, int *kinds)
{
	const char *type = json_string_value(json_object_get(o, "type"));

	if (!type)
		return;
	if (!strcmp(type, "decision")) {
		kinds[0] += json_object_get(o, "file") != NULL;
		kinds[1] += json_object_get(o, "net") != NULL;
		kinds[2] += json_object_get(o, "task") != NULL;
	} else if (!strcmp(type, "throttle")) {
		kinds[!strcmp(json_string_value(json_object_get(o, "source")) ?: "", "kernel") ? 3 : 4]++;
	} else if (!strcmp(type, "dropped")) {
		kinds[5]++;
	}
}

/* Validate each line; count the kinds seen. Returns the number of invalid lines. */
static int validate_lines(const json_t *schema, char *text, int *kinds)
{
	int bad = 0;

	for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		json_t *o = json_loads(line, JSON_REJECT_DUPLICATES, NULL);
		char err[512];

		if (!o || custode_schema_validate(schema, o, err, sizeof(err)) < 0) {
			ktest_log("invalid record: %s\n      %s", o ? err : "not JSON", line);
			bad++;
			json_decref(o);
			continue;
		}
		count_kind(o, kinds);
		json_decref(o);
	}
	return bad;
}

/* The stream (through the daemon) holds every kind the test writes: file, network, task decisions; both throttle records. */
static bool every_kind(json_t *evs, void *arg)
{
	int kinds[6] = {0};
	size_t i;
	json_t *e;

	(void)arg;
	json_array_foreach(evs, i, e)
		count_kind(e, kinds);
	return kinds[0] && kinds[1] && kinds[2] && kinds[3] && kinds[4];
}

KTEST(events_json_validates_against_schema)
{
	static const char *const extra[] = {"--throttle", "2/1", NULL};
	struct dfix f;
	struct ktest_proc a = {0};
	char cg[PATH_MAX], rid[17] = "";
	struct ktest_result r;
	json_t *schema = load_schema(), *resp;
	int kinds[6] = {0};
	pid_t host = -1;

	cg[0] = 0;
	ktest_need_lsm();
	if (!ASSERT_TRUE(schema != NULL, "docs/events.schema.json loads") || !df_setup(&f) ||
	    !ASSERT_TRUE(df_daemon_start(&f, extra), "daemon"))
		goto out;
	host = fork();
	if (host == 0) {
		if (setgid(NOBODY) || setuid(NOBODY))
			_exit(1);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	snprintf(cg, sizeof(cg), "%s/ktest-schema-%d", f.cgmount, (int)getpid());
	if (!ASSERT_TRUE(df_cg_make(cg) && df_probe(cg, &a), "probe"))
		goto out;
	resp = df_call(json_pack("{s:s, s:s, s:s, s:s}", "cmd", "attach", "cgroup", cg, "profile", "read", "workspace",
				 f.d.ws));
	if (!ASSERT_TRUE(resp != NULL, "attach"))
		goto out;
	snprintf(rid, sizeof(rid), "%s", json_string_value(json_object_get(json_object_get(resp, "run"), "run_id")));
	json_decref(resp);
	/*
	 * file records: 5 denials in one window (2 recorded), then a kernel throttle
	 * record in the next — the daemon held still meanwhile, or its own summary of
	 * the quiet window would come first (and the kernel's would then add nothing)
	 */
	kill(f.pid, SIGSTOP);
	/* in one request: five asks could straddle the 1 s window on a loaded host */
	df_ask(&a, "flood 5 %s", f.d.outside);
	usleep(1200000);
	df_ask(&a, "open %s", f.d.outside);
	kill(f.pid, SIGCONT);
	/* task records */
	df_ask(&a, "kill %d 0", (int)host);
	/* a daemon throttle record: suppressed denials, then quiet */
	df_ask(&a, "flood 5 /proc/%d/status", (int)host);
	/* a network record, from a launched net-only run (the probe's read profile has no network grant either) */
	{
		char *argv[] = {(char *)ktest_custode(), "run", "--profile", "net-only", "--", (char *)ktest_tprobe(), "connect",
				"198.51.100.7", "80", NULL};

		ktest_run(argv, -1, 60000, &r);
		ASSERT_CONTAINS(r.out, "EPERM", "connect denied");
	}
	/*
	 * the daemon publishes them from its loop, its own throttle record once
	 * the /proc window has passed quietly: until every kind is there, or a
	 * hang detector's timeout
	 */
	json_decref(df_events_until(NULL, every_kind, NULL, 30000));
	{
		char *argv[] = {(char *)ktest_custode(), "events", "--json", NULL};

		ktest_run(argv, -1, 60000, &r);
		if (!ASSERT_EQ(r.code, 0, "custode events --json (through the daemon)"))
			goto out;
		ASSERT_EQ(validate_lines(schema, r.out, kinds), 0, "every line validates");
		ASSERT_TRUE(kinds[0] > 0, "file decisions");
		ASSERT_TRUE(kinds[1] > 0, "network decisions");
		ASSERT_TRUE(kinds[2] > 0, "task decisions");
		ASSERT_TRUE(kinds[3] > 0, "kernel throttle records");
		ASSERT_TRUE(kinds[4] > 0, "daemon throttle records");
	}
	/* the human format and the filters */
	{
		char *argv[] = {(char *)ktest_custode(), "events", "--run", rid, "--reason", "file.*", "--since", "1h", NULL};

		ktest_run(argv, -1, 60000, &r);
		ASSERT_EQ(r.code, 0, "custode events --run --reason --since");
		ASSERT_CONTAINS(r.out, "file.read.denied", "file records");
		ASSERT_CONTAINS(r.out, "policy=builtin/read@1", "the policy, by name and version");
		ASSERT_TRUE(strstr(r.out, "process.signal.denied") == NULL, "--reason filters");
		ASSERT_CONTAINS(r.out, "throttled", "throttle records in the human format");
	}
	{
		char *argv[] = {(char *)ktest_custode(), "events", "--since", "2030-01-01T00:00:00Z", NULL};

		ktest_run(argv, -1, 60000, &r);
		ASSERT_EQ(r.code, 0, "--since in the future");
		ASSERT_STREQ(r.out, "", "nothing");
	}
	json_decref(df_call(json_pack("{s:s, s:s}", "cmd", "detach", "run_id", rid)));
	rid[0] = 0;
	kt_stop(&f.pid, SIGTERM);

	/* no daemon: straight from the ring buffer, the same schema */
	{
		char *argv[] = {(char *)ktest_custode(), "run", "--profile", "read", "--workspace", f.d.ws, "--",
				(char *)df_aprobe(), "flood", "3", f.d.outside, NULL};
		char *ev[] = {(char *)ktest_custode(), "events", "--json", NULL};
		int k2[6] = {0};

		ktest_run(argv, -1, 60000, &r);
		ktest_run(ev, -1, 60000, &r);
		ASSERT_EQ(r.code, 0, "custode events --json (ring buffer)");
		ASSERT_EQ(validate_lines(schema, r.out, k2), 0, "every line validates");
		ASSERT_TRUE(k2[0] >= 3, "the run's file decisions");
	}

	/* control: records that break the contract are rejected */
	{
		static const char *const broken[] = {
			/* no reason */
			"{\"version\":2,\"type\":\"decision\",\"seq\":1,\"time\":\"2026-01-01T00:00:00.000000Z\",\"boot_ns\":1,"
			"\"run_id\":\"0123456789abcdef\",\"cgroup_id\":1,\"hook\":\"file_open\",\"enforced\":true,\"pid\":1,"
			"\"tgid\":1,\"uid\":0,\"gid\":0,\"comm\":\"x\",\"ruleset\":1}",
			/* an unknown field */
			"{\"version\":2,\"type\":\"dropped\",\"source\":\"daemon\",\"time\":\"2026-01-01T00:00:00.000000Z\","
			"\"count\":1,\"total\":1,\"per_cpu\":[1],\"extra\":1}",
			/* a run id that is not 16 hex digits */
			"{\"version\":2,\"type\":\"throttle\",\"source\":\"daemon\",\"time\":\"2026-01-01T00:00:00.000000Z\","
			"\"run_id\":\"XYZ\",\"policy\":{\"version\":1},\"reason\":\"file.read.denied\",\"throttle\":{\"count\":1,"
			"\"total\":1,\"since\":\"2026-01-01T00:00:00.000000Z\",\"run_cgid\":1}}",
			/* a time without microseconds */
			"{\"version\":2,\"type\":\"dropped\",\"source\":\"daemon\",\"time\":\"2026-01-01T00:00:00Z\","
			"\"count\":1,\"total\":1,\"per_cpu\":[1]}",
			NULL};

		for (int i = 0; broken[i]; i++) {
			json_t *o = json_loads(broken[i], 0, NULL);
			char err[512];

			ASSERT_TRUE(o && custode_schema_validate(schema, o, err, sizeof(err)) == -EINVAL, "a broken record is rejected");
			json_decref(o);
		}
	}
out:
	if (rid[0])
		json_decref(df_call(json_pack("{s:s, s:s}", "cmd", "detach", "run_id", rid)));
	df_probe_end(&a);
	if (cg[0])
		df_cg_remove(cg);
	if (host > 0) {
		kill(host, SIGKILL);
		waitpid(host, NULL, 0);
	}
	kt_stop(&f.pid, SIGTERM);
	json_decref(schema);
}
