// SPDX-License-Identifier: Apache-2.0
/*
 * docs/reasons.md is generated from include/custode/reasons.h
 * (`custode reasons --markdown`): every code in the source list is in the doc,
 * with its number and meaning, and the doc is exactly what the generator
 * prints. Adding a code without regenerating the doc fails here.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "cli/commands.h"
#include "util/fsutil.h"
#include "util/reasons.h"

/* docs/reasons.md of this source tree: __FILE__ is <src>/selftests/unit/test_reasons_doc.c */
static char *read_doc(void)
{
	const char *slash = strrchr(__FILE__, '/');
	char path[PATH_MAX];
	char *text = NULL;
	size_t len;

	cr_assert_not_null(slash);
	snprintf(path, sizeof(path), "%.*s/../../docs/reasons.md", (int)(slash - __FILE__), __FILE__);
	cr_assert_eq(custode_read_file(path, 1 << 20, &text, &len), 0, "cannot read %s", path);
	return text;
}

static char *generated(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	custode_reasons_markdown(f);
	cr_assert_eq(fclose(f), 0);
	return buf;
}

Test(reasons_doc, every_code_has_its_row)
{
	char *doc = read_doc();
	char row[1024];
	size_t n;
	const struct custode_reason_info *codes = custode_reason_list(&n);

	cr_assert_gt(n, 90);
	for (size_t i = 0; i < n; i++) {
		snprintf(row, sizeof(row), "\n| %d | `%s` | %s |\n", codes[i].code, codes[i].name, codes[i].desc);
		cr_expect_not_null(strstr(doc, row),
				   "docs/reasons.md has no row for %d %s (\"%s\"): regenerate it with "
				   "`build/custode reasons --markdown >docs/reasons.md`",
				   codes[i].code, codes[i].name, codes[i].desc);
	}
	free(doc);
}

Test(reasons_doc, is_what_the_generator_prints)
{
	char *doc = read_doc(), *gen = generated();

	cr_expect_str_eq(doc, gen, "docs/reasons.md differs from `custode reasons --markdown`: regenerate it");
	free(doc);
	free(gen);
}

Test(reasons_doc, meanings_fit_a_table_row)
{
	size_t n;
	const struct custode_reason_info *codes = custode_reason_list(&n);

	/* a '|' or a newline in a meaning would break the row it is printed in */
	for (size_t i = 0; i < n; i++) {
		cr_expect_null(strpbrk(codes[i].desc, "|\n"), "%s", codes[i].name);
		cr_expect_gt(strlen(codes[i].desc), 0, "%s", codes[i].name);
	}
}
