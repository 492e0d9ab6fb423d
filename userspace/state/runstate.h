/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a launcher records about its run in CUSTODE_RUNS_DIR, so that `custode
 * gc` can clean up after a launcher that died: <id>.lock is flock'ed by the
 * launcher for its whole life (lockable means orphaned); <id>.json holds the
 * state, written atomically, once the run is registered (a lock without it:
 * a launcher that died setting up, whose private tmp, cgroup and
 * registration are all found from the id).
 */
#ifndef CUSTODE_STATE_RUNSTATE_H
#define CUSTODE_STATE_RUNSTATE_H

#include <limits.h>
#include <stdint.h>
#include <linux/types.h>

#include "state/state.h" /* run ids, the run lock */

/*
 * The --allow grants a run takes (custode run refuses more), kept as typed so a
 * policy swap grants them again; the longest a grant can be written is a host
 * name (253) with ":65535/udp", plus the NUL.
 */
#define CUSTODE_RUN_MAX_ALLOWS 256
#define CUSTODE_ALLOW_TEXT_MAX 272

struct custode_runstate {
	__u64 run_id;
	__u64 cgroup_id;
	__u32 ruleset;
	int launcher_pid;
	int64_t started;     /* unix seconds */
	char cgroup[PATH_MAX];
	char tmp[PATH_MAX];
	char workspace[PATH_MAX];
	char policy[128];
	char source[16];       /* "profile", "file", "bundle": bundle runs follow their policy name's updates */
	char allows[CUSTODE_RUN_MAX_ALLOWS][CUSTODE_ALLOW_TEXT_MAX]; /* the --allow grants, as typed */
	int n_allows;
};

int custode_runstate_write(const struct custode_runstate *st);
int custode_runstate_read(__u64 run_id, struct custode_runstate *st);
int custode_runstate_parse(const char *text, struct custode_runstate *st);
void custode_runstate_remove(__u64 run_id);
/* The run's private tmp directory: <realpath of /tmp>/custode-<id>. */
void custode_run_tmp_path(__u64 run_id, char *buf, size_t len);

#endif
