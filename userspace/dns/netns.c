// SPDX-License-Identifier: Apache-2.0
/*
 * The resolver in the runs' other network namespaces (attached containers,
 * pods): the same listeners as in its own (UDP and TCP on every 127/8
 * address of the loopback device, port 54), bound inside each namespace a
 * run uses by a short-lived thread that enters it (setns) and leaves with
 * it, so the resolver's own thread never changes namespace. The sockets join
 * the one event loop: a query arriving there is attributed by its token like
 * any other, pinned for its run, vetted the same way. No process per
 * namespace, no proxy.
 *
 * Where from: the egress hooks wake the resolver (ring buffer custode_dns_wake)
 * when a run's DNS comes from a namespace not served yet (that query is
 * denied: fail closed); the daemon asks for an attached run's namespace at
 * attach and at its restart (custode_resolver_serve_netns). Listeners close
 * once no run seen in their namespace is registered (resolver_nsl_gc), so
 * the resolver never keeps a dead container's namespace alive for long.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "custode/abi.h"
#include "custode/reasons.h"
#include "custode/resolver.h"
#include "dns/resolver.h"
#include "dns/resolver_int.h"
#include "engine/maps.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

#define MAX_WAKES 64

__u64 resolver_netns_cookie(int fd)
{
	__u64 c = 0;
	socklen_t l = sizeof(c);

	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &c, &l) < 0)
		return 0;
	return c;
}

/* Wake records taken off the ring buffer in one pass (handled after it: binding is slow). */
static struct custode_dns_wake wakes[MAX_WAKES];
static size_t n_wakes;

static int on_wake(void *ctx, void *data, size_t len)
{
	(void)ctx;
	if (len >= sizeof(struct custode_dns_wake) && n_wakes < MAX_WAKES)
		memcpy(&wakes[n_wakes++], data, sizeof(struct custode_dns_wake));
	return 0;
}

int resolver_nsl_open(struct custode_resolver *r, struct custode_refusal *why)
{
	struct epoll_event ev = {.events = EPOLLIN};
	__u64 key, next;

	if (getrandom(&r->gen, sizeof(r->gen), 0) != sizeof(r->gen))
		r->gen = (__u32)time(NULL) ^ (__u32)getpid();
	if (!r->gen)
		r->gen = 1;
	/* entries of an earlier resolver: meaningless under our generation, removed */
	while (bpf_map_get_next_key(r->netns_fd, NULL, &next) == 0) {
		key = next;
		if (bpf_map_delete_elem(r->netns_fd, &key) < 0)
			break;
	}
	r->wake_rb = ring_buffer__new(r->wake_fd, on_wake, r, NULL);
	if (!r->wake_rb)
		return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "the resolver's wake-up ring: %s",
				      strerror(errno));
	ev.data.u64 = EV_DATA(EV_WAKE, 0, 0);
	if (epoll_ctl(r->ep, EPOLL_CTL_ADD, ring_buffer__epoll_fd(r->wake_rb), &ev) < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "epoll: %s", strerror(errno));
	r->req_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->req_fd < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "eventfd: %s", strerror(errno));
	ev.data.u64 = EV_DATA(EV_REQ, 0, 0);
	if (epoll_ctl(r->ep, EPOLL_CTL_ADD, r->req_fd, &ev) < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "epoll: %s", strerror(errno));
	pthread_mutex_init(&r->req_lock, NULL);
	pthread_cond_init(&r->req_cond, NULL);
	r->req_init = true;
	return 0;
}

static void nsl_close(struct custode_resolver *r, int i)
{
	struct nsl *l = &r->nsl[i];

	if (!l->used)
		return;
	if (i > 0) {
		bpf_map_delete_elem(r->netns_fd, &l->cookie); /* from now on DNS there is denied (and wakes us) */
		bpf_map_delete_elem(r->seen_fd, &l->cookie);  /* a new run there wakes us at once */
	}
	if (l->udp >= 0) {
		epoll_ctl(r->ep, EPOLL_CTL_DEL, l->udp, NULL);
		close(l->udp);
	}
	if (l->tcp >= 0) {
		epoll_ctl(r->ep, EPOLL_CTL_DEL, l->tcp, NULL);
		close(l->tcp);
	}
	l->udp = l->tcp = -1;
	l->used = false;
	l->gen++;
	l->n_runs = 0;
}

