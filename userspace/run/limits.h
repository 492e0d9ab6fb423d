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
 * Apply the policy's cgroup limits to the run cgroup. A limit whose
 * controller the cgroup lacks is refused (limit.unavailable) if the policy
 * marks it required, and otherwise reported as not enforced. Returns 0 or a
 * refusal (negative errno with *why filled).
 */
int custode_limits_apply(const char *cgroup, const struct custode_policy *p, struct custode_limits_applied *out,
			 struct custode_refusal *why);

/* Which controllers a cgroup's parent gives it: the text of cgroup.controllers → has("memory"). */
bool custode_controllers_have(const char *controllers, const char *name);

#endif
