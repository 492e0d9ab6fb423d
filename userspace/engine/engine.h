/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pinned engine: BPF programs and maps under CUSTODE_PIN_ROOT that
 * outlive every custode process (docs/engine.md). custode_engine_open loads
 * what is missing and adopts what is pinned.
 */
#ifndef CUSTODE_ENGINE_H
#define CUSTODE_ENGINE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "custode/abi.h"
#include "policy/compile.h"
#include "policy/net.h"
#include "state/state.h"
#include "util/reasons.h"

struct custode_engine {
	int runs_fd;
	int counters_fd;
	int rules_fd;
	int events_fd;
	int stats_fd;
	int meta_fd;
	int users_fd;       /* CUSTODE_STATE_DIR/engine.users, flock'ed shared while the engine is open */
	int identities_fd;
	__u64 *identity_filter; /* custode_identity_filter mapped, or NULL: engine/rules.c */
	int net_rules_fd;   /* egress maps: -1 unless the egress class is loaded */
	int net_private_fd;
	int net_inbound_fd;
	int pins_fd;
	struct custode_meta meta;
	char cg_mount[PATH_MAX];
	char cg_root[PATH_MAX];
};

enum custode_engine_flags {
	CUSTODE_ENGINE_LOAD = 1u << 0, /* load the classes that are not pinned yet */
};

/* Check privileges and find (create) custode's cgroup root and bpffs. Does not touch BPF. */
int custode_host_prepare(struct custode_engine *e, struct custode_refusal *why);

/*
 * Open the pinned engine with at least the classes in `need`, loading and
 * pinning them first if flags has CUSTODE_ENGINE_LOAD. need == 0 adopts
 * whatever is pinned (-ENOENT with engine.missing if nothing is).
 */
int custode_engine_open(struct custode_engine *e, unsigned need, unsigned flags, struct custode_refusal *why);
void custode_engine_close(struct custode_engine *e);

/*
 * Load class `cls` (one CUSTODE_CLASS_*) into a throwaway state: verified
 * by this kernel, nothing pinned or attached. 0 when the real engine object
 * loads here; else a refusal naming the program and the verifier's verdict.
 */
int custode_engine_dry_load(unsigned cls, struct custode_refusal *why);

/* Unpin everything. Refused with -EBUSY if runs are registered, unless force. */
int custode_engine_unload(struct custode_engine *e, bool force, struct custode_refusal *why);

/* Take/release the host-wide engine lock (flock on CUSTODE_STATE_DIR/engine.lock). */
int custode_engine_lock(void);
void custode_engine_unlock(int fd);

/* A ruleset id unused by any registered run (call with the engine lock held). */
int custode_engine_alloc_ruleset(struct custode_engine *e, __u32 *out);

int custode_engine_add_rules(struct custode_engine *e, __u32 ruleset, const struct custode_fs_ruleset *rs);
int custode_engine_delete_rules(struct custode_engine *e, __u32 ruleset, const struct custode_fs_ruleset *rs);
/* Delete every rule of a ruleset by scanning the trie (for gc, where the rules aren't known). */
int custode_engine_delete_ruleset(struct custode_engine *e, __u32 ruleset);

int custode_engine_add_net(struct custode_engine *e, const struct custode_net_ruleset *rs);
int custode_engine_delete_net(struct custode_engine *e, const struct custode_net_ruleset *rs);
/* Delete every egress key and private grant of a ruleset by scanning (gc). */
int custode_engine_delete_net_ruleset(struct custode_engine *e, __u32 ruleset);
/* Delete every pin of a run (its cgroup id). */
int custode_engine_delete_pins(struct custode_engine *e, __u64 run_cgid);
/* The pins of every unregistered run, in one walk of the pin map (rules.c); the daemon's clean-up of ended runs. */
int custode_pins_delete_unregistered(int pins_fd, int runs_fd, size_t *deleted);

/* Register a run (fails with -EEXIST if the cgroup is registered). Counters start at zero. */
/*
 * Invalidate every cached file decision (bpf/file.bpf.c): after a run is
 * cancelled or unregistered, or its rules change.
 */
int custode_engine_bump_fs_gen(struct custode_engine *e);

/* 1 if the pinned engine's run cache is cgroup storage (6.2+), 0 if a placeholder, -errno if absent. */
int custode_engine_run_cache(void);

/*
 * The count of set-up newcomer marks host-wide (bpf/lib/newcomer.bpf.h): 0
 * when no container is being set up below an attached cgroup; -errno when
 * no engine object that marks them is loaded.
 */
long long custode_engine_newcomers_live(void);
/*
 * The decision table (include/custode/abi.h, custode_decisions, shared by
 * every run): its slots in use, in t (all of them, and those of runs that
 * have ended), and each live run's (every live run, sorted by cgroup id, at
 * most max of them in out): how many runs, or -errno if no file class is
 * loaded.
 */
struct custode_decision_use {
	__u64 cgroup_id; /* the run's */
	__u32 used;      /* slots holding its decisions */
	__u32 _pad;
};
struct custode_decision_totals {
	__u32 used;  /* slots holding a decision */
	__u32 ended; /* of which runs that have ended hold (dead: free for reuse) */
};
int custode_engine_decisions(struct custode_engine *e, struct custode_decision_use *out, int max,
			     struct custode_decision_totals *t);
/*
 * The file class's per-CPU scratch slots (include/custode/abi.h,
 * struct custode_scratch_head), each summed over the CPUs (owner: how many
 * CPUs have the slot held now); -errno if no file class of this build is
 * loaded.
 */
int custode_engine_scratch(struct custode_scratch_head sum[CUSTODE_SCRATCH_SLOTS]);
/*
 * The sum of custode_identity_filter's counts: the restricting identities of
 * live rule sets (more if some were never uncounted: a launcher killed
 * mid-way); -errno without an engine.
 */
long long custode_engine_identity_filter_total(void);

/* Invalidate the run cache: after every change to custode_runs or custode_gates (register/unregister do it). */
int custode_engine_bump_runs_gen(void);

int custode_engine_register(struct custode_engine *e, __u64 cgid, const struct custode_run *run);
int custode_engine_unregister(struct custode_engine *e, __u64 cgid);
/* Unregister, then read the run's final counters (none can be added after the run is gone), then delete them. */
int custode_engine_unregister_final(struct custode_engine *e, __u64 cgid, struct custode_counters *final);
int custode_engine_get_run(struct custode_engine *e, __u64 cgid, struct custode_run *out);
int custode_engine_set_run(struct custode_engine *e, __u64 cgid, const struct custode_run *run);
/*
 * Wait until no BPF program still runs with what it read before the call
 * (programs run under rcu_read_lock; MEMBARRIER_CMD_GLOBAL waits for an RCU
 * grace period). Between a run's flip to a new rule set and the deletion of
 * the old one: an open that read the old rule set id just before the flip
 * must not find it half deleted (a file's deny gone, the directory's allow
 * still there). Where membarrier is refused (nohz_full) it sleeps 100 ms
 * instead and returns its error.
 */
int custode_engine_quiesce(void);
int custode_engine_get_counters(struct custode_engine *e, __u64 cgid, struct custode_counters *out);
/* Sum of the per-CPU engine stats. */
int custode_engine_get_stats(struct custode_engine *e, struct custode_stats *out);
/* Count registered runs. */
int custode_engine_count_runs(struct custode_engine *e);

#endif