void resolver_nsl_close_all(struct custode_resolver *r)
{
	for (int i = MAX_NSL - 1; i >= 0; i--)
		nsl_close(r, i);
	if (r->wake_rb)
		ring_buffer__free(r->wake_rb);
	r->wake_rb = NULL;
	if (r->req_fd >= 0)
		close(r->req_fd);
	r->req_fd = -1;
	if (r->req_init) {
		/* a caller still waiting gets its answer: none */
		pthread_mutex_lock(&r->req_lock);
		for (size_t k = 0; k < r->n_reqs; k++) {
			r->reqs[k]->err = custode_refuse(&r->reqs[k]->why, ESHUTDOWN, CUSTODE_REASON_DNS_NETNS_UNSERVED,
							 "the resolver stopped");
			r->reqs[k]->done = true;
		}
		r->n_reqs = 0;
		pthread_cond_broadcast(&r->req_cond);
		pthread_mutex_unlock(&r->req_lock);
	}
}

/* A run seen in listener i's namespace: it keeps the listeners open while it is registered. */
void resolver_nsl_saw_run(struct custode_resolver *r, int i, __u64 cgid)
{
	struct nsl *l;

	if (i <= 0 || i >= MAX_NSL || !r->nsl[i].used || !cgid)
		return;
	l = &r->nsl[i];
	for (size_t k = 0; k < l->n_runs; k++)
		if (l->runs[k] == cgid)
			return;
	if (l->n_runs == NSL_RUNS) {
		struct custode_run info;

		/* full: take the place of a run that ended; else this one is not tracked (the others keep it open) */
		for (size_t k = 0; k < l->n_runs; k++)
			if (bpf_map_lookup_elem(r->runs_fd, &l->runs[k], &info) < 0) {
				l->runs[k] = cgid;
				return;
			}
		return;
	}
	l->runs[l->n_runs++] = cgid;
}

/* What the binding thread does: enter the namespace, see whether it is served, else bind there. */
struct bind_job {
	struct custode_resolver *r;
	int ns_fd;
	__u64 expect; /* the cookie the namespace must have (a wake-up's), 0: any */
	__u64 cookie;
	int found; /* a listener already serving it, or -1 */
	int udp, tcp;
	int err;
	struct custode_refusal why;
};

static void *bind_thread(void *arg)
{
	struct bind_job *j = arg;
	int s;

	/* this thread's namespace only; it ends with the thread */
	if (setns(j->ns_fd, CLONE_NEWNET) < 0) {
		j->err = custode_refuse(&j->why, errno, CUSTODE_REASON_DNS_NETNS_UNSERVED,
					"entering the network namespace: %s%s", strerror(errno),
					errno == EPERM ? " (a systemd unit needs RestrictNamespaces=net)" : "");
		return NULL;
	}
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	j->cookie = resolver_netns_cookie(s);
	if (s >= 0)
		close(s);
	if (!j->cookie) {
		j->err = custode_refuse(&j->why, ENOTSUP, CUSTODE_REASON_DNS_NETNS_UNSERVED,
					"the namespace's cookie (SO_NETNS_COOKIE): %s", strerror(errno));
		return NULL;
	}
	if (j->expect && j->cookie != j->expect) {
		j->err = custode_refuse(&j->why, ESRCH, CUSTODE_REASON_DNS_NETNS_UNSERVED,
					"the process left the namespace it asked from");
		return NULL;
	}
	/* the resolver's thread waits for us: its listeners can be read */
	for (int i = 0; i < MAX_NSL; i++)
		if (j->r->nsl[i].used && j->r->nsl[i].cookie == j->cookie) {
			j->found = i;
			return NULL;
		}
	if ((j->udp = resolver_listener(SOCK_DGRAM, &j->why)) < 0 ||
	    (j->tcp = resolver_listener(SOCK_STREAM, &j->why)) < 0) {
		j->err = j->udp < 0 ? j->udp : j->tcp;
		if (j->why.reason == CUSTODE_REASON_DAEMON_RUNNING)
			custode_refuse(&j->why, EADDRINUSE, CUSTODE_REASON_DNS_NETNS_UNSERVED,
				       "port %d on that namespace's loopback device is taken", CUSTODE_RESOLVER_PORT);
		else
			j->why.reason = CUSTODE_REASON_DNS_NETNS_UNSERVED;
	}
	return NULL;
}

