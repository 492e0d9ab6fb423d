// SPDX-License-Identifier: Apache-2.0
/*
 * Policy versions are 0..2^53-1 everywhere (issue 16): the run value keeps
 * them whole, a live update compares them whole, and the receipt reports the
 * version in force at the end whole. 2^32 + 1 was once stored as 1.
 */
#include <stdint.h>
#include <string.h>
#include <criterion/criterion.h>
#include <jansson.h>

#include "custode/abi.h"
#include "policy/policy.h"
#include "run/program.h"
#include "run/receipt.h"
#include "run/user.h"
#include "state/runstate.h"

#define V_2_32_PLUS_1 4294967297ull
#define V_2_33_PLUS_1 8589934593ull /* the same low 32 bits as V_2_32_PLUS_1 */

/* A run value holding the policy's version, as custode_program_register writes it. */
static struct custode_run run_at(uint64_t version)
{
	struct custode_run run = {.run_id = 1};

	run.policy_version = version;
	return run;
}

Test(policy_version, run_value_holds_64_bits)
{
	struct custode_run run = run_at(V_2_32_PLUS_1);

	cr_expect_eq(run.policy_version, V_2_32_PLUS_1, "stored %llu", (unsigned long long)run.policy_version);
	cr_expect_eq(sizeof(run.policy_version), 8);
}

/* A live update to 2^33+1 is not skipped as "already at that version" by a run at 2^32+1. */
Test(policy_version, adoption_compares_whole_versions)
{
	struct custode_run run = run_at(V_2_32_PLUS_1);

	cr_expect(custode_program_current(&run, V_2_32_PLUS_1));
	cr_expect_not(custode_program_current(&run, V_2_33_PLUS_1), "2^33+1 taken for the running 2^32+1");
	cr_expect_not(custode_program_current(&run, 1), "1 taken for the running 2^32+1");
	run = run_at(CUSTODE_POLICY_VERSION_MAX);
	cr_expect(custode_program_current(&run, CUSTODE_POLICY_VERSION_MAX));
}

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
Test(policy_version, receipt_version_at_end_whole)
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
