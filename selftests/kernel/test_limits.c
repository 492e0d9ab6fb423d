// SPDX-License-Identifier: Apache-2.0
/*
 * Limits from the policy: memory.max (a process allocating past it dies),
 * pids.max (a fork bomb stops at it), cpu.max, the wall clock, the output
 * cap, and a required limit without its controller (refused) or an optional
 * one (reported "no controller"). Each with a control run without the limit.
 */
#include <time.h>
#include <sys/stat.h>

#include "util/fsutil.h"

#include "procutil.h"

static void fixture(struct ktest_dirs *d, char *receipt, size_t len)
{
	ASSERT_TRUE(ktest_make_dirs(d), "dirs");
	snprintf(receipt, len, "%s/receipt.json", d->root);
}

KTEST(limits_memory_max_kills)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	char receipt[400];
	const char *mem32, *mem256;
	json_t *rc, *e;

	ktest_need_cgroup_bpf();
	pu_need_controller("memory");
	fixture(&d, receipt, sizeof(receipt));
	mem32 = pu_policy(d.root, "mem32", POLICY("mem32", "{\"limits\":{\"memoryBytes\":33554432,\"required\":[\"memoryBytes\"]}}"));
	mem256 = pu_policy(d.root, "mem256", POLICY("mem256", "{\"limits\":{\"memoryBytes\":268435456}}"));

	pu_run_probe(&r, ARGS("--policy", mem256), ARGS("alloc", "64"));
	ASSERT_EQ(r.code, 0, "control: 64 MiB under a 256 MiB limit");
	ASSERT_STREQ(r.out, "ok\n", "control: allocated");

	pu_run_probe(&r, ARGS("--policy", mem32, "--receipt", receipt), ARGS("alloc", "64"));
	ASSERT_EQ(r.code, 128 + SIGKILL, "64 MiB under a 32 MiB limit: killed (OOM)");
	ASSERT_STREQ(r.out, "", "never finished");
	rc = pu_load_json(receipt);
	e = pu_class(rc, "enforced", "limits", NULL);
	if (ASSERT_TRUE(e != NULL, "limits enforced")) {
		ASSERT_STREQ(json_string_value(json_object_get(e, "mechanism")), "cgroup v2", "mechanism");
		ASSERT_STREQ(json_string_value(json_object_get(json_object_get(e, "cgroup"), "memory.max")), "33554432",
			     "memory.max");
	}
	ASSERT_EQ(json_integer_value(json_object_get(json_object_get(rc, "exit"), "signal")), 9, "exit.signal");
	ASSERT_TRUE(json_integer_value(json_object_get(json_object_get(rc, "resources"), "memory_peak_bytes")) <= 33554432 + (1 << 20),
		    "memory.peak at the limit");
	ASSERT_TRUE(json_is_true(json_object_get(rc, "cleaned_up")), "cleaned up");
	json_decref(rc);
}

KTEST(limits_pids_fork_bomb_stops)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	char receipt[400];
	const char *p16, *p200;
	/*
	 * A classic bomb in the background (its shells die on failed forks and
	 * free pids for the others: it churns at the limit); the run's main
	 * process just sleeps, so only the wall clock ends it.
	 */
	const char *bomb = "sh -c 'b() { b & b & wait; }; b' 2>/dev/null & exec sleep 60";
	json_t *rc;

	ktest_need_cgroup_bpf();
	pu_need_controller("pids");
	fixture(&d, receipt, sizeof(receipt));
	p16 = pu_policy(d.root, "p16", POLICY("p16", "{\"limits\":{\"pids\":16,\"wallSeconds\":3}}"));
	p200 = pu_policy(d.root, "p200", POLICY("p200", "{\"limits\":{\"pids\":200,\"wallSeconds\":3}}"));

	/* control: a higher limit lets the bomb grow past 16 */
	ktest_run(pu_argv(ARGS("--policy", p200, "--receipt", receipt), ARGS("/bin/sh", "-c", bomb)), -1, 120000, &r);
	ASSERT_EQ(r.code, 124, "control: the wall clock ends it");
	rc = pu_load_json(receipt);
	ASSERT_TRUE(json_integer_value(json_object_get(json_object_get(rc, "resources"), "pids_peak")) > 16,
		    "control: more than 16 processes");
	json_decref(rc);

	ktest_run(pu_argv(ARGS("--policy", p16, "--receipt", receipt), ARGS("/bin/sh", "-c", bomb)), -1, 120000, &r);
	ASSERT_EQ(r.code, 124, "the wall clock ends the bomb");
	rc = pu_load_json(receipt);
	ASSERT_EQ(json_integer_value(json_object_get(json_object_get(rc, "resources"), "pids_peak")), 16,
		  "the bomb stops at pids.max");
	ASSERT_STREQ(json_string_value(json_object_get(json_object_get(pu_class(rc, "enforced", "limits", NULL), "cgroup"),
						       "pids.max")),
		     "16", "pids.max in the receipt");
	ASSERT_STREQ(json_string_value(json_object_get(json_object_get(rc, "exit"), "cancelled")), "timeout", "cancelled");
	ASSERT_TRUE(json_is_true(json_object_get(rc, "cleaned_up")), "nothing survives");
	json_decref(rc);
	ASSERT_EQ(pu_run_cgroups(), 0, "no run cgroup left");
}

