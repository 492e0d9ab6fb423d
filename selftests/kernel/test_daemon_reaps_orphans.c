// SPDX-License-Identifier: Apache-2.0
/*
 * The daemon reaps orphaned runs itself (the pass `custode gc` runs,
 * custode_run_reap_orphans): a run whose launcher is SIGKILLed stays
 * confined until the daemon notices, then its command is killed, its cgroup
 * removed and it is unregistered. Control: a run whose launcher lives is
 * left alone by the same pass.
 */
#include "test_daemon_fixture.h"

struct launched {
	struct ktest_proc p;
	int pid; /* the command's */
	char cg[PATH_MAX];
	char rid[17];
};

/* `custode run -- tprobe wait-open OUTSIDE r`: its pid, cgroup and run id (from `runs`). */
static bool launch(struct dfix *f, struct launched *l)
{
	char *argv[] = {(char *)ktest_custode(), "run", "--workspace", f->d.ws, "--", (char *)ktest_tprobe(), "wait-open",
			f->d.outside, "r", NULL};
	char line[128];

	if (ktest_spawn(argv, -1, &l->p) < 0 || !ktest_read_line(l->p.out, line, sizeof(line), 60000) ||
	    sscanf(line, "ready %d", &l->pid) != 1 || !ktest_proc_cgroup(l->pid, l->cg, sizeof(l->cg)))
		return false;
	for (int tries = 0; tries < 50 && !l->rid[0]; tries++) {
		json_t *runs = df_call(json_pack("{s:s}", "cmd", "runs")), *r;
		size_t i;

		json_array_foreach(json_object_get(runs, "runs"), i, r)
			if (json_is_string(json_object_get(r, "cgroup")) &&
			    !strcmp(json_string_value(json_object_get(r, "cgroup")), l->cg))
				snprintf(l->rid, sizeof(l->rid), "%s", json_string_value(json_object_get(r, "run_id")));
		json_decref(runs);
		if (!l->rid[0])
			usleep(100000);
	}
	return l->rid[0] != 0;
}

KTEST(daemon_reaps_orphans)
{
	struct launched orphan = {.p = {.in = -1, .out = -1, .err = -1}}, live = {.p = {.in = -1, .out = -1, .err = -1}};
	char line[128], needle[80];
	struct dfix f;
	json_t *run;
	int st;

	ktest_need_lsm();
	if (!df_setup(&f) || !ASSERT_TRUE(df_daemon_start(&f, NULL), "daemon"))
		return;
	if (!ASSERT_TRUE(launch(&f, &orphan), "orphan-to-be launched") || !ASSERT_TRUE(launch(&f, &live), "live run"))
		goto out;

	/* the daemon frozen while the launcher dies: the orphan is still confined */
	kill(f.pid, SIGSTOP);
	kill(orphan.p.pid, SIGKILL);
	waitpid(orphan.p.pid, &st, 0);
	orphan.p.pid = 0;
	ASSERT_TRUE(ktest_pid_alive(orphan.pid), "the command outlives its launcher");
	ASSERT_TRUE(write(orphan.p.in, "go\n", 3) == 3, "go");
	if (ASSERT_TRUE(ktest_read_line(orphan.p.out, line, sizeof(line), 20000), "result"))
		ASSERT_STREQ(line, "EACCES", "the orphaned run is still denied");
	kill(f.pid, SIGCONT);

	/* no `custode gc`: the daemon reaps it */
	snprintf(needle, sizeof(needle), "gc: run %s: reaped orphaned run", orphan.rid);
	ASSERT_TRUE(kt_wait_for(f.err, needle, f.pid, 30000), "the daemon reports the reap");
	{
		json_t *m = df_call(json_pack("{s:s}", "cmd", "metrics"));
		const char *text = json_string_value(json_object_get(m, "text"));

		const char *at = text ? strstr(text, "\ncustode_runs_orphans_reaped_total ") : NULL;
		long n = at ? strtol(at + strlen("\ncustode_runs_orphans_reaped_total "), NULL, 10) : 0;

		/* at least this one (a leftover of an earlier test may have been reaped too) */
		ASSERT_TRUE(n >= 1, "the reap is counted in custode_runs_orphans_reaped_total");
		json_decref(m);
	}
	for (int i = 0; i < 500 && ktest_pid_alive(orphan.pid); i++)
		usleep(20000);
	ASSERT_TRUE(!ktest_pid_alive(orphan.pid), "the orphan's command killed");
	ASSERT_TRUE(access(orphan.cg, F_OK) != 0, "the orphan's cgroup removed");
	run = df_run(orphan.rid);
	ASSERT_TRUE(run == NULL, "the orphan unregistered");
	json_decref(run);

	/* the control: the same pass left the run with a live launcher alone */
	ASSERT_TRUE(ktest_pid_alive(live.pid), "the live run's command untouched");
	run = df_run(live.rid);
	if (ASSERT_TRUE(run != NULL, "the live run still registered"))
		ASSERT_STREQ(json_string_value(json_object_get(run, "state")), "live", "and live");
	json_decref(run);
	ASSERT_TRUE(write(live.p.in, "go\n", 3) == 3, "go (live)");
	if (ASSERT_TRUE(ktest_read_line(live.p.out, line, sizeof(line), 20000), "result (live)"))
		ASSERT_STREQ(line, "EACCES", "and still confined");
	ktest_close_stdin(&live.p); /* tprobe ends at EOF, and its launcher with the run */
	ASSERT_TRUE(ktest_wait(&live.p, 30000) >= 0, "the live launcher ends");
out:
	ktest_proc_close(&orphan.p);
	ktest_proc_close(&live.p);
	{
		char *gc[] = {(char *)ktest_custode(), "gc", NULL};
		static struct ktest_result r;

		ktest_run(gc, -1, 60000, &r); /* whatever a failure left */
	}
	kt_stop(&f.pid, SIGTERM);
}
