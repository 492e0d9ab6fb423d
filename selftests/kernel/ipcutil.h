/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ipcprobe (helpers/ipcprobe.c) from the IPC and scheduling attack tests
 * (test_attack_ipc.c, test_attack_sched.c): one-shot probes on the host and
 * in launched runs, long-lived "serve" probes that are moved into a run's
 * cgroup (an attached process: no seccomp filter, only the LSM hooks stand)
 * and answer one operation per line, and targets that stay alive.
 */
#ifndef CUSTODE_KTEST_IPCUTIL_H
#define CUSTODE_KTEST_IPCUTIL_H

#include <stdarg.h>

#include "procutil.h"

/* A formatted argument (16 rotating slots). */
static __attribute__((unused, format(printf, 1, 2))) const char *ip_fmt(const char *fmt, ...)
{
	static char buf[16][1024];
	static int next;
	char *out = buf[next++ % 16];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out, 1024, fmt, ap);
	va_end(ap);
	return out;
}

/* The first line of a probe's output, without the newline (static, 4 slots). */
static __attribute__((unused)) const char *ip_out(const struct ktest_result *r)
{
	static char buf[4][512];
	static int next;
	char *out = buf[next++ % 4];

	snprintf(out, 512, "%s", r->out);
	out[strcspn(out, "\n")] = 0;
	return out;
}

static __attribute__((unused)) int ip_cmd(const char **cmd, int max, const char *const *args)
{
	int n = 0;

	cmd[n++] = ktest_helper("ipcprobe");
	for (; *args && n < max - 1; args++)
		cmd[n++] = *args;
	cmd[n] = NULL;
	return n;
}

/* ipcprobe ARGS outside any run, as uid (-1: root); returns its first output line. */
static __attribute__((unused)) const char *ip_host(struct ktest_result *r, int uid, const char *const *args)
{
	const char *cmd[32];

	ip_cmd(cmd, 32, args);
	ktest_run((char *const *)cmd, uid, 60000, r);
	return ip_out(r);
}

/* custode run RUN_ARGS -- ipcprobe ARGS; returns its first output line (stderr in r->err). */
static __attribute__((unused)) const char *ip_run(struct ktest_result *r, const char *const *run_args,
						  const char *const *args)
{
	const char *cmd[32];

	ip_cmd(cmd, 32, args);
	ktest_run(pu_argv(run_args, cmd), -1, 120000, r);
	return ip_out(r);
}

/*
 * Load the engine before the first timed step: the first run on a fresh
 * guest loads every class (minutes under TCG), longer than a probe's timeout.
 */
static __attribute__((unused)) void ip_warm(const char *policy)
{
	static struct ktest_result r;

	if (ktest_run(pu_argv(ARGS("--policy", policy), ARGS("/bin/true")), -1, 600000, &r) != 0)
		ktest_log("warm-up run: %d %s", r.code, r.err);
}

/* A process that stays alive: "ipcprobe target" (on the host or in a run), or any "ready PID ..." command. */
struct ip_target {
	struct ktest_proc p;
	int pid, tid;
	unsigned long addr;
	bool up;
};

static __attribute__((unused)) bool ip_target_start(struct ip_target *t, char *const argv[], int uid)
{
	char line[160];

	memset(t, 0, sizeof(*t));
	if (ktest_spawn(argv, uid, &t->p) < 0)
		return false;
	t->up = true;
	if (!ktest_read_line(t->p.out, line, sizeof(line), 120000)) {
		ktest_log("target: no ready line");
		return false;
	}
	if (sscanf(line, "ready %d %d %lx", &t->pid, &t->tid, &t->addr) < 1 || t->pid <= 0) {
		ktest_log("target: %s", line);
		return false;
	}
	return true;
}

/* ipcprobe target on the host as uid */
static __attribute__((unused)) bool ip_host_target(struct ip_target *t, int uid)
{
	char *argv[] = {(char *)ktest_helper("ipcprobe"), "target", NULL};

	return ip_target_start(t, argv, uid);
}

/* custode run RUN_ARGS -- ipcprobe ARGS (e.g. "target", or "wait OP ..." — then ip_go) */
static __attribute__((unused)) bool ip_run_target(struct ip_target *t, const char *const *run_args,
						  const char *const *args)
{
	const char *cmd[32];

	ip_cmd(cmd, 32, args);
	return ip_target_start(t, pu_argv(run_args, cmd), -1);
}

