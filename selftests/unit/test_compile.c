// SPDX-License-Identifier: Apache-2.0
/*
 * Policy compilation: path normalisation and binding, rule sets, LPM keys,
 * and custode_fs_lookup checked against a bit-level model of the kernel's
 * LPM trie fed with the keys custode_rule_keys produces.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "custode/abi.h"
#include "policy/compile.h"

#define R CUSTODE_ACCESS_READ
#define W CUSTODE_ACCESS_WRITE
#define C CUSTODE_ACCESS_CREATE
#define D CUSTODE_ACCESS_DELETE
#define X CUSTODE_ACCESS_EXEC

static const struct custode_bindings binds = {.workspace = "/home/u/ws", .tmp = "/tmp/custode-x"};

/* ---- custode_path_normalize ---- */

static void norm_ok(const char *in, const char *want)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "%s", in);
	cr_assert_eq(custode_path_normalize(buf), 0, "normalize(\"%s\") failed", in);
	cr_assert_str_eq(buf, want, "normalize(\"%s\")", in);
}

static void norm_bad(const char *in)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "%s", in);
	cr_assert_eq(custode_path_normalize(buf), -EINVAL, "normalize(\"%s\") accepted as \"%s\"", in, buf);
}

Test(normalize, already_normal)
{
	norm_ok("/usr/bin", "/usr/bin");
	norm_ok("/a", "/a");
}

Test(normalize, root)
{
	norm_ok("/", "/");
	norm_ok("//", "/");
	norm_ok("///", "/");
	norm_ok("/.", "/");
	norm_ok("/./", "/");
	norm_ok("/././/./", "/");
}

Test(normalize, double_slashes)
{
	norm_ok("//usr", "/usr");
	norm_ok("/usr//bin", "/usr/bin");
	norm_ok("/usr///bin////cat", "/usr/bin/cat");
}

Test(normalize, dot_components)
{
	norm_ok("/./usr", "/usr");
	norm_ok("/usr/./bin", "/usr/bin");
	norm_ok("/usr/bin/.", "/usr/bin");
	norm_ok("/usr/././bin/./.", "/usr/bin");
}

Test(normalize, trailing_slash)
{
	norm_ok("/usr/", "/usr");
	norm_ok("/usr/bin//", "/usr/bin");
	norm_ok("/usr/bin/./", "/usr/bin");
}

Test(normalize, dot_names_are_names)
{
	norm_ok("/a/...", "/a/...");
	norm_ok("/...", "/...");
	norm_ok("/a/..b", "/a/..b");
	norm_ok("/a/b..", "/a/b..");
	norm_ok("/a/.hidden", "/a/.hidden");
	norm_ok("/a/.hidden/", "/a/.hidden");
	norm_ok("/.git/hooks", "/.git/hooks");
	norm_ok("/a/.../b", "/a/.../b");
}

Test(normalize, dotdot_refused)
{
	norm_bad("/..");
	norm_bad("/../etc");
	norm_bad("/a/..");
	norm_bad("/a/../b");
	norm_bad("/a/../");
	norm_bad("/a//..//b");
	norm_bad("/a/./../b");
}

Test(normalize, relative_refused)
{
	norm_bad("");
	norm_bad("usr");
	norm_bad("usr/bin");
	norm_bad("./usr");
	norm_bad("../usr");
	norm_bad(".");
	norm_bad("${workspace}");
}

/* ---- custode_path_bind ---- */

static void bind_ok(const char *in, const struct custode_bindings *b, const char *want)
{
	char out[512];
	struct custode_refusal why = {0};
	int err = custode_path_bind(in, b, out, sizeof(out), &why);

	cr_assert_eq(err, 0, "bind(\"%s\"): %d %s", in, err, why.detail);
	cr_assert_str_eq(out, want, "bind(\"%s\")", in);
}

static void bind_bad(const char *in, const struct custode_bindings *b, const char *in_detail)
{
	char out[512];
	struct custode_refusal why = {0};
	int err = custode_path_bind(in, b, out, sizeof(out), &why);

	cr_assert_eq(err, -EINVAL, "bind(\"%s\") gave %d", in, err);
	cr_assert_eq(why.reason, CUSTODE_REASON_POLICY_INVALID, "bind(\"%s\") reason %d", in, why.reason);
	if (in_detail)
		cr_assert_not_null(strstr(why.detail, in_detail), "detail \"%s\" lacks \"%s\"", why.detail, in_detail);
}

Test(bind, plain_path_unchanged)
{
	bind_ok("/usr/bin", &binds, "/usr/bin");
	bind_ok("/", &binds, "/");
}

Test(bind, workspace_and_tmp)
{
	bind_ok("${workspace}", &binds, "/home/u/ws");
	bind_ok("${workspace}/.git/hooks", &binds, "/home/u/ws/.git/hooks");
	bind_ok("${workspace}/", &binds, "/home/u/ws/");
	bind_ok("${tmp}", &binds, "/tmp/custode-x");
	bind_ok("${tmp}/a/b", &binds, "/tmp/custode-x/a/b");
}

Test(bind, unbound_variable)
{
	const struct custode_bindings no_tmp = {.workspace = "/w", .tmp = NULL};
	const struct custode_bindings no_ws = {.workspace = NULL, .tmp = "/t"};

	bind_bad("${tmp}/x", &no_tmp, "${tmp}");
	bind_bad("${workspace}", &no_ws, "${workspace}");
	bind_ok("${workspace}/x", &no_tmp, "/w/x");
	bind_ok("/plain", &no_ws, "/plain");
}

Test(bind, unknown_variable)
{
	bind_bad("${home}", &binds, NULL);
	bind_bad("${HOME}/x", &binds, NULL);
	bind_bad("${workspacex}", &binds, NULL);
	bind_bad("${workspace}x", &binds, NULL);
	bind_bad("${tmp", &binds, NULL);
	bind_bad("$HOME", &binds, NULL);
	bind_bad("${}", &binds, NULL);
}

