// SPDX-License-Identifier: Apache-2.0
/* The resolver's replies to runs: building them from vetted data and sending them (UDP from the address the run asked, or a TCP connection's write side). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "dns/resolver_int.h"
#include "dns/wire.h"

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
		if (cl->nsl < 0 || cl->nsl >= MAX_NSL || !r->nsl[cl->nsl].used || r->nsl[cl->nsl].gen != cl->nsl_gen)
			return; /* its namespace's listener closed while the query was upstream */
		if (sendmsg(r->nsl[cl->nsl].udp, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno != EAGAIN)
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

void resolver_reply(struct custode_resolver *r, const struct query *q, unsigned rcode,
		    const struct custode_dns_vetted *v, uint32_t ttl)
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
