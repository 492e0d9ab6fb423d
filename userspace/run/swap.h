/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Replace the policy of a live run (docs/bundles.md, "Live updates"): the new
 * rules are compiled with the run's own bindings (workspace, tmp, --allow),
 * added under a new rule set, the run is flipped to it with one map update,
 * then the old rule set is deleted. At every instant the run sees the old
 * rules or the new ones, never a mix and never none.
 */
#ifndef CUSTODE_RUN_SWAP_H
#define CUSTODE_RUN_SWAP_H

#include "engine/engine.h"
#include "policy/policy.h"
#include "state/runstate.h"

/*
 * Swap st's run to policy p. Refused (policy.unsupported) when p needs what
 * the run's launcher did not set up — a network section where there was
 * none, or the other way round (the socket seccomp filter can't be added to
 * or taken from live processes), file or process classes appearing or
 * disappearing. limits and env apply to new runs only. Pins are dropped (a
 * narrower policy may have revoked names): the run resolves again.
 */
int custode_run_swap_policy(struct custode_engine *e, struct custode_runstate *st, const struct custode_policy *p,
			    struct custode_refusal *why);

#endif
