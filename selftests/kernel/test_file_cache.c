// SPDX-License-Identifier: Apache-2.0
/*
 * The file decision cache (bpf/file.bpf.c) must never outlive what it was
 * computed from: a file the run opened (and so has cached) that is then
 * renamed, hard-linked or bind-mounted by someone outside the run is decided
 * afresh at its new path. Its decisions live in the run's own table, made
 * with the run and freed when it ends.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>

#include "cgroup/cgroup.h"
#include "custode/abi.h"
#include "ktest.h"

static bool ask(struct ktest_proc *p, const char *path, const char *mode, char *out, size_t len)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "open %s %s\n", path, mode);
	return write(p->in, cmd, strlen(cmd)) == (ssize_t)strlen(cmd) && ktest_read_line(p->out, out, len, 20000);
}

KTEST(file_cache_rename_out_of_the_workspace)
{
	struct ktest_proc p;
	struct ktest_dirs d;
	char line[128], inside[400], moved[400], other[400];
	char *argv[] = {(char *)ktest_custode(), "run", "--workspace", NULL, "--", (char *)ktest_tprobe(), "repl", NULL};

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "fixture"))
		return;
	snprintf(inside, sizeof(inside), "%s/secret-to-be", d.ws);
	snprintf(moved, sizeof(moved), "%s/outside/moved", d.root);
	snprintf(other, sizeof(other), "%s/outside", d.root);
	unlink(d.outside);
	mkdir(other, 0777);
	chmod(other, 0777);
	ASSERT_TRUE(ktest_write_file(inside, "x\n", 0666), "file");
	chmod(inside, 0666);
	argv[3] = d.ws;
	if (!ASSERT_EQ(ktest_spawn(argv, -1, &p), 0, "spawn") ||
	    !ASSERT_TRUE(ktest_read_line(p.out, line, sizeof(line), 60000), "ready"))
		goto out;
	/* opened three times: the later ones are served from the cache */
	for (int i = 0; i < 3; i++)
		if (ASSERT_TRUE(ask(&p, inside, "r", line, sizeof(line)), "ask"))
			ASSERT_STREQ(line, "ok", "in the workspace: allowed");
	/* outside the run, the file moves out of the workspace: same inode, new path */
	ASSERT_EQ(rename(inside, moved), 0, "rename outside the run");
	if (ASSERT_TRUE(ask(&p, moved, "r", line, sizeof(line)), "ask"))
		ASSERT_STREQ(line, "EACCES", "the same inode at its new, denied path");
	/* and back: allowed again */
	ASSERT_EQ(rename(moved, inside), 0, "rename back");
	if (ASSERT_TRUE(ask(&p, inside, "r", line, sizeof(line)), "ask"))
		ASSERT_STREQ(line, "ok", "back in the workspace");
	/* a hard link made outside, in a denied place, to the cached inode */
	ASSERT_EQ(link(inside, moved), 0, "hard link outside the run");
	if (ASSERT_TRUE(ask(&p, moved, "r", line, sizeof(line)), "ask"))
		ASSERT_STREQ(line, "EACCES", "the link's path is decided, not the cached inode");
	unlink(moved);
out:
	ktest_close_stdin(&p);
	ktest_wait(&p, 30000);
	ktest_proc_close(&p);
}

/* The same cached inode seen through a new bind mount at a denied place: decided afresh, not from the cache. */
KTEST(file_cache_bind_mount_elsewhere)
{
	struct ktest_proc p;
	struct ktest_dirs d;
	char line[128], sub[400], file[450], mnt[400], via[450], cmd[1200];
	char *argv[] = {(char *)ktest_custode(), "run", "--workspace", NULL, "--", (char *)ktest_tprobe(), "repl", NULL};

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "fixture"))
		return;
	snprintf(sub, sizeof(sub), "%s/sub", d.ws);
	snprintf(file, sizeof(file), "%s/f", sub);
	snprintf(mnt, sizeof(mnt), "%s/elsewhere", d.root);
	snprintf(via, sizeof(via), "%s/f", mnt);
	mkdir(sub, 0755);
	mkdir(mnt, 0755);
	ASSERT_TRUE(ktest_write_file(file, "ws\n", 0644), "ws file");
	argv[3] = d.ws;
	if (!ASSERT_EQ(ktest_spawn(argv, -1, &p), 0, "spawn") ||
	    !ASSERT_TRUE(ktest_read_line(p.out, line, sizeof(line), 60000), "ready"))
		goto out;
	for (int i = 0; i < 3; i++)
		if (ASSERT_TRUE(ask(&p, file, "r", line, sizeof(line)), "ask"))
			ASSERT_STREQ(line, "ok", "workspace file (cached after the first)");
	snprintf(cmd, sizeof(cmd), "mount --bind %s %s", sub, mnt);
	if (ASSERT_EQ(system(cmd), 0, "bind mount outside the run")) {
		if (ASSERT_TRUE(ask(&p, via, "r", line, sizeof(line)), "ask"))
			ASSERT_STREQ(line, "EACCES", "the same inode through a mount outside the workspace");
		if (ASSERT_TRUE(ask(&p, file, "r", line, sizeof(line)), "ask"))
			ASSERT_STREQ(line, "ok", "still allowed by its workspace path");
		snprintf(cmd, sizeof(cmd), "umount %s", mnt);
		ASSERT_EQ(system(cmd), 0, "umount");
	}
