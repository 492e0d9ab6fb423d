// SPDX-License-Identifier: Apache-2.0
/*
 * Issue 13, class 4: scheduling and resource controls of processes outside
 * the run (docs/process.md "Scheduling and resource controls"). The target
 * is a host process of the run's own uid (nobody), outside any run, with a
 * second thread and its own session, process group and autogroup, so the
 * kernel's own checks allow every change. Each case is:
 *
 *   CONTROL  a nobody process outside any run makes the change, and the
 *            target's state (read back by root: nice, affinity, policy, I/O
 *            priority, limits, oom_score_adj, autogroup, timer slack)
 *            shows it; root puts the state back;
 *   ATTACK   the same from a launched run and from an attached one (a host
 *            process moved into a run's cgroup: no seccomp filter): refused
 *            with the errno the kernel returns for the hook's -EPERM,
 *            recorded (process.sched.denied, the target's tgid in the
 *            record), and the target's state unchanged.
 *
 * Root moved into a run (every capability: SCHED_FIFO, negative nice,
 * real-time I/O priority, another's timer slack, process_madvise) is refused
 * the same way. PRIO_USER / IOPRIO_WHO_USER of the run's uid leave the host's
 * processes of that uid alone. Runs change their own processes freely.
 */
#include <errno.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/ioprio.h>
#include <sched.h>

#include "ipcutil.h"

#define PROC_NONE POLICY("sched-proc", "{\"process\":{}}")
#define NO_PROC POLICY("sched-noproc", "{\"limits\":{\"pids\":512}}")

/* ---- the target's state, as root reads it from outside ---- */

struct snap {
	int nice_p, nice_t, pol_p, pol_t;
	long aff_p, aff_t, io_p, io_t;
	struct rlimit nofile, cpu, as;
	char oom[32], autogroup[64], slack[32];
};

static long affinity(int pid)
{
	cpu_set_t set;
	long mask = 0;

	CPU_ZERO(&set);
	if (sched_getaffinity(pid, sizeof(set), &set) < 0)
		return -1;
	for (int i = 0; i < 64; i++)
		if (CPU_ISSET(i, &set))
			mask |= 1L << i;
	return mask;
}

static void read_small(const char *path, char *out, size_t len)
{
	FILE *f = fopen(path, "r");

	out[0] = 0;
	if (f) {
		if (!fgets(out, (int)len, f))
			out[0] = 0;
		fclose(f);
	}
	out[strcspn(out, "\n")] = 0;
}

static void take(const struct ip_target *t, struct snap *s)
{
	memset(s, 0, sizeof(*s));
	errno = 0;
	s->nice_p = getpriority(PRIO_PROCESS, (id_t)t->pid);
	s->nice_t = getpriority(PRIO_PROCESS, (id_t)t->tid);
	s->pol_p = sched_getscheduler(t->pid);
	s->pol_t = sched_getscheduler(t->tid);
	s->aff_p = affinity(t->pid);
	s->aff_t = affinity(t->tid);
	s->io_p = syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, t->pid);
	s->io_t = syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, t->tid);
	prlimit(t->pid, RLIMIT_NOFILE, NULL, &s->nofile);
	prlimit(t->pid, RLIMIT_CPU, NULL, &s->cpu);
	prlimit(t->pid, RLIMIT_AS, NULL, &s->as);
	read_small(ip_fmt("/proc/%d/oom_score_adj", t->pid), s->oom, sizeof(s->oom));
	read_small(ip_fmt("/proc/%d/autogroup", t->pid), s->autogroup, sizeof(s->autogroup));
	read_small(ip_fmt("/proc/%d/timerslack_ns", t->pid), s->slack, sizeof(s->slack));
}

static bool rl_eq(const struct rlimit *a, const struct rlimit *b)
{
	return a->rlim_cur == b->rlim_cur && a->rlim_max == b->rlim_max;
}

