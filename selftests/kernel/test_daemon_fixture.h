/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the daemon, attach, events and metrics kernel tests: a `custode
 * daemon --no-resolver` in the background (stdout: the stream, to a file;
 * stderr: its log), control-socket calls through the client library,
 * cgroups outside custode's subtree, and aprobe processes inside them.
 * Every process a test starts gets a parent-death signal, so a failing test
 * leaves no daemon behind for the next one.
 */
#ifndef TEST_DAEMON_FIXTURE_H
#define TEST_DAEMON_FIXTURE_H

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <jansson.h>

#include "cgroup/cgroup.h"
#include "daemon/control.h"
#include "ktest.h"
#include "test_bg.h"

#define NOBODY 65534

struct dfix {
	struct ktest_dirs d;
	const char *bin; /* the custode binary df_daemon_start runs; NULL: ktest_custode() */
	int pid;
	char out[320], err[320];
	char cgmount[PATH_MAX];
};

/* aprobe, where a `read` run may execute it (ktest.c installs the helpers it knows; this one installs itself). */
static inline const char *df_aprobe(void)
{
	static char path[PATH_MAX];
	char self[PATH_MAX], cmd[PATH_MAX * 2 + 32];
	ssize_t n;

	snprintf(path, sizeof(path), "%s", ktest_helper("aprobe"));
	if (access(path, X_OK) == 0 || !ktest_in_guest())
		return path;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return path;
	self[n] = 0;
	*strrchr(self, '/') = 0;
	snprintf(cmd, sizeof(cmd), "cp %s/aprobe %s", self, path);
	if (system(cmd) != 0)
		ktest_log("installing aprobe: %s failed", cmd);
	return path;
}

/* `custode daemon --no-resolver [extra...]`; waits for "ready" (retried while a last daemon still stops). */
static inline bool df_daemon_start(struct dfix *f, const char *const *extra)
{
	char *argv[40];
	int n = 0;

	argv[n++] = (char *)(f->bin ? f->bin : ktest_custode());
	argv[n++] = "daemon";
	argv[n++] = "--no-resolver";
	for (; extra && *extra && n < 38; extra++)
		argv[n++] = (char *)*extra;
	argv[n] = NULL;
	for (int attempt = 0; attempt < 20; attempt++) {
		if (truncate(f->err, 0) < 0 && errno != ENOENT)
			ktest_log("truncate %s: %s", f->err, strerror(errno));
		f->pid = kt_bg(argv, f->out, f->err);
		if (kt_wait_for(f->err, "custode daemon: ready", f->pid, 60000))
			return true;
		kt_stop(&f->pid, SIGKILL);
		if (!strstr(kt_slurp(f->err), "daemon.running"))
			break;
		usleep(500000);
	}
	ktest_log("custode daemon did not start: %s", kt_slurp(f->err));
	return false;
}

static inline bool df_setup(struct dfix *f)
{
	memset(f, 0, sizeof(*f));
	if (!ASSERT_TRUE(ktest_make_dirs(&f->d), "dirs"))
		return false;
	snprintf(f->out, sizeof(f->out), "%s/stream.jsonl", f->d.root);
	snprintf(f->err, sizeof(f->err), "%s/daemon.log", f->d.root);
	if (!ASSERT_EQ(custode_cgroup2_mount(f->cgmount, sizeof(f->cgmount)), 0, "cgroup2 mount"))
		return false;
	df_aprobe();
	return true;
}

/* ---- signed policies ---- */

/* `custode bundle keygen` into ROOT/KEY (and ROOT/KEY.pub). */
static inline bool df_keygen(struct dfix *f, const char *key)
{
	char cmd[800];

	snprintf(cmd, sizeof(cmd), "%s bundle keygen --out %s/%s >/dev/null 2>&1", ktest_custode(), f->d.root, key);
	return system(cmd) == 0;
}

