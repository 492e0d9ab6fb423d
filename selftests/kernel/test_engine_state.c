// SPDX-License-Identifier: Apache-2.0
/* The pinned engine's own state: interrupted loads, concurrent users. Natively and in the guest. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "ktest.h"

/*
 * Whether pid holds the engine open: every user holds /run/custode/engine.users
 * shared (flock), listed in /proc/locks as "N: FLOCK ADVISORY READ PID MAJ:MIN:INO ...".
 */
static bool holds_engine(int pid)
{
	struct stat st;
	char line[256], want[64];
	bool held = false;
	FILE *f;

	if (stat("/run/custode/engine.users", &st) < 0 || !(f = fopen("/proc/locks", "r")))
		return false;
	snprintf(want, sizeof(want), " %d %02x:%02x:%lu ", pid, major(st.st_dev), minor(st.st_dev), (unsigned long)st.st_ino);
	while (!held && fgets(line, sizeof(line), f))
		held = strstr(line, " FLOCK ") && strstr(line, " READ ") && !strstr(line, "->") && strstr(line, want);
	fclose(f);
	return held;
}

/* Wait until pid holds the engine open; false on a hang detector's timeout (ktest_slack). */
static bool wait_holds_engine(int pid, int timeout_ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (holds_engine(pid))
			return true;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000L + (t.tv_nsec - t0.tv_nsec) / 1000000 >= ktest_slack(timeout_ms))
			return false;
		usleep(20000);
	}
}

/* A load interrupted after pinning programs but before meta: the next run clears the leftovers. */
KTEST(engine_recovers_from_interrupted_load)
{
	static struct ktest_result r;
	char *run[] = {(char *)ktest_custode(), "run", "--profile", "net-only", "--", "/bin/true", NULL};

	ktest_need_cgroup_bpf();
	if (!ASSERT_EQ(ktest_run(run, -1, 60000, &r), 0, "first run loads the engine"))
		return;
	ASSERT_TRUE(access("/sys/fs/bpf/custode/links/custode_connect4", F_OK) == 0, "links pinned");
	/* simulate the interruption: programs pinned, no description of them */
	ASSERT_EQ(unlink("/sys/fs/bpf/custode/meta"), 0, "remove meta");
	ktest_run(run, -1, 60000, &r);
	ASSERT_EQ(r.code, 0, "next run reloads cleanly");
	ASSERT_TRUE(strstr(r.err, "File exists") == NULL, "no collision with leftover pins");
	ASSERT_TRUE(access("/sys/fs/bpf/custode/meta", F_OK) == 0, "meta back");
}

/* `custode engine unload` must not pull the engine from under a process that has it open. */
KTEST(engine_unload_refused_while_in_use)
{
	static struct ktest_result r;
	struct ktest_proc p;
	char line[128];
	char *load[] = {(char *)ktest_custode(), "run", "--profile", "net-only", "--", "/bin/true", NULL};
	char *follow[] = {(char *)ktest_custode(), "events", "--follow", NULL};
	char *unload[] = {(char *)ktest_custode(), "engine", "unload", NULL};
	char *hold[] = {(char *)ktest_custode(), "run", "--profile", "net-only", "--", (char *)ktest_tprobe(), "wait",
			"socket", "2", "1", "0", NULL};

	ktest_need_cgroup_bpf();
	if (!ASSERT_EQ(ktest_run(load, -1, 60000, &r), 0, "engine loaded"))
		return;
	/* a reader holding the engine open */
	if (ASSERT_EQ(ktest_spawn(follow, -1, &p), 0, "events --follow")) {
		/* until it has the engine open */
		if (!wait_holds_engine(p.pid, 30000))
			ktest_log("events --follow (pid %d) does not hold the engine open", p.pid);
		ktest_run(unload, -1, 30000, &r);
		ASSERT_EQ(r.code, 125, "unload refused while a reader has it open");
		ASSERT_CONTAINS(r.err, "engine.mismatch", "reason");
		kill(p.pid, SIGTERM);
		ktest_wait(&p, 10000);
		ktest_proc_close(&p);
	}
	/* a live run */
	if (ASSERT_EQ(ktest_spawn(hold, -1, &p), 0, "run") &&
	    ASSERT_TRUE(ktest_read_line(p.out, line, sizeof(line), 60000), "run ready")) {
		ktest_run(unload, -1, 30000, &r);
		ASSERT_EQ(r.code, 125, "unload refused while a run is registered");
		ASSERT_CONTAINS(r.err, "unconfined", "says why");
		ktest_close_stdin(&p);
		ASSERT_EQ(ktest_wait(&p, 30000), 2, "run ends (tprobe wait without a go line)");
		ktest_proc_close(&p);
	}
	ASSERT_EQ(ktest_run(unload, -1, 30000, &r), 0, "unload once idle");
	ASSERT_TRUE(access("/sys/fs/bpf/custode/meta", F_OK) != 0, "unpinned");
}
