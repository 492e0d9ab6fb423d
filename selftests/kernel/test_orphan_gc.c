// SPDX-License-Identifier: Apache-2.0
/*
 * SIGKILL the launcher: the run stays confined (pinned engine); `custode gc`
 * reaps it. gc --json is one document (docs/output.md): an array, empty when
 * there is nothing to reap. Its text on stderr: test_daemon_restart.c. A
 * launcher that dies setting up leaves only its lock (its state is written
 * once, registered): gc finds its tmp and cgroup from the id.
 */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "ktest.h"
#include "state/runstate.h"

/* gc --json's output is one array holding a successful "reaped orphaned run" */
static bool gc_reaped(const char *out)
{
	json_t *reaped = json_loads(out, 0, NULL), *o;
	bool seen = false;
	size_t i;

	json_array_foreach(reaped, i, o)
		seen |= !strcmp(json_string_value(json_object_get(o, "action")) ?: "", "reaped orphaned run") &&
			json_is_true(json_object_get(o, "ok"));
	json_decref(reaped);
	return seen;
}

KTEST(orphan_stays_confined_and_gc_reaps)
{
	static struct ktest_result r;
	struct ktest_proc p;
	struct ktest_dirs d;
	char line[128], cg[512] = "";
	int pid = 0, st;
	char *argv[] = {(char *)ktest_custode(), "run", "--workspace", NULL, "--", (char *)ktest_tprobe(), "wait-open",
			NULL, "r", NULL};
	char *gc[] = {(char *)ktest_custode(), "gc", "--json", NULL};

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
	ASSERT_TRUE(ktest_proc_cgroup(pid, cg, sizeof(cg)), "run cgroup");

	/* gc leaves a live launcher's run alone */
	ktest_run(gc, -1, 30000, &r);
	ASSERT_EQ(r.code, 0, "gc with a live launcher");
	ASSERT_STREQ(r.out, "[]\n", "gc --json: nothing reaped, an empty array");
	ASSERT_TRUE(ktest_pid_alive(pid), "live run not reaped");

	kill(p.pid, SIGKILL);
	waitpid(p.pid, &st, 0);
	ASSERT_TRUE(ktest_pid_alive(pid), "run process outlives its launcher");
	ASSERT_TRUE(write(p.in, "go\n", 3) == 3, "go");
	if (ASSERT_TRUE(ktest_read_line(p.out, line, sizeof(line), 20000), "result"))
		ASSERT_STREQ(line, "EACCES", "orphaned run still denied");

	ktest_run(gc, -1, 30000, &r);
	ASSERT_EQ(r.code, 0, "gc exit");
	if (!ASSERT_TRUE(gc_reaped(r.out), "gc --json: one array, the reap in it"))
		ktest_log("gc stdout: %.200s", r.out);
	for (int i = 0; i < 100 && ktest_pid_alive(pid); i++)
		usleep(20000);
	ASSERT_TRUE(!ktest_pid_alive(pid), "orphan's process killed");
	ASSERT_TRUE(cg[0] && access(cg, F_OK) != 0, "orphan's cgroup removed");
	{
		char *st_argv[] = {(char *)ktest_custode(), "engine", "status", "--json", NULL};
		json_t *o;
		ktest_run(st_argv, -1, 30000, &r);
		o = json_loads(r.out, 0, NULL);
		if (ASSERT_TRUE(o != NULL, "engine status JSON"))
			ASSERT_EQ(json_integer_value(json_object_get(o, "runs")), 0, "no registered run left");
		json_decref(o);
	}
out:
	ktest_proc_close(&p);
}

/* What a setup that died leaves, made by hand: the lock and names file (with_lock), the tmp, the cgroup (with_cgroup). */
struct dying {
	char hex[17], lock[PATH_MAX], names[PATH_MAX], tmp[PATH_MAX], cg[PATH_MAX];
};

static bool dying_setup(struct dying *d, bool with_lock, bool with_cgroup)
{
	static struct ktest_result r;
	char *load[] = {(char *)ktest_custode(), "run", "--profile", "net-only", "--", "/bin/true", NULL};
	char file[PATH_MAX + 8];
	json_t *st;
	__u64 id = 0;
	int fd;

	if (!ASSERT_EQ(ktest_run(load, -1, 120000, &r), 0, "a run loads the engine"))
		return false;
	st = ktest_engine_status();
	snprintf(d->cg, sizeof(d->cg), "%s", json_string_value(json_object_get(st, "cgroup_root")) ?: "");
	json_decref(st);
	if (!ASSERT_TRUE(d->cg[0] == '/', "engine status names the cgroup root") ||
	    !ASSERT_EQ(getrandom(&id, sizeof(id), 0), (ssize_t)sizeof(id), "an id"))
		return false;
	custode_run_id_format(id, d->hex);
	snprintf(d->cg + strlen(d->cg), sizeof(d->cg) - strlen(d->cg), "/run-%s", d->hex);
	custode_state_path(id, CUSTODE_STATE_LOCK, d->lock, sizeof(d->lock));
	custode_state_path(id, CUSTODE_STATE_NAMES, d->names, sizeof(d->names));
	custode_run_tmp_path(id, d->tmp, sizeof(d->tmp));
	snprintf(file, sizeof(file), "%s/f", d->tmp);
	if (with_lock) {
		fd = open(d->lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (!ASSERT_TRUE(fd >= 0 && ktest_write_file(d->names, "{}\n", 0600), "the lock and the names file"))
			return false;
		close(fd);
	}
	return ASSERT_TRUE(mkdir(d->tmp, 0700) == 0 && ktest_write_file(file, "x\n", 0600), "the tmp") &&
	       (!with_cgroup || ASSERT_EQ(mkdir(d->cg, 0755), 0, "the cgroup"));
}

static void dying_gc(struct dying *d, const char *reported)
{
	static struct ktest_result r;
	char *gc[] = {(char *)ktest_custode(), "gc", "--json", NULL};

	ktest_run(gc, -1, 60000, &r);
	ASSERT_EQ(r.code, 0, "gc exit");
	if (reported)
		ASSERT_CONTAINS(r.out, reported, "gc --json reports it");
	ASSERT_TRUE(access(d->lock, F_OK) != 0, "the lock removed");
	ASSERT_TRUE(access(d->names, F_OK) != 0, "the names file removed");
	ASSERT_TRUE(access(d->tmp, F_OK) != 0, "the tmp removed");
	ASSERT_TRUE(access(d->cg, F_OK) != 0, "no cgroup left");
	if (access(d->cg, F_OK) == 0)
		rmdir(d->cg);
}

/*
 * A launcher killed setting up, before its state is written: its lock (free),
 * its names file, its private tmp (with a file in it, as any), and, once it
 * got that far, its run-<id> cgroup. gc removes them all.
 */
KTEST(orphan_of_a_setup_that_died)
{
	struct dying d;

	if (dying_setup(&d, true, true))
		dying_gc(&d, "reaped run without state");
	/* killed before its cgroup: only the lock says it was there */
	if (dying_setup(&d, true, false))
		dying_gc(&d, NULL);
}

/* A run-<id> cgroup whose lock and state are lost: gc reaps it, its private tmp too. */
KTEST(orphan_cgroup_without_lock_loses_its_tmp)
{
	struct dying d;

	if (dying_setup(&d, false, true))
		dying_gc(&d, "reaped run without state");
}
