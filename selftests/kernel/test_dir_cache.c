// SPDX-License-Identifier: Apache-2.0
/*
 * The directory cache (bpf/file.bpf.c, dir_cache): once a run has opened a
 * file of a directory whose rule has nothing below it, later files of that
 * directory are decided from the directory's slot. Each test makes the
 * slot first (opens in the directory), then tries what a per-directory
 * decision could get wrong: a name with a rule of its own, a hard link to a
 * protected inode, a directory moved elsewhere, another run, exec of a file
 * opened for reading. Every attack is shown to work outside the run (the
 * control) and to fail inside it.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ktest.h"

/*
 * A policy: the system read+exec, root/open read+write (nothing below it),
 * root/mixed read+write with root/mixed/x/secret denied (a rule below it),
 * root/exec read+exec, root/secret denied.
 */
static const char *dc_policy(const struct ktest_dirs *d, const char *name)
{
	char doc[3000];

	snprintf(doc, sizeof(doc),
		 "{\"schema\":\"custode.policy/v1\",\"name\":\"test/%s\",\"version\":1,\"content\":{\"filesystem\":["
		 "{\"path\":\"/usr\",\"allow\":[\"read\",\"exec\"]},{\"path\":\"/bin\",\"allow\":[\"read\",\"exec\"]},"
		 "{\"path\":\"/lib\",\"allow\":[\"read\",\"exec\"]},{\"path\":\"/lib64\",\"allow\":[\"read\",\"exec\"]},"
		 "{\"path\":\"/etc\",\"allow\":[\"read\"]},"
		 "{\"path\":\"%s/open\",\"allow\":[\"read\",\"write\"]},"
		 "{\"path\":\"%s/mixed\",\"allow\":[\"read\",\"write\"]},{\"path\":\"%s/mixed/x/secret\",\"allow\":[]},"
		 "{\"path\":\"%s/exec\",\"allow\":[\"read\",\"exec\"]},{\"path\":\"%s/ro\",\"allow\":[\"read\"]},"
		 "{\"path\":\"%s/secret\",\"allow\":[]}]}}",
		 name, d->root, d->root, d->root, d->root, d->root, d->root);
	return ktest_policy_file(d->root, name, doc);
}

static bool mk(const char *root, const char *rel, bool dir)
{
	char p[600];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	if (dir)
		return mkdir(p, 0777) == 0 && chmod(p, 0777) == 0;
	return ktest_write_file(p, "data\n", 0666) && chmod(p, 0666) == 0;
}

struct dc {
	struct ktest_dirs d;
	struct ktest_proc p;
	char policy[600];
	bool up;
};

/* The tree and the policy file, no run yet. */
static bool dc_prepare(struct dc *c, const char *name)
{
	static const char *const dirs[] = {"open", "mixed", "mixed/x", "exec", "ro", "secret", "elsewhere"};
	static const char *const files[] = {"open/a", "open/b", "open/c", "mixed/x/a", "mixed/x/b", "mixed/x/secret",
					    "secret/key", "ro/a", "ro/b", "exec/a", "elsewhere/f"};
	const char *pol;

	memset(c, 0, sizeof(*c));
	if (!ktest_make_dirs(&c->d))
		return false;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (!mk(c->d.root, dirs[i], true))
			return false;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (!mk(c->d.root, files[i], false))
			return false;
	pol = dc_policy(&c->d, name);
	if (!pol)
		return false;
	snprintf(c->policy, sizeof(c->policy), "%s", pol);
	return true;
}

/* The run, its repl ready. */
static bool dc_launch(struct dc *c)
{
	char line[128];
	char *argv[] = {(char *)ktest_custode(), "run", "--policy", c->policy, "--", (char *)ktest_tprobe(), "repl", NULL};

	if (ktest_spawn(argv, -1, &c->p) != 0)
		return false;
	c->up = ktest_read_line(c->p.out, line, sizeof(line), 60000) && !strncmp(line, "ready", 5);
	return c->up;
}

static bool dc_start(struct dc *c, const char *name)
{
	return dc_prepare(c, name) && dc_launch(c);
}

static void dc_stop(struct dc *c)
{
	ktest_close_stdin(&c->p);
	ktest_wait(&c->p, 30000);
	ktest_proc_close(&c->p);
}

/* "open ROOT/REL MODE" in the run; the answer ("ok", "EACCES", ...) in out. */
static bool dc_open(struct dc *c, const char *rel, const char *mode, char *out, size_t len)
{
	char cmd[800];

	snprintf(cmd, sizeof(cmd), "open %s/%s %s\n", c->d.root, rel, mode);
	return write(c->p.in, cmd, strlen(cmd)) == (ssize_t)strlen(cmd) && ktest_read_line(c->p.out, out, len, 20000);
}

