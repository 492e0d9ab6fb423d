// SPDX-License-Identifier: Apache-2.0
/*
 * The limits decision (custode_limits_decide): a limit the host has no
 * controller for is refused when the policy requires it or the run asks
 * --require-limits, and otherwise marked "no controller" for the launcher's
 * warning (issue 16).
 */
#include <stdio.h>
#include <string.h>
#include <criterion/criterion.h>

#include "policy/policy.h"
#include "run/limits.h"

static struct custode_policy *policy(const char *limits)
{
	struct custode_policy *p = NULL;
	struct custode_refusal why = {0};
	char doc[512];

	snprintf(doc, sizeof(doc), "{\"schema\":\"custode.policy/v1\",\"name\":\"t\",\"version\":1,\"content\":{\"limits\":%s}}",
		 limits);
	cr_assert_eq(custode_policy_parse(doc, strlen(doc), &p, &why), 0, "%s", why.detail);
	return p;
}

Test(limits_decide, missing_controllers_are_marked_not_refused)
{
	struct custode_policy *p = policy("{\"memoryBytes\":67108864,\"pids\":64,\"cpu\":1}");
	struct custode_limits_applied a;
	struct custode_refusal why = {0};

	cr_assert_eq(custode_limits_decide(p, "cpu io", false, &a, &why), 0, "%s", why.detail);
	cr_expect_str_eq(a.memory.why_not, "no controller");
	cr_expect_str_eq(a.memory.controller, "memory");
	cr_expect_str_eq(a.pids.why_not, "no controller");
	cr_expect_null(a.cpu.why_not);
	cr_expect(a.cpu.requested);
	custode_policy_free(p);
}

Test(limits_decide, require_limits_refuses_the_first_missing_one)
{
	struct custode_policy *p = policy("{\"pids\":64,\"cpu\":1}");
	struct custode_limits_applied a;
	struct custode_refusal why = {0};

	cr_assert_lt(custode_limits_decide(p, "cpu memory", true, &a, &why), 0);
	cr_expect_eq(why.reason, CUSTODE_REASON_LIMIT_UNAVAILABLE);
	cr_expect_not_null(strstr(why.detail, "limits.pids"), "%s", why.detail);
	cr_expect_not_null(strstr(why.detail, "--require-limits"), "%s", why.detail);
	custode_policy_free(p);
}

/* --require-limits with every controller the policy needs, or with no cgroup limit asked for: the run goes on */
Test(limits_decide, require_limits_that_can_be_met_runs)
{
	static const struct {
		const char *limits, *controllers;
	} cases[] = {
		{"{\"memoryBytes\":67108864,\"pids\":64,\"cpu\":1,\"wallSeconds\":5}", "cpuset cpu io memory pids"},
		{"{\"wallSeconds\":5,\"outputBytes\":100}", ""},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct custode_policy *p = policy(cases[i].limits);
		struct custode_limits_applied a;
		struct custode_refusal why = {0};

		cr_assert_eq(custode_limits_decide(p, cases[i].controllers, true, &a, &why), 0, "%s", why.detail);
		cr_expect(!a.memory.why_not && !a.pids.why_not && !a.cpu.why_not, "%s", cases[i].limits);
		custode_policy_free(p);
	}
}

Test(limits_decide, policy_required_names_the_policy)
{
	struct custode_policy *p = policy("{\"memoryBytes\":67108864,\"required\":[\"memoryBytes\"]}");
	struct custode_limits_applied a;
	struct custode_refusal why = {0};

	cr_assert_lt(custode_limits_decide(p, "pids", false, &a, &why), 0);
	cr_expect_eq(why.reason, CUSTODE_REASON_LIMIT_UNAVAILABLE);
	cr_expect_not_null(strstr(why.detail, "required by the policy"), "%s", why.detail);
	custode_policy_free(p);
}
