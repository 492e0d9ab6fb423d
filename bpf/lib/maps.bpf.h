/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The maps every custode BPF object shares. They are pinned by name under
 * CUSTODE_PIN_MAPS, so each object loaded later reuses the same runs, rules,
 * events and stats maps. Their names are listed in include/custode/maps.h,
 * the list userspace opens them by. Other pinned maps: net_maps.bpf.h,
 * inbound_map.bpf.h.
 */
#ifndef CUSTODE_MAPS_BPF_H
#define CUSTODE_MAPS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "custode/abi.h"
#include "custode/event.h"
#include "custode/maps.h"

/*
 * A map pinned by its name: that name must be in include/custode/maps.h
 * (an undeclared CUSTODE_MAP_NAMED_<name> otherwise), so BPF and userspace
 * can't disagree on it silently. The assertion emits nothing.
 */
#define CUSTODE_PIN_BY_NAME(name)                                                                          \
	_Static_assert(CUSTODE_MAP_NAMED_##name >= 0, #name " is listed in include/custode/maps.h");      \
	__uint(pinning, LIBBPF_PIN_BY_NAME)

/*
 * Registered runs, keyed by the run cgroup's id. A task below custode's root
 * whose run cgroup is missing here is denied (run.unregistered): state that
 * is missing means deny.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CUSTODE_MAX_RUNS);
	__type(key, __u64);
	__type(value, struct custode_run);
	CUSTODE_PIN_BY_NAME(custode_runs);
} custode_runs SEC(".maps");

/* Per-run, per-reason denial counters, keyed like custode_runs. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CUSTODE_MAX_RUNS);
	__type(key, __u64);
	__type(value, struct custode_counters);
	CUSTODE_PIN_BY_NAME(custode_counters);
} custode_counters SEC(".maps");

/* File rules of every run, longest prefix wins; no match means denied. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, CUSTODE_MAX_PATH_RULES);
	__type(key, struct custode_path_key);
	__type(value, struct custode_path_rule);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	CUSTODE_PIN_BY_NAME(custode_path_rules);
} custode_path_rules SEC(".maps");

/*
 * Rule paths by identity (device + inode, resolved when the rules are
 * loaded): restricting rules hold for an inode whatever path reaches it, and
 * hooks that see only a dentry find their rule by walking up identities.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CUSTODE_MAX_IDENTITIES);
	__type(key, struct custode_identity_key);
	__type(value, struct custode_identity);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	CUSTODE_PIN_BY_NAME(custode_identities);
} custode_identities SEC(".maps");

/* How many restricting identities hash to each slot (include/custode/abi.h): 0 = no lookup needed. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CUSTODE_IDENTITY_FILTER_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
	__uint(map_flags, BPF_F_MMAPABLE);
	CUSTODE_PIN_BY_NAME(custode_identity_filter);
} custode_identity_filter SEC(".maps");

/*
 * The file decision cache's generation: bumped by the kernel on rename
 * (any process; an unlink, rmdir or link bumps only its inode's stamp) and
 * by userspace when a run is cancelled, unregistered or its rules change. A
 * cached decision holds only while it is unchanged (bpf/file.bpf.c).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	CUSTODE_PIN_BY_NAME(custode_fs_gen);
} custode_fs_gen SEC(".maps");

/* Denial records (include/custode/event.h). A full buffer drops and counts. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, CUSTODE_EVENTS_BYTES);
	CUSTODE_PIN_BY_NAME(custode_events);
} custode_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct custode_stats);
	CUSTODE_PIN_BY_NAME(custode_stats);
} custode_stats SEC(".maps");

/*
 * Where attached runs are (include/custode/abi.h, struct custode_gates).
 * All zero: no attached run, and a task outside custode's subtree is outside
 * every run.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct custode_gates);
	CUSTODE_PIN_BY_NAME(custode_gates);
} custode_gates SEC(".maps");

/*
 * Throttle state per (run, reason). LRU: an evicted entry only restarts its
 * window (more records, never fewer counts).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, CUSTODE_MAX_THROTTLE);
	__type(key, struct custode_throttle_key);
	__type(value, struct custode_throttle);
	CUSTODE_PIN_BY_NAME(custode_throttle);
} custode_throttle SEC(".maps");

/* Throttle settings, written by the daemon; zero means the defaults. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct custode_event_cfg);
	CUSTODE_PIN_BY_NAME(custode_event_cfg);
} custode_event_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct custode_event_stats);
	CUSTODE_PIN_BY_NAME(custode_event_stats);
} custode_event_stats SEC(".maps");

/* Engine-wide event sequence number, shared by every object (hence a map). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	CUSTODE_PIN_BY_NAME(custode_seq);
} custode_seq SEC(".maps");

/* Bumped by userspace after every change to custode_runs or custode_gates (the run cache's validity). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	CUSTODE_PIN_BY_NAME(custode_runs_gen);
} custode_runs_gen SEC(".maps");

/*
 * The run cache (include/custode/abi.h, struct custode_run_cache): cgroup
 * storage, so an entry goes with its cgroup. On kernels without
 * BPF_MAP_TYPE_CGRP_STORAGE (6.1) the loader turns this into a one-entry
 * array that nothing uses, and sets custode_use_run_cache to the per-task
 * cache (bpf/lib/run.bpf.h; the cgroup storage code is never verified there).
 */
#define CUSTODE_MAP_TYPE_CGRP_STORAGE 32 /* BPF_MAP_TYPE_CGRP_STORAGE (6.2); not in 6.1's headers */

struct {
	__uint(type, CUSTODE_MAP_TYPE_CGRP_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct custode_run_cache);
	CUSTODE_PIN_BY_NAME(custode_run_cache);
} custode_run_cache SEC(".maps");


#endif
