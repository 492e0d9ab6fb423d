// SPDX-License-Identifier: Apache-2.0
/*
 * A daemon started in a cgroup namespace of its own (a DaemonSet's container
 * under a runtime that gives privileged containers a private one) sees every
 * /proc/PID/cgroup path relative to it: its own cgroup reads as "/", so it
 * would take itself for the root cgroup's and accept an attach of the cgroup
 * that holds it — confining itself. It enters PID 1's cgroup namespace
 * first (with hostPID, the host's), so its paths are the host's.
 * Control: a process started the same way that doesn't enter (cat) reads
 * its cgroup as "/".
 */
#include "test_daemon_fixture.h"
#include "util/fsutil.h"

static bool same_ns(int pid)
{
	char p[64];
	struct stat a, b;

	snprintf(p, sizeof(p), "/proc/%d/ns/cgroup", pid);
	return stat(p, &a) == 0 && stat("/proc/1/ns/cgroup", &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

KTEST(daemon_private_cgroupns_enters_the_hosts)
{
	static struct dfix f;
	char top[PATH_MAX], dcg[PATH_MAX], ccg[PATH_MAX], want[PATH_MAX + 8];
	struct ktest_result r;

	ktest_need_lsm(); /* an attach loads the file and process classes */
	if (!df_setup(&f))
		return;
	snprintf(top, sizeof(top), "%s/ktest-cgns-%d", f.cgmount, (int)getpid());
	snprintf(dcg, sizeof(dcg), "%s/daemon", top);
	snprintf(ccg, sizeof(ccg), "%s/control", top);
	if (!ASSERT_TRUE(df_cg_make(top) && df_cg_make(dcg) && df_cg_make(ccg), "cgroups"))
		return;

	/* control: cgnsexec's namespace is private, its cgroup reads "/" */
	{
		char *argv[] = {(char *)ktest_helper("cgnsexec"), ccg, "cat", "/proc/self/cgroup", NULL};

		ktest_run(argv, -1, 30000, &r);
		ASSERT_EQ(r.code, 0, "control: cgnsexec cat");
		ASSERT_STREQ(r.out, "0::/\n", "control: in its own cgroup namespace the cgroup reads as /");
	}

	/* the daemon, started the same way */
	{
		char *argv[] = {(char *)ktest_helper("cgnsexec"), dcg, (char *)ktest_custode(), "daemon", "--no-resolver",
				NULL};

		f.pid = kt_bg(argv, f.out, f.err);
		if (!ASSERT_TRUE(kt_wait_for(f.err, "custode daemon: ready", f.pid, 60000), "daemon in a private cgroupns")) {
			ktest_log("%s", kt_slurp(f.err));
			goto out;
		}
	}
	ASSERT_TRUE(same_ns(f.pid), "the daemon entered PID 1's cgroup namespace");
	{
		char p[64], *text = NULL;

		snprintf(p, sizeof(p), "/proc/%d/cgroup", f.pid);
		snprintf(want, sizeof(want), "0::%s\n", dcg + strlen(f.cgmount));
		if (custode_read_file(p, 4096, &text, NULL) >= 0)
			ASSERT_STREQ(text, want, "its cgroup, as the host sees it");
		free(text);
	}
	/* the cgroup that holds it is refused; the sibling is not */
	ASSERT_STREQ(df_refusal(json_pack("{s:s, s:s, s:s}", "cmd", "attach", "cgroup", top, "profile", "read")),
		     "attach.cgroup", "the cgroup holding the daemon (from its private namespace) is refused");
	ASSERT_STREQ(df_refusal(json_pack("{s:s, s:s, s:s}", "cmd", "attach", "cgroup", dcg, "profile", "read")),
		     "attach.cgroup", "the daemon's own cgroup is refused");
	{
		json_t *resp = df_call(json_pack("{s:s, s:s, s:s}", "cmd", "attach", "cgroup", ccg, "profile", "read"));

		char rid[17] = "";

		if (ASSERT_TRUE(resp != NULL, "a sibling cgroup attaches"))
			snprintf(rid, sizeof(rid), "%s",
				 json_string_value(json_object_get(json_object_get(resp, "run"), "run_id")) ?: "");
		json_decref(resp);
		resp = df_call(json_pack("{s:s, s:s}", "cmd", "detach", "run_id", rid));
		ASSERT_TRUE(resp != NULL, "and detaches");
		json_decref(resp);
	}
out:
	kt_stop(&f.pid, SIGTERM);
	df_cg_remove(top);
}
