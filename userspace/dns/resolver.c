// SPDX-License-Identifier: Apache-2.0
/*
 * The resolver: one thread, one epoll loop. Per query: attribute (token in
 * the destination address → run), check the name, ask upstream over a fresh
 * connected UDP socket (random source port, random ID; TCP when truncated),
 * vet, pin, then reply. docs/resolver.md has the reasons for each choice.
 *
 * This file: the lifecycle (open, serve, close) and the event loop; what
 * each other file of the resolver owns is in resolver_int.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <bpf/bpf.h>

#include "custode/abi.h"
#include "custode/resolver.h"
#include "dns/resolver.h"
#include "dns/resolver_int.h"
#include "engine/maps.h"
#include "state/state.h"
#include "util/time.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

uint64_t resolver_now_ms(void)
{
	return (uint64_t)custode_mono_ms();
}

__u64 resolver_boot_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

uint16_t resolver_rand16(struct custode_resolver *r)
{
	uint16_t v;

	if (r->rnd_left < 2) {
		ssize_t n = getrandom(r->rnd, sizeof(r->rnd), 0);
		r->rnd_left = n > 0 ? (size_t)n : 0;
		if (r->rnd_left < 2) { /* cannot happen after the pool initialised; still never a fixed ID */
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			return (uint16_t)(ts.tv_nsec ^ (ts.tv_nsec >> 16));
		}
	}
	memcpy(&v, r->rnd + r->rnd_left - 2, 2);
	r->rnd_left -= 2;
	return v;
}

void resolver_notice(struct custode_resolver *r, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!r->hooks.notice)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	r->hooks.notice(r->hooks.ctx, msg);
}

void custode_resolver_defaults(struct custode_resolver_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->ttl_min = 30;
	cfg->ttl_max = 3600;
	cfg->grace = 30;
	cfg->pin_quota = 4096;
	cfg->deny_rcode = CUSTODE_DNS_REFUSED;
	cfg->attempt_ms = 2000;
	cfg->total_ms = 5000;
}

static __u32 map_id(int fd)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	return fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0 ? info.id : 0;
}

/* Is the engine we serve still the pinned one? (`engine unload --force` and a reload replace it.) */
static bool engine_still_ours(struct custode_resolver *r)
{
	int fd = custode_map_open(CUSTODE_MAP_DNS_CFG);
	__u32 id = map_id(fd);

	if (fd >= 0)
		close(fd);
	return id && id == r->cfg_map_id;
}

static int heartbeat(struct custode_resolver *r, bool up)
{
	struct custode_dns_cfg c = {0};
	__u32 zero = 0;

	if (up) {
		c.alive_until_ns = resolver_boot_ns() + CUSTODE_DNS_HEARTBEAT_NS;
		c.netns_cookie = r->netns;
		c.flags = CUSTODE_DNS_UP;
		c.gen = r->gen;
		c.pid = (__u32)getpid();
	}
	return bpf_map_update_elem(r->cfg_fd, &zero, &c, BPF_ANY) < 0 ? -errno : 0;
}

/* ---- lifecycle ---- */

/* The pins, runs and tokens tables (resolver_int.h): growing, from a few slots. */
static int tables_init(struct custode_resolver *r)
{
	const struct custode_table_spec pins = {
		.key_size = sizeof(struct custode_pin_key), .val_size = sizeof(__u64), .slots = 1024};
	const struct custode_table_spec runs = {.key_size = sizeof(__u64), .val_size = sizeof(struct run *), .slots = 64};
	const struct custode_table_spec tokens = {.key_size = sizeof(__u32), .val_size = sizeof(__u64), .slots = 64};
	int err;

	if ((err = custode_table_init(&r->pins, &pins)) < 0 || (err = custode_table_init(&r->runs, &runs)) < 0)
		return err;
	return custode_table_init(&r->tokens, &tokens);
}