Test(bind, variable_not_at_start)
{
	bind_bad("/a/${tmp}", &binds, "only at the start");
	bind_bad("/a${workspace}", &binds, "only at the start");
	bind_bad("${workspace}/${tmp}", &binds, "only at the start");
	bind_bad("${workspace}${tmp}", &binds, NULL);
}

Test(bind, result_too_long)
{
	struct custode_refusal why = {0};
	char out[32];

	/* "/tmp/custode-x" is 14 bytes: with "/abcdefghijklmnopq" 32, one more than fits */
	cr_assert_eq(custode_path_bind("${tmp}/abcdefghijklmnopq", &binds, out, sizeof(out), &why), -ENAMETOOLONG);
	cr_assert_eq(why.reason, CUSTODE_REASON_POLICY_PATH_TOO_LONG);
	/* exactly fitting: 31 bytes + NUL */
	cr_assert_eq(custode_path_bind("${tmp}/abcdefghijklmnop", &binds, out, sizeof(out), &why), 0);
	cr_assert_str_eq(out, "/tmp/custode-x/abcdefghijklmnop");
	/* plain paths are bounded too */
	cr_assert_eq(custode_path_bind("/012345678901234567890123456789", &binds, out, sizeof(out), &why), 0);
	cr_assert_eq(custode_path_bind("/0123456789012345678901234567890", &binds, out, sizeof(out), &why),
		     -ENAMETOOLONG);
	cr_assert_eq(why.reason, CUSTODE_REASON_POLICY_PATH_TOO_LONG);
}

/* ---- custode_policy_compile_fs ---- */

/* A policy holding only filesystem rules (what compile reads). */
struct fs_policy {
	struct custode_policy p;
	struct custode_fs_rule rules[64];
};

static void fsp_init(struct fs_policy *fp)
{
	memset(fp, 0, sizeof(*fp));
	fp->p.has_filesystem = true;
	fp->p.fs = fp->rules;
}

static void fsp_add(struct fs_policy *fp, const char *path, uint32_t allow)
{
	cr_assert_lt(fp->p.n_fs, 64);
	fp->rules[fp->p.n_fs].path = (char *)path;
	fp->rules[fp->p.n_fs++].allow = allow;
}

static void compile_ok(struct fs_policy *fp, struct custode_fs_ruleset *rs)
{
	struct custode_refusal why = {0};
	int err = custode_policy_compile_fs(&fp->p, &binds, 1, rs, &why);

	cr_assert_eq(err, 0, "compile: %d %s", err, why.detail);
}

/* The rule set must be untouched by a failed compile. */
static void compile_bad(struct fs_policy *fp, int want_err, int want_reason, const char *in_detail)
{
	struct custode_refusal why = {0};
	struct custode_compiled_rule marker;
	struct custode_fs_ruleset rs = {.rules = &marker, .n = 12345};
	int err = custode_policy_compile_fs(&fp->p, &binds, 1, &rs, &why);

	cr_assert_eq(err, want_err, "compile gave %d (%s)", err, why.detail);
	cr_assert_eq(why.reason, want_reason, "reason %d (%s)", why.reason, why.detail);
	cr_assert_eq(rs.rules, &marker);
	cr_assert_eq(rs.n, 12345);
	if (in_detail)
		cr_assert_not_null(strstr(why.detail, in_detail), "detail \"%s\" lacks \"%s\"", why.detail, in_detail);
}

Test(compile, empty_policy)
{
	struct fs_policy fp;
	struct custode_fs_ruleset rs;

	fsp_init(&fp);
	compile_ok(&fp, &rs);
	cr_assert_eq(rs.n, 0);
	cr_assert_eq(custode_fs_lookup(&rs, "/"), 0);
	cr_assert_eq(custode_fs_lookup(&rs, "/etc/passwd"), 0);
	custode_fs_ruleset_free(&rs);
	cr_assert_null(rs.rules);
	cr_assert_eq(rs.n, 0);
}

Test(compile, sorted_bound_and_normalised)
{
	struct fs_policy fp;
	struct custode_fs_ruleset rs;

	fsp_init(&fp);
	fsp_add(&fp, "/usr/", R | X);
	fsp_add(&fp, "${tmp}", R | W | C | D);
	fsp_add(&fp, "/etc", R);
	fsp_add(&fp, "${workspace}/./.git//hooks/", R);
	fsp_add(&fp, "/a/b", W);
	fsp_add(&fp, "/a", 0);
	compile_ok(&fp, &rs);
	cr_assert_eq(rs.n, 6);
	cr_assert_str_eq(rs.rules[0].path, "/a");
	cr_assert_eq(rs.rules[0].allow, 0);
	cr_assert_str_eq(rs.rules[1].path, "/a/b");
	cr_assert_eq(rs.rules[1].allow, W);
	cr_assert_str_eq(rs.rules[2].path, "/etc");
	cr_assert_str_eq(rs.rules[3].path, "/home/u/ws/.git/hooks");
	cr_assert_eq(rs.rules[3].allow, R);
	cr_assert_str_eq(rs.rules[4].path, "/tmp/custode-x");
	cr_assert_eq(rs.rules[4].allow, R | W | C | D);
	cr_assert_str_eq(rs.rules[5].path, "/usr");
	cr_assert_eq(rs.rules[5].allow, R | X);
	for (size_t i = 1; i < rs.n; i++)
		cr_assert_lt(strcmp(rs.rules[i - 1].path, rs.rules[i].path), 0);
	custode_fs_ruleset_free(&rs);
}

Test(compile, duplicates_intersect)
{
	struct fs_policy fp;
	struct custode_fs_ruleset rs;

	fsp_init(&fp);
	fsp_add(&fp, "/x", R | W | X);
	fsp_add(&fp, "/y", R);
	fsp_add(&fp, "/x/", R | X | C);
	fsp_add(&fp, "//x/.", X | R | D);
	/* ${workspace} bound onto a listed path: the narrower grant wins */
	fsp_add(&fp, "${workspace}", R | W | C | D);
	fsp_add(&fp, "/home/u/ws", R);
	compile_ok(&fp, &rs);
	cr_assert_eq(rs.n, 3);
	cr_assert_str_eq(rs.rules[0].path, "/home/u/ws");
	cr_assert_eq(rs.rules[0].allow, R);
	cr_assert_str_eq(rs.rules[1].path, "/x");
	cr_assert_eq(rs.rules[1].allow, R | X);
	cr_assert_str_eq(rs.rules[2].path, "/y");
	cr_assert_eq(rs.rules[2].allow, R);
	cr_assert_eq(custode_fs_lookup(&rs, "/x/f"), R | X);
	custode_fs_ruleset_free(&rs);
}

