// SPDX-License-Identifier: Apache-2.0
/*
 * custode attach and the version floor (docs/bundles.md): a bundle is only
 * compared with the floor while the attach can still be refused; the floor
 * is raised once the cgroup is attached. A refused attach leaves it where it
 * was, so a lower version still attaches; a successful one raises it, so a
 * lower version is then refused (the control: the floor is really there).
 */
#include "test_daemon_fixture.h"

/* The version in STATE's floor file for policy NAME; -1 if there is none, -2 if it can't be read. */
static long long floor_version(const char *state, const char *name)
{
	char path[PATH_MAX], fname[160];
	json_t *doc;
	long long v;

	snprintf(fname, sizeof(fname), "%s", name);
	for (char *c = fname; *c; c++)
		if (*c == '/')
			*c = '%';
	snprintf(path, sizeof(path), "%s/%s.json", state, fname);
	if (access(path, F_OK) < 0)
		return -1;
	doc = json_load_file(path, 0, NULL);
	v = json_is_integer(json_object_get(doc, "version")) ? json_integer_value(json_object_get(doc, "version")) : -2;
	json_decref(doc);
	return v;
}

static json_t *attach_bundle(const char *cg, const char *bundle, const char *ws)
{
	return json_pack("{s:s, s:s, s:s, s:s}", "cmd", "attach", "cgroup", cg, "bundle", bundle, "workspace", ws);
}

static bool detach_resp(json_t *resp)
{
	const char *rid = json_string_value(json_object_get(json_object_get(resp, "run"), "run_id"));
	json_t *r;

	if (!rid)
		return false;
	r = df_call(json_pack("{s:s, s:s}", "cmd", "detach", "run_id", rid));
	json_decref(r);
	return r != NULL;
}

/* content members that make attach refuse a policy (policy.unsupported) after reading it */
#define REQUIRED_LIMIT ",\"limits\":{\"pids\":64,\"required\":[\"pids\"]}"

KTEST(attach_floor_refused_attach_keeps_floor)
{
	struct dfix f;
	char cg[PATH_MAX], dir[400], pub[400], state[400], name[64];
	char b1[400], b2[400], b3[400];
	const char *extra[] = {"--bundles", dir, "--trust", pub, "--bundle-state", state, NULL};
	json_t *resp;

	ktest_need_lsm();
	cg[0] = 0;
	if (!df_setup(&f))
		return;
	snprintf(dir, sizeof(dir), "%s/bundles", f.d.root);
	snprintf(pub, sizeof(pub), "%s/key.pub", f.d.root);
	snprintf(state, sizeof(state), "%s/floors", f.d.root);
	snprintf(b1, sizeof(b1), "%s/v1.dsse.json", f.d.root);
	snprintf(b2, sizeof(b2), "%s/v2-required-limits.dsse.json", f.d.root);
	snprintf(b3, sizeof(b3), "%s/v3.dsse.json", f.d.root);
	/* a fresh name: the bundles live outside the watched directory, so only attach accepts them */
	snprintf(name, sizeof(name), "test/attach-floor-%d", (int)getpid());
	if (!ASSERT_EQ(mkdir(dir, 0755), 0, "bundles dir") || !ASSERT_TRUE(df_keygen(&f, "key"), "keygen") ||
	    !ASSERT_TRUE(df_sign(&f, "key", df_read_policy(name, 1, NULL), b1), "sign v1") ||
	    !ASSERT_TRUE(df_sign(&f, "key", df_read_policy(name, 2, REQUIRED_LIMIT), b2), "sign v2 with a required limit") ||
	    !ASSERT_TRUE(df_sign(&f, "key", df_read_policy(name, 3, NULL), b3), "sign v3") ||
	    !ASSERT_TRUE(df_daemon_start(&f, extra), "daemon trusting the key"))
		return;
	snprintf(cg, sizeof(cg), "%s/ktest-attach-floor-%d", f.cgmount, (int)getpid());
	if (!ASSERT_TRUE(df_cg_make(cg), "cgroup"))
		goto out;
	ASSERT_EQ(floor_version(state, name), -1, "no floor yet");

	/* v2 verifies and passes the floor, then attach refuses it: the floor stays as it was */
	ASSERT_STREQ(df_refusal(attach_bundle(cg, b2, f.d.ws)), "policy.unsupported", "v2 (required limits) refused");
	ASSERT_EQ(floor_version(state, name), -1, "the refused attach raised no floor");

	/* so v1, below the refused v2, still attaches; that attach raises the floor to 1 */
	resp = df_call(attach_bundle(cg, b1, f.d.ws));
	if (ASSERT_TRUE(resp != NULL, "v1 attaches after the refused v2"))
		ASSERT_TRUE(detach_resp(resp), "detach v1");
	json_decref(resp);
	ASSERT_EQ(floor_version(state, name), 1, "the successful attach raised the floor to 1");

	/* v3 attaches and raises the floor to 3 */
	resp = df_call(attach_bundle(cg, b3, f.d.ws));
	if (ASSERT_TRUE(resp != NULL, "v3 attaches"))
		ASSERT_TRUE(detach_resp(resp), "detach v3");
	json_decref(resp);
	ASSERT_EQ(floor_version(state, name), 3, "the floor is 3");

	/* the control: the floor the attaches raised is enforced */
	ASSERT_STREQ(df_refusal(attach_bundle(cg, b1, f.d.ws)), "bundle.rollback", "v1 is below the floor now");
	ASSERT_STREQ(df_refusal(attach_bundle(cg, b2, f.d.ws)), "bundle.rollback", "so is v2");
	ASSERT_EQ(floor_version(state, name), 3, "refusals leave the floor at 3");
out:
	if (cg[0])
		df_cg_remove(cg);
	kt_stop(&f.pid, SIGTERM);
}

