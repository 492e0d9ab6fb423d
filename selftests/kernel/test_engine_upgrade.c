// SPDX-License-Identifier: Apache-2.0
/*
 * Upgrades without draining (docs/process.md, "Upgrades"): a new custode
 * binary (another inode, as a package upgrade installs) is locked out of the
 * engine the old one loaded; the running daemon admits it on its own request;
 * the new binary's daemon then adopts every run. Runs stay confined
 * throughout. Who may not be admitted: a tool that is not custode, a custode
 * binary others may write, and nobody without a daemon or an admitted binary
 * to vouch.
 */
#include <sys/stat.h>

#include "test_daemon_fixture.h"

/* A copy of the custode binary at ROOT/NAME with mode (a new inode: what an upgrade installs). */
static bool copy_custode(struct dfix *f, const char *name, mode_t mode, char *out, size_t len)
{
	char cmd[1200];

	snprintf(out, len, "%s/%s", f->d.root, name);
	snprintf(cmd, sizeof(cmd), "cp %s %s && chmod %o %s", ktest_custode(), out, (unsigned)mode, out);
	return system(cmd) == 0;
}

static int run_bin(const char *bin, const char *a1, const char *a2, const char *a3, const char *a4,
		   struct ktest_result *r)
{
	char *argv[] = {(char *)bin, (char *)a1, (char *)a2, (char *)a3, (char *)a4, NULL};

	return ktest_run(argv, -1, 120000, r);
}

/* Is (dev, ino) of path among `engine status --json`'s admitted binaries (read with binary bin)? */
static bool status_lists(const char *bin, const char *path)
{
	static struct ktest_result r;
	json_t *st, *a;
	struct stat sb;
	size_t i;
	bool found = false;

	if (stat(path, &sb) < 0 || run_bin(bin, "engine", "status", "--json", NULL, &r) != 0)
		return false;
	st = json_loads(r.out, 0, NULL);
	json_array_foreach(json_object_get(st, "admitted"), i, a)
		found |= (ino_t)json_integer_value(json_object_get(a, "ino")) == sb.st_ino;
	json_decref(st);
	return found;
}