Test(compile, duplicate_with_empty_grant_denies)
{
	struct fs_policy fp;
	struct custode_fs_ruleset rs;

	fsp_init(&fp);
	fsp_add(&fp, "/etc/ssh", R);
	fsp_add(&fp, "/etc/ssh/", 0);
	compile_ok(&fp, &rs);
	cr_assert_eq(rs.n, 2, "the rule and the marker above it");
	cr_assert_str_eq(rs.rules[0].path, "/etc/ssh");
	cr_assert_eq(rs.rules[0].allow, 0);
	cr_assert(rs.rules[0].restricts);
	cr_assert(rs.rules[1].marker);
	custode_fs_ruleset_free(&rs);
}

/* A narrowing rule under a broader one: flags, markers, and the model's decisions. */
Test(compile, narrowing_rule_protects_the_path_above_it)
{
	struct fs_policy fp;
	struct custode_fs_ruleset rs;
	const struct custode_compiled_rule *ws = NULL, *hooks = NULL, *git = NULL;
	uint32_t rwcd = CUSTODE_ACCESS_READ | CUSTODE_ACCESS_WRITE | CUSTODE_ACCESS_CREATE | CUSTODE_ACCESS_DELETE;

	fsp_init(&fp);
	fsp_add(&fp, "/ws", rwcd);
	fsp_add(&fp, "/ws/.git/hooks", CUSTODE_ACCESS_READ);
	fsp_add(&fp, "/ws/.git/config", CUSTODE_ACCESS_READ);
	fsp_add(&fp, "/ws/src", rwcd | CUSTODE_ACCESS_EXEC); /* broader: not narrowing */
	compile_ok(&fp, &rs);
	for (size_t i = 0; i < rs.n; i++) {
		if (!strcmp(rs.rules[i].path, "/ws") && !rs.rules[i].marker)
			ws = &rs.rules[i];
		if (!strcmp(rs.rules[i].path, "/ws/.git/hooks"))
			hooks = &rs.rules[i];
		if (!strcmp(rs.rules[i].path, "/ws/.git")) {
			cr_assert_null(git, "one marker for /ws/.git, shared by hooks and config");
			git = &rs.rules[i];
		}
		if (!strcmp(rs.rules[i].path, "/ws/src"))
			cr_assert(!rs.rules[i].restricts && !(rs.rules[i].flags & CUSTODE_PATH_RULE_PROTECTS_BELOW));
	}
	cr_assert(ws && hooks && git);
	cr_assert(!ws->restricts && (ws->flags & CUSTODE_PATH_RULE_PROTECTS_BELOW));
	cr_assert(hooks->restricts && (hooks->flags & CUSTODE_PATH_RULE_PROTECTS_BELOW));
	cr_assert(git->marker && git->allow == rwcd && (git->flags & CUSTODE_PATH_RULE_PROTECTS_BELOW));
	/* a marker changes no decision */
	cr_assert_eq(custode_fs_lookup(&rs, "/ws/.git"), rwcd);
	cr_assert_eq(custode_fs_lookup(&rs, "/ws/.git/objects/ab"), rwcd);
	cr_assert_eq(custode_fs_lookup(&rs, "/ws/.git/hooks/pre-commit"), CUSTODE_ACCESS_READ);
	{
		struct custode_path_key keys[2];
		cr_assert_eq(custode_rule_keys(git, 9, keys), 1, "a marker is one exact key");
		cr_assert_str_eq((char *)keys[0].path, "/ws/.git");
	}
	custode_fs_ruleset_free(&rs);
}

/* Rule paths that exist are resolved to identities; narrowing ones restrict by identity. */
Test(compile, identities_of_existing_rule_paths)
{
	char dir[] = "/tmp/custode-id-XXXXXX", sub[64], missing[80];
	struct fs_policy fp;
	struct custode_fs_ruleset rs;
	struct stat st_dir, st_sub;
	bool saw_dir = false, saw_sub = false;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/secret", dir);
	snprintf(missing, sizeof(missing), "%s/not-there", dir);
	cr_assert_eq(mkdir(sub, 0700), 0);
	stat(dir, &st_dir);
	stat(sub, &st_sub);
	fsp_init(&fp);
	fsp_add(&fp, dir, CUSTODE_ACCESS_READ | CUSTODE_ACCESS_WRITE);
	fsp_add(&fp, sub, 0);
	fsp_add(&fp, missing, 0);
	compile_ok(&fp, &rs);
	cr_assert_eq(rs.n_ids, 2, "the missing path has no identity");
	for (size_t i = 0; i < rs.n_ids; i++) {
		cr_assert_eq(rs.ids[i].key.ruleset, 1);
		if (rs.ids[i].key.ino == st_dir.st_ino) {
			saw_dir = true;
			cr_assert_eq(rs.ids[i].key.dev, custode_kernel_dev(st_dir.st_dev));
			cr_assert_eq(rs.ids[i].val.flags, 0, "the broad rule does not restrict");
		}
		if (rs.ids[i].key.ino == st_sub.st_ino) {
			saw_sub = true;
			cr_assert_eq(rs.ids[i].val.allow, 0);
			cr_assert_eq(rs.ids[i].val.flags, CUSTODE_IDENTITY_RESTRICTS);
		}
	}
	cr_assert(saw_dir && saw_sub);
	custode_fs_ruleset_free(&rs);
	rmdir(sub);
	rmdir(dir);
}

