/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Attached runs (docs/operations.md): an existing cgroup v2 — a container's,
 * a systemd unit's — registered as a run under a verified policy, by the
 * daemon. Enforcement follows the cgroup's descendants exactly as for
 * launcher runs; a cgroup outside custode's subtree is found by the engine
 * through custode_gates (include/custode/abi.h, docs/engine.md).
 *
 * State (state/state.h): the run's state file <id>.json (the same as a
 * launcher's, so policy updates from bundles reach attached runs too; no
 * <id>.lock: no launcher) and <id>.attach.json (the cgroup, its level and
 * gate, where the policy came from). Library code: refusals, no logging.
 *
 * attach.c attaches and detaches; registry.c lists, adopts and reaps every
 * run, launched or attached.
 */
#ifndef CUSTODE_ATTACH_H
#define CUSTODE_ATTACH_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include <linux/types.h>

#include "bundle/bundle.h"
#include "bundle/source.h" /* struct custode_policy_source */
#include "engine/engine.h"
#include "util/reasons.h"

struct custode_attach_req {
	const char *cgroup;    /* a cgroup v2 directory */
	const char *profile;   /* exactly one of: a built-in profile, */
	const char *policy;    /* the name of a policy accepted from the daemon's bundles, */
	const char *bundle;    /* or a bundle file, verified with the daemon's trust */
	const char *workspace; /* ${workspace}; NULL: a path that does not exist (grants nothing) */
	bool has_run_id;
	__u64 run_id;
};

/* A registered attached run, as its state files describe it. */
struct custode_attached {
	__u64 run_id;
	__u64 cgroup_id;
	__u64 gate_id;
	int level;
	int64_t attached_at; /* unix seconds */
	char cgroup[4096];
	char policy_name[128];
	uint64_t policy_version;
	char policy_source[16]; /* "profile", "bundle" */
	char policy_ref[4096];  /* the profile's name, or the bundle file */
	char policy_digest[80];
	char workspace[4096];
};

/* Register req->cgroup as a run. *out: the run as `custode runs --json` shows it. */
int custode_attach(struct custode_engine *e, const struct custode_attach_req *req,
		   const struct custode_policy_source *src, json_t **out, struct custode_refusal *why);

/*
 * Unregister an attached run (by run id, or by cgroup path when cgroup is
 * non-NULL): its processes are no longer confined. *out: the run with its
 * final counts.
 */
int custode_detach(struct custode_engine *e, __u64 run_id, const char *cgroup, json_t **out,
		   struct custode_refusal *why);

/*
 * Every registered run, launcher-made and attached: run id, kind, cgroup,
 * policy name and version, start time, denials (exact, by reason), state.
 * verify: also check each attached run's policy (see custode_attach_verify).
 */
json_t *custode_runs_list(struct custode_engine *e, const struct custode_policy_source *src, bool verify);

/*
 * Does an attached run's policy still verify? Profiles: the built-in of that
 * name still exists, at the run's version and digest. Bundles: the recorded
 * file, or a bundle of that name and version in src->bundles_dir, verifies
 * against src->trust (and the version floor). 0, or a refusal (reason
 * policy.unverified with the cause).
 */
int custode_attach_verify(const struct custode_attached *a, __u64 running_version,
			  const struct custode_policy_source *src, struct custode_refusal *why);

/* What adoption and reaping did, one call per run ("adopted", "reaped", "unverified", ...). */
typedef void (*custode_attach_report_fn)(void *ctx, const char *action, const char *detail, const json_t *run);

/*
 * At daemon start: take over what the pinned registry and the state
 * directory hold. Attached runs whose cgroup still exists are adopted (their
 * policy re-verified: one that no longer verifies is reported and keeps its
 * last good rules); runs (attached or launched) whose cgroup is gone are
 * reaped; half-made attachments are cleaned up; the gates are rewritten from
 * what remains. Returns the number of runs adopted, or -errno.
 */
int custode_attach_adopt(struct custode_engine *e, const struct custode_policy_source *src,
			 custode_attach_report_fn report, void *ctx);

/* Reap runs whose cgroup vanished (periodically, in the daemon). Returns how many. */
int custode_attach_reap_vanished(struct custode_engine *e, custode_attach_report_fn report, void *ctx);

/* Read the attached runs' state (<id>.attach.json). Returns how many (at most max). */
int custode_attached_list(struct custode_attached *out, int max);
int custode_attached_read(__u64 run_id, struct custode_attached *out);

/* ---- pure parts, unit-tested ---- */

/*
 * May this cgroup be attached? path is canonical and below mount. Refused:
 * the cgroup2 root itself, custode's root or anything below it or above it,
 * a cgroup holding `self_cgroup` (the daemon's own), a level above
 * root_level or more than CUSTODE_GATE_LEVELS - 1 below it. On success *level
 * and gate (the ancestor path at root_level) are set.
 */
int custode_attach_check_path(const char *mount, const char *path, const char *custode_root, int root_level,
			      const char *self_cgroup, int *level, char *gate, size_t gate_len,
			      struct custode_refusal *why);

/* Does one of these paths contain the other (or are they equal)? Whole components only. */
bool custode_path_nested(const char *a, const char *b);

#endif