int custode_resolver_open(const struct custode_resolver_config *cfg, const struct custode_resolver_hooks *hooks,
			  struct custode_resolver **out, struct custode_refusal *why)
{
	struct custode_resolver *r = calloc(1, sizeof(*r));
	struct epoll_event ev;
	int err;

	if (!r)
		return custode_refuse(why, ENOMEM, CUSTODE_REASON_RUN_SETUP_FAILED, "out of memory");
	r->cfg = *cfg;
	if (hooks)
		r->hooks = *hooks;
	r->ep = r->req_fd = r->ended_fd = -1;
	for (int i = 0; i < MAX_NSL; i++)
		r->nsl[i].udp = r->nsl[i].tcp = -1;
	r->runs_fd = custode_map_open(CUSTODE_MAP_RUNS);
	r->pins_fd = custode_map_open(CUSTODE_MAP_PINS);
	r->priv_fd = custode_map_open(CUSTODE_MAP_NET_PRIVATE);
	r->hosts_fd = custode_map_open(CUSTODE_MAP_HOST_ADDRS);
	r->cfg_fd = custode_map_open(CUSTODE_MAP_DNS_CFG);
	r->run_token_fd = custode_map_open(CUSTODE_MAP_DNS_RUN_TOKEN);
	r->token_run_fd = custode_map_open(CUSTODE_MAP_DNS_TOKEN_RUN);
	r->counters_fd = custode_map_open(CUSTODE_MAP_DNS_COUNTERS);
	r->netns_fd = custode_map_open(CUSTODE_MAP_DNS_NETNS);
	r->seen_fd = custode_map_open(CUSTODE_MAP_DNS_NETNS_SEEN);
	r->wake_fd = custode_map_open(CUSTODE_MAP_DNS_WAKE);
	if (r->runs_fd < 0 || r->pins_fd < 0 || r->priv_fd < 0 || r->hosts_fd < 0 || r->cfg_fd < 0 || r->run_token_fd < 0 ||
	    r->token_run_fd < 0 || r->counters_fd < 0 || r->netns_fd < 0 || r->seen_fd < 0 || r->wake_fd < 0) {
		err = custode_refuse(why, ENOENT, CUSTODE_REASON_ENGINE_MISMATCH,
				     "the pinned engine has no resolver maps (an older build still in use by runs; "
				     "it is replaced once idle)");
		goto fail;
	}
	r->msg = malloc(sizeof(*r->msg));
	r->vetted = malloc(sizeof(*r->vetted));
	r->q = calloc(MAX_QUERIES, sizeof(*r->q));
	r->free_q = calloc(MAX_QUERIES, sizeof(*r->free_q));
	r->conns = calloc(MAX_CONNS, sizeof(*r->conns));
	r->ups = calloc(MAX_QUERIES, sizeof(*r->ups));
	for (size_t i = 0; i < CUSTODE_RESOLVER_MAX_UPSTREAMS; i++)
		r->free_ups[i] = calloc(MAX_QUERIES, sizeof(int));
	if (!r->msg || !r->vetted || !r->q || !r->free_q || !r->conns || !r->ups || !r->free_ups[0] || !r->free_ups[1] ||
	    !r->free_ups[2] || tables_init(r) < 0) {
		err = custode_refuse(why, ENOMEM, CUSTODE_REASON_RUN_SETUP_FAILED, "out of memory");
		goto fail;
	}
	link_init(&r->q_active);
	link_init(&r->conn_active);
	for (int i = MAX_QUERIES - 1; i >= 0; i--) {
		r->q[i].fd = -1;
		link_init(&r->q[i].lnode);
		r->free_q[r->n_free_q++] = i;
	}
	for (int i = 0; i < MAX_CONNS; i++)
		link_init(&r->conns[i].lnode);
	for (int i = 0; i < MAX_QUERIES; i++) {
		r->ups[i].fd = -1;
		r->ups[i].query = -1;
	}
	if ((r->nsl[0].udp = resolver_listener(SOCK_DGRAM, why)) < 0) {
		err = r->nsl[0].udp;
		goto fail;
	}
	r->nsl[0].used = true;
	if ((r->nsl[0].tcp = resolver_listener(SOCK_STREAM, why)) < 0) {
		err = r->nsl[0].tcp;
		goto fail;
	}
	r->cfg_map_id = map_id(r->cfg_fd);
	r->netns = r->nsl[0].cookie = resolver_netns_cookie(r->nsl[0].udp);
	if (!r->netns) {
		err = custode_refuse(why, ENOTSUP, CUSTODE_REASON_RUN_SETUP_FAILED, "SO_NETNS_COOKIE: %s",
				     strerror(errno));
		goto fail;
	}
	r->ep = epoll_create1(EPOLL_CLOEXEC);
	if (r->ep < 0) {
		err = custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "epoll: %s", strerror(errno));
		goto fail;
	}
	ev.events = EPOLLIN;
	ev.data.u64 = EV_DATA(EV_UDP, r->nsl[0].gen, 0);
	epoll_ctl(r->ep, EPOLL_CTL_ADD, r->nsl[0].udp, &ev);
	ev.data.u64 = EV_DATA(EV_TCP, r->nsl[0].gen, 0);
	epoll_ctl(r->ep, EPOLL_CTL_ADD, r->nsl[0].tcp, &ev);
	if ((err = resolver_nsl_open(r, why)))
		goto fail;
	/*
	 * A launcher removes its run's names file once the run is unregistered:
	 * the gc then runs at once, so an ended run's pins go within moments
	 * instead of at the next tick. Without inotify (or the directory), the
	 * tick alone does it.
	 */
	r->ended_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (r->ended_fd >= 0 && inotify_add_watch(r->ended_fd, CUSTODE_RUNS_DIR, IN_DELETE | IN_MOVED_FROM) < 0) {
		close(r->ended_fd);
		r->ended_fd = -1;
	}
	if (r->ended_fd >= 0) {
		ev.data.u64 = EV_DATA(EV_ENDED, 0, 0);
		epoll_ctl(r->ep, EPOLL_CTL_ADD, r->ended_fd, &ev);
	}
	resolver_pins_adopt(r);
	resolver_gc(r, resolver_now_ms());
	if ((err = heartbeat(r, true))) {
		err = custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "publish the resolver: %s",
				     strerror(-err));
		goto fail;
	}
	*out = r;
	return 0;
