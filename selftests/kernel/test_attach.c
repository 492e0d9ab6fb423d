// SPDX-License-Identifier: Apache-2.0
/*
 * custode attach / detach: an existing cgroup outside custode's subtree, with
 * processes already running, becomes a run. Controls: the same operation
 * before attach and after detach succeeds (DAC allows it: the files are
 * world-readable and the probes run as nobody).
 */
#include "test_daemon_fixture.h"

static json_t *attach(const char *cg, const char *profile, const char *ws)
{
	json_t *req = json_pack("{s:s, s:s, s:s}", "cmd", "attach", "cgroup", cg, "profile", profile);

	if (ws)
		json_object_set_new(req, "workspace", json_string(ws));
	return df_call(req);
}

static const char *run_id_of(json_t *resp)
{
	return json_string_value(json_object_get(json_object_get(resp, "run"), "run_id"));
}

/* The stream holds a's denied open of `outside` (what attach_running_processes_confined waits for). */
struct denial_seen {
	const char *path;
	int tgid;
};

static bool denial_seen(json_t *evs, void *arg)
{
	const struct denial_seen *w = arg;
	size_t i;
	json_t *e;

	json_array_foreach(evs, i, e) {
		const char *p = json_string_value(json_object_get(json_object_get(e, "file"), "path"));

		if (p && !strcmp(p, w->path) && json_integer_value(json_object_get(e, "tgid")) == w->tgid)
			return true;
	}
	return false;
}

static bool detach(const char *run_id)
{
	json_t *r = df_call(json_pack("{s:s, s:s}", "cmd", "detach", "run_id", run_id));
	bool ok = r != NULL;

	json_decref(r);
	return ok;
}

KTEST(attach_running_processes_confined)
{
	struct dfix f;
	struct ktest_proc a = {0}, b = {0};
	char cg[PATH_MAX], child[PATH_MAX + 8], rid[17] = "";
	json_t *resp, *run, *evs, *e;
	size_t i;
	bool found = false;

	ktest_need_lsm();
	if (!df_setup(&f) || !ASSERT_TRUE(df_daemon_start(&f, NULL), "daemon"))
		return;
	snprintf(cg, sizeof(cg), "%s/ktest-attach-%d", f.cgmount, (int)getpid());
	snprintf(child, sizeof(child), "%s/child", cg);
	if (!ASSERT_TRUE(df_cg_make(cg), "cgroup") || !ASSERT_TRUE(df_probe(cg, &a), "probe in the cgroup"))
		goto out;
	/* control: before attach, the probe (nobody) reads the world-readable file outside the workspace */
	ASSERT_STREQ(df_ask(&a, "open %s", f.d.outside), "ok", "before attach");

	resp = attach(cg, "read", f.d.ws);
	if (!ASSERT_TRUE(resp != NULL, "attach"))
		goto out;
	snprintf(rid, sizeof(rid), "%s", run_id_of(resp));
	ASSERT_STREQ(json_string_value(json_object_get(json_object_get(resp, "run"), "kind")), "attached", "kind");
	json_decref(resp);

	/* the running process's next denied open is denied; what the policy grants still works */
	ASSERT_STREQ(df_ask(&a, "open %s", f.d.outside), "EACCES", "after attach: denied");
	ASSERT_STREQ(df_ask(&a, "open %s", f.d.ws_file), "ok", "after attach: the workspace is readable");
	{
		int fd = open(f.d.outside, O_RDONLY);
		ASSERT_TRUE(fd >= 0, "the host is not confined");
		if (fd >= 0)
			close(fd);
	}

	/* a child cgroup made after attach, and a process born there: confined too */
	if (!ASSERT_TRUE(df_cg_make(child), "child cgroup") || !ASSERT_TRUE(df_probe(child, &b), "probe in the child"))
		goto out;
	ASSERT_STREQ(df_ask(&b, "open %s", f.d.outside), "EACCES", "child cgroup: denied");
	ASSERT_STREQ(df_ask(&b, "open %s", f.d.ws_file), "ok", "child cgroup: workspace readable");

	run = df_run(rid);
	if (ASSERT_TRUE(run != NULL, "listed by runs")) {
		ASSERT_EQ(df_denials(run, "file.read.denied"), 2, "exact count");
		ASSERT_STREQ(json_string_value(json_object_get(json_object_get(run, "policy"), "name")), "builtin/read",
			     "policy name");
		ASSERT_STREQ(json_string_value(json_object_get(run, "cgroup")), cg, "cgroup");
		ASSERT_TRUE(json_is_true(json_object_get(json_object_get(run, "policy"), "verified")), "policy verified");
	}
	json_decref(run);

	/* the stream: the denial with its run, policy, path and (the probe is alive) executable */
	{
		struct denial_seen w = {f.d.outside, a.pid};

		evs = df_events_until(rid, denial_seen, &w, 30000);
	}
	json_array_foreach(evs, i, e) {
		const json_t *file = json_object_get(e, "file");
		const char *p = json_string_value(json_object_get(file, "path"));

		if (!p || strcmp(p, f.d.outside) || json_integer_value(json_object_get(e, "tgid")) != a.pid)
			continue;
		found = true;
		ASSERT_STREQ(json_string_value(json_object_get(e, "reason")), "file.read.denied", "reason");
		ASSERT_STREQ(json_string_value(json_object_get(json_object_get(e, "policy"), "name")), "builtin/read",
			     "the record names the policy");
		ASSERT_EQ(json_integer_value(json_object_get(json_object_get(e, "policy"), "version")), 1, "and its version");
		ASSERT_STREQ(json_string_value(json_object_get(json_object_get(e, "exe"), "path")), df_aprobe(),
			     "the executable's path, verified by identity");
	}
	ASSERT_TRUE(found, "the denial is in the stream");
	json_decref(evs);

	/* detach: allowed again, in the cgroup and below */
	if (!ASSERT_TRUE(detach(rid), "detach"))
		goto out;
	ASSERT_STREQ(df_ask(&a, "open %s", f.d.outside), "ok", "after detach: allowed");
	ASSERT_STREQ(df_ask(&b, "open %s", f.d.outside), "ok", "after detach: allowed in the child");
	run = df_run(rid);
	ASSERT_TRUE(run == NULL, "no longer listed");
	json_decref(run);
	rid[0] = 0;
out:
	if (rid[0])
		detach(rid);
	df_probe_end(&a);
	df_probe_end(&b);
	df_cg_remove(cg);
	kt_stop(&f.pid, SIGTERM);
}