Test(compile, kernel_dev_encoding)
{
	cr_assert_eq(custode_kernel_dev(makedev(8, 1)), (8ull << 20) | 1);
	cr_assert_eq(custode_kernel_dev(makedev(259, 70000)), (259ull << 20) | 70000);
}

static char *path_of_len(size_t len)
{
	char *p = malloc(len + 1);

	p[0] = '/';
	for (size_t i = 1; i < len; i++)
		p[i] = (char)('a' + i % 26);
	p[len] = 0;
	return p;
}

Test(compile, longest_allowed_rule)
{
	struct fs_policy fp;
	struct custode_fs_ruleset rs;
	char *p = path_of_len(CUSTODE_RULE_PATH_MAX - 1);

	fsp_init(&fp);
	fsp_add(&fp, p, R);
	compile_ok(&fp, &rs);
	cr_assert_eq(rs.n, 1);
	cr_assert_str_eq(rs.rules[0].path, p);
	cr_assert_eq(custode_fs_lookup(&rs, p), R);
	custode_fs_ruleset_free(&rs);
	free(p);
}

Test(compile, rule_too_long_refused)
{
	struct fs_policy fp;
	char *p = path_of_len(CUSTODE_RULE_PATH_MAX);

	fsp_init(&fp);
	fsp_add(&fp, "/usr", R);
	fsp_add(&fp, p, R);
	compile_bad(&fp, -ENAMETOOLONG, CUSTODE_REASON_POLICY_PATH_TOO_LONG, "content.filesystem[1].path");
	free(p);
}

Test(compile, length_is_counted_after_binding_and_normalising)
{
	struct fs_policy fp;
	struct custode_fs_ruleset rs;
	/* ${tmp} is 14 bytes: 14 + 1 + 232 = 247 once bound */
	char tail[300], *longer;

	memset(tail, 'b', 232);
	tail[232] = 0;
	char *in = malloc(400);
	snprintf(in, 400, "${tmp}/%s", tail);
	fsp_init(&fp);
	fsp_add(&fp, in, R);
	compile_ok(&fp, &rs);
	cr_assert_eq(strlen(rs.rules[0].path), CUSTODE_RULE_PATH_MAX - 1);
	custode_fs_ruleset_free(&rs);

	/* one more byte once bound: refused */
	snprintf(in, 400, "${tmp}/%sb", tail);
	fsp_init(&fp);
	fsp_add(&fp, in, R);
	compile_bad(&fp, -ENAMETOOLONG, CUSTODE_REASON_POLICY_PATH_TOO_LONG, NULL);

	/* 248 bytes as written, 247 after dropping the trailing '/' */
	longer = path_of_len(CUSTODE_RULE_PATH_MAX - 1);
	snprintf(in, 400, "%s/", longer);
	fsp_init(&fp);
	fsp_add(&fp, in, R);
	compile_ok(&fp, &rs);
	cr_assert_str_eq(rs.rules[0].path, longer);
	custode_fs_ruleset_free(&rs);
	free(longer);
	free(in);
}

Test(compile, dotdot_and_relative_refused)
{
	struct fs_policy fp;

	fsp_init(&fp);
	fsp_add(&fp, "/usr", R);
	fsp_add(&fp, "/usr/../etc", R);
	compile_bad(&fp, -EINVAL, CUSTODE_REASON_POLICY_INVALID, "content.filesystem[1].path");

	fsp_init(&fp);
	fsp_add(&fp, "usr", R);
	compile_bad(&fp, -EINVAL, CUSTODE_REASON_POLICY_INVALID, "content.filesystem[0].path");

	fsp_init(&fp);
	fsp_add(&fp, "${workspace}/../x", R);
	compile_bad(&fp, -EINVAL, CUSTODE_REASON_POLICY_INVALID, NULL);
}

Test(compile, bad_variables_refused)
{
	struct fs_policy fp;

	fsp_init(&fp);
	fsp_add(&fp, "${home}/.ssh", R);
	compile_bad(&fp, -EINVAL, CUSTODE_REASON_POLICY_INVALID, NULL);

	fsp_init(&fp);
	fsp_add(&fp, "/x/${tmp}", R);
	compile_bad(&fp, -EINVAL, CUSTODE_REASON_POLICY_INVALID, NULL);
}

Test(compile, unbound_workspace_refused)
{
	const struct custode_bindings b = {.workspace = NULL, .tmp = "/t"};
	struct custode_refusal why = {0};
	struct custode_fs_ruleset rs = {0};
	struct fs_policy fp;

	fsp_init(&fp);
	fsp_add(&fp, "${workspace}", R);
	cr_assert_eq(custode_policy_compile_fs(&fp.p, &b, 1, &rs, &why), -EINVAL);
	cr_assert_eq(why.reason, CUSTODE_REASON_POLICY_INVALID);
	cr_assert_null(rs.rules);
}

/* ---- custode_rule_keys ---- */

static const uint8_t zeros[CUSTODE_RULE_PATH_MAX];

static struct custode_compiled_rule rule(const char *path, uint32_t allow)
{
	struct custode_compiled_rule r;

	memset(&r, 0, sizeof(r));
	snprintf(r.path, sizeof(r.path), "%s", path);
	r.allow = allow;
	return r;
}

Test(rule_keys, root_is_one_key)
{
	struct custode_compiled_rule r = rule("/", R);
	struct custode_path_key k[2];

	memset(k, 0xee, sizeof(k));
	cr_assert_eq(custode_rule_keys(&r, 7, k), 1);
	cr_assert_eq(k[0].prefixlen, 32 + 8);
	cr_assert_eq(k[0].ruleset, 7);
	cr_assert_eq(k[0].path[0], '/');
	/* bits past the prefix are zero, so equal rules give equal keys */
	cr_assert_arr_eq(k[0].path + 1, zeros, CUSTODE_RULE_PATH_MAX - 1);
}

