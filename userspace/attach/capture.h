/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Run a helper program (systemctl, podman) from PATH and take its stdout:
 * what `attach --unit` and `attach --container` ask. Library code, no
 * logging.
 */
#ifndef CUSTODE_ATTACH_CAPTURE_H
#define CUSTODE_ATTACH_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * posix_spawnp argv[0] with argv, its stdout into *text (malloc'd,
 * NUL-terminated), its stderr inherited or, with quiet, /dev/null. Waits for
 * it; *status is waitpid's. 0, or -errno: the spawn's (-ENOENT: not in PATH),
 * -E2BIG (more than max bytes of output), -ENOMEM, a pipe's.
 */
int custode_capture(char *const argv[], size_t max, bool quiet, char **text, int *status);

#endif
