/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Compile a policy's network section (and --allow grants) into the engine's
 * egress keys for one run (include/custode/abi.h, docs/egress.md).
 */
#ifndef CUSTODE_POLICY_NET_H
#define CUSTODE_POLICY_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "custode/abi.h"
#include "policy/policy.h"

/* Most distinct egress keys (rule × port, after merging duplicates) one run may install. */
#define CUSTODE_MAX_NET_KEYS_PER_RUN 131072

/* An operator's --allow ADDR:PORT[/tcp|/udp]: a literal grant, private or not. */
struct custode_allow {
	uint8_t addr[16]; /* IPv4 as ::ffff:a.b.c.d */
	uint16_t port;
	uint8_t proto;
	char host[254];   /* non-empty: a host name, granted through the resolver (not a literal) */
};

/*
 * A host entry of the policy, for the resolver (userspace/dns, docs/resolver.md):
 * the resolver pins the addresses it answers for a matching name on these ports.
 */
struct custode_host_grant {
	char *name; /* lowercase, no trailing dot; a wildcard keeps its "*." */
	uint8_t proto;
	uint16_t *ports;
	size_t n_ports;
};

struct custode_net_ruleset {
	struct custode_net_key *keys;
	struct custode_net_rule *vals;
	size_t n;
	struct custode_private_key *priv;
	size_t n_priv;
	struct custode_private_key *inbound; /* map custode_net_inbound */
	size_t n_inbound;
	bool inbound_set; /* CUSTODE_RUN_INBOUND: only these peers may connect */
	bool listen;
	struct custode_host_grant *hosts; /* host entries: handed to the resolver, not to the kernel */
	size_t n_hosts;
};

/*
 * "203.0.113.10:443", "[2001:db8::10]:443/udp": a literal address, granted
 * even if private. "pypi.org:443": a host name, granted through custode's
 * resolver like a policy's host entry (its answers are vetted: no private
 * addresses).
 */
int custode_allow_parse(const char *s, struct custode_allow *out, struct custode_refusal *why);

int custode_policy_compile_net(const struct custode_policy *p, const struct custode_allow *allows, size_t n_allows,
			       uint32_t ruleset, struct custode_net_ruleset *out, struct custode_refusal *why);
void custode_net_ruleset_free(struct custode_net_ruleset *rs);

/* Format a 16-byte address: dotted quad for IPv4-mapped, RFC 5952 otherwise. */
const char *custode_addr_format(const uint8_t addr[16], char *buf, size_t len);
/* Parse an IPv4 or IPv6 literal (no brackets, no prefix) into the 16-byte form. */
int custode_addr_parse(const char *s, uint8_t out[16]);

#endif