Test(rule_keys, directory_rule_is_exact_and_below)
{
	struct custode_compiled_rule r = rule("/usr", R | X);
	struct custode_path_key k[2];

	memset(k, 0xee, sizeof(k));
	cr_assert_eq(custode_rule_keys(&r, 0xdeadbeef, k), 2);
	cr_assert_eq(k[0].ruleset, 0xdeadbeef);
	cr_assert_eq(k[1].ruleset, 0xdeadbeef);
	cr_assert_eq(k[0].prefixlen, 32 + 8 * 5);
	cr_assert_eq(k[1].prefixlen, 32 + 8 * 5);
	cr_assert_arr_eq(k[0].path, "/usr\0", 5);
	cr_assert_arr_eq(k[1].path, "/usr/", 5);
	cr_assert_arr_eq(k[0].path + 5, zeros, CUSTODE_RULE_PATH_MAX - 5);
	cr_assert_arr_eq(k[1].path + 5, zeros, CUSTODE_RULE_PATH_MAX - 5);
}

Test(rule_keys, longest_rule_fills_the_key)
{
	char *p = path_of_len(CUSTODE_RULE_PATH_MAX - 1);
	struct custode_compiled_rule r = rule(p, R);
	struct custode_path_key k[2];

	cr_assert_eq(custode_rule_keys(&r, 1, k), 2);
	cr_assert_eq(k[0].prefixlen, 32 + 8 * CUSTODE_RULE_PATH_MAX);
	cr_assert_eq(k[1].prefixlen, 32 + 8 * CUSTODE_RULE_PATH_MAX);
	cr_assert_arr_eq(k[0].path, p, CUSTODE_RULE_PATH_MAX - 1);
	cr_assert_eq(k[0].path[CUSTODE_RULE_PATH_MAX - 1], 0);
	cr_assert_eq(k[1].path[CUSTODE_RULE_PATH_MAX - 1], '/');
	free(p);
}

/* ---- custode_fs_lookup ---- */

static void ruleset_of(struct custode_fs_ruleset *rs, struct custode_compiled_rule *storage, size_t n)
{
	rs->rules = storage;
	rs->n = n;
}

Test(lookup, longest_prefix_wins)
{
	struct custode_compiled_rule rules[] = {rule("/etc", R), rule("/etc/ssh", 0), rule("/etc/ssh/ssh_config", R | W),
						rule("/usr", R | X)};
	struct custode_fs_ruleset rs;

	ruleset_of(&rs, rules, 4);
	cr_assert_eq(custode_fs_lookup(&rs, "/etc/passwd"), R);
	cr_assert_eq(custode_fs_lookup(&rs, "/etc/ssh/sshd_config"), 0);
	cr_assert_eq(custode_fs_lookup(&rs, "/etc/ssh/ssh_config"), R | W);
	cr_assert_eq(custode_fs_lookup(&rs, "/etc/ssh/ssh_config/x"), R | W);
	cr_assert_eq(custode_fs_lookup(&rs, "/etc/ssh"), 0);
	cr_assert_eq(custode_fs_lookup(&rs, "/usr/bin/cat"), R | X);
}

Test(lookup, order_of_rules_does_not_matter)
{
	struct custode_compiled_rule rules[] = {rule("/etc/ssh", 0), rule("/usr", R | X), rule("/etc", R)};
	struct custode_fs_ruleset rs;

	ruleset_of(&rs, rules, 3);
	cr_assert_eq(custode_fs_lookup(&rs, "/etc/ssh/x"), 0);
	cr_assert_eq(custode_fs_lookup(&rs, "/etc/x"), R);
}

Test(lookup, sibling_with_common_prefix_does_not_match)
{
	struct custode_compiled_rule rules[] = {rule("/usr", R | X), rule("/etc/ssh", R)};
	struct custode_fs_ruleset rs;

	ruleset_of(&rs, rules, 2);
	cr_assert_eq(custode_fs_lookup(&rs, "/usrx"), 0);
	cr_assert_eq(custode_fs_lookup(&rs, "/usrx/bin"), 0);
	cr_assert_eq(custode_fs_lookup(&rs, "/us"), 0);
	cr_assert_eq(custode_fs_lookup(&rs, "/etc/sshd_config"), 0);
	cr_assert_eq(custode_fs_lookup(&rs, "/etc/ssh_config"), 0);
}

Test(lookup, rule_matches_itself_and_below)
{
	struct custode_compiled_rule rules[] = {rule("/usr", R | X)};
	struct custode_fs_ruleset rs;

	ruleset_of(&rs, rules, 1);
	cr_assert_eq(custode_fs_lookup(&rs, "/usr"), R | X);
	cr_assert_eq(custode_fs_lookup(&rs, "/usr/"), R | X);
	cr_assert_eq(custode_fs_lookup(&rs, "/usr/bin"), R | X);
	cr_assert_eq(custode_fs_lookup(&rs, "/usr/lib/x86_64-linux-gnu/libc.so.6"), R | X);
}

Test(lookup, no_match_is_nothing)
{
	struct custode_compiled_rule rules[] = {rule("/usr", R | X), rule("/etc", R)};
	struct custode_fs_ruleset rs;

	ruleset_of(&rs, rules, 2);
	cr_assert_eq(custode_fs_lookup(&rs, "/"), 0);
	cr_assert_eq(custode_fs_lookup(&rs, "/home/u/.ssh/id_ed25519"), 0);
	cr_assert_eq(custode_fs_lookup(&rs, "/proc/1/environ"), 0);
	cr_assert_eq(custode_fs_lookup(&rs, ""), 0);
	cr_assert_eq(custode_fs_lookup(&rs, "usr"), 0);
}

Test(lookup, root_rule_matches_everything)
{
	struct custode_compiled_rule rules[] = {rule("/", R), rule("/usr", R | X), rule("/etc/shadow", 0)};
	struct custode_fs_ruleset rs;

	ruleset_of(&rs, rules, 3);
	cr_assert_eq(custode_fs_lookup(&rs, "/"), R);
	cr_assert_eq(custode_fs_lookup(&rs, "/home/u"), R);
	cr_assert_eq(custode_fs_lookup(&rs, "/usrx"), R);
	cr_assert_eq(custode_fs_lookup(&rs, "/usr/bin"), R | X);
	cr_assert_eq(custode_fs_lookup(&rs, "/etc/shadow"), 0);
	cr_assert_eq(custode_fs_lookup(&rs, "/etc/shadow-"), R);
}