KTEST(engine_upgrade_daemon_admits_new_binary_runs_stay_confined)
{
	static struct ktest_result r;
	struct ktest_proc att = {0}, lau = {0};
	char cg[PATH_MAX], newbin[400], line[128], rid[17] = "", lrid[17] = "";
	struct dfix f;
	json_t *resp, *run;

	ktest_need_lsm();
	if (!df_setup(&f) || !ASSERT_TRUE(df_daemon_start(&f, NULL), "the old binary's daemon"))
		return;
	snprintf(cg, sizeof(cg), "%s/ktest-upgrade-%d", f.cgmount, (int)getpid());
	if (!ASSERT_TRUE(df_cg_make(cg) && df_probe(cg, &att), "a pod-like cgroup with a probe"))
		goto out;
	ASSERT_STREQ(df_ask(&att, "open %s", f.d.outside), "ok", "control: before attach the probe reads outside");
	resp = df_call(json_pack("{s:s, s:s, s:s, s:s}", "cmd", "attach", "cgroup", cg, "profile", "read", "workspace",
				 f.d.ws));
	if (!ASSERT_TRUE(resp != NULL, "attach (loads the process class: the engine is reserved)"))
		goto out;
	snprintf(rid, sizeof(rid), "%s", json_string_value(json_object_get(json_object_get(resp, "run"), "run_id")));
	json_decref(resp);
	{
		char *argv[] = {(char *)ktest_custode(), "run", "--profile", "read", "--workspace", f.d.ws, "--",
				(char *)df_aprobe(), "repl", NULL};

		if (!ASSERT_TRUE(ktest_spawn(argv, -1, &lau) == 0 && ktest_read_line(lau.out, line, sizeof(line), 30000) &&
					 !strncmp(line, "ready ", 6),
				 "a launched run (its launcher: the old binary)"))
			goto out;
	}
	ASSERT_STREQ(df_ask(&att, "open %s", f.d.outside), "EACCES", "attached: denied");
	ASSERT_STREQ(df_ask(&lau, "open %s", f.d.outside), "EACCES", "launched: denied");

	/* the upgrade installs a new binary: locked out */
	if (!ASSERT_TRUE(copy_custode(&f, "custode-new", 0755, newbin, sizeof(newbin)), "new binary"))
		goto out;
	run_bin(newbin, "engine", "status", "--json", NULL, &r);
	ASSERT_EQ(r.code, 125, "control: the new binary is refused before admission");
	ASSERT_CONTAINS(r.err, "engine.protected", "reason");

	/* attacks: a root tool that is not custode, and a custode binary others may write, ask to be admitted */
	{
		char *argv[] = {(char *)ktest_helper("ctlsend"), CUSTODE_CONTROL_SOCKET, "{\"cmd\":\"admit\"}", NULL};
		char gw[400];

		ktest_run(argv, -1, 60000, &r);
		ASSERT_EQ(r.code, 0, "ctlsend got an answer");
		ASSERT_CONTAINS(r.out, "engine.admit_refused", "a tool without custode's marker is refused");
		ASSERT_CONTAINS(r.out, "not a custode binary", "and told why");
		ASSERT_TRUE(copy_custode(&f, "custode-gw", 0775, gw, sizeof(gw)), "group-writable copy");
		run_bin(gw, "engine", "admit", NULL, NULL, &r);
		ASSERT_EQ(r.code, 125, "a group-writable custode binary is not admitted");
		ASSERT_CONTAINS(r.err, "engine.admit_refused", "reason");
		run_bin(gw, "engine", "status", NULL, NULL, &r);
		ASSERT_EQ(r.code, 125, "and still can't open the engine");
	}

	/* the new binary asks the daemon */
	run_bin(newbin, "engine", "admit", "--json", NULL, &r);
	ASSERT_EQ(r.code, 0, "admitted by the daemon");
	ASSERT_CONTAINS(r.out, "\"opens\":true", "and it opens the engine now");
	ASSERT_CONTAINS(kt_slurp(f.err), "to the engine", "the daemon logs the admission");
	ASSERT_TRUE(status_lists(newbin, newbin), "engine status lists the new binary");
	run_bin(newbin, "engine", "admit", NULL, NULL, &r);
	ASSERT_EQ(r.code, 0, "admitting again is a no-op");
	ASSERT_CONTAINS(r.out, "already admitted", "said so");
	ASSERT_STREQ(df_ask(&att, "open %s", f.d.outside), "EACCES", "attached: denied after the admission");
	ASSERT_STREQ(df_ask(&lau, "open %s", f.d.outside), "EACCES", "launched: denied after the admission");

	/* the old daemon stops, the new binary's daemon adopts */
	kt_stop(&f.pid, SIGTERM);
	ASSERT_STREQ(df_ask(&att, "open %s", f.d.outside), "EACCES", "attached: denied with no daemon");
	f.bin = newbin;
	if (!ASSERT_TRUE(df_daemon_start(&f, NULL), "the new binary's daemon starts on the old engine"))
		goto out;
	ASSERT_CONTAINS(kt_slurp(f.err), "adopted", "it adopts the registered runs");
	run = df_run(rid);
	ASSERT_TRUE(run != NULL && json_is_true(json_object_get(json_object_get(run, "policy"), "verified")),
		    "the attached run is the new daemon's, its policy re-verified");
	json_decref(run);
	ASSERT_STREQ(df_ask(&att, "open %s", f.d.outside), "EACCES", "attached: denied under the new daemon");
	ASSERT_STREQ(df_ask(&lau, "open %s", f.d.ws_file), "ok", "launched: the policy still grants the workspace");
	ASSERT_STREQ(df_ask(&lau, "open %s", f.d.outside), "EACCES", "launched: denied under the new daemon");
	{
		json_t *runs = df_call(json_pack("{s:s}", "cmd", "runs")), *o;
		size_t i;
		char lcg[PATH_MAX];

		if (ktest_proc_cgroup(atoi(line + 6), lcg, sizeof(lcg)))
			json_array_foreach(json_object_get(runs, "runs"), i, o)
				if (json_is_string(json_object_get(o, "cgroup")) &&
				    !strcmp(json_string_value(json_object_get(o, "cgroup")), lcg))
					snprintf(lrid, sizeof(lrid), "%s", json_string_value(json_object_get(o, "run_id")));
		json_decref(runs);
		ASSERT_TRUE(lrid[0] != 0, "the new daemon lists the launched run");
	}
	/* the new binary drives the engine: a detach restores the attached cgroup */
	resp = df_call(json_pack("{s:s, s:s}", "cmd", "detach", "run_id", rid));
	ASSERT_TRUE(resp != NULL, "detach by the new daemon");
	json_decref(resp);
	rid[0] = 0;
	ASSERT_STREQ(df_ask(&att, "open %s", f.d.outside), "ok", "detached: the probe reads outside again");
	/* the old launcher still ends its run cleanly (it is the engine's loader) */
	ktest_close_stdin(&lau);
	ASSERT_EQ(ktest_wait(&lau, 60000), 0, "the old launcher ends its run");
	ASSERT_TRUE(df_run(lrid) == NULL, "and unregisters it");
out:
	if (rid[0])
		json_decref(df_call(json_pack("{s:s, s:s}", "cmd", "detach", "run_id", rid)));
	df_probe_end(&att);
	df_cg_remove(cg);
	if (lau.pid > 0) {
		ktest_close_stdin(&lau);
		ktest_wait(&lau, 30000);
	}
	ktest_proc_close(&lau);
	kt_stop(&f.pid, SIGTERM);
}

