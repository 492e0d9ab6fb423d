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

#include "daemon/service.h"
#include "daemon/stream.h"
#include "dns/resolver.h"

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

/* The command line into o; true when the command ends here, with *code (--help, a usage error said on stderr). */
bool custode_daemon_parse_options(int argc, char **argv, struct daemon_opts *o, int *code);
/*
 * What the options say together, and the upstreams of /etc/resolv.conf when
 * none was given: 0, or the exit status (said on stderr).
 */
int custode_daemon_check_options(int argc, char **argv, struct daemon_opts *o);

#endif
