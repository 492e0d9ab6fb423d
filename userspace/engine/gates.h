/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gate table (custode_gates, include/custode/abi.h, docs/engine.md): the
 * cgroups at custode's root level below which attached runs lie, so that the
 * engine finds a run outside custode's own subtree. Which gates are wanted is
 * the attached runs' business (attach/registry.c); this writes them safely
 * for concurrent BPF readers. Library code: refusals, no logging.
 */
#ifndef CUSTODE_ENGINE_GATES_H
#define CUSTODE_ENGINE_GATES_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "custode/abi.h"
#include "engine/engine.h"
#include "util/reasons.h"

struct custode_gate_want {
	__u64 gate_id;
	int level_bit; /* level - root_level */
};

/*
 * The gate table for a set of attached runs (gate id, level), computed from
 * the current table so that concurrent BPF readers stay safe
 * (include/custode/abi.h): phase1 drops what is gone and updates levels of
 * gates that stay; phase2 adds new gates into slots phase1 left free.
 * -ENOSPC when more distinct gates than CUSTODE_MAX_GATES are needed.
 * Pure, unit-testable.
 */
int custode_gates_plan(const struct custode_gates *cur, const struct custode_gate_want *want, size_t n,
		       struct custode_gates *phase1, struct custode_gates *phase2);

/* The pinned gate map's fd, or a refusal (engine.mismatch: an engine built before gates). */
int custode_gates_open(struct custode_refusal *why);

/*
 * Rewrite the pinned table to the n gates wanted (two phases, then the run
 * cache's generation is bumped). unresolved: some attached run's gate is
 * unknown, so every gate bit there is now is kept too (fail closed); want
 * has room for cap entries for those.
 */
int custode_gates_apply(struct custode_gate_want *want, size_t n, size_t cap, bool unresolved,
			struct custode_refusal *why);

#endif
