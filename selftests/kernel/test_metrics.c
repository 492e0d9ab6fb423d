// SPDX-License-Identifier: Apache-2.0
/*
 * Metrics: the Prometheus text on a local endpoint and in a textfile —
 * denials by policy and reason (a live attached run and a launched run that
 * already ended), runs active, the bundle version and expiry of a policy
 * attached from the daemon's bundles, resolver counters, per-CPU ring-buffer
 * drops, map fill levels.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "test_daemon_fixture.h"

#define PORT 9464

static bool http_get(const char *path, char *out, size_t len)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(PORT), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	char req[256];
	size_t n = 0;
	ssize_t r;
	int s = socket(AF_INET, SOCK_STREAM, 0);

	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (s >= 0)
			close(s);
		return false;
	}
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n", path);
	if (write(s, req, strlen(req)) < 0) {
		close(s);
		return false;
	}
	while (n < len - 1 && (r = read(s, out + n, len - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = 0;
	close(s);
	return n > 0;
}

/* The value of a sample line "NAME{LABELS} VALUE" (exact labels), or -1. */
static double sample(const char *text, const char *name_labels)
{
	const char *p = text;
	size_t n = strlen(name_labels);

	while ((p = strstr(p, name_labels))) {
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return atof(p + n + 1);
		p += n;
	}
	return -1;
}

/* Every line is a comment (# HELP / # TYPE) or NAME[{...}] NUMBER. */
static int malformed_lines(char *text)
{
	int bad = 0;

	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *sp;

		if (!strncmp(l, "# HELP ", 7) || !strncmp(l, "# TYPE ", 7))
			continue;
		sp = strrchr(l, ' ');
		if (!sp || sp == l || strncmp(l, "custode_", 8) || (strchr(l, '{') && !strchr(l, '}'))) {
			ktest_log("malformed: %s", l);
			bad++;
			continue;
		}
		{
			char *end;
			strtod(sp + 1, &end);
			if (*end) {
				ktest_log("not a number: %s", l);
				bad++;
			}
		}
	}
	return bad;
}

/* A sample and the value a test waits for. */
struct want {
	const char *sample;
	double value;
};

/*
 * GET /metrics until every sample has its value (the daemon reads the
 * engine's counters every 2 s), or a hang detector's timeout (ktest_slack).
 */
static bool metrics_until(char *text, size_t len, const struct want *w, size_t n, int timeout_ms)
{
	long end = kt_ms() + ktest_slack(timeout_ms);

	for (;;) {
		size_t ok = 0;

		if (http_get("/metrics", text, len))
			while (ok < n && sample(text, w[ok].sample) == w[ok].value)
				ok++;
		if (ok == n)
			return true;
		if (kt_ms() >= end)
			return false;
		usleep(200000);
	}
}

static bool sign_policy(struct dfix *f, const char *name, int version, bool limits, const char *out)
{
	return df_sign(f, "key", df_read_policy(name, version, limits ? ",\"limits\":{\"pids\":64,\"required\":[\"pids\"]}" : ""),
		       out);
}

