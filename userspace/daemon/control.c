// SPDX-License-Identifier: Apache-2.0
/* The server side of the control socket (control.h, docs/operations.md). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "daemon/control.h"
#include "daemon/loop.h"
#include "daemon/stream.h"

#define MAX_CLIENTS 64
#define FOLLOW_QUEUE_MAX (8u << 20) /* a follower's backlog; past it records are skipped and counted */

struct client {
	bool used;
	int fd;
	char *rbuf;
	size_t rlen, rcap;
	char *wbuf;
	size_t wlen, wcap;
	bool closing; /* close once everything queued is written */
	bool watching_out;
	int follow;   /* stream handle, or -1 */
	uint64_t lost;
	json_t *id;   /* the request id, echoed */
};

static struct {
	int fd;
	char path[108];
	custode_control_handler fn;
	void *ctx;
	struct client c[MAX_CLIENTS];
} C = {.fd = -1};

static int client_event(void *arg, uint32_t revents);

static void client_close(struct client *cl)
{
	if (!cl->used)
		return;
	if (cl->follow >= 0)
		custode_stream_unfollow(cl->follow);
	custode_loop_del(cl->fd);
	close(cl->fd);
	free(cl->rbuf);
	free(cl->wbuf);
	json_decref(cl->id);
	memset(cl, 0, sizeof(*cl));
	cl->follow = -1;
}

static void client_watch(struct client *cl)
{
	/* closing: only EPOLLOUT (HUP/ERR come anyway); a level-triggered RDHUP would fire on every turn */
	uint32_t ev = cl->closing ? 0 : EPOLLIN | EPOLLRDHUP;

	custode_loop_mod(cl->fd, ev | (cl->wlen ? EPOLLOUT : 0));
}

static void client_flush(struct client *cl)
{
	while (cl->wlen) {
		ssize_t w = send(cl->fd, cl->wbuf, cl->wlen, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			break;
		if (w <= 0) {
			client_close(cl);
			return;
		}
		memmove(cl->wbuf, cl->wbuf + w, cl->wlen - (size_t)w);
		cl->wlen -= (size_t)w;
	}
	if (!cl->wlen && cl->closing) {
		client_close(cl);
		return;
	}
	client_watch(cl);
}

/* Queue bytes; false when a follower's backlog is full (the caller counts the loss). */
static bool client_queue(struct client *cl, const char *a, size_t na, const char *b, size_t nb, bool bounded)
{
	size_t need = cl->wlen + na + nb;

	if (bounded && need > FOLLOW_QUEUE_MAX)
		return false;
	if (need > cl->wcap) {
		size_t cap = cl->wcap ? cl->wcap : 65536;
		char *nbuf;

		while (cap < need)
			cap *= 2;
		nbuf = realloc(cl->wbuf, cap);
		if (!nbuf)
			return false;
		cl->wbuf = nbuf;
		cl->wcap = cap;
	}
	memcpy(cl->wbuf + cl->wlen, a, na);
	if (nb)
		memcpy(cl->wbuf + cl->wlen + na, b, nb);
	cl->wlen = need;
	return true;
}

static void client_send(struct client *cl, json_t *o)
{
	char *text;

	if (cl->id && !json_object_get(o, "id"))
		json_object_set(o, "id", cl->id);
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!text) {
		cl->closing = true;
		return;
	}
	client_queue(cl, text, strlen(text), "\n", 1, false);
	free(text);
}

static void client_error(struct client *cl, const struct custode_refusal *why)
{
	client_send(cl, custode_control_error(why));
}

/* A record line for a client: {"event": <record>} */
static bool take_record(void *ctx, const char *line, size_t len, bool bounded)
{
	struct client *cl = ctx;
	static const char head[] = "{\"event\":", tail[] = "}\n";
	char *tmp;
	bool ok;

	if (cl->lost && bounded) {
		char lost[64];
		int n = snprintf(lost, sizeof(lost), "{\"lost\":%llu}\n", (unsigned long long)cl->lost);

		if (!client_queue(cl, lost, (size_t)n, NULL, 0, true)) {
			cl->lost++;
			return false;
		}
		cl->lost = 0;
	}
	tmp = malloc(sizeof(head) - 1 + len);
	if (!tmp)
		return false;
	memcpy(tmp, head, sizeof(head) - 1);
	memcpy(tmp + sizeof(head) - 1, line, len);
	ok = client_queue(cl, tmp, sizeof(head) - 1 + len, tail, 2, bounded);
	free(tmp);
	if (!ok)
		cl->lost++;
	return ok;
}