KTEST(limits_cpu_max_written)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	const char *pol;

	ktest_need_cgroup_bpf();
	pu_need_controller("cpu");
	ASSERT_TRUE(ktest_make_dirs(&d), "dirs");
	pol = pu_policy(d.root, "cpu", POLICY("cpu", "{\"limits\":{\"cpu\":0.1}}"));
	ktest_run(pu_argv(ARGS("--policy", pol),
			  ARGS("/bin/sh", "-c", "cat /sys/fs/cgroup$(cut -d: -f3 /proc/self/cgroup)/cpu.max")),
		  -1, 60000, &r);
	ASSERT_STREQ(r.out, "10000 100000\n", "cpu.max of the run's cgroup");
	ktest_run(pu_argv(ARGS("--profile", "net-only"),
			  ARGS("/bin/sh", "-c", "cat /sys/fs/cgroup$(cut -d: -f3 /proc/self/cgroup)/cpu.max")),
		  -1, 60000, &r);
	ASSERT_STREQ(r.out, "max 100000\n", "control: no cpu limit without the policy's");
}

KTEST(limits_wall_seconds)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	char receipt[400];
	const char *pol;
	struct timespec t0, t1;
	json_t *rc, *e;

	ktest_need_cgroup_bpf();
	fixture(&d, receipt, sizeof(receipt));
	pol = pu_policy(d.root, "wall", POLICY("wall", "{\"limits\":{\"wallSeconds\":2}}"));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ktest_run(pu_argv(ARGS("--policy", pol, "--receipt", receipt), ARGS("/bin/sleep", "60")), -1, 120000, &r);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ASSERT_EQ(r.code, 124, "wallSeconds: exit 124");
	ASSERT_TRUE(t1.tv_sec - t0.tv_sec < 30, "well before the sleep ends");
	rc = pu_load_json(receipt);
	e = pu_class(rc, "enforced", "timeout", NULL);
	if (ASSERT_TRUE(e != NULL, "timeout in the receipt")) {
		ASSERT_EQ(json_integer_value(json_object_get(e, "seconds")), 2, "seconds");
		ASSERT_STREQ(json_string_value(json_object_get(e, "source")), "policy", "source");
	}
	json_decref(rc);
	/* --timeout shorter than the policy's wins */
	ktest_run(pu_argv(ARGS("--policy", pol, "--timeout", "1", "--receipt", receipt), ARGS("/bin/sleep", "60")), -1,
		  120000, &r);
	rc = pu_load_json(receipt);
	ASSERT_STREQ(json_string_value(json_object_get(pu_class(rc, "enforced", "timeout", NULL), "source")), "--timeout",
		     "the shorter wins");
	json_decref(rc);
}

