/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What `custode engine status` and `custode profiles` print (docs/output.md):
 * text by default; with --json one document, a single JSON value on one line.
 */
#ifndef CUSTODE_CLI_OUTPUT_H
#define CUSTODE_CLI_OUTPUT_H

#include <stdio.h>
#include <jansson.h>

/* A document: doc, compact, and a newline. 0, or -EIO. */
int custode_print_document(const json_t *doc, FILE *f);

/*
 * `engine status` as text, from the object --json prints: one "field  value"
 * line each, times in the one shown form (loaded_at_time), map entries last.
 */
void custode_print_engine_status(const json_t *st, FILE *f);

/* One row of `custode profiles`: {"name", "policy", "version", "rules"}. */
json_t *custode_profile_row(const char *name, const char *policy, unsigned long long version, size_t rules);
/* `custode profiles` as text: "NAME  POLICY vVERSION, N filesystem rules" per row. */
void custode_print_profiles(const json_t *rows, FILE *f);

#endif