static bool take_replay(void *ctx, const char *line, size_t len)
{
	return take_record(ctx, line, len, false);
}

static bool take_follow(void *ctx, const char *line, size_t len)
{
	struct client *cl = ctx;
	bool ok = take_record(ctx, line, len, true);

	if (cl->used)
		client_flush(cl);
	return ok;
}

static void cmd_events(struct client *cl, const json_t *req)
{
	struct custode_event_filter f;
	struct custode_refusal why = {0};
	const json_t *jf = json_object_get(req, "filter");
	bool follow = json_is_true(json_object_get(req, "follow"));
	size_t n;

	memset(&f, 0, sizeof(f));
	if (jf && (!json_is_object(jf) || custode_event_filter_from_json(jf, &f) < 0)) {
		custode_refuse(&why, EINVAL, CUSTODE_REASON_DAEMON_PROTOCOL,
			       "events: \"filter\" must be {\"run\": ID, \"reason\": CODE, \"since_ns\": N}");
		client_error(cl, &why);
		return;
	}
	n = custode_stream_replay(&f, take_replay, cl);
	if (!follow) {
		client_send(cl, json_pack("{s:b, s:b, s:I}", "ok", 1, "end", 1, "count", (json_int_t)n));
		return;
	}
	cl->follow = custode_stream_follow(&f, take_follow, cl);
	if (cl->follow < 0) {
		custode_refuse(&why, ENOSPC, CUSTODE_REASON_DAEMON_PROTOCOL, "too many followers");
		client_error(cl, &why);
		cl->closing = true;
	}
}

static void handle_line(struct client *cl, const char *line)
{
	struct custode_refusal why = {0};
	json_error_t jerr;
	json_t *req = json_loads(line, JSON_REJECT_DUPLICATES, &jerr), *ans;
	const char *cmd;

	json_decref(cl->id);
	cl->id = NULL;
	if (!json_is_object(req)) {
		custode_refuse(&why, EINVAL, CUSTODE_REASON_DAEMON_PROTOCOL, "a request is one JSON object per line: %s",
			       req ? "not an object" : jerr.text);
		client_error(cl, &why);
		json_decref(req);
		return;
	}
	cl->id = json_incref(json_object_get(req, "id"));
	cmd = json_string_value(json_object_get(req, "cmd"));
	if (!cmd) {
		custode_refuse(&why, EINVAL, CUSTODE_REASON_DAEMON_PROTOCOL, "the request has no \"cmd\"");
		client_error(cl, &why);
	} else if (cl->follow >= 0) {
		custode_refuse(&why, EINVAL, CUSTODE_REASON_DAEMON_PROTOCOL, "this connection follows the stream");
		client_error(cl, &why);
	} else if (!strcmp(cmd, "events")) {
		cmd_events(cl, req);
	} else if (!strcmp(cmd, "ping")) {
		client_send(cl, json_pack("{s:b, s:i, s:s}", "ok", 1, "pid", (int)getpid(), "version", CUSTODE_VERSION));
	} else if ((ans = C.fn(C.ctx, cmd, req, &why))) {
		json_object_set_new(ans, "ok", json_true());
		client_send(cl, ans);
	} else {
		client_error(cl, &why);
	}
	json_decref(req);
}

static int client_event(void *arg, uint32_t revents)
{
	struct client *cl = arg;

	if (revents & EPOLLOUT)
		client_flush(cl);
	if (!cl->used)
		return 0;
	if (revents & (EPOLLIN | EPOLLHUP | EPOLLRDHUP | EPOLLERR)) {
		for (;;) {
			ssize_t n;
			char *line;
			int r;

			if (cl->rcap - cl->rlen < 4096) {
				size_t cap = cl->rcap ? cl->rcap * 2 : 8192;
				char *nb;

				if (cap > CUSTODE_CONTROL_MAX_LINE * 2)
					cap = CUSTODE_CONTROL_MAX_LINE * 2;
				if (cap <= cl->rcap) {
					struct custode_refusal why = {0};

					custode_refuse(&why, E2BIG, CUSTODE_REASON_DAEMON_PROTOCOL,
						       "request longer than %u bytes", CUSTODE_CONTROL_MAX_LINE);
					client_error(cl, &why);
					cl->closing = true;
					break;
				}
				nb = realloc(cl->rbuf, cap);
				if (!nb) {
					client_close(cl);
					return 0;
				}
				cl->rbuf = nb;
				cl->rcap = cap;
			}
			n = recv(cl->fd, cl->rbuf + cl->rlen, cl->rcap - cl->rlen, MSG_DONTWAIT);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN)
				break;
			if (n <= 0) {
				/* the peer is done sending; answers still go out, then we close */
				cl->closing = true;
				if (cl->follow >= 0 || !cl->wlen) {
					client_close(cl);
					return 0;
				}
				break;
			}
			cl->rlen += (size_t)n;
			while (cl->used && !cl->closing &&
			       (r = custode_control_take_line(cl->rbuf, &cl->rlen, CUSTODE_CONTROL_MAX_LINE, &line)) != 0) {
				if (r < 0) {
					struct custode_refusal why = {0};

					custode_refuse(&why, E2BIG, CUSTODE_REASON_DAEMON_PROTOCOL,
						       "request longer than %u bytes", CUSTODE_CONTROL_MAX_LINE);
					client_error(cl, &why);
					cl->closing = true;
					break;
				}
				handle_line(cl, line);
				free(line);
			}
			if (!cl->used || cl->closing)
				break;
		}
	}
	if (cl->used)
		client_flush(cl);
	return 0;
}

