/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CUSTODE_CLI_COMMANDS_H
#define CUSTODE_CLI_COMMANDS_H

#include <stdio.h>

int custode_cmd_engine(int argc, char **argv);
int custode_cmd_profiles(int argc, char **argv);
int custode_cmd_reasons(int argc, char **argv);

/* docs/reasons.md, generated from include/custode/reasons.h (`custode reasons --markdown`). */
void custode_reasons_markdown(FILE *f);

#endif
