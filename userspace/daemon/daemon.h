/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `custode daemon`: the host's one long-lived custode process. Today it hosts
 * the resolver (userspace/dns, docs/resolver.md); bundle watching, attach
 * and a control socket build on it later. Foreground, logs to stderr.
 */
#ifndef CUSTODE_DAEMON_H
#define CUSTODE_DAEMON_H

#include <stddef.h>
#include <sys/socket.h>

#include "util/reasons.h"

#define CUSTODE_DAEMON_LOCK "/run/custode/daemon.lock"

int custode_cmd_daemon(int argc, char **argv);

/* "ADDR", "ADDR:PORT", "[V6]:PORT" (port 53 when absent) into a socket address. 0 or -EINVAL. */
int custode_daemon_parse_upstream(const char *s, struct sockaddr_storage *out, socklen_t *len);
/* The nameservers of a resolv.conf text, at most max. Returns how many. */
size_t custode_daemon_resolv_conf(const char *text, struct sockaddr_storage *out, socklen_t *lens, size_t max);

#endif
