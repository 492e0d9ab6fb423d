// SPDX-License-Identifier: Apache-2.0
/* The one-line denial summary a run prints on exit. */
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "custode/abi.h"
#include "run/run.h"

Test(denial_summary, zero)
{
	struct custode_counters c;
	char out[256];

	memset(&c, 0, sizeof(c));
	memset(out, 'z', sizeof(out));
	custode_denial_summary(&c, out, sizeof(out));
	cr_assert_str_eq(out, "0 denials");
}

Test(denial_summary, one)
{
	struct custode_counters c;
	char out[256];

	memset(&c, 0, sizeof(c));
	c.denials[CUSTODE_REASON_FILE_READ_DENIED] = 1;
	custode_denial_summary(&c, out, sizeof(out));
	cr_assert_str_eq(out, "1 denial: file.read.denied=1 (seccomp filter refusals are not counted)");
}

/*
 * Issue 16: a run with 6 blocked operations said "5 denials": the sixth was
 * the seccomp filter's EPERM, which nothing counts. The summary says so.
 */
Test(denial_summary, two_reasons_in_code_order)
{
	struct custode_counters c;
	char out[256];

	memset(&c, 0, sizeof(c));
	c.denials[CUSTODE_REASON_FILE_WRITE_DENIED] = 3;
	c.denials[CUSTODE_REASON_FILE_READ_DENIED] = 2;
	custode_denial_summary(&c, out, sizeof(out));
	cr_assert_str_eq(out, "5 denials: file.read.denied=2, file.write.denied=3 (seccomp filter refusals are not counted)");
}

Test(denial_summary, many_reasons_and_large_counts)
{
	struct custode_counters c;
	char out[512];

	memset(&c, 0, sizeof(c));
	c.denials[CUSTODE_REASON_RUN_CANCELLED] = 1;
	c.denials[CUSTODE_REASON_FILE_EXEC_DENIED] = 10000000000ull;
	c.denials[CUSTODE_REASON_PATH_TOO_LONG] = 7;
	custode_denial_summary(&c, out, sizeof(out));
	cr_assert_str_eq(out, "10000000008 denials: file.exec.denied=10000000000, path.too_long=7, run.cancelled=1 (seccomp filter refusals are not counted)");
}

Test(denial_summary, counter_without_a_name)
{
	struct custode_counters c;
	char out[256];

	/* a newer engine may count a reason this build has no name for: still counted, and visible */
	int unnamed = -1;

	for (int i = CUSTODE_REASON_KERNEL_MAX - 1; i > 0 && unnamed < 0; i--)
		if (!custode_reason_name(i))
			unnamed = i;
	if (unnamed < 0)
		cr_skip_test("every kernel reason code is named");
	memset(&c, 0, sizeof(c));
	c.denials[unnamed] = 4;
	custode_denial_summary(&c, out, sizeof(out));
	cr_assert_eq(strncmp(out, "4 denials: ", 11), 0, "%s", out);
	cr_assert_not_null(strstr(out, "=4"), "%s", out);
}

Test(denial_summary, truncates_within_the_buffer)
{
	struct custode_counters c;
	char full[512];

	memset(&c, 0, sizeof(c));
	for (int i = 1; i <= 9; i++)
		c.denials[i] = (unsigned)i * 1000;
	custode_denial_summary(&c, full, sizeof(full));
	/* heap buffers of every small size: ASan catches a write past the end */
	for (size_t len = 1; len < 80; len++) {
		char *out = malloc(len);

		custode_denial_summary(&c, out, len);
		cr_assert_eq(strlen(out), len - 1, "len %zu: \"%s\"", len, out);
		cr_assert_eq(strncmp(out, full, len - 1), 0, "len %zu", len);
		free(out);
	}
}
