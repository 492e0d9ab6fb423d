// SPDX-License-Identifier: Apache-2.0
/*
 * Version floors: rollback refused, floors survive a restart, a crash between
 * verify and accept leaves the previous floor, corrupt state is refused and
 * never reset.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <criterion/criterion.h>

#include "bundle/source.h"
#include "test_bundle_util.h"
#include "util/fsutil.h"
#include "vectors/dsse_vectors.h"

#define CONTENT_A "{\"filesystem\":[{\"path\":\"/usr\",\"allow\":[\"read\"]}]}"
#define CONTENT_B "{\"filesystem\":[{\"path\":\"/usr\",\"allow\":[\"read\",\"exec\"]}]}"
#define R(x) CUSTODE_REASON_BUNDLE_##x

static struct custode_trust *k1;
static char *dir;

static void setup(void)
{
	k1 = t_trust(rfc8032_key1_pub, NULL);
	dir = t_tmpdir();
}

static void teardown(void)
{
	custode_trust_free(k1);
	t_rmdir(dir);
}

TestSuite(bundle_state, .init = setup, .fini = teardown);

/* A verified bundle of `name` at `version` with content c. */
static struct custode_bundle_info verified(const char *name, uint64_t version, const char *c)
{
	struct custode_bundle_info info;
	struct custode_refusal why = {0};
	char *doc = t_doc(name, version, c, NULL);
	char *env = t_bundle(doc, rfc8032_key1_priv);

	cr_assert_eq(custode_bundle_verify(env, strlen(env), k1, T_NOW, NULL, &info, &why), 0, "%s", why.detail);
	free(env);
	free(doc);
	return info;
}

/* Write a bundle file of name/version/content into dir, return its path (malloc'd). */
static char *bundle_file(const char *name, uint64_t version, const char *c)
{
	char *doc = t_doc(name, version, c, NULL), *env = t_bundle(doc, rfc8032_key1_priv), *path;

	cr_assert_gt(asprintf(&path, "%s/%s-%llu-%zu.dsse.json", dir, name[0] == 't' ? "b" : "c",
			      (unsigned long long)version, strlen(c)),
		     0);
	cr_assert_eq(custode_write_file_atomic(path, env, strlen(env), 0644), 0);
	free(env);
	free(doc);
	return path;
}

static int accept_(const struct custode_bundle_info *info, bool *raised, struct custode_refusal *why)
{
	memset(why, 0, sizeof(*why));
	return custode_bundle_accept(dir, info, raised, why);
}

static uint64_t floor_of(const char *name)
{
	struct custode_bundle_floor f;
	struct custode_refusal why = {0};
	int r = custode_bundle_floor_get(dir, name, &f, &why);

	cr_assert_eq(r, 0, "floor_get: %d %s", r, why.detail);
	return f.version;
}

static char *read_all(const char *path)
{
	char *text = NULL;
	cr_assert_eq(custode_read_file(path, 1 << 20, &text, NULL), 0, "%s", path);
	return text;
}

Test(bundle_state, floor_rises_and_refuses_rollback)
{
	struct custode_bundle_info v1 = verified("t/floor", 1, CONTENT_A), v2 = verified("t/floor", 2, CONTENT_B);
	struct custode_bundle_info v2b = verified("t/floor", 2, CONTENT_A);
	struct custode_bundle_floor f;
	struct custode_refusal why;
	bool raised = false;
	char *path, *text;

	cr_assert_eq(custode_bundle_floor_get(dir, "t/floor", &f, &why), 1, "no floor yet");
	cr_assert_eq(accept_(&v1, &raised, &why), 0, "%s", why.detail);
	cr_assert(raised);
	cr_assert_eq(floor_of("t/floor"), 1);
	cr_assert_eq(accept_(&v2, &raised, &why), 0, "%s", why.detail);
	cr_assert(raised);
	cr_assert_eq(floor_of("t/floor"), 2);

	/* lower version */
	cr_assert_lt(accept_(&v1, &raised, &why), 0);
	cr_assert_eq(why.reason, R(ROLLBACK));
	cr_assert_not_null(strstr(why.detail, "below the accepted floor 2"), "%s", why.detail);
	cr_assert_lt(custode_bundle_floor_check(dir, &v1, &why), 0);
	cr_assert_eq(why.reason, R(ROLLBACK));
	/* same version, other content */
	cr_assert_lt(accept_(&v2b, &raised, &why), 0);
	cr_assert_eq(why.reason, R(ROLLBACK));
	cr_assert_not_null(strstr(why.detail, "new version"), "%s", why.detail);
	/* same version, same content: accepted again, nothing written */
	cr_assert_gt(asprintf(&path, "%s/t%%floor.json", dir), 0);
	text = read_all(path);
	cr_assert_eq(accept_(&v2, &raised, &why), 0, "%s", why.detail);
	cr_assert(!raised);
	cr_assert_eq(custode_bundle_floor_check(dir, &v2, &why), 0);
	{
		char *again = read_all(path);
		cr_assert_str_eq(again, text);
		free(again);
	}
	cr_assert_not_null(strstr(text, "\"version\":2"), "%s", text);
	cr_assert_not_null(strstr(text, v2.digest), "%s", text);
	free(text);
	free(path);
}

