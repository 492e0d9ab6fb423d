/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A run's name grants: the host entries of its policy ("pypi.org",
 * "*.pythonhosted.org") with the (protocol, port) pairs each grants, handed
 * from the launcher to the resolver in CUSTODE_RUNS_DIR/<run id>.names.json
 * (root-owned, written atomically before the run is registered), and the
 * matching rules (docs/resolver.md):
 *   - exact names match themselves only;
 *   - "*.example.com" matches one or more labels below example.com, never
 *     example.com itself;
 *   - case-insensitive, a trailing dot ignored; names are validated (labels
 *     of [A-Za-z0-9_-], 1..63 bytes, at most 253 bytes).
 */
#ifndef CUSTODE_DNS_NAMES_H
#define CUSTODE_DNS_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "dns/wire.h"
#include "policy/net.h"

#define CUSTODE_DNS_NAMES_MAX_BYTES (16u << 20)

struct custode_dns_port {
	uint8_t proto; /* IPPROTO_TCP or IPPROTO_UDP */
	uint16_t port;
};

struct custode_dns_grant {
	char name[CUSTODE_DNS_MAX_TEXT_NAME + 1]; /* lowercase; for a wildcard, the suffix after "*." */
	bool wildcard;
	struct custode_dns_port *ports; /* sorted, distinct */
	size_t n_ports;
};

struct custode_dns_names {
	__u64 run_id;
	struct custode_dns_grant *grants; /* sorted by (wildcard, name), distinct */
	size_t n;
};

/* Path of a run's names file. */
void custode_dns_names_path(__u64 run_id, char *out, size_t len);

/* Write the host grants of a compiled egress policy for the resolver (atomically, 0600). */
int custode_dns_names_write(__u64 run_id, const struct custode_host_grant *hosts, size_t n_hosts);
/* Remove the run's names file; whether there was one (or it could not be told: not ENOENT). */
bool custode_dns_names_remove(__u64 run_id);

/*
 * Build the grants from host entries (merging entries that name the same
 * pattern) or from the text of a names file (strict: unknown fields, bad
 * names or ports refused). 0, -EINVAL or -ENOMEM; *out untouched on failure.
 */
int custode_dns_names_build(__u64 run_id, const struct custode_host_grant *hosts, size_t n_hosts,
			    struct custode_dns_names *out);
int custode_dns_names_parse(const char *text, size_t len, struct custode_dns_names *out);
int custode_dns_names_load(__u64 run_id, struct custode_dns_names *out);
void custode_dns_names_free(struct custode_dns_names *n);

/*
 * The (protocol, port) pairs `name` is granted: the union over every grant
 * that matches it, sorted and distinct, at most max. Returns how many (0: the
 * name is not granted). A name that is not a valid host name matches nothing.
 */
size_t custode_dns_names_match(const struct custode_dns_names *n, const struct custode_dns_name *name,
			       struct custode_dns_port *out, size_t max);

#endif
