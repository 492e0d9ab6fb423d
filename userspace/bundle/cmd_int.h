/* SPDX-License-Identifier: Apache-2.0 */
/* What the `custode bundle` subcommands (cmd.c, cmd_sign.c) share: one shape for their messages. */
#ifndef CUSTODE_BUNDLE_CMD_INT_H
#define CUSTODE_BUNDLE_CMD_INT_H

#include <stdbool.h>

#include "util/reasons.h"

/* "custode: bundle: <message>", then the subcommand's help, on stderr: EXIT_USAGE. */
int custode_bundle_usage_error(const char *help, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The subcommand's help on stderr: EXIT_USAGE. */
int custode_bundle_bad_usage(const char *help);
/* "custode: bundle <verb>: refused: <reason>: <detail>" (controls escaped): EXIT_BUNDLE_REFUSED. */
int custode_bundle_refused(const char *verb, const struct custode_refusal *why);
/* A decimal integer 0..max, without sign or leading space. */
bool custode_bundle_parse_uint(const char *s, unsigned long long max, unsigned long long *out);

int custode_bundle_cmd_sign(int argc, char **argv);

#endif