fail:
	custode_resolver_close(r);
	return err;
}

/* Drain the state directory's events: was a names file removed (a run with name grants ended)? */
static bool ended_names(struct custode_resolver *r)
{
	static const char suffix[] = ".names.json";
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool ended = false;
	ssize_t n;

	while ((n = read(r->ended_fd, buf, sizeof(buf))) > 0)
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *e = (const void *)p;
			size_t len = e->len ? strnlen(e->name, e->len) : 0;

			if (e->mask & IN_Q_OVERFLOW)
				ended = true;
			else if (len >= sizeof(suffix) - 1 && !memcmp(e->name + len - (sizeof(suffix) - 1), suffix, sizeof(suffix) - 1))
				ended = true;
			p += sizeof(*e) + e->len;
		}
	return ended;
}

int custode_resolver_serve(struct custode_resolver *r, volatile sig_atomic_t *stop)
{
	struct epoll_event evs[64];
	uint64_t now = resolver_now_ms();

	r->next_heartbeat = now + HEARTBEAT_MS;
	r->next_sweep = now + SWEEP_MS;
	r->next_gc = now + GC_MS;
	while (!*stop) {
		int n, timeout = 500;

		if (r->q_active.next != &r->q_active) {
			struct query *q = CONTAINER(r->q_active.next, struct query, lnode);
			int64_t left = (int64_t)q->deadline_ms - (int64_t)now;
			if (left < timeout)
				timeout = left < 0 ? 0 : (int)left;
		}
		if ((int64_t)r->next_heartbeat - (int64_t)now < timeout)
			timeout = r->next_heartbeat > now ? (int)(r->next_heartbeat - now) : 0;
		n = epoll_wait(r->ep, evs, 64, timeout);
		if (n < 0 && errno != EINTR)
			return -errno;
		for (int i = 0; i < n; i++) {
			uint64_t data = evs[i].data.u64;
			uint32_t kind = (uint32_t)(data >> 48), gen = (uint32_t)(data >> 32) & 0xffff, idx = (uint32_t)data;

			if (kind == EV_UDP && idx < MAX_NSL && (r->nsl[idx].gen & 0xffff) == gen)
				resolver_udp_readable(r, (int)idx);
			else if (kind == EV_TCP && idx < MAX_NSL && (r->nsl[idx].gen & 0xffff) == gen)
				resolver_tcp_accept(r, (int)idx);
			else if (kind == EV_WAKE)
				resolver_nsl_wake(r);
			else if (kind == EV_REQ)
				resolver_nsl_requests(r);
			else if (kind == EV_ENDED && ended_names(r))
				r->next_gc = r->runs_sig = 0; /* gc now, and sweep whatever the set of runs looks like */
			else if (kind == EV_CONN && idx < MAX_CONNS && (r->conns[idx].gen & 0xffff) == gen)
				resolver_conn_event(r, (int)idx, evs[i].events);
			else if (kind == EV_UP && idx < MAX_QUERIES && (r->q[idx].gen & 0xffff) == gen)
				resolver_up_event(r, &r->q[idx], evs[i].events);
			else if (kind == EV_UPS && idx < MAX_QUERIES && (r->ups[idx].gen & 0xffff) == gen)
				resolver_ups_event(r, (int)idx, evs[i].events);
		}
		now = resolver_now_ms();
		while (r->q_active.next != &r->q_active) {
			struct query *q = CONTAINER(r->q_active.next, struct query, lnode);
			if (q->deadline_ms > now)
				break;
			resolver_up_next(r, q, CUSTODE_REASON_DNS_UPSTREAM, NULL);
		}
		while (r->conn_active.next != &r->conn_active) {
			struct conn *c = CONTAINER(r->conn_active.next, struct conn, lnode);
			if (c->deadline_ms > now)
				break;
			if (c->busy) { /* its query is still upstream: give it the time it needs */
				c->deadline_ms = now + CONN_IDLE_MS;
				link_tail(&r->conn_active, &c->lnode);
				continue;
			}
			resolver_conn_close(r, (int)(c - r->conns));
		}
		resolver_counters_flush(r);
		if (now >= r->next_heartbeat) {
			int err;

			if (!engine_still_ours(r)) {
				resolver_notice(r, "the pinned engine was replaced or unloaded: stopping (start the daemon again)");
				return -ESTALE;
			}
			err = heartbeat(r, true);
			if (err)
				resolver_notice(r, "heartbeat: %s", strerror(-err));
			r->next_heartbeat = now + HEARTBEAT_MS;
		}
		if (now >= r->next_sweep) {
			resolver_pins_sweep(r, false);
			r->next_sweep = now + SWEEP_MS;
		}
		if (now >= r->next_gc) {
			resolver_gc(r, now);
			resolver_nsl_gc(r);
			r->next_gc = now + GC_MS;
		}
	}
	return 0;
}

