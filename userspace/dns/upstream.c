// SPDX-License-Identifier: Apache-2.0
/* The resolver's upstream side: the pool of connected UDP sockets, one attempt per server (TCP when truncated), and the answers that come back. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "custode/reasons.h"
#include "dns/resolver_int.h"
#include "dns/wire.h"

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