/* Floors are per policy name. */
Test(bundle_state, per_name)
{
	struct custode_bundle_info a5 = verified("t/a", 5, CONTENT_A), b1 = verified("t/b", 1, CONTENT_A);
	struct custode_refusal why;

	cr_assert_eq(accept_(&a5, NULL, &why), 0);
	cr_assert_eq(accept_(&b1, NULL, &why), 0);
	cr_assert_eq(floor_of("t/a"), 5);
	cr_assert_eq(floor_of("t/b"), 1);
}

/* A floor written by one process holds for the next: state lives in the directory only. */
Test(bundle_state, floor_survives_restart)
{
	struct custode_bundle_info v3 = verified("t/restart", 3, CONTENT_A), v2 = verified("t/restart", 2, CONTENT_A);
	struct custode_refusal why;
	int status;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct custode_refusal w;
		_exit(custode_bundle_accept(dir, &v3, NULL, &w) == 0 ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* "restarted": fresh trust, fresh calls, same directory */
	custode_trust_free(k1);
	k1 = t_trust(rfc8032_key1_pub, NULL);
	cr_assert_eq(floor_of("t/restart"), 3);
	cr_assert_lt(accept_(&v2, NULL, &why), 0);
	cr_assert_eq(why.reason, R(ROLLBACK));
}

/*
 * verify -> (crash) -> accept never ran: the previous floor, and so the
 * previous bundle, stays in force; the new one is still acceptable later.
 */
Test(bundle_state, crash_between_verify_and_accept)
{
	char *v1 = bundle_file("t/crash", 1, CONTENT_A), *v2 = bundle_file("t/crash", 2, CONTENT_B);
	struct custode_bundle_info info;
	struct custode_policy *p = NULL;
	struct custode_refusal why = {0};
	char tmp[512];
	int status, fd;
	pid_t pid;

	cr_assert_eq(custode_bundle_load(v1, k1, T_NOW, dir, &p, &info, &why), 0, "%s", why.detail);
	custode_policy_free(p);
	p = NULL;
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* the daemon verifies v2 and dies before accepting it */
		struct custode_refusal w;
		struct custode_bundle_info i2;
		if (custode_bundle_verify_file(v2, k1, T_NOW, NULL, &i2, &w))
			_exit(2);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* and a crash in the middle of a write leaves only a temp file behind */
	snprintf(tmp, sizeof(tmp), "%s/t%%crash.json.tmp.AbC123", dir);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "{\"schema\":\"custode.bundle-fl", 28), 28);
	close(fd);

	cr_assert_eq(floor_of("t/crash"), 1);
	cr_assert_eq(custode_bundle_load(v1, k1, T_NOW, dir, &p, &info, &why), 0, "v1 still in force: %s", why.detail);
	cr_assert_eq(info.version, 1);
	custode_policy_free(p);
	p = NULL;
	cr_assert_eq(custode_bundle_load(v2, k1, T_NOW, dir, &p, &info, &why), 0, "%s", why.detail);
	cr_assert_eq(floor_of("t/crash"), 2);
	custode_policy_free(p);
	p = NULL;
	/* once v2 is accepted, v1 is a rollback */
	cr_assert_lt(custode_bundle_load(v1, k1, T_NOW, dir, &p, &info, &why), 0);
	cr_assert_eq(why.reason, R(ROLLBACK));
	cr_assert_null(p);
	free(v1);
	free(v2);
}

