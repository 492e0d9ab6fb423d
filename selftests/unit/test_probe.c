// SPDX-License-Identifier: Apache-2.0
/* Parsers behind `custode doctor`: lockdown level and the LSM list. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "engine/probe.h"

static void lockdown_ok(const char *text, const char *want)
{
	char out[32];

	memset(out, 'z', sizeof(out));
	cr_assert_eq(custode_parse_lockdown(text, out, sizeof(out)), 0, "\"%s\"", text);
	cr_assert_str_eq(out, want);
}

static void lockdown_bad(const char *text)
{
	char out[32] = "untouched";

	cr_assert_lt(custode_parse_lockdown(text, out, sizeof(out)), 0, "\"%s\" accepted as \"%s\"", text, out);
	cr_assert_str_eq(out, "untouched");
}

Test(lockdown, active_level)
{
	lockdown_ok("none [integrity] confidentiality", "integrity");
	lockdown_ok("[none] integrity confidentiality", "none");
	lockdown_ok("none integrity [confidentiality]", "confidentiality");
	/* as read from securityfs, with the newline */
	lockdown_ok("[none] integrity confidentiality\n", "none");
}

Test(lockdown, no_active_level)
{
	lockdown_bad("none integrity confidentiality");
	lockdown_bad("");
	lockdown_bad("[]");
	lockdown_bad("none [integrity confidentiality");
	lockdown_bad("none ]integrity[ confidentiality");
}

Test(lockdown, too_long_for_out)
{
	char out[9] = "untouched";

	/* "integrity" is 9 bytes, needs 10 */
	cr_assert_lt(custode_parse_lockdown("none [integrity] confidentiality", out, sizeof(out)), 0);
	cr_assert_eq(custode_parse_lockdown("none [integrity] confidentiality", out, 1), -EINVAL);
}

Test(lockdown, exact_fit)
{
	char *out = malloc(10);

	cr_assert_eq(custode_parse_lockdown("none [integrity] confidentiality", out, 10), 0);
	cr_assert_str_eq(out, "integrity");
	free(out);
}

Test(lsm_list, has)
{
	const char *list = "lockdown,capability,landlock,bpf";

	cr_assert(custode_lsm_list_has(list, "bpf"));
	cr_assert(custode_lsm_list_has(list, "lockdown")); /* first */
	cr_assert(custode_lsm_list_has(list, "capability"));
	cr_assert(custode_lsm_list_has(list, "landlock"));
	cr_assert(custode_lsm_list_has("bpf", "bpf"));
	cr_assert(custode_lsm_list_has("bpf,landlock", "bpf"));
	cr_assert(custode_lsm_list_has("landlock,bpf\n", "bpf")); /* raw securityfs text */
	cr_assert(custode_lsm_list_has("bpfx,foo,bpf", "bpf"));    /* second occurrence is the real one */
}

Test(lsm_list, has_not)
{
	const char *list = "lockdown,capability,landlock,bpf";

	cr_assert_not(custode_lsm_list_has(list, "bp"));
	cr_assert_not(custode_lsm_list_has(list, "pf"));
	cr_assert_not(custode_lsm_list_has(list, "lock"));
	cr_assert_not(custode_lsm_list_has(list, "selinux"));
	cr_assert_not(custode_lsm_list_has("bpfx,foo", "bpf"));
	cr_assert_not(custode_lsm_list_has("xbpf,foo", "bpf"));
	cr_assert_not(custode_lsm_list_has("foo,xbpf", "bpf"));
	cr_assert_not(custode_lsm_list_has("", "bpf"));
	cr_assert_not(custode_lsm_list_has("capability,landlock", "bpf"));
}

/*
 * BUG (probe.c custode_lsm_list_has): with an empty name, strstr() matches
 * at every position and the loop advances by strlen("") == 0, so it never
 * ends. An empty name is in no list; the answer must be false, promptly.
 */
Test(lsm_list, empty_name_terminates, .timeout = 2)
{
	cr_assert_not(custode_lsm_list_has("lockdown,capability", ""));
}
