// SPDX-License-Identifier: Apache-2.0
/*
 * The resolver: one thread, one epoll loop. Per query: attribute (token in
 * the destination address → run), check the name, ask upstream over a fresh
 * connected UDP socket (random source port, random ID; TCP when truncated),
 * vet, pin, then reply. docs/resolver.md has the reasons for each choice.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <bpf/bpf.h>

#include "custode/abi.h"
#include "custode/addr.h"
#include "custode/resolver.h"
#include "dns/names.h"
#include "dns/resolver.h"
#include "dns/vet.h"
#include "dns/wire.h"
#include "engine/hostaddrs.h"
#include "engine/maps.h"
#include "dns/resolver_int.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

uint64_t resolver_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
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
		c.pid = (__u32)getpid();
	}
	return bpf_map_update_elem(r->cfg_fd, &zero, &c, BPF_ANY) < 0 ? -errno : 0;
}

void resolver_conn_flush(struct custode_resolver *r, int idx)
{
	struct conn *c = &r->conns[idx];

	while (c->woff < c->wlen) {
		ssize_t n = send(c->fd, c->wbuf + c->woff, c->wlen - c->woff, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN) {
				struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.u64 = EV_DATA(EV_CONN, c->gen, idx)};
				epoll_ctl(r->ep, EPOLL_CTL_MOD, c->fd, &ev);
				return;
			}
			resolver_conn_close(r, idx);
			return;
		}
		c->woff += (size_t)n;
	}
	c->wlen = c->woff = 0;
	{
		struct epoll_event ev = {.events = EPOLLIN, .data.u64 = EV_DATA(EV_CONN, c->gen, idx)};
		epoll_ctl(r->ep, EPOLL_CTL_MOD, c->fd, &ev);
	}
}

static void send_bytes(struct custode_resolver *r, const struct client *cl, const uint8_t *msg, size_t len)
{
	if (cl->proto == IPPROTO_UDP) {
		char cbuf[CMSG_SPACE(sizeof(struct in_pktinfo))];
		struct iovec iov = {.iov_base = (void *)msg, .iov_len = len};
		struct msghdr mh = {.msg_name = (void *)&cl->addr,
				    .msg_namelen = sizeof(cl->addr),
				    .msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = cbuf,
				    .msg_controllen = sizeof(cbuf)};
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		struct in_pktinfo pi = {.ipi_spec_dst = cl->local};

		memset(cbuf, 0, sizeof(cbuf));
		cm->cmsg_level = IPPROTO_IP;
		cm->cmsg_type = IP_PKTINFO;
		cm->cmsg_len = CMSG_LEN(sizeof(pi));
		memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
		/* the reply must come from the address the client sent to: the run's 127.T.T.T */
		if (sendmsg(r->udp, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno != EAGAIN)
			resolver_notice(r, "reply to %s:%u: %s", inet_ntoa(cl->addr.sin_addr), ntohs(cl->addr.sin_port),
			       strerror(errno));
		return;
	}
	{
		struct conn *c;

		if (cl->conn < 0 || cl->conn >= MAX_CONNS)
			return;
		c = &r->conns[cl->conn];
		if (!c->used || c->gen != cl->conn_gen)
			return; /* the client went away */
		c->busy = false;
		if (!c->wbuf && !(c->wbuf = malloc(65536 + 2))) {
			resolver_conn_close(r, cl->conn);
			return;
		}
		c->wbuf[0] = (uint8_t)(len >> 8);
		c->wbuf[1] = (uint8_t)len;
		memcpy(c->wbuf + 2, msg, len);
		c->wlen = len + 2;
		c->woff = 0;
		c->deadline_ms = resolver_now_ms() + CONN_IDLE_MS;
		link_tail(&r->conn_active, &c->lnode);
		resolver_conn_flush(r, cl->conn);
	}
}

/* A header-only resolver_reply (FORMERR to what has no usable question, and the like). */
void resolver_reply_header(struct custode_resolver *r, const struct client *cl, uint16_t id, uint16_t qflags,
			 unsigned rcode)
{
	uint8_t h[CUSTODE_DNS_HEADER] = {0};
	uint16_t f = CUSTODE_DNS_F_QR | (qflags & (CUSTODE_DNS_F_OPCODE | CUSTODE_DNS_F_RD)) | (rcode & 0xf);

	h[0] = (uint8_t)(id >> 8);
	h[1] = (uint8_t)id;
	h[2] = (uint8_t)(f >> 8);
	h[3] = (uint8_t)f;
	send_bytes(r, cl, h, sizeof(h));
}

