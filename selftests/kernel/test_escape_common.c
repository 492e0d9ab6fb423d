// SPDX-License-Identifier: Apache-2.0
/*
 * Fixtures and helpers shared by the escape-matrix tests (test_escape_*.c,
 * docs/bypass-catalogue.md). Each test file #includes this file: everything
 * here is static (ESC_FN), so compiling it on its own as well — the kernel
 * tests are every .c file of selftests/kernel — defines nothing twice. (A header
 * would do the same; the escape tests keep to files named test_escape_*.)
 *
 * Every attack runs as uid 65534 (nobody) — the user custode runs commands
 * as when started by root — against files whose modes let nobody do it, so
 * what refuses inside a run is custode, and the control (the same eprobe
 * steps by nobody outside any run) proves it.
 *
 * "Engine-only" checks put a process into a live run's cgroup from outside
 * (the test is root), without the launcher's seccomp filter: what refuses it
 * then is the BPF engine alone, the layer that must hold whatever seccomp
 * does (seccomp runs before the LSM hooks, so inside a real run it can hide
 * whether the hook would have held).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "ktest.h"

#ifndef CUSTODE_TEST_ESCAPE_COMMON
#define CUSTODE_TEST_ESCAPE_COMMON

#define ESC_FN static __attribute__((unused))
#define ESC_NOBODY 65534
/* a NULL-terminated list of strings: eprobe steps, run arguments */
#define STEPS(...) ((const char *const[]){__VA_ARGS__, NULL})

struct esc_fix {
	struct ktest_dirs d; /* root, ws (owned by nobody), ws/f (0666), outside */
	char open[320];      /* <root>/open: 0777, outside every rule */
	char secret[340];    /* <root>/open/secret: 0666, "SECRET" */
};

struct esc_hold {
	struct ktest_proc p;
	int pid;
	char cg[512];
	char tmp[256]; /* the run's TMPDIR */
};

ESC_FN bool esc_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
ESC_FN bool esc_sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	if (st != 0)
		ktest_log("command failed (%d): %s", st, cmd);
	return st == 0;
}

ESC_FN bool esc_fixture(struct esc_fix *f)
{
	if (!ktest_make_dirs(&f->d))
		return false;
	snprintf(f->open, sizeof(f->open), "%s/open", f->d.root);
	snprintf(f->secret, sizeof(f->secret), "%s/secret", f->open);
	/* a workspace as its user has it: owned by the run's user, so DAC never is what refuses */
	return mkdir(f->open, 0777) == 0 && chmod(f->open, 0777) == 0 && ktest_write_file(f->secret, "SECRET\n", 0666) &&
	       chmod(f->secret, 0666) == 0 && chown(f->d.ws, ESC_NOBODY, ESC_NOBODY) == 0 &&
	       chown(f->d.ws_file, ESC_NOBODY, ESC_NOBODY) == 0;
}

/* argv: custode run RUN_ARGS --workspace WS -- eprobe STEPS */
ESC_FN char **run_argv(const char *const *run_args, const char *ws, const char *const *steps, bool eprobe)
{
	static char *argv[128];
	int n = 0;

	argv[n++] = (char *)ktest_custode();
	argv[n++] = "run";
	for (; run_args && *run_args && n < 40; run_args++)
		argv[n++] = (char *)*run_args;
	if (ws) {
		argv[n++] = "--workspace";
		argv[n++] = (char *)ws;
	}
	argv[n++] = "--";
	if (eprobe)
		argv[n++] = (char *)ktest_helper("eprobe");
	for (; steps && *steps && n < 126; steps++)
		argv[n++] = (char *)*steps;
	argv[n] = NULL;
	return argv;
}

ESC_FN int esc_run(struct ktest_result *r, const char *const *run_args, const char *ws, const char *const *steps)
{
	return ktest_run(run_argv(run_args, ws, steps, true), -1, 120000, r);
}

ESC_FN int esc_run_cmd(struct ktest_result *r, const char *const *run_args, const char *ws, const char *const *cmd)
{
	return ktest_run(run_argv(run_args, ws, cmd, false), -1, 120000, r);
}

ESC_FN int esc_run_sh(struct ktest_result *r, const char *const *run_args, const char *ws, const char *script)
{
	const char *cmd[] = {"/bin/sh", "-c", script, NULL};
	return esc_run_cmd(r, run_args, ws, cmd);
}

