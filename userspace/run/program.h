/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Programming a policy into the engine: the one implementation used by the
 * launcher (run.c), attach (attach/attach.c) and live policy swaps
 * (swap.c). In order:
 *
 *   custode_program_ruleset   a rule set id no registered run uses (under the engine lock)
 *   custode_program_rules     compile (fs, egress) with the run's bindings, add the
 *                             rules beside everything else, hand the resolver the
 *                             run's names (or remove them: none)
 *   custode_program_register  a new run: register the cgroup with the run value
 *   custode_program_swap      a live run: flip its value to the new rule set in one
 *                             update, then delete the old rule set and its pins
 *   custode_program_undo      unregister (if registered) and delete the rules (if added)
 *
 * What differs between the three callers stays theirs: where the bindings
 * point, when the state file is written, the cgroup (made, attached, or the
 * running one), flags only they set (--audit, attached). Library code:
 * refusals, no logging.
 */
#ifndef CUSTODE_RUN_PROGRAM_H
#define CUSTODE_RUN_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "engine/engine.h"
#include "policy/compile.h"
#include "policy/net.h"
#include "policy/policy.h"

struct custode_program {
	/* in */
	const struct custode_policy *policy;
	struct custode_bindings bindings;   /* ${workspace}, ${tmp} */
	const struct custode_allow *allows; /* --allow grants */
	size_t n_allows;
	__u64 run_id;
	/* made here */
	__u32 ruleset;
	struct custode_fs_ruleset fs;
	struct custode_net_ruleset net;
	bool rules_added;
	bool registered;
	__u64 cgroup_id; /* when registered */
};

/*
 * The flags of a run value that follow from the policy (and its compiled
 * egress rules). Those in CUSTODE_PROGRAM_LIVE_FLAGS change with a live swap;
 * the classes (file, process, net) were fixed when the run was set up.
 */
__u32 custode_program_flags(const struct custode_policy *p, const struct custode_net_ruleset *net);
/*
 * Whether the run value already carries this policy version: a live update
 * to it has nothing to do. Versions are compared whole (0..2^53-1).
 */
bool custode_program_current(const struct custode_run *run, __u64 version);

#define CUSTODE_PROGRAM_LIVE_FLAGS                                                                                     \
	(CUSTODE_RUN_AUDIT | CUSTODE_RUN_NO_LISTEN | CUSTODE_RUN_PTRACE_RUN | CUSTODE_RUN_WX_DENY | CUSTODE_RUN_INBOUND)

int custode_program_ruleset(struct custode_engine *e, struct custode_program *pr, struct custode_refusal *why);
int custode_program_rules(struct custode_engine *e, struct custode_program *pr, struct custode_refusal *why);

/* Register cgid as a new run: custode_program_flags | extra_flags. *run (may be NULL): the value registered. */
int custode_program_register(struct custode_engine *e, struct custode_program *pr, __u64 cgid, __u32 extra_flags,
			     struct custode_run *run, struct custode_refusal *why);

/*
 * Flip the registered run `cur` of cgid to pr's rule set and policy version
 * (its live flags recomputed, the others kept); then the old rule set and the
 * cgroup's pins go. On failure nothing the run uses has changed.
 */
int custode_program_swap(struct custode_engine *e, struct custode_program *pr, __u64 cgid,
			 const struct custode_run *cur, struct custode_refusal *why);

/* Undo a partial programming (unregister if registered, delete the rules if added). */
void custode_program_undo(struct custode_engine *e, struct custode_program *pr);
void custode_program_free(struct custode_program *pr);

#endif