/* A read-only policy document (system dirs + the workspace) plus `extra` content members (static buffer). */
static inline const char *df_read_policy(const char *name, int version, const char *extra)
{
	static char doc[2048];

	snprintf(doc, sizeof(doc),
		 "{\"schema\":\"custode.policy/v1\",\"name\":\"%s\",\"version\":%d,\"content\":{\"filesystem\":["
		 "{\"path\":\"/usr\",\"allow\":[\"read\",\"exec\"]},{\"path\":\"/bin\",\"allow\":[\"read\",\"exec\"]},"
		 "{\"path\":\"/lib\",\"allow\":[\"read\",\"exec\"]},{\"path\":\"/lib64\",\"allow\":[\"read\",\"exec\"]},"
		 "{\"path\":\"/etc\",\"allow\":[\"read\"]},{\"path\":\"${workspace}\",\"allow\":[\"read\"]}]%s}}",
		 name, version, extra ? extra : "");
	return doc;
}

/* Policy document doc, written under ROOT and signed with ROOT/KEY (valid for an hour), into out. */
static inline bool df_sign(struct dfix *f, const char *key, const char *doc, const char *out)
{
	static int n;
	char policy[400], cmd[1400];

	snprintf(policy, sizeof(policy), "%s/policy-%d.json", f->d.root, ++n);
	if (!ktest_write_file(policy, doc, 0644))
		return false;
	snprintf(cmd, sizeof(cmd), "%s bundle sign --key %s/%s --valid-for 1h %s > %s 2>/dev/null", ktest_custode(),
		 f->d.root, key, policy, out);
	return system(cmd) == 0;
}

/* One control request (a JSON object built by the caller, consumed); the answer, or NULL (logged). */
static inline json_t *df_call(json_t *req)
{
	struct custode_refusal why = {0};
	json_t *resp = NULL;

	if (custode_control_call(req, &resp, ktest_slack(60000), &why) < 0) {
		ktest_log("control %s: %s: %s", json_string_value(json_object_get(req, "cmd")),
			  custode_reason_name(why.reason), why.detail);
		resp = NULL;
	}
	json_decref(req);
	return resp;
}

/* Like df_call, for a request expected to be refused: the reason's name (static), or "" if it succeeded. */
static inline const char *df_refusal(json_t *req)
{
	static char reason[64];
	struct custode_refusal why = {0};
	json_t *resp = NULL;

	reason[0] = 0;
	if (custode_control_call(req, &resp, ktest_slack(60000), &why) < 0)
		snprintf(reason, sizeof(reason), "%s", custode_reason_name(why.reason) ? custode_reason_name(why.reason) : "?");
	else
		json_decref(resp);
	json_decref(req);
	return reason;
}

/* A run in `custode runs` (through the daemon) by id; NULL if absent. Returns a new reference. */
static inline json_t *df_run(const char *run_id)
{
	json_t *resp = df_call(json_pack("{s:s}", "cmd", "runs")), *r, *found = NULL;
	size_t i;

	json_array_foreach(json_object_get(resp, "runs"), i, r)
		if (!strcmp(json_string_value(json_object_get(r, "run_id")), run_id))
			found = json_incref(r);
	json_decref(resp);
	return found;
}

static inline long long df_denials(const json_t *run, const char *reason)
{
	const json_t *d = json_object_get(run, "denials");

	return reason ? json_integer_value(json_object_get(json_object_get(d, "by_reason"), reason))
		      : json_integer_value(json_object_get(d, "total"));
}

/* ---- cgroups and the processes in them ---- */

static inline bool df_cg_make(const char *path)
{
	return mkdir(path, 0755) == 0 || errno == EEXIST;
}

/* Kill everything in a cgroup tree and remove it (deepest first). */
static inline void df_cg_remove(const char *path)
{
	custode_cgroup_kill(path);
	custode_cgroup_wait_empty(path, 5000);
	custode_cgroup_remove(path);
}

/* Move pid into cgroup cg from the host (the test is root, outside every run). */
static inline bool df_cg_move(const char *cg, int pid)
{
	char procs[PATH_MAX + 16], s[32];

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
	snprintf(s, sizeof(s), "%d", pid);
	return ktest_write_file(procs, s, 0644);
}

