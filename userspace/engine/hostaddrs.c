// SPDX-License-Identifier: Apache-2.0
/* The host's own addresses, per network namespace (hostaddrs.h). */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include <bpf/bpf.h>

#include "custode/abi.h"
#include "custode/reasons.h"
#include "engine/hostaddrs.h"
#include "engine/maps.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

uint64_t custode_netns_cookie(void)
{
	uint64_t cookie = 0;
	socklen_t len = sizeof(cookie);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return 0;
	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &len) < 0)
		cookie = 0;
	close(fd);
	return cookie;
}

bool custode_hostaddrs_contains(int map_fd, uint64_t cookie, const uint8_t addr[16])
{
	struct custode_host_addr_key k;
	__u32 v;

	memset(&k, 0, sizeof(k));
	k.netns = cookie;
	memcpy(k.addr, addr, 16);
	return map_fd >= 0 && bpf_map_lookup_elem(map_fd, &k, &v) == 0;
}

struct addr_set {
	struct custode_host_addr_key *k;
	__u32 *ifindex;
	size_t n, cap;
};

static int set_add(struct addr_set *s, uint64_t cookie, const uint8_t addr[16], __u32 ifindex)
{
	for (size_t i = 0; i < s->n; i++)
		if (!memcmp(s->k[i].addr, addr, 16))
			return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		void *k = realloc(s->k, cap * sizeof(*s->k)), *x;

		if (!k)
			return -ENOMEM;
		s->k = k;
		if (!(x = realloc(s->ifindex, cap * sizeof(*s->ifindex))))
			return -ENOMEM;
		s->ifindex = x;
		s->cap = cap;
	}
	memset(&s->k[s->n], 0, sizeof(s->k[s->n]));
	s->k[s->n].netns = cookie;
	memcpy(s->k[s->n].addr, addr, 16);
	s->ifindex[s->n++] = ifindex;
	return 0;
}

int custode_ifaddr_parse(const struct nlmsghdr *nh, uint8_t addr[16], uint32_t *ifindex)
{
	const struct ifaddrmsg *ifa;
	const struct rtattr *rta, *local = NULL, *address = NULL;
	int len; /* signed, as the uapi macros expect: RTA_NEXT past an unaligned last attribute goes below 0 */

	if (nh->nlmsg_type != RTM_NEWADDR)
		return 0;
	if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(*ifa)))
		return -EBADMSG;
	ifa = NLMSG_DATA(nh);
	len = (int)(nh->nlmsg_len - NLMSG_LENGTH(sizeof(*ifa)));
	for (rta = IFA_RTA(ifa); RTA_OK(rta, len); rta = RTA_NEXT(rta, len))
		if (rta->rta_type == IFA_LOCAL)
			local = rta;
		else if (rta->rta_type == IFA_ADDRESS)
			address = rta;
	/* IFA_LOCAL where there is one (IFA_ADDRESS is then a point-to-point peer's), as getifaddrs(3) */
	rta = local ? local : address;
	if (!rta)
		return 0;
	if (ifa->ifa_family == AF_INET && RTA_PAYLOAD(rta) == 4) {
		memset(addr, 0, 10);
		addr[10] = addr[11] = 0xff;
		memcpy(&addr[12], RTA_DATA(rta), 4);
	} else if (ifa->ifa_family == AF_INET6 && RTA_PAYLOAD(rta) == 16) {
		memcpy(addr, RTA_DATA(rta), 16);
	} else {
		return 0;
	}
	*ifindex = ifa->ifa_index;
	return 1;
}

