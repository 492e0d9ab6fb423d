// SPDX-License-Identifier: Apache-2.0
/*
 * A process of an attached run must not leave it through cgroup v2. Attached
 * runs may run as root, without custode's seccomp filter or no_new_privs, so
 * the probes here are root:
 *  - clone3(CLONE_INTO_CGROUP) with an O_PATH fd of a cgroup outside the run
 *    (file_open never sees a write): denied in task_alloc for every run
 *    (process.cgroup_move.denied, EPERM);
 *  - writing a pid into the cgroup.procs / cgroup.threads (or any other file:
 *    cgroup.freeze, limits) of a cgroup outside the run: denied in file_open
 *    whatever the policy grants
 *    (file.cgroup_escape.denied, EACCES) — also when the policy grants
 *    writes to the whole cgroup2 mount, and after a cached allow for the file;
 *  - moving into a child cgroup the run makes itself still works, and the
 *    process stays confined there.
 * Controls: each attack works before attach (and after detach).
 */
#include "test_daemon_fixture.h"

/* aprobe repl in cg as root (uid 0, every capability, no seccomp), ready. */
static bool probe_root(const char *cg, struct ktest_proc *p)
{
	char *argv[] = {(char *)df_aprobe(), "repl", NULL};
	char line[128];

	return df_spawn_in(cg, -1, argv, p) == 0 && ktest_read_line(p->out, line, sizeof(line), 20000) &&
	       !strncmp(line, "ready ", 6);
}

static bool in_cgroup(int pid, const char *cg)
{
	char c[PATH_MAX];

	if (!ktest_proc_cgroup(pid, c, sizeof(c)))
		return false;
	if (strcmp(c, cg))
		ktest_log("pid %d is in %s, expected %s", pid, c, cg);
	return !strcmp(c, cg);
}

static const char *run_id_of(json_t *resp)
{
	return json_string_value(json_object_get(json_object_get(resp, "run"), "run_id"));
}

static void detach(char *rid)
{
	if (rid[0])
		json_decref(df_call(json_pack("{s:s, s:s}", "cmd", "detach", "run_id", rid)));
	rid[0] = 0;
}

/* The clone answer for a child born in cg: "ok " + cg's path below the cgroup2 mount. */
static const char *born_in(const struct dfix *f, const char *cg)
{
	static char s[PATH_MAX + 8];

	snprintf(s, sizeof(s), "ok %s", cg + strlen(f->cgmount));
	return s;
}

/* The clone3 denial: task_alloc, process.cgroup_move.denied, by tgid, CLONE_INTO_CGROUP in its clone flags. */
static bool is_clone_denial(const json_t *e, int tgid)
{
	const char *h = json_string_value(json_object_get(e, "hook"));
	const char *r = json_string_value(json_object_get(e, "reason"));

	return h && r && !strcmp(h, "task_alloc") && !strcmp(r, "process.cgroup_move.denied") &&
	       json_integer_value(json_object_get(e, "tgid")) == tgid &&
	       ((unsigned long long)json_integer_value(json_object_get(json_object_get(e, "task"), "clone_flags")) &
		0x200000000ULL);
}

/* Both records attach_escape_root_profile_grants_cgroupfs looks for are in the stream. */
struct escape_seen {
	const char *procs;
	int tgid;
};

static bool escape_seen(json_t *evs, void *arg)
{
	const struct escape_seen *w = arg;
	bool clone = false;
	size_t i;
	json_t *e;

	json_array_foreach(evs, i, e)
		clone = clone || is_clone_denial(e, w->tgid);
	return clone && ktest_find_event(evs, "file_open", "file.cgroup_escape.denied", w->procs) != NULL;
}

/*
 * A built-in profile that would let the write through: workspace-write with
 * the cgroup2 mount as its workspace grants write (and create) on every
 * cgroup file. The migration files of cgroups outside the run stay closed.
 */
