// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "daemon/service_impl.h"
#include "daemon/loop.h"
#include "util/sockaddr.h"

/* ---- the HTTP endpoint: GET /metrics, one request per connection ---- */

void service_http_close(struct http *h)
{
	custode_loop_del(h->v->loop, h->fd);
	close(h->fd);
	free(h->out);
	memset(h, 0, sizeof(*h));
}

static int http_event(void *arg, uint32_t revents)
{
	struct http *h = arg;

	if (!h->out && (revents & EPOLLIN)) {
		ssize_t n = recv(h->fd, h->in + h->inlen, sizeof(h->in) - 1 - h->inlen, MSG_DONTWAIT);
		char *body = NULL;
		bool ok;

		if (n <= 0 && !(n < 0 && errno == EAGAIN)) {
			service_http_close(h);
			return 0;
		}
		if (n > 0)
			h->inlen += (size_t)n;
		h->in[h->inlen] = 0;
		if (!strstr(h->in, "\r\n\r\n") && !strstr(h->in, "\n\n") && h->inlen < sizeof(h->in) - 1)
			return 0;
		ok = !strncmp(h->in, "GET /metrics ", 13) || !strncmp(h->in, "GET / ", 6);
		if (ok)
			body = custode_service_metrics(h->v);
		{
			size_t bl = body ? strlen(body) : 0;
			size_t cap = bl + 256;

			h->out = malloc(cap);
			if (!h->out) {
				free(body);
				service_http_close(h);
				return 0;
			}
			h->outlen = (size_t)snprintf(h->out, cap,
						     "HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: "
						     "close\r\n\r\n",
						     ok ? "200 OK" : "404 Not Found",
						     ok ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain", ok ? bl : 10);
			if (ok) {
				memcpy(h->out + h->outlen, body, bl);
				h->outlen += bl;
			} else {
				memcpy(h->out + h->outlen, "not found\n", 10);
				h->outlen += 10;
			}
		}
		free(body);
		custode_loop_mod(h->v->loop, h->fd, EPOLLOUT);
	}
	if (h->out && (revents & (EPOLLOUT | EPOLLIN))) {
		while (h->off < h->outlen) {
			ssize_t w = send(h->fd, h->out + h->off, h->outlen - h->off, MSG_DONTWAIT | MSG_NOSIGNAL);

			if (w < 0 && errno == EAGAIN)
				return 0;
			if (w <= 0)
				break;
			h->off += (size_t)w;
		}
		service_http_close(h);
		return 0;
	}
	if (revents & (EPOLLERR | EPOLLHUP))
		service_http_close(h);
	return 0;
}

static int http_accept(void *arg, uint32_t revents)
{
	struct custode_service *v = arg;

	(void)revents;
	for (;;) {
		int fd = accept4(v->http_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct http *h = NULL;

		if (fd < 0)
			return 0;
		for (int i = 0; i < MAX_HTTP && !h; i++)
			if (!v->http[i].used)
				h = &v->http[i];
		if (!h || custode_loop_add(v->loop, fd, EPOLLIN, http_event, h) < 0) {
			close(fd);
			continue;
		}
		h->used = true;
		h->v = v;
		h->fd = fd;
		h->started = custode_loop_now_ms();
	}
}

static int http_timer(void *arg)
{
	struct custode_service *v = arg;
	uint64_t now = custode_loop_now_ms();

	for (int i = 0; i < MAX_HTTP; i++)
		if (v->http[i].used && now - v->http[i].started > HTTP_TIMEOUT_MS)
			service_http_close(&v->http[i]);
	return 0;
}

/* "127.0.0.1:9464", "[::1]:9464": any port, the port required (no DNS default, no DNS port rules) */
int service_http_listen(struct custode_service *v, const char *spec, struct custode_refusal *why)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int one = 1, fd, err;

	if (custode_sockaddr_parse(spec, 0, &ss, &len) < 0)
		return custode_refuse(why, EINVAL, CUSTODE_REASON_RUN_USAGE,
				      "--metrics-listen %s: the metrics listener needs ADDR:PORT, a numeric IPv4 or "
				      "[IPv6] address and a port 1-65535 (e.g. 127.0.0.1:9464)", spec);
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "metrics socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 16) < 0) {
		err = errno;
		close(fd);
		return custode_refuse(why, err, CUSTODE_REASON_RUN_SETUP_FAILED, "--metrics-listen %s: %s", spec,
				      strerror(err));
	}
	v->http_fd = fd;
	if ((err = custode_loop_add(v->loop, fd, EPOLLIN, http_accept, v)) ||
	    (err = custode_loop_timer(v->loop, 1000, http_timer, v)) < 0)
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "event loop: %s", strerror(-err));
	return 0;
}