#define EXPECT_OPEN(c, rel, mode, want, what)                                                                      \
	do {                                                                                                       \
		char l_[128];                                                                                      \
		if (ASSERT_TRUE(dc_open(c, rel, mode, l_, sizeof(l_)), "ask " rel))                               \
			ASSERT_STREQ(l_, want, what);                                                              \
	} while (0)

/* Outside every run: the open the attack wants works (the control). */
static void control_open(const struct dc *c, const char *rel)
{
	char p[600];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", c->d.root, rel);
	fd = open(p, O_RDONLY);
	ASSERT_TRUE(fd >= 0, "control: readable outside the run");
	if (fd >= 0)
		close(fd);
}

/* A name with a rule of its own, in a directory whose other files were decided alike. */
KTEST(dir_cache_name_with_its_own_rule)
{
	struct dc c;

	ktest_need_lsm();
	if (!ASSERT_TRUE(dc_start(&c, "dcname"), "fixture"))
		goto out;
	EXPECT_OPEN(&c, "mixed/x/a", "r", "ok", "a file of mixed/x");
	EXPECT_OPEN(&c, "mixed/x/b", "rw", "ok", "another, read+write");
	control_open(&c, "mixed/x/secret");
	EXPECT_OPEN(&c, "mixed/x/secret", "r", "EACCES", "BYPASS: the denied name among decided siblings");
	/* and in a directory with nothing below its rule: the slot serves siblings, never more than the rule */
	EXPECT_OPEN(&c, "open/a", "r", "ok", "open/a");
	EXPECT_OPEN(&c, "open/b", "rw", "ok", "open/b from the directory's decision");
	EXPECT_OPEN(&c, "ro/a", "r", "ok", "ro/a");
	EXPECT_OPEN(&c, "ro/b", "rw", "EACCES", "ro/b for writing: the directory's decision is read only");
	EXPECT_OPEN(&c, "ro/b", "r", "ok", "ro/b for reading");
out:
	if (c.up)
		dc_stop(&c);
}

/* A hard link to a protected inode, made outside the run in a directory the run has decided. */
KTEST(dir_cache_hard_link_into_decided_directory)
{
	struct dc c;
	char from[600], to[600];

	ktest_need_lsm();
	if (!ASSERT_TRUE(dc_start(&c, "dclink"), "fixture"))
		goto out;
	EXPECT_OPEN(&c, "secret/key", "r", "EACCES", "the key by its own path");
	snprintf(from, sizeof(from), "%s/secret/key", c.d.root);
	snprintf(to, sizeof(to), "%s/open/key", c.d.root);
	if (!ASSERT_EQ(link(from, to), 0, "hard link outside the run"))
		goto out;
	control_open(&c, "open/key");
	/* decide a sibling afresh, so the directory's slot is current (the link voided only the key's inode) */
	EXPECT_OPEN(&c, "open/a", "r", "ok", "a sibling (stores the directory's decision)");
	EXPECT_OPEN(&c, "open/b", "r", "ok", "another sibling (from it)");
	EXPECT_OPEN(&c, "open/key", "r", "EACCES", "BYPASS: the protected inode through the decided directory");
	EXPECT_OPEN(&c, "open/c", "r", "ok", "a sibling still");
	unlink(to);
out:
	if (c.up)
		dc_stop(&c);
}

/*
 * Unlink, rmdir and link void the kept decisions of the inode they name and
 * of no other (bpf/file.bpf.c: inode_unlink). Seen through a second name:
 * a hard link, made before the run, at a path the policy denies, to a file
 * the run has decided (a file decision: mixed/x has a rule below it). The
 * link is served by the inode's decision (a second name opens what the
 * first may) while other files come and go on the host, and is decided at
 * its own path once the first name is unlinked — or once another name is
 * linked to the inode.
 *
 * A rename or mount anywhere on the guest (something the test doesn't do)
 * voids every kept decision too, and would turn a served open into a
 * decided one: each "served" step is tried up to 5 times, deciding the
 * first name again before each. Voiding on every unlink, as before, fails
 * all 5.
 */
static void churn_others(struct dc *c)
{
	char p[600], q[600];

	snprintf(p, sizeof(p), "%s/elsewhere/tmp", c->d.root);
	ASSERT_TRUE(ktest_write_file(p, "t\n", 0644) && unlink(p) == 0, "create and unlink another file");
	snprintf(p, sizeof(p), "%s/elsewhere/d", c->d.root);
	ASSERT_TRUE(mkdir(p, 0755) == 0 && rmdir(p) == 0, "make and remove a directory");
	snprintf(p, sizeof(p), "%s/ro/a", c->d.root);
	snprintf(q, sizeof(q), "%s/elsewhere/l2", c->d.root);
	ASSERT_TRUE(link(p, q) == 0 && unlink(q) == 0, "link and unlink another file");
}

