// SPDX-License-Identifier: Apache-2.0
/* custode run's contract: exit codes, refusals, timeout, the pinned engine reused, nothing left behind. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "ktest.h"

static int count_run_cgroups(void)
{
	char mount[512], root[600];
	DIR *d;
	struct dirent *de;
	int n = 0;

	if (custode_cgroup2_mount(mount, sizeof(mount)) < 0)
		return -1;
	snprintf(root, sizeof(root), "%s/custode", mount);
	d = opendir(root);
	if (!d)
		return 0;
	while ((de = readdir(d)))
		n += strncmp(de->d_name, "run-", 4) == 0;
	closedir(d);
	return n;
}

KTEST(run_exit_codes)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	char noexec[512];
	char *code7[] = {(char *)ktest_custode(), "run", "--", "/bin/sh", "-c", "exit 7", NULL};
	char *missing[] = {(char *)ktest_custode(), "run", "--", "/nonexistent/cmd", NULL};
	char *notexec[] = {(char *)ktest_custode(), "run", "--workspace", NULL, "--", noexec, NULL};
	char *signalled[] = {(char *)ktest_custode(), "run", "--", "/bin/sh", "-c", "kill -TERM $$", NULL};
	char *noprofile[] = {(char *)ktest_custode(), "run", "--profile", "no-such-profile", "--", "/bin/true", NULL};
	char *nocmd[] = {(char *)ktest_custode(), "run", NULL};
	char *badws[] = {(char *)ktest_custode(), "run", "--workspace", "/nonexistent", "--", "/bin/true", NULL};

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "fixture"))
		return;
	snprintf(noexec, sizeof(noexec), "%s/f", d.ws);
	notexec[3] = d.ws;
	ASSERT_EQ(ktest_run(code7, -1, 60000, &r), 7, "command's status");
	ASSERT_EQ(ktest_run(missing, -1, 60000, &r), 127, "not found");
	ASSERT_EQ(ktest_run(notexec, -1, 60000, &r), 126, "cannot execute");
	ASSERT_EQ(ktest_run(signalled, -1, 60000, &r), 128 + 15, "killed by a signal");
	ASSERT_EQ(ktest_run(noprofile, -1, 60000, &r), 125, "unknown profile refused");
	ASSERT_CONTAINS(r.err, "policy.unknown_profile", "reason code");
	ASSERT_EQ(ktest_run(nocmd, -1, 60000, &r), 125, "no command");
	ASSERT_EQ(ktest_run(badws, -1, 60000, &r), 125, "bad workspace");
	ASSERT_CONTAINS(r.err, "run.workspace", "reason code");
	ASSERT_EQ(count_run_cgroups(), 0, "no run cgroup left");
}

KTEST(run_needs_root)
{
	static struct ktest_result r;
	char *argv[] = {(char *)ktest_custode(), "run", "--", "/bin/true", NULL};

	/* runs natively too: refusal happens before any BPF */
	ktest_run(argv, 65534, 30000, &r);
	ASSERT_EQ(r.code, 125, "non-root refused with 125");
	ASSERT_CONTAINS(r.err, "privilege.required", "reason code");
	ASSERT_TRUE(strstr(r.out, "") && r.out[0] == 0, "the command did not run");
}

KTEST(run_timeout_kills_everything)
{
	static struct ktest_result r;
	struct timespec t0, t1;
	char *argv[] = {(char *)ktest_custode(), "run", "--timeout", "2", "--", "/bin/sh", "-c",
			"sleep 100 & sleep 100; echo not-reached", NULL};

	ktest_need_lsm();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ktest_run(argv, -1, 60000, &r);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ASSERT_EQ(r.code, 124, "timeout exit code");
	ASSERT_CONTAINS(r.err, "timeout", "timeout reported");
	ASSERT_TRUE(strstr(r.out, "not-reached") == NULL, "command did not finish");
	ASSERT_TRUE(t1.tv_sec - t0.tv_sec < 50, "ended long before its sleep");
	ASSERT_EQ(count_run_cgroups(), 0, "no run cgroup left (background sleep killed too)");
}

KTEST(run_engine_pinned_and_reused)
{
	static struct ktest_result r;
	char *run[] = {(char *)ktest_custode(), "run", "--", "/bin/true", NULL};
	char *status[] = {(char *)ktest_custode(), "engine", "status", "--json", NULL};
	json_t *a, *b;

	ktest_need_lsm();
	ASSERT_EQ(ktest_run(run, -1, 60000, &r), 0, "first run");
	ASSERT_TRUE(access("/sys/fs/bpf/custode/links/custode_file_open", F_OK) == 0, "file_open link pinned after the run");
	ASSERT_TRUE(access("/sys/fs/bpf/custode/maps/custode_runs", F_OK) == 0, "runs map pinned");
	ASSERT_EQ(ktest_run(status, -1, 30000, &r), 0, "status");
	a = json_loads(r.out, 0, NULL);
	sleep(1);
	ASSERT_EQ(ktest_run(run, -1, 60000, &r), 0, "second run");
	ASSERT_EQ(ktest_run(status, -1, 30000, &r), 0, "status");
	b = json_loads(r.out, 0, NULL);
	if (ASSERT_TRUE(a && b, "status JSON")) {
		ASSERT_EQ(json_integer_value(json_object_get(a, "loaded_at")),
			  json_integer_value(json_object_get(b, "loaded_at")), "engine reused, not reloaded");
		ASSERT_EQ(json_integer_value(json_object_get(b, "runs")), 0, "no run registered after the runs");
		ASSERT_STREQ(json_string_value(json_array_get(json_object_get(b, "classes"), 0)), "file", "file class");
	}
	json_decref(a);
	json_decref(b);
}
