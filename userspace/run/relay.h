/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CUSTODE_RUN_RELAY_H
#define CUSTODE_RUN_RELAY_H

#include <stdbool.h>
#include <stdint.h>

/* The command's stdout and stderr, relayed to ours and counted against outputBytes. */
struct custode_relay {
	int fd[2];       /* read ends (non-blocking); -1 once closed or unused */
	int64_t cap;     /* bytes the run may write, -1: no cap */
	int64_t written; /* bytes the run wrote, relayed or not */
	bool sink_gone[2];
};

/* Relay what pipe i (0: stdout, 1: stderr) holds now. Returns true when the cap has just been exceeded. */
bool custode_relay_drain(struct custode_relay *r, int i);

#endif