/* Decide mixed/x/a, (churn others), then open the second name: "ok" when it was served. */
static bool served(struct dc *c, bool churn)
{
	char l[128];

	for (int i = 0; i < 5; i++) {
		if (!dc_open(c, "mixed/x/a", "r", l, sizeof(l)) || strcmp(l, "ok"))
			return false;
		if (churn)
			churn_others(c);
		if (!dc_open(c, "elsewhere/la", "r", l, sizeof(l)))
			return false;
		if (!strcmp(l, "ok"))
			return true;
	}
	return false;
}

KTEST(dir_cache_unlink_voids_only_its_inode)
{
	struct dc c;
	char a[600], la[600], lb[600];

	ktest_need_lsm();
	if (!ASSERT_TRUE(dc_prepare(&c, "dcunlink"), "fixture"))
		goto out;
	snprintf(a, sizeof(a), "%s/mixed/x/a", c.d.root);
	snprintf(la, sizeof(la), "%s/elsewhere/la", c.d.root);
	snprintf(lb, sizeof(lb), "%s/elsewhere/lb", c.d.root);
	if (!ASSERT_EQ(link(a, la), 0, "the second name, made before the run") ||
	    !ASSERT_TRUE(dc_launch(&c), "the run"))
		goto out;
	control_open(&c, "elsewhere/la");
	EXPECT_OPEN(&c, "elsewhere/la", "r", "EACCES", "the second name before the first is decided");
	ASSERT_TRUE(served(&c, false), "the second name, from the inode's decision");
	ASSERT_TRUE(served(&c, true), "other inodes' names changed on the host: this one's decision kept");
	/* another name linked to the inode, outside the run: the inode's decision goes */
	EXPECT_OPEN(&c, "mixed/x/a", "r", "ok", "the first name, decided again");
	ASSERT_EQ(link(a, lb), 0, "a third name, outside the run");
	EXPECT_OPEN(&c, "elsewhere/la", "r", "EACCES", "BYPASS: a decision outlived a link of its inode");
	unlink(lb);
	/* its first name unlinked outside the run: the inode's decision goes */
	EXPECT_OPEN(&c, "mixed/x/a", "r", "ok", "the first name, decided again");
	ASSERT_EQ(unlink(a), 0, "unlink the first name");
	control_open(&c, "elsewhere/la");
	EXPECT_OPEN(&c, "elsewhere/la", "r", "EACCES", "BYPASS: the decision of an unlinked name served another");
out:
	if (c.up)
		dc_stop(&c);
}

/* A decided directory moved, outside the run, to where the policy denies. */
KTEST(dir_cache_directory_moved_away)
{
	struct dc c;
	char from[600], to[600];

	ktest_need_lsm();
	if (!ASSERT_TRUE(dc_start(&c, "dcmove"), "fixture"))
		goto out;
	EXPECT_OPEN(&c, "open/a", "r", "ok", "open/a");
	EXPECT_OPEN(&c, "open/b", "r", "ok", "open/b");
	snprintf(from, sizeof(from), "%s/open", c.d.root);
	snprintf(to, sizeof(to), "%s/elsewhere/open", c.d.root);
	if (!ASSERT_EQ(rename(from, to), 0, "move the directory outside the run"))
		goto out;
	control_open(&c, "elsewhere/open/c");
	EXPECT_OPEN(&c, "elsewhere/open/c", "r", "EACCES", "BYPASS: a file of the moved directory");
	EXPECT_OPEN(&c, "elsewhere/open/a", "r", "EACCES", "BYPASS: a file opened before the move");
	ASSERT_EQ(rename(to, from), 0, "move it back");
	EXPECT_OPEN(&c, "open/c", "r", "ok", "back where the policy allows");
out:
	if (c.up)
		dc_stop(&c);
}