ESC_FN int esc_host(struct ktest_result *r, int uid, const char *const *steps)
{
	char *argv[96];
	int n = 0;

	argv[n++] = (char *)ktest_helper("eprobe");
	for (; *steps && n < 94; steps++)
		argv[n++] = (char *)*steps;
	argv[n] = NULL;
	return ktest_run(argv, uid, 120000, r);
}

ESC_FN json_t *esc_event(json_t *events, const char *hook, const char *reason, const char *path)
{
	size_t i;
	json_t *e;

	json_array_foreach(events, i, e) {
		const char *h = json_string_value(json_object_get(e, "hook"));
		const char *rs = json_string_value(json_object_get(e, "reason"));
		const char *p = json_string_value(json_object_get(json_object_get(e, "file"), "path"));

		if (!h || !rs || strcmp(rs, reason) || (hook && strcmp(h, hook)))
			continue;
		if (path && (!p || strcmp(p, path)))
			continue;
		return e;
	}
	return NULL;
}

ESC_FN void dump_events(json_t *events)
{
	size_t i;
	json_t *e;

	json_array_foreach(events, i, e) {
		char *s = json_dumps(e, JSON_COMPACT);
		if (i < 12)
			ktest_log("  event: %s", s ? s : "?");
		free(s);
	}
}

/* An enforced event of (hook, reason, path) is among events; hook or path NULL: any. */
ESC_FN bool esc_has_event(json_t *events, const char *hook, const char *reason, const char *path, const char *what)
{
	json_t *ev = esc_event(events, hook, reason, path);
	char label[512];

	snprintf(label, sizeof(label), "%s: event %s/%s %s", what, hook ? hook : "*", reason, path ? path : "");
	if (!ASSERT_TRUE(ev != NULL, label)) {
		dump_events(events);
		return false;
	}
	snprintf(label, sizeof(label), "%s: enforced", what);
	return ASSERT_TRUE(json_is_true(json_object_get(ev, "enforced")), label);
}

/*
 * A run was refused: stdout is `out` exactly, the stderr summary names the
 * reason, and an enforced event of (hook, reason, path) was recorded.
 * Consumes the pending events.
 */
ESC_FN bool esc_denied(const struct ktest_result *r, const char *out, const char *hook, const char *reason,
		       const char *path, const char *what)
{
	json_t *events = ktest_events();
	char label[512];
	bool ok = true;

	snprintf(label, sizeof(label), "%s: output", what);
	ok &= ASSERT_STREQ(r->out, out, label);
	snprintf(label, sizeof(label), "%s: denial summary on stderr", what);
	ok &= ASSERT_CONTAINS(r->err, reason, label);
	ok &= esc_has_event(events, hook, reason, path, what);
	json_decref(events);
	return ok;
}

/* The same for a process joined to a run (esc_join): no launcher, so no summary. */
ESC_FN bool esc_engine_denied(const struct ktest_result *r, const char *out, const char *hook, const char *reason,
			      const char *path, const char *what)
{
	json_t *events = ktest_events();
	char label[512];
	bool ok = true;

	snprintf(label, sizeof(label), "%s (engine only): output", what);
	ok &= ASSERT_STREQ(r->out, out, label);
	snprintf(label, sizeof(label), "%s (engine only)", what);
	ok &= esc_has_event(events, hook, reason, path, label);
	json_decref(events);
	return ok;
}

/* The audit-mode twin: stdout is `out`, the event says enforced=false. */
ESC_FN bool esc_audited(const struct ktest_result *r, const char *out, const char *hook, const char *reason, const char *path,
		 const char *what)
{
	json_t *events = ktest_events(), *ev;
	char label[512];
	bool ok = true;

	snprintf(label, sizeof(label), "%s: succeeds in audit mode", what);
	ok &= ASSERT_STREQ(r->out, out, label);
	snprintf(label, sizeof(label), "%s: summary says audit", what);
	ok &= ASSERT_CONTAINS(r->err, "audit", label);
	ev = esc_event(events, hook, reason, path);
	snprintf(label, sizeof(label), "%s: audit event %s/%s %s", what, hook ? hook : "*", reason, path ? path : "");
	if (!ASSERT_TRUE(ev != NULL, label)) {
		dump_events(events);
		ok = false;
	} else {
		snprintf(label, sizeof(label), "%s: enforced=false", what);
		ok &= ASSERT_TRUE(json_is_false(json_object_get(ev, "enforced")), label);
	}
	json_decref(events);
	return ok;
}

