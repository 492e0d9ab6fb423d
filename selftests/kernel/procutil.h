/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the process, seccomp, limits, lifecycle and concurrency
 * kernel tests (static, header-only: the kernel tests are one binary of
 * independent files). The probe is pprobe (helpers/pprobe.c).
 */
#ifndef CUSTODE_KTEST_PROCUTIL_H
#define CUSTODE_KTEST_PROCUTIL_H

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>

#include "cgroup/cgroup.h"
#include "ktest.h"

#define NOBODY 65534
#define POLICY(name, content) \
	"{\"schema\":\"custode.policy/v1\",\"name\":\"test/" name "\",\"version\":1,\"content\":" content "}"
#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* argv of: custode run <run_args...> -- <cmd...> (static storage: one at a time) */
static __attribute__((unused)) char **pu_argv(const char *const *run_args, const char *const *cmd)
{
	static char *argv[96];
	int n = 0;

	argv[n++] = (char *)ktest_custode();
	argv[n++] = "run";
	for (; run_args && *run_args && n < 60; run_args++)
		argv[n++] = (char *)*run_args;
	argv[n++] = "--";
	for (; cmd && *cmd && n < 94; cmd++)
		argv[n++] = (char *)*cmd;
	argv[n] = NULL;
	return argv;
}

/* custode run <run_args> -- pprobe <probe_args> */
static __attribute__((unused)) int pu_run_probe(struct ktest_result *r, const char *const *run_args,
						 const char *const *probe_args)
{
	const char *cmd[48];
	int n = 0;

	cmd[n++] = ktest_helper("pprobe");
	for (; *probe_args && n < 46; probe_args++)
		cmd[n++] = *probe_args;
	cmd[n] = NULL;
	return ktest_run(pu_argv(run_args, cmd), -1, 120000, r);
}

/* pprobe <probe_args> outside any run, as uid (-1: root) */
static __attribute__((unused)) int pu_probe(struct ktest_result *r, int uid, const char *const *probe_args)
{
	char *argv[48];
	int n = 0;

	argv[n++] = (char *)ktest_helper("pprobe");
	for (; *probe_args && n < 46; probe_args++)
		argv[n++] = (char *)*probe_args;
	argv[n] = NULL;
	return ktest_run(argv, uid, 60000, r);
}

/* A long-lived "pprobe target" (argv) whose first line is "ready PID ADDR". */
static __attribute__((unused)) bool pu_target(char *const argv[], int uid, struct ktest_proc *p, int *pid,
					      unsigned long *addr)
{
	char line[128];

	*pid = 0;
	if (ktest_spawn(argv, uid, p) < 0)
		return false;
	if (!ktest_read_line(p->out, line, sizeof(line), 120000)) {
		ktest_log("target: no ready line");
		return false;
	}
	return sscanf(line, "ready %d %lx", pid, addr) == 2 && *pid > 0;
}

/* pprobe target on the host as uid */
static __attribute__((unused)) bool pu_host_target(int uid, struct ktest_proc *p, int *pid, unsigned long *addr)
{
	char *argv[] = {(char *)ktest_helper("pprobe"), "target", NULL};
	return pu_target(argv, uid, p, pid, addr);
}

/* pprobe target inside a run of policy (custode run --policy policy -- pprobe target) */
static __attribute__((unused)) bool pu_run_target(const char *policy, struct ktest_proc *p, int *pid,
						  unsigned long *addr)
{
	return pu_target(pu_argv(ARGS("--policy", policy), ARGS(ktest_helper("pprobe"), "target")), -1, p, pid, addr);
}

/* End a target: close its stdin and wait; returns its (or its launcher's) exit code. */
static __attribute__((unused)) int pu_stop(struct ktest_proc *p)
{
	int code;

	ktest_close_stdin(p);
	code = ktest_wait(p, 60000);
	if (code < 0) {
		kill(p->pid, SIGKILL);
		code = ktest_wait(p, 10000);
	}
	ktest_proc_close(p);
	return code;
}

/* Write a policy file into dir; returns a static copy of its path (one of four slots). */
static __attribute__((unused)) const char *pu_policy(const char *dir, const char *name, const char *json)
{
	static char paths[4][512];
	static int next;
	char *out = paths[next++ % 4];
	const char *p = ktest_policy_file(dir, name, json);

	snprintf(out, 512, "%s", p ? p : "");
	return out;
}

static __attribute__((unused)) json_t *pu_load_json(const char *path)
{
	json_error_t e;
	json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, &e);

	if (!o)
		ktest_log("%s: %s", path, e.text);
	return o;
}

/* denials.by_reason[reason] of a receipt (0 when absent) */
static __attribute__((unused)) long long pu_denials(json_t *receipt, const char *reason)
{
	return json_integer_value(json_object_get(json_object_get(json_object_get(receipt, "denials"), "by_reason"), reason));
}