/* Another run, whose policy denies the directory, after this one decided it. */
KTEST(dir_cache_other_run_decides_itself)
{
	static struct ktest_result r;
	struct dc c;
	char path[600];
	char *argv[] = {(char *)ktest_custode(), "run", "--profile", "read", "--", (char *)ktest_tprobe(), "open",
			path, "r", NULL};

	ktest_need_lsm();
	if (!ASSERT_TRUE(dc_start(&c, "dcother"), "fixture"))
		goto out;
	EXPECT_OPEN(&c, "open/a", "r", "ok", "open/a");
	EXPECT_OPEN(&c, "open/b", "r", "ok", "open/b");
	/* the read profile reads most of the host, but not a private directory below /tmp */
	snprintf(path, sizeof(path), "%s/open/c", c.d.root);
	control_open(&c, "open/c");
	ktest_run(argv, -1, 60000, &r);
	ASSERT_STREQ(r.out, "EACCES\n", "BYPASS: another run served this run's directory decision");
	EXPECT_OPEN(&c, "open/c", "r", "ok", "this run still may");
out:
	if (c.up)
		dc_stop(&c);
}

/* Exec of a file the run opened for reading, in a read-only directory and in an exec one. */
KTEST(dir_cache_exec_needs_exec)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	char ro[600], ex[600], script[900];
	const char *pol;
	char *argv[] = {(char *)ktest_custode(), "run", "--policy", NULL, "--", "/bin/sh", "-c", script, NULL};

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d) && mk(d.root, "ro", true) && mk(d.root, "exec", true), "fixture"))
		return;
	snprintf(ro, sizeof(ro), "%s/ro/true", d.root);
	snprintf(ex, sizeof(ex), "%s/exec/true", d.root);
	if (!ASSERT_TRUE(ktest_write_file(ro, "#!/bin/sh\nexit 0\n", 0755) && chmod(ro, 0755) == 0 &&
			 ktest_write_file(ex, "#!/bin/sh\nexit 0\n", 0755) && chmod(ex, 0755) == 0,
			 "scripts"))
		return;
	pol = dc_policy(&d, "dcexec");
	if (!ASSERT_TRUE(pol != NULL, "policy"))
		return;
	argv[3] = (char *)pol;
	/* read each (the shell opens them: file and directory decisions stored), then exec each twice */
	snprintf(script, sizeof(script),
		 ": <%s && : <%s && echo read; "
		 "%s && echo ex1; %s && echo ex2; %s && echo ro1; %s && echo ro2; true",
		 ex, ro, ex, ex, ro, ro);
	ASSERT_EQ(system(ex), 0, "control: the script runs outside the run");
	ktest_run(argv, -1, 60000, &r);
	ASSERT_CONTAINS(r.out, "read\n", "both readable");
	ASSERT_CONTAINS(r.out, "ex1\nex2\n", "exec directory: exec allowed, also from the cache");
	ASSERT_TRUE(!strstr(r.out, "ro1") && !strstr(r.out, "ro2"), "BYPASS: exec of a read-only file after reading it");
	ASSERT_CONTAINS(r.err, "file.exec.denied", "denials reported");
}

/*
 * The filter that spares identity lookups (custode_identity_filter) counts
 * a run's restricting identities while the run lives (engine status sums
 * the counts: `restricting_identities`), and lets them go with it: a count
 * left at 0 for a restricted inode would let a hard link to it through a
 * decided directory (the test above); one never taken back would cost
 * every later open of inodes of that slot a lookup.
 */
KTEST(dir_cache_identity_filter_follows_the_run)
{
	static struct ktest_result r;
	char *load[] = {(char *)ktest_custode(), "run", "--profile", "read", "--", "/bin/true", NULL};
	struct dc c;
	long long before, during, after = -1;

	ktest_need_lsm();
	if (!ASSERT_EQ(ktest_run(load, -1, 120000, &r), 0, "a run loads the engine"))
		return;
	if (!ASSERT_TRUE(dc_prepare(&c, "dcfilter"), "fixture"))
		return;
	before = ktest_engine_status_int("restricting_identities");
	if (!ASSERT_TRUE(before >= 0, "engine status counts restricting identities") ||
	    !ASSERT_TRUE(dc_launch(&c), "the run"))
		goto out;
	during = ktest_engine_status_int("restricting_identities");
	/* secret/ and mixed/x/secret at least */
	ASSERT_TRUE(during >= before + 2, "the run's restrictions are counted");
	EXPECT_OPEN(&c, "secret/key", "r", "EACCES", "secret/key denied");
	dc_stop(&c);
	c.up = false;
	/* the launcher takes its rules out as it ends; whatever finishes that (gc) may come later */
	for (int i = 0; i < ktest_slack(30000) / 50; i++) {
		if ((after = ktest_engine_status_int("restricting_identities")) == before)
			break;
		usleep(50000);
	}
	if (!ASSERT_EQ(after, before, "the count goes with the run"))
		ktest_log("  before %lld, during %lld, after %lld", before, during, after);
out:
	if (c.up)
		dc_stop(&c);
}