void resolver_reply(struct custode_resolver *r, const struct query *q, unsigned rcode, const struct custode_dns_vetted *v,
		  uint32_t ttl)
{
	struct custode_dns_reply rp = {
		.id = q->client_id,
		.rd = q->rd,
		.rcode = rcode,
		.question = q->question,
		.question_len = q->question_len,
		.qtype = q->qtype,
		.chain = v ? v->chain : NULL,
		.n_chain = v && rcode == CUSTODE_DNS_NOERROR ? v->n_chain : 0,
		.ttl = ttl,
		.addrs = v && rcode == CUSTODE_DNS_NOERROR ? (const uint8_t(*)[16])v->addrs : NULL,
		.n_addrs = v && rcode == CUSTODE_DNS_NOERROR ? v->n_addrs : 0,
		.edns = q->edns,
		.max_len = q->max_len,
	};
	int n = custode_dns_build_reply(r->out, sizeof(r->out), &rp);

	if (n < 0) {
		resolver_reply_header(r, &q->c, q->client_id, q->rd ? CUSTODE_DNS_F_RD : 0, CUSTODE_DNS_SERVFAIL);
		return;
	}
	send_bytes(r, &q->c, r->out, (size_t)n);
}

static void upsock_close(struct custode_resolver *r, int idx)
{
	struct upsock *u = &r->ups[idx];

	close(u->fd); /* also leaves the epoll set */
	u->fd = -1;
	u->used = false;
	u->query = -1;
	u->gen++;
}

