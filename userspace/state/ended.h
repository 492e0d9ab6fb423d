/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The totals of runs that ended: each run's final counters (denials by
 * reason, the resolver's counts) added, by policy, when it is unregistered —
 * by its launcher, `custode gc`, detach or the daemon's reaping — so the
 * daemon's counters include runs it never saw (docs/operations.md,
 * "Metrics"). One JSON file under CUSTODE_STATE_DIR, replaced by rename under
 * an flock of PATH.lock; it only grows (until reboot, with the engine).
 *
 *   {"version":1,"denials":{POLICY:{REASON:N,...},...},
 *    "resolver":{"queries":N,"answered":N,"pins":N,"refusals":{REASON:N,...}}}
 *
 * Bounded: past CUSTODE_ENDED_MAX_POLICIES policies, others are added under
 * CUSTODE_ENDED_OTHER. Library code: no logging.
 */
#ifndef CUSTODE_STATE_ENDED_H
#define CUSTODE_STATE_ENDED_H

#include <jansson.h>

#include "custode/abi.h"
#include "custode/resolver.h"
#include "state/state.h"

#define CUSTODE_ENDED_FILE CUSTODE_STATE_DIR "/ended-totals.json"
#define CUSTODE_ENDED_MAX_POLICIES 1024
#define CUSTODE_ENDED_OTHER "(other)"

/*
 * Add a run's final counts (either may be NULL) under policy (NULL or "":
 * "unknown"). Nothing to add (all zero): nothing written. 0 or -errno.
 */
int custode_ended_add(const char *path, const char *policy, const struct custode_counters *c,
		      const struct custode_dns_counters *dns);
/* The totals (a missing file: empty ones). 0 and *out (caller decrefs), or -errno. */
int custode_ended_load(const char *path, json_t **out);
/* Pure: add counts to totals as loaded (the same bound). 0 or -ENOMEM. */
int custode_ended_fold(json_t *totals, const char *policy, const struct custode_counters *c,
		       const struct custode_dns_counters *dns);

#endif
