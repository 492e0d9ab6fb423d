// SPDX-License-Identifier: Apache-2.0
/* The receipt's JSON (run/receipt.c) built from a minimal run: fields a run's end decides. */
#include <stdint.h>
#include <string.h>
#include <criterion/criterion.h>
#include <jansson.h>

#include "custode/abi.h"
#include "policy/policy.h"
#include "run/receipt.h"
#include "run/user.h"
#include "state/runstate.h"

#define V_2_32_PLUS_1 4294967297ull
#define V_2_33_PLUS_1 8589934593ull /* the same low 32 bits as V_2_32_PLUS_1 */

/* The receipt of a run that started under `started` and ended under `at_end` (0: not read). */
static json_t *receipt_at_end(uint64_t started, uint64_t at_end)
{
	static struct custode_runstate st;
	struct custode_policy p = {.name = (char *)"t", .version = started};
	struct custode_run_user user = {.name = "nobody"};
	char *argv[] = {(char *)"true", NULL};
	struct custode_receipt r = {
		.st = &st,
		.policy = &p,
		.policy_source = "bundle",
		.policy_ref = "t.bundle",
		.user = &user,
		.argv = argv,
		.wait_status = -1,
		.policy_version_at_end = at_end,
	};

	return custode_receipt_json(&r);
}

/* A swap from 2^32+1 to 2^33+1 shows in the receipt: the low halves are equal, the versions are not. */
Test(receipt, policy_version_at_end_whole)
{
	json_t *o = receipt_at_end(V_2_32_PLUS_1, V_2_33_PLUS_1), *pol;

	cr_assert_not_null(o);
	pol = json_object_get(o, "policy");
	cr_expect_eq(json_integer_value(json_object_get(pol, "version")), (json_int_t)V_2_32_PLUS_1);
	cr_expect_eq(json_integer_value(json_object_get(pol, "version_at_end")), (json_int_t)V_2_33_PLUS_1,
		     "version_at_end %lld", (long long)json_integer_value(json_object_get(pol, "version_at_end")));
	json_decref(o);

	o = receipt_at_end(V_2_32_PLUS_1, V_2_32_PLUS_1);
	cr_assert_not_null(o);
	cr_expect_null(json_object_get(json_object_get(o, "policy"), "version_at_end"), "no update, no version_at_end");
	json_decref(o);
}

/*
 * Issue 16: the receipt counted 5 denials for 6 blocked operations; the
 * sixth was the seccomp filter's EPERM (socket(AF_PACKET)), refused at
 * syscall entry before any hook. The receipt says such refusals are not
 * counted.
 */
Test(receipt, says_seccomp_refusals_are_not_counted)
{
	json_t *o = receipt_at_end(1, 0), *counted;

	cr_assert_not_null(o);
	counted = json_object_get(json_object_get(o, "denials"), "seccomp_refusals_counted");
	cr_expect(json_is_false(counted), "denials.seccomp_refusals_counted is false");
	json_decref(o);
}