void custode_resolver_close(struct custode_resolver *r)
{
	if (!r)
		return;
	if (r->cfg_fd >= 0 && r->nsl[0].used && r->nsl[0].udp >= 0)
		heartbeat(r, false); /* withdrawn: the hooks deny DNS from now on */
	if (r->netns_fd >= 0 && r->seen_fd >= 0)
		resolver_nsl_close_all(r);
	else
		for (int i = 0; i < MAX_NSL; i++) {
			if (r->nsl[i].udp >= 0)
				close(r->nsl[i].udp);
			if (r->nsl[i].tcp >= 0)
				close(r->nsl[i].tcp);
		}
	if (r->counters_fd >= 0)
		resolver_counters_flush(r);
	custode_table_free(&r->tokens);
	if (r->q)
		for (int i = 0; i < MAX_QUERIES; i++)
			if (r->q[i].used) {
				if (r->q[i].fd >= 0 && r->q[i].us < 0)
					close(r->q[i].fd);
				free(r->q[i].tbuf);
			}
	if (r->ups)
		for (int i = 0; i < MAX_QUERIES; i++)
			if (r->ups[i].used)
				close(r->ups[i].fd);
	free(r->ups);
	for (size_t i = 0; i < CUSTODE_RESOLVER_MAX_UPSTREAMS; i++)
		free(r->free_ups[i]);
	if (r->conns)
		for (int i = 0; i < MAX_CONNS; i++)
			if (r->conns[i].used) {
				close(r->conns[i].fd);
				free(r->conns[i].rbuf);
				free(r->conns[i].wbuf);
			}
	custode_table_free(&r->pins);
	{
		struct custode_table_iter it;
		void *run;

		custode_table_iter_init(&r->runs, &it);
		while (custode_table_iter_next(&r->runs, &it, NULL, &run))
			resolver_run_free(r, *(struct run **)run);
		custode_table_free(&r->runs);
	}
	{
		int fds[] = {r->ep, r->runs_fd, r->pins_fd, r->priv_fd, r->cfg_fd, r->run_token_fd,
			     r->token_run_fd, r->counters_fd, r->hosts_fd, r->netns_fd, r->seen_fd, r->wake_fd,
			     r->ended_fd};
		for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
			if (fds[i] >= 0)
				close(fds[i]);
	}
	free(r->q);
	free(r->free_q);
	free(r->conns);
	free(r->msg);
	free(r->vetted);
	free(r);
}

