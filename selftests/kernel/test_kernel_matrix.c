// SPDX-License-Identifier: Apache-2.0
/*
 * What differs between the kernels of the matrix (6.1, 6.12, the newest):
 * each engine object loads on its own here, LSM programs fit this kernel's
 * hook prototypes, the run cache is used exactly where the kernel has cgroup
 * storage, and its answers follow every attach and detach.
 */
#include <sys/utsname.h>
#include <bpf/btf.h>

#include "engine/engine.h"
#include "engine/hooks.h"
#include "test_daemon_fixture.h"

static int kernel_version(void)
{
	struct utsname u;
	int major = 0, minor = 0;

	if (uname(&u) == 0)
		sscanf(u.release, "%d.%d", &major, &minor);
	return major * 1000 + minor;
}

/* Each class's object, loaded by itself into a throwaway state (no engine pinned: nothing reserves the names). */
KTEST(kernel_each_engine_object_loads)
{
	static struct ktest_result r;
	char *unload[] = {(char *)ktest_custode(), "engine", "unload", NULL};
	static const struct {
		unsigned cls;
		const char *name;
	} classes[] = {{CUSTODE_CLASS_FILE, "file"}, {CUSTODE_CLASS_PROCESS, "process"}, {CUSTODE_CLASS_EGRESS, "egress"}};

	ktest_need_lsm();
	if (!ASSERT_EQ(ktest_run(unload, -1, 120000, &r), 0, "unload the engine first")) {
		ktest_log("%s", r.err);
		return;
	}
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		struct custode_refusal why = {0};
		int err = custode_engine_dry_load(classes[i].cls, &why);
		char what[64];

		snprintf(what, sizeof(what), "%s object loads", classes[i].name);
		if (!ASSERT_EQ(err, 0, what))
			ktest_log("  %s: %s", custode_reason_name(why.reason), why.detail);
	}
}

/* Hooks whose prototype moved between the kernels: the one this kernel has is the one custode knows. */
KTEST(kernel_hook_prototypes_known)
{
	struct btf *btf = btf__load_vmlinux_btf();
	int v = kernel_version();

	if (!ASSERT_TRUE(btf != NULL, "kernel BTF"))
		return;
	/* 6.1: (dentry, attr); later: (idmap, dentry, attr) */
	ASSERT_EQ(custode_kernel_hook_nargs(btf, "inode_setattr"), v < 6003 ? 2 : 3, "inode_setattr");
	ASSERT_EQ(custode_kernel_hook_nargs(btf, "file_open"), 1, "file_open");
	ASSERT_TRUE(custode_kernel_hook_nargs(btf, "no_such_hook") == -ENOENT, "a missing hook is said to be missing");
	/* the newcomer marks' tracing targets (bpf/proc.bpf.c), as fit_tracing checks them */
	ASSERT_EQ(custode_kernel_traced_nargs(btf, "cgroup_attach_task", false), 3, "fentry/fexit cgroup_attach_task");
	ASSERT_EQ(custode_kernel_traced_nargs(btf, "task_newtask", true), 2, "tp_btf/task_newtask");
	/* sched_process_exit gained group_dead in 6.16: the program reads the task only (CUSTODE_TRACED_PREFIX) */
	ASSERT_EQ(custode_kernel_traced_nargs(btf, "sched_process_exit", true), v < 6016 ? 1 : 2,
		  "tp_btf/sched_process_exit");
	ASSERT_TRUE(custode_kernel_traced_nargs(btf, "no_such_function", false) == -ENOENT &&
			    custode_kernel_traced_nargs(btf, "no_such_tracepoint", true) == -ENOENT,
		    "a missing function or tracepoint is said to be missing");
	btf__free(btf);
}

/* The run cache: cgroup storage on 6.2+, task storage on 6.1, as engine status and doctor say. */
KTEST(kernel_run_cache_where_the_kernel_has_it)
{
	static struct ktest_result r;
	char *load[] = {(char *)ktest_custode(), "run", "--profile", "read", "--", "/bin/true", NULL};
	char *doctor[] = {(char *)ktest_custode(), "doctor", "--json", NULL};
	bool want = kernel_version() >= 6002;
	json_t *o;

	ktest_need_lsm();
	ASSERT_EQ(custode_kernel_has_cgrp_storage(), want, "cgroup storage exactly from 6.2");
	if (!ASSERT_EQ(ktest_run(load, -1, 120000, &r), 0, "a run loads the engine"))
		return;
	o = ktest_engine_status();
	ASSERT_STREQ(json_string_value(json_object_get(o, "run_cache")), want ? "cgroup-storage" : "task-storage",
		     "engine status");
	json_decref(o);
	ktest_run(doctor, -1, 60000, &r);
	o = json_loads(r.out, 0, NULL);
	ASSERT_EQ(json_is_true(json_object_get(json_object_get(json_object_get(o, "features"), "run_cache"), "available")),
		  want, "doctor's feature");
	ASSERT_STREQ(json_string_value(json_object_get(json_object_get(json_object_get(o, "features"), "run_cache"), "kind")),
		     want ? "cgroup-storage" : "task-storage", "doctor's kind of run cache");
	json_decref(o);
}

