/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CUSTODE_BUNDLE_CMD_H
#define CUSTODE_BUNDLE_CMD_H

/* `custode bundle keygen|sign|verify|inspect`: exit 0 done, 1 refused, 2 usage. */
int custode_cmd_bundle(int argc, char **argv);

#endif