int custode_resolver_running(struct custode_refusal *why)
{
	struct custode_dns_cfg c;
	__u32 zero = 0;
	__u64 mine;
	int fd = custode_map_open(CUSTODE_MAP_DNS_CFG), s, err;

	if (fd < 0)
		return custode_refuse(why, ENOENT, CUSTODE_REASON_DNS_NO_RESOLVER,
				      "the engine has no resolver state (start `custode daemon`)");
	err = bpf_map_lookup_elem(fd, &zero, &c);
	close(fd);
	if (err < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_DNS_NO_RESOLVER, "resolver state: %s", strerror(errno));
	if (!(c.flags & CUSTODE_DNS_UP) || c.alive_until_ns <= resolver_boot_ns()) {
		custode_refuse(why, 0, CUSTODE_REASON_DNS_NO_RESOLVER,
			       "custode's resolver is not running (start `custode daemon`)");
		return 0;
	}
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	mine = s >= 0 ? resolver_netns_cookie(s) : 0;
	if (s >= 0)
		close(s);
	if (mine != c.netns_cookie) {
		custode_refuse(why, 0, CUSTODE_REASON_DNS_NO_RESOLVER,
			       "custode's resolver (pid %u) serves another network namespace", c.pid);
		return 0;
	}
	return 1;
}

int custode_resolver_counters(__u64 run_cgid, struct custode_dns_counters *out, bool delete_after)
{
	int fd = custode_map_open(CUSTODE_MAP_DNS_COUNTERS), err = 0;

	if (fd < 0)
		return -ENOENT;
	if (bpf_map_lookup_elem(fd, &run_cgid, out) < 0)
		err = -errno;
	else if (delete_after)
		bpf_map_delete_elem(fd, &run_cgid);
	close(fd);
	return err;
}

void custode_resolver_counters_format(const struct custode_dns_counters *c, char *out, size_t len)
{
	size_t off = 0;

	if (len)
		out[0] = 0;
	for (int i = 0; i < CUSTODE_DNS_REASONS && off < len; i++) {
		const char *name = custode_reason_name(CUSTODE_REASON_DNS_NAME_DENIED + i);

		if (!c->denials[i] || !name)
			continue;
		off += (size_t)snprintf(out + off, len - off, "%s%s=%llu", off ? ", " : "", name,
					(unsigned long long)c->denials[i]);
	}
}