/* A refused bundle (expired, bad signature) never touches the floor. */
Test(bundle_state, refusal_leaves_floor)
{
	char *v1 = bundle_file("t/keep", 1, CONTENT_A), *v2 = bundle_file("t/keep", 2, CONTENT_B);
	struct custode_trust *k2 = t_trust(rfc8032_key2_pub, NULL);
	struct custode_policy *p = NULL;
	struct custode_refusal why;

	cr_assert_eq(custode_bundle_load(v1, k1, T_NOW, dir, &p, NULL, &why), 0);
	custode_policy_free(p);
	p = NULL;
	cr_assert_lt(custode_bundle_load(v2, k1, 2082758400 + 3600, dir, &p, NULL, &why), 0);
	cr_assert_eq(why.reason, R(EXPIRED));
	cr_assert_lt(custode_bundle_load(v2, k2, T_NOW, dir, &p, NULL, &why), 0);
	cr_assert_eq(why.reason, R(SIGNATURE));
	cr_assert_null(p);
	cr_assert_eq(floor_of("t/keep"), 1);
	custode_trust_free(k2);
	free(v1);
	free(v2);
}

/* The floor of name in state directory sd: its version, or 0 when there is none. */
static uint64_t floor_in(const char *sd, const char *name)
{
	struct custode_bundle_floor f;
	struct custode_refusal why = {0};
	int r = custode_bundle_floor_get(sd, name, &f, &why);

	cr_assert_geq(r, 0, "floor_get: %s", why.detail);
	return r == 1 ? 0 : f.version;
}

/*
 * custode_source_bundle with check_floor_only (`custode run --bundle`,
 * `custode attach`), for a named policy and a bundle file alike: the bundle
 * is compared with the floor and the floor stays as it is, until the caller's
 * custode_source_accept; without it (the default) the floor is raised at once.
 */
Test(bundle_state, source_check_floor_only_raises_nothing)
{
	struct custode_policy_source src = {.trust = k1, .check_floor_only = true};
	struct custode_resolved_policy r = {0};
	struct custode_bundle_info info;
	struct custode_refusal why = {0};
	char *bdir, *sdir, *b2, *b3, *doc, *env;

	cr_assert_gt(asprintf(&bdir, "%s/bundles", dir), 0);
	cr_assert_gt(asprintf(&sdir, "%s/state", dir), 0);
	cr_assert_gt(asprintf(&b2, "%s/v2.dsse.json", bdir), 0);
	cr_assert_gt(asprintf(&b3, "%s/v3.dsse.json", bdir), 0);
	cr_assert_eq(mkdir(bdir, 0755), 0);
	src.bundles_dir = bdir;
	src.state_dir = sdir;
	doc = t_doc("t/src", 2, CONTENT_A, NULL);
	env = t_bundle(doc, rfc8032_key1_priv);
	cr_assert_eq(custode_write_file_atomic(b2, env, strlen(env), 0644), 0);
	free(env);
	free(doc);

	/* by name, then the file: checked, nothing raised */
	cr_assert_eq(custode_source_bundle(NULL, "t/src", &src, &r, &info, &why), 0, "%s", why.detail);
	cr_assert_eq(info.version, 2);
	custode_policy_free(r.p);
	r.p = NULL;
	cr_assert_eq(floor_in(sdir, "t/src"), 0, "a named policy with check_floor_only raised the floor");
	cr_assert_eq(custode_source_bundle(b2, NULL, &src, &r, &info, &why), 0, "%s", why.detail);
	custode_policy_free(r.p);
	r.p = NULL;
	cr_assert_eq(floor_in(sdir, "t/src"), 0, "a bundle file with check_floor_only raised the floor");

	/* the caller's accept raises it, into src's state directory */
	cr_assert_eq(custode_source_accept(&src, &info, &why), 0, "%s", why.detail);
	cr_assert_eq(floor_in(sdir, "t/src"), 2);

	/* without check_floor_only, a named policy is accepted at once */
	doc = t_doc("t/src", 3, CONTENT_B, NULL);
	env = t_bundle(doc, rfc8032_key1_priv);
	cr_assert_eq(custode_write_file_atomic(b3, env, strlen(env), 0644), 0);
	free(env);
	free(doc);
	src.check_floor_only = false;
	cr_assert_eq(custode_source_bundle(NULL, "t/src", &src, &r, &info, &why), 0, "%s", why.detail);
	custode_policy_free(r.p);
	cr_assert_eq(floor_in(sdir, "t/src"), 3);
	free(bdir);
	free(sdir);
	free(b2);
	free(b3);
}

