// SPDX-License-Identifier: Apache-2.0
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/usage.h"

void custode_getopt_start(void)
{
	optind = 0; /* glibc: a full restart, even after another argv (the unit tests parse many) */
	opterr = 0;
}

static int usage_vsay(const char *cmd, int code, const char *fmt, va_list ap)
{
	fprintf(stderr, "custode %s: ", cmd);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\nTry 'custode %s --help' for more information.\n", cmd);
	return code;
}

int custode_usage_error(const char *cmd, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	code = usage_vsay(cmd, code, fmt, ap);
	va_end(ap);
	return code;
}

void custode_usage_bad_option_text(char **argv, char *buf, size_t len)
{
	/* getopt has moved past the element it refused, unless a short option was inside a group (-jx) */
	const char *arg = optind > 0 ? argv[optind - 1] : NULL;
	const char *eq;

	if (!arg || strncmp(arg, "--", 2))
		snprintf(buf, len, "invalid option -- '%c'", optopt ? optopt : '?');
	else if (!optopt)
		snprintf(buf, len, "unrecognized option '%s'", arg);
	else if ((eq = strchr(arg, '=')))
		snprintf(buf, len, "option '%.*s' doesn't allow an argument", (int)(eq - arg), arg);
	else
		snprintf(buf, len, "option '%s' requires an argument", arg);
}

int custode_usage_bad_option(const char *cmd, int code, char **argv)
{
	char line[512];

	custode_usage_bad_option_text(argv, line, sizeof(line));
	return custode_usage_error(cmd, code, "%s", line);
}

int custode_usage_extra_arg(const char *cmd, int code, const char *arg)
{
	return custode_usage_error(cmd, code, "unexpected argument '%s'", arg);
}

int custode_usage_refused(const char *cmd, int code, const struct custode_refusal *why)
{
	const char *reason = why->reason ? custode_reason_name(why->reason) : NULL;

	return reason ? custode_usage_error(cmd, code, "%s: %s", reason, why->detail)
		      : custode_usage_error(cmd, code, "%s", why->detail);
}