/* A run did what it was asked with no denial at all: exit 0, stdout `out` (NULL: any), no summary, no event. */
ESC_FN bool esc_clean(const struct ktest_result *r, const char *out, const char *what)
{
	json_t *events = ktest_events();
	char label[512];
	bool ok = true;

	snprintf(label, sizeof(label), "%s: exit", what);
	ok &= ASSERT_EQ(r->code, 0, label);
	if (out) {
		snprintf(label, sizeof(label), "%s: output", what);
		ok &= ASSERT_STREQ(r->out, out, label);
	}
	snprintf(label, sizeof(label), "%s: no denial summary (stderr: %.300s)", what, r->err);
	ok &= ASSERT_TRUE(strstr(r->err, "denial") == NULL, label);
	snprintf(label, sizeof(label), "%s: no denial events", what);
	if (!ASSERT_EQ(json_array_size(events), 0, label)) {
		dump_events(events);
		ok = false;
	}
	json_decref(events);
	return ok;
}

/* Control: the same steps by uid outside any run give `out`. */
ESC_FN bool esc_control(int uid, const char *const *steps, const char *out, const char *what)
{
	static struct ktest_result r;
	char label[512];

	esc_host(&r, uid, steps);
	snprintf(label, sizeof(label), "control (uid %d, no run): %s", uid, what);
	if (!ASSERT_STREQ(r.out, out, label)) {
		ktest_log("  control stderr: %.400s", r.err);
		return false;
	}
	return true;
}

/* ---- engine-only: a process moved into a live run's cgroup ---- */

ESC_FN bool esc_hold(struct esc_hold *h, const char *const *run_args, const char *ws)
{
	const char *steps[] = {"block", NULL};
	char line[600];

	memset(h, 0, sizeof(*h));
	h->p.in = h->p.out = h->p.err = -1;
	if (ktest_spawn(run_argv(run_args, ws, steps, true), -1, &h->p) < 0)
		return false;
	if (!ktest_read_line(h->p.out, line, sizeof(line), 120000) ||
	    sscanf(line, "ready %d %255s", &h->pid, h->tmp) != 2) {
		ktest_log("holder run: no ready line");
		return false;
	}
	return ktest_proc_cgroup(h->pid, h->cg, sizeof(h->cg));
}

ESC_FN void esc_release(struct esc_hold *h)
{
	ktest_close_stdin(&h->p);
	if (ktest_wait(&h->p, 60000) < 0) {
		kill(h->p.pid, SIGKILL);
		ktest_wait(&h->p, 10000);
	}
	ktest_proc_close(&h->p);
}

ESC_FN void append(struct ktest_result *r, const char *s)
{
	size_t n = strlen(r->out), m = strlen(s);

	if (n + m + 2 < sizeof(r->out)) {
		memcpy(r->out + n, s, m);
		r->out[n + m] = '\n';
		r->out[n + m + 1] = 0;
	}
}

/*
 * Run argv (as uid) whose eprobe steps contain "wait" steps: at each
 * "ready PID", call at_ready(PID, arg) (if given), then let it go. r->out
 * gets every line but the ready lines; r->err what was written there.
 */
ESC_FN int esc_paused(char *const argv[], int uid, struct ktest_result *r, void (*at_ready)(int pid, void *arg),
		      void *arg)
{
	struct ktest_proc p;
	char line[1024];
	int pid = 0;

	memset(r, 0, sizeof(*r));
	if (ktest_spawn(argv, uid, &p) < 0)
		return r->code = -1;
	while (ktest_read_line(p.out, line, sizeof(line), 120000)) {
		if (sscanf(line, "ready %d", &pid) != 1) {
			append(r, line);
			continue;
		}
		if (at_ready)
			at_ready(pid, arg);
		if (write(p.in, "go\n", 3) != 3)
			ktest_log("eprobe: could not let go");
	}
	ktest_close_stdin(&p);
	r->code = ktest_wait(&p, 60000);
	if (r->code < 0) {
		kill(p.pid, SIGKILL);
		r->code = ktest_wait(&p, 10000);
	}
	{
		size_t n = 0;
		ssize_t got;

		while (n + 1 < sizeof(r->err) && (got = read(p.err, r->err + n, sizeof(r->err) - 1 - n)) > 0)
			n += (size_t)got;
		r->err[n] = 0;
	}
	ktest_proc_close(&p);
	return r->code;
}