int custode_ifaddr_chunk(const void *buf, int n, uint32_t seq, uint32_t portid, bool *intr,
			 int (*add)(void *ctx, const uint8_t addr[16], uint32_t ifindex), void *ctx)
{
	const struct nlmsghdr *nh;
	int left = n, err;

	for (nh = buf; NLMSG_OK(nh, left); nh = NLMSG_NEXT(nh, left)) {
		uint8_t a[16];
		uint32_t ifindex;

		if (nh->nlmsg_seq != seq || nh->nlmsg_pid != portid)
			continue; /* not this request's answer */
		if (nh->nlmsg_flags & NLM_F_DUMP_INTR)
			*intr = true;
		if (nh->nlmsg_type == NLMSG_DONE) {
			/* a dump that failed part way ends with its error here */
			if (nh->nlmsg_len >= NLMSG_LENGTH(sizeof(int)) && *(const int *)NLMSG_DATA(nh) < 0)
				return *(const int *)NLMSG_DATA(nh);
			return *intr ? -EAGAIN : 1;
		}
		if (nh->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(nh);

			return nh->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error < 0 ? e->error : -EPROTO;
		}
		if ((err = custode_ifaddr_parse(nh, a, &ifindex)) < 0)
			return err;
		if (err && (err = add(ctx, a, ifindex)) < 0)
			return err;
	}
	/* whole messages only: anything left that is no message is a malformed datagram */
	return left > 0 ? -EBADMSG : 0;
}

struct add_ctx {
	struct addr_set *s;
	uint64_t cookie;
};

static int add_to_set(void *ctx, const uint8_t addr[16], uint32_t ifindex)
{
	struct add_ctx *c = ctx;

	return set_add(c->s, c->cookie, addr, ifindex);
}

/*
 * One RTM_GETADDR dump of the current namespace into s; -EAGAIN if the
 * addresses changed during it (NLM_F_DUMP_INTR: read again). The socket is
 * connected to the kernel, so no other process of the namespace (root in a
 * container the daemon watches) can send it anything, and each datagram's
 * sender is checked too.
 */
static int dump_addrs(uint64_t cookie, struct addr_set *s)
{
	struct {
		struct nlmsghdr nh;
		struct ifaddrmsg ifa;
	} req = {
		.nh = {.nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETADDR, .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
		       .nlmsg_seq = 1},
		.ifa = {.ifa_family = AF_UNSPEC},
	};
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK}, self, from;
	socklen_t slen = sizeof(self);
	struct add_ctx ctx = {.s = s, .cookie = cookie};
	size_t cap = 32768; /* a dump's messages come in datagrams of at most 32 KiB */
	char *buf = malloc(cap);
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE), err = 0;
	bool intr = false;

	if (fd < 0 || !buf) {
		err = fd < 0 ? -errno : -ENOMEM;
		goto out;
	}
	if (connect(fd, (struct sockaddr *)&kernel, sizeof(kernel)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&self, &slen) < 0 || send(fd, &req, sizeof(req), 0) < 0) {
		err = -errno;
		goto out;
	}
	while (!err) {
		socklen_t flen = sizeof(from);
		ssize_t n = recvfrom(fd, buf, cap, MSG_TRUNC, (struct sockaddr *)&from, &flen);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = -errno;
		else if (n == 0 || (size_t)n > cap)
			err = -EMSGSIZE;
		else if (flen >= sizeof(from) && from.nl_pid == 0) /* the kernel's, else not read */
			err = custode_ifaddr_chunk(buf, (int)n, req.nh.nlmsg_seq, self.nl_pid, &intr, add_to_set, &ctx);
	}
	if (err == 1)
		err = 0;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return err;
}

/* Every address of the current namespace (IPv4 as ::ffff:a.b.c.d): one address dump, not getifaddrs' links too. */
static int read_addrs(uint64_t cookie, struct addr_set *s)
{
	int err = -EAGAIN;

	for (int i = 0; i < 8 && err == -EAGAIN; i++) {
		s->n = 0;
		err = dump_addrs(cookie, s);
	}
	return err;
}

