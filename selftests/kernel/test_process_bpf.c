// SPDX-License-Identifier: Apache-2.0
/*
 * bpf() inside a run, and custode's own maps and programs from outside: by
 * id (BPF_MAP/PROG_GET_FD_BY_ID) and by pin (BPF_OBJ_GET) from an unrelated
 * root process. The LSM is tested below the seccomp filter and without the
 * missing capabilities: a root process with every capability is moved into
 * the run's cgroup, where only the LSM stands in the way.
 */
#include "procutil.h"

#define PROC_NONE POLICY("proc-none", "{\"process\":{}}")
#define NO_PROC POLICY("no-proc", "{\"limits\":{\"pids\":512}}")

KTEST(process_bpf_denied_in_run)
{
	static struct ktest_result r;
	struct ktest_proc t;
	struct ktest_dirs d;
	const char *none, *noproc;
	char receipt[400];
	unsigned long addr;
	int pid = 0;
	json_t *rc;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	none = pu_policy(d.root, "none", PROC_NONE);
	noproc = pu_policy(d.root, "noproc", NO_PROC);
	snprintf(receipt, sizeof(receipt), "%s/receipt.json", d.root);

	pu_probe(&r, -1, ARGS("bpf-map-create"));
	ASSERT_STREQ(r.out, "ok\n", "control: root creates a map");
	pu_probe(&r, -1, ARGS("bpf-prog-load"));
	ASSERT_STREQ(r.out, "ok\n", "control: root loads a program");

	/* an ordinary run: seccomp refuses bpf() first */
	pu_run_probe(&r, ARGS("--policy", none), ARGS("bpf-map-create"));
	ASSERT_STREQ(r.out, "EPERM\n", "run: BPF_MAP_CREATE");
	pu_run_probe(&r, ARGS("--policy", none), ARGS("bpf-prog-load"));
	ASSERT_STREQ(r.out, "EPERM\n", "run: BPF_PROG_LOAD");

	/* the LSM alone: a root process with all capabilities, moved into a run (even one without a process section) */
	ktest_run(pu_argv(ARGS("--policy", none), ARGS("/bin/true")), -1, 60000, &r); /* the process class is loaded */
	char *argv[] = {(char *)ktest_custode(), "run", "--policy", (char *)noproc, "--receipt", receipt, "--",
			(char *)ktest_helper("pprobe"), "target", NULL};
	if (!ASSERT_TRUE(pu_target(argv, -1, &t, &pid, &addr), "a run to move into"))
		return;
	ASSERT_STREQ(pu_moved_in(ktest_helper("pprobe"), pid, ARGS("bpf-map-create")), "EPERM", "root in a run: BPF_MAP_CREATE");
	ASSERT_STREQ(pu_moved_in(ktest_helper("pprobe"), pid, ARGS("bpf-prog-load")), "EPERM", "root in a run: BPF_PROG_LOAD");
	ASSERT_EQ(pu_stop(&t), 0, "run ends");
	rc = pu_load_json(receipt);
	ASSERT_EQ(pu_denials(rc, "process.bpf.denied"), 2, "both counted in the run's receipt");
	json_decref(rc);
}

