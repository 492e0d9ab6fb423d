/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Usage errors, said the way GNU tools say them: one line naming what was
 * wrong, then where the help is, on stderr; never the whole usage text.
 *
 *   custode gc: unrecognized option '--bogus'
 *   Try 'custode gc --help' for more information.
 *
 * The one helper of every command's option parsing (the command layers of
 * daemon/, attach/, run/ and cli/), so it lives in the leaf util/. The exit
 * status stays the command's: EXIT_USAGE, or EXIT_REFUSED for `custode run`
 * (whose 2 may be the wrapped command's).
 */
#ifndef CUSTODE_UTIL_USAGE_H
#define CUSTODE_UTIL_USAGE_H

#include <stddef.h>

#include "util/reasons.h"

/*
 * Before a command's getopt_long loop: from its first argument again, and
 * getopt says nothing itself (custode_usage_bad_option does).
 */
void custode_getopt_start(void);

/* "custode CMD: <fmt...>" and the pointer to --help on stderr. Returns code. */
int custode_usage_error(const char *cmd, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * getopt_long returned '?' for argv (started with custode_getopt_start):
 * the option it refused, as GNU getopt names it (unrecognized, requiring
 * an argument, taking none, invalid short option). Returns code.
 */
int custode_usage_bad_option(const char *cmd, int code, char **argv);
/* An argument cmd takes none of (after its options): "unexpected argument 'ARG'". Returns code. */
int custode_usage_extra_arg(const char *cmd, int code, const char *arg);

/* custode_usage_bad_option's line, into buf (for a parser that says nothing itself). */
void custode_usage_bad_option_text(char **argv, char *buf, size_t len);

/*
 * A usage error found by a parser that reports through a refusal:
 * "custode CMD: REASON: DETAIL" (or "custode CMD: DETAIL" when its reason
 * is CUSTODE_REASON_NONE, getopt's own words) and the pointer to --help.
 */
int custode_usage_refused(const char *cmd, int code, const struct custode_refusal *why);

#endif
