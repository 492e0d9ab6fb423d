// SPDX-License-Identifier: Apache-2.0
/*
 * Signals from a run: kill(host pid, 0) and SIGKILL, toward another run, and
 * SIGIO ownership (F_SETOWN, F_SETOWN_EX, FIOSETOWN) toward a host pid. The
 * targets run as the attacker's uid, so the kernel's own checks allow what
 * custode denies; each denial has that control.
 */
#include <poll.h>

#include "procutil.h"

#define PROC_NONE POLICY("proc-none", "{\"process\":{\"signals\":\"run\"}}")

/* The next line the target prints within ms, or "" */
static const char *next_line(struct ktest_proc *t, int ms)
{
	static char line[128];

	if (!ktest_read_line(t->out, line, sizeof(line), ms))
		line[0] = 0;
	return line;
}

KTEST(process_signals_host_denied)
{
	static struct ktest_result r;
	struct ktest_proc t;
	struct ktest_dirs d;
	const char *pol;
	char pid_s[16], receipt[400];
	unsigned long addr;
	int pid = 0;
	json_t *rc, *ev;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	pol = pu_policy(d.root, "none", PROC_NONE);
	snprintf(receipt, sizeof(receipt), "%s/receipt.json", d.root);
	if (!ASSERT_TRUE(pu_host_target(NOBODY, &t, &pid, &addr), "host target"))
		return;
	snprintf(pid_s, sizeof(pid_s), "%d", pid);

	/* control: same uid, no custode */
	pu_probe(&r, NOBODY, ARGS("kill", pid_s, "0"));
	ASSERT_STREQ(r.out, "ok\n", "control: kill(pid, 0)");
	pu_probe(&r, NOBODY, ARGS("kill", pid_s, "10"));
	ASSERT_STREQ(r.out, "ok\n", "control: SIGUSR1");
	ASSERT_STREQ(next_line(&t, 10000), "signal 10", "control: delivered");

	ktest_events();
	pu_run_probe(&r, ARGS("--policy", pol, "--receipt", receipt), ARGS("kill", pid_s, "0"));
	ASSERT_STREQ(r.out, "EPERM\n", "run: kill(pid, 0) probe");
	rc = pu_load_json(receipt);
	ASSERT_EQ(pu_denials(rc, "process.signal.denied"), 1, "counted exactly");
	json_decref(rc);
	pu_run_probe(&r, ARGS("--policy", pol), ARGS("kill", pid_s, "10"));
	ASSERT_STREQ(r.out, "EPERM\n", "run: SIGUSR1");
	pu_run_probe(&r, ARGS("--policy", pol), ARGS("kill", pid_s, "9"));
	ASSERT_STREQ(r.out, "EPERM\n", "run: SIGKILL");
	ASSERT_STREQ(next_line(&t, 500), "", "nothing delivered");
	ASSERT_TRUE(ktest_pid_alive(pid), "target survives the run's SIGKILL");
	ev = ktest_events();
	if (ASSERT_TRUE(pu_task_event(ev, "task_kill", "process.signal.denied", pid) != NULL, "event")) {
		json_t *e = NULL;
		size_t i;
		json_t *x;
		json_array_foreach(ev, i, x) {
			json_t *task = json_object_get(x, "task");
			if (json_integer_value(json_object_get(task, "target_tgid")) == pid &&
			    json_integer_value(json_object_get(task, "signal")) == 9)
				e = x;
		}
		ASSERT_TRUE(e != NULL, "SIGKILL event with the signal");
	}
	json_decref(ev);

	/* signals inside the run are fine */
	pu_run_probe(&r, ARGS("--policy", pol), ARGS("child", "kill"));
	ASSERT_STREQ(r.out, "ok\n", "run: kill(own child, 0)");
	ktest_run(pu_argv(ARGS("--policy", pol), ARGS("/bin/sh", "-c", "sleep 30 & kill -TERM $! && wait $!; echo $?")),
		  -1, 120000, &r);
	ASSERT_STREQ(r.out, "143\n", "run: sh kills its background job");

	/* control: the host still may */
	pu_probe(&r, NOBODY, ARGS("kill", pid_s, "9"));
	ASSERT_STREQ(r.out, "ok\n", "control: SIGKILL from the host");
	ASSERT_EQ(ktest_wait(&t, 10000), 128 + 9, "target killed by the control");
	ktest_proc_close(&t);
}