KTEST(limits_output_cap)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	char receipt[400];
	const char *cap, *big;
	json_t *rc, *e;

	ktest_need_cgroup_bpf();
	fixture(&d, receipt, sizeof(receipt));
	cap = pu_policy(d.root, "cap", POLICY("cap", "{\"limits\":{\"outputBytes\":1000}}"));
	big = pu_policy(d.root, "big", POLICY("big", "{\"limits\":{\"outputBytes\":1000000}}"));

	ktest_run(pu_argv(ARGS("--policy", big), ARGS("/bin/sh", "-c", "yes | head -c 5000; echo err >&2")), -1, 60000, &r);
	ASSERT_EQ(r.code, 0, "control: under the cap");
	ASSERT_EQ(strlen(r.out), 5000, "control: all of stdout relayed");
	ASSERT_STREQ(r.err, "err\n", "control: stderr relayed apart");

	ktest_run(pu_argv(ARGS("--policy", cap, "--receipt", receipt), ARGS("/bin/sh", "-c", "yes; sleep 30")), -1, 60000, &r);
	ASSERT_EQ(r.code, 125, "over the cap: cancelled (125)");
	ASSERT_EQ(strlen(r.out), 1000, "exactly the cap relayed");
	ASSERT_CONTAINS(r.err, "limit.output", "reason on stderr");
	rc = pu_load_json(receipt);
	ASSERT_STREQ(json_string_value(json_object_get(json_object_get(rc, "exit"), "cancelled")), "output", "cancelled");
	e = pu_class(rc, "enforced", "output", NULL);
	if (ASSERT_TRUE(e != NULL, "output in the receipt")) {
		ASSERT_EQ(json_integer_value(json_object_get(e, "limit_bytes")), 1000, "limit");
		ASSERT_TRUE(json_integer_value(json_object_get(e, "written_bytes")) > 1000, "written counted past the cap");
	}
	ASSERT_TRUE(json_is_true(json_object_get(rc, "cleaned_up")), "cleaned up");
	json_decref(rc);
	ASSERT_EQ(pu_run_cgroups(), 0, "no run cgroup left");
}

/*
 * A cgroup root whose parent gives it no memory controller: a required memory
 * limit is refused, an optional one is reported "no controller".
 */
KTEST(limits_missing_controller)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	char receipt[400], mount[256], parent[400], root[512], env_root[600];
	const char *req, *opt;
	json_t *rc, *e;

	ktest_need_cgroup_bpf();
	pu_need_controller("pids");
	fixture(&d, receipt, sizeof(receipt));
	req = pu_policy(d.root, "req", POLICY("req", "{\"limits\":{\"memoryBytes\":33554432,\"required\":[\"memoryBytes\"]}}"));
	opt = pu_policy(d.root, "opt", POLICY("opt", "{\"limits\":{\"memoryBytes\":33554432,\"pids\":64}}"));
	if (!ASSERT_EQ(custode_cgroup2_mount(mount, sizeof(mount)), 0, "cgroup2"))
		return;
	snprintf(parent, sizeof(parent), "%s/ktest-nomem-%d", mount, (int)getpid());
	snprintf(root, sizeof(root), "%s/custode", parent);
	if (!ASSERT_EQ(mkdir(parent, 0755), 0, "parent cgroup"))
		return;
	/* pids yes, memory no: the parent delegates only pids */
	custode_cgroup_enable_controllers(mount, "pids");
	{
		char f[512];
		snprintf(f, sizeof(f), "%s/cgroup.subtree_control", parent);
		ASSERT_EQ(custode_write_str(f, "+pids"), 0, "parent delegates pids only");
	}
	snprintf(env_root, sizeof(env_root), "CUSTODE_CGROUP_ROOT=%s", root);
	{
		char *argv[] = {"/usr/bin/env", env_root, (char *)ktest_custode(), "run", "--policy", (char *)req, "--",
				"/bin/echo", "RAN", NULL};
		if (access("/usr/bin/env", X_OK) != 0)
			argv[0] = "/bin/env";
		ktest_run(argv, -1, 60000, &r);
		ASSERT_EQ(r.code, 125, "required memory limit without a memory controller: refused");
		ASSERT_CONTAINS(r.err, "limit.unavailable", "reason");
		ASSERT_TRUE(strstr(r.out, "RAN") == NULL, "nothing ran");
	}
	{
		char *argv[] = {"/usr/bin/env", env_root, (char *)ktest_custode(), "run", "--policy", (char *)opt, "--receipt",
				receipt, "--", "/bin/echo", "RAN", NULL};
		if (access("/usr/bin/env", X_OK) != 0)
			argv[0] = "/bin/env";
		ktest_run(argv, -1, 60000, &r);
		ASSERT_EQ(r.code, 0, "optional: runs");
		ASSERT_STREQ(r.out, "RAN\n", "ran");
		rc = pu_load_json(receipt);
		e = pu_class(rc, "not_enforced", "limits", "memoryBytes");
		if (ASSERT_TRUE(e != NULL, "memoryBytes listed as not enforced"))
			ASSERT_STREQ(json_string_value(json_object_get(e, "reason")), "no controller", "why");
		ASSERT_STREQ(json_string_value(json_object_get(json_object_get(pu_class(rc, "enforced", "limits", NULL), "cgroup"),
							       "pids.max")),
			     "64", "pids still enforced");
		json_decref(rc);
	}
	/* leave the default cgroup root to the tests that follow (the engine follows the root: replaced when idle) */
	custode_cgroup_remove(root);
	rmdir(parent);
}