/* Equal, or log what differs. */
static bool same(const struct snap *a, const struct snap *b, const char *what)
{
	bool eq = true;

#define CMP(f, fmt)                                                                         \
	if (a->f != b->f) {                                                                 \
		ktest_log("%s: " #f " " fmt " -> " fmt, what, a->f, b->f);                  \
		eq = false;                                                                 \
	}
	CMP(nice_p, "%d")
	CMP(nice_t, "%d")
	CMP(pol_p, "%d")
	CMP(pol_t, "%d")
	CMP(aff_p, "%#lx")
	CMP(aff_t, "%#lx")
	CMP(io_p, "%#lx")
	CMP(io_t, "%#lx")
#undef CMP
	if (!rl_eq(&a->nofile, &b->nofile) || !rl_eq(&a->cpu, &b->cpu) || !rl_eq(&a->as, &b->as)) {
		ktest_log("%s: a resource limit changed (nofile %llu -> %llu, cpu %llu -> %llu, as %llu -> %llu)", what,
			  (unsigned long long)a->nofile.rlim_cur, (unsigned long long)b->nofile.rlim_cur,
			  (unsigned long long)a->cpu.rlim_cur, (unsigned long long)b->cpu.rlim_cur,
			  (unsigned long long)a->as.rlim_cur, (unsigned long long)b->as.rlim_cur);
		eq = false;
	}
	for (int i = 0; i < 3; i++) {
		const char *x = i == 0 ? a->oom : i == 1 ? a->autogroup : a->slack;
		const char *y = i == 0 ? b->oom : i == 1 ? b->autogroup : b->slack;
		if (strcmp(x, y)) {
			ktest_log("%s: \"%s\" -> \"%s\"", what, x, y);
			eq = false;
		}
	}
	return eq;
}

static void write_small(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* Put the target back as it was (root, outside any run). */
static void restore(const struct ip_target *t, const struct snap *s)
{
	struct sched_param sp = {.sched_priority = 0};
	cpu_set_t set;
	const char *nice;

	for (int i = 0; i < 2; i++) {
		int who = i ? t->tid : t->pid;
		int pol = i ? s->pol_t : s->pol_p;
		long aff = i ? s->aff_t : s->aff_p;

		sched_setscheduler(who, pol, &sp);
		setpriority(PRIO_PROCESS, (id_t)who, i ? s->nice_t : s->nice_p);
		CPU_ZERO(&set);
		for (int c = 0; c < 64; c++)
			if (aff & (1L << c))
				CPU_SET(c, &set);
		sched_setaffinity(who, sizeof(set), &set);
		syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, who, (int)(i ? s->io_t : s->io_p));
	}
	prlimit(t->pid, RLIMIT_NOFILE, &s->nofile, NULL);
	prlimit(t->pid, RLIMIT_CPU, &s->cpu, NULL);
	prlimit(t->pid, RLIMIT_AS, &s->as, NULL);
	write_small(ip_fmt("/proc/%d/oom_score_adj", t->pid), s->oom);
	write_small(ip_fmt("/proc/%d/timerslack_ns", t->pid), s->slack);
	nice = strstr(s->autogroup, " nice ");
	if (nice)
		write_small(ip_fmt("/proc/%d/autogroup", t->pid), nice + 6);
}

/* ---- cases ---- */

struct scase {
	const char *name;
	const char *op;   /* %P: the target's pid, %T: its second thread, %A: an address of its memory */
	const char *ctrl; /* the control's operation, when not op itself */
	const char *hook, *reason, *err;
	bool invisible; /* the change can't be read back (a single NUMA node: migration moves nothing) */
};

#define SCHED "process.sched.denied"
#define PTRACE "process.ptrace.denied"

/* As a nobody process, of a host process of nobody. */
static const struct scase user_cases[] = {
	{"setpriority", "nice %P 5", NULL, "task_setnice", SCHED, "EPERM", false},
	{"setpriority of a thread", "nice %T 6", NULL, "task_setnice", SCHED, "EPERM", false},
	{"setpriority(PRIO_PGRP)", "nice-pgrp %P 7", NULL, "task_setnice", SCHED, "EPERM", false},
	{"setpriority(PRIO_USER)", "nice-user 65534 8", NULL, "task_setnice", SCHED, "EPERM", false},
	{"sched_setaffinity", "affinity %P 1", NULL, "task_setscheduler", SCHED, "EPERM", false},
	{"sched_setaffinity of a thread", "affinity %T 0", NULL, "task_setscheduler", SCHED, "EPERM", false},
	{"sched_setscheduler(SCHED_BATCH)", "sched %P batch", NULL, "task_setscheduler", SCHED, "EPERM", false},
	{"sched_setscheduler(SCHED_IDLE)", "sched %P idle", NULL, "task_setscheduler", SCHED, "EPERM", false},
	{"sched_setattr", "setattr %P batch 9", NULL, "task_setscheduler", SCHED, "EPERM", false},
	{"sched_setattr of a thread", "setattr %T idle 4", NULL, "task_setscheduler", SCHED, "EPERM", false},
	{"ioprio_set(IOPRIO_WHO_PROCESS)", "ioprio %P 2 7", NULL, "task_setioprio", SCHED, "EPERM", false},
	{"ioprio_set of a thread, idle class", "ioprio %T 3 0", NULL, "task_setioprio", SCHED, "EPERM", false},
	{"ioprio_set(IOPRIO_WHO_PGRP)", "ioprio-pgrp %P 2 6", NULL, "task_setioprio", SCHED, "EPERM", false},
	{"ioprio_set(IOPRIO_WHO_USER)", "ioprio-user 65534 2 5", NULL, "task_setioprio", SCHED, "EPERM", false},
	{"prlimit(RLIMIT_NOFILE)", "prlimit %P nofile 64", NULL, "task_setrlimit", SCHED, "EPERM", false},
	{"prlimit(RLIMIT_CPU)", "prlimit %P cpu 100000", NULL, "task_setrlimit", SCHED, "EPERM", false},
	{"prlimit(RLIMIT_AS)", "prlimit %P as 1099511627776", NULL, "task_setrlimit", SCHED, "EPERM", false},
	/* the kernel asks ptrace_may_access first: the ptrace hook refuses before task_movememory */
	{"migrate_pages", "migrate %P", NULL, "ptrace_access_check", PTRACE, "EPERM", true},
	{"move_pages", "move-pages %P %A", NULL, "ptrace_access_check", PTRACE, "EPERM", true},
};

/* As root (CAP_SYS_NICE, CAP_SYS_RESOURCE): what only privilege reaches. */
static const struct scase root_cases[] = {
	{"setpriority to a negative nice", "nice %P -5", NULL, "task_setnice", SCHED, "EPERM", false},
	{"sched_setscheduler(SCHED_FIFO)", "sched %P fifo 1", NULL, "task_setscheduler", SCHED, "EPERM", false},
	{"sched_setscheduler(SCHED_RR) of a thread", "sched %T rr 1", NULL, "task_setscheduler", SCHED, "EPERM", false},
	{"sched_setaffinity", "affinity %P 1", NULL, "task_setscheduler", SCHED, "EPERM", false},
	{"ioprio_set, real-time class", "ioprio %P 1 0", NULL, "task_setioprio", SCHED, "EPERM", false},
	{"prlimit raising the hard limit", "prlimit %P nofile 64 2048", NULL, "task_setrlimit", SCHED, "EPERM", false},
	/* a one-second CPU limit would have the kernel kill the target: the control sets a harmless one */
	{"prlimit(RLIMIT_CPU, 1)", "prlimit %P cpu 1 1", "prlimit %P cpu 100000", "task_setrlimit", SCHED, "EPERM", false},
	/* a host process's /proc/PID files are not opened for writing from a run (file_open, before task_setscheduler) */
	{"/proc/PID/timerslack_ns", "write /proc/%P/timerslack_ns 123456", NULL, "file_open", "file.proc.denied", "EACCES",
	 false},
	{"process_madvise(MADV_COLD)", "madvise %P %A", NULL, "ptrace_access_check", PTRACE, "EACCES", true},
};

/* op with the target's ids in, split into words (static: one at a time). */
static int words(const char *op, const struct ip_target *t, const char **argv, int max, char *line, size_t len)
{
	size_t o = 0;
	int n = 0;

	for (const char *p = op; *p && o + 24 < len; p++) {
		if (p[0] == '%' && (p[1] == 'P' || p[1] == 'T' || p[1] == 'A')) {
			o += (size_t)(p[1] == 'A' ? snprintf(line + o, len - o, "%#lx", t->addr)
						  : snprintf(line + o, len - o, "%d", p[1] == 'P' ? t->pid : t->tid));
			p++;
		} else {
			line[o++] = *p;
		}
	}
	line[o] = 0;
	for (char *save = NULL, *w = strtok_r(line, " ", &save); w && n < max - 1; w = strtok_r(NULL, " ", &save))
		argv[n++] = w;
	argv[n] = NULL;
	return n;
}

/* The control: ctrl_uid outside any run changes the target (seen), then root puts it back. */
static void control(const struct scase *c, const struct ip_target *t, int ctrl_uid, struct snap *base)
{
	static struct ktest_result r;
	const char *argv[16];
	char line[256];
	struct snap after, back;

	take(t, base);
	words(c->ctrl ? c->ctrl : c->op, t, argv, 16, line, sizeof(line));
	ASSERT_STREQ(ip_host(&r, ctrl_uid, argv), "ok", ip_fmt("control: %s", c->name));
	take(t, &after);
	if (!c->invisible)
		ASSERT_TRUE(!same(base, &after, c->name), ip_fmt("control: %s changed the target", c->name));
	restore(t, base);
	take(t, &back);
	ASSERT_TRUE(same(base, &back, "restore"), ip_fmt("%s: restored", c->name));
	ASSERT_TRUE(ktest_pid_alive(t->pid), "the target lives");
}

/* After an attempt: refused as c says, recorded, the target untouched. */
static void refused(const struct scase *c, const struct ip_target *t, const struct snap *base, const char *got,
		    const char *who)
{
	struct snap now;
	json_t *ev = ktest_events();

	ASSERT_STREQ(got, c->err, ip_fmt("%s: %s", who, c->name));
	if (!strcmp(c->hook, "file_open")) /* a file record: the path, no target task */
		ASSERT_TRUE(ktest_find_event(ev, c->hook, c->reason, NULL) != NULL, ip_fmt("%s: %s event (%s)", who, c->name, c->hook));
	else
		ASSERT_TRUE(pu_task_event(ev, c->hook, c->reason, t->pid) != NULL,
			    ip_fmt("%s: %s event (%s)", who, c->name, c->hook));
	json_decref(ev);
	take(t, &now);
	ASSERT_TRUE(same(base, &now, c->name), ip_fmt("%s: %s left the target unchanged", who, c->name));
	ASSERT_TRUE(ktest_pid_alive(t->pid), "the target lives");
}

/* Each case: control, then from a launched run of policy. */
static void launched_cases(const struct scase *cases, size_t n, const struct ip_target *t, int ctrl_uid,
			   const char *policy, const char *who)
{
	static struct ktest_result r;

	for (size_t i = 0; i < n; i++) {
		const char *argv[16];
		char line[256];
		struct snap base;

		control(&cases[i], t, ctrl_uid, &base);
		words(cases[i].op, t, argv, 16, line, sizeof(line));
		ktest_events();
		ip_run(&r, ARGS("--policy", policy), argv);
		ASSERT_CONTAINS(r.err, ip_fmt("%s=", cases[i].reason), ip_fmt("%s: %s counted", who, cases[i].name));
		refused(&cases[i], t, &base, ip_out(&r), who);
	}
}

/* Each case: control, then from an attached process. */
static void attached_cases(const struct scase *cases, size_t n, const struct ip_target *t, int ctrl_uid,
			   struct ip_srv *s, const char *who)
{
	for (size_t i = 0; i < n; i++) {
		const char *argv[16];
		char line[256], cmd[256] = "";
		struct snap base;

		control(&cases[i], t, ctrl_uid, &base);
		words(cases[i].op, t, argv, 16, line, sizeof(line));
		for (int k = 0; argv[k]; k++)
			snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), "%s%s", k ? " " : "", argv[k]);
		ktest_events();
		refused(&cases[i], t, &base, ip_ask(s, "%s", cmd), who);
	}
}

