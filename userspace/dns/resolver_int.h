/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The resolver's private declarations, shared by its files and by nobody
 * else (the public interface is dns/resolver.h):
 *   resolver.c  lifecycle (open, serve, close), the event loop, heartbeat
 *   runs.c      runs, their names, tokens, counters and decisions; gc
 *   pins.c      pin map writes, quotas, expiry, adoption
 *   query.c     a run's query: checks, vetting, pinning, its reply
 *   upstream.c  the upstream servers: UDP socket pool, TCP after truncation
 *   reply.c     building and sending replies
 *   client.c    the listeners and the runs' TCP connections
 *   netns.c     listeners in the runs' other network namespaces: wake-ups, requests, cleanup
 */
#ifndef CUSTODE_DNS_RESOLVER_INT_H
#define CUSTODE_DNS_RESOLVER_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <netinet/in.h>
#include <sys/types.h>
#include <linux/types.h>

#include "custode/abi.h"
#include "custode/resolver.h"
#include "dns/names.h"
#include "dns/resolver.h"
#include "dns/vet.h"
#include "dns/wire.h"
#include "util/reasons.h"
#include "util/table.h"

struct ring_buffer;

#define MAX_QUERIES 4096
#define MAX_CONNS 256
#define CONN_IDLE_MS 10000
#define HEARTBEAT_MS 1000
#define SWEEP_MS 2000
#define GC_MS 5000
#define SWEEP_ENDED_TICKS 12 /* gc ticks between walks of the pin map for ended runs' pins at the latest */
#define NAMES_RECHECK_MS 1000
#define COUNTERS_KEEP_MS 60000
#define MAX_PORTS 4096 /* (proto, port) pairs one name may be granted */
#define RUN_REFRESH_MS 100 /* a run's registration (flags: cancelled, audit) is re-read this often */
#define MAX_DIRTY 256
/*
 * Upstream UDP sockets: connected to one server, bound by the kernel to a
 * random ephemeral port, each carrying one query at a time and at most
 * UPSOCK_USES queries in its life (then a fresh socket, a fresh port).
 * Every query still gets a random ID; a late answer to an earlier query on
 * the same socket fails the ID check.
 */
#define UPSOCK_USES 16
/* queries one run may have in flight: a run flooding the resolver can't take every slot */
#define MAX_RUN_INFLIGHT 512

enum { EV_UDP = 1, EV_TCP = 2, EV_CONN = 3, EV_UP = 4, EV_UPS = 5, EV_WAKE = 6, EV_REQ = 7, EV_ENDED = 8 };
/* kind, a generation (a freed and reused slot ignores events meant for its last user), index */
#define EV_DATA(kind, gen, idx) ((uint64_t)(kind) << 48 | (uint64_t)((gen)&0xffff) << 32 | (uint32_t)(idx))

struct link {
	struct link *prev, *next;
};

static inline void link_init(struct link *l)
{
	l->prev = l->next = l;
}

static inline void link_del(struct link *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	link_init(l);
}

static inline void link_tail(struct link *head, struct link *l)
{
	link_del(l);
	l->prev = head->prev;
	l->next = head;
	head->prev->next = l;
	head->prev = l;
}

#define CONTAINER(p, type, member) ((type *)((char *)(p) - offsetof(type, member)))

struct run {
	__u64 cgid;
	struct custode_run info;
	struct custode_dns_names names;
	bool names_ok;
	uint64_t names_checked_ms;
	struct timespec names_mtime;
	ino_t names_ino;
	size_t pins;
	uint64_t gone_since_ms;
	uint64_t info_ms; /* when info was read from custode_runs */
	struct custode_dns_counters counters;
	bool dirty;       /* counters not yet written to custode_dns_counters */
	unsigned inflight; /* its queries holding a slot */
};

/*
 * A pair of listeners (UDP, TCP) in one network namespace; slot 0 is the
 * resolver's own namespace, never closed. The others serve the runs seen
 * there (runs[]); once none of those is registered, they are closed and the
 * namespace's custode_dns_netns entry deleted (netns.c).
 */
#define MAX_NSL 256
#define NSL_RUNS 32
struct nsl {
	bool used;
	unsigned gen;
	__u64 cookie;
	int udp, tcp;
	__u64 runs[NSL_RUNS];
	size_t n_runs;
};

