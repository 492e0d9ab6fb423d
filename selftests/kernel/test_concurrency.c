// SPDX-License-Identifier: Apache-2.0
/*
 * 50 runs at once under six different policies (one a built-in profile): each sees only its own
 * (egress rules differ per policy, so a run's connects show which rules it
 * got), and when they have all ended no cgroup, map entry, tmp directory or
 * state file is left. Runs under the process policies also each try to
 * signal a host process: denied, and counted in their own receipt only.
 */
#include "procutil.h"

#define NRUNS 50
#define NPOL 6

static const struct {
	const char *name;
	const char *content;
	const char *expect; /* connect to 8080, then 8081 */
	bool process;
} pols[NPOL] = {
	{"c0", "{\"network\":{\"egress\":[{\"cidr\":\"203.0.113.10\",\"ports\":[8080]}]}}", "ok\nEPERM\n", false},
	{"c1", "{\"network\":{\"egress\":[{\"cidr\":\"203.0.113.10\",\"ports\":[8081]}]}}", "EPERM\nok\n", false},
	{"c2", "{\"network\":{\"egress\":[{\"cidr\":\"203.0.113.0/24\",\"ports\":[8080]}]},\"process\":{}}", "ok\nEPERM\n", true},
	{"c3", "{\"network\":{\"egress\":[{\"cidr\":\"203.0.113.10\",\"ports\":[8081]}]},\"process\":{\"ptrace\":\"run\"},"
	       "\"limits\":{\"pids\":64}}",
	 "EPERM\nok\n", true},
	{"c4", "{\"network\":{\"egress\":[]},\"process\":{}}", "EPERM\nEPERM\n", true},
	{"net-only", NULL, "EPERM\nEPERM\n", false}, /* a built-in profile */
};

KTEST(concurrency_50_runs_isolated_and_clean)
{
	static struct ktest_result r;
	static struct ktest_proc procs[NRUNS];
	static char receipts[NRUNS][400], scripts[NPOL][1024];
	struct ktest_proc t;
	struct ktest_dirs d;
	const char *paths[NPOL];
	static char pathbuf[NPOL][512];
	unsigned long addr;
	int pid = 0, ok = 0, tmp_before, tmp_after;
	json_t *st;

	ktest_need_lsm();
	ktest_need_cgroup_bpf();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs") || !ASSERT_TRUE(ktest_netns(), "netns"))
		return;
	if (!ASSERT_TRUE(pu_host_target(NOBODY, &t, &pid, &addr), "host target"))
		return;
	for (int k = 0; k < NPOL; k++) {
		char doc[1024];
		snprintf(scripts[k], sizeof(scripts[k]),
			 "T=%s; P=%s; $T connect 203.0.113.10 8080; $T connect 203.0.113.10 8081; $P kill %d 0 >/dev/null; :",
			 ktest_tprobe(), ktest_helper("pprobe"), pid);
		if (!pols[k].content) {
			paths[k] = NULL;
			continue;
		}
		snprintf(doc, sizeof(doc), "{\"schema\":\"custode.policy/v1\",\"name\":\"test/%s\",\"version\":1,\"content\":%s}",
			 pols[k].name, pols[k].content);
		snprintf(pathbuf[k], sizeof(pathbuf[k]), "%s", ktest_policy_file(d.root, pols[k].name, doc) ?: "");
		paths[k] = pathbuf[k];
	}
	tmp_before = pu_count_dir("/tmp", "custode-");
	/* warm the engine (every class loaded) so the 50 start from the same state */
	ktest_run(pu_argv(ARGS("--policy", paths[3]), ARGS("/bin/true")), -1, 60000, &r);

	for (int i = 0; i < NRUNS; i++) {
		int k = i % NPOL;
		snprintf(receipts[i], sizeof(receipts[i]), "%s/receipt-%d.json", d.root, i);
		char *argv[] = {(char *)ktest_custode(), "run", paths[k] ? "--policy" : "--profile",
				(char *)(paths[k] ? paths[k] : pols[k].name), "--receipt", receipts[i], "--",
				"/bin/sh", "-c", scripts[k], NULL};
		if (!ASSERT_EQ(ktest_spawn(argv, -1, &procs[i]), 0, "spawn"))
			return;
		ktest_close_stdin(&procs[i]);
	}
	for (int i = 0; i < NRUNS; i++) {
		int k = i % NPOL, code = ktest_wait(&procs[i], 300000);
		char out[256] = "", what[64], want[64];
		ssize_t n = read(procs[i].out, out, sizeof(out) - 1);
		json_t *rc;

		out[n > 0 ? n : 0] = 0;
		snprintf(what, sizeof(what), "run %d (%s)", i, pols[k].name);
		ok += code == 0 && !strcmp(out, pols[k].expect);
		if (!ASSERT_EQ(code, 0, what) || !ASSERT_STREQ(out, pols[k].expect, what)) {
			char err[2048] = "";
			n = read(procs[i].err, err, sizeof(err) - 1);
			err[n > 0 ? n : 0] = 0;
			ktest_log("%s stderr: %s", what, err);
		}
		ktest_proc_close(&procs[i]);
		rc = pu_load_json(receipts[i]);
		snprintf(want, sizeof(want), "%s/%s", pols[k].content ? "test" : "builtin", pols[k].name);
		ASSERT_STREQ(json_string_value(json_object_get(json_object_get(rc, "policy"), "name")) ?: "", want,
			     "receipt names its own policy");
		/* its own denials only: one egress denial (two for c4), one signal denial under a process policy */
		ASSERT_EQ(pu_denials(rc, "net.egress.denied"), k >= 4 ? 2 : 1, what);
		ASSERT_EQ(pu_denials(rc, "process.signal.denied"), pols[k].process ? 1 : 0, what);
		ASSERT_TRUE(json_is_true(json_object_get(rc, "cleaned_up")), what);
		json_decref(rc);
	}
	ASSERT_EQ(ok, NRUNS, "every run saw exactly its own policy");
	ASSERT_TRUE(ktest_pid_alive(pid), "the host process was never signalled");
	pu_stop(&t);

	/* nothing left behind */
	ASSERT_EQ(pu_run_cgroups(), 0, "no run cgroup");
	tmp_after = pu_count_dir("/tmp", "custode-");
	ASSERT_EQ(tmp_after, tmp_before, "no private tmp directory");
	ASSERT_EQ(pu_count_dir("/run/custode/runs", ""), 0, "no run state or lock file");
	st = pu_engine_status();
	if (ASSERT_TRUE(st != NULL, "engine status")) {
		static const char *const maps[] = {"custode_runs",	   "custode_counters", "custode_path_rules",
						   "custode_identities", "custode_net_rules", "custode_net_private",
						   "custode_pins",	   NULL};
		json_t *entries = json_object_get(st, "entries");

		ASSERT_EQ(json_integer_value(json_object_get(st, "runs")), 0, "no run registered");
		for (int i = 0; maps[i]; i++) {
			json_t *v = json_object_get(entries, maps[i]);
			char what[96];

			snprintf(what, sizeof(what), "%s is empty", maps[i]);
			if (v || !strcmp(maps[i], "custode_runs"))
				ASSERT_EQ(json_integer_value(v), 0, what);
		}
		ASSERT_TRUE(json_object_get(entries, "custode_runs") != NULL, "entries listed");
	}
	json_decref(st);
}