KTEST(metrics_endpoint_and_textfile)
{
	struct dfix f;
	struct ktest_proc a = {0};
	char cg[PATH_MAX], bundles[400], pub[400], prom[400], name[64], rid[17] = "", label[256];
	char *text = malloc(1 << 20);
	const char *extra[12];
	struct ktest_result r;
	json_t *resp;
	time_t now = time(NULL);
	double read_base = 0;
	int n = 0;

	ktest_need_lsm();
	cg[0] = 0;
	if (!text || !df_setup(&f))
		goto out;
	snprintf(bundles, sizeof(bundles), "%s/bundles", f.d.root);
	snprintf(pub, sizeof(pub), "%s/key.pub", f.d.root);
	snprintf(prom, sizeof(prom), "%s/custode.prom", f.d.root);
	snprintf(name, sizeof(name), "test/metrics-%d", (int)getpid());
	if (!ASSERT_TRUE(df_keygen(&f, "key"), "keygen") || !ASSERT_EQ(mkdir(bundles, 0755), 0, "bundles dir"))
		goto out;
	{
		char b3[500], lim[500];

		snprintf(b3, sizeof(b3), "%s/v3.dsse.json", bundles);
		snprintf(lim, sizeof(lim), "%s/limits.dsse.json", f.d.root);
		char other[500], oname[80];

		snprintf(other, sizeof(other), "%s/other.dsse.json", bundles);
		snprintf(oname, sizeof(oname), "%s-unattached", name);
		if (!ASSERT_TRUE(sign_policy(&f, oname, 5, false, other), "sign a policy no run uses") ||
		    !ASSERT_TRUE(sign_policy(&f, name, 3, false, b3), "sign v3") ||
		    !ASSERT_TRUE(sign_policy(&f, "test/limits", 1, true, lim), "sign a policy with required limits"))
			goto out;
	}
	extra[n++] = "--metrics-listen";
	extra[n++] = "127.0.0.1:9464";
	extra[n++] = "--metrics-file";
	extra[n++] = prom;
	extra[n++] = "--bundles";
	extra[n++] = bundles;
	extra[n++] = "--trust";
	extra[n++] = pub;
	extra[n++] = "--bundle-state";
	extra[n++] = f.d.root;
	extra[n] = NULL;
	if (!ASSERT_TRUE(df_daemon_start(&f, extra), "daemon"))
		goto out;

	/* a live attached run under the bundle's policy (by name), with 3 denials */
	snprintf(cg, sizeof(cg), "%s/ktest-metrics-%d", f.cgmount, (int)getpid());
	if (!ASSERT_TRUE(df_cg_make(cg) && df_probe(cg, &a), "probe"))
		goto out;
	resp = df_call(json_pack("{s:s, s:s, s:s, s:s}", "cmd", "attach", "cgroup", cg, "policy", name, "workspace", f.d.ws));
	if (!ASSERT_TRUE(resp != NULL, "attach --policy NAME (from the daemon's bundles)"))
		goto out;
	snprintf(rid, sizeof(rid), "%s", json_string_value(json_object_get(json_object_get(resp, "run"), "run_id")));
	ASSERT_EQ(json_integer_value(json_object_get(json_object_get(json_object_get(resp, "run"), "policy"), "version")), 3,
		  "the bundle's version");
	json_decref(resp);
	for (int i = 0; i < 3; i++)
		ASSERT_STREQ(df_ask(&a, "open %s", f.d.outside), "EACCES", "denied");
	/* a policy with required limits can't be attached: limits belong to the cgroup's owner */
	{
		char lim[500], cg2[PATH_MAX + 8];

		snprintf(lim, sizeof(lim), "%s/limits.dsse.json", f.d.root);
		snprintf(cg2, sizeof(cg2), "%s-2", cg);
		df_cg_make(cg2);
		ASSERT_STREQ(df_refusal(json_pack("{s:s, s:s, s:s}", "cmd", "attach", "cgroup", cg2, "bundle", lim)),
			     "policy.unsupported", "required limits refused");
		rmdir(cg2);
	}
	/*
	 * The totals count every run since boot (docs/operations.md), so earlier
	 * runs of the read profile in this boot are in them: the base, taken once
	 * a snapshot has seen the attached run.
	 */
	{
		const struct want w[] = {{"custode_runs_active{kind=\"attached\"}", 1}};

		if (!metrics_until(text, 1 << 20, w, 1, 30000))
			ktest_log("no snapshot saw the attached run");
		read_base = sample(text, "custode_denials_total{policy=\"builtin/read\",reason=\"file.read.denied\"}");
		if (read_base < 0)
			read_base = 0;
	}
	/* a launched run that has ended: its 2 denials stay in the totals */
	{
		char *argv[] = {(char *)ktest_custode(), "run", "--profile", "read", "--workspace", f.d.ws, "--",
				(char *)df_aprobe(), "repl", NULL};
		struct ktest_proc run;

		if (ASSERT_EQ(ktest_spawn(argv, -1, &run), 0, "launched run")) {
			char line[64];

			ktest_read_line(run.out, line, sizeof(line), 30000);
			df_ask(&run, "open %s", f.d.outside);
			df_ask(&run, "open %s", f.d.outside);
			/* seen by a snapshot while alive: its 2 denials in the metrics */
			{
				const struct want w[] = {
					{"custode_denials_total{policy=\"builtin/read\",reason=\"file.read.denied\"}", read_base + 2},
					{"custode_runs_active{kind=\"launched\"}", 1},
				};

				if (!metrics_until(text, 1 << 20, w, 2, 30000))
					ktest_log("no snapshot saw the launched run alive with its denials");
			}
			ktest_close_stdin(&run);
			ASSERT_EQ(ktest_wait(&run, 30000), 0, "the run ends");
			ktest_proc_close(&run);
		}
	}
	/*
	 * until a snapshot has seen the launched run gone (its counts retired into
	 * the totals) and the attached run's 3 denials, and the bundle watcher has
	 * accepted the policy no run uses; or a hang detector's timeout
	 */
	{
		char attached[256], unattached[256];
		const struct want w[] = {
			{attached, 3},
			{"custode_denials_total{policy=\"builtin/read\",reason=\"file.read.denied\"}", read_base + 2},
			{"custode_runs_active{kind=\"attached\"}", 1},
			{"custode_runs_active{kind=\"launched\"}", 0},
			{unattached, 5},
		};

		snprintf(attached, sizeof(attached), "custode_denials_total{policy=\"%s\",reason=\"file.read.denied\"}", name);
		snprintf(unattached, sizeof(unattached), "custode_policy_bundle_version{policy=\"%s-unattached\"}", name);
		if (!metrics_until(text, 1 << 20, w, sizeof(w) / sizeof(w[0]), 30000))
			ktest_log("the metrics did not settle");
	}
	if (!ASSERT_TRUE(http_get("/metrics", text, 1 << 20), "GET /metrics"))
		goto out;
	ASSERT_CONTAINS(text, "HTTP/1.0 200 OK", "200");
	ASSERT_CONTAINS(text, "Content-Type: text/plain; version=0.0.4", "the exposition format's content type");
	snprintf(label, sizeof(label), "custode_denials_total{policy=\"%s\",reason=\"file.read.denied\"}", name);
	ASSERT_EQ(sample(text, label), 3, "denials of the attached run's policy");
	ASSERT_EQ(sample(text, "custode_denials_total{policy=\"builtin/read\",reason=\"file.read.denied\"}"), read_base + 2,
		  "denials of a run that ended, on top of the earlier runs' of this boot");
	ASSERT_EQ(sample(text, "custode_runs_active{kind=\"attached\"}"), 1, "runs active: attached");
	ASSERT_EQ(sample(text, "custode_runs_active{kind=\"launched\"}"), 0, "runs active: launched");
	snprintf(label, sizeof(label), "custode_policy_bundle_version{policy=\"%s\"}", name);
	ASSERT_EQ(sample(text, label), 3, "bundle version");
	snprintf(label, sizeof(label), "custode_policy_bundle_version{policy=\"%s-unattached\"}", name);
	ASSERT_EQ(sample(text, label), 5, "the version of an accepted bundle no run uses");
	snprintf(label, sizeof(label), "custode_policy_bundle_not_after_seconds{policy=\"%s\"}", name);
	ASSERT_TRUE(sample(text, label) > now + 3000 && sample(text, label) < now + 3700, "bundle expiry in an hour");
	ASSERT_EQ(sample(text, "custode_resolver_up"), 0, "no resolver here");
	ASSERT_TRUE(sample(text, "custode_resolver_queries_total") >= 0, "resolver queries");
	ASSERT_TRUE(sample(text, "custode_resolver_refusals_total{reason=\"dns.name.denied\"}") >= 0, "resolver refusals");
	ASSERT_TRUE(sample(text, "custode_events_dropped_total{cpu=\"0\"}") >= 0, "drops, per CPU");
	ASSERT_TRUE(sample(text, "custode_map_entries{map=\"custode_runs\"}") >= 1, "map fill: runs");
	ASSERT_EQ(sample(text, "custode_map_capacity{map=\"custode_runs\"}"), 4096, "map capacity");
	ASSERT_TRUE(sample(text, "custode_events_suppressed_total") >= 0, "throttling counters");
	ASSERT_EQ(malformed_lines(strstr(text, "\r\n\r\n") ? strstr(text, "\r\n\r\n") + 4 : text), 0, "well-formed");

	ASSERT_TRUE(http_get("/other", text, 1 << 20), "GET /other");
	ASSERT_CONTAINS(text, "404", "not found");
	/* the textfile (rewritten every 15 s, and at start): the same families */
	kt_wait_for(prom, "# TYPE custode_denials_total counter", 0, 10000);
	ASSERT_CONTAINS(kt_slurp(prom), "# TYPE custode_denials_total counter", "textfile written");
	{
		char *argv[] = {(char *)ktest_custode(), "runs", NULL};

		ktest_run(argv, -1, 30000, &r);
		ASSERT_CONTAINS(r.out, name, "runs names the policy");
		ASSERT_CONTAINS(r.out, rid, "and the run");
	}
out:
	if (rid[0])
		json_decref(df_call(json_pack("{s:s, s:s}", "cmd", "detach", "run_id", rid)));
	df_probe_end(&a);
	if (cg[0])
		df_cg_remove(cg);
	kt_stop(&f.pid, SIGTERM);
	free(text);
}
