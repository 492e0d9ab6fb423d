/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The resolver's side of the ABI, shared by the BPF egress hooks
 * (bpf/net.bpf.c) and the resolver (userspace/dns). docs/resolver.md.
 *
 * Every DNS query of a run (TCP or UDP to port 53, any address) is redirected
 * by the connect/sendmsg hooks to 127.T.T.T:CUSTODE_RESOLVER_PORT, where T is
 * a 24-bit token the hook allocated for the run (map custode_dns_token_run).
 * The resolver reads the destination back (IP_PKTINFO, getsockname) and finds
 * the run from the token: the attribution is the kernel's, never anything the
 * run sends. recvmsg/getpeername hooks put the original server back.
 */
#ifndef CUSTODE_RESOLVER_H
#define CUSTODE_RESOLVER_H

#include "custode/types.h"

/*
 * The resolver's port, on every 127/8 address of the loopback device. A
 * privileged port, so no run (and no unprivileged user) can bind it; fixed,
 * so the hooks test it without a map lookup.
 */
#define CUSTODE_RESOLVER_PORT 54
/* Tokens: 0x010000..0xfffffe (127.1.0.0 .. 127.255.255.254: never 127.0.0.x, never the /8 broadcast). */
#define CUSTODE_DNS_TOKEN_MIN 0x010000u
#define CUSTODE_DNS_TOKEN_MAX 0xfffffeu
#define CUSTODE_MAX_DNS_TOKENS 16384
#define CUSTODE_MAX_DNS_ORIG 65536

enum custode_dns_cfg_flags {
	CUSTODE_DNS_UP = 1u << 0, /* a resolver serves netns_cookie until alive_until_ns */
};

/*
 * Value of map custode_dns_cfg (array, one entry), written by the resolver
 * only. The hooks redirect DNS only while flags has CUSTODE_DNS_UP and
 * alive_until_ns (CLOCK_BOOTTIME) is in the future: the resolver renews it
 * every second; one that dies (even by SIGKILL) stops renewing and DNS is
 * denied (net.dns.denied) within CUSTODE_DNS_HEARTBEAT_NS. Missing or stale
 * state means deny.
 */
struct custode_dns_cfg {
	__u64 alive_until_ns;
	__u64 netns_cookie; /* the network namespace the resolver itself lives in */
	__u32 flags;        /* enum custode_dns_cfg_flags */
	__u32 pid;          /* the resolver's pid (informational) */
	__u32 gen;          /* this resolver's generation: custode_dns_netns entries of another one mean nothing */
	__u32 _pad0;
};
#define CUSTODE_DNS_HEARTBEAT_NS (3ull * 1000000000ull)

/*
 * Runs in other network namespaces (attached containers, pods): the resolver
 * also listens at CUSTODE_RESOLVER_PORT on the loopback device of each
 * namespace a run uses (the same sockets as its own, bound there by a thread
 * that entered the namespace), so the redirect works unchanged there.
 *
 * custode_dns_netns: netns cookie -> struct custode_dns_netns, written by the
 * resolver once its listeners there are in its loop, deleted when the last
 * run there has ended. The hooks redirect in a namespace only if it is the
 * resolver's own or has an entry of the live resolver's generation.
 *
 * A run's DNS attempt in a namespace with no entry is denied (net.dns.denied)
 * and wakes the resolver through the ring buffer custode_dns_wake (a struct
 * custode_dns_wake), at most once per CUSTODE_DNS_WAKE_NS per namespace
 * (custode_dns_netns_seen, an LRU: netns cookie -> last wake, boot ns). The
 * resolver then listens there (or reports dns.netns_unserved); the client's
 * next try is served.
 */
#define CUSTODE_MAX_DNS_NETNS 1024
#define CUSTODE_DNS_WAKE_NS (1ull * 1000000000ull)

struct custode_dns_netns {
	__u32 gen;   /* the generation of the resolver that listens there (custode_dns_cfg.gen) */
	__u32 flags; /* none yet */
};

struct custode_dns_wake {
	__u64 netns_cookie;
	__u64 run_cgid;
	__u32 tgid; /* the process that tried: the resolver enters its network namespace */
	__u32 _pad0;
};

/*
 * Value of map custode_dns_orig (LRU hash keyed by the client socket's
 * cookie): the server a run's query was addressed to, for the recvmsg and
 * getpeername hooks to put back.
 */
struct custode_dns_orig {
	__u8 addr[16];  /* IPv4 as ::ffff:a.b.c.d */
	__u16 port;     /* network byte order, as in sockaddr */
	__u16 family;   /* AF_INET or AF_INET6: the socket's family */
	__u32 _pad0;
};

/*
 * Value of map custode_dns_counters (hash keyed by the run cgroup id): the
 * resolver's decisions for one run, written by the resolver alone (a single
 * writer, so no increment is lost), read by the launcher at the end of a run.
 */
#define CUSTODE_DNS_REASONS 8 /* denials[reason - CUSTODE_REASON_DNS_NAME_DENIED] */
struct custode_dns_counters {
	__u64 queries;  /* queries attributed to the run */
	__u64 answered; /* answered with at least one vetted address */
	__u64 pins;     /* pins written or renewed */
	__u64 _reserved;
	__u64 denials[CUSTODE_DNS_REASONS];
};

_Static_assert(sizeof(struct custode_dns_cfg) == 32, "custode_dns_cfg ABI");
_Static_assert(sizeof(struct custode_dns_netns) == 8, "custode_dns_netns ABI");
_Static_assert(sizeof(struct custode_dns_wake) == 24, "custode_dns_wake ABI");
_Static_assert(sizeof(struct custode_dns_orig) == 24, "custode_dns_orig ABI");
_Static_assert(sizeof(struct custode_dns_counters) == 96, "custode_dns_counters ABI");

#endif