static json_t *attach_read(const char *cg, const char *ws)
{
	return df_call(json_pack("{s:s, s:s, s:s, s:s}", "cmd", "attach", "cgroup", cg, "profile", "read", "workspace", ws));
}

static bool detach_run(char *rid)
{
	json_t *r = df_call(json_pack("{s:s, s:s}", "cmd", "detach", "run_id", rid));
	bool ok = r != NULL;

	json_decref(r);
	if (ok)
		rid[0] = 0;
	return ok;
}

static void run_id(json_t *resp, char rid[17])
{
	snprintf(rid, 17, "%s", json_string_value(json_object_get(json_object_get(resp, "run"), "run_id")));
	json_decref(resp);
}

/*
 * A sibling below a gate is answered "in no run" (and that answer is cached:
 * on 6.2+ on its cgroup, on 6.1 on the task, for its cgroup); then it is
 * attached, detached, its neighbour detached and it attached again: every decision follows the registry, none
 * is served from a stale cache entry. Repeated opens between the changes
 * are the cache hits.
 */
KTEST(kernel_run_cache_follows_attach_and_detach)
{
	struct dfix f;
	struct ktest_proc pa = {0}, pb = {0};
	char slice[PATH_MAX], a[PATH_MAX + 8], b[PATH_MAX + 8], ra[17] = "", rb[17] = "";
	json_t *resp;

	ktest_need_lsm();
	if (!df_setup(&f) || !ASSERT_TRUE(df_daemon_start(&f, NULL), "daemon"))
		return;
	snprintf(slice, sizeof(slice), "%s/ktest-cache-%d", f.cgmount, (int)getpid());
	snprintf(a, sizeof(a), "%s/a", slice);
	snprintf(b, sizeof(b), "%s/b", slice);
	if (!ASSERT_TRUE(df_cg_make(slice) && df_cg_make(a) && df_cg_make(b), "cgroups") ||
	    !ASSERT_TRUE(df_probe(a, &pa) && df_probe(b, &pb), "probes"))
		goto out;
	ASSERT_STREQ(df_ask(&pb, "open %s", f.d.outside), "ok", "control: before any attach");
	if (!ASSERT_TRUE((resp = attach_read(a, f.d.ws)) != NULL, "attach a"))
		goto out;
	run_id(resp, ra);
	for (int i = 0; i < 3; i++) {
		ASSERT_STREQ(df_ask(&pa, "open %s", f.d.outside), "EACCES", "a attached: denied (again and again)");
		ASSERT_STREQ(df_ask(&pb, "open %s", f.d.outside), "ok", "b below the same gate, in no run: allowed");
	}
	if (!ASSERT_TRUE((resp = attach_read(b, f.d.ws)) != NULL, "attach b"))
		goto out;
	run_id(resp, rb);
	ASSERT_STREQ(df_ask(&pb, "open %s", f.d.outside), "EACCES", "b attached after its 'no run' was cached: denied");
	ASSERT_STREQ(df_ask(&pb, "open %s", f.d.outside), "EACCES", "and again");
	ASSERT_TRUE(detach_run(rb), "detach b");
	ASSERT_STREQ(df_ask(&pb, "open %s", f.d.outside), "ok", "b detached: allowed");
	ASSERT_STREQ(df_ask(&pa, "open %s", f.d.outside), "EACCES", "a still confined");
	ASSERT_TRUE(detach_run(ra), "detach a (the gate goes)");
	ASSERT_STREQ(df_ask(&pa, "open %s", f.d.outside), "ok", "a detached: allowed");
	if (!ASSERT_TRUE((resp = attach_read(b, f.d.ws)) != NULL, "attach b again, alone below a new gate"))
		goto out;
	run_id(resp, rb);
	ASSERT_STREQ(df_ask(&pb, "open %s", f.d.outside), "EACCES", "b confined again");
	ASSERT_STREQ(df_ask(&pa, "open %s", f.d.outside), "ok", "a stays free");
	/*
	 * A task's answer is for the cgroup it was in: b's probe, confined
	 * (and cached so, again and again), moved out into a — in no run — is
	 * free at once; a attached again, both probes in it are confined.
	 */
	ASSERT_STREQ(df_ask(&pb, "open %s", f.d.outside), "EACCES", "b's probe, confined (cached)");
	if (!ASSERT_TRUE(df_cg_move(a, pb.pid), "move b's probe into a"))
		goto out;
	ASSERT_STREQ(df_ask(&pb, "open %s", f.d.outside), "ok", "moved out of the run: free at once");
	ASSERT_STREQ(df_ask(&pb, "open %s", f.d.outside), "ok", "and again");
	if (!ASSERT_TRUE((resp = attach_read(a, f.d.ws)) != NULL, "attach a again, b's probe inside"))
		goto out;
	run_id(resp, ra);
	ASSERT_STREQ(df_ask(&pb, "open %s", f.d.outside), "EACCES", "a attached: the probe in it is confined");
	ASSERT_STREQ(df_ask(&pa, "open %s", f.d.outside), "EACCES", "and a's own");
out:
	if (ra[0])
		detach_run(ra);
	if (rb[0])
		detach_run(rb);
	df_probe_end(&pa);
	df_probe_end(&pb);
	df_cg_remove(b);
	df_cg_remove(a);
	df_cg_remove(slice);
	kt_stop(&f.pid, SIGTERM);
}
