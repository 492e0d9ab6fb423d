// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/limits.h"
#include "util/fsutil.h"

bool custode_limit_is_set(const struct custode_policy *p, int64_t v)
{
	/* every limit has a positive minimum, so 0 (no limits section: calloc) and -1 (unset) mean "not set" */
	return p->has_limits && v > 0;
}

void custode_cpu_max_format(int64_t cpu_millis, char *out, size_t len)
{
	const int64_t period = 100000; /* µs */
	int64_t quota = cpu_millis * (period / 1000);

	if (quota < 1000)
		quota = 1000; /* the kernel's minimum quota is 1 ms */
	snprintf(out, len, "%" PRId64 " %" PRId64, quota, period);
}

bool custode_controllers_have(const char *controllers, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = controllers; p && (p = strstr(p, name)); p += n)
		if ((p == controllers || p[-1] == ' ') && (p[n] == 0 || p[n] == ' ' || p[n] == '\n'))
			return true;
	return false;
}

static int write_limit(const char *cgroup, const char *file, const char *value)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/%s", cgroup, file) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	return custode_write_str(path, value);
}

/* Is this requested limit enforceable here? Refuses (limit.unavailable) a required one that is not. */
static int decide_one(const char *controllers, struct custode_limit_state *s, bool required,
		      struct custode_refusal *why)
{
	if (!s->requested || custode_controllers_have(controllers, s->controller))
		return 0;
	s->why_not = "no controller";
	if (required)
		return custode_refuse(why, ENOTSUP, CUSTODE_REASON_LIMIT_UNAVAILABLE,
				      "limits.%s is %s but the run's cgroup has no %s controller (cgroup.controllers: \"%s\")",
				      s->name, s->required_by, s->controller, controllers);
	return 0;
}

int custode_limits_decide(const struct custode_policy *p, const char *controllers, bool require_all,
			  struct custode_limits_applied *out, struct custode_refusal *why)
{
	const struct custode_limits *l = &p->limits;
	struct {
		struct custode_limit_state *s;
		uint32_t bit;
	} each[] = {{&out->memory, CUSTODE_LIMIT_MEMORY}, {&out->pids, CUSTODE_LIMIT_PIDS}, {&out->cpu, CUSTODE_LIMIT_CPU}};
	int err;

	memset(out, 0, sizeof(*out));
	out->memory = (struct custode_limit_state){.name = "memoryBytes", .file = "memory.max", .controller = "memory"};
	out->pids = (struct custode_limit_state){.name = "pids", .file = "pids.max", .controller = "pids"};
	out->cpu = (struct custode_limit_state){.name = "cpu", .file = "cpu.max", .controller = "cpu"};
	if (custode_limit_is_set(p, l->memory_bytes)) {
		out->memory.requested = true;
		snprintf(out->memory.value, sizeof(out->memory.value), "%" PRId64, l->memory_bytes);
	}
	if (custode_limit_is_set(p, l->pids)) {
		out->pids.requested = true;
		snprintf(out->pids.value, sizeof(out->pids.value), "%" PRId64, l->pids);
	}
	if (custode_limit_is_set(p, l->cpu_millis)) {
		out->cpu.requested = true;
		custode_cpu_max_format(l->cpu_millis, out->cpu.value, sizeof(out->cpu.value));
	}
	for (size_t i = 0; i < sizeof(each) / sizeof(each[0]); i++) {
		bool by_policy = l->required & each[i].bit;

		each[i].s->required_by = by_policy ? "required by the policy" : "required (--require-limits)";
		if ((err = decide_one(controllers, each[i].s, by_policy || require_all, why)))
			return err;
	}
	return 0;
}

/* Write a decided limit that the cgroup can enforce. */
static int write_one(const char *cgroup, struct custode_limit_state *s, struct custode_refusal *why)
{
	int err;

	if (!s->requested || s->why_not)
		return 0;
	err = write_limit(cgroup, s->file, s->value);
	if (err)
		return custode_refuse(why, -err, CUSTODE_REASON_CGROUP_FAILED, "%s/%s = %s: %s", cgroup, s->file, s->value,
				      strerror(-err));
	s->enforced = true;
	return 0;
}

int custode_limits_apply(const char *cgroup, const struct custode_policy *p, bool require_all,
			 struct custode_limits_applied *out, struct custode_refusal *why)
{
	char path[PATH_MAX], *controllers = NULL;
	int err;

	/* no cgroup limit requested: nothing to read or write */
	if (!custode_limit_is_set(p, p->limits.memory_bytes) && !custode_limit_is_set(p, p->limits.pids) &&
	    !custode_limit_is_set(p, p->limits.cpu_millis))
		return custode_limits_decide(p, "", require_all, out, why);
	snprintf(path, sizeof(path), "%s/cgroup.controllers", cgroup);
	err = custode_read_file(path, 4096, &controllers, NULL);
	if (err)
		return custode_refuse(why, -err, CUSTODE_REASON_CGROUP_FAILED, "%s: %s", path, strerror(-err));
	controllers[strcspn(controllers, "\n")] = 0;
	err = custode_limits_decide(p, controllers, require_all, out, why);
	if (!err)
		err = write_one(cgroup, &out->memory, why);
	if (!err)
		err = write_one(cgroup, &out->pids, why);
	if (!err)
		err = write_one(cgroup, &out->cpu, why);
	/* with swap, memory.max alone only moves the excess to swap: close that (best effort; no swap, no file) */
	if (!err && out->memory.enforced)
		out->swap_limited = write_limit(cgroup, "memory.swap.max", "0") == 0;
	free(controllers);
	return err;
}