static void corrupt_case(const char *content, size_t len, const char *word)
{
	struct custode_bundle_info v1 = verified("t/corrupt", 1, CONTENT_A), v9 = verified("t/corrupt", 9, CONTENT_A);
	struct custode_bundle_floor f;
	struct custode_refusal why;
	char path[512], *after;
	char *bf = bundle_file("t/corrupt", 9, CONTENT_A);
	struct custode_policy *p = NULL;

	snprintf(path, sizeof(path), "%s/t%%corrupt.json", dir);
	unlink(path);
	cr_assert_eq(custode_write_file_atomic(path, content, len, 0600), 0);
	memset(&why, 0, sizeof(why));
	cr_assert_lt(custode_bundle_floor_get(dir, "t/corrupt", &f, &why), 0, "accepted: %.*s", (int)len, content);
	cr_assert_eq(why.reason, R(STATE), "%s", why.detail);
	if (word)
		cr_assert_not_null(strstr(why.detail, word), "\"%s\" lacks \"%s\"", why.detail, word);
	cr_assert_lt(custode_bundle_floor_check(dir, &v1, &why), 0);
	cr_assert_eq(why.reason, R(STATE));
	/* not even a higher version resets it */
	cr_assert_lt(accept_(&v9, NULL, &why), 0);
	cr_assert_eq(why.reason, R(STATE));
	cr_assert_lt(custode_bundle_load(bf, k1, T_NOW, dir, &p, NULL, &why), 0);
	cr_assert_eq(why.reason, R(STATE));
	cr_assert_null(p);
	after = read_all(path);
	cr_assert_eq(strlen(after), strnlen(content, len));
	cr_assert(memcmp(after, content, strlen(after)) == 0, "state file changed");
	free(after);
	free(bf);
}

#define CORRUPT(s, w) corrupt_case(s, strlen(s), w)
#define FLOOR_OK(v) "{\"schema\":\"custode.bundle-floor/v1\",\"name\":\"t/corrupt\",\"version\":" v ","

Test(bundle_state, corrupt_state_refused_loudly)
{
	static const char d[] = "\"digest\":\"sha256:0000000000000000000000000000000000000000000000000000000000000000\",";
	char *s;

	CORRUPT("", "corrupt");
	CORRUPT("{\"schema\":\"custode.bundle-fl", "corrupt");
	CORRUPT("garbage\n", "corrupt");
	CORRUPT("[]", "not an object");
	cr_assert_gt(asprintf(&s, FLOOR_OK("-1") "%s\"acceptedAt\":\"2030-01-01T00:00:00Z\"}", d), 0);
	CORRUPT(s, "version");
	free(s);
	cr_assert_gt(asprintf(&s, FLOOR_OK("\"1\"") "%s\"acceptedAt\":\"2030-01-01T00:00:00Z\"}", d), 0);
	CORRUPT(s, "version");
	free(s);
	cr_assert_gt(asprintf(&s, FLOOR_OK("1") "\"digest\":\"md5:00\",\"acceptedAt\":\"2030-01-01T00:00:00Z\"}"), 0);
	CORRUPT(s, "digest");
	free(s);
	cr_assert_gt(asprintf(&s, FLOOR_OK("1") "%s\"acceptedAt\":\"yesterday\"}", d), 0);
	CORRUPT(s, "acceptedAt");
	free(s);
	cr_assert_gt(asprintf(&s, FLOOR_OK("1") "%s\"acceptedAt\":\"2030-01-01T00:00:00Z\",\"x\":1}", d), 0);
	CORRUPT(s, "unknown field");
	free(s);
	cr_assert_gt(asprintf(&s, FLOOR_OK("1") "%s\"acceptedAt\":\"2030-01-01T00:00:00Z\",\"version\":2}", d), 0);
	CORRUPT(s, "corrupt");
	free(s);
	cr_assert_gt(asprintf(&s,
			      "{\"schema\":\"custode.bundle-floor/v1\",\"name\":\"t/other\",\"version\":1,%s"
			      "\"acceptedAt\":\"2030-01-01T00:00:00Z\"}",
			      d),
		     0);
	CORRUPT(s, "another policy name");
	free(s);
	cr_assert_gt(asprintf(&s,
			      "{\"schema\":\"custode.bundle-floor/v2\",\"name\":\"t/corrupt\",\"version\":1,%s"
			      "\"acceptedAt\":\"2030-01-01T00:00:00Z\"}",
			      d),
		     0);
	CORRUPT(s, "schema");
	free(s);
	{
		char big[5000];
		memset(big, ' ', sizeof(big));
		big[0] = '{';
		big[sizeof(big) - 1] = '}';
		corrupt_case(big, sizeof(big), "larger than");
	}
}

