// SPDX-License-Identifier: Apache-2.0
/*
 * custode daemon --bundles DIR: a new version of a policy reaches live runs
 * started from that policy's bundle, atomically; rollbacks are refused.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "ktest.h"
#include "test_bg.h"

struct live {
	struct ktest_dirs d;
	char name[64], key[400], pub[400], dir[400];
};

/* Write policy document doc as FILE under the test's root and sign it into out (a bundle). */
static bool sign_doc(struct live *L, const char *doc, const char *file, const char *out)
{
	char policy[512], cmd[2048], tmp[600];

	snprintf(policy, sizeof(policy), "%s/%s", L->d.root, file);
	if (!ktest_write_file(policy, doc, 0644))
		return false;
	/* write then rename: the daemon never reads a half-written bundle */
	snprintf(tmp, sizeof(tmp), "%s.part", out);
	snprintf(cmd, sizeof(cmd), "%s bundle sign --key %s --valid-for 1h %s > %s 2>/dev/null && mv %s %s",
		 ktest_custode(), L->key, policy, tmp, tmp, out);
	return system(cmd) == 0;
}

/* A version of the test policy: the workspace readable, ws/ok always, ws/secret never, ws/x when x_allowed. */
static bool sign_version(struct live *L, unsigned long long version, bool x_allowed, bool sub_allowed, const char *out)
{
	char doc[2048], file[48];

	snprintf(doc, sizeof(doc),
		 "{\"schema\":\"custode.policy/v1\",\"name\":\"%s\",\"version\":%llu,\"content\":{\"filesystem\":["
		 "{\"path\":\"/usr\",\"allow\":[\"read\",\"exec\"]},{\"path\":\"/bin\",\"allow\":[\"read\",\"exec\"]},"
		 "{\"path\":\"/lib\",\"allow\":[\"read\",\"exec\"]},{\"path\":\"/lib64\",\"allow\":[\"read\",\"exec\"]},"
		 "{\"path\":\"/etc\",\"allow\":[\"read\"]},"
		 "{\"path\":\"%s\",\"allow\":[\"read\"]},{\"path\":\"%s/secret\",\"allow\":[]},"
		 "{\"path\":\"%s/x\",\"allow\":%s},{\"path\":\"%s/sub\",\"allow\":%s}]}}",
		 L->name, version, L->d.ws, L->d.ws, L->d.ws, x_allowed ? "[\"read\"]" : "[]", L->d.ws,
		 sub_allowed ? "[\"read\"]" : "[]");
	snprintf(file, sizeof(file), "policy-v%llu.json", version);
	return sign_doc(L, doc, file, out);
}

static bool ask(struct ktest_proc *p, const char *path, char *out, size_t len)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "open %s r\n", path);
	return write(p->in, cmd, strlen(cmd)) == (ssize_t)strlen(cmd) && ktest_read_line(p->out, out, len, 20000);
}

/* Ask until the answer is `want` (the daemon applies asynchronously); a hang detector's 20 s (ktest_slack). */
static bool ask_until(struct ktest_proc *p, const char *path, const char *want)
{
	long end = kt_ms() + ktest_slack(20000);
	char line[128];

	for (;;) {
		if (!ask(p, path, line, sizeof(line)))
			return false;
		if (!strcmp(line, want))
			return true;
		if (kt_ms() >= end)
			return false;
		usleep(100000);
	}
}

/* Read the daemon's stderr until a line holds one of the needles (b may be NULL); false on a hang detector's timeout. */
static bool daemon_says(struct ktest_proc *daemon, const char *a, const char *b, int timeout_ms)
{
	long end = kt_ms() + ktest_slack(timeout_ms);
	char line[2048];

	while (kt_ms() < end) {
		if (!ktest_read_line(daemon->err, line, sizeof(line), 1000)) {
			usleep(100000); /* nothing yet (or the daemon is gone: the assertions that follow say so) */
			continue;
		}
		if (strstr(line, a) || (b && strstr(line, b)))
			return true;
	}
	return false;
}