/* An idle socket to server s, or a new one; its index, or -errno. */
static int upsock_get(struct custode_resolver *r, size_t s)
{
	const struct sockaddr_storage *sa = &r->cfg.upstream[s];
	struct epoll_event ev;
	int idx = -1, fd;

	/* the free list may hold stale entries (a socket retired, its slot reused): check each */
	while (r->n_free_ups[s]) {
		idx = r->free_ups[s][--r->n_free_ups[s]];
		if (r->ups[idx].used && r->ups[idx].query < 0 && r->ups[idx].server == s)
			return idx;
	}
	idx = -1;
	for (int i = 0; i < MAX_QUERIES && idx < 0; i++)
		if (!r->ups[i].used)
			idx = i;
	if (idx < 0)
		return -EBUSY;
	fd = socket(sa->ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)sa, r->cfg.upstream_len[s]) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	ev.events = EPOLLIN;
	ev.data.u64 = EV_DATA(EV_UPS, r->ups[idx].gen, idx);
	if (epoll_ctl(r->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	r->ups[idx].used = true;
	r->ups[idx].server = s;
	r->ups[idx].fd = fd;
	r->ups[idx].query = -1;
	r->ups[idx].uses = 0;
	return idx;
}

/* The attempt on q's upstream socket is over: back to the pool (or closed), or the TCP socket closed. */
void resolver_up_release(struct custode_resolver *r, struct query *q)
{
	if (q->us >= 0) {
		struct upsock *u = &r->ups[q->us];

		u->query = -1;
		if (q->up_bad || ++u->uses >= UPSOCK_USES || r->n_free_ups[q->server] == MAX_QUERIES)
			upsock_close(r, q->us);
		else
			r->free_ups[q->server][r->n_free_ups[q->server]++] = q->us;
	} else if (q->fd >= 0) {
		close(q->fd);
	}
	q->us = -1;
	q->fd = -1;
	q->up_bad = false;
}

void resolver_query_free(struct custode_resolver *r, struct query *q)
{
	if (q->counted) {
		struct run *run = *resolver_run_slot(r, q->cgid);
		if (run && run->inflight)
			run->inflight--;
	}
	resolver_up_release(r, q);
	free(q->tbuf);
	q->tbuf = NULL;
	link_del(&q->lnode);
	q->used = false;
	q->gen++;
	r->free_q[r->n_free_q++] = (int)(q - r->q);
}

struct vet_ctx {
	struct custode_resolver *r;
	struct run *run;
	size_t audit_kept;
};

static bool vet_name_ok(void *ctx, const struct custode_dns_name *name)
{
	struct vet_ctx *c = ctx;
	struct custode_dns_port one;

	return c->run->names_ok && custode_dns_names_match(&c->run->names, name, &one, 1) > 0;
}

static bool vet_granted(void *ctx, const uint8_t addr[16])
{
	struct vet_ctx *c = ctx;
	struct custode_private_key k = {.prefixlen = 32 + 128, .ruleset = c->run->info.ruleset};
	__u32 v;

	memcpy(k.addr, addr, 16);
	if (bpf_map_lookup_elem(c->r->priv_fd, &k, &v) == 0)
		return true;
	if (c->run->info.flags & CUSTODE_RUN_AUDIT) {
		c->audit_kept++;
		return true;
	}
	return false;
}

/* One of the addresses of the namespace the runs (and this resolver) live in: a local service. */
static bool vet_host(void *ctx, const uint8_t addr[16])
{
	struct vet_ctx *c = ctx;

	return custode_hostaddrs_contains(c->r->hosts_fd, c->r->netns, addr);
}

void resolver_finish(struct custode_resolver *r, struct query *q, const struct custode_dns_msg *resp, int fail_reason,
		   const char *fail_detail)
{
	struct run *run = resolver_run_get(r, q->cgid);
	struct vet_ctx vc = {.r = r, .run = run};
	struct custode_dns_vet_opts o = {
		.cname_strict = r->cfg.cname_strict, .name_ok = vet_name_ok, .granted = vet_granted,
		.host = vet_host, .ctx = &vc};
	struct custode_dns_vetted *v = r->vetted;
	struct decision_in d = {.run = run, .cgid = q->cgid, .name = &q->qname, .qtype = q->qtype, .proto = q->c.proto,
				.enforced = true};
	size_t n_ports = 0, written = 0;
	uint32_t eff, ttl = 0;
	int err;

	if (!run || (run->info.flags & CUSTODE_RUN_CANCELLED)) {
		d.reason = CUSTODE_REASON_DNS_NAME_DENIED;
		d.rcode = r->cfg.deny_rcode;
		d.detail = "the run ended while its query was upstream";
		resolver_decide(r, &d); /* reported (and a denial counted) before the run sees it */
		resolver_reply(r, q, d.rcode, NULL, 0);
		goto out;
	}
	d.enforced = !(run->info.flags & CUSTODE_RUN_AUDIT);
	if (!resp) {
		d.reason = fail_reason ? fail_reason : CUSTODE_REASON_DNS_UPSTREAM;
		d.rcode = CUSTODE_DNS_SERVFAIL;
		d.detail = fail_detail;
		resolver_decide(r, &d);
		resolver_reply(r, q, d.rcode, NULL, 0);
		goto out;
	}
	custode_dns_vet(&q->qname, q->qtype, resp, &o, v);
	d.v = v;
	if (v->reason && (v->deny || v->rcode != CUSTODE_DNS_NOERROR)) {
		d.reason = v->reason;
		d.rcode = v->deny ? r->cfg.deny_rcode : v->rcode;
		if (!d.enforced && v->deny) {
			d.rcode = CUSTODE_DNS_SERVFAIL; /* audit: nothing usable to pass on either */
		}
		resolver_decide(r, &d);
		resolver_reply(r, q, d.rcode, NULL, 0);
		goto out;
	}
	eff = v->ttl < r->cfg.ttl_min ? r->cfg.ttl_min : v->ttl > r->cfg.ttl_max ? r->cfg.ttl_max : v->ttl;
	/* never more than the pin's remaining life (eff + grace), never more than upstream said */
	ttl = v->ttl < eff ? v->ttl : eff;
	if (v->rcode == CUSTODE_DNS_NOERROR && v->n_addrs && q->granted_name) {
		n_ports = run->names_ok ? custode_dns_names_match(&run->names, &q->qname, r->ports, MAX_PORTS) : 0;
		err = resolver_pin_answer(r, run, v, r->ports, n_ports, eff, &written);
		if (err) {
			d.reason = CUSTODE_REASON_DNS_PINS_FULL;
			d.pins = written;
			d.detail = err == -EDQUOT ? "the run's pin quota is used up" : "the engine's pin map refused an insert";
			if (err != -EDQUOT)
				resolver_notice(r, "pin map insert failed for run %016llx: map full?",
				       (unsigned long long)run->info.run_id);
			d.rcode = r->cfg.deny_rcode;
			if (d.enforced) {
				resolver_decide(r, &d);
				resolver_reply(r, q, d.rcode, NULL, 0);
				goto out;
			}
		}
	}
	if (!q->granted_name) { /* audit mode: resolved for the report, nothing pinned */
		d.reason = CUSTODE_REASON_DNS_NAME_DENIED;
		d.enforced = false;
	} else if (vc.audit_kept && !d.reason) {
		d.reason = CUSTODE_REASON_DNS_ANSWER_PRIVATE;
		d.enforced = false;
	}
	d.rcode = v->rcode;
	d.pins = written;
	d.ttl = ttl;
	resolver_decide(r, &d);
	resolver_reply(r, q, v->rcode, v, ttl);
out:
	resolver_query_free(r, q);
}

/* This attempt failed: the next server over UDP, or give up. */
void resolver_up_next(struct custode_resolver *r, struct query *q, int reason, const char *detail)
{
	uint64_t now = resolver_now_ms();

	if (reason)
		q->last_reason = reason;
	resolver_up_release(r, q);
	free(q->tbuf);
	q->tbuf = NULL;
	q->tcp = false;
	q->server++;
	while (q->server < r->cfg.n_upstream && now < q->started_ms + r->cfg.total_ms) {
		if (resolver_up_start(r, q) == 0)
			return;
		q->server++;
	}
	resolver_finish(r, q, NULL, q->last_reason,
	       detail ? detail : q->last_reason == CUSTODE_REASON_DNS_MALFORMED ? "malformed upstream answer"
									  : "no upstream answered in time");
}

int resolver_up_start(struct custode_resolver *r, struct query *q)
{
	const struct sockaddr_storage *sa = &r->cfg.upstream[q->server];
	struct epoll_event ev;
	int n, fd;

	if (!q->tcp) {
		int idx = upsock_get(r, q->server);

		if (idx < 0)
			return idx;
		q->up_id = resolver_rand16(r);
		n = custode_dns_build_query(r->out + 2, sizeof(r->out) - 2, q->up_id, &q->qname, q->qtype);
		if (n < 0 || send(r->ups[idx].fd, r->out + 2, (size_t)n, MSG_NOSIGNAL) < 0) {
			int err = n < 0 ? n : -errno;
			upsock_close(r, idx);
			return err;
		}
		r->ups[idx].query = (int)(q - r->q);
		q->us = idx;
		q->fd = r->ups[idx].fd;
		goto armed;
	}
	fd = socket(sa->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* a fresh TCP connection: a random ephemeral source port (the kernel's), and a random ID */
	if (connect(fd, (const struct sockaddr *)sa, r->cfg.upstream_len[q->server]) < 0 && errno != EINPROGRESS) {
		close(fd);
		return -errno;
	}
	q->up_id = resolver_rand16(r);
	n = custode_dns_build_query(r->out + 2, sizeof(r->out) - 2, q->up_id, &q->qname, q->qtype);
	if (n < 0) {
		close(fd);
		return n;
	}
	q->tbuf = malloc(65536 + 2);
	if (!q->tbuf) {
		close(fd);
		return -ENOMEM;
	}
	q->tbuf[0] = (uint8_t)(n >> 8);
	q->tbuf[1] = (uint8_t)n;
	memcpy(q->tbuf + 2, r->out + 2, (size_t)n);
	q->tlen = (size_t)n + 2;
	q->toff = 0;
	q->tsent = false;
	q->tneed = 0;
	ev.events = EPOLLOUT | EPOLLIN;
	ev.data.u64 = EV_DATA(EV_UP, q->gen, q - r->q);
	if (epoll_ctl(r->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	q->fd = fd;
armed:
	q->deadline_ms = resolver_now_ms() + r->cfg.attempt_ms;
	if (q->deadline_ms > q->started_ms + r->cfg.total_ms)
		q->deadline_ms = q->started_ms + r->cfg.total_ms;
	link_tail(&r->q_active, &q->lnode);
	return 0;
}

/* An upstream message arrived for q: check it, then truncation → TCP, else finish. */
static void up_message(struct custode_resolver *r, struct query *q, const uint8_t *buf, size_t len)
{
	struct custode_dns_msg *m = r->msg;
	int err = custode_dns_parse(buf, len, m);

	if (err) {
		/* a connected socket: this came from the server itself; its answer is unusable */
		resolver_up_next(r, q, CUSTODE_REASON_DNS_MALFORMED, err == -E2BIG ? "upstream answer too large"
									 : "malformed upstream answer");
		return;
	}
	if (m->id != q->up_id && !q->tcp)
		return; /* not ours (late, or a spoofing attempt): keep waiting */
	if (!custode_dns_answers(m, q->up_id, &q->qname, q->qtype)) {
		resolver_up_next(r, q, CUSTODE_REASON_DNS_MALFORMED, "upstream answer does not match the question");
		return;
	}
	if (m->flags & CUSTODE_DNS_F_TC) {
		if (q->tcp) {
			resolver_up_next(r, q, CUSTODE_REASON_DNS_MALFORMED, "truncated answer over TCP");
			return;
		}
		resolver_up_release(r, q);
		q->tcp = true;
		if ((err = resolver_up_start(r, q)))
			resolver_up_next(r, q, CUSTODE_REASON_DNS_UPSTREAM, "TCP retry failed");
		return;
	}
	resolver_finish(r, q, m, 0, NULL);
}

void resolver_up_event(struct custode_resolver *r, struct query *q, uint32_t events)
{
	if (!q->used || q->fd < 0)
		return;
	if (!q->tcp) {
		for (int i = 0; i < 8 && q->used && q->fd >= 0 && !q->tcp; i++) {
			ssize_t n = recv(q->fd, r->buf, sizeof(r->buf), 0);
			if (n < 0) {
				if (errno != EAGAIN) {
					q->up_bad = true;
					resolver_up_next(r, q, CUSTODE_REASON_DNS_UPSTREAM, NULL);
				}
				return;
			}
			up_message(r, q, r->buf, (size_t)n);
		}
		return;
	}
	if (!q->tsent) {
		int soerr = 0;
		socklen_t sl = sizeof(soerr);

		if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		getsockopt(q->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
		if (soerr) {
			resolver_up_next(r, q, CUSTODE_REASON_DNS_UPSTREAM, NULL);
			return;
		}
		while (q->toff < q->tlen) {
			ssize_t n = send(q->fd, q->tbuf + q->toff, q->tlen - q->toff, MSG_NOSIGNAL);
			if (n < 0) {
				if (errno != EAGAIN)
					resolver_up_next(r, q, CUSTODE_REASON_DNS_UPSTREAM, NULL);
				return;
			}
			q->toff += (size_t)n;
		}
		q->tsent = true;
		q->toff = 0;
		{
			struct epoll_event ev = {.events = EPOLLIN, .data.u64 = EV_DATA(EV_UP, q->gen, q - r->q)};
			epoll_ctl(r->ep, EPOLL_CTL_MOD, q->fd, &ev);
		}
		return;
	}
	for (;;) {
		size_t want = q->tneed ? q->tneed + 2 : 2;
		ssize_t n = recv(q->fd, q->tbuf + q->toff, want - q->toff, 0);

		if (n == 0 || (n < 0 && errno != EAGAIN)) {
			resolver_up_next(r, q, CUSTODE_REASON_DNS_UPSTREAM, "upstream closed the TCP connection");
			return;
		}
		if (n < 0)
			return;
		q->toff += (size_t)n;
		if (q->toff < want)
			continue;
		if (!q->tneed) {
			q->tneed = (size_t)q->tbuf[0] << 8 | q->tbuf[1];
			if (q->tneed < CUSTODE_DNS_HEADER) {
				resolver_up_next(r, q, CUSTODE_REASON_DNS_MALFORMED, "malformed upstream answer");
				return;
			}
			continue;
		}
		up_message(r, q, q->tbuf + 2, q->tneed);
		return;
	}
}

/* A query from a run (UDP datagram or one TCP message), attributed by token. True: it went upstream. */
bool resolver_client_query(struct custode_resolver *r, const struct client *cl, const uint8_t *buf, size_t len)
{
	struct custode_dns_msg *m = r->msg;
	uint32_t token = ntohl(cl->local.s_addr) & 0xffffff;
	struct decision_in d = {.proto = cl->proto, .enforced = true};
	uint16_t id, flags;
	__u64 cgid = 0;
	struct run *run = NULL;
	struct query *q;
	int err;

	if (len < CUSTODE_DNS_HEADER)
		return false; /* not even a header: nothing to answer to */
	id = (uint16_t)(buf[0] << 8 | buf[1]);
	flags = (uint16_t)(buf[2] << 8 | buf[3]);
	if (flags & CUSTODE_DNS_F_QR)
		return false; /* a response sent to us: never answer one (no reflection loops) */
	if ((ntohl(cl->local.s_addr) >> 24) != 127)
		return false;
	if ((cgid = resolver_token_cgid(r, token)))
		run = resolver_run_get(r, cgid);
	d.run = run;
	d.cgid = cgid;
	err = custode_dns_parse(buf, len, m);
	if (!err && (custode_dns_opcode(m) != 0)) {
		d.reason = CUSTODE_REASON_DNS_MALFORMED;
		d.rcode = CUSTODE_DNS_NOTIMP;
		d.detail = "opcode other than QUERY";
		resolver_decide(r, &d);
		resolver_reply_header(r, cl, id, flags, d.rcode);
		return false;
	}
	if (err || m->ancount || m->nscount || m->arcount != (m->edns ? 1 : 0) || !m->qname.wire_len) {
		d.reason = CUSTODE_REASON_DNS_MALFORMED;
		d.rcode = CUSTODE_DNS_FORMERR;
		d.detail = err == -E2BIG ? "too many records" : err ? "malformed query" : "a query carries only a question (and OPT)";
		resolver_decide(r, &d);
		resolver_reply_header(r, cl, id, flags, d.rcode);
		return false;
	}
	d.name = &m->qname;
	d.qtype = m->qtype;
	q = NULL;
	if (!r->n_free_q || (run && run->inflight >= MAX_RUN_INFLIGHT)) {
		d.reason = CUSTODE_REASON_DNS_UPSTREAM;
		d.rcode = CUSTODE_DNS_SERVFAIL;
		d.detail = r->n_free_q ? "too many queries of this run in flight" : "resolver busy";
		resolver_decide(r, &d);
		resolver_reply_header(r, cl, id, flags, d.rcode);
		return false;
	}
	q = &r->q[r->free_q[--r->n_free_q]];
	{
		unsigned gen = q->gen;
		memset(q, 0, offsetof(struct query, lnode));
		q->gen = gen;
	}
	link_init(&q->lnode);
	q->used = true;
	q->fd = -1;
	q->us = -1;
	q->c = *cl;
	q->cgid = cgid;
	q->client_id = id;
	q->rd = flags & CUSTODE_DNS_F_RD;
	q->edns = m->edns;
	q->max_len = cl->proto == IPPROTO_TCP ? 65535
			 : m->edns ? (m->edns_udp < CUSTODE_DNS_UDP_MIN ? CUSTODE_DNS_UDP_MIN
					: m->edns_udp > 4096 ? 4096 : m->edns_udp)
				   : CUSTODE_DNS_UDP_MIN;
	q->question_len = m->question_end - CUSTODE_DNS_HEADER;
	memcpy(q->question, buf + CUSTODE_DNS_HEADER, q->question_len);
	q->qname = m->qname;
	q->qtype = m->qtype;
	q->started_ms = resolver_now_ms();

	if (m->edns && m->edns_version != 0) {
		d.reason = CUSTODE_REASON_DNS_MALFORMED;
		d.rcode = CUSTODE_DNS_BADVERS;
		d.detail = "EDNS version other than 0";
		goto answer_now;
	}
	if (!run || (run->info.flags & CUSTODE_RUN_CANCELLED) || !(run->info.flags & CUSTODE_RUN_NET)) {
		d.reason = CUSTODE_REASON_DNS_NAME_DENIED;
		d.rcode = r->cfg.deny_rcode;
		d.detail = !run ? "no registered run holds this query's token" : "the run is cancelled";
		goto answer_now;
	}
	d.enforced = !(run->info.flags & CUSTODE_RUN_AUDIT);
	q->audit = !d.enforced;
	if (m->qclass != CUSTODE_DNS_C_IN) {
		d.reason = CUSTODE_REASON_DNS_NAME_DENIED;
		d.rcode = r->cfg.deny_rcode;
		d.enforced = true;
		d.detail = "class other than IN";
		goto answer_now;
	}
	q->granted_name = run->names_ok && custode_dns_names_match(&run->names, &m->qname, r->ports, 1) > 0;
	if (!q->granted_name) {
		d.reason = CUSTODE_REASON_DNS_NAME_DENIED;
		d.rcode = r->cfg.deny_rcode;
		d.detail = !m->qname.host ? "not a host name" : !run->names_ok ? "the run names no hosts" : NULL;
		if (d.enforced || !m->qname.host)
			goto answer_now; /* denied names never go upstream */
	}
	if (m->qtype != CUSTODE_DNS_T_A && m->qtype != CUSTODE_DNS_T_AAAA) {
		/* HTTPS/SVCB (their hints would bypass vetting), MX, TXT, ...: an empty answer */
		d.reason = 0;
		d.rcode = CUSTODE_DNS_NOERROR;
		d.detail = "only A and AAAA are resolved: empty answer";
		goto answer_now;
	}
	run->inflight++;
	q->counted = true;
	if (resolver_up_start(r, q) < 0) {
		unsigned gen = q->gen;
		resolver_up_next(r, q, CUSTODE_REASON_DNS_UPSTREAM, "cannot reach the upstream resolvers");
		return q->used && q->gen == gen;
	}
	return true;
answer_now:
	resolver_decide(r, &d);
	resolver_reply(r, q, d.rcode, NULL, 0);
	resolver_query_free(r, q);
	return false;
}

void resolver_udp_readable(struct custode_resolver *r)
{
	for (int i = 0; i < 64; i++) {
		char cbuf[CMSG_SPACE(sizeof(struct in_pktinfo))];
		struct client cl = {.proto = IPPROTO_UDP, .conn = -1};
		struct iovec iov = {.iov_base = r->buf, .iov_len = sizeof(r->buf)};
		struct msghdr mh = {.msg_name = &cl.addr,
				    .msg_namelen = sizeof(cl.addr),
				    .msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = cbuf,
				    .msg_controllen = sizeof(cbuf)};
		struct cmsghdr *cm;
		bool have_dst = false;
		ssize_t n = recvmsg(r->udp, &mh, MSG_DONTWAIT);

		if (n < 0)
			return;
		for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
			if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_PKTINFO) {
				struct in_pktinfo pi;
				memcpy(&pi, CMSG_DATA(cm), sizeof(pi));
				cl.local = pi.ipi_addr; /* the destination the hook wrote: 127.T.T.T */
				have_dst = true;
			}
		if (!have_dst || (mh.msg_flags & MSG_TRUNC))
			continue;
		resolver_client_query(r, &cl, r->buf, (size_t)n);
	}
}

void resolver_conn_close(struct custode_resolver *r, int idx)
{
	struct conn *c = &r->conns[idx];

	if (!c->used)
		return;
	close(c->fd);
	free(c->rbuf);
	free(c->wbuf);
	link_del(&c->lnode);
	c->rbuf = c->wbuf = NULL;
	c->used = false;
	c->gen++;
}

void resolver_tcp_accept(struct custode_resolver *r)
{
	for (int i = 0; i < 16; i++) {
		struct sockaddr_in peer, local;
		socklen_t pl = sizeof(peer), ll = sizeof(local);
		int fd = accept4(r->tcp, (struct sockaddr *)&peer, &pl, SOCK_NONBLOCK | SOCK_CLOEXEC), idx = -1;
		struct epoll_event ev;

		if (fd < 0)
			return;
		if (getsockname(fd, (struct sockaddr *)&local, &ll) < 0 || (ntohl(local.sin_addr.s_addr) >> 24) != 127) {
			close(fd);
			continue;
		}
		for (int k = 0; k < MAX_CONNS && idx < 0; k++)
			if (!r->conns[k].used)
				idx = k;
		if (idx < 0) {
			close(fd); /* full: the client retries */
			continue;
		}
		r->conns[idx].used = true;
		r->conns[idx].fd = fd;
		r->conns[idx].local = local.sin_addr;
		r->conns[idx].rlen = r->conns[idx].wlen = r->conns[idx].woff = 0;
		r->conns[idx].busy = r->conns[idx].eof = false;
		r->conns[idx].deadline_ms = resolver_now_ms() + CONN_IDLE_MS;
		link_init(&r->conns[idx].lnode);
		link_tail(&r->conn_active, &r->conns[idx].lnode);
		ev.events = EPOLLIN;
		ev.data.u64 = EV_DATA(EV_CONN, r->conns[idx].gen, idx);
		if (epoll_ctl(r->ep, EPOLL_CTL_ADD, fd, &ev) < 0)
			resolver_conn_close(r, idx);
	}
}

/* Take complete messages off a connection, one at a time (the next once this one is answered). */
static void conn_process(struct custode_resolver *r, int idx)
{
	struct conn *c = &r->conns[idx];

	while (c->used && !c->busy && c->wlen == 0 && c->rlen >= 2) {
		size_t need = (size_t)c->rbuf[0] << 8 | c->rbuf[1];
		struct client cl = {.proto = IPPROTO_TCP, .local = c->local, .conn = idx, .conn_gen = c->gen};

		if (c->rlen < need + 2)
			return;
		c->busy = true;
		memcpy(r->buf, c->rbuf + 2, need);
		memmove(c->rbuf, c->rbuf + 2 + need, c->rlen - 2 - need);
		c->rlen -= 2 + need;
		/* answered at once (send_bytes cleared busy), upstream (busy until answered), or dropped */
		if (!resolver_client_query(r, &cl, r->buf, need) && c->used && c->gen == cl.conn_gen)
			c->busy = false;
	}
	if (c->used && c->eof && !c->busy && c->wlen == 0)
		resolver_conn_close(r, idx);
}

void resolver_conn_event(struct custode_resolver *r, int idx, uint32_t events)
{
	struct conn *c = &r->conns[idx];

	if (!c->used)
		return;
	if (events & EPOLLOUT) {
		resolver_conn_flush(r, idx);
		if (!c->used)
			return;
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		if (!c->rbuf && !(c->rbuf = malloc(65536 + 2))) {
			resolver_conn_close(r, idx);
			return;
		}
		while (c->rlen < 65536 + 2) {
			ssize_t n = recv(c->fd, c->rbuf + c->rlen, 65536 + 2 - c->rlen, 0);
			if (n == 0) {
				c->eof = true;
				break;
			}
			if (n < 0) {
				if (errno != EAGAIN) {
					resolver_conn_close(r, idx);
					return;
				}
				break;
			}
			c->rlen += (size_t)n;
		}
		c->deadline_ms = resolver_now_ms() + CONN_IDLE_MS;
		link_tail(&r->conn_active, &c->lnode);
	}
	conn_process(r, idx);
}

/* A pooled upstream socket is readable: its query's answer, or a late one nobody waits for. */
void resolver_ups_event(struct custode_resolver *r, int idx, uint32_t events)
{
	struct upsock *u = &r->ups[idx];

	if (!u->used)
		return;
	if (u->query >= 0) {
		resolver_up_event(r, &r->q[u->query], events);
		return;
	}
	for (;;) {
		if (recv(u->fd, r->buf, sizeof(r->buf), MSG_DONTWAIT) < 0) {
			if (errno != EAGAIN)
				upsock_close(r, idx); /* an error queued on an idle socket: retire it */
			return;
		}
	}
}

/* ---- lifecycle ---- */

static int listener(int type, struct custode_refusal *why)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(CUSTODE_RESOLVER_PORT)};
	int fd = socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1, big = 4 << 20;

	if (fd < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "socket: %s", strerror(errno));
	/* every 127/8 address, on the loopback device only: nothing from the network reaches it */
	if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, "lo", 3) < 0 ||
	    (type == SOCK_DGRAM && setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) < 0) ||
	    (type == SOCK_STREAM && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)) {
		int err = errno;
		close(fd);
		return custode_refuse(why, err, CUSTODE_REASON_RUN_SETUP_FAILED, "resolver socket options: %s",
				      strerror(err));
	}
	if (type == SOCK_DGRAM)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || (type == SOCK_STREAM && listen(fd, 256) < 0)) {
		int err = errno;
		close(fd);
		if (err == EADDRINUSE)
			return custode_refuse(why, err, CUSTODE_REASON_DAEMON_RUNNING,
					      "port %d on the loopback device is taken (another custode daemon?)",
					      CUSTODE_RESOLVER_PORT);
		return custode_refuse(why, err, CUSTODE_REASON_RUN_SETUP_FAILED, "bind port %d: %s",
				      CUSTODE_RESOLVER_PORT, strerror(err));
	}
	return fd;
}

