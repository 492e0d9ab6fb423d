/* SPDX-License-Identifier: Apache-2.0 */
/*
 * custode's resolver (docs/resolver.md): one per host, hosted by `custode
 * daemon`. It listens on every 127/8 address of the loopback device at
 * CUSTODE_RESOLVER_PORT (UDP and TCP), attributes each query to its run by
 * the token the egress hooks wrote into the destination address, answers
 * only names the run's policy grants, resolves them upstream itself,
 * re-encodes the answer from vetted data, and pins the answered addresses for
 * that run before it replies. Library code: it reports through callbacks and
 * never logs.
 */
#ifndef CUSTODE_DNS_RESOLVER_H
#define CUSTODE_DNS_RESOLVER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <linux/types.h>

#include "util/reasons.h"

#define CUSTODE_RESOLVER_MAX_UPSTREAMS 3

struct custode_resolver_config {
	struct sockaddr_storage upstream[CUSTODE_RESOLVER_MAX_UPSTREAMS];
	socklen_t upstream_len[CUSTODE_RESOLVER_MAX_UPSTREAMS];
	size_t n_upstream;
	uint32_t ttl_min, ttl_max; /* seconds: pins live clamp(TTL, min, max) + grace */
	uint32_t grace;
	uint32_t pin_quota;        /* pins per run; a full quota fails that run's lookups closed */
	unsigned deny_rcode;       /* CUSTODE_DNS_REFUSED (default) or CUSTODE_DNS_NXDOMAIN */
	bool cname_strict;         /* every CNAME target must be granted too (default: trusted) */
	unsigned attempt_ms;       /* per upstream attempt (UDP, or TCP after truncation) */
	unsigned total_ms;         /* per query, every attempt included */
};

/* Defaults, documented in docs/resolver.md. */
void custode_resolver_defaults(struct custode_resolver_config *cfg);

/* One decision about one query, for the daemon to log. */
struct custode_resolver_decision {
	__u64 run_id;
	__u64 run_cgid;
	const char *name;  /* the question's name (lowercase) or "" */
	const char *type;  /* "A", "AAAA", ... */
	const char *proto; /* "udp" or "tcp" */
	int reason;        /* 0: answered; else a CUSTODE_REASON_DNS_* code */
	bool enforced;     /* false in audit mode: reported, not applied */
	unsigned rcode;    /* what the run got */
	size_t n_addrs;    /* addresses answered (and pinned) */
	const uint8_t (*addrs)[16];
	size_t dropped;    /* special addresses dropped */
	size_t pins;       /* pins written or renewed */
	uint32_t ttl;      /* TTL given to the run */
	const char *detail;
};

struct custode_resolver_hooks {
	void (*decision)(void *ctx, const struct custode_resolver_decision *d);
	void (*notice)(void *ctx, const char *msg); /* operational messages (upstream trouble, map full) */
	void *ctx;
};

struct custode_resolver;

/*
 * Open the engine's resolver maps, bind the listeners (refused with
 * daemon.running if the port is taken), and publish the resolver as up in
 * the current network namespace. The caller holds the engine open (egress
 * class) and the daemon lock.
 */
int custode_resolver_open(const struct custode_resolver_config *cfg, const struct custode_resolver_hooks *hooks,
			  struct custode_resolver **out, struct custode_refusal *why);
/*
 * Listen in the network namespace of process pid too, for run run_cgid (an
 * attached container's): callable from any thread while the resolver serves;
 * waits for the resolver's answer (at most timeout_ms before it takes the
 * request). 0, or a refusal (dns.netns_unserved) saying why. The listeners
 * close by themselves once no run seen in that namespace is registered.
 */
int custode_resolver_serve_netns(struct custode_resolver *r, int pid, __u64 run_cgid, int timeout_ms,
				 struct custode_refusal *why);
/* Serve until *stop becomes non-zero. 0, or a negative errno on a fatal error. */
int custode_resolver_serve(struct custode_resolver *r, volatile sig_atomic_t *stop);
/* Withdraw (DNS is denied from now on), close everything. */
void custode_resolver_close(struct custode_resolver *r);

/*
 * Is a live resolver serving this process's network namespace? 1 yes, 0 no
 * (why says so: none running, stale, another namespace), negative errno if
 * the engine's resolver state can't be read.
 */
int custode_resolver_running(struct custode_refusal *why);

/* A run's resolver counters (0, or -ENOENT if the resolver never saw the run); delete them after. */
struct custode_dns_counters;
int custode_resolver_counters(__u64 run_cgid, struct custode_dns_counters *out, bool delete_after);

/* Format "name.denied=2, dns.pins_full=1" from counters; "" if none. */
void custode_resolver_counters_format(const struct custode_dns_counters *c, char *out, size_t len);

#endif
