// SPDX-License-Identifier: Apache-2.0
/*
 * Restart safety: SIGKILL the daemon during 10 live runs (6 attached, 4
 * launched). Every run stays confined while it is dead; the next daemon
 * re-adopts them with their exact counts, reaps the attached runs whose
 * cgroup vanished meanwhile, and reaps the launched run whose launcher died
 * (test_daemon_reaps_orphans.c shows it confined until then).
 */
#include "test_daemon_fixture.h"

#define N_ATT 6
#define N_RUN 4

struct live {
	struct ktest_proc p;
	char cg[PATH_MAX];
	char rid[17];
	long long expect;
	bool attached, gone;
};

static bool launched_probe(struct dfix *f, struct live *l)
{
	char *argv[] = {(char *)ktest_custode(), "run", "--profile", "read", "--workspace", f->d.ws, "--", (char *)df_aprobe(),
			"repl", NULL};
	char line[128];
	json_t *runs, *r;
	size_t i;
	int before = 0;

	runs = df_call(json_pack("{s:s}", "cmd", "runs"));
	before = (int)json_array_size(json_object_get(runs, "runs"));
	json_decref(runs);
	if (ktest_spawn(argv, -1, &l->p) < 0 || !ktest_read_line(l->p.out, line, sizeof(line), 30000) ||
	    strncmp(line, "ready ", 6))
		return false;
	/* which run is it: the launched run holding this probe's pid */
	for (int tries = 0; tries < 50 && !l->rid[0]; tries++) {
		char cg[PATH_MAX];

		if (!ktest_proc_cgroup(atoi(line + 6), cg, sizeof(cg)))
			break;
		runs = df_call(json_pack("{s:s}", "cmd", "runs"));
		json_array_foreach(json_object_get(runs, "runs"), i, r)
			if (json_is_string(json_object_get(r, "cgroup")) &&
			    !strcmp(json_string_value(json_object_get(r, "cgroup")), cg)) {
				snprintf(l->rid, sizeof(l->rid), "%s", json_string_value(json_object_get(r, "run_id")));
				snprintf(l->cg, sizeof(l->cg), "%s", cg);
			}
		json_decref(runs);
		if (!l->rid[0])
			usleep(100000);
	}
	(void)before;
	return l->rid[0] != 0;
}