/* ---- the LPM model ---- */

/*
 * A tiny model of BPF_MAP_TYPE_LPM_TRIE: an entry matches a lookup key when
 * its prefixlen is at most the lookup's and its first prefixlen bits (of
 * the data after the prefixlen field, MSB first, byte by byte) equal the
 * lookup's. The longest matching entry wins.
 */
struct lpm_entry {
	struct custode_path_key key;
	uint32_t allow;
	uint32_t flags;
};

struct lpm {
	struct lpm_entry *e;
	size_t n, cap;
};

static const uint8_t *key_data(const struct custode_path_key *k)
{
	return (const uint8_t *)k + offsetof(struct custode_path_key, ruleset);
}

static bool lpm_matches(const struct custode_path_key *entry, const struct custode_path_key *look)
{
	const uint8_t *a = key_data(entry), *b = key_data(look);

	if (entry->prefixlen > look->prefixlen)
		return false;
	for (uint32_t bit = 0; bit < entry->prefixlen; bit++) {
		uint8_t m = (uint8_t)(0x80u >> (bit % 8));
		if ((a[bit / 8] & m) != (b[bit / 8] & m))
			return false;
	}
	return true;
}

static void lpm_insert(struct lpm *t, const struct custode_path_key *k, const struct custode_path_rule *v)
{
	/* the trie holds one value per (prefixlen, prefix): an update replaces */
	for (size_t i = 0; i < t->n; i++) {
		if (t->e[i].key.prefixlen == k->prefixlen && lpm_matches(&t->e[i].key, k)) {
			cr_assert_fail("two rules produced the same key (prefixlen %u)", k->prefixlen);
		}
	}
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->e = realloc(t->e, t->cap * sizeof(*t->e));
		cr_assert_not_null(t->e);
	}
	t->e[t->n].key = *k;
	t->e[t->n].flags = v->flags;
	t->e[t->n++].allow = v->allow;
}

static void lpm_add_ruleset(struct lpm *t, const struct custode_fs_ruleset *rs, uint32_t ruleset)
{
	for (size_t i = 0; i < rs->n; i++) {
		struct custode_path_key k[2];
		struct custode_path_rule v[2];
		int n = custode_rule_entries(&rs->rules[i], ruleset, k, v);

		cr_assert(n == 1 || n == 2);
		for (int j = 0; j < n; j++) {
			cr_assert_leq(k[j].prefixlen, 32 + 8 * CUSTODE_RULE_PATH_MAX);
			cr_assert_geq(k[j].prefixlen, 32 + 8);
			cr_assert_eq(v[j].allow, rs->rules[i].allow);
			lpm_insert(t, &k[j], &v[j]);
		}
	}
}

/* The longest entry matching the first len bytes of path (truncated to the key) in ruleset. */
static const struct lpm_entry *lpm_find(const struct lpm *t, uint32_t ruleset, const char *path, size_t len)
{
	struct custode_path_key look;
	size_t n = len < CUSTODE_RULE_PATH_MAX ? len : CUSTODE_RULE_PATH_MAX;
	const struct lpm_entry *best = NULL;

	memset(&look, 0, sizeof(look));
	look.ruleset = ruleset;
	memcpy(look.path, path, n);
	look.prefixlen = (uint32_t)(32 + 8 * n);
	for (size_t i = 0; i < t->n; i++)
		if (lpm_matches(&t->e[i].key, &look) && (!best || t->e[i].key.prefixlen > best->key.prefixlen))
			best = &t->e[i];
	return best;
}

/* What the engine looks up: ruleset + path + NUL, truncated to the key. */
static uint32_t lpm_lookup(const struct lpm *t, uint32_t ruleset, const char *path, bool *found)
{
	const struct lpm_entry *best = lpm_find(t, ruleset, path, strlen(path) + 1);

	*found = best != NULL;
	return best ? best->allow : 0;
}

/* Deterministic xorshift, so a failure reproduces. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

static struct custode_fs_ruleset compile_paths(const char *const *paths, size_t n, const char *extra)
{
	struct fs_policy fp;
	struct custode_fs_ruleset rs;

	fsp_init(&fp);
	for (size_t i = 0; i < n; i++)
		fsp_add(&fp, paths[i], (uint32_t)(i % 31) + 1); /* distinct, never 0: 0 is "no rule" */
	if (extra)
		fsp_add(&fp, extra, 31);
	compile_ok(&fp, &rs);
	return rs;
}

static const char *const set_a[] = {
	"/",
	"/etc",
	"/etc/ssh",
	"/etc/sshd_config",
	"/etc/ssl/private",
	"/usr",
	"/usr/lib",
	"/usr/lib64",
	"/home/u/ws",
	"/home/u/ws/.git/hooks",
	"/home/u/wsx",
	"/tmp/custode-x",
	"/a/b/c",
	"/a/bb",
	"/dev/null",
};

static const char *const set_b[] = {
	"/usr",
	"/etc/ssh",
	"/opt/tool",
	"/home/u/ws/.git",
	"/var/lib/x",
};

static const char *const components[] = {
	"etc", "ssh", "sshd_config", "ssh_config", "ssl", "private", "usr", "lib", "lib64", "libx", "home",
	"u", "ws", "wsx", ".git", "hooks", "tmp", "custode-x", "a", "b", "bb", "c", "dev", "null", "opt",
	"tool", "var", "x", "...", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
};

/* Append random components to prefix (no trailing '/') until about `want` bytes. */
static void random_path(char *out, size_t outlen, const char *prefix, size_t want)
{
	size_t len;

	snprintf(out, outlen, "%s", prefix);
	len = strlen(out);
	while (len < want && len + 64 < outlen) {
		const char *c = components[rnd(sizeof(components) / sizeof(components[0]))];
		len += (size_t)snprintf(out + len, outlen - len, "%s%s", (len == 1 && out[0] == '/') ? "" : "/", c);
	}
	if (rnd(8) == 0 && len + 1 < outlen) { /* sometimes a trailing '/' */
		out[len++] = '/';
		out[len] = 0;
	}
}