KTEST(process_engine_maps_protected)
{
	static struct ktest_result r;
	struct ktest_proc t;
	struct ktest_dirs d;
	char *unload[] = {(char *)ktest_custode(), "engine", "unload", NULL};
	/* `engine load` loads the file class alone: the engine without the process class */
	char *load[] = {(char *)ktest_custode(), "engine", "load", NULL};
	char map_id[32] = "", prog_id[32] = "", denied[64];
	const char *none;
	unsigned long addr;
	int pid = 0;
	json_t *st, *ev;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	none = pu_policy(d.root, "none", PROC_NONE);
	/* a fresh engine without the process class (every run now loads it on BPF-LSM hosts): the control */
	if (!ASSERT_EQ(ktest_run(unload, -1, 60000, &r), 0, "unload") || !ASSERT_EQ(ktest_run(load, -1, 60000, &r), 0, "load")) {
		ktest_log("%s", r.err);
		return;
	}
	pu_probe(&r, -1, ARGS("bpf-map-id", "custode_runs"));
	snprintf(map_id, sizeof(map_id), "%s", r.out);
	map_id[strcspn(map_id, "\n")] = 0;
	pu_probe(&r, -1, ARGS("bpf-prog-id", "custode_file_op"));
	snprintf(prog_id, sizeof(prog_id), "%s", r.out);
	prog_id[strcspn(prog_id, "\n")] = 0;
	if (!ASSERT_TRUE(atoi(map_id) > 0 && atoi(prog_id) > 0, "control: root finds custode_runs and custode_file_open"))
		return;
	pu_probe(&r, -1, ARGS("bpf-map-get", map_id));
	ASSERT_STREQ(r.out, "ok\n", "control: root opens custode_runs by id");
	pu_probe(&r, -1, ARGS("bpf-obj-get", "/sys/fs/bpf/custode/maps/custode_runs"));
	ASSERT_STREQ(r.out, "ok\n", "control: root opens the pin");

	/* load the process class (a run with a process policy) */
	ktest_run(pu_argv(ARGS("--policy", none), ARGS("/bin/true")), -1, 60000, &r);
	ASSERT_EQ(r.code, 0, "a process run");
	ktest_events();
	pu_probe(&r, -1, ARGS("bpf-map-get", map_id));
	ASSERT_STREQ(r.out, "EPERM\n", "root: custode_runs by id");
	pu_probe(&r, -1, ARGS("bpf-prog-get", prog_id));
	ASSERT_STREQ(r.out, "EPERM\n", "root: custode_file_open by id");
	pu_probe(&r, -1, ARGS("bpf-obj-get", "/sys/fs/bpf/custode/maps/custode_runs"));
	ASSERT_STREQ(r.out, "EPERM\n", "root: the pin");
	pu_probe(&r, -1, ARGS("bpf-obj-get", "/sys/fs/bpf/custode/meta"));
	ASSERT_STREQ(r.out, "EPERM\n", "root: the meta pin");
	pu_probe(&r, -1, ARGS("bpf-map-names"));
	snprintf(denied, sizeof(denied), "denied %s EPERM", map_id);
	ASSERT_CONTAINS(r.out, denied, "a walk over every map can't open it either");
	ASSERT_TRUE(strstr(r.out, " custode_") == NULL, "no custode_* map opened by the walk");
	pu_probe(&r, -1, ARGS("bpf-map-create"));
	ASSERT_STREQ(r.out, "ok\n", "root's own bpf() is untouched");

	ev = ktest_events();
	{
		json_t *e = pu_task_event(ev, "bpf_map", "engine.protected", 0);
		if (ASSERT_TRUE(e != NULL, "engine.protected event"))
			ASSERT_EQ(json_integer_value(json_object_get(json_object_get(e, "task"), "id")), atoi(map_id), "map id");
	}
	json_decref(ev);

	/* custode itself still reaches its engine */
	st = pu_engine_status();
	if (ASSERT_TRUE(st != NULL, "engine status by custode")) {
		json_t *c;
		size_t k;
		bool proc = false;

		json_array_foreach(json_object_get(st, "classes"), k, c)
			proc |= !strcmp(json_string_value(c) ?: "", "process");
		ASSERT_TRUE(proc, "the process class is loaded");
	}
	json_decref(st);

	/* from inside a run: the seccomp filter first, and the LSM's bpf hook whatever the capabilities */
	pu_run_probe(&r, ARGS("--policy", none), ARGS("bpf-map-get", map_id));
	ASSERT_STREQ(r.out, "EPERM\n", "run: custode_runs by id");
	if (ASSERT_TRUE(pu_run_target(none, &t, &pid, &addr), "a run")) {
		ASSERT_STREQ(pu_moved_in(ktest_helper("pprobe"), pid, ARGS("bpf-map-get", map_id)), "EPERM", "root in a run: custode_runs by id");
		pu_stop(&t);
	}
}

/* Another copy of custode (another inode) is refused, and never mistakes the protected engine for a missing one. */
KTEST(process_engine_refuses_other_binary)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	char copy[512], cmd[1200];
	const char *none;
	int links_before, links_after;
	json_t *st;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	none = pu_policy(d.root, "none", PROC_NONE);
	snprintf(copy, sizeof(copy), "%s/custode-copy", d.root);
	snprintf(cmd, sizeof(cmd), "cp %s %s", ktest_custode(), copy);
	if (!ASSERT_EQ(system(cmd), 0, "copy of custode"))
		return;
	{
		char *unload[] = {(char *)ktest_custode(), "engine", "unload", NULL};
		char *ctl[] = {copy, "engine", "load", NULL};
		char *ctl_status[] = {copy, "engine", "status", "--json", NULL};
		ASSERT_EQ(ktest_run(unload, -1, 60000, &r), 0, "unload");
		/* `engine load` loads the file class alone (a run would load the process class too) */
		ASSERT_EQ(ktest_run(ctl, -1, 60000, &r), 0, "control: the copy loads the engine while no process class is loaded");
		ASSERT_EQ(ktest_run(ctl_status, -1, 60000, &r), 0, "control: the copy reads the engine");
		ASSERT_TRUE(strstr(r.out, "\"process\"") == NULL, "control: no process class yet");
	}
	ktest_run(pu_argv(ARGS("--policy", none), ARGS("/bin/true")), -1, 60000, &r);
	ASSERT_EQ(r.code, 0, "the original loads the process class");
	links_before = pu_count_dir("/sys/fs/bpf/custode/links", "custode_");
	{
		char *status[] = {copy, "engine", "status", "--json", NULL};
		char *run[] = {copy, "run", "--profile", "net-only", "--", "/bin/echo", "RAN", NULL};
		ktest_run(status, -1, 60000, &r);
		ASSERT_EQ(r.code, 125, "the copy: engine status refused");
		ASSERT_CONTAINS(r.err, "engine.protected", "reason");
		ktest_run(run, -1, 60000, &r);
		ASSERT_EQ(r.code, 125, "the copy: run refused");
		ASSERT_CONTAINS(r.err, "engine.protected", "reason");
		ASSERT_TRUE(strstr(r.out, "RAN") == NULL, "nothing ran");
	}
	links_after = pu_count_dir("/sys/fs/bpf/custode/links", "custode_");
	ASSERT_TRUE(links_before > 0 && links_after == links_before, "the engine was left in place");
	st = pu_engine_status();
	ASSERT_TRUE(st && json_is_true(json_object_get(st, "loaded")), "the original still reads its engine");
	json_decref(st);
}