/* Make the map's entries for this namespace exactly s: add first, then remove the stale ones. */
static int sync_map(int fd, uint64_t cookie, const struct addr_set *s, struct custode_refusal *why)
{
	struct custode_host_addr_key cur, next, *stale = NULL;
	size_t n_stale = 0, cap = 0;
	bool first = true;
	int err = 0;

	for (size_t i = 0; i < s->n; i++)
		if (bpf_map_update_elem(fd, &s->k[i], &s->ifindex[i], BPF_ANY) < 0)
			return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED,
					      "the host address table (custode_host_addrs, %d entries): %s",
					      CUSTODE_MAX_HOST_ADDRS, strerror(errno));
	while (bpf_map_get_next_key(fd, first ? NULL : &cur, &next) == 0) {
		bool keep = next.netns != cookie;

		first = false;
		cur = next;
		for (size_t i = 0; i < s->n && !keep; i++)
			keep = !memcmp(s->k[i].addr, next.addr, 16);
		if (keep)
			continue;
		if (n_stale == cap) {
			void *p = realloc(stale, (cap = cap ? cap * 2 : 8) * sizeof(*stale));
			if (!p) {
				free(stale);
				return custode_refuse(why, ENOMEM, CUSTODE_REASON_RUN_SETUP_FAILED, "out of memory");
			}
			stale = p;
		}
		stale[n_stale++] = next;
	}
	for (size_t i = 0; i < n_stale; i++)
		if (bpf_map_delete_elem(fd, &stale[i]) < 0 && errno != ENOENT && !err)
			err = -errno;
	free(stale);
	return err ? custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "host address table: %s", strerror(-err))
		   : 0;
}

/* Read the watched namespace's addresses (entering it when it isn't ours) and sync them. */
static int sync_watch(struct custode_hostaddr_watch *w, struct custode_refusal *why)
{
	struct addr_set s = {0};
	int fd = custode_map_open(CUSTODE_MAP_HOST_ADDRS), home = -1, err;

	if (fd < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_ENGINE_MISMATCH,
				      "the pinned engine has no host address table (custode_host_addrs): %s",
				      strerror(errno));
	if (w->ns_fd >= 0) {
		home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
		if (home < 0 || setns(w->ns_fd, CLONE_NEWNET) < 0) {
			err = custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED,
					     "entering the run's network namespace: %s", strerror(errno));
			goto out;
		}
	}
	err = read_addrs(w->cookie, &s);
	if (home >= 0 && setns(home, CLONE_NEWNET) < 0)
		abort(); /* can't go home: nothing this process does after would be in the right namespace */
	if (err) {
		err = custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "reading the host's addresses: %s",
				     strerror(-err));
		goto out;
	}
	if (!(err = sync_map(fd, w->cookie, &s, why)))
		w->n_addrs = (unsigned)s.n;
out:
	free(s.k);
	free(s.ifindex);
	if (home >= 0)
		close(home);
	close(fd);
	return err;
}