static void check_agree(const struct lpm *t, uint32_t ruleset, const struct custode_fs_ruleset *rs, const char *path,
			unsigned *hits)
{
	bool found;
	uint32_t model = lpm_lookup(t, ruleset, path, &found);
	uint32_t lookup = rs ? custode_fs_lookup(rs, path) : 0;

	cr_assert_eq(model, lookup, "ruleset %u, path \"%s\" (%zu bytes): trie model %u, custode_fs_lookup %u", ruleset,
		     path, strlen(path), model, lookup);
	if (found)
		(*hits)++;
}

Test(lpm_model, agrees_with_fs_lookup)
{
	char *r247 = path_of_len(CUSTODE_RULE_PATH_MAX - 1), *r246 = path_of_len(CUSTODE_RULE_PATH_MAX - 2);
	struct custode_fs_ruleset a = compile_paths(set_a, sizeof(set_a) / sizeof(set_a[0]), r247);
	struct custode_fs_ruleset b = compile_paths(set_b, sizeof(set_b) / sizeof(set_b[0]), r246);
	struct lpm t = {0};
	char path[1200];
	unsigned hits = 0, checked = 0;

	lpm_add_ruleset(&t, &a, 1);
	lpm_add_ruleset(&t, &b, 2);
	cr_assert_eq(t.n, (a.n - 1) * 2 + 1 + b.n * 2); /* set_a has the root rule */

	/* every rule itself, below it, and its siblings */
	for (int s = 0; s < 2; s++) {
		const struct custode_fs_ruleset *rs = s ? &b : &a;
		for (size_t i = 0; i < rs->n; i++) {
			static const char *const suffix[] = {"", "/", "x", "/x", "-", "_", ".", "/.", "//", "/a/b/c"};
			for (size_t j = 0; j < sizeof(suffix) / sizeof(suffix[0]); j++) {
				snprintf(path, sizeof(path), "%s%s", rs->rules[i].path, suffix[j]);
				for (uint32_t set = 1; set <= 3; set++) {
					check_agree(&t, set, set == 1 ? &a : set == 2 ? &b : NULL, path, &hits);
					checked++;
				}
			}
			/* a strict prefix of the rule */
			snprintf(path, sizeof(path), "%.*s", (int)strlen(rs->rules[i].path) - 1, rs->rules[i].path);
			check_agree(&t, s + 1, rs, path, &hits);
		}
	}

	/* random paths, short and past the key length */
	for (int i = 0; i < 600; i++) {
		size_t want = i % 3 == 0 ? 200 + rnd(600) : rnd(80);
		const char *prefix = i % 5 == 0 ? r247 : i % 7 == 0 ? r246 : "/";

		random_path(path, sizeof(path), prefix, want);
		check_agree(&t, 1, &a, path, &hits);
		check_agree(&t, 2, &b, path, &hits);
		check_agree(&t, 3, NULL, path, &hits);
		checked += 3;
	}

	/* paths around the 248-byte key boundary under the longest rules */
	for (size_t extra = 0; extra < 6; extra++) {
		char tail[8] = "/xxxxx";
		tail[extra] = 0;
		snprintf(path, sizeof(path), "%s%s", r247, tail);
		check_agree(&t, 1, &a, path, &hits);
		snprintf(path, sizeof(path), "%s%s", r246, tail);
		check_agree(&t, 2, &b, path, &hits);
		snprintf(path, sizeof(path), "%sy%s", r247, tail);
		check_agree(&t, 1, &a, path, &hits);
		checked += 3;
	}

	/* the comparison is not vacuous: many lookups matched a rule, and ruleset 3 matched none */
	cr_assert_gt(checked, 1000);
	cr_assert_gt(hits, 500);
	free(t.e);
	custode_fs_ruleset_free(&a);
	custode_fs_ruleset_free(&b);
	free(r247);
	free(r246);
}

Test(lpm_model, rulesets_do_not_see_each_other)
{
	static const char *const one[] = {"/"};
	static const char *const two[] = {"/usr"};
	struct custode_fs_ruleset a = compile_paths(one, 1, NULL), b = compile_paths(two, 1, NULL);
	struct lpm t = {0};
	bool found;

	lpm_add_ruleset(&t, &a, 1);
	lpm_add_ruleset(&t, &b, 0x100); /* differs from 1 only in another byte */
	cr_assert_eq(lpm_lookup(&t, 1, "/etc/passwd", &found), 1);
	cr_assert(found);
	cr_assert_eq(lpm_lookup(&t, 0x100, "/etc/passwd", &found), 0);
	cr_assert_not(found);
	cr_assert_eq(lpm_lookup(&t, 0x100, "/usr/bin", &found), 1);
	cr_assert(found);
	cr_assert_eq(lpm_lookup(&t, 0x101, "/usr/bin", &found), 0);
	cr_assert_not(found);
	free(t.e);
	custode_fs_ruleset_free(&a);
	custode_fs_ruleset_free(&b);
}

/*
 * What the engine's directory cache (bpf/file.bpf.c, dir_cache) relies on:
 * when the entry matching "D/" carries CUSTODE_PATH_RULE_NOTHING_BELOW,
 * every "D/name" gets that entry's classes, whatever the name. Checked on
 * the rule sets above (narrowing rules, markers, the root rule, rules at the
 * key's length) for directories at and around every rule and random ones.
 */
