/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Vetting an upstream answer (docs/resolver.md): what custode re-encodes for
 * the run is the CNAME chain of the question and the A/AAAA records of its
 * last name that pass the address classifier (include/custode/addr.h) —
 * nothing else of the upstream message survives. Pure logic, no I/O.
 */
#ifndef CUSTODE_DNS_VET_H
#define CUSTODE_DNS_VET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dns/wire.h"

#define CUSTODE_DNS_MAX_CHAIN 8  /* CNAME hops followed; a longer chain is refused */
#define CUSTODE_DNS_MAX_ADDRS 32 /* addresses kept per answer; more are ignored */

struct custode_dns_vet_opts {
	/*
	 * CNAME targets: trusted (false, the default: the data of the granted
	 * name, which could point its own A records anywhere public as well) or
	 * each must itself be granted (true: name_ok decides).
	 */
	bool cname_strict;
	bool (*name_ok)(void *ctx, const struct custode_dns_name *name);
	/* a special address the run may have anyway (network.private literals; audit mode) */
	bool (*granted)(void *ctx, const uint8_t addr[16]);
	/* one of the host's own addresses (class CUSTODE_ADDR_HOST: vetoed like the special ones) */
	bool (*host)(void *ctx, const uint8_t addr[16]);
	void *ctx;
};

struct custode_dns_vetted {
	unsigned rcode;  /* NOERROR (addresses, or none: NODATA), NXDOMAIN, or SERVFAIL/deny with a reason */
	int reason;      /* 0, or CUSTODE_REASON_DNS_*: why this is not a usable answer */
	bool deny;       /* answer as denied (the resolver's deny rcode), not with rcode */
	char detail[192];
	struct custode_dns_name chain[CUSTODE_DNS_MAX_CHAIN + 1]; /* chain[0]: the question's name */
	size_t n_chain;
	uint8_t addrs[CUSTODE_DNS_MAX_ADDRS][16];
	size_t n_addrs;
	uint32_t ttl;    /* least TTL of the records used (chain and addresses) */
	size_t dropped;  /* special addresses dropped */
	uint8_t first_dropped[16];
	int first_dropped_class;
};

/*
 * Does resp answer our query (id, name, type)? A response, opcode QUERY, the
 * same id, one question equal to ours (case-insensitively) with class IN.
 */
bool custode_dns_answers(const struct custode_dns_msg *resp, uint16_t id, const struct custode_dns_name *name,
			 uint16_t type);

/* Vet resp, an upstream answer to (name, type), into *out (always filled). */
void custode_dns_vet(const struct custode_dns_name *name, uint16_t type, const struct custode_dns_msg *resp,
		     const struct custode_dns_vet_opts *o, struct custode_dns_vetted *out);

#endif
