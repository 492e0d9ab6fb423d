/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside attach/: what attach.c (attach, detach) and registry.c (state
 * files, gates, listing, adoption, reaping) share. Not for other folders:
 * they use attach.h.
 */
#ifndef CUSTODE_ATTACH_REGISTRY_H
#define CUSTODE_ATTACH_REGISTRY_H

#include <stddef.h>
#include <jansson.h>
#include <linux/types.h>

#include "attach/attach.h"

/* <id>.attach.json, written atomically. */
int custode_attached_write(const struct custode_attached *a);
/* Every state file of a run: <id>.attach.json, <id>.json, <id>.lock, <id>.names.json. */
void custode_attached_remove(__u64 run_id);

/* The cgroup ids of every registered run (at most CUSTODE_MAX_RUNS; free()); NULL if out of memory. */
__u64 *custode_attach_run_keys(struct custode_engine *e, size_t *n);

/* Rewrite the gates from the registered attached runs. */
int custode_attach_gates_sync(struct custode_engine *e, struct custode_refusal *why);

/* One run as `custode runs --json` shows it; verify: check an attached run's policy. */
json_t *custode_attach_run_json(struct custode_engine *e, __u64 cgid, const struct custode_run *run,
				const struct custode_policy_source *src, bool verify);
json_t *custode_attach_counters_json(const struct custode_counters *c);

/* Unregister an attached run and delete everything it had; its final counts out (final may be NULL). */
int custode_attached_drop(struct custode_engine *e, __u64 cgid, const struct custode_run *run,
			  struct custode_counters *final);

#endif