KTEST(process_signals_other_run_denied)
{
	static struct ktest_result r;
	struct ktest_proc t;
	struct ktest_dirs d;
	const char *pol;
	char pid_s[16];
	unsigned long addr;
	int pid = 0;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	pol = pu_policy(d.root, "none", PROC_NONE);
	if (!ASSERT_TRUE(pu_run_target(pol, &t, &pid, &addr), "target in a run"))
		return;
	snprintf(pid_s, sizeof(pid_s), "%d", pid);
	pu_probe(&r, NOBODY, ARGS("kill", pid_s, "0"));
	ASSERT_STREQ(r.out, "ok\n", "control: the host probes the run's process");
	pu_run_probe(&r, ARGS("--policy", pol), ARGS("kill", pid_s, "0"));
	ASSERT_STREQ(r.out, "EPERM\n", "another run: kill(pid, 0)");
	pu_run_probe(&r, ARGS("--policy", pol), ARGS("kill", pid_s, "9"));
	ASSERT_STREQ(r.out, "EPERM\n", "another run: SIGKILL");
	ASSERT_TRUE(ktest_pid_alive(pid), "target alive");
	ASSERT_EQ(pu_stop(&t), 0, "target's run ends normally");
}

KTEST(process_setown_host_denied)
{
	static struct ktest_result r;
	struct ktest_proc t;
	struct ktest_dirs d;
	const char *pol;
	char pid_s[16];
	unsigned long addr;
	int pid = 0;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	pol = pu_policy(d.root, "none", PROC_NONE);
	if (!ASSERT_TRUE(pu_host_target(NOBODY, &t, &pid, &addr), "host target"))
		return;
	snprintf(pid_s, sizeof(pid_s), "%d", pid);

	pu_probe(&r, NOBODY, ARGS("setown", pid_s));
	ASSERT_STREQ(r.out, "ok\n", "control: F_SETOWN to a host pid");
	ASSERT_STREQ(next_line(&t, 10000), "signal 29", "control: SIGIO delivered");
	pu_probe(&r, NOBODY, ARGS("fiosetown", pid_s));
	ASSERT_STREQ(r.out, "ok\n", "control: FIOSETOWN");
	ASSERT_STREQ(next_line(&t, 10000), "signal 29", "control: SIGIO delivered");
	/* the probe's exit (its socket's peer closing) raises one more SIGIO per control: drain them */
	while (next_line(&t, 1000)[0])
		;

	pu_run_probe(&r, ARGS("--policy", pol), ARGS("setown", pid_s));
	ASSERT_STREQ(r.out, "EPERM\n", "run: F_SETOWN to a host pid");
	ASSERT_CONTAINS(r.err, "process.signal.denied=1", "counted");
	pu_run_probe(&r, ARGS("--policy", pol), ARGS("setown-ex", pid_s));
	ASSERT_STREQ(r.out, "EPERM\n", "run: F_SETOWN_EX");
	pu_run_probe(&r, ARGS("--policy", pol), ARGS("fiosetown", pid_s));
	ASSERT_STREQ(r.out, "EPERM\n", "run: FIOSETOWN");
	pu_run_probe(&r, ARGS("--policy", pol), ARGS("setown", "-1"));
	ASSERT_STREQ(r.out, "EPERM\n", "run: F_SETOWN to a process group");
	ASSERT_STREQ(next_line(&t, 500), "", "no SIGIO reached the host");
	/* owning its own file is fine */
	pu_run_probe(&r, ARGS("--policy", pol), ARGS("setown", "self"));
	ASSERT_CONTAINS(r.out, "ok\n", "run: F_SETOWN to itself");
	ASSERT_EQ(pu_stop(&t), 0, "target");
}
