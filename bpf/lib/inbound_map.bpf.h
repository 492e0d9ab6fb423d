/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * network.inbound: the peers that may connect to a run's listening sockets,
 * per ruleset (key struct custode_private_key, the same LPM layout as
 * network.private). Declared by the egress object (the loader fills it with
 * the other egress maps) and by the process object (inet_conn_request reads
 * it); pinned by name, so both are one map.
 */
#ifndef CUSTODE_INBOUND_MAP_BPF_H
#define CUSTODE_INBOUND_MAP_BPF_H

#include "maps.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, CUSTODE_MAX_NET_INBOUND);
	__type(key, struct custode_private_key);
	__type(value, __u32);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	CUSTODE_PIN_BY_NAME(custode_net_inbound);
} custode_net_inbound SEC(".maps");

#endif
