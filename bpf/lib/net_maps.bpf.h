/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Egress maps (include/custode/abi.h), pinned by name like the shared ones. */
#ifndef CUSTODE_NET_MAPS_BPF_H
#define CUSTODE_NET_MAPS_BPF_H

#include "custode.bpf.h"
#include "custode/resolver.h"
#include "inbound_map.bpf.h"

/* Egress grants of every run; a miss falls through to the pins, then denies. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, CUSTODE_MAX_NET_RULES);
	__type(key, struct custode_net_key);
	__type(value, struct custode_net_rule);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	CUSTODE_PIN_BY_NAME(custode_net_rules);
} custode_net_rules SEC(".maps");

/* network.private literals: lift the classifier's veto for these addresses. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, CUSTODE_MAX_NET_PRIVATE);
	__type(key, struct custode_private_key);
	__type(value, __u32);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	CUSTODE_PIN_BY_NAME(custode_net_private);
} custode_net_private SEC(".maps");

/* The host's own addresses per network namespace (struct custode_host_addr_key). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CUSTODE_MAX_HOST_ADDRS);
	__type(key, struct custode_host_addr_key);
	__type(value, __u32);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	CUSTODE_PIN_BY_NAME(custode_host_addrs);
} custode_host_addrs SEC(".maps");

/*
 * Resolver pins, per run. Filled by the resolver (full map: the resolver
 * answers the run with a failure — fail closed); an expired pin is ignored.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CUSTODE_MAX_PINS);
	__type(key, struct custode_pin_key);
	__type(value, struct custode_pin);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	CUSTODE_PIN_BY_NAME(custode_pins);
} custode_pins SEC(".maps");

/*
 * The resolver (include/custode/resolver.h, docs/resolver.md). No entry, or
 * a stale heartbeat, means no resolver: DNS is denied.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct custode_dns_cfg);
	CUSTODE_PIN_BY_NAME(custode_dns_cfg);
} custode_dns_cfg SEC(".maps");

/*
 * Each run's DNS token, allocated by the hooks on the run's first query. The
 * reverse map is claimed first with BPF_NOEXIST, so a token belongs to one
 * run only; the resolver deletes the entries of runs that are gone (cgroup
 * ids are never reused). Full maps: no token, DNS denied.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CUSTODE_MAX_DNS_TOKENS);
	__type(key, __u64);
	__type(value, __u32);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	CUSTODE_PIN_BY_NAME(custode_dns_run_token);
} custode_dns_run_token SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CUSTODE_MAX_DNS_TOKENS);
	__type(key, __u32);
	__type(value, __u64);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	CUSTODE_PIN_BY_NAME(custode_dns_token_run);
} custode_dns_token_run SEC(".maps");

/*
 * The server each redirected socket last addressed, by socket cookie. LRU:
 * nothing to clean up; an evicted entry only means the reply keeps the
 * resolver's address, which the client rejects (fail closed).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, CUSTODE_MAX_DNS_ORIG);
	__type(key, __u64);
	__type(value, struct custode_dns_orig);
	CUSTODE_PIN_BY_NAME(custode_dns_orig);
} custode_dns_orig SEC(".maps");

/* The resolver's per-run decision counts; declared here so the engine creates and pins it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 2 * CUSTODE_MAX_RUNS);
	__type(key, __u64);
	__type(value, struct custode_dns_counters);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	CUSTODE_PIN_BY_NAME(custode_dns_counters);
} custode_dns_counters SEC(".maps");

/*
 * Network namespaces the resolver listens in besides its own (netns cookie ->
 * struct custode_dns_netns), written by the resolver only. No entry of the
 * live resolver's generation: DNS from that namespace is denied.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CUSTODE_MAX_DNS_NETNS);
	__type(key, __u64);
	__type(value, struct custode_dns_netns);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	CUSTODE_PIN_BY_NAME(custode_dns_netns);
} custode_dns_netns SEC(".maps");

/* When a namespace last woke the resolver (boot ns): one wake per CUSTODE_DNS_WAKE_NS. LRU: no cleanup. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, CUSTODE_MAX_DNS_NETNS);
	__type(key, __u64);
	__type(value, __u64);
	CUSTODE_PIN_BY_NAME(custode_dns_netns_seen);
} custode_dns_netns_seen SEC(".maps");

/* A run's DNS from a namespace not served yet: the resolver's cue to listen there (struct custode_dns_wake). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
	CUSTODE_PIN_BY_NAME(custode_dns_wake);
} custode_dns_wake SEC(".maps");

#endif