/* Deeper cgroups below one gate; siblings and the gate itself stay unconfined. */
KTEST(attach_levels_and_siblings)
{
	struct dfix f;
	struct ktest_proc deep = {0}, mid = {0}, sib = {0}, top = {0};
	char slice[PATH_MAX], a[PATH_MAX + 8], app[PATH_MAX + 16], b[PATH_MAX + 8], c[PATH_MAX + 8];
	char rid_deep[17] = "", rid_mid[17] = "";
	json_t *resp, *st;

	ktest_need_lsm();
	if (!df_setup(&f) || !ASSERT_TRUE(df_daemon_start(&f, NULL), "daemon"))
		return;
	snprintf(slice, sizeof(slice), "%s/ktest-slice-%d", f.cgmount, (int)getpid());
	snprintf(a, sizeof(a), "%s/a", slice);
	snprintf(app, sizeof(app), "%s/a/app", slice);
	snprintf(b, sizeof(b), "%s/b", slice);
	snprintf(c, sizeof(c), "%s/c", slice);
	if (!ASSERT_TRUE(df_cg_make(slice) && df_cg_make(a) && df_cg_make(app) && df_cg_make(b) && df_cg_make(c), "cgroups"))
		goto out;
	if (!ASSERT_TRUE(df_probe(app, &deep) && df_probe(b, &mid) && df_probe(c, &sib) && df_probe(slice, &top), "probes"))
		goto out;
	resp = attach(app, "read", f.d.ws);
	if (!ASSERT_TRUE(resp != NULL, "attach level 3"))
		goto out;
	snprintf(rid_deep, sizeof(rid_deep), "%s", run_id_of(resp));
	json_decref(resp);
	resp = attach(b, "read", f.d.ws);
	if (!ASSERT_TRUE(resp != NULL, "attach level 2"))
		goto out;
	snprintf(rid_mid, sizeof(rid_mid), "%s", run_id_of(resp));
	json_decref(resp);

	ASSERT_STREQ(df_ask(&deep, "open %s", f.d.outside), "EACCES", "level 3: denied");
	ASSERT_STREQ(df_ask(&mid, "open %s", f.d.outside), "EACCES", "level 2: denied");
	ASSERT_STREQ(df_ask(&sib, "open %s", f.d.outside), "ok", "an unattached sibling below the gate: allowed");
	ASSERT_STREQ(df_ask(&top, "open %s", f.d.outside), "ok", "the gate cgroup itself: allowed");

	/* one gate (the slice), levels 2 and 3 */
	st = df_call(json_pack("{s:s}", "cmd", "status"));
	{
		json_t *gates = json_object_get(json_object_get(st, "engine"), "gates"), *g;
		__u64 slice_id = 0;
		size_t i;
		bool seen = false;

		custode_cgroup_id(slice, &slice_id);
		json_array_foreach(gates, i, g)
			if ((__u64)json_integer_value(json_object_get(g, "cgroup_id")) == slice_id) {
				seen = true;
				ASSERT_EQ(json_integer_value(json_object_get(g, "levels")), (1 << 1) | (1 << 2), "levels 2 and 3");
			}
		ASSERT_TRUE(seen, "the slice is a gate");
	}
	json_decref(st);

	if (ASSERT_TRUE(detach(rid_mid), "detach level 2"))
		rid_mid[0] = 0;
	ASSERT_STREQ(df_ask(&mid, "open %s", f.d.outside), "ok", "detached: allowed");
	ASSERT_STREQ(df_ask(&deep, "open %s", f.d.outside), "EACCES", "the other run stays confined");
	if (ASSERT_TRUE(detach(rid_deep), "detach level 3"))
		rid_deep[0] = 0;
	ASSERT_STREQ(df_ask(&deep, "open %s", f.d.outside), "ok", "detached: allowed");
	st = df_call(json_pack("{s:s}", "cmd", "status"));
	{
		json_t *gates = json_object_get(json_object_get(st, "engine"), "gates"), *g;
		__u64 slice_id = 0;
		size_t i;

		custode_cgroup_id(slice, &slice_id);
		json_array_foreach(gates, i, g)
			ASSERT_TRUE((__u64)json_integer_value(json_object_get(g, "cgroup_id")) != slice_id, "gate gone");
	}
	json_decref(st);
out:
	if (rid_mid[0])
		detach(rid_mid);
	if (rid_deep[0])
		detach(rid_deep);
	df_probe_end(&deep);
	df_probe_end(&mid);
	df_probe_end(&sib);
	df_probe_end(&top);
	df_cg_remove(slice);
	kt_stop(&f.pid, SIGTERM);
}