/* A request to listen in a process's namespace, from another thread (custode_resolver_serve_netns). */
#define MAX_NSREQ 16
struct nsreq {
	int pid;
	__u64 run_cgid;
	bool done;
	int err;
	struct custode_refusal why;
};

struct conn {
	bool used;
	int fd;
	unsigned gen;
	int nsl;     /* the listener that accepted it */
	__u64 netns; /* its namespace's cookie */
	struct in_addr local;
	uint8_t *rbuf; /* 2 + 65535 */
	size_t rlen;
	uint8_t *wbuf;
	size_t wlen, woff;
	bool busy, eof;
	uint64_t deadline_ms;
	struct link lnode;
};

struct client {
	int proto; /* IPPROTO_UDP or IPPROTO_TCP */
	int nsl;           /* the listener it came through (UDP replies leave by it) */
	unsigned nsl_gen;
	__u64 netns;       /* the client's network namespace (cookie) */
	struct sockaddr_in addr;
	struct in_addr local;
	int conn;
	unsigned conn_gen;
};

struct query {
	bool used;
	unsigned gen;
	struct client c;
	__u64 cgid;
	uint16_t client_id;
	bool rd, edns, granted_name, audit, counted;
	size_t max_len;
	uint8_t question[CUSTODE_DNS_MAX_WIRE_NAME + 4];
	size_t question_len;
	struct custode_dns_name qname;
	uint16_t qtype;
	/* upstream: a pooled UDP socket (us >= 0, fd is its fd), or a TCP socket of its own */
	int fd, us;
	bool up_bad; /* the UDP socket saw an error: don't reuse it */
	size_t server;
	bool tcp;
	uint16_t up_id;
	uint8_t *tbuf; /* TCP: the query (length-prefixed), then the answer */
	size_t tlen, toff, tneed;
	bool tsent;
	int last_reason;
	uint64_t started_ms, deadline_ms;
	struct link lnode;
};

struct upsock {
	bool used;
	int fd;
	size_t server;
	int query; /* the query it carries, or -1 (idle) */
	unsigned uses, gen;
};

struct custode_resolver {
	struct custode_resolver_config cfg;
	struct custode_resolver_hooks hooks;
	int ep;
	struct nsl nsl[MAX_NSL]; /* [0]: the resolver's own namespace */
	int netns_fd, seen_fd, wake_fd; /* custode_dns_netns, custode_dns_netns_seen, custode_dns_wake */
	struct ring_buffer *wake_rb;
	__u32 gen;               /* custode_dns_cfg.gen */
	int req_fd;              /* eventfd: requests queued */
	pthread_mutex_t req_lock;
	pthread_cond_t req_cond;
	bool req_init;
	struct nsreq *reqs[MAX_NSREQ];
	size_t n_reqs;
	int runs_fd, pins_fd, priv_fd, cfg_fd, run_token_fd, token_run_fd, counters_fd, hosts_fd;
	__u64 netns;
	__u32 cfg_map_id; /* the pinned custode_dns_cfg we publish in; another one: the engine was replaced */
	struct query *q;
	struct link q_active;
	size_t n_free_q;
	int *free_q;
	struct conn *conns;
	struct link conn_active;
	struct upsock *ups;
	int *free_ups[CUSTODE_RESOLVER_MAX_UPSTREAMS]; /* idle sockets per server */
	size_t n_free_ups[CUSTODE_RESOLVER_MAX_UPSTREAMS];
	/*
	 * The tables (util/table.h, growing: as many entries as the maps let
	 * in): the pins this resolver wrote or adopted, custode_pin_key ->
	 * expiry (boot ns); the runs it knows, cgroup id -> struct run * (a run
	 * stays where it is: queries and the dirty list hold it); what a token
	 * means, cached (only this resolver deletes tokens, net.bpf.c
	 * dns_token), token -> cgroup id.
	 */
	struct custode_table pins;
	struct custode_table runs;
	struct custode_table tokens;
	struct run *dirty[MAX_DIRTY];
	size_t n_dirty;
	struct custode_dns_msg *msg; /* scratch: one message parsed at a time */
	struct custode_dns_vetted *vetted; /* scratch: one answer vetted at a time */
	uint8_t buf[65536 + 2];
	uint8_t out[65536 + 2];
	uint8_t rnd[4096];
	size_t rnd_left;
	uint64_t next_heartbeat, next_sweep, next_gc;
	uint64_t runs_sig; /* of the registered runs at the last gc: a change may have ended one */
	uint64_t gc_ticks;
	int ended_fd;      /* inotify on the state directory: a run's names file removed (it ended) */
	struct custode_dns_port ports[MAX_PORTS];
};

