// SPDX-License-Identifier: Apache-2.0
/* The resolver's listeners: UDP datagrams and TCP connections from runs (accept, read, one message at a time, idle close). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "custode/reasons.h"
#include "custode/resolver.h"
#include "dns/resolver_int.h"
#include "dns/wire.h"

/* A listener (UDP or TCP) on every 127/8 address of the loopback device of the calling thread's namespace. */
int resolver_listener(int type, struct custode_refusal *why)
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

void resolver_udp_readable(struct custode_resolver *r, int nsl)
{
	const struct nsl *l = &r->nsl[nsl];

	for (int i = 0; i < 64 && l->used; i++) {
		char cbuf[CMSG_SPACE(sizeof(struct in_pktinfo))];
		struct client cl = {.proto = IPPROTO_UDP, .conn = -1, .nsl = nsl, .nsl_gen = l->gen, .netns = l->cookie};
		struct iovec iov = {.iov_base = r->buf, .iov_len = sizeof(r->buf)};
		struct msghdr mh = {.msg_name = &cl.addr,
				    .msg_namelen = sizeof(cl.addr),
				    .msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = cbuf,
				    .msg_controllen = sizeof(cbuf)};
		struct cmsghdr *cm;
		bool have_dst = false;
		ssize_t n = recvmsg(l->udp, &mh, MSG_DONTWAIT);

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

void resolver_tcp_accept(struct custode_resolver *r, int nsl)
{
	const struct nsl *l = &r->nsl[nsl];

	for (int i = 0; i < 16 && l->used; i++) {
		struct sockaddr_in peer, local;
		socklen_t pl = sizeof(peer), ll = sizeof(local);
		int fd = accept4(l->tcp, (struct sockaddr *)&peer, &pl, SOCK_NONBLOCK | SOCK_CLOEXEC), idx = -1;
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
		r->conns[idx].nsl = nsl;
		r->conns[idx].netns = l->cookie;
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
		struct client cl = {.proto = IPPROTO_TCP, .local = c->local, .conn = idx, .conn_gen = c->gen,
				    .nsl = c->nsl, .nsl_gen = r->nsl[c->nsl].gen, .netns = c->netns};

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
