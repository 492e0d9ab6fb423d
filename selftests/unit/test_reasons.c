// SPDX-License-Identifier: Apache-2.0
/* Reason codes: the stable list shared by the engine, events, receipts and the CLI. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <criterion/criterion.h>

#include "custode/abi.h"
#include "util/reasons.h"

struct reason_def {
	int code;
	const char *name;
	const char *desc;
	bool kernel;
};

static const struct reason_def defs[] = {
#define X_KERNEL(sym, num, name, desc) {num, name, desc, true},
#define X_USER(sym, num, name, desc) {num, name, desc, false},
	CUSTODE_KERNEL_REASONS(X_KERNEL) CUSTODE_USER_REASONS(X_USER)
#undef X_KERNEL
#undef X_USER
};
#define N_DEFS (sizeof(defs) / sizeof(defs[0]))

static bool is_lower_dotted(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || s[0] == '.' || s[len - 1] == '.' || strstr(s, ".."))
		return false;
	for (const char *c = s; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '.'))
			return false;
	/* each component starts with a letter */
	for (const char *c = s; *c; c++)
		if ((c == s || c[-1] == '.') && !(*c >= 'a' && *c <= 'z'))
			return false;
	return true;
}

Test(reasons, list_is_not_empty_and_has_both_kinds)
{
	size_t k = 0, u = 0;

	for (size_t i = 0; i < N_DEFS; i++)
		if (defs[i].kernel)
			k++;
		else
			u++;
	cr_assert_gt(k, 1);
	cr_assert_gt(u, 1);
}

Test(reasons, codes_are_unique)
{
	for (size_t i = 0; i < N_DEFS; i++)
		for (size_t j = i + 1; j < N_DEFS; j++)
			cr_assert_neq(defs[i].code, defs[j].code, "%s and %s share code %d", defs[i].name, defs[j].name,
				      defs[i].code);
}

Test(reasons, names_are_unique)
{
	for (size_t i = 0; i < N_DEFS; i++)
		for (size_t j = i + 1; j < N_DEFS; j++)
			cr_assert(strcmp(defs[i].name, defs[j].name) != 0, "codes %d and %d share name %s", defs[i].code,
				  defs[j].code, defs[i].name);
}

Test(reasons, names_are_lowercase_dotted)
{
	for (size_t i = 0; i < N_DEFS; i++) {
		cr_assert(is_lower_dotted(defs[i].name), "bad reason name \"%s\"", defs[i].name);
		/* everything but "none" is <area>.<what> */
		if (defs[i].code != CUSTODE_REASON_NONE)
			cr_assert_not_null(strchr(defs[i].name, '.'), "reason name \"%s\" has no area", defs[i].name);
	}
}

Test(reasons, kernel_and_user_ranges)
{
	for (size_t i = 0; i < N_DEFS; i++) {
		if (defs[i].kernel) {
			cr_assert_geq(defs[i].code, 0, "%s", defs[i].name);
			cr_assert_lt(defs[i].code, CUSTODE_REASON_KERNEL_MAX, "%s", defs[i].name);
		} else {
			cr_assert_geq(defs[i].code, 100, "%s", defs[i].name);
		}
	}
}

Test(reasons, name_code_round_trip)
{
	for (size_t i = 0; i < N_DEFS; i++) {
		const char *name = custode_reason_name(defs[i].code);
		const char *desc = custode_reason_desc(defs[i].code);

		cr_assert_not_null(name, "code %d", defs[i].code);
		cr_assert_str_eq(name, defs[i].name);
		cr_assert_eq(custode_reason_from_name(defs[i].name), defs[i].code, "%s", defs[i].name);
		cr_assert_not_null(desc, "code %d", defs[i].code);
		cr_assert_str_eq(desc, defs[i].desc);
		cr_assert_gt(strlen(desc), 0);
	}
}

