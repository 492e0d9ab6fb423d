// SPDX-License-Identifier: Apache-2.0
/*
 * ptrace and PTRACE_MODE_READ access (/proc/PID/environ, /proc/PID/mem,
 * process_vm_readv) from a run: to a host process, to a process of another
 * run, to its own child ("ptrace": "none" vs "run"), and PTRACE_TRACEME toward
 * a tracer outside the run. Every target runs as the attacker's uid (nobody),
 * so DAC allows what custode denies: each denial has that control.
 *
 * The attacks use "ptrace": "run" where the seccomp filter would otherwise
 * refuse the ptrace syscalls first: what denies them is then the LSM.
 */
#include "procutil.h"

#define PROC_RUN POLICY("proc-run", "{\"process\":{\"ptrace\":\"run\",\"signals\":\"run\"}}")
#define PROC_NONE POLICY("proc-none", "{\"process\":{}}")
#define NO_PROC POLICY("no-proc", "{\"limits\":{\"pids\":512}}")

struct fx {
	struct ktest_dirs d;
	const char *run, *none, *noproc;
	char receipt[400];
};

static bool fx_setup(struct fx *f)
{
	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&f->d), "dirs"))
		return false;
	f->run = pu_policy(f->d.root, "run", PROC_RUN);
	f->none = pu_policy(f->d.root, "none", PROC_NONE);
	f->noproc = pu_policy(f->d.root, "noproc", NO_PROC);
	snprintf(f->receipt, sizeof(f->receipt), "%s/receipt.json", f->d.root);
	return ASSERT_TRUE(f->run[0] && f->none[0] && f->noproc[0], "policies");
}

KTEST(process_ptrace_host_denied)
{
	static struct ktest_result r;
	struct ktest_proc t;
	struct fx f;
	char environ_path[64], mem_path[64], pid_s[16], addr_s[32];
	unsigned long addr = 0;
	int pid = 0;
	json_t *rc, *ev;

	if (!fx_setup(&f))
		return;
	if (!ASSERT_TRUE(pu_host_target(NOBODY, &t, &pid, &addr), "host target (uid nobody)"))
		return;
	snprintf(pid_s, sizeof(pid_s), "%d", pid);
	snprintf(addr_s, sizeof(addr_s), "0x%lx", addr);
	snprintf(environ_path, sizeof(environ_path), "/proc/%d/environ", pid);
	snprintf(mem_path, sizeof(mem_path), "/proc/%d/mem", pid);

	/* control: the same uid, no custode */
	pu_probe(&r, NOBODY, ARGS("attach", pid_s));
	ASSERT_STREQ(r.out, "ok\n", "control: attach");
	pu_probe(&r, NOBODY, ARGS("read", environ_path));
	ASSERT_STREQ(r.out, "ok\n", "control: environ");
	pu_probe(&r, NOBODY, ARGS("read", mem_path));
	ASSERT_STREQ(r.out, "ok\n", "control: mem");
	pu_probe(&r, NOBODY, ARGS("vmread", pid_s, addr_s));
	ASSERT_STREQ(r.out, "ok\n", "control: process_vm_readv");

	ktest_events();
	pu_run_probe(&r, ARGS("--policy", f.run, "--receipt", f.receipt), ARGS("attach", pid_s));
	ASSERT_STREQ(r.out, "EPERM\n", "run: attach");
	rc = pu_load_json(f.receipt);
	ASSERT_EQ(pu_denials(rc, "process.ptrace.denied"), 1, "run: attach counted once");
	json_decref(rc);
	pu_run_probe(&r, ARGS("--policy", f.run), ARGS("read", environ_path));
	ASSERT_STREQ(r.out, "EACCES\n", "run: environ");
	ASSERT_CONTAINS(r.err, "process.ptrace.denied=1", "summary");
	pu_run_probe(&r, ARGS("--policy", f.run), ARGS("read", mem_path));
	ASSERT_STREQ(r.out, "EACCES\n", "run: mem");
	pu_run_probe(&r, ARGS("--policy", f.run), ARGS("vmread", pid_s, addr_s));
	ASSERT_STREQ(r.out, "EPERM\n", "run: process_vm_readv");
	/* the default "ptrace": "none": environ is the LSM's (seccomp has no say on open) */
	pu_run_probe(&r, ARGS("--policy", f.none), ARGS("read", environ_path));
	ASSERT_STREQ(r.out, "EACCES\n", "ptrace none: environ");
	ASSERT_CONTAINS(r.err, "process.ptrace.denied=1", "ptrace none: counted");

	ev = ktest_events();
	if (ASSERT_TRUE(pu_task_event(ev, "ptrace_access_check", "process.ptrace.denied", pid) != NULL, "event")) {
		json_t *e = pu_task_event(ev, "ptrace_access_check", "process.ptrace.denied", pid);
		ASSERT_TRUE(json_is_true(json_object_get(e, "enforced")), "enforced");
		ASSERT_EQ(json_integer_value(json_object_get(e, "uid")), NOBODY, "attacker uid");
		ASSERT_TRUE(json_integer_value(json_object_get(json_object_get(e, "task"), "mode")) != 0, "mode recorded");
	}
	json_decref(ev);
	ASSERT_TRUE(ktest_pid_alive(pid), "target alive");
	ASSERT_EQ(pu_stop(&t), 0, "target exits normally");
}

