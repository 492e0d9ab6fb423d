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

/* ---- the HTTP endpoint: GET or HEAD /metrics, /healthz, /readyz; one request per connection ---- */

void service_http_close(struct http *h)
{
	custode_loop_del(h->v->loop, h->fd);
	close(h->fd);
	free(h->out);
	memset(h, 0, sizeof(*h));
}

/*
 * What a request asks for: "GET" or "HEAD" (HEAD: GET's headers, no body)
 * and a path. Anything else is answered 405 (other methods) or 400.
 */
struct http_request {
	bool head;
	char path[64];
};

/* 0, -EINVAL (not "METHOD PATH HTTP/x"), -EOPNOTSUPP (a method other than GET and HEAD). */
static int http_parse(const char *in, struct http_request *rq)
{
	const char *sp = strchr(in, ' '), *path, *end;
	size_t mlen, plen;

	if (!sp)
		return -EINVAL;
	mlen = (size_t)(sp - in);
	path = sp + 1;
	end = strpbrk(path, " \r\n");
	if (!end || *end != ' ' || strncmp(end + 1, "HTTP/", 5))
		return -EINVAL;
	plen = (size_t)(end - path);
	if (!plen || path[0] != '/' || plen >= sizeof(rq->path))
		return plen >= sizeof(rq->path) ? -ENOENT : -EINVAL;
	if (mlen == 3 && !strncmp(in, "GET", 3))
		rq->head = false;
	else if (mlen == 4 && !strncmp(in, "HEAD", 4))
		rq->head = true;
	else
		return -EOPNOTSUPP;
	memcpy(rq->path, path, plen);
	rq->path[plen] = 0;
	return 0;
}

/*
 * Ready: start finished (the registry adopted, the first snapshot taken, the
 * endpoints listening) and a control server answers. NULL when ready, else why not.
 */
static const char *service_not_ready(const struct custode_service *v)
{
	if (!v->started)
		return "starting";
	if (!v->control)
		return "the control socket is not serving";
	return NULL;
}

/*
 * The answer to a path: its status line and content type; its body is the
 * metrics text (malloc'd, in *big) or a short text in small.
 */
static const char *http_route(struct custode_service *v, const char *path, const char **type, char **big,
			      char *small, size_t len)
{
	const char *why;

	*type = "text/plain; charset=utf-8";
	if (!strcmp(path, "/metrics") || !strcmp(path, "/")) {
		*type = "text/plain; version=0.0.4; charset=utf-8";
		*big = custode_service_metrics(v);
		snprintf(small, len, "%s", *big ? "" : "no metrics: out of memory\n");
		return *big ? "200 OK" : "500 Internal Server Error";
	}
	if (!strcmp(path, "/healthz")) { /* the loop answered: the daemon is alive */
		snprintf(small, len, "ok\n");
		return "200 OK";
	}
	if (!strcmp(path, "/readyz")) {
		why = service_not_ready(v);
		snprintf(small, len, "%s\n", why ? why : "ready");
		return why ? "503 Service Unavailable" : "200 OK";
	}
	snprintf(small, len, "not found\n");
	return "404 Not Found";
}

char *service_http_respond(struct custode_service *v, const char *in, size_t *len)
{
	struct http_request rq = {0};
	const char *status, *type = "text/plain; charset=utf-8", *allow = "", *body;
	char small[128], *big = NULL, *out;
	size_t bl, cap;
	int err = http_parse(in, &rq);

	if (err == -EOPNOTSUPP) {
		status = "405 Method Not Allowed", allow = "Allow: GET, HEAD\r\n";
		snprintf(small, sizeof(small), "only GET and HEAD\n");
	} else if (err == -ENOENT) {
		status = "404 Not Found";
		snprintf(small, sizeof(small), "not found\n");
	} else if (err) {
		status = "400 Bad Request";
		snprintf(small, sizeof(small), "bad request\n");
	} else {
		status = http_route(v, rq.path, &type, &big, small, sizeof(small));
	}
	body = big ? big : small;
	bl = strlen(body);
	cap = bl + 512;
	out = malloc(cap);
	if (out) {
		*len = (size_t)snprintf(out, cap,
					"HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%sConnection: close\r\n\r\n",
					status, type, bl, allow);
		if (!rq.head) { /* HEAD: the same headers, Content-Length included, and no body */
			memcpy(out + *len, body, bl);
			*len += bl;
		}
	}
	free(big);
	return out;
}

static int http_event(void *arg, uint32_t revents)
{
	struct http *h = arg;

	if (!h->out && (revents & EPOLLIN)) {
		ssize_t n = recv(h->fd, h->in + h->inlen, sizeof(h->in) - 1 - h->inlen, MSG_DONTWAIT);

		if (n <= 0 && !(n < 0 && errno == EAGAIN)) {
			service_http_close(h);
			return 0;
		}
		if (n > 0)
			h->inlen += (size_t)n;
		h->in[h->inlen] = 0;
		if (!strstr(h->in, "\r\n\r\n") && !strstr(h->in, "\n\n") && h->inlen < sizeof(h->in) - 1)
			return 0;
		h->out = service_http_respond(h->v, h->in, &h->outlen);
		if (!h->out) {
			service_http_close(h);
			return 0;
		}
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
		return custode_refuse(why, EINVAL, CUSTODE_REASON_DAEMON_USAGE,
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