KTEST(engine_upgrade_admit_exe_and_no_daemon)
{
	static struct ktest_result r;
	char a[400], b[400], w[400];
	struct dfix f;

	ktest_need_lsm();
	if (!df_setup(&f))
		return;
	/* the process class loaded by the build's binary (a run of the read profile) */
	{
		char *argv[] = {(char *)ktest_custode(), "run", "--profile", "read", "--workspace", f.d.ws, "--", "/bin/true",
				NULL};

		if (!ASSERT_EQ(ktest_run(argv, -1, 60000, &r), 0, "a run loads the process class"))
			return;
	}
	if (!ASSERT_TRUE(copy_custode(&f, "custode-a", 0755, a, sizeof(a)) &&
			 copy_custode(&f, "custode-b", 0755, b, sizeof(b)) &&
			 copy_custode(&f, "custode-w", 0757, w, sizeof(w)),
			 "copies"))
		return;
	/* no daemon: a locked-out binary cannot admit itself, and is told how */
	run_bin(a, "engine", "admit", NULL, NULL, &r);
	ASSERT_EQ(r.code, 125, "no daemon, no admission");
	ASSERT_CONTAINS(r.err, "engine.protected", "reason");
	ASSERT_CONTAINS(r.err, "--exe", "the hint names --exe");
	/* nor admit another */
	run_bin(a, "engine", "admit", "--exe", b, &r);
	ASSERT_EQ(r.code, 125, "a locked-out binary cannot admit another");
	run_bin(b, "engine", "status", NULL, NULL, &r);
	ASSERT_EQ(r.code, 125, "control: b is still locked out");
	/* the loading binary vouches for a */
	run_bin(ktest_custode(), "engine", "admit", "--exe", a, &r);
	ASSERT_EQ(r.code, 0, "the loader admits a");
	run_bin(a, "engine", "status", NULL, NULL, &r);
	ASSERT_EQ(r.code, 0, "a opens the engine");
	/* an admitted binary vouches for the next (a chain of upgrades) */
	run_bin(a, "engine", "admit", "--exe", b, &r);
	ASSERT_EQ(r.code, 0, "a admits b");
	run_bin(b, "engine", "status", NULL, NULL, &r);
	ASSERT_EQ(r.code, 0, "b opens the engine");
	/* writable by others: refused even when an admitted binary asks */
	run_bin(ktest_custode(), "engine", "admit", "--exe", w, &r);
	ASSERT_EQ(r.code, 125, "a world-writable binary is refused");
	ASSERT_CONTAINS(r.err, "engine.admit_refused", "reason");
	run_bin(w, "engine", "status", NULL, NULL, &r);
	ASSERT_EQ(r.code, 125, "and stays locked out");
	/* not custode at all */
	run_bin(ktest_custode(), "engine", "admit", "--exe", "/bin/busybox", &r);
	if (r.code != 125 || !strstr(r.err, "not a custode binary"))
		run_bin(ktest_custode(), "engine", "admit", "--exe", "/bin/sh", &r);
	ASSERT_EQ(r.code, 125, "a shell is not admitted");
	ASSERT_CONTAINS(r.err, "not a custode binary", "reason");
	/* usage */
	run_bin(ktest_custode(), "engine", "status", "--exe", a, &r);
	ASSERT_EQ(r.code, 2, "--exe goes with admit only");
	run_bin(ktest_custode(), "engine", "admit", "--exe", "relative", &r);
	ASSERT_EQ(r.code, 2, "--exe wants an absolute path");
}
