/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CUSTODE_ATTACH_CMD_H
#define CUSTODE_ATTACH_CMD_H

int custode_cmd_attach(int argc, char **argv);
int custode_cmd_detach(int argc, char **argv);
int custode_cmd_runs(int argc, char **argv);

#endif
