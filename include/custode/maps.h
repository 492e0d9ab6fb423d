/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The maps pinned under CUSTODE_PIN_MAPS: the one list of their names, shared
 * by the BPF objects and userspace. libbpf pins a map by its variable name,
 * so the name here, the map's name in the BPF source and its file in bpffs
 * are one and the same.
 *
 * BPF side: every pinned map is declared with CUSTODE_PIN_BY_NAME(name)
 * (bpf/lib/maps.bpf.h), which fails to compile for a name missing here.
 * Userspace: custode_map_open(CUSTODE_MAP_<ID>) (userspace/engine/maps.h).
 * selftests/unit/test_maps.c checks both directions against the built
 * objects. Appending a map: one line here, then its definition.
 */
#ifndef CUSTODE_MAPS_H
#define CUSTODE_MAPS_H

/* X(ID, name): CUSTODE_MAP_<ID> for userspace, `name` as the BPF variable and pin. */
#define CUSTODE_PINNED_MAPS(X)                        \
	/* bpf/lib/maps.bpf.h: in every engine object */ \
	X(RUNS, custode_runs)                         \
	X(COUNTERS, custode_counters)                 \
	X(PATH_RULES, custode_path_rules)             \
	X(IDENTITIES, custode_identities)             \
	X(IDENTITY_FILTER, custode_identity_filter)   \
	X(FS_GEN, custode_fs_gen)                     \
	X(EVENTS, custode_events)                     \
	X(STATS, custode_stats)                       \
	X(GATES, custode_gates)                       \
	X(THROTTLE, custode_throttle)                 \
	X(EVENT_CFG, custode_event_cfg)               \
	X(EVENT_STATS, custode_event_stats)           \
	X(SEQ, custode_seq)                           \
	X(RUNS_GEN, custode_runs_gen)                 \
	X(RUN_CACHE, custode_run_cache)               \
	/* bpf/lib/inbound_map.bpf.h: net and proc */  \
	X(NET_INBOUND, custode_net_inbound)           \
	/* bpf/lib/net_maps.bpf.h: net */              \
	X(NET_RULES, custode_net_rules)               \
	X(NET_PRIVATE, custode_net_private)           \
	X(HOST_ADDRS, custode_host_addrs)             \
	X(PINS, custode_pins)                         \
	X(DNS_CFG, custode_dns_cfg)                   \
	X(DNS_RUN_TOKEN, custode_dns_run_token)       \
	X(DNS_TOKEN_RUN, custode_dns_token_run)       \
	X(DNS_ORIG, custode_dns_orig)                 \
	X(DNS_COUNTERS, custode_dns_counters)         \
	X(DNS_NETNS, custode_dns_netns)               \
	X(DNS_NETNS_SEEN, custode_dns_netns_seen)     \
	X(DNS_WAKE, custode_dns_wake)                 \
	/* bpf/file.bpf.c: file */                     \
	X(DECISIONS, custode_decisions)               \
	X(INODE_STAMPS, custode_inode_stamps)         \
	/* bpf/proc.bpf.c: proc */                     \
	X(ADMITTED, custode_admitted)                 \
	/* bpf/lib/newcomer.bpf.h: file and proc */    \
	X(NEWCOMERS, custode_newcomers)               \
	X(NEWCOMERS_LIVE, custode_newcomers_live)

enum custode_map_id {
#define CUSTODE_X_MAP(id, name) CUSTODE_MAP_##id,
	CUSTODE_PINNED_MAPS(CUSTODE_X_MAP)
#undef CUSTODE_X_MAP
	CUSTODE_MAP_COUNT
};

/* The same ids by map name: what CUSTODE_PIN_BY_NAME checks a BPF definition against. */
enum custode_map_by_name {
#define CUSTODE_X_MAP(id, name) CUSTODE_MAP_NAMED_##name = CUSTODE_MAP_##id,
	CUSTODE_PINNED_MAPS(CUSTODE_X_MAP)
#undef CUSTODE_X_MAP
};

#endif