/* Let a "wait OP" target do its operation; returns its answer line. */
static __attribute__((unused)) const char *ip_go(struct ip_target *t)
{
	static char line[512];

	line[0] = 0;
	if (write(t->p.in, "go\n", 3) != 3 || !ktest_read_line(t->p.out, line, sizeof(line), 60000))
		snprintf(line, sizeof(line), "(no answer)");
	return line;
}

/* End a target (close its stdin, wait, kill if needed); its exit code. */
static __attribute__((unused)) int ip_target_stop(struct ip_target *t)
{
	if (!t->up)
		return -1;
	t->up = false;
	return pu_stop(&t->p);
}

/* "ipcprobe serve": one operation per line. */
struct ip_srv {
	struct ktest_proc p;
	int pid;
	bool up;
};

/* "PROBE serve" as uid (any helper that answers "ready PID" first, then one line per operation) */
static __attribute__((unused)) bool ip_serve_probe(struct ip_srv *s, const char *probe, int uid)
{
	char *argv[] = {(char *)ktest_helper(probe), "serve", NULL};
	char line[64];

	memset(s, 0, sizeof(*s));
	if (ktest_spawn(argv, uid, &s->p) < 0)
		return false;
	s->up = true;
	return ktest_read_line(s->p.out, line, sizeof(line), 30000) && sscanf(line, "ready %d", &s->pid) == 1 &&
	       s->pid > 0;
}

static __attribute__((unused)) bool ip_serve(struct ip_srv *s, int uid)
{
	return ip_serve_probe(s, "ipcprobe", uid);
}

/* Move a serve process into the cgroup of run_pid (a process of a run): it is now attached. */
static __attribute__((unused)) bool ip_attach(struct ip_srv *s, int run_pid)
{
	return pu_move_into_cgroup_of(s->pid, run_pid);
}

/* A serve process as uid, moved into run_pid's run. */
static __attribute__((unused)) bool ip_serve_in(struct ip_srv *s, int uid, int run_pid)
{
	return ip_serve(s, uid) && ip_attach(s, run_pid);
}

static __attribute__((unused, format(printf, 2, 3))) const char *ip_ask(struct ip_srv *s, const char *fmt, ...)
{
	static char buf[4][512];
	static int next;
	char *out = buf[next++ % 4], cmd[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(cmd, sizeof(cmd) - 1, fmt, ap);
	va_end(ap);
	cmd[n++] = '\n';
	if (!s->up || write(s->p.in, cmd, (size_t)n) != n || !ktest_read_line(s->p.out, out, 512, 60000))
		snprintf(out, 512, "(no answer)");
	return out;
}

static __attribute__((unused)) void ip_serve_end(struct ip_srv *s)
{
	if (!s->up)
		return;
	s->up = false;
	ktest_close_stdin(&s->p);
	if (ktest_wait(&s->p, 20000) < 0) {
		kill(s->p.pid, SIGKILL);
		ktest_wait(&s->p, 10000);
	}
	ktest_proc_close(&s->p);
}

/* The value after "ok " of an answer ("ok 42" -> 42), or -1. */
static __attribute__((unused)) long ip_val(const char *answer)
{
	return strncmp(answer, "ok ", 3) ? -1 : strtol(answer + 3, NULL, 0);
}

/* First event with hook and reason from process tgid (0: any); borrowed from arr. */
static __attribute__((unused)) json_t *ip_event(json_t *arr, const char *hook, const char *reason, int tgid)
{
	size_t i;
	json_t *e;

	json_array_foreach(arr, i, e) {
		const char *h = json_string_value(json_object_get(e, "hook"));
		const char *r = json_string_value(json_object_get(e, "reason"));

		if (!h || !r || strcmp(h, hook) || strcmp(r, reason))
			continue;
		if (tgid && json_integer_value(json_object_get(e, "tgid")) != tgid)
			continue;
		return e;
	}
	return NULL;
}

/* Events of reason from process tgid (0: any). */
static __attribute__((unused)) int ip_count(json_t *arr, const char *reason, int tgid)
{
	size_t i;
	json_t *e;
	int n = 0;

	json_array_foreach(arr, i, e) {
		const char *r = json_string_value(json_object_get(e, "reason"));

		if (r && !strcmp(r, reason) && (!tgid || json_integer_value(json_object_get(e, "tgid")) == tgid))
			n++;
	}
	return n;
}

#endif