KTEST(attack_sched_host_target_launched_run)
{
	struct ip_target t = {0};
	struct ktest_dirs d;
	const char *pol;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	pol = pu_policy(d.root, "proc", PROC_NONE);
	ip_warm(pol);
	if (!ASSERT_TRUE(ip_host_target(&t, NOBODY), "host target") || !ASSERT_TRUE(t.tid > 0 && t.addr, "its thread"))
		goto out;
	if (!ASSERT_TRUE(affinity(t.pid) == 3, "two CPUs (the guest's --smp 2)"))
		goto out;
	launched_cases(user_cases, sizeof(user_cases) / sizeof(user_cases[0]), &t, NOBODY, pol, "launched");
out:
	ip_target_stop(&t);
}

KTEST(attack_sched_host_target_attached_run)
{
	struct ip_target t = {0}, run = {0};
	struct ip_srv s = {0}, root = {0};
	struct ktest_dirs d;
	const char *pol;
	char receipt[400];
	json_t *rc;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	pol = pu_policy(d.root, "proc", PROC_NONE);
	ip_warm(pol);
	snprintf(receipt, sizeof(receipt), "%s/receipt.json", d.root);
	if (!ASSERT_TRUE(ip_host_target(&t, NOBODY), "host target") ||
	    !ASSERT_TRUE(ip_run_target(&run, ARGS("--policy", pol, "--receipt", receipt), ARGS("target")), "a run") ||
	    !ASSERT_TRUE(ip_serve_in(&s, NOBODY, run.pid), "nobody attached") ||
	    !ASSERT_TRUE(ip_serve_in(&root, -1, run.pid), "root attached"))
		goto out;
	attached_cases(user_cases, sizeof(user_cases) / sizeof(user_cases[0]), &t, NOBODY, &s, "attached");
	attached_cases(root_cases, sizeof(root_cases) / sizeof(root_cases[0]), &t, -1, &root, "root attached");
	ip_serve_end(&s);
	ip_serve_end(&root);
	ASSERT_EQ(ip_target_stop(&run), 0, "the run ends");
	rc = pu_load_json(receipt);
	ASSERT_TRUE(pu_denials(rc, SCHED) >= 22, "counted in the run's receipt");
	ASSERT_TRUE(pu_denials(rc, PTRACE) >= 3, "the ptrace refusals too");
	json_decref(rc);
out:
	ip_serve_end(&s);
	ip_serve_end(&root);
	ip_target_stop(&run);
	ip_target_stop(&t);
}