out:
	ktest_close_stdin(&p);
	ktest_wait(&p, 30000);
	ktest_proc_close(&p);
}

/* The run's entry in engine status's decision table (a new reference), or NULL; *o the whole "decisions". */
static json_t *run_slots(__u64 cgid, json_t **o)
{
	json_t *st = ktest_engine_status(), *runs, *t, *found = NULL;
	size_t i;

	*o = json_incref(json_object_get(st, "decisions"));
	runs = json_object_get(*o, "runs");
	json_array_foreach(runs, i, t)
		if ((__u64)json_integer_value(json_object_get(t, "cgroup_id")) == cgid)
			found = json_incref(t);
	json_decref(st);
	return found;
}

static long long dec_num(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

/*
 * The decisions of a run are kept in the one table the runs share: fixed in
 * size whatever the runs open, holding the run's decisions while it lives,
 * and counted as an ended run's (dead, free for reuse) once it has ended —
 * a run's cache memory neither grows with what it opens nor outlives it.
 */
KTEST(file_cache_slots_go_with_the_run)
{
	struct ktest_proc p;
	struct ktest_dirs d;
	char line[128], cg[512], file[400];
	char *argv[] = {(char *)ktest_custode(), "run", "--workspace", NULL, "--", (char *)ktest_tprobe(), "repl", NULL};
	const long long bytes = (long long)CUSTODE_DECISION_SLOTS * (long long)sizeof(struct custode_decision);
	json_t *t = NULL, *o = NULL;
	long long before, after, ended0;
	__u64 cgid = 0;
	int pid = 0;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "fixture"))
		return;
	argv[3] = d.ws;
	if (!ASSERT_EQ(ktest_spawn(argv, -1, &p), 0, "spawn") ||
	    !ASSERT_TRUE(ktest_read_line(p.out, line, sizeof(line), 60000), "ready") ||
	    !ASSERT_EQ(sscanf(line, "ready %d", &pid), 1, "pid") ||
	    !ASSERT_TRUE(ktest_proc_cgroup(pid, cg, sizeof(cg)), "the run's cgroup") ||
	    !ASSERT_EQ(custode_cgroup_id(cg, &cgid), 0, "its id"))
		goto out;
	t = run_slots(cgid, &o);
	if (!ASSERT_TRUE(t != NULL, "the run is listed in the decision table"))
		goto out;
	before = dec_num(t, "slots_used");
	ended0 = dec_num(o, "slots_of_ended_runs");
	ASSERT_EQ(dec_num(o, "bytes"), bytes, "the table's size is the ABI's");
	json_decref(t);
	json_decref(o);
	/* 40 files of their own (a directory decision would serve them all with one slot: one file each in 40 directories) */
	for (int i = 0; i < 40; i++) {
		char sub[400];

		snprintf(sub, sizeof(sub), "%s/d%d", d.ws, i);
		mkdir(sub, 0755);
		snprintf(file, sizeof(file), "%s/f", sub);
		ASSERT_TRUE(ktest_write_file(file, "x\n", 0644), "file");
		if (ASSERT_TRUE(ask(&p, file, "r", line, sizeof(line)), "ask"))
			ASSERT_STREQ(line, "ok", "a workspace file");
	}
	t = run_slots(cgid, &o);
	after = t ? dec_num(t, "slots_used") : -1;
	ASSERT_TRUE(after > before, "the opens' decisions are kept, as the run's");
	ASSERT_EQ(dec_num(o, "bytes"), bytes, "the table did not grow");
	json_decref(t);
	json_decref(o);
	ktest_close_stdin(&p);
	ASSERT_EQ(ktest_wait(&p, 30000), 0, "run exit");
	t = run_slots(cgid, &o);
	ASSERT_TRUE(t == NULL, "the ended run is not listed");
	ktest_log("slots of ended runs: %lld before the run, %lld after it; the run held %lld", ended0,
		  dec_num(o, "slots_of_ended_runs"), after);
	ASSERT_TRUE(dec_num(o, "slots_of_ended_runs") > ended0, "its slots count as an ended run's");
	ASSERT_EQ(dec_num(o, "bytes"), bytes, "and the table's size is what it was");
	json_decref(t);
	json_decref(o);
	ktest_proc_close(&p);
	return;
out:
	ktest_close_stdin(&p);
	ktest_wait(&p, 30000);
	ktest_proc_close(&p);
}