static bool same_ns(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/*
 * Listen in the network namespace of process pid for run cgid (expect: the
 * namespace's cookie, if known). The listener's index (0: our own
 * namespace), or a refusal (dns.netns_unserved).
 */
static int nsl_serve(struct custode_resolver *r, int pid, __u64 cgid, __u64 expect, struct custode_refusal *why)
{
	struct bind_job j = {.r = r, .expect = expect, .found = -1, .udp = -1, .tcp = -1};
	struct epoll_event ev = {.events = EPOLLIN};
	struct custode_dns_netns val = {.gen = r->gen};
	char path[64];
	pthread_t t;
	int home, i, err;

	if (pid <= 0)
		return custode_refuse(why, ESRCH, CUSTODE_REASON_DNS_NETNS_UNSERVED, "no process in the run");
	snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
	j.ns_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (j.ns_fd < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_DNS_NETNS_UNSERVED, "%s: %s", path, strerror(errno));
	home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (home >= 0 && same_ns(home, j.ns_fd)) {
		close(home);
		close(j.ns_fd);
		return 0; /* our own: served from the start */
	}
	if (home >= 0)
		close(home);
	err = pthread_create(&t, NULL, bind_thread, &j);
	if (err) {
		close(j.ns_fd);
		return custode_refuse(why, err, CUSTODE_REASON_DNS_NETNS_UNSERVED, "thread: %s", strerror(err));
	}
	pthread_join(t, NULL);
	close(j.ns_fd);
	if (j.err) {
		*why = j.why;
		return j.err;
	}
	if (j.found >= 0) {
		i = j.found;
		goto served;
	}
	for (i = 1; i < MAX_NSL && r->nsl[i].used; i++)
		;
	if (i == MAX_NSL) {
		close(j.udp);
		close(j.tcp);
		return custode_refuse(why, ENOSPC, CUSTODE_REASON_DNS_NETNS_UNSERVED,
				      "the resolver listens in %d network namespaces already", MAX_NSL - 1);
	}
	r->nsl[i].used = true;
	r->nsl[i].cookie = j.cookie;
	r->nsl[i].udp = j.udp;
	r->nsl[i].tcp = j.tcp;
	r->nsl[i].n_runs = 0;
	ev.data.u64 = EV_DATA(EV_UDP, r->nsl[i].gen, i);
	err = epoll_ctl(r->ep, EPOLL_CTL_ADD, j.udp, &ev);
	ev.data.u64 = EV_DATA(EV_TCP, r->nsl[i].gen, i);
	if (!err)
		err = epoll_ctl(r->ep, EPOLL_CTL_ADD, j.tcp, &ev);
	if (err) {
		err = errno;
		nsl_close(r, i);
		return custode_refuse(why, err, CUSTODE_REASON_DNS_NETNS_UNSERVED, "epoll: %s", strerror(err));
	}
	resolver_notice(r, "listening in network namespace %llu (pid %d)", (unsigned long long)j.cookie, pid);
served:
	resolver_nsl_saw_run(r, i, cgid);
	/* published last: the hooks redirect there once the listeners are in the loop */
	if (i > 0 && bpf_map_update_elem(r->netns_fd, &r->nsl[i].cookie, &val, BPF_ANY) < 0) {
		err = errno;
		nsl_close(r, i);
		return custode_refuse(why, err, CUSTODE_REASON_DNS_NETNS_UNSERVED, "custode_dns_netns: %s",
				      strerror(err));
	}
	return i;
}

/* A namespace the resolver could not serve: reported like a decision (the stream, the run's counts, the log). */
static void unserved(struct custode_resolver *r, __u64 cgid, const struct custode_refusal *why)
{
	struct decision_in d = {.run = resolver_run_get(r, cgid), .cgid = cgid, .proto = IPPROTO_UDP,
				.reason = CUSTODE_REASON_DNS_NETNS_UNSERVED, .enforced = true,
				.rcode = CUSTODE_DNS_REFUSED, .detail = why->detail};

	resolver_decide(r, &d);
}

void resolver_nsl_wake(struct custode_resolver *r)
{
	n_wakes = 0;
	ring_buffer__consume(r->wake_rb);
	for (size_t k = 0; k < n_wakes; k++) {
		const struct custode_dns_wake *w = &wakes[k];
		struct custode_refusal why = {0};
		struct custode_run info;

		/* only a registered run with a network policy makes us enter a namespace */
		if (bpf_map_lookup_elem(r->runs_fd, &w->run_cgid, &info) < 0 || !(info.flags & CUSTODE_RUN_NET) ||
		    (info.flags & CUSTODE_RUN_CANCELLED))
			continue;
		if (nsl_serve(r, (int)w->tgid, w->run_cgid, w->netns_cookie, &why) < 0)
			unserved(r, w->run_cgid, &why);
	}
}

void resolver_nsl_requests(struct custode_resolver *r)
{
	struct nsreq *todo[MAX_NSREQ];
	size_t n;
	uint64_t v;

	(void)!read(r->req_fd, &v, sizeof(v));
	pthread_mutex_lock(&r->req_lock);
	n = r->n_reqs;
	memcpy(todo, r->reqs, n * sizeof(todo[0]));
	r->n_reqs = 0;
	pthread_mutex_unlock(&r->req_lock);
	for (size_t k = 0; k < n; k++) {
		struct custode_refusal why = {0};
		int err = nsl_serve(r, todo[k]->pid, todo[k]->run_cgid, 0, &why);

		if (err < 0)
			unserved(r, todo[k]->run_cgid, &why);
		pthread_mutex_lock(&r->req_lock);
		todo[k]->err = err < 0 ? err : 0;
		todo[k]->why = why;
		todo[k]->done = true;
		pthread_cond_broadcast(&r->req_cond);
		pthread_mutex_unlock(&r->req_lock);
	}
}

/* Listeners whose runs have all ended (or were detached): closed, their namespace no longer served. */
void resolver_nsl_gc(struct custode_resolver *r)
{
	struct custode_run info;

	for (int i = 1; i < MAX_NSL; i++) {
		struct nsl *l = &r->nsl[i];
		size_t kept = 0;

		if (!l->used)
			continue;
		for (size_t k = 0; k < l->n_runs; k++)
			if (bpf_map_lookup_elem(r->runs_fd, &l->runs[k], &info) == 0)
				l->runs[kept++] = l->runs[k];
		l->n_runs = kept;
		if (!kept) {
			resolver_notice(r, "no run left in network namespace %llu: stopped listening there",
					(unsigned long long)l->cookie);
			nsl_close(r, i);
		}
	}
}

int custode_resolver_serve_netns(struct custode_resolver *r, int pid, __u64 run_cgid, int timeout_ms,
				 struct custode_refusal *why)
{
	struct nsreq q = {.pid = pid, .run_cgid = run_cgid};
	struct timespec until;
	uint64_t one = 1;
	bool taken = false;
	int err = 0;

	if (!r || !r->req_init)
		return custode_refuse(why, ENOTCONN, CUSTODE_REASON_DNS_NETNS_UNSERVED, "the resolver is not running");
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&r->req_lock);
	if (r->n_reqs == MAX_NSREQ || r->req_fd < 0) {
		pthread_mutex_unlock(&r->req_lock);
		return custode_refuse(why, EBUSY, CUSTODE_REASON_DNS_NETNS_UNSERVED, "the resolver is busy");
	}
	r->reqs[r->n_reqs++] = &q;
	(void)!write(r->req_fd, &one, sizeof(one));
	while (!q.done) {
		/* once the resolver took the request, it answers (binding is bounded): wait for that */
		taken = true;
		for (size_t k = 0; k < r->n_reqs; k++)
			if (r->reqs[k] == &q)
				taken = false;
		if (taken) {
			pthread_cond_wait(&r->req_cond, &r->req_lock);
			continue;
		}
		if (pthread_cond_timedwait(&r->req_cond, &r->req_lock, &until) == ETIMEDOUT && !q.done) {
			for (size_t k = 0; k < r->n_reqs; k++)
				if (r->reqs[k] == &q) {
					r->reqs[k] = r->reqs[--r->n_reqs];
					err = custode_refuse(why, ETIMEDOUT, CUSTODE_REASON_DNS_NETNS_UNSERVED,
							     "the resolver did not answer in time");
					break;
				}
			if (err)
				break;
		}
	}
	pthread_mutex_unlock(&r->req_lock);
	if (err)
		return err;
	if (q.err)
		*why = q.why;
	return q.err;
}
