/* SPDX-License-Identifier: Apache-2.0 */
/*
 * custode's state directory, and the one place that names a run's files in
 * it. Every per-run file is CUSTODE_RUNS_DIR/<run id>.<kind>, the run id as
 * 16 lowercase hex digits (custode_run_id_format):
 *
 *   <id>.json         the run's state (state/runstate.h), launcher and attached runs
 *   <id>.lock         flock'ed by a launcher for its whole life (lockable: orphaned)
 *   <id>.attach.json  an attached run's cgroup, gate and policy source (attach/attach.h)
 *   <id>.names.json   the run's name grants, for the resolver (dns/names.h)
 *   <id>.unbound/     never created: where ${workspace} and ${tmp} point when nothing is bound
 *
 * Library code: no logging.
 */
#ifndef CUSTODE_STATE_H
#define CUSTODE_STATE_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#define CUSTODE_STATE_DIR "/run/custode"
#define CUSTODE_RUNS_DIR CUSTODE_STATE_DIR "/runs"
#define CUSTODE_ENGINE_LOCK_FILE CUSTODE_STATE_DIR "/engine.lock"
#define CUSTODE_ENGINE_USERS_FILE CUSTODE_STATE_DIR "/engine.users"
/* The launcher's LSM probe result for this boot (engine/probe.h, custode_probe_lsm_cached) */
#define CUSTODE_LSM_PROBE_FILE CUSTODE_STATE_DIR "/lsm-probe"

enum custode_state_kind {
	CUSTODE_STATE_RUN,               /* <id>.json */
	CUSTODE_STATE_LOCK,              /* <id>.lock */
	CUSTODE_STATE_ATTACH,            /* <id>.attach.json */
	CUSTODE_STATE_NAMES,             /* <id>.names.json */
	CUSTODE_STATE_UNBOUND_WORKSPACE, /* <id>.unbound/workspace */
	CUSTODE_STATE_UNBOUND_TMP,       /* <id>.unbound/tmp */
};

/* "0123456789abcdef" */
void custode_run_id_format(__u64 id, char out[17]);
/* 16 lowercase hex digits, optionally after "run-" (a launcher cgroup's name); -EINVAL otherwise. */
int custode_run_id_parse(const char *s, __u64 *id);

/* The path of one of a run's files. */
void custode_state_path(__u64 run_id, enum custode_state_kind kind, char *out, size_t len);

/*
 * The runs that have a file of this kind, one at a time: open (NULL if the
 * directory can't be read: no runs), next until false, close.
 */
DIR *custode_state_list_open(void);
bool custode_state_list_next(DIR *d, enum custode_state_kind kind, __u64 *run_id);

/* Create and flock <id>.lock; returns the fd (kept open for the launcher's life). */
int custode_runlock_take(__u64 run_id);
/* Try to flock <id>.lock without blocking: fd if the launcher is gone, -EWOULDBLOCK if alive. */
int custode_runlock_try(__u64 run_id);
/* Is a launcher holding <id>.lock? (No lock file is created: a missing one means no.) */
bool custode_runlock_held(__u64 run_id);
/* Does <id>.lock exist? */
bool custode_runlock_exists(__u64 run_id);

#endif
