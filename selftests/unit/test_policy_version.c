// SPDX-License-Identifier: Apache-2.0
/*
 * Policy versions are 0..2^53-1 everywhere (issue 16): the run value keeps
 * them whole and a live update compares them whole (the receipt's
 * version_at_end: test_run_receipt.c). 2^32 + 1 was once stored as 1.
 */
#include <stdint.h>
#include <string.h>
#include <criterion/criterion.h>

#include "custode/abi.h"
#include "policy/policy.h"
#include "run/program.h"

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