struct decision_in {
	struct run *run;
	__u64 cgid;
	const struct custode_dns_name *name;
	uint16_t qtype;
	int proto;
	int reason;
	bool enforced;
	unsigned rcode;
	const struct custode_dns_vetted *v;
	size_t pins;
	uint32_t ttl;
	const char *detail;
};

/* resolver.c: the lifecycle, the event loop, and what every part uses */
uint64_t resolver_now_ms(void);
__u64 resolver_boot_ns(void);
uint16_t resolver_rand16(struct custode_resolver *r);
void resolver_notice(struct custode_resolver *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* runs.c: runs by cgroup id, their names and counters, tokens, decisions, forgetting ended runs */
struct run *resolver_run_find(struct custode_resolver *r, __u64 cgid);
struct run *resolver_run_get(struct custode_resolver *r, __u64 cgid);
__u64 resolver_token_cgid(struct custode_resolver *r, __u32 token);
void resolver_counters_flush(struct custode_resolver *r);
void resolver_run_free(struct custode_resolver *r, struct run *run);
void resolver_decide(struct custode_resolver *r, const struct decision_in *in);
void resolver_gc(struct custode_resolver *r, uint64_t now);

/* pins.c: pin map writes within a run's quota, expiry, adoption */
int resolver_pin_answer(struct custode_resolver *r, struct run *run, const struct custode_dns_vetted *v,
			const struct custode_dns_port *ports, size_t n_ports, uint32_t eff_ttl, size_t *written);
void resolver_pins_sweep(struct custode_resolver *r, bool all_of_gone_runs);
void resolver_pins_adopt(struct custode_resolver *r);

/* reply.c: replies to runs */
void resolver_conn_flush(struct custode_resolver *r, int idx);
void resolver_reply_header(struct custode_resolver *r, const struct client *cl, uint16_t id, uint16_t qflags,
			   unsigned rcode);
void resolver_reply(struct custode_resolver *r, const struct query *q, unsigned rcode,
		    const struct custode_dns_vetted *v, uint32_t ttl);

/* query.c: a run's query, from its arrival to its answer */
void resolver_query_free(struct custode_resolver *r, struct query *q);
void resolver_finish(struct custode_resolver *r, struct query *q, const struct custode_dns_msg *resp, int fail_reason,
		     const char *fail_detail);
bool resolver_client_query(struct custode_resolver *r, const struct client *cl, const uint8_t *buf, size_t len);

/* upstream.c: asking the upstream servers */
void resolver_up_release(struct custode_resolver *r, struct query *q);
int resolver_up_start(struct custode_resolver *r, struct query *q);
void resolver_up_next(struct custode_resolver *r, struct query *q, int reason, const char *detail);
void resolver_up_event(struct custode_resolver *r, struct query *q, uint32_t events);
void resolver_ups_event(struct custode_resolver *r, int idx, uint32_t events);

/* client.c: the listeners and the runs' TCP connections */
int resolver_listener(int type, struct custode_refusal *why);
void resolver_udp_readable(struct custode_resolver *r, int nsl);
void resolver_tcp_accept(struct custode_resolver *r, int nsl);
void resolver_conn_close(struct custode_resolver *r, int idx);
void resolver_conn_event(struct custode_resolver *r, int idx, uint32_t events);

/* netns.c: listeners in other network namespaces */
int resolver_nsl_open(struct custode_resolver *r, struct custode_refusal *why);
void resolver_nsl_close_all(struct custode_resolver *r);
void resolver_nsl_saw_run(struct custode_resolver *r, int nsl, __u64 cgid);
void resolver_nsl_wake(struct custode_resolver *r);
void resolver_nsl_requests(struct custode_resolver *r);
void resolver_nsl_gc(struct custode_resolver *r);
__u64 resolver_netns_cookie(int fd);

#endif
