/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host's own addresses (map custode_host_addrs, include/custode/abi.h):
 * every address of a network namespace a run lives in, so the egress hook
 * and the resolver's vetting can tell "a local service reached through a
 * non-loopback address" (net.host_address) from a remote destination.
 *
 * A watch is a namespace custode keeps current: an rtnetlink socket made in
 * that namespace, subscribed to address changes, whose messages trigger a
 * full re-read (an RTM_GETADDR dump) and a sync of that namespace's entries (new
 * addresses added before stale ones are removed). The launcher watches its
 * own namespace for the run's lifetime; the daemon watches its own and those
 * of attached cgroups.
 */
#ifndef CUSTODE_ENGINE_HOSTADDRS_H
#define CUSTODE_ENGINE_HOSTADDRS_H

#include <stdbool.h>
#include <stdint.h>

#include "util/reasons.h"

struct custode_hostaddr_watch {
	int nl_fd; /* rtnetlink, RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR; -1: none */
	int ns_fd; /* the namespace (for re-reads from another one); -1: the caller's */
	uint64_t cookie;
	unsigned n_addrs; /* at the last sync */
};

#define CUSTODE_HOSTADDR_WATCH_INIT {.nl_fd = -1, .ns_fd = -1}

/*
 * Start watching a namespace (ns_fd: an open /proc/PID/ns/net, taken over by
 * the watch; -1: the caller's own) and sync its addresses now. A failure
 * (no engine map, full map, netlink refused) is a refusal: without the
 * table the classifier can't tell local services from remote ones.
 */
int custode_hostaddrs_watch(struct custode_hostaddr_watch *w, int ns_fd, struct custode_refusal *why);
/* Drain the watch's socket; when addresses changed (or messages were lost), sync again. */
int custode_hostaddrs_refresh(struct custode_hostaddr_watch *w, struct custode_refusal *why);
/* Stop watching; the namespace's entries stay (they only deny). */
void custode_hostaddrs_unwatch(struct custode_hostaddr_watch *w);

/*
 * One message of an RTM_GETADDR dump: 1 and its address (IFA_LOCAL, else
 * IFA_ADDRESS; IPv4 as ::ffff:a.b.c.d) and interface index if it is an
 * RTM_NEWADDR with an IPv4 or IPv6 address; 0 for any other message or
 * family; -EBADMSG if it is too short to be one. nh->nlmsg_len must lie
 * within the buffer (NLMSG_OK).
 */
struct nlmsghdr;
int custode_ifaddr_parse(const struct nlmsghdr *nh, uint8_t addr[16], uint32_t *ifindex);
/*
 * One datagram (n bytes) of the dump answering request seq on the socket of
 * port id portid: each address through add (which may fail: -errno). 1 at
 * the dump's end, 0 if more follows, -EAGAIN at the end of a dump that
 * changes interrupted (*intr, kept across datagrams), -errno for an error
 * reply, a failed dump or a malformed datagram. Messages of another request
 * or port are skipped.
 */
int custode_ifaddr_chunk(const void *buf, int n, uint32_t seq, uint32_t portid, bool *intr,
			 int (*add)(void *ctx, const uint8_t addr[16], uint32_t ifindex), void *ctx);

/* The current thread's network namespace cookie (SO_NETNS_COOKIE); 0 if unknown. */
uint64_t custode_netns_cookie(void);
/* Is addr (16 bytes, IPv4 mapped) one of the addresses of namespace `cookie` in the pinned map? */
bool custode_hostaddrs_contains(int map_fd, uint64_t cookie, const uint8_t addr[16]);

/*
 * The process-wide set of watched namespaces (the daemon: its own, and each
 * attached cgroup's). Watch the namespace of pid (0: this process's) unless
 * it is watched already; a new watch's socket is handed to the notify
 * function set by custode_hostaddrs_on_new (the daemon's event loop, its
 * ctx), which calls custode_hostaddrs_refresh_fd when it is readable.
 */
int custode_hostaddrs_watch_pid(int pid, struct custode_refusal *why);
void custode_hostaddrs_on_new(void (*notify)(void *ctx, int fd), void *ctx);
int custode_hostaddrs_refresh_fd(int fd, struct custode_refusal *why);
/* The first process of a cgroup (recursively), 0 if none: whose namespace an attached run uses. */
int custode_hostaddrs_cgroup_pid(const char *cgroup_dir);
#endif
