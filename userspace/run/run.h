/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CUSTODE_RUN_H
#define CUSTODE_RUN_H

#include "custode/abi.h"
#include "engine/engine.h"
#include "policy/compile.h"
#include "policy/net.h"
#include "state/runstate.h"

/*
 * End a run: deny everything from now on (cancelled flag), kill the cgroup,
 * wait until it is empty, remove it, then unregister and delete its rules
 * (rs, or a scan of the trie when NULL) and its tmp directory. If the cgroup
 * does not empty, the run stays registered and cancelled (still confined)
 * and -ETIMEDOUT is returned. counters (optional) receives the final counts.
 */
struct custode_run_peaks {
	int64_t memory; /* memory.peak in bytes, -1 if unavailable */
	int64_t pids;   /* pids.peak, -1 if unavailable */
};

int custode_run_reap(struct custode_engine *e, const struct custode_runstate *st, const struct custode_fs_ruleset *rs,
		     const struct custode_net_ruleset *net, struct custode_counters *counters,
		     struct custode_run_peaks *peaks);

/*
 * "2 denials: file.read.denied=1, file.write.denied=1 (seccomp filter refusals
 * are not counted)"; "0 denials". The seccomp filter refuses at syscall entry,
 * before any hook, and the kernel counts nothing (docs/process.md).
 */
void custode_denial_summary(const struct custode_counters *c, char *out, size_t len);

/*
 * Reap every orphaned run (`custode gc`; the daemon on its timer): runs whose
 * launcher is gone (its run lock free), run cgroups without a lock file, and
 * registrations whose cgroup vanished. Attached runs are left alone. Each run
 * acted on is reported (hex: its run id, or a cgroup id for a vanished
 * registration; err: 0 or a negative errno). Returns nonzero if some run
 * could not be reaped (it stays registered and confined).
 */
typedef void (*custode_gc_report_fn)(void *ctx, const char *hex, const char *what, int err);
int custode_run_reap_orphans(struct custode_engine *e, custode_gc_report_fn report, void *ctx);

int custode_cmd_run(int argc, char **argv);
int custode_cmd_gc(int argc, char **argv);

#endif