Test(bundle_state, well_formed_floor_file_reads_back)
{
	static const char text[] = "{\"schema\":\"custode.bundle-floor/v1\",\"name\":\"t/x\",\"version\":7,\"digest\":"
				   "\"sha256:00000000000000000000000000000000000000000000000000000000000000ff\","
				   "\"acceptedAt\":\"2030-01-01T00:00:00Z\"}\n";
	struct custode_bundle_floor f;
	struct custode_refusal why;
	char path[512];

	snprintf(path, sizeof(path), "%s/t%%x.json", dir);
	cr_assert_eq(custode_write_file_atomic(path, text, strlen(text), 0600), 0);
	cr_assert_eq(custode_bundle_floor_get(dir, "t/x", &f, &why), 0, "%s", why.detail);
	cr_assert_eq(f.version, 7);
	cr_assert_eq(f.accepted_at, T_NOW);
	cr_assert_str_eq(f.name, "t/x");
	cr_assert_str_eq(f.digest, "sha256:00000000000000000000000000000000000000000000000000000000000000ff");
}

Test(bundle_state, symlink_and_directory_refused)
{
	struct custode_bundle_info v = verified("t/link", 1, CONTENT_A);
	struct custode_refusal why;
	char path[512], target[512];

	snprintf(path, sizeof(path), "%s/t%%link.json", dir);
	snprintf(target, sizeof(target), "%s/elsewhere", dir);
	cr_assert_eq(symlink(target, path), 0);
	cr_assert_lt(accept_(&v, NULL, &why), 0);
	cr_assert_eq(why.reason, R(STATE));
	cr_assert_not_null(strstr(why.detail, "symlink"), "%s", why.detail);
	unlink(path);
	cr_assert_eq(mkdir(path, 0700), 0);
	cr_assert_lt(accept_(&v, NULL, &why), 0);
	cr_assert_eq(why.reason, R(STATE));
}

/* Whoever can write the state directory can delete a floor: such a directory is refused. */
Test(bundle_state, unsafe_state_dir_refused)
{
	struct custode_bundle_info v = verified("t/perm", 1, CONTENT_A);
	struct custode_bundle_floor f;
	struct custode_refusal why;

	cr_assert_eq(chmod(dir, 0777), 0);
	cr_assert_lt(accept_(&v, NULL, &why), 0);
	cr_assert_eq(why.reason, R(STATE));
	cr_assert_not_null(strstr(why.detail, "writable by group or others"), "%s", why.detail);
	cr_assert_lt(custode_bundle_floor_get(dir, "t/perm", &f, &why), 0);
	cr_assert_eq(chmod(dir, 0700), 0);
	if (geteuid() == 0) {
		cr_assert_eq(chown(dir, 65534, 65534), 0);
		cr_assert_lt(accept_(&v, NULL, &why), 0);
		cr_assert_eq(why.reason, R(STATE));
		cr_assert_not_null(strstr(why.detail, "owned by uid 65534"), "%s", why.detail);
		cr_assert_eq(chown(dir, 0, 0), 0);
	}
	cr_assert_eq(accept_(&v, NULL, &why), 0, "%s", why.detail);
}

Test(bundle_state, missing_dir_created_private)
{
	struct custode_bundle_info v = verified("t/new", 1, CONTENT_A);
	struct custode_bundle_floor f;
	struct custode_refusal why;
	struct stat st;
	char *sub;

	cr_assert_gt(asprintf(&sub, "%s/a/b", dir), 0);
	cr_assert_eq(custode_bundle_floor_get(sub, "t/new", &f, &why), 1);
	cr_assert_eq(custode_bundle_floor_check(sub, &v, &why), 0);
	cr_assert_eq(stat(sub, &st), -1, "a read-only check created the directory");
	cr_assert_eq(custode_bundle_accept(sub, &v, NULL, &why), 0, "%s", why.detail);
	cr_assert_eq(stat(sub, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0700);
	free(sub);
}

/* Policy names map to file names one-to-one and never leave the directory. */
Test(bundle_state, names_as_file_names)
{
	static const char *const names[] = {"..", ".", "a/b", "a.b", "a/../b", "/x", "-x", "a_b"};
	struct custode_refusal why;
	char path[600];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct custode_bundle_info v = verified(names[i], i + 1, CONTENT_A);
		cr_assert_eq(accept_(&v, NULL, &why), 0, "%s: %s", names[i], why.detail);
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		cr_assert_eq(floor_of(names[i]), i + 1, "%s", names[i]);
	snprintf(path, sizeof(path), "%s/...json", dir);
	cr_assert_eq(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/a%%..%%b.json", dir);
	cr_assert_eq(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/%%x.json", dir);
	cr_assert_eq(access(path, F_OK), 0);
	/* a name the policy schema refuses has no floor file at all */
	{
		struct custode_bundle_floor f;
		cr_assert_lt(custode_bundle_floor_get(dir, "A/B", &f, &why), 0);
		cr_assert_lt(custode_bundle_floor_get(dir, "", &f, &why), 0);
	}
}