/* Start argv inside cgroup cg as uid (pipes like ktest_spawn); it gets SIGKILL if the test dies. */
static inline int df_spawn_in(const char *cg, int uid, char *const argv[], struct ktest_proc *p)
{
	int in[2], out[2];

	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		return -errno;
	p->pid = fork();
	if (p->pid < 0)
		return -errno;
	if (p->pid == 0) {
		char procs[PATH_MAX + 16], pid[32];
		int fd;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		fd = open(procs, O_WRONLY);
		if (fd < 0 || write(fd, pid, strlen(pid)) < 0)
			_exit(97);
		close(fd);
		dup2(in[0], 0);
		dup2(out[1], 1);
		if (uid >= 0) {
			gid_t g = (gid_t)uid;
			if (setgroups(1, &g) || setgid(g) || setuid((uid_t)uid))
				_exit(99);
		}
		execv(argv[0], argv);
		_exit(98);
	}
	close(in[0]);
	close(out[1]);
	p->in = in[1];
	p->out = out[0];
	p->err = -1;
	return 0;
}

/* aprobe repl in cg as nobody, ready. */
static inline bool df_probe(const char *cg, struct ktest_proc *p)
{
	char *argv[] = {(char *)df_aprobe(), "repl", NULL};
	char line[128];

	return df_spawn_in(cg, NOBODY, argv, p) == 0 && ktest_read_line(p->out, line, sizeof(line), 20000) &&
	       !strncmp(line, "ready ", 6);
}

/* One command to a probe, its answer line (static buffer; "" on failure). */
static inline const char *df_ask(struct ktest_proc *p, const char *fmt, ...)
{
	static char line[512];
	char cmd[4200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd) - 1, fmt, ap);
	va_end(ap);
	strcat(cmd, "\n");
	line[0] = 0;
	if (write(p->in, cmd, strlen(cmd)) != (ssize_t)strlen(cmd) || !ktest_read_line(p->out, line, sizeof(line), 60000))
		line[0] = 0;
	return line;
}

static inline void df_probe_end(struct ktest_proc *p)
{
	if (p->pid > 0) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, NULL, 0);
	}
	ktest_proc_close(p);
	p->pid = 0;
}

/* The stream as the daemon keeps it (`custode events --json` through the control socket), one array. */
static inline json_t *df_events(const char *run_id)
{
	struct custode_refusal why = {0};
	struct custode_control_client c;
	json_t *arr = json_array(), *req, *o;
	int err;

	if (custode_control_connect(&c, &why) < 0) {
		ktest_log("events: %s", why.detail);
		return arr;
	}
	req = run_id ? json_pack("{s:s, s:{s:s}}", "cmd", "events", "filter", "run", run_id)
		     : json_pack("{s:s}", "cmd", "events");
	custode_control_send(&c, req);
	json_decref(req);
	while ((o = custode_control_recv(&c, 60000, &err))) {
		json_t *ev = json_object_get(o, "event");

		if (ev)
			json_array_append(arr, ev);
		if (json_object_get(o, "ok")) {
			json_decref(o);
			break;
		}
		json_decref(o);
	}
	custode_control_close(&c);
	return arr;
}

/*
 * df_events(run_id) again and again until seen(events, arg) says what the
 * test waits for is there (the daemon publishes from its loop, some records
 * only once a window is over), or a hang detector's timeout passes
 * (ktest_slack). Returns the last array, for the test's assertions.
 */
static inline json_t *df_events_until(const char *run_id, bool (*seen)(json_t *evs, void *arg), void *arg,
				      int timeout_ms)
{
	long end = kt_ms() + ktest_slack(timeout_ms);
	json_t *evs;

	for (;;) {
		evs = df_events(run_id);
		if (seen(evs, arg) || kt_ms() >= end)
			return evs;
		json_decref(evs);
		usleep(200000);
	}
}

#endif
