// SPDX-License-Identifier: Apache-2.0
/* The end of a launcher's run (run.h): custode_run_reap, and the denial summary. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "dns/names.h"
#include "run/run.h"
#include "util/fsutil.h"
#include "util/reasons.h"

void custode_denial_summary(const struct custode_counters *c, char *out, size_t len)
{
	__u64 total = 0;
	size_t off;
	const char *sep = ": ";

	for (int i = 0; i < CUSTODE_REASON_KERNEL_MAX; i++)
		total += c->denials[i];
	off = (size_t)snprintf(out, len, "%" PRIu64 " denial%s", (uint64_t)total, total == 1 ? "" : "s");
	for (int i = 0; i < CUSTODE_REASON_KERNEL_MAX && off < len; i++) {
		const char *name = custode_reason_name(i);

		if (!c->denials[i])
			continue;
		off += (size_t)snprintf(out + off, len - off, "%s%s=%" PRIu64, sep, name ? name : "unknown",
					(uint64_t)c->denials[i]);
		sep = ", ";
	}
	if (total && off < len)
		snprintf(out + off, len - off, " (seccomp filter refusals are not counted)");
}

static int64_t read_peak(const char *cgroup, const char *file)
{
	char path[PATH_MAX], *text = NULL, *end;
	long long v;

	snprintf(path, sizeof(path), "%s/%s", cgroup, file);
	if (custode_read_file(path, 64, &text, NULL) < 0)
		return -1;
	v = strtoll(text, &end, 10);
	if (end == text || v < 0)
		v = -1;
	free(text);
	return v;
}

int custode_run_reap(struct custode_engine *e, const struct custode_runstate *st, const struct custode_fs_ruleset *rs,
		     const struct custode_net_ruleset *net, struct custode_counters *counters,
		     struct custode_run_peaks *peaks)
{
	struct custode_run run;
	__u32 ruleset = st->ruleset;
	int err;

	if (peaks)
		peaks->memory = peaks->pids = -1;

	/* From here on every hook denies for this run, so nothing races the kill. */
	if (custode_engine_get_run(e, st->cgroup_id, &run) == 0) {
		ruleset = run.ruleset; /* a policy swap (custode daemon --bundles) may have replaced the launch's */
		run.flags |= CUSTODE_RUN_CANCELLED;
		custode_engine_set_run(e, st->cgroup_id, &run);
	}
	if (access(st->cgroup, F_OK) == 0) {
		custode_cgroup_kill(st->cgroup);
		err = custode_cgroup_wait_empty(st->cgroup, 10000);
		if (err == -ETIMEDOUT)
			return err; /* still registered and cancelled: confined */
		if (peaks) {
			peaks->memory = read_peak(st->cgroup, "memory.peak");
			peaks->pids = read_peak(st->cgroup, "pids.peak");
		}
		err = custode_cgroup_remove(st->cgroup);
		if (err && access(st->cgroup, F_OK) == 0)
			return err;
	}
	if (counters && custode_engine_get_counters(e, st->cgroup_id, counters) < 0)
		memset(counters, 0, sizeof(*counters));
	custode_engine_unregister(e, st->cgroup_id);
	if (rs && ruleset == st->ruleset)
		custode_engine_delete_rules(e, ruleset, rs);
	else
		custode_engine_delete_ruleset(e, ruleset);
	if (net && ruleset == st->ruleset)
		custode_engine_delete_net(e, net);
	else
		custode_engine_delete_net_ruleset(e, ruleset);
	/*
	 * Pins are the resolver's, made only for a run with name grants (a names
	 * file), and they are left to it: its next gc deletes the pins of every
	 * unregistered run in one walk of the pin map (dns/runs.c), so a
	 * teardown costs the same whatever pins this and other runs hold. Until
	 * then they are inert: no process is in this cgroup any more, and a
	 * cgroup id is never reused.
	 */
	custode_dns_names_remove(st->run_id);
	if (st->tmp[0])
		custode_rm_rf(st->tmp);
	custode_runstate_remove(st->run_id);
	return 0;
}