KTEST(attach_escape_root_profile_grants_cgroupfs)
{
	struct dfix f;
	struct ktest_proc a = {0};
	char top[PATH_MAX], cg[PATH_MAX + 8], sib[PATH_MAX + 8], rid[17] = "";
	json_t *resp, *run, *evs, *e;
	size_t i;

	ktest_need_lsm();
	if (!df_setup(&f) || !ASSERT_TRUE(df_daemon_start(&f, NULL), "daemon"))
		return;
	snprintf(top, sizeof(top), "%s/ktest-escape-%d", f.cgmount, (int)getpid());
	snprintf(cg, sizeof(cg), "%s/run", top);
	snprintf(sib, sizeof(sib), "%s/sib", top);
	if (!ASSERT_TRUE(df_cg_make(top) && df_cg_make(cg) && df_cg_make(sib), "cgroups") ||
	    !ASSERT_TRUE(probe_root(cg, &a), "root probe in the cgroup"))
		goto out;

	/* controls: without custode a root process leaves its cgroup both ways */
	ASSERT_STREQ(df_ask(&a, "clone_into %s", sib), born_in(&f, sib), "before attach: a child born in the sibling");
	ASSERT_STREQ(df_ask(&a, "write %s/cgroup.procs %d", sib, a.pid), "ok", "before attach: cgroup.procs write");
	ASSERT_TRUE(in_cgroup(a.pid, sib), "before attach: the probe moved itself out");
	if (!ASSERT_TRUE(df_cg_move(cg, a.pid) && in_cgroup(a.pid, cg), "back into the cgroup"))
		goto out;

	resp = df_call(json_pack("{s:s, s:s, s:s, s:s}", "cmd", "attach", "cgroup", cg, "profile", "workspace-write",
				 "workspace", f.cgmount));
	if (!ASSERT_TRUE(resp != NULL, "attach"))
		goto out;
	snprintf(rid, sizeof(rid), "%s", run_id_of(resp));
	json_decref(resp);

	/* clone3(CLONE_INTO_CGROUP): denied, outside and (the target is unknown at task_alloc) inside */
	ASSERT_STREQ(df_ask(&a, "clone_into %s", sib), "EPERM", "clone into the sibling");
	ASSERT_STREQ(df_ask(&a, "clone_into %s", cg), "EPERM", "clone into its own cgroup: every CLONE_INTO_CGROUP");
	/* migration files outside the run: denied although the policy grants writes there */
	ASSERT_STREQ(df_ask(&a, "write %s/cgroup.procs %d", sib, a.pid), "EACCES", "sibling's cgroup.procs");
	ASSERT_STREQ(df_ask(&a, "write %s/cgroup.threads %d", sib, a.pid), "EACCES", "sibling's cgroup.threads");
	ASSERT_STREQ(df_ask(&a, "write %s/cgroup.procs %d", f.cgmount, a.pid), "EACCES", "the root cgroup's cgroup.procs");
	ASSERT_STREQ(df_ask(&a, "write %s/cgroup.procs %d", top, a.pid), "EACCES", "the parent's cgroup.procs");
	/* nor any other file of a cgroup outside: cgroup.kill, cgroup.freeze, limits */
	ASSERT_STREQ(df_ask(&a, "write %s/cgroup.max.descendants max", sib), "EACCES", "a sibling's limit file");
	ASSERT_STREQ(df_ask(&a, "write %s/cgroup.freeze 0", sib), "EACCES", "a sibling's cgroup.freeze");
	/* the policy does grant cgroupfs writes: its own cgroup's files */
	ASSERT_STREQ(df_ask(&a, "write %s/cgroup.max.descendants max", cg), "ok", "the policy grants its own cgroup files");
	ASSERT_STREQ(df_ask(&a, "write %s/cgroup.procs %d", cg, a.pid), "ok", "its own cgroup.procs");
	ASSERT_TRUE(in_cgroup(a.pid, cg), "still in its run");

	run = df_run(rid);
	if (ASSERT_TRUE(run != NULL, "listed")) {
		ASSERT_EQ(df_denials(run, "process.cgroup_move.denied"), 2, "clone3 denials counted");
		ASSERT_EQ(df_denials(run, "file.cgroup_escape.denied"), 6, "cgroupfs write denials counted (procs, threads, limit, freeze)");
		ASSERT_EQ(df_denials(run, NULL), 8, "nothing else denied");
	}
	json_decref(run);

	{
		char procs[PATH_MAX + 16];
		bool clone_seen = false;

		snprintf(procs, sizeof(procs), "%s/cgroup.procs", sib);
		{
			struct escape_seen w = {procs, a.pid};

			evs = df_events_until(rid, escape_seen, &w, 30000);
		}
		e = ktest_find_event(evs, "file_open", "file.cgroup_escape.denied", procs);
		if (ASSERT_TRUE(e != NULL, "the cgroup.procs denial is in the stream")) {
			ASSERT_EQ(json_integer_value(json_object_get(e, "tgid")), a.pid, "by the probe");
			ASSERT_TRUE(json_is_true(json_object_get(e, "enforced")), "enforced");
		}
		json_array_foreach(evs, i, e)
			if (is_clone_denial(e, a.pid))
				clone_seen = true;
		ASSERT_TRUE(clone_seen, "the clone3 denial is in the stream, with CLONE_INTO_CGROUP in its clone flags");
	}
	json_decref(evs);

	/* detach: the attack works again (the denials were custode's) */
	detach(rid);
	ASSERT_STREQ(df_ask(&a, "clone_into %s", sib), born_in(&f, sib), "after detach: clone into the sibling");
out:
	detach(rid);
	df_probe_end(&a);
	df_cg_remove(top);
	kt_stop(&f.pid, SIGTERM);
}

