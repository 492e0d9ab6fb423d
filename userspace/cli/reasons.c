// SPDX-License-Identifier: Apache-2.0
/*
 * `custode reasons`: the reason codes of include/custode/reasons.h, printed
 * from that list. `--markdown` is docs/reasons.md, so the doc cannot drift:
 * the unit test reasons_doc compares the two.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>

#include "cli/commands.h"
#include "util/exit.h"
#include "util/reasons.h"
#include "util/usage.h"

/* Rows of the table: the engine's codes (below CUSTODE_REASON_KERNEL_MAX), or userspace's. */
static void markdown_table(FILE *f, const char *title, bool kernel)
{
	size_t n;
	const struct custode_reason_info *r = custode_reason_list(&n);

	fprintf(f, "\n## %s\n\n| code | name | meaning |\n| ---: | --- | --- |\n", title);
	for (size_t i = 0; i < n; i++)
		if ((r[i].code < CUSTODE_REASON_KERNEL_MAX) == kernel)
			fprintf(f, "| %d | `%s` | %s |\n", r[i].code, r[i].name, r[i].desc);
}

void custode_reasons_markdown(FILE *f)
{
	fprintf(f, "# Reason codes\n"
		   "\n"
		   "<!-- Generated from include/custode/reasons.h by `custode reasons --markdown`:\n"
		   "     do not edit; add a code there, then `build/custode reasons --markdown >docs/reasons.md`.\n"
		   "     The unit test reasons_doc/* fails while the two disagree. -->\n"
		   "\n"
		   "Every refusal and denial custode reports carries one of these codes: events\n"
		   "(`reason`), receipts, counters, logs and the `custode COMMAND: REASON: detail`\n"
		   "line on stderr. Names and numbers are stable: a code is never renumbered or\n"
		   "reused, only appended. `custode reasons [--json]` prints the same list.\n"
		   "\n"
		   "A reason code says why; the exit status (docs/cli.md) says only whether.\n");
	markdown_table(f, "Denials made by the engine (0-63, counted per run)", true);
	markdown_table(f, "Refusals made by userspace (100 and up)", false);
}

static void print_list(bool json)
{
	size_t n;
	const struct custode_reason_info *r = custode_reason_list(&n);

	for (size_t i = 0; i < n; i++) {
		if (json) {
			json_t *o = json_pack("{s:i, s:s, s:s, s:s}", "code", r[i].code, "name", r[i].name, "meaning",
					      r[i].desc, "by",
					      r[i].code < CUSTODE_REASON_KERNEL_MAX ? "engine" : "userspace");
			json_dumpf(o, stdout, JSON_COMPACT);
			putchar('\n');
			json_decref(o);
		} else {
			printf("%3d  %-28s %s\n", r[i].code, r[i].name, r[i].desc);
		}
	}
}

static void reasons_usage(FILE *f)
{
	fprintf(f, "usage: custode reasons [--json | --markdown]\n"
		   "\n"
		   "The stable reason codes (include/custode/reasons.h): code, name and meaning,\n"
		   "one a line; --json one object a line ({\"code\", \"name\", \"meaning\", \"by\":\n"
		   "\"engine\" or \"userspace\"}); --markdown the table of docs/reasons.md.\n"
		   "\n"
		   "Exit: 0 done; 2 usage.\n");
}

int custode_cmd_reasons(int argc, char **argv)
{
	static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
					     {"markdown", no_argument, NULL, 'm'},
					     {"help", no_argument, NULL, 'h'},
					     {0}};
	bool json = false, markdown = false;
	int c;

	custode_getopt_start();
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'j') {
			json = true;
		} else if (c == 'm') {
			markdown = true;
		} else if (c == 'h') {
			reasons_usage(stdout);
			return 0;
		} else {
			return custode_usage_bad_option("reasons", EXIT_USAGE, argv);
		}
	}
	if (optind < argc)
		return custode_usage_extra_arg("reasons", EXIT_USAGE, argv[optind]);
	if (json && markdown)
		return custode_usage_error("reasons", EXIT_USAGE, "--json and --markdown exclude each other");
	if (markdown) {
		custode_reasons_markdown(stdout);
	} else {
		print_list(json);
	}
	return fflush(stdout) == 0 ? 0 : EXIT_FAILURE;
}