KTEST(process_ptrace_other_run_denied)
{
	static struct ktest_result r;
	struct ktest_proc t;
	struct fx f;
	char environ_path[64], pid_s[16], addr_s[32];
	unsigned long addr = 0;
	int pid = 0;

	if (!fx_setup(&f))
		return;
	if (!ASSERT_TRUE(pu_run_target(f.none, &t, &pid, &addr), "target in another run"))
		return;
	snprintf(pid_s, sizeof(pid_s), "%d", pid);
	snprintf(addr_s, sizeof(addr_s), "0x%lx", addr);
	snprintf(environ_path, sizeof(environ_path), "/proc/%d/environ", pid);

	/* control: the host (same uid) may reach into a run */
	pu_probe(&r, NOBODY, ARGS("read", environ_path));
	ASSERT_STREQ(r.out, "ok\n", "control: environ from the host");
	pu_probe(&r, NOBODY, ARGS("vmread", pid_s, addr_s));
	ASSERT_STREQ(r.out, "ok\n", "control: process_vm_readv from the host");

	pu_run_probe(&r, ARGS("--policy", f.run), ARGS("attach", pid_s));
	ASSERT_STREQ(r.out, "EPERM\n", "other run: attach");
	pu_run_probe(&r, ARGS("--policy", f.run), ARGS("read", environ_path));
	ASSERT_STREQ(r.out, "EACCES\n", "other run: environ");
	pu_run_probe(&r, ARGS("--policy", f.run), ARGS("vmread", pid_s, addr_s));
	ASSERT_STREQ(r.out, "EPERM\n", "other run: process_vm_readv");
	/* a run without a process section is still kept out of a run that has one */
	pu_run_probe(&r, ARGS("--policy", f.noproc), ARGS("read", environ_path));
	ASSERT_STREQ(r.out, "EACCES\n", "run without process policy: target's run protects itself");
	ASSERT_CONTAINS(r.err, "process.ptrace.denied=1", "counted in the attacker's run");
	ASSERT_TRUE(ktest_pid_alive(pid), "target alive");
	ASSERT_EQ(pu_stop(&t), 0, "target's run ends normally");
}

KTEST(process_ptrace_own_child_none_vs_run)
{
	static struct ktest_result r;
	struct fx f;

	if (!fx_setup(&f))
		return;
	pu_probe(&r, NOBODY, ARGS("child", "attach"));
	ASSERT_STREQ(r.out, "ok\n", "control: attach own child");

	pu_run_probe(&r, ARGS("--policy", f.run), ARGS("child", "attach"));
	ASSERT_STREQ(r.out, "ok\n", "ptrace run: attach own child");
	pu_run_probe(&r, ARGS("--policy", f.run), ARGS("child", "environ"));
	ASSERT_STREQ(r.out, "ok\n", "ptrace run: child's environ");
	ASSERT_TRUE(strstr(r.err, "denial") == NULL, "ptrace run: no denial");

	pu_run_probe(&r, ARGS("--policy", f.none), ARGS("child", "attach"));
	ASSERT_STREQ(r.out, "EPERM\n", "ptrace none: attach own child (seccomp, then the LSM)");
	pu_run_probe(&r, ARGS("--policy", f.none), ARGS("child", "environ"));
	ASSERT_STREQ(r.out, "EACCES\n", "ptrace none: child's environ (the LSM)");
	ASSERT_CONTAINS(r.err, "process.ptrace.denied=1", "ptrace none: counted");
	/* a run without a process section is not governed */
	pu_run_probe(&r, ARGS("--policy", f.noproc), ARGS("child", "environ"));
	ASSERT_STREQ(r.out, "ok\n", "no process section: child's environ");
}

KTEST(process_traceme_outside_denied)
{
	static struct ktest_result r;
	struct fx f;

	if (!fx_setup(&f))
		return;
	/* control: a child of this (root, host) process offers itself: allowed */
	pu_probe(&r, NOBODY, ARGS("traceme"));
	ASSERT_STREQ(r.out, "ok\n", "control: traceme toward a host parent");
	/* the run's first process: its parent is the launcher, outside the run */
	pu_run_probe(&r, ARGS("--policy", f.run), ARGS("traceme"));
	ASSERT_STREQ(r.out, "EPERM\n", "traceme toward the launcher");
	ASSERT_CONTAINS(r.err, "process.ptrace.denied=1", "counted");
	/* inside the run, with "ptrace": "run": the parent (sh) is in the run */
	{
		char cmd[512];
		snprintf(cmd, sizeof(cmd), "%s traceme; :", ktest_helper("pprobe"));
		ktest_run(pu_argv(ARGS("--policy", f.run), ARGS("/bin/sh", "-c", cmd)), -1, 120000, &r);
		ASSERT_STREQ(r.out, "ok\n", "traceme toward a parent inside the run");
	}
}