/* PRIO_USER and IOPRIO_WHO_USER reach every process of the uid: host ones (two of them, threads too) stay as they were. */
KTEST(attack_sched_user_wide_spares_host)
{
	static struct ktest_result r;
	struct ip_target t1 = {0}, t2 = {0}, run = {0};
	struct ip_srv s = {0};
	struct snap b1, b2, n1, n2;
	struct ktest_dirs d;
	const char *pol;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	pol = pu_policy(d.root, "proc", PROC_NONE);
	ip_warm(pol);
	if (!ASSERT_TRUE(ip_host_target(&t1, NOBODY) && ip_host_target(&t2, NOBODY), "two host targets") ||
	    !ASSERT_TRUE(ip_run_target(&run, ARGS("--policy", pol), ARGS("target")), "a run") ||
	    !ASSERT_TRUE(ip_serve_in(&s, NOBODY, run.pid), "attached"))
		goto out;
	take(&t1, &b1);
	take(&t2, &b2);
	/* launched: the run's own processes may change (they are its), the host's not */
	ASSERT_STREQ(ip_run(&r, ARGS("--policy", pol), ARGS("nice-user", "65534", "12")), "EPERM", "launched: PRIO_USER");
	ASSERT_STREQ(ip_run(&r, ARGS("--policy", pol), ARGS("ioprio-user", "65534", "3", "0")), "EPERM",
		     "launched: IOPRIO_WHO_USER");
	ASSERT_STREQ(ip_ask(&s, "nice-user 65534 13"), "EPERM", "attached: PRIO_USER");
	ASSERT_STREQ(ip_ask(&s, "ioprio-user 65534 3 0"), "EPERM", "attached: IOPRIO_WHO_USER");
	take(&t1, &n1);
	take(&t2, &n2);
	ASSERT_TRUE(same(&b1, &n1, "host process 1"), "host process 1 and its thread unchanged");
	ASSERT_TRUE(same(&b2, &n2, "host process 2"), "host process 2 and its thread unchanged");
	/* the attached process's own run: the launched target is the run's, so PRIO_USER may reach it */
	ktest_log("the run's own target after PRIO_USER: nice %d", getpriority(PRIO_PROCESS, (id_t)run.pid));
out:
	ip_serve_end(&s);
	ip_target_stop(&run);
	ip_target_stop(&t1);
	ip_target_stop(&t2);
}