static bool setup(struct live *L, struct ktest_proc *daemon)
{
	char cmd[1200];
	char *argv[] = {(char *)ktest_custode(), "daemon", "--bundles", L->dir, "--trust", L->pub, "--upstream",
			"127.0.0.1:53", NULL};

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&L->d), "dirs"))
		return false;
	snprintf(L->name, sizeof(L->name), "test/live-%ld-%d", (long)time(NULL), getpid());
	snprintf(L->key, sizeof(L->key), "%s/key", L->d.root);
	snprintf(L->pub, sizeof(L->pub), "%s/key.pub", L->d.root);
	snprintf(L->dir, sizeof(L->dir), "%s/bundles", L->d.root);
	mkdir(L->dir, 0755);
	snprintf(cmd, sizeof(cmd), "%s bundle keygen --out %s >/dev/null 2>&1", ktest_custode(), L->key);
	if (!ASSERT_EQ(system(cmd), 0, "keygen"))
		return false;
	/* the fixture files the policy talks about */
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/secret %s/sub && echo ok > %s/ok && echo s > %s/secret/f && echo x > %s/x "
				   "&& echo sub > %s/sub/f && chmod -R a+rX %s",
		 L->d.ws, L->d.ws, L->d.ws, L->d.ws, L->d.ws, L->d.ws, L->d.ws);
	if (!ASSERT_EQ(system(cmd), 0, "fixture files"))
		return false;
	return ASSERT_EQ(ktest_spawn(argv, -1, daemon), 0, "daemon");
}

static void teardown(struct live *L, struct ktest_proc *daemon)
{
	char cmd[600];

	kill(daemon->pid, SIGTERM);
	ktest_wait(daemon, 10000);
	ktest_proc_close(daemon);
	snprintf(cmd, sizeof(cmd), "rm -f /var/lib/custode/bundles/test%%live-*");
	if (system(cmd)) {
		/* best effort */
	}
}

KTEST(bundle_live_update_narrows_and_rollback_is_refused)
{
	struct live L;
	struct ktest_proc daemon, run;
	char b1[500], b2[500], line[128], f_sub[500];
	char *argv[] = {(char *)ktest_custode(), "run", "--bundle", b1, "--trust", L.pub, "--workspace", NULL, "--",
			(char *)ktest_tprobe(), "repl", NULL};

	if (!setup(&L, &daemon))
		return;
	snprintf(b1, sizeof(b1), "%s/v1.json", L.d.root);
	snprintf(b2, sizeof(b2), "%s/v2.dsse.json", L.dir);
	snprintf(f_sub, sizeof(f_sub), "%s/sub/f", L.d.ws);
	if (!ASSERT_TRUE(sign_version(&L, 1, true, true, b1), "sign v1"))
		goto out;
	argv[5] = L.pub;
	argv[7] = L.d.ws;
	if (!ASSERT_EQ(ktest_spawn(argv, -1, &run), 0, "run under v1") ||
	    !ASSERT_TRUE(ktest_read_line(run.out, line, sizeof(line), 60000), "ready"))
		goto out;
	if (ASSERT_TRUE(ask(&run, f_sub, line, sizeof(line)), "ask"))
		ASSERT_STREQ(line, "ok", "v1 grants ws/sub");
	/* v2 narrows ws/sub: the daemon applies it to the live run */
	ASSERT_TRUE(sign_version(&L, 2, true, false, b2), "sign v2 into the directory");
	ASSERT_TRUE(ask_until(&run, f_sub, "EACCES"), "the run's next open under v2 is denied");
	/* a rolled-back v1 dropped into the directory: refused, v2 stays */
	{
		char cmd[1200], v1copy[500], refused[600];
		snprintf(v1copy, sizeof(v1copy), "%s/v1-again.dsse.json", L.dir);
		snprintf(cmd, sizeof(cmd), "cp %s %s.part && mv %s.part %s", b1, v1copy, v1copy, v1copy);
		ASSERT_EQ(system(cmd), 0, "drop v1 into the directory");
		/* until the daemon has decided on the file: its refusal (or, wrongly, the run swapped back to v1) */
		snprintf(refused, sizeof(refused), "bundles: refusing %s: ", v1copy);
		if (!daemon_says(&daemon, refused, " v2 -> v1", 30000))
			ktest_log("the daemon said nothing about %s", v1copy);
		for (int i = 0; i < 5; i++)
			if (ASSERT_TRUE(ask(&run, f_sub, line, sizeof(line)), "ask"))
				ASSERT_STREQ(line, "EACCES", "v2 stays in force");
	}
	ktest_close_stdin(&run);
	ktest_wait(&run, 30000);
	ktest_proc_close(&run);
out:
	teardown(&L, &daemon);
}

