/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the launcher (custode run) does for the resolver: hand it the run's
 * name grants before the run is registered, and collect its counts at the
 * end. docs/resolver.md.
 */
#ifndef CUSTODE_DNS_LAUNCH_H
#define CUSTODE_DNS_LAUNCH_H

#include <stddef.h>
#include <linux/types.h>

#include "policy/net.h"
#include "util/reasons.h"

/*
 * A policy with host entries needs a live resolver serving this network
 * namespace (else refused: dns.no_resolver); its names file is written
 * atomically. Nothing to do without host entries.
 */
int custode_dns_run_prepare(__u64 run_id, const struct custode_net_ruleset *net, struct custode_refusal *why);

/* The resolver's denials for a finished run ("dns.name.denied=2, ..."; "" if none); its counters are deleted. */
void custode_dns_run_summary(__u64 run_cgid, char *out, size_t len);

#endif
