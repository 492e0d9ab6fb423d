/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `custode daemon`: the host's one long-lived custode process
 * (docs/operations.md). It adopts the pinned engine and the runs it holds,
 * owns the ring-buffer consumer (the denial stream: stdout, a rotating file,
 * `custode events`), serves the control socket (attach, detach, runs,
 * status, metrics), metrics, the resolver (docs/resolver.md, in a thread of
 * its own) and bundle watching. Foreground; logs to stderr.
 *
 * Everything else runs in one epoll loop (daemon/loop.h, a handle). Other
 * parts of the daemon plug into it with the functions below.
 */
#ifndef CUSTODE_DAEMON_H
#define CUSTODE_DAEMON_H

#include <stddef.h>
#include <sys/socket.h>

#include "util/reasons.h"

#define CUSTODE_DAEMON_LOCK "/run/custode/daemon.lock"

struct custode_loop;

int custode_cmd_daemon(int argc, char **argv);

/*
 * Watch fd (readable) in the daemon's loop l: handler(arg) runs in the loop's
 * thread each time fd is readable; it must not block for long. A negative
 * return stops the daemon (exit 1, the value logged as an errno). Up to 16 per loop.
 */
int custode_daemon_add_fd(struct custode_loop *l, int fd, int (*handler)(void *arg), void *arg);
int custode_daemon_remove_fd(struct custode_loop *l, int fd);
/* Call handler(arg) every period_ms in the loop's thread (same rules). Returns a timer id. */
int custode_daemon_add_timer(struct custode_loop *l, unsigned period_ms, int (*handler)(void *arg), void *arg);

/*
 * A DNS upstream: "ADDR", "ADDR:PORT", "[V6]:PORT" (port 53 when absent; util/sockaddr.h)
 * into a socket address, refusing the resolver's own port on loopback. 0 or -EINVAL.
 */
int custode_daemon_parse_upstream(const char *s, struct sockaddr_storage *out, socklen_t *len);
/* The nameservers of a resolv.conf text, at most max. Returns how many. */
size_t custode_daemon_resolv_conf(const char *text, struct sockaddr_storage *out, socklen_t *lens, size_t max);

#endif
