// SPDX-License-Identifier: Apache-2.0
/* A task below custode's cgroup root but in no registered run is denied (state missing → deny). */
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "ktest.h"

KTEST(unregistered_cgroup_denied)
{
	static struct ktest_result r;
	struct ktest_proc p;
	char mount[256], stray[400], line[128];
	char *load[] = {(char *)ktest_custode(), "engine", "load", NULL};
	char *argv[] = {(char *)ktest_tprobe(), "wait-open", "/etc/passwd", "r", NULL};
	json_t *events;

	ktest_need_lsm();
	if (!ASSERT_EQ(ktest_run(load, -1, 60000, &r), 0, "engine load"))
		return;
	if (!ASSERT_EQ(custode_cgroup2_mount(mount, sizeof(mount)), 0, "cgroup2"))
		return;
	snprintf(stray, sizeof(stray), "%s/custode/run-00000000deadbeef", mount);
	if (!ASSERT_EQ(mkdir(stray, 0755), 0, "mkdir stray run cgroup"))
		return;
	if (!ASSERT_EQ(ktest_spawn(argv, -1, &p), 0, "spawn"))
		goto out;
	if (!ASSERT_TRUE(ktest_read_line(p.out, line, sizeof(line), 10000), "ready"))
		goto out;
	ASSERT_EQ(custode_cgroup_move(stray, p.pid), 0, "move into the unregistered cgroup");
	ktest_events();
	ASSERT_TRUE(write(p.in, "go\n", 3) == 3, "go");
	if (ASSERT_TRUE(ktest_read_line(p.out, line, sizeof(line), 10000), "result"))
		ASSERT_STREQ(line, "EACCES", "denied even /etc/passwd");
	events = ktest_events();
	ASSERT_TRUE(ktest_find_event(events, "file_open", "run.unregistered", "/etc/passwd") != NULL, "event");
	json_decref(events);
	kill(p.pid, SIGKILL);
	ktest_wait(&p, 10000);
out:
	ktest_proc_close(&p);
	rmdir(stray);
}