/*
 * Flips between two versions while the run opens files as fast as it can:
 * a file every version allows is never denied (no empty or partial rule
 * set), a file every version denies is never opened (no mixed one), and a
 * file the versions disagree on is seen both ways (the flips happened).
 */
KTEST(bundle_live_flip_loop_never_mixes)
{
	struct live L;
	struct ktest_proc daemon, run;
	char b1[500], line[1024], ok[500], secret[500], x[500], path[500];
	long ok_ok = -1, ok_denied = -1, secret_ok = -1, secret_denied = -1, x_ok = -1, x_denied = -1, a, d;
	char *argv[] = {(char *)ktest_custode(), "run", "--bundle", b1, "--trust", NULL, "--workspace", NULL, "--",
			(char *)ktest_tprobe(), "spin", "0", ok, secret, x, NULL};

	if (!setup(&L, &daemon))
		return;
	snprintf(b1, sizeof(b1), "%s/v1.json", L.d.root);
	snprintf(ok, sizeof(ok), "%s/ok", L.d.ws);
	snprintf(secret, sizeof(secret), "%s/secret/f", L.d.ws);
	snprintf(x, sizeof(x), "%s/x", L.d.ws);
	if (!ASSERT_TRUE(sign_version(&L, 1, true, true, b1), "sign v1"))
		goto out;
	argv[5] = L.pub;
	argv[7] = L.d.ws;
	if (!ASSERT_EQ(ktest_spawn(argv, -1, &run), 0, "run") ||
	    !ASSERT_TRUE(ktest_read_line(run.out, line, sizeof(line), 60000), "ready"))
		goto out;
	/*
	 * versions 2..21 alternate x; ok and secret are the same in every
	 * version. Each is in force in the run (the daemon says so) before the
	 * next is written, so none is skipped however slow the machine; the
	 * spinner opens all the while, until its stdin closes.
	 */
	for (int v = 2; v <= 21; v++) {
		char b[500], swapped[32];

		snprintf(b, sizeof(b), "%s/p.dsse.json", L.dir);
		snprintf(swapped, sizeof(swapped), " v%d -> v%d", v - 1, v);
		if (!ASSERT_TRUE(sign_version(&L, v, v % 2, true, b), "sign") ||
		    !ASSERT_TRUE(daemon_says(&daemon, swapped, NULL, 60000), swapped))
			break;
	}
	ktest_close_stdin(&run);
	for (int i = 0; i < 3 && ktest_read_line(run.out, line, sizeof(line), 60000); i++) {
		if (sscanf(line, "%499s ok %ld denied %ld", path, &a, &d) != 3)
			continue;
		if (!strcmp(path, ok))
			ok_ok = a, ok_denied = d;
		else if (!strcmp(path, secret))
			secret_ok = a, secret_denied = d;
		else if (!strcmp(path, x))
			x_ok = a, x_denied = d;
	}
	ktest_log("ok: %ld/%ld, secret: %ld/%ld, x: %ld/%ld (opened/denied)", ok_ok, ok_denied, secret_ok, secret_denied,
		  x_ok, x_denied);
	ASSERT_TRUE(ok_ok > 1000, "the run kept opening");
	ASSERT_EQ(ok_denied, 0, "a file every version allows was never denied (no empty or partial rule set)");
	ASSERT_EQ(secret_ok, 0, "a file every version denies was never opened (no mixed rule set)");
	ASSERT_TRUE(x_ok > 0 && x_denied > 0, "the versions really alternated in the run");
	ktest_wait(&run, 60000);
	ktest_proc_close(&run);
out:
	teardown(&L, &daemon);
}

/* A network-only version: no egress rule in v1, one (unrelated) CIDR from v2 on. */
static bool sign_net_version(struct live *L, int version, const char *out)
{
	char doc[1024], file[32];

	snprintf(doc, sizeof(doc),
		 "{\"schema\":\"custode.policy/v1\",\"name\":\"%s\",\"version\":%d,\"content\":{\"network\":{\"egress\":%s}}}",
		 L->name, version, version > 1 ? "[{\"cidr\":\"198.51.100.0/24\",\"ports\":[443]}]" : "[]");
	snprintf(file, sizeof(file), "net-policy-v%d.json", version);
	return sign_doc(L, doc, file, out);
}