/* The target is another run's process: refused from a run, also from one without a process section. */
KTEST(attack_sched_other_run_target)
{
	static const struct scase cases[] = {
		{"setpriority", "nice %P 5", NULL, "task_setnice", SCHED, "EPERM", false},
		{"sched_setaffinity", "affinity %P 1", NULL, "task_setscheduler", SCHED, "EPERM", false},
		{"sched_setscheduler(SCHED_IDLE)", "sched %P idle", NULL, "task_setscheduler", SCHED, "EPERM", false},
		{"ioprio_set", "ioprio %P 2 7", NULL, "task_setioprio", SCHED, "EPERM", false},
		{"prlimit(RLIMIT_NOFILE)", "prlimit %P nofile 64", NULL, "task_setrlimit", SCHED, "EPERM", false},
	};
	struct ip_target ta = {0}, rb = {0};
	struct ip_srv b = {0};
	struct ktest_dirs d;
	const char *pol, *noproc;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	pol = pu_policy(d.root, "proc", PROC_NONE);
	ip_warm(pol);
	noproc = pu_policy(d.root, "noproc", NO_PROC);
	if (!ASSERT_TRUE(ip_run_target(&ta, ARGS("--policy", pol), ARGS("target")), "run A's target") ||
	    !ASSERT_TRUE(ta.tid > 0, "its thread") ||
	    !ASSERT_TRUE(ip_run_target(&rb, ARGS("--policy", pol), ARGS("target")), "run B") ||
	    !ASSERT_TRUE(ip_serve_in(&b, NOBODY, rb.pid), "attached to B"))
		goto out;
	/* the control: the host (a nobody outside any run) may change another run's process */
	launched_cases(cases, sizeof(cases) / sizeof(cases[0]), &ta, NOBODY, pol, "run B");
	launched_cases(cases, sizeof(cases) / sizeof(cases[0]), &ta, NOBODY, noproc, "a run without a process section");
	attached_cases(cases, sizeof(cases) / sizeof(cases[0]), &ta, NOBODY, &b, "attached to B");
out:
	ip_serve_end(&b);
	ip_target_stop(&rb);
	ip_target_stop(&ta);
}

