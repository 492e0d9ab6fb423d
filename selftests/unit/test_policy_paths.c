// SPDX-License-Identifier: Apache-2.0
/*
 * Filesystem rule paths are checked when the policy is parsed, by the check a
 * run's binding applies (custode_rule_path_check): a document `bundle sign`
 * and `bundle verify` accept is one a run accepts (issue 16).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <criterion/criterion.h>

#include "policy/compile.h"
#include "policy/policy.h"

/* A document with one filesystem rule for path (JSON-escaped already). */
static int parse_path(const char *path, struct custode_refusal *why)
{
	struct custode_policy *p = NULL;
	char doc[512];
	int err;

	snprintf(doc, sizeof(doc),
		 "{\"schema\":\"custode.policy/v1\",\"name\":\"t\",\"version\":1,"
		 "\"content\":{\"filesystem\":[{\"path\":\"/usr\",\"allow\":[\"read\"]},{\"path\":\"%s\",\"allow\":[]}]}}",
		 path);
	err = custode_policy_parse(doc, strlen(doc), &p, why);
	custode_policy_free(p);
	return err;
}

static void path_refused(const char *path, const char *in_detail)
{
	struct custode_refusal why = {0};

	cr_assert_eq(parse_path(path, &why), -EINVAL, "\"%s\" parsed", path);
	cr_assert_eq(why.reason, CUSTODE_REASON_POLICY_INVALID, "\"%s\": reason %d", path, why.reason);
	cr_assert(!strncmp(why.detail, "content.filesystem[1].path: ", 28), "\"%s\": detail \"%s\"", path, why.detail);
	cr_assert_not_null(strstr(why.detail, in_detail), "\"%s\": detail \"%s\" lacks \"%s\"", path, why.detail,
			   in_detail);
}

static void path_accepted(const char *path)
{
	struct custode_refusal why = {0};

	cr_assert_eq(parse_path(path, &why), 0, "\"%s\": %s", path, why.detail);
}

Test(policy_paths, relative_refused)
{
	path_refused("etc", "must be absolute");
	path_refused("./etc", "must be absolute");
	path_refused("~/x", "must be absolute");
}

Test(policy_paths, dotdot_refused)
{
	path_refused("${workspace}/../etc", "\"..\"");
	path_refused("/usr/../etc", "\"..\"");
	path_refused("/usr/..", "\"..\"");
	path_refused("${tmp}/a/../../etc", "\"..\"");
}

Test(policy_paths, unknown_variables_refused)
{
	path_refused("${home}/x", "unknown variable");
	path_refused("${HOME}", "unknown variable");
	path_refused("$HOME/x", "unknown variable");
	path_refused("${workspace}x", "unknown variable");
	path_refused("${tmp", "unknown variable");
}

Test(policy_paths, variables_only_at_the_start)
{
	path_refused("/a/${tmp}", "only at the start");
	path_refused("${workspace}/${tmp}", "only at the start");
}

Test(policy_paths, what_a_run_binds_is_accepted)
{
	path_accepted("/");
	path_accepted("/usr/.../x");
	path_accepted("/a/..b/c..");
	path_accepted("${workspace}");
	path_accepted("${workspace}/.git/hooks");
	path_accepted("${tmp}/");
	path_accepted("//usr/./bin/");
}

/* Whatever the parser accepts, binding accepts: the two apply one check. */
Test(policy_paths, parser_and_binding_agree)
{
	static const char *const paths[] = {"etc", "${workspace}/../etc", "${home}/x", "/a/${tmp}", "${workspace}",
					    "/usr", "${tmp}/x", "/x/..", "$", "${}"};
	const struct custode_bindings b = {.workspace = "/w", .tmp = "/t"};

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		struct custode_refusal w1 = {0}, w2 = {0};
		char out[256];
		int parsed = parse_path(paths[i], &w1), bound = custode_path_bind(paths[i], &b, out, sizeof(out), &w2);

		if (!bound && custode_path_normalize(out) < 0)
			bound = -EINVAL;
		cr_expect_eq(parsed == 0, bound == 0, "\"%s\": parse %d (%s), bind %d (%s)", paths[i], parsed, w1.detail,
			     bound, w2.detail);
	}
}
