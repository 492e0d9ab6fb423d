/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CUSTODE_RUN_LIMITS_H
#define CUSTODE_RUN_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"
#include "util/reasons.h"

/*
 * cgroup v2 limits of a run (docs/process.md): memoryBytes → memory.max (and
 * memory.swap.max 0, so the limit can't be dodged into swap), pids → pids.max,
 * cpu → cpu.max. Written into the run's cgroup before its first process.
 */
struct custode_limit_state {
	const char *name;     /* policy name: "memoryBytes", "pids", "cpu" */
	const char *file;     /* "memory.max", ... */
	const char *controller; /* "memory", "pids", "cpu" */
	const char *required_by; /* why a missing controller would refuse: the policy or --require-limits */
	char value[48];       /* what was written */
	bool requested;       /* set by the policy */
	bool enforced;        /* written into the cgroup */
	const char *why_not;  /* "no controller" when requested and not enforced */
};

struct custode_limits_applied {
	struct custode_limit_state memory, pids, cpu;
	bool swap_limited;    /* memory.swap.max = 0 was written */
};

/* Is this limit set by the policy? (Absent limits sections parse to zeros.) */
bool custode_limit_is_set(const struct custode_policy *p, int64_t v);

/* "QUOTA PERIOD" for cpu.max from CPUs in thousandths (period 100 ms; quota at least 1 ms). */
void custode_cpu_max_format(int64_t cpu_millis, char *out, size_t len);

/*
 * The decision, without touching a cgroup: which requested limits the
 * controllers (the text of the run cgroup's cgroup.controllers) can enforce.
 * One they can't is refused (limit.unavailable) if the policy marks it
 * required or require_all (`custode run --require-limits`), and otherwise
 * marked why_not "no controller": the run goes on without it, and the
 * launcher says so on stderr.
 */
int custode_limits_decide(const struct custode_policy *p, const char *controllers, bool require_all,
			  struct custode_limits_applied *out, struct custode_refusal *why);

/*
 * Decide (above) for the run cgroup and write the limits it can enforce.
 * Returns 0 or a refusal (negative errno with *why filled).
 */
int custode_limits_apply(const char *cgroup, const struct custode_policy *p, bool require_all,
			 struct custode_limits_applied *out, struct custode_refusal *why);

/* Which controllers a cgroup's parent gives it: the text of cgroup.controllers → has("memory"). */
bool custode_controllers_have(const char *controllers, const char *name);

#endif