static bool ask_connect(struct ktest_proc *p, int port, char *out, size_t len)
{
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "connect 127.0.0.1 %d udp\n", port);
	return write(p->in, cmd, strlen(cmd)) == (ssize_t)strlen(cmd) && ktest_read_line(p->out, out, len, 20000);
}

/*
 * Every --allow grant survives a live update (issue 16): the run state kept
 * 16 of the grants a run takes, so at the first swap grant 17 on was gone
 * (port 40017 went from ok to EPERM at v1 -> v2). 40 grants here; the last
 * ones and the first are asked before and after the swap, and a port no
 * grant names stays refused (the control).
 */
KTEST(bundle_live_update_keeps_every_allow)
{
	enum { GRANTS = 40, BASE = 40001 };
	struct live L;
	struct ktest_proc daemon, run;
	char b1[500], b2[500], line[128], *argv[8 + 2 * GRANTS + 4], grants[GRANTS][48];
	static const int asked[] = {BASE, BASE + 16, BASE + GRANTS - 1};
	int n = 0;

	if (!setup(&L, &daemon))
		return;
	snprintf(b1, sizeof(b1), "%s/net-v1.json", L.d.root);
	snprintf(b2, sizeof(b2), "%s/net-v2.dsse.json", L.dir);
	if (!ASSERT_TRUE(sign_net_version(&L, 1, b1), "sign v1"))
		goto out;
	argv[n++] = (char *)ktest_custode();
	argv[n++] = "run";
	argv[n++] = "--bundle";
	argv[n++] = b1;
	argv[n++] = "--trust";
	argv[n++] = L.pub;
	for (int i = 0; i < GRANTS; i++) {
		snprintf(grants[i], sizeof(grants[i]), "127.0.0.1:%d/udp", BASE + i);
		argv[n++] = "--allow";
		argv[n++] = grants[i];
	}
	argv[n++] = "--";
	argv[n++] = (char *)ktest_tprobe();
	argv[n++] = "repl";
	argv[n] = NULL;
	if (!ASSERT_EQ(ktest_spawn(argv, -1, &run), 0, "run under v1 with 40 grants") ||
	    !ASSERT_TRUE(ktest_read_line(run.out, line, sizeof(line), 60000), "ready"))
		goto out;
	for (size_t i = 0; i < sizeof(asked) / sizeof(asked[0]); i++)
		if (ASSERT_TRUE(ask_connect(&run, asked[i], line, sizeof(line)), "ask"))
			ASSERT_STREQ(line, "ok", "v1: a granted port");
	if (ASSERT_TRUE(ask_connect(&run, BASE + GRANTS, line, sizeof(line)), "ask"))
		ASSERT_STREQ(line, "EPERM", "v1: a port no grant names (control)");

	ASSERT_TRUE(sign_net_version(&L, 2, b2), "sign v2 into the directory");
	ASSERT_TRUE(daemon_says(&daemon, " v1 -> v2", NULL, 60000), "the daemon swapped the run to v2");
	for (size_t i = 0; i < sizeof(asked) / sizeof(asked[0]); i++)
		if (ASSERT_TRUE(ask_connect(&run, asked[i], line, sizeof(line)), "ask"))
			ASSERT_STREQ(line, "ok", "v2: every grant kept, 17th and 40th included");
	if (ASSERT_TRUE(ask_connect(&run, BASE + GRANTS, line, sizeof(line)), "ask"))
		ASSERT_STREQ(line, "EPERM", "v2: a port no grant names (control)");
	ktest_close_stdin(&run);
	ktest_wait(&run, 30000);
	ktest_proc_close(&run);
out:
	teardown(&L, &daemon);
}

/* The policy version `custode runs --json` shows for the run of policy `name` (its id into rid); -1 if none. */
static long long runs_version(const char *name, char rid[17])
{
	static struct ktest_result r;
	char *argv[] = {(char *)ktest_custode(), "runs", "--json", NULL};
	long long version = -1;
	json_t *runs, *e;
	size_t i;

	if (ktest_run(argv, -1, 30000, &r) != 0 || !(runs = json_loads(r.out, 0, NULL)))
		return -1;
	json_array_foreach(runs, i, e) {
		const json_t *pol = json_object_get(e, "policy");
		const char *n = json_string_value(json_object_get(pol, "name"));

		if (!n || strcmp(n, name))
			continue;
		version = json_integer_value(json_object_get(pol, "version"));
		snprintf(rid, 17, "%s", json_string_value(json_object_get(e, "run_id")));
	}
	json_decref(runs);
	return version;
}

