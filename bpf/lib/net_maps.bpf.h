/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/* Egress maps (include/custode/abi.h), pinned by name like the shared ones. */
#ifndef CUSTODE_NET_MAPS_BPF_H
#define CUSTODE_NET_MAPS_BPF_H

#include "custode.bpf.h"

/* Egress grants of every run; a miss falls through to the pins, then denies. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, CUSTODE_MAX_NET_RULES);
	__type(key, struct custode_net_key);
	__type(value, struct custode_net_rule);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} custode_net_rules SEC(".maps");

/* network.private literals: lift the classifier's veto for these addresses. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, CUSTODE_MAX_NET_PRIVATE);
	__type(key, struct custode_private_key);
	__type(value, __u32);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} custode_net_private SEC(".maps");

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
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} custode_pins SEC(".maps");

#endif