/* The entry of class cls in receipt[list] ("enforced" / "not_enforced"), optionally with "limit": lim. */
static __attribute__((unused)) json_t *pu_class(json_t *receipt, const char *list, const char *cls, const char *lim)
{
	size_t i;
	json_t *e;

	json_array_foreach(json_object_get(receipt, list), i, e) {
		const char *c = json_string_value(json_object_get(e, "class"));
		const char *l = json_string_value(json_object_get(e, "limit"));

		if (c && !strcmp(c, cls) && (!lim || (l && !strcmp(l, lim))))
			return e;
	}
	return NULL;
}

/* First event of hook and reason whose task.target_tgid is tgid (0: any); borrowed from arr. */
static __attribute__((unused)) json_t *pu_task_event(json_t *arr, const char *hook, const char *reason, int tgid)
{
	size_t i;
	json_t *e;

	json_array_foreach(arr, i, e) {
		const char *h = json_string_value(json_object_get(e, "hook"));
		const char *r = json_string_value(json_object_get(e, "reason"));
		json_t *t = json_object_get(e, "task");

		if (!h || !r || strcmp(h, hook) || strcmp(r, reason))
			continue;
		if (tgid && (!t || json_integer_value(json_object_get(t, "target_tgid")) != tgid))
			continue;
		return e;
	}
	return NULL;
}

/* Number of run-* cgroups below custode's root. */
static __attribute__((unused)) int pu_run_cgroups(void)
{
	char mount[512], root[600];
	DIR *d;
	struct dirent *de;
	int n = 0;

	if (custode_cgroup2_mount(mount, sizeof(mount)) < 0)
		return -1;
	snprintf(root, sizeof(root), "%s/custode", mount);
	d = opendir(root);
	if (!d)
		return 0;
	while ((de = readdir(d)))
		n += strncmp(de->d_name, "run-", 4) == 0;
	closedir(d);
	return n;
}

/* Entries of a directory whose names start with prefix. */
static __attribute__((unused)) int pu_count_dir(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.' && strncmp(de->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return n;
}

/* `custode engine status --json` (NULL if no engine) */
static __attribute__((unused)) json_t *pu_engine_status(void)
{
	static struct ktest_result r;
	char *argv[] = {(char *)ktest_custode(), "engine", "status", "--json", NULL};

	ktest_run(argv, -1, 30000, &r);
	return json_loads(r.out, 0, NULL);
}

/* Skip unless the cgroup2 root offers controller (natively on a hybrid host it offers none). */
static __attribute__((unused)) void pu_need_controller(const char *controller)
{
	char mount[512], path[600], *text = NULL, why[256];
	bool ok = false;

	if (custode_cgroup2_mount(mount, sizeof(mount)) == 0) {
		FILE *f;
		char buf[512] = "";

		snprintf(path, sizeof(path), "%s/cgroup.controllers", mount);
		f = fopen(path, "r");
		if (f) {
			if (fgets(buf, sizeof(buf), f))
				text = buf;
			fclose(f);
		}
		for (char *save = NULL, *t = text ? strtok_r(text, " \n", &save) : NULL; t; t = strtok_r(NULL, " \n", &save))
			ok |= !strcmp(t, controller);
	}
	if (!ok) {
		snprintf(why, sizeof(why), "the cgroup2 hierarchy here has no %s controller", controller);
		ktest_skip(why);
	}
}

/* Move pid into the cgroup of another process (a root process placed inside a run, below seccomp's reach). */
static __attribute__((unused)) bool pu_move_into_cgroup_of(int pid, int of_pid)
{
	char cg[512];

	if (!ktest_proc_cgroup(of_pid, cg, sizeof(cg)))
		return false;
	return custode_cgroup_move(cg, pid) == 0;
}

/*
 * `helper wait OP...` started as root outside any run, moved into run_pid's
 * cgroup once it says "ready PID", then told to go: its outcome line ("" if
 * it never got there). The helper (pprobe, tprobe, capprobe) then stands in
 * the run below seccomp's reach, with every capability: only the LSM is left.
 */
static __attribute__((unused)) const char *pu_moved_in(const char *helper, int run_pid, const char *const *op)
{
	static char line[128];
	char *argv[16];
	struct ktest_proc p;
	int n = 0, pid = 0;

	line[0] = 0;
	argv[n++] = (char *)helper;
	argv[n++] = "wait";
	for (; *op && n < 15; op++)
		argv[n++] = (char *)*op;
	argv[n] = NULL;
	if (ktest_spawn(argv, -1, &p) < 0)
		return line;
	if (ktest_read_line(p.out, line, sizeof(line), 30000) && sscanf(line, "ready %d", &pid) == 1 &&
	    ASSERT_TRUE(pu_move_into_cgroup_of(pid, run_pid), "move into the run") &&
	    ASSERT_TRUE(write(p.in, "go\n", 3) == 3, "go"))
		ktest_read_line(p.out, line, sizeof(line), 30000);
	else
		line[0] = 0;
	ktest_close_stdin(&p);
	ktest_wait(&p, 30000);
	ktest_proc_close(&p);
	return line;
}

#endif
