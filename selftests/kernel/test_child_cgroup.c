// SPDX-License-Identifier: Apache-2.0
/* A run process moved into a child cgroup of its run stays in the run. */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "ktest.h"

KTEST(child_cgroup_stays_confined)
{
	struct ktest_proc p;
	struct ktest_dirs d;
	char line[128], cg[512], child[600];
	int pid = 0;
	char *argv[] = {(char *)ktest_custode(), "run", "--workspace", NULL, "--", (char *)ktest_tprobe(), "wait-open",
			NULL, "r", NULL};

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "fixture"))
		return;
	argv[3] = d.ws;
	argv[7] = d.outside;
	if (!ASSERT_EQ(ktest_spawn(argv, -1, &p), 0, "spawn"))
		return;
	if (!ASSERT_TRUE(ktest_read_line(p.out, line, sizeof(line), 60000), "ready") ||
	    !ASSERT_EQ(sscanf(line, "ready %d", &pid), 1, "pid"))
		goto out;
	if (!ASSERT_TRUE(ktest_proc_cgroup(pid, cg, sizeof(cg)), "cgroup of run process"))
		goto out;
	ASSERT_CONTAINS(cg, "/custode/run-", "process is in a run cgroup");
	/* as a delegating manager would: from outside the run */
	snprintf(child, sizeof(child), "%s/nested", cg);
	if (!ASSERT_EQ(mkdir(child, 0755), 0, "mkdir child cgroup"))
		goto out;
	if (!ASSERT_EQ(custode_cgroup_move(child, pid), 0, "move into child cgroup"))
		goto out;
	ASSERT_TRUE(ktest_proc_cgroup(pid, cg, sizeof(cg)) && strstr(cg, "/nested"), "moved");
	ASSERT_TRUE(write(p.in, "go\n", 3) == 3, "go");
	if (ASSERT_TRUE(ktest_read_line(p.out, line, sizeof(line), 20000), "result"))
		ASSERT_STREQ(line, "EACCES", "still denied in the child cgroup");
out:
	ktest_close_stdin(&p);
	ASSERT_EQ(ktest_wait(&p, 30000), 1, "run exit");
	ktest_proc_close(&p);
	ASSERT_TRUE(access(child, F_OK) != 0, "run cgroup (with its child) removed at the end");
}