/* Ordinary workload: a run renices, pins, reschedules and limits its own child and itself. */
KTEST(attack_sched_own_processes_workload)
{
	static struct ktest_result r;
	struct ip_target run = {0};
	struct ip_srv s = {0}, root = {0};
	struct ktest_dirs d;
	const char *pol, *noproc;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	pol = pu_policy(d.root, "proc", PROC_NONE);
	ip_warm(pol);
	noproc = pu_policy(d.root, "noproc", NO_PROC);
	ASSERT_STREQ(ip_run(&r, ARGS("--policy", pol), ARGS("sched-own")), "ok", "launched run");
	ASSERT_TRUE(strstr(r.err, SCHED) == NULL, "nothing refused");
	ASSERT_STREQ(ip_run(&r, ARGS("--policy", noproc), ARGS("sched-own")), "ok", "launched run without a process section");
	/* busybox: nice and renice of a background job */
	ktest_run(pu_argv(ARGS("--policy", pol),
			  ARGS("/bin/sh", "-c", ip_fmt("sleep 30 & p=$!; renice -n 4 -p $p >/dev/null && %s getnice $p; kill $p",
						       ktest_helper("ipcprobe")))),
		  -1, 120000, &r);
	ASSERT_STREQ(ip_out(&r), "ok 4", "launched: sh renices its background job");
	if (ASSERT_TRUE(ip_run_target(&run, ARGS("--policy", pol), ARGS("target")), "a run") &&
	    ASSERT_TRUE(ip_serve_in(&s, NOBODY, run.pid), "attached") &&
	    ASSERT_TRUE(ip_serve_in(&root, -1, run.pid), "root attached")) {
		ASSERT_STREQ(ip_ask(&s, "sched-own"), "ok", "attached");
		ASSERT_STREQ(ip_ask(&root, "sched-own"), "ok", "root attached");
		/* another process of the same run: the run's target */
		ASSERT_STREQ(ip_ask(&s, "nice %d 3", run.pid), "ok", "attached: renice the run's other process");
		ASSERT_STREQ(ip_ask(&s, "affinity %d 0", run.pid), "ok", "attached: pin it");
		ASSERT_STREQ(ip_ask(&s, "prlimit %d nofile 100", run.pid), "ok", "attached: limit it");
		ASSERT_STREQ(ip_ask(&root, "sched %d fifo 1", run.tid), "ok", "root attached: SCHED_FIFO on its own thread");
		ASSERT_STREQ(ip_ask(&root, "sched %d other", run.tid), "ok", "(back)");
		ASSERT_STREQ(ip_ask(&s, "getnice %d", run.pid), "ok 3", "read back");
	}
	ip_serve_end(&s);
	ip_serve_end(&root);
	ASSERT_EQ(ip_target_stop(&run), 0, "the run ends");
}