static __u64 netns_cookie(int fd)
{
	__u64 c = 0;
	socklen_t l = sizeof(c);

	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &c, &l) < 0)
		return 0;
	return c;
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
	r->ep = r->udp = r->tcp = -1;
	r->runs_fd = custode_map_open(CUSTODE_MAP_RUNS);
	r->pins_fd = custode_map_open(CUSTODE_MAP_PINS);
	r->priv_fd = custode_map_open(CUSTODE_MAP_NET_PRIVATE);
	r->hosts_fd = custode_map_open(CUSTODE_MAP_HOST_ADDRS);
	r->cfg_fd = custode_map_open(CUSTODE_MAP_DNS_CFG);
	r->run_token_fd = custode_map_open(CUSTODE_MAP_DNS_RUN_TOKEN);
	r->token_run_fd = custode_map_open(CUSTODE_MAP_DNS_TOKEN_RUN);
	r->counters_fd = custode_map_open(CUSTODE_MAP_DNS_COUNTERS);
	if (r->runs_fd < 0 || r->pins_fd < 0 || r->priv_fd < 0 || r->hosts_fd < 0 || r->cfg_fd < 0 || r->run_token_fd < 0 ||
	    r->token_run_fd < 0 || r->counters_fd < 0) {
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
	r->pins = calloc(PIN_BUCKETS, sizeof(*r->pins));
	r->ups = calloc(MAX_QUERIES, sizeof(*r->ups));
	for (size_t i = 0; i < CUSTODE_RESOLVER_MAX_UPSTREAMS; i++)
		r->free_ups[i] = calloc(MAX_QUERIES, sizeof(int));
	if (!r->msg || !r->vetted || !r->q || !r->free_q || !r->conns || !r->pins || !r->ups || !r->free_ups[0] || !r->free_ups[1] ||
	    !r->free_ups[2]) {
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
	if ((r->udp = listener(SOCK_DGRAM, why)) < 0) {
		err = r->udp;
		goto fail;
	}
	if ((r->tcp = listener(SOCK_STREAM, why)) < 0) {
		err = r->tcp;
		goto fail;
	}
	r->cfg_map_id = map_id(r->cfg_fd);
	r->netns = netns_cookie(r->udp);
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
	ev.data.u64 = EV_DATA(EV_UDP, 0, 0);
	epoll_ctl(r->ep, EPOLL_CTL_ADD, r->udp, &ev);
	ev.data.u64 = EV_DATA(EV_TCP, 0, 0);
	epoll_ctl(r->ep, EPOLL_CTL_ADD, r->tcp, &ev);
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

			if (kind == EV_UDP)
				resolver_udp_readable(r);
			else if (kind == EV_TCP)
				resolver_tcp_accept(r);
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
			r->next_gc = now + GC_MS;
		}
	}
	return 0;
}