Test(reasons, stable_numbers)
{
	/* Numbers are ABI (events, receipts, counters): a renumbering must fail here. */
	cr_assert_eq(CUSTODE_REASON_NONE, 0);
	cr_assert_eq(CUSTODE_REASON_FILE_READ_DENIED, 1);
	cr_assert_eq(CUSTODE_REASON_FILE_WRITE_DENIED, 2);
	cr_assert_eq(CUSTODE_REASON_FILE_EXEC_DENIED, 3);
	cr_assert_eq(CUSTODE_REASON_FILE_CREATE_DENIED, 4);
	cr_assert_eq(CUSTODE_REASON_FILE_DELETE_DENIED, 5);
	cr_assert_eq(CUSTODE_REASON_POLICY_INVALID, 130);
	cr_assert_str_eq(custode_reason_name(1), "file.read.denied");
	cr_assert_str_eq(custode_reason_name(130), "policy.invalid");
	cr_assert_str_eq(custode_reason_name(133), "policy.path_too_long");
}

static bool is_defined(int code)
{
	for (size_t i = 0; i < N_DEFS; i++)
		if (defs[i].code == code)
			return true;
	return false;
}

Test(reasons, unknown_codes_and_names)
{
	int unknown = 0;

	for (int code = -300; code < 1100; code++) {
		if (is_defined(code))
			continue;
		unknown++;
		cr_assert_null(custode_reason_name(code), "code %d", code);
		cr_assert_null(custode_reason_desc(code), "code %d", code);
	}
	cr_assert_gt(unknown, 1000);
	cr_assert_eq(custode_reason_from_name(""), -1);
	cr_assert_eq(custode_reason_from_name("file.read"), -1);
	cr_assert_eq(custode_reason_from_name("file.read.denied.x"), -1);
	cr_assert_eq(custode_reason_from_name("FILE.READ.DENIED"), -1);
	cr_assert_eq(custode_reason_from_name("file.read.denie"), -1);
}

Test(reasons, refuse_fills_why_and_returns_minus_err)
{
	struct custode_refusal why;
	int r;

	memset(&why, 0x5a, sizeof(why));
	r = custode_refuse(&why, EINVAL, CUSTODE_REASON_POLICY_INVALID, "%s: %d", "field", 42);
	cr_assert_eq(r, -EINVAL);
	cr_assert_eq(why.reason, CUSTODE_REASON_POLICY_INVALID);
	cr_assert_str_eq(why.detail, "field: 42");

	r = custode_refuse(&why, ENAMETOOLONG, CUSTODE_REASON_POLICY_PATH_TOO_LONG, "x");
	cr_assert_eq(r, -ENAMETOOLONG);
	cr_assert_eq(why.reason, CUSTODE_REASON_POLICY_PATH_TOO_LONG);
	cr_assert_str_eq(why.detail, "x");
}

Test(reasons, refuse_without_why)
{
	cr_assert_eq(custode_refuse(NULL, EPERM, CUSTODE_REASON_PRIVILEGE_REQUIRED, "no"), -EPERM);
}

Test(reasons, refuse_never_returns_success)
{
	struct custode_refusal why = {0};

	/* callers pass errno; a stale 0 must still read as failure */
	cr_assert_lt(custode_refuse(&why, 0, CUSTODE_REASON_CGROUP_FAILED, "zero"), 0);
	cr_assert_eq(why.reason, CUSTODE_REASON_CGROUP_FAILED);
	/* an already negative errno is not flipped positive */
	cr_assert_eq(custode_refuse(&why, -ENOENT, CUSTODE_REASON_CGROUP_FAILED, "neg"), -ENOENT);
}

Test(reasons, refuse_truncates_long_detail)
{
	struct custode_refusal why;
	char big[2000];

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	memset(&why, 0x5a, sizeof(why));
	cr_assert_eq(custode_refuse(&why, EINVAL, CUSTODE_REASON_POLICY_INVALID, "%s", big), -EINVAL);
	cr_assert_eq(strlen(why.detail), sizeof(why.detail) - 1);
	cr_assert_eq(why.detail[0], 'a');
}
