/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `custode daemon`'s command line (options.c), private to daemon/daemon.c:
 * the options into a struct daemon_opts, then what they say together.
 */
#ifndef CUSTODE_DAEMON_OPTIONS_H
#define CUSTODE_DAEMON_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "daemon/service.h"
#include "daemon/stream.h"
#include "dns/resolver.h"
#include "util/reasons.h"

struct custode_trust;

/* What the command line says. */
struct daemon_opts {
	struct custode_resolver_config cfg;
	bool verbose, no_resolver;
	const char *bundles_dir, *bundle_state, *trust_files[32];
	size_t n_trust;
	uint32_t threshold;
	struct custode_stream_opts so;
	struct custode_service_opts svc;
};

/*
 * The command line into *o, every flag checked before the daemon opens
 * anything (a usage error is not worth a restart loop): numbers in range,
 * addresses parsed, --events-file opened (created) and --metrics-file's
 * directory written to as the daemon will, --bundles read, the --trust keys
 * loaded, --bundle-state created. 0; 1 for --help; -EINVAL with *why:
 * daemon.usage, or no reason (CUSTODE_REASON_NONE) for an option getopt
 * refused (its words are in the detail).
 */
int custode_daemon_options(int argc, char **argv, struct daemon_opts *o, struct custode_refusal *why);
/* The daemon's help text. */
void custode_daemon_usage(FILE *f);
/* The --trust keys with the --threshold, into *trust (set even on failure: the caller frees it). */
int custode_daemon_trust_load(const struct daemon_opts *o, struct custode_trust **trust, struct custode_refusal *why);
/*
 * With the resolver on and no --upstream: the nameservers of resolv_conf
 * (/etc/resolv.conf). 0, or -ENOENT with *why (dns.upstream) when it names none.
 */
int custode_daemon_default_upstreams(struct daemon_opts *o, const char *resolv_conf, struct custode_refusal *why);

#endif