ESC_FN void move_into(int pid, void *arg)
{
	struct esc_hold *h = arg;
	char procs[600], num[32];
	int fd;

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", h->cg);
	snprintf(num, sizeof(num), "%d\n", pid);
	fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, num, strlen(num)) < 0)
		ktest_log("moving %d into %s: %s", pid, procs, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/*
 * Engine only: eprobe STEPS as uid, moved into the held run's cgroup at its
 * "wait" step (h NULL: left outside, the control).
 */
ESC_FN int esc_join(struct esc_hold *h, struct ktest_result *r, int uid, const char *const *steps)
{
	char *argv[96];
	int n = 0;

	argv[n++] = (char *)ktest_helper("eprobe");
	for (; *steps && n < 94; steps++)
		argv[n++] = (char *)*steps;
	argv[n] = NULL;
	return esc_paused(argv, uid, r, h ? move_into : NULL, h);
}

/* custode run … -- eprobe STEPS, where STEPS hold a "wait" step: at_ready runs while the run waits. */
ESC_FN int esc_run_paused(struct ktest_result *r, const char *const *run_args, const char *ws,
			  const char *const *steps, void (*at_ready)(int pid, void *arg), void *arg)
{
	return esc_paused(run_argv(run_args, ws, steps, true), -1, r, at_ready, arg);
}

/*
 * Give this test process (and the runs it starts) a private mount namespace,
 * so it can lay fake secrets over /etc/shadow, /root or /home without
 * touching the host's. Nothing propagates back.
 */
ESC_FN bool esc_private_mounts(void)
{
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		ktest_log("private mount namespace: %s", strerror(errno));
		return false;
	}
	return true;
}

/* A fresh tmpfs at dir (created 0755 if missing). */
ESC_FN bool esc_tmpfs(const char *dir)
{
	mkdir(dir, 0755);
	if (mount("none", dir, "tmpfs", 0, "mode=0755") < 0) {
		ktest_log("tmpfs on %s: %s", dir, strerror(errno));
		return false;
	}
	return true;
}

ESC_FN bool esc_bind(const char *src, const char *dst)
{
	if (mount(src, dst, NULL, MS_BIND, NULL) < 0) {
		ktest_log("bind %s on %s: %s", src, dst, strerror(errno));
		return false;
	}
	return true;
}

/*
 * The read profile's system rules plus extra rules (a JSON fragment starting
 * with a comma, or ""), as an unsigned policy file under dir: its path.
 */
ESC_FN const char *esc_policy(const char *dir, const char *name, const char *ws_allow, const char *extra)
{
	static char json[8192], path[4][512];
	static int next;
	char *out = path[next++ % 4];
	const char *p;

	snprintf(json, sizeof(json),
		 "{\"schema\":\"custode.policy/v1\",\"name\":\"test/%s\",\"version\":1,\"content\":{"
		 "\"filesystem\":["
		 "{\"path\":\"/usr\",\"allow\":[\"read\",\"exec\"]},{\"path\":\"/bin\",\"allow\":[\"read\",\"exec\"]},"
		 "{\"path\":\"/sbin\",\"allow\":[\"read\",\"exec\"]},{\"path\":\"/lib\",\"allow\":[\"read\",\"exec\"]},"
		 "{\"path\":\"/lib64\",\"allow\":[\"read\",\"exec\"]},{\"path\":\"/etc\",\"allow\":[\"read\"]},"
		 "{\"path\":\"/proc\",\"allow\":[\"read\"]},{\"path\":\"/dev/null\",\"allow\":[\"read\",\"write\"]},"
		 "{\"path\":\"${tmp}\",\"allow\":[\"read\",\"write\",\"create\",\"delete\"]},"
		 "{\"path\":\"${workspace}\",\"allow\":%s}%s]}}",
		 name, ws_allow, extra);
	p = ktest_policy_file(dir, name, json);
	snprintf(out, 512, "%s", p ? p : "");
	return out;
}

/* Copy a helper binary to path with mode 0755, owned by nobody. */
ESC_FN bool esc_copy_exec(const char *path)
{
	return esc_sh("cp %s %s && chmod 755 %s && chown %d:%d %s", ktest_helper("eprobe"), path, path, ESC_NOBODY,
		      ESC_NOBODY, path);
}

#endif