int custode_hostaddrs_watch(struct custode_hostaddr_watch *w, int ns_fd, struct custode_refusal *why)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR};
	int home = -1, err = 0, size = 1 << 20;

	w->nl_fd = -1;
	w->ns_fd = ns_fd;
	w->n_addrs = 0;
	if (ns_fd >= 0) {
		home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
		if (home < 0 || setns(ns_fd, CLONE_NEWNET) < 0) {
			err = custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED,
					     "entering the run's network namespace: %s", strerror(errno));
			if (home >= 0)
				close(home);
			goto fail;
		}
	}
	/* the socket stays in the namespace it is made in */
	w->nl_fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
	if (w->nl_fd >= 0) {
		setsockopt(w->nl_fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
		if (bind(w->nl_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			err = -errno;
	} else {
		err = -errno;
	}
	w->cookie = custode_netns_cookie();
	if (home >= 0) {
		if (setns(home, CLONE_NEWNET) < 0)
			abort();
		close(home);
	}
	if (err) {
		err = custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "watching the host's addresses: %s",
				     strerror(-err));
		goto fail;
	}
	if (!w->cookie) {
		err = custode_refuse(why, EOPNOTSUPP, CUSTODE_REASON_RUN_SETUP_FAILED,
				     "this kernel has no network namespace cookies (SO_NETNS_COOKIE, 5.14+)");
		goto fail;
	}
	/* subscribed before reading: a change between the two is seen */
	if ((err = sync_watch(w, why)))
		goto fail;
	return 0;
fail:
	custode_hostaddrs_unwatch(w);
	return err;
}

int custode_hostaddrs_refresh(struct custode_hostaddr_watch *w, struct custode_refusal *why)
{
	char buf[8192];
	bool changed = false;
	ssize_t n;

	if (w->nl_fd < 0)
		return 0;
	for (;;) {
		n = recv(w->nl_fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0) {
			changed = true;
			continue;
		}
		if (n < 0 && errno == ENOBUFS) { /* messages lost: re-read anyway */
			changed = true;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		break;
	}
	return changed ? sync_watch(w, why) : 0;
}

void custode_hostaddrs_unwatch(struct custode_hostaddr_watch *w)
{
	if (w->nl_fd >= 0)
		close(w->nl_fd);
	if (w->ns_fd >= 0)
		close(w->ns_fd);
	w->nl_fd = w->ns_fd = -1;
}

#define MAX_WATCHES 256

static struct custode_hostaddr_watch watches[MAX_WATCHES];
static size_t n_watches;
static void (*on_new)(void *ctx, int fd);
static void *on_new_ctx;

void custode_hostaddrs_on_new(void (*notify)(void *ctx, int fd), void *ctx)
{
	on_new = notify;
	on_new_ctx = ctx;
}

/* Are these two namespace files the same namespace? */
static bool same_ns(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int custode_hostaddrs_watch_pid(int pid, struct custode_refusal *why)
{
	struct custode_hostaddr_watch w = CUSTODE_HOSTADDR_WATCH_INIT;
	uint64_t cookie = 0;
	int ns_fd = -1, err;

	if (pid > 0) {
		char path[64];
		int home;

		snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
		if ((ns_fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "%s: %s", path,
					      strerror(errno));
		/* its cookie, to tell whether it is watched already */
		home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
		if (home >= 0 && same_ns(ns_fd, home)) {
			/*
			 * Our own namespace (a systemd unit's, a host-network
			 * container's): no setns, which none is needed for (the
			 * daemon's unit allows network namespaces only,
			 * RestrictNamespaces=net, for the resolver).
			 */
			close(ns_fd);
			ns_fd = -1;
			cookie = custode_netns_cookie();
		} else if (home >= 0 && setns(ns_fd, CLONE_NEWNET) == 0) {
			cookie = custode_netns_cookie();
			if (setns(home, CLONE_NEWNET) < 0)
				abort();
		}
		if (home >= 0)
			close(home);
	} else {
		cookie = custode_netns_cookie();
	}
	for (size_t i = 0; i < n_watches; i++)
		if (cookie && watches[i].cookie == cookie) {
			if (ns_fd >= 0)
				close(ns_fd);
			return 0;
		}
	if (n_watches == MAX_WATCHES) {
		if (ns_fd >= 0)
			close(ns_fd);
		return custode_refuse(why, ENOSPC, CUSTODE_REASON_RUN_SETUP_FAILED,
				      "watching more than %d network namespaces' addresses", MAX_WATCHES);
	}
	if ((err = custode_hostaddrs_watch(&w, ns_fd, why)))
		return err;
	watches[n_watches++] = w;
	if (on_new)
		on_new(on_new_ctx, w.nl_fd);
	return 0;
}

int custode_hostaddrs_refresh_fd(int fd, struct custode_refusal *why)
{
	for (size_t i = 0; i < n_watches; i++)
		if (watches[i].nl_fd == fd)
			return custode_hostaddrs_refresh(&watches[i], why);
	return 0;
}

int custode_hostaddrs_cgroup_pid(const char *dir)
{
	char path[PATH_MAX];
	FILE *f;
	int pid = 0;
	DIR *d;
	struct dirent *de;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	if ((f = fopen(path, "re"))) {
		if (fscanf(f, "%d", &pid) != 1)
			pid = 0;
		fclose(f);
	}
	if (pid > 0 || !(d = opendir(dir)))
		return pid > 0 ? pid : 0;
	while (!pid && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		pid = custode_hostaddrs_cgroup_pid(path);
	}
	closedir(d);
	return pid;
}