/* A signed policy granting read, write, create and delete on the whole cgroup2 mount. */
static bool sign_cgroupfs_policy(struct dfix *f, const char *name, const char *out)
{
	char doc[2048];

	if (!df_keygen(f, "key"))
		return false;
	snprintf(doc, sizeof(doc),
		 "{\"schema\":\"custode.policy/v1\",\"name\":\"%s\",\"version\":1,\"content\":{\"filesystem\":["
		 "{\"path\":\"/usr\",\"allow\":[\"read\",\"exec\"]},{\"path\":\"/bin\",\"allow\":[\"read\",\"exec\"]},"
		 "{\"path\":\"/lib\",\"allow\":[\"read\",\"exec\"]},{\"path\":\"/lib64\",\"allow\":[\"read\",\"exec\"]},"
		 "{\"path\":\"/etc\",\"allow\":[\"read\"]},{\"path\":\"/proc\",\"allow\":[\"read\"]},"
		 "{\"path\":\"%s\",\"allow\":[\"read\",\"write\",\"create\",\"delete\"]},"
		 "{\"path\":\"${workspace}\",\"allow\":[\"read\"]}],\"process\":{}}}",
		 name, f->cgmount);
	return df_sign(f, "key", doc, out);
}

/*
 * A policy document granting writes to the cgroup2 mount (a signed bundle):
 * a cached allow for an outside cgroup.procs doesn't open it for writing;
 * a child cgroup the run makes itself takes the run's processes, which stay
 * confined there.
 */