/* The process class and /proc know attached runs: inside the run is "own", the host is not. */
KTEST(attach_process_class_and_procfs)
{
	struct dfix f;
	struct ktest_proc a = {0};
	char cg[PATH_MAX], rid[17] = "";
	json_t *resp, *run;
	pid_t host;

	ktest_need_lsm();
	if (!df_setup(&f) || !ASSERT_TRUE(df_daemon_start(&f, NULL), "daemon"))
		return;
	host = fork();
	if (host == 0) {
		/* a host process of the probe's own uid: DAC lets the probe signal it, so a refusal is custode's */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (setgid(NOBODY) || setuid(NOBODY))
			_exit(1);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	snprintf(cg, sizeof(cg), "%s/ktest-attach-proc-%d", f.cgmount, (int)getpid());
	if (!ASSERT_TRUE(df_cg_make(cg), "cgroup") || !ASSERT_TRUE(df_probe(cg, &a), "probe"))
		goto out;
	/* controls, before attach */
	ASSERT_STREQ(df_ask(&a, "kill %d 0", (int)host), "ok", "before attach: a signal to a host process of its uid");
	ASSERT_STREQ(df_ask(&a, "open /proc/%d/status", (int)host), "ok", "before attach: another's /proc entry");
	resp = attach(cg, "read", f.d.ws);
	if (!ASSERT_TRUE(resp != NULL, "attach"))
		goto out;
	snprintf(rid, sizeof(rid), "%s", run_id_of(resp));
	json_decref(resp);
	ASSERT_STREQ(df_ask(&a, "forkkill"), "ok", "a signal to its own child (the same run)");
	ASSERT_STREQ(df_ask(&a, "open /proc/self/status"), "ok", "its own /proc entries");
	ASSERT_STREQ(df_ask(&a, "open /proc/%d/status", (int)host), "EACCES", "a host process's /proc entry");
	ASSERT_STREQ(df_ask(&a, "kill %d 0", (int)host), "EPERM", "a signal to a host process");
	run = df_run(rid);
	ASSERT_EQ(df_denials(run, "file.proc.denied"), 1, "counted: /proc");
	ASSERT_EQ(df_denials(run, "process.signal.denied"), 1, "counted: the signal (custode's, not only DAC's)");
	json_decref(run);
out:
	if (rid[0])
		detach(rid);
	df_probe_end(&a);
	if (host > 0) {
		kill(host, SIGKILL);
		waitpid(host, NULL, 0);
	}
	df_cg_remove(cg);
	kt_stop(&f.pid, SIGTERM);
}

KTEST(attach_refusals)
{
	struct dfix f;
	char cg[PATH_MAX], inner[PATH_MAX + 8], own[PATH_MAX + 32], dmn[PATH_MAX], procs[PATH_MAX + 16], pid[32];
	char rid[17] = "";
	json_t *resp;
	struct ktest_result r;

	ktest_need_lsm();
	if (!df_setup(&f))
		return;
	/* no daemon: the CLI says so */
	{
		char *argv[] = {(char *)ktest_custode(), "attach", "--cgroup", f.cgmount, "--profile", "read", NULL};

		ktest_run(argv, -1, 30000, &r);
		ASSERT_EQ(r.code, 125, "no daemon: refused");
		ASSERT_CONTAINS(r.err, "daemon.not_running", "reason");
	}
	if (!ASSERT_TRUE(df_daemon_start(&f, NULL), "daemon"))
		return;
	snprintf(cg, sizeof(cg), "%s/ktest-refuse-%d", f.cgmount, (int)getpid());
	snprintf(inner, sizeof(inner), "%s/inner", cg);
	snprintf(own, sizeof(own), "%s/custode/ktest-%d", f.cgmount, (int)getpid());
	snprintf(dmn, sizeof(dmn), "%s/ktest-daemon-%d", f.cgmount, (int)getpid());
	if (!ASSERT_TRUE(df_cg_make(cg) && df_cg_make(inner) && df_cg_make(own) && df_cg_make(dmn), "cgroups"))
		goto out;

	ASSERT_STREQ(df_refusal(json_pack("{s:s, s:s, s:s}", "cmd", "attach", "cgroup", f.cgmount, "profile", "read")),
		     "attach.cgroup", "the root cgroup");
	ASSERT_STREQ(df_refusal(json_pack("{s:s, s:s, s:s}", "cmd", "attach", "cgroup", own, "profile", "read")),
		     "attach.cgroup", "inside custode's subtree");
	ASSERT_STREQ(df_refusal(json_pack("{s:s, s:s, s:s}", "cmd", "attach", "cgroup", "/tmp", "profile", "read")),
		     "attach.cgroup", "not a cgroup");
	ASSERT_STREQ(df_refusal(json_pack("{s:s, s:s, s:s}", "cmd", "attach", "cgroup", cg, "profile", "no-such")),
		     "policy.unknown_profile", "unknown profile");
	ASSERT_STREQ(df_refusal(json_pack("{s:s, s:s, s:s}", "cmd", "attach", "cgroup", cg, "policy", "some/policy")),
		     "bundle.key", "a named policy without --bundles/--trust");
	/* the CLI, positive */
	{
		char *argv[] = {(char *)ktest_custode(), "attach", "--cgroup", cg, "--profile", "read", "--json", NULL};

		ktest_run(argv, -1, 30000, &r);
		if (!ASSERT_EQ(r.code, 0, "attach (CLI)")) {
			ktest_log("%s", r.err);
			goto out;
		}
		resp = json_loads(r.out, 0, NULL);
		snprintf(rid, sizeof(rid), "%s", json_string_value(json_object_get(resp, "run_id")));
		json_decref(resp);
	}
	ASSERT_STREQ(df_refusal(json_pack("{s:s, s:s, s:s}", "cmd", "attach", "cgroup", cg, "profile", "read")),
		     "attach.exists", "twice");
	ASSERT_STREQ(df_refusal(json_pack("{s:s, s:s, s:s}", "cmd", "attach", "cgroup", inner, "profile", "read")),
		     "attach.cgroup", "nested in an attached run");
	ASSERT_STREQ(df_refusal(json_pack("{s:s, s:s}", "cmd", "detach", "run_id", "0000000000000001")), "run.not_found",
		     "detach: unknown run");
	/* the daemon's own cgroup */
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dmn);
	snprintf(pid, sizeof(pid), "%d", f.pid);
	if (ASSERT_TRUE(ktest_write_file(procs, pid, 0644), "move the daemon")) {
		ASSERT_STREQ(df_refusal(json_pack("{s:s, s:s, s:s}", "cmd", "attach", "cgroup", dmn, "profile", "read")),
			     "attach.cgroup", "the daemon's own cgroup");
	}
	ASSERT_STREQ(df_refusal(json_pack("{s:s, s:s, s:s}", "cmd", "detach", "run_id", rid, "cgroup", cg)), "run.usage",
		     "detach: a run id or a cgroup, not both");
	ASSERT_STREQ(df_refusal(json_pack("{s:s}", "cmd", "no-such-command")), "daemon.protocol", "unknown command");
out:
	if (rid[0]) {
		char *argv[] = {(char *)ktest_custode(), "detach", rid, NULL};

		ktest_run(argv, -1, 30000, &r);
		ASSERT_EQ(r.code, 0, "detach (CLI)");
		ASSERT_CONTAINS(r.out, "detached run", "detach output");
	}
	/* the daemon back to the root cgroup before its cgroup goes */
	{
		char root[PATH_MAX + 16];

		snprintf(root, sizeof(root), "%s/cgroup.procs", f.cgmount);
		ktest_write_file(root, pid, 0644);
	}
	df_cg_remove(cg);
	df_cg_remove(own);
	rmdir(dmn);
	kt_stop(&f.pid, SIGTERM);
}