/*
 * A daemon without --bundle-state keeps its floors in the default directory;
 * re-verifying an attached bundle's run (`runs`) must compare with that floor,
 * not with no directory at all (it once passed NULL and every such run showed
 * "unverified").
 */
KTEST(attach_bundle_default_state_reverified)
{
	struct dfix f;
	char cg[PATH_MAX], dir[400], pub[400], name[64], b1[400], rid[17] = "";
	const char *extra[] = {"--bundles", dir, "--trust", pub, NULL};
	json_t *resp, *run;

	ktest_need_lsm();
	cg[0] = 0;
	if (!df_setup(&f))
		return;
	snprintf(dir, sizeof(dir), "%s/bundles", f.d.root);
	snprintf(pub, sizeof(pub), "%s/key.pub", f.d.root);
	snprintf(b1, sizeof(b1), "%s/v1.dsse.json", f.d.root);
	snprintf(name, sizeof(name), "test/default-state-%d", (int)getpid());
	if (!ASSERT_EQ(mkdir(dir, 0755), 0, "bundles dir") || !ASSERT_TRUE(df_keygen(&f, "key"), "keygen") ||
	    !ASSERT_TRUE(df_sign(&f, "key", df_read_policy(name, 1, NULL), b1), "sign v1") ||
	    !ASSERT_TRUE(df_daemon_start(&f, extra), "daemon with the default floor directory"))
		return;
	snprintf(cg, sizeof(cg), "%s/ktest-default-state-%d", f.cgmount, (int)getpid());
	if (!ASSERT_TRUE(df_cg_make(cg), "cgroup"))
		goto out;
	/* the bundle lives outside the watched directory: only its own file re-verifies it */
	resp = df_call(attach_bundle(cg, b1, f.d.ws));
	if (!ASSERT_TRUE(resp != NULL, "v1 attaches"))
		goto out;
	snprintf(rid, sizeof(rid), "%s", json_string_value(json_object_get(json_object_get(resp, "run"), "run_id")));
	json_decref(resp);
	run = df_run(rid);
	if (ASSERT_TRUE(run != NULL, "listed")) {
		const json_t *pol = json_object_get(run, "policy");

		ASSERT_TRUE(json_is_true(json_object_get(pol, "verified")), "re-verified against the default floor");
		if (!json_is_true(json_object_get(pol, "verified")))
			ktest_log("unverified: %s", json_string_value(json_object_get(pol, "unverified")));
	}
	json_decref(run);
	/* the control: a bundle that no longer verifies (the file replaced by garbage) shows unverified */
	ktest_write_file(b1, "{}", 0644);
	run = df_run(rid);
	if (ASSERT_TRUE(run != NULL, "still listed"))
		ASSERT_TRUE(json_is_false(json_object_get(json_object_get(run, "policy"), "verified")),
			    "control: a broken bundle file is reported unverified");
	json_decref(run);
out:
	if (rid[0])
		json_decref(df_call(json_pack("{s:s, s:s}", "cmd", "detach", "run_id", rid)));
	if (cg[0])
		df_cg_remove(cg);
	kt_stop(&f.pid, SIGTERM);
}