/*
 * cgroup v2 resource controls of a host process's cgroup (cpu.weight,
 * cpu.max, pids.max, memory.high): root moved into a run may not write them
 * (file.cgroup_escape.denied, every run whatever its policy).
 */
KTEST(attack_sched_cgroup_controls)
{
	static const struct {
		const char *file, *value;
	} files[] = {
		{"cpu.weight", "1"},
		{"cpu.max", "1000 100000"},
		{"pids.max", "1"},
		{"memory.high", "1"},
	};
	static struct ktest_result r;
	struct ip_target t = {0}, run = {0};
	struct ip_srv root = {0};
	char mount[512], cg[600];
	struct ktest_dirs d;
	const char *pol;
	json_t *ev;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	pol = pu_policy(d.root, "proc", PROC_NONE);
	ip_warm(pol);
	if (!ASSERT_EQ(custode_cgroup2_mount(mount, sizeof(mount)), 0, "cgroup2"))
		return;
	snprintf(cg, sizeof(cg), "%s/ktest-sched-%d", mount, (int)getpid());
	if (!ASSERT_TRUE(mkdir(cg, 0755) == 0, "a host cgroup") || !ASSERT_TRUE(ip_host_target(&t, NOBODY), "host target") ||
	    !ASSERT_EQ(custode_cgroup_move(cg, t.pid), 0, "the target in it") ||
	    !ASSERT_TRUE(ip_run_target(&run, ARGS("--policy", pol), ARGS("target")), "a run") ||
	    !ASSERT_TRUE(ip_serve_in(&root, -1, run.pid), "root attached"))
		goto out;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		const char *path = ip_fmt("%s/%s", cg, files[i].file);
		char before[128], now[128];

		read_small(path, before, sizeof(before));
		/* control: root outside any run */
		ASSERT_STREQ(ip_host(&r, -1, ARGS("write", path, files[i].value)), "ok", ip_fmt("control: %s", files[i].file));
		read_small(path, now, sizeof(now));
		ASSERT_TRUE(strcmp(before, now) != 0, ip_fmt("control: %s changed", files[i].file));
		write_small(path, before);
		read_small(path, now, sizeof(now));
		ASSERT_STREQ(now, before, "restored");
		ktest_events();
		ASSERT_STREQ(ip_ask(&root, "write %s %s", path, files[i].value), "EACCES", ip_fmt("root attached: %s", files[i].file));
		ev = ktest_events();
		ASSERT_TRUE(ip_event(ev, "file_open", "file.cgroup_escape.denied", root.pid) != NULL, "event");
		json_decref(ev);
		read_small(path, now, sizeof(now));
		ASSERT_STREQ(now, before, ip_fmt("%s unchanged", files[i].file));
	}
out:
	ip_serve_end(&root);
	ip_target_stop(&run);
	ip_target_stop(&t);
	rmdir(cg);
}
