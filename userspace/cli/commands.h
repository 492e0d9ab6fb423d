/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CUSTODE_CLI_COMMANDS_H
#define CUSTODE_CLI_COMMANDS_H

int custode_cmd_engine(int argc, char **argv);
int custode_cmd_profiles(int argc, char **argv);

#endif