static void check_dir_decides(const struct lpm *t, uint32_t ruleset, const char *dir, unsigned *leaves, unsigned *others)
{
	static const char *const names[] = {"x", ".git", "hooks", "ssh", "sshd_config", "private", "b", "bb", "c",
					    "lib", "lib64", "ws", "wsx", "null", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
	char d[1200], path[1400];
	size_t dlen;
	const struct lpm_entry *e;

	snprintf(d, sizeof(d), "%s", dir);
	dlen = strlen(d);
	if (dlen > 1 && d[dlen - 1] == '/')
		d[--dlen] = 0;
	/* "D/" as the engine looks it up: the path up to and with the '/' before the name */
	snprintf(path, sizeof(path), "%s/", dlen == 1 && d[0] == '/' ? "" : d);
	e = lpm_find(t, ruleset, path, strlen(path));
	if (!e || !(e->flags & CUSTODE_PATH_RULE_NOTHING_BELOW)) {
		(*others)++;
		return;
	}
	(*leaves)++;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		bool found;
		uint32_t allow;

		snprintf(path, sizeof(path), "%s/%s", dlen == 1 && d[0] == '/' ? "" : d, names[i]);
		allow = lpm_lookup(t, ruleset, path, &found);
		cr_assert(found && allow == e->allow, "ruleset %u: \"%s/\" has nothing below (classes %u) but \"%s\" gets %u",
			  ruleset, d, e->allow, path, allow);
	}
}

Test(lpm_model, nothing_below_means_every_name_alike)
{
	char *r247 = path_of_len(CUSTODE_RULE_PATH_MAX - 1), *r246 = path_of_len(CUSTODE_RULE_PATH_MAX - 2);
	struct custode_fs_ruleset a = compile_paths(set_a, sizeof(set_a) / sizeof(set_a[0]), r247);
	struct custode_fs_ruleset b = compile_paths(set_b, sizeof(set_b) / sizeof(set_b[0]), r246);
	struct lpm t = {0};
	char path[1200];
	unsigned leaves = 0, others = 0;

	lpm_add_ruleset(&t, &a, 1);
	lpm_add_ruleset(&t, &b, 2);
	for (int s = 0; s < 2; s++) {
		const struct custode_fs_ruleset *rs = s ? &b : &a;
		for (size_t i = 0; i < rs->n; i++) {
			static const char *const suffix[] = {"", "/x", "/a/b", "/.git", "/ssh"};
			for (size_t j = 0; j < sizeof(suffix) / sizeof(suffix[0]); j++) {
				snprintf(path, sizeof(path), "%s%s", rs->rules[i].path, suffix[j]);
				check_dir_decides(&t, (uint32_t)s + 1, path, &leaves, &others);
			}
			/* the rule's parent directory */
			snprintf(path, sizeof(path), "%s", rs->rules[i].path);
			if (strrchr(path, '/') && strrchr(path, '/') != path)
				*strrchr(path, '/') = 0;
			check_dir_decides(&t, (uint32_t)s + 1, path, &leaves, &others);
		}
	}
	for (int i = 0; i < 400; i++) {
		random_path(path, sizeof(path), i % 5 == 0 ? r247 : "/", i % 4 == 0 ? 200 + rnd(400) : rnd(60));
		check_dir_decides(&t, 1, path, &leaves, &others);
		check_dir_decides(&t, 2, path, &leaves, &others);
	}
	/* both kinds occur: directories decided once, and ones whose names matter */
	cr_assert_gt(leaves, 100);
	cr_assert_gt(others, 50);
	free(t.e);
	custode_fs_ruleset_free(&a);
	custode_fs_ruleset_free(&b);
	free(r247);
	free(r246);
}

Test(compile, nothing_below_only_on_rules_with_nothing_below)
{
	static const char *const paths[] = {"/", "/usr", "/home/u/ws", "/home/u/ws/.git/hooks", "/home/u/wsx"};
	struct custode_fs_ruleset rs = compile_paths(paths, sizeof(paths) / sizeof(paths[0]), NULL);
	static const struct {
		const char *path;
		bool below_flag;
	} want[] = {{"/", false}, {"/usr", true}, {"/home/u/ws", false}, {"/home/u/ws/.git/hooks", true},
		    {"/home/u/wsx", true}};
	size_t seen = 0;

	for (size_t i = 0; i < rs.n; i++) {
		struct custode_path_key k[2];
		struct custode_path_rule v[2];
		int n = custode_rule_entries(&rs.rules[i], 1, k, v);

		if (rs.rules[i].marker) {
			cr_assert_eq(n, 1);
			cr_assert_not(v[0].flags & CUSTODE_PATH_RULE_NOTHING_BELOW, "marker %s", rs.rules[i].path);
			continue;
		}
		for (size_t w = 0; w < sizeof(want) / sizeof(want[0]); w++) {
			if (strcmp(want[w].path, rs.rules[i].path))
				continue;
			seen++;
			/* the exact key "D\0" never carries it, the "D/" key does when nothing lies below */
			if (n == 2)
				cr_assert_not(v[0].flags & CUSTODE_PATH_RULE_NOTHING_BELOW, "%s exact key", want[w].path);
			cr_assert_eq(!!(v[n - 1].flags & CUSTODE_PATH_RULE_NOTHING_BELOW), want[w].below_flag, "%s",
				     want[w].path);
		}
	}
	cr_assert_eq(seen, sizeof(want) / sizeof(want[0]));
	custode_fs_ruleset_free(&rs);
}

Test(lpm_model, long_path_under_long_rule)
{
	char *r = path_of_len(CUSTODE_RULE_PATH_MAX - 1);
	const char *rules[] = {"/"};
	struct custode_fs_ruleset rs = compile_paths(rules, 1, r);
	struct lpm t = {0};
	char path[2048];
	bool found;

	lpm_add_ruleset(&t, &rs, 9);
	/* 247 + "/" + 1000 bytes: the key holds only the first 248, which end in the rule's '/' */
	snprintf(path, sizeof(path), "%s/%01000d", r, 0);
	cr_assert_eq(lpm_lookup(&t, 9, path, &found), 31);
	cr_assert_eq(custode_fs_lookup(&rs, path), 31);
	/* a sibling that is longer than the key: only the root rule matches */
	snprintf(path, sizeof(path), "%sz/%01000d", r, 0);
	cr_assert_eq(lpm_lookup(&t, 9, path, &found), 1);
	cr_assert_eq(custode_fs_lookup(&rs, path), 1);
	free(t.e);
	free(r);
	custode_fs_ruleset_free(&rs);
}