void custode_resolver_close(struct custode_resolver *r)
{
	if (!r)
		return;
	if (r->cfg_fd >= 0 && r->udp >= 0)
		heartbeat(r, false); /* withdrawn: the hooks deny DNS from now on */
	if (r->counters_fd >= 0)
		resolver_counters_flush(r);
	for (size_t b = 0; b < TOKEN_BUCKETS; b++)
		while (r->tokens[b]) {
			struct token *t = r->tokens[b];
			r->tokens[b] = t->next;
			free(t);
		}
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
	if (r->pins)
		for (size_t b = 0; b < PIN_BUCKETS; b++)
			while (r->pins[b]) {
				struct pin *p = r->pins[b];
				r->pins[b] = p->next;
				free(p);
			}
	for (size_t b = 0; b < RUN_BUCKETS; b++)
		while (r->runs[b]) {
			struct run *run = r->runs[b];
			r->runs[b] = run->next;
			resolver_run_free(r, run);
		}
	{
		int fds[] = {r->ep, r->udp, r->tcp, r->runs_fd, r->pins_fd, r->priv_fd, r->cfg_fd, r->run_token_fd,
			     r->token_run_fd, r->counters_fd, r->hosts_fd};
		for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
			if (fds[i] >= 0)
				close(fds[i]);
	}
	free(r->q);
	free(r->free_q);
	free(r->conns);
	free(r->pins);
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
	mine = s >= 0 ? netns_cookie(s) : 0;
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