KTEST(daemon_sigkill_runs_stay_confined_and_readopted)
{
	struct dfix f;
	struct live L[N_ATT + N_RUN];
	json_t *resp, *runs, *st;
	int orphan = N_ATT; /* the first launched run: its launcher is killed too */
	struct ktest_result r;
	size_t i;
	json_t *o;

	ktest_need_lsm();
	memset(L, 0, sizeof(L));
	if (!df_setup(&f) || !ASSERT_TRUE(df_daemon_start(&f, NULL), "daemon"))
		return;
	for (int k = 0; k < N_ATT; k++) {
		L[k].attached = true;
		snprintf(L[k].cg, sizeof(L[k].cg), "%s/ktest-restart-%d-%d", f.cgmount, (int)getpid(), k);
		if (!ASSERT_TRUE(df_cg_make(L[k].cg) && df_probe(L[k].cg, &L[k].p), "attached probe"))
			goto out;
		resp = df_call(json_pack("{s:s, s:s, s:s, s:s}", "cmd", "attach", "cgroup", L[k].cg, "profile", "read",
					 "workspace", f.d.ws));
		if (!ASSERT_TRUE(resp != NULL, "attach"))
			goto out;
		snprintf(L[k].rid, sizeof(L[k].rid), "%s",
			 json_string_value(json_object_get(json_object_get(resp, "run"), "run_id")));
		json_decref(resp);
	}
	for (int k = N_ATT; k < N_ATT + N_RUN; k++)
		if (!ASSERT_TRUE(launched_probe(&f, &L[k]), "launched probe"))
			goto out;
	/* denials before the kill: run k gets (k % 3) + 1 */
	for (int k = 0; k < N_ATT + N_RUN; k++)
		for (int n = 0; n <= k % 3; n++) {
			ASSERT_STREQ(df_ask(&L[k].p, "open %s", f.d.outside), "EACCES", "denied (daemon up)");
			L[k].expect++;
		}

	kt_stop(&f.pid, SIGKILL);
	/* no daemon: every run still confined */
	for (int k = 0; k < N_ATT + N_RUN; k++) {
		ASSERT_STREQ(df_ask(&L[k].p, "open %s", f.d.outside), "EACCES", "denied (daemon killed)");
		L[k].expect++;
		ASSERT_STREQ(df_ask(&L[k].p, "open %s", f.d.ws_file), "ok", "the policy still grants the workspace");
	}
	/* meanwhile, three attached cgroups vanish (their container stopped) and one launcher dies */
	for (int k = 0; k < 3; k++) {
		df_probe_end(&L[k].p);
		df_cg_remove(L[k].cg);
		L[k].gone = true;
	}
	kill(L[orphan].p.pid, SIGKILL);
	waitpid(L[orphan].p.pid, NULL, 0);

	if (!ASSERT_TRUE(df_daemon_start(&f, NULL), "daemon restarted"))
		goto out;
	for (int k = 0; k < 3; k++) {
		char needle[64];

		snprintf(needle, sizeof(needle), "reaped run %s", L[k].rid);
		ASSERT_CONTAINS(kt_slurp(f.err), needle, "a vanished attached cgroup is reaped at start");
	}
	{
		char needle[80];

		snprintf(needle, sizeof(needle), "gc: run %s: reaped orphaned run", L[orphan].rid);
		ASSERT_TRUE(kt_wait_for(f.err, needle, f.pid, 30000), "the daemon reaps the orphaned launcher run");
		L[orphan].gone = true;
	}
	runs = df_call(json_pack("{s:s}", "cmd", "runs"));
	for (int k = 0; k < N_ATT + N_RUN; k++) {
		json_t *found = NULL;

		json_array_foreach(json_object_get(runs, "runs"), i, o)
			if (!strcmp(json_string_value(json_object_get(o, "run_id")), L[k].rid))
				found = o;
		if (L[k].gone) {
			ASSERT_TRUE(found == NULL, "reaped: no longer registered");
			continue;
		}
		if (!ASSERT_TRUE(found != NULL, "re-adopted"))
			continue;
		ASSERT_EQ(df_denials(found, "file.read.denied"), L[k].expect, "exact count across the restart");
		ASSERT_STREQ(json_string_value(json_object_get(found, "kind")), L[k].attached ? "attached" : "launched", "kind");
		if (L[k].attached)
			ASSERT_TRUE(json_is_true(json_object_get(json_object_get(found, "policy"), "verified")),
				    "policy re-verified");
	}
	json_decref(runs);
	/* the gates follow: three attached runs left */
	st = df_call(json_pack("{s:s}", "cmd", "status"));
	{
		int mine = 0;
		json_t *g;

		json_array_foreach(json_object_get(json_object_get(st, "engine"), "gates"), i, g)
			for (int k = 3; k < N_ATT; k++) {
				__u64 id = 0;

				custode_cgroup_id(L[k].cg, &id);
				mine += (__u64)json_integer_value(json_object_get(g, "cgroup_id")) == id;
			}
		ASSERT_EQ(mine, N_ATT - 3, "a gate per remaining attached run");
	}
	json_decref(st);
	/* and everything still confined after the restart */
	for (int k = 0; k < N_ATT + N_RUN; k++) {
		if (L[k].gone)
			continue;
		ASSERT_STREQ(df_ask(&L[k].p, "open %s", f.d.outside), "EACCES", "denied (new daemon)");
	}
	/* `custode gc` leaves the attached runs to the daemon */
	{
		char *argv[] = {(char *)ktest_custode(), "gc", NULL};
		json_t *run;

		ktest_run(argv, -1, 60000, &r);
		ASSERT_EQ(r.code, 0, "gc");
		for (int k = 3; k < N_ATT; k++) {
			run = df_run(L[k].rid);
			ASSERT_TRUE(run != NULL, "gc left the attached run registered");
			json_decref(run);
			ASSERT_STREQ(df_ask(&L[k].p, "open %s", f.d.outside), "EACCES", "and confined");
		}
	}
out:
	for (int k = 0; k < N_ATT; k++) {
		if (L[k].rid[0] && !L[k].gone)
			json_decref(df_call(json_pack("{s:s, s:s}", "cmd", "detach", "run_id", L[k].rid)));
		df_probe_end(&L[k].p);
		df_cg_remove(L[k].cg);
	}
	for (int k = N_ATT; k < N_ATT + N_RUN; k++) {
		ktest_close_stdin(&L[k].p); /* aprobe exits at EOF; the launcher reaps the run */
		if (L[k].p.pid > 0 && k != orphan)
			ktest_wait(&L[k].p, 30000);
		ktest_proc_close(&L[k].p);
	}
	{
		char *argv[] = {(char *)ktest_custode(), "gc", NULL};
		ktest_run(argv, -1, 60000, &r); /* the orphan, if still there */
	}
	kt_stop(&f.pid, SIGTERM);
}