static int accept_event(void *arg, uint32_t revents)
{
	(void)arg;
	(void)revents;
	for (;;) {
		struct custode_refusal why = {0};
		struct ucred cred;
		socklen_t len = sizeof(cred);
		struct client *cl = NULL;
		int fd = accept4(C.fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0)
			return 0; /* EAGAIN, or a peer gone before we took it */
		for (int i = 0; i < MAX_CLIENTS && !cl; i++)
			if (!C.c[i].used)
				cl = &C.c[i];
		if (!cl) {
			static const char busy[] = "{\"ok\":false,\"reason\":\"daemon.protocol\",\"detail\":\"too many "
						   "clients\"}\n";
			(void)!send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			close(fd);
			continue;
		}
		memset(cl, 0, sizeof(*cl));
		cl->used = true;
		cl->fd = fd;
		cl->follow = -1;
		if (custode_loop_add(fd, EPOLLIN | EPOLLRDHUP, client_event, cl) < 0) {
			close(fd);
			cl->used = false;
			continue;
		}
		/* root only: the directory and the socket's mode keep others out; the peer's credentials decide */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != 0) {
			custode_refuse(&why, EPERM, CUSTODE_REASON_DAEMON_PEER,
				       "the control socket answers root only (peer uid %d, pid %d)",
				       len == sizeof(cred) ? (int)cred.uid : -1, len == sizeof(cred) ? (int)cred.pid : -1);
			client_error(cl, &why);
			cl->closing = true;
			client_flush(cl);
		}
	}
}

int custode_control_listen(const char *path, custode_control_handler fn, void *ctx, struct custode_refusal *why)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	int err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return custode_refuse(why, ENAMETOOLONG, CUSTODE_REASON_RUN_SETUP_FAILED, "%s: name too long", path);
	for (int i = 0; i < MAX_CLIENTS; i++)
		C.c[i].follow = -1;
	C.fn = fn;
	C.ctx = ctx;
	snprintf(C.path, sizeof(C.path), "%s", path);
	strcpy(sa.sun_path, path);
	/* a socket left by a daemon that died: we hold the daemon lock, nobody else serves it */
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(path);
	C.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (C.fd < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "control socket: %s", strerror(errno));
	{
		mode_t old = umask(0177); /* born 0600: no window with a wider mode */
		err = bind(C.fd, (struct sockaddr *)&sa, sizeof(sa));
		umask(old);
	}
	if (err < 0 || chmod(path, 0600) < 0 || listen(C.fd, 64) < 0) {
		err = errno;
		close(C.fd);
		C.fd = -1;
		return custode_refuse(why, err, err == EADDRINUSE ? CUSTODE_REASON_DAEMON_RUNNING : CUSTODE_REASON_RUN_SETUP_FAILED,
				      "control socket %s: %s", path, strerror(err));
	}
	if ((err = custode_loop_add(C.fd, EPOLLIN, accept_event, NULL))) {
		close(C.fd);
		C.fd = -1;
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "event loop: %s", strerror(-err));
	}
	return 0;
}

void custode_control_shutdown(void)
{
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (C.c[i].used) {
			client_flush(&C.c[i]);
			client_close(&C.c[i]);
		}
	if (C.fd >= 0) {
		custode_loop_del(C.fd);
		close(C.fd);
		unlink(C.path);
	}
	C.fd = -1;
}

void custode_control_counts(size_t *clients, size_t *followers)
{
	*clients = *followers = 0;
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (C.c[i].used) {
			(*clients)++;
			*followers += C.c[i].follow >= 0;
		}
}