KTEST(attach_escape_policy_child_cgroup)
{
	struct dfix f;
	struct ktest_proc a = {0};
	char top[PATH_MAX], cg[PATH_MAX + 8], sib[PATH_MAX + 8], child[PATH_MAX + 16], rid[17] = "";
	char bundle[400], pub[400], dir[400], name[64];
	const char *extra[] = {"--bundles", dir, "--trust", pub, "--bundle-state", f.d.root, NULL};
	json_t *resp, *run;

	ktest_need_lsm();
	top[0] = 0;
	if (!df_setup(&f))
		return;
	snprintf(bundle, sizeof(bundle), "%s/policy.dsse.json", f.d.root);
	snprintf(dir, sizeof(dir), "%s/bundles", f.d.root);
	snprintf(pub, sizeof(pub), "%s/key.pub", f.d.root);
	snprintf(name, sizeof(name), "test/cgroupfs-%d", (int)getpid());
	if (!ASSERT_EQ(mkdir(dir, 0755), 0, "bundles dir") ||
	    !ASSERT_TRUE(sign_cgroupfs_policy(&f, name, bundle), "a signed policy granting the cgroup2 mount") ||
	    !ASSERT_TRUE(df_daemon_start(&f, extra), "daemon trusting the key"))
		return;
	snprintf(top, sizeof(top), "%s/ktest-escape-pol-%d", f.cgmount, (int)getpid());
	snprintf(cg, sizeof(cg), "%s/run", top);
	snprintf(sib, sizeof(sib), "%s/sib", top);
	snprintf(child, sizeof(child), "%s/child", cg);
	if (!ASSERT_TRUE(df_cg_make(top) && df_cg_make(cg) && df_cg_make(sib), "cgroups") ||
	    !ASSERT_TRUE(probe_root(cg, &a), "root probe in the cgroup"))
		goto out;

	/* control */
	ASSERT_STREQ(df_ask(&a, "write %s/cgroup.procs %d", sib, a.pid), "ok", "before attach: cgroup.procs write");
	ASSERT_TRUE(in_cgroup(a.pid, sib), "before attach: the probe moved itself out");
	if (!ASSERT_TRUE(df_cg_move(cg, a.pid) && in_cgroup(a.pid, cg), "back into the cgroup"))
		goto out;
	ASSERT_STREQ(df_ask(&a, "clone_into %s", sib), born_in(&f, sib), "before attach: clone into the sibling");

	resp = df_call(json_pack("{s:s, s:s, s:s, s:s}", "cmd", "attach", "cgroup", cg, "bundle", bundle, "workspace",
				 f.d.ws));
	if (!ASSERT_TRUE(resp != NULL, "attach --bundle"))
		goto out;
	snprintf(rid, sizeof(rid), "%s", run_id_of(resp));
	json_decref(resp);

	/* a read open caches the policy's allow (read, write, ...) on the inode; the write is still decided */
	ASSERT_STREQ(df_ask(&a, "open %s/cgroup.procs", sib), "ok", "read the sibling's cgroup.procs (cached allow)");
	ASSERT_STREQ(df_ask(&a, "open %s/cgroup.procs", sib), "ok", "again, from the cache");
	ASSERT_STREQ(df_ask(&a, "write %s/cgroup.procs %d", sib, a.pid), "EACCES", "the write is denied all the same");
	ASSERT_STREQ(df_ask(&a, "clone_into %s", sib), "EPERM", "clone into the sibling");
	ASSERT_TRUE(in_cgroup(a.pid, cg), "still in its run");

	/* a child cgroup the run makes: the probe moves in, and is confined there */
	ASSERT_STREQ(df_ask(&a, "mkdir %s", child), "ok", "the run makes a child cgroup");
	ASSERT_STREQ(df_ask(&a, "write %s/cgroup.procs %d", child, a.pid), "ok", "and moves into it");
	ASSERT_TRUE(in_cgroup(a.pid, child), "in the child cgroup");
	ASSERT_STREQ(df_ask(&a, "open %s", f.d.outside), "EACCES", "confined there: a file the policy doesn't grant");
	ASSERT_STREQ(df_ask(&a, "open %s", f.d.ws_file), "ok", "what it grants");
	ASSERT_STREQ(df_ask(&a, "write %s/cgroup.procs %d", sib, a.pid), "EACCES", "from the child: the sibling");
	ASSERT_STREQ(df_ask(&a, "write %s/cgroup.procs %d", top, a.pid), "EACCES", "from the child: the parent");
	ASSERT_STREQ(df_ask(&a, "write %s/cgroup.procs %d", cg, a.pid), "ok", "back to the run's cgroup");
	ASSERT_TRUE(in_cgroup(a.pid, cg), "in the run's cgroup");

	run = df_run(rid);
	if (ASSERT_TRUE(run != NULL, "listed")) {
		ASSERT_EQ(df_denials(run, "file.cgroup_escape.denied"), 3, "cgroup.procs denials counted");
		ASSERT_EQ(df_denials(run, "process.cgroup_move.denied"), 1, "the clone3 denial counted");
		ASSERT_EQ(df_denials(run, "file.read.denied"), 1, "the policy's own denial");
		ASSERT_EQ(df_denials(run, NULL), 5, "nothing else denied");
	}
	json_decref(run);
out:
	detach(rid);
	df_probe_end(&a);
	if (top[0])
		df_cg_remove(top);
	kt_stop(&f.pid, SIGTERM);
}