/* The policy version of the run's first decision with `reason` in `custode events --json --run`; -1 if none yet. */
static long long events_version(const char *rid, const char *reason)
{
	static struct ktest_result r;
	char *argv[] = {(char *)ktest_custode(), "events", "--json", "--run", (char *)rid, NULL};
	long long version = -1;

	if (ktest_run(argv, -1, 30000, &r) != 0)
		return -1;
	for (char *save = NULL, *l = strtok_r(r.out, "\n", &save); l && version < 0; l = strtok_r(NULL, "\n", &save)) {
		json_t *o = json_loads(l, 0, NULL);
		const char *why = json_string_value(json_object_get(o, "reason"));

		if (why && !strcmp(why, reason))
			version = json_integer_value(json_object_get(json_object_get(o, "policy"), "version"));
		json_decref(o);
	}
	return version;
}

static long long events_version_until(const char *rid, const char *reason)
{
	long end = kt_ms() + ktest_slack(30000);
	long long v;

	while ((v = events_version(rid, reason)) < 0 && kt_ms() < end)
		usleep(200000);
	return v;
}

/*
 * Policy versions above 2^32-1 (issue 16): the engine kept 32 bits, so a run
 * at 2^32+1 showed as v1 in `custode runs` and its records, and a live update
 * to 2^33+1 (the same low 32 bits) was taken for the version already running
 * and never applied. Both versions must show whole and the update must land.
 */
KTEST(bundle_live_version_above_32_bits)
{
	static const unsigned long long v1 = 4294967297ull, v2 = 8589934593ull;
	struct live L;
	struct ktest_proc daemon, run;
	char b1[500], b2[500], line[128], f_x[500], f_secret[500], rid[17] = "";
	char *argv[] = {(char *)ktest_custode(), "run", "--bundle", b1, "--trust", NULL, "--workspace", NULL, "--",
			(char *)ktest_tprobe(), "repl", NULL};

	if (!setup(&L, &daemon))
		return;
	snprintf(b1, sizeof(b1), "%s/big-v1.json", L.d.root);
	snprintf(b2, sizeof(b2), "%s/big-v2.dsse.json", L.dir);
	snprintf(f_x, sizeof(f_x), "%s/x", L.d.ws);
	snprintf(f_secret, sizeof(f_secret), "%s/secret/f", L.d.ws);
	if (!ASSERT_TRUE(sign_version(&L, v1, true, true, b1), "sign 2^32+1"))
		goto out;
	argv[5] = L.pub;
	argv[7] = L.d.ws;
	if (!ASSERT_EQ(ktest_spawn(argv, -1, &run), 0, "run under 2^32+1") ||
	    !ASSERT_TRUE(ktest_read_line(run.out, line, sizeof(line), 60000), "ready"))
		goto out;
	if (ASSERT_TRUE(ask(&run, f_secret, line, sizeof(line)), "ask"))
		ASSERT_STREQ(line, "EACCES", "a denial, for a record");
	if (ASSERT_TRUE(ask(&run, f_x, line, sizeof(line)), "ask"))
		ASSERT_STREQ(line, "ok", "2^32+1 grants ws/x");
	ASSERT_EQ(runs_version(L.name, rid), (long long)v1, "custode runs --json: the run's version, whole");
	if (ASSERT_TRUE(rid[0], "the run is listed"))
		ASSERT_EQ(events_version_until(rid, "file.read.denied"), (long long)v1,
			  "custode events --json: the record's policy version, whole");

	/* 2^33+1 denies ws/x: the daemon must see it is not the version running */
	ASSERT_TRUE(sign_version(&L, v2, false, true, b2), "sign 2^33+1 into the directory");
	ASSERT_TRUE(ask_until(&run, f_x, "EACCES"), "the run's next open under 2^33+1 is denied");
	ASSERT_EQ(runs_version(L.name, rid), (long long)v2, "custode runs --json after the update");
	ktest_close_stdin(&run);
	ktest_wait(&run, 30000);
	ktest_proc_close(&run);
out:
	teardown(&L, &daemon);
}
