/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Options that change where a packet goes after the egress hooks decided on
 * its destination: IPv4 source routes (IP_OPTIONS as a socket option,
 * IP_RETOPTS as a control message) and IPv6 routing headers (IPV6_RTHDR,
 * IPV6_2292RTHDR, and IPV6_2292PKTOPTIONS, whose value is a buffer of
 * control messages that may hold one). Refused for runs with an egress
 * policy (net.route_option.denied): by the egress class's cgroup/setsockopt
 * program (hosts without BPF-LSM too) and by the process class's
 * socket_setsockopt and socket_sendmsg programs (per-message control
 * messages, which no cgroup hook sees).
 */
#ifndef CUSTODE_ROUTE_BPF_H
#define CUSTODE_ROUTE_BPF_H

#define CUSTODE_SOL_IP 0
#define CUSTODE_SOL_IPV6 41
#define CUSTODE_IP_OPTIONS 4
#define CUSTODE_IP_RETOPTS 7
#define CUSTODE_IPV6_2292PKTOPTIONS 6
#define CUSTODE_IPV6_2292RTHDR 5
#define CUSTODE_IPV6_RTHDR 57

static __always_inline bool custode_route_option(int level, int name)
{
	return (level == CUSTODE_SOL_IP && (name == CUSTODE_IP_OPTIONS || name == CUSTODE_IP_RETOPTS)) ||
	       (level == CUSTODE_SOL_IPV6 && (name == CUSTODE_IPV6_RTHDR || name == CUSTODE_IPV6_2292RTHDR ||
					      name == CUSTODE_IPV6_2292PKTOPTIONS));
}

#endif
