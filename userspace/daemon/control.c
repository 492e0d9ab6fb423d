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
#include <sys/uio.h>
#include <sys/un.h>

#include "daemon/control.h"
#include "daemon/loop.h"
#include "daemon/stream.h"

#define MAX_CLIENTS 64
/*
 * What a client may have queued and not read yet (each client's memory is
 * bounded, whatever it sends and however slowly it reads):
 * - answers: once ANSWER_QUEUE_HIGH bytes wait, the client's further
 *   requests are neither read nor handled, and an events replay does not go
 *   on, until it has read some (backpressure: its requests wait in its
 *   socket, and it blocks sending them). The queue then holds at most that
 *   plus one answer. An answer that would take it past ANSWER_QUEUE_MAX is
 *   not queued: the client is disconnected and counted (overflow_disconnects);
 * - a follower's records: past FOLLOW_QUEUE_MAX they are skipped for it
 *   alone and counted, and it is told ({"lost": N}) before its next record.
 * Nothing is ever sent blocking: the daemon never waits for a client.
 */
#define ANSWER_QUEUE_HIGH (1u << 20)
#define ANSWER_QUEUE_MAX (8u << 20)
#define FOLLOW_QUEUE_MAX (8u << 20)
#define WBUF_KEEP (256u << 10) /* an emptied queue's buffer larger than this is given back */

struct client {
	struct custode_control_server *srv; /* whose client it is (kept by client_reset) */
	bool used;
	int fd;
	char *rbuf;
	size_t rlen, rcap;
	char *wbuf;
	size_t woff, wlen, wcap; /* queued: wbuf[woff .. woff + wlen) */
	bool closing;    /* close once everything queued is written */
	bool overflowed; /* past the hard cap: nothing more is queued for it */
	int follow;      /* stream handle, or -1 */
	int cursor;      /* an events replay going on: its stream cursor, or -1 */
	bool replay_follow;
	size_t replay_n;
	struct custode_event_filter replay_f;
	uint64_t lost;
	json_t *id;   /* the request id, echoed */
	int pid;      /* SO_PEERCRED at accept */
};

struct custode_control_server {
	struct custode_loop *loop;
	int fd;
	char path[108];
	custode_control_handler fn;
	void *ctx;
	struct client c[MAX_CLIENTS];
	struct custode_control_stats st;
	struct custode_stream *stream; /* "events": replays and follows it */
	int (*peer_check)(void *ctx, int pid, struct custode_refusal *why);
	void *peer_ctx;
};

static int client_event(void *arg, uint32_t revents);

static void client_reset(struct client *cl)
{
	struct custode_control_server *srv = cl->srv;

	memset(cl, 0, sizeof(*cl));
	cl->srv = srv;
	cl->follow = -1;
	cl->cursor = -1;
}

static void client_close(struct client *cl)
{
	if (!cl->used)
		return;
	if (cl->follow >= 0)
		custode_stream_unfollow(cl->srv->stream, cl->follow);
	if (cl->cursor >= 0)
		custode_stream_cursor_close(cl->srv->stream, cl->cursor);
	custode_loop_del(cl->srv->loop, cl->fd);
	close(cl->fd);
	free(cl->rbuf);
	free(cl->wbuf);
	json_decref(cl->id);
	client_reset(cl);
}

/* Its requests wait: too much queued for it, or an events replay still going on. */
static bool client_busy(const struct client *cl)
{
	return cl->wlen >= ANSWER_QUEUE_HIGH || cl->cursor >= 0;
}

/* A whole request (or one too long to wait for) was read and not handled yet. */
static bool client_has_line(const struct client *cl)
{
	return cl->rlen && (cl->rlen > CUSTODE_CONTROL_MAX_LINE || memchr(cl->rbuf, '\n', cl->rlen));
}

static void client_watch(struct client *cl)
{
	/* closing: only EPOLLOUT (HUP/ERR come anyway); a level-triggered RDHUP would fire on every turn */
	uint32_t ev = 0;

	if (!cl->closing && !client_busy(cl)) {
		ev = EPOLLIN | EPOLLRDHUP;
		/* requests read while it was busy: a turn of the loop for them (the socket may hold no more) */
		if (client_has_line(cl))
			ev |= EPOLLOUT;
	}
	/* busy: not even RDHUP (level-triggered, it would fire on every turn); a peer that left fails the send */
	custode_loop_mod(cl->srv->loop, cl->fd, ev | (cl->wlen ? EPOLLOUT : 0));
}

/* Send what the socket takes now, never waiting. false when the client was closed (the peer is gone). */
static bool client_write(struct client *cl)
{
	while (cl->wlen) {
		ssize_t w = send(cl->fd, cl->wbuf + cl->woff, cl->wlen, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			break;
		if (w <= 0) {
			client_close(cl);
			return false;
		}
		cl->woff += (size_t)w;
		cl->wlen -= (size_t)w;
	}
	if (!cl->wlen) {
		cl->woff = 0;
		if (cl->wcap > WBUF_KEEP) {
			free(cl->wbuf);
			cl->wbuf = NULL;
			cl->wcap = 0;
		}
	}
	return true;
}

/* Send what can be sent; close a closing client once all is; else watch for what it waits for. */
static void client_flush(struct client *cl)
{
	if (!client_write(cl))
		return;
	if (!cl->wlen && cl->closing) {
		client_close(cl);
		return;
	}
	client_watch(cl);
}

/* Past the hard cap: nothing more for this client; what is queued is dropped and it is closed (client_flush). */
static void client_overflow(struct client *cl)
{
	cl->overflowed = true;
	cl->closing = true;
	cl->woff = cl->wlen = 0;
	if (cl->cursor >= 0) {
		custode_stream_cursor_close(cl->srv->stream, cl->cursor);
		cl->cursor = -1;
	}
	cl->srv->st.overflow_disconnects++;
}

/*
 * Queue bytes. bounded (a follower's records): false when its backlog is
 * full (the caller counts the loss). Answers: false past the hard cap, and
 * the client is then disconnected.
 */
static bool client_queue(struct client *cl, const struct iovec *iov, int n, bool bounded)
{
	size_t add = 0;

	if (cl->overflowed)
		return false;
	for (int i = 0; i < n; i++)
		add += iov[i].iov_len;
	if (cl->wlen + add > (bounded ? FOLLOW_QUEUE_MAX : ANSWER_QUEUE_MAX)) {
		if (!bounded)
			client_overflow(cl);
		return false;
	}
	if (cl->woff + cl->wlen + add > cl->wcap) {
		if (cl->woff) {
			memmove(cl->wbuf, cl->wbuf + cl->woff, cl->wlen);
			cl->woff = 0;
		}
		if (cl->wlen + add > cl->wcap) {
			size_t cap = cl->wcap ? cl->wcap : 65536;
			char *nbuf;

			while (cap < cl->wlen + add)
				cap *= 2;
			nbuf = realloc(cl->wbuf, cap);
			if (!nbuf) {
				if (!bounded)
					client_overflow(cl);
				return false;
			}
			cl->wbuf = nbuf;
			cl->wcap = cap;
		}
	}
	for (int i = 0; i < n; i++) {
		memcpy(cl->wbuf + cl->woff + cl->wlen, iov[i].iov_base, iov[i].iov_len);
		cl->wlen += iov[i].iov_len;
	}
	return true;
}

static void client_send(struct client *cl, json_t *o)
{
	struct iovec v[2];
	char *text;

	if (!o) {
		cl->closing = true;
		return;
	}
	if (cl->id && !json_object_get(o, "id"))
		json_object_set(o, "id", cl->id);
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!text) {
		cl->closing = true;
		return;
	}
	v[0] = (struct iovec){text, strlen(text)};
	v[1] = (struct iovec){(void *)"\n", 1};
	client_queue(cl, v, 2, false);
	free(text);
}

static void client_error(struct client *cl, const struct custode_refusal *why)
{
	client_send(cl, custode_control_error(why));
}

/* {"lost": N} when records were skipped for this reader (then none are owed). */
static bool queue_lost(struct client *cl, bool bounded)
{
	char lost[64];
	struct iovec v;

	if (!cl->lost)
		return true;
	v.iov_base = lost;
	v.iov_len = (size_t)snprintf(lost, sizeof(lost), "{\"lost\":%llu}\n", (unsigned long long)cl->lost);
	if (!client_queue(cl, &v, 1, bounded))
		return false;
	cl->lost = 0;
	return true;
}

/* A record line for a client: {"event": <record>}, told first of any it lost. */
static bool queue_record(struct client *cl, const char *line, size_t len, bool bounded)
{
	static const char head[] = "{\"event\":", tail[] = "}\n";
	struct iovec v[3] = {
		{(void *)head, sizeof(head) - 1},
		{(void *)line, len},
		{(void *)tail, sizeof(tail) - 1},
	};

	return queue_lost(cl, bounded) && client_queue(cl, v, 3, bounded);
}

static bool take_replay(void *ctx, const char *line, size_t len)
{
	struct client *cl = ctx;

	/* backpressure: the rest of the replay waits until the client has read (one record always goes) */
	if (cl->wlen && cl->wlen + len + 64 > ANSWER_QUEUE_HIGH)
		return false;
	return queue_record(cl, line, len, false);
}

static bool take_follow(void *ctx, const char *line, size_t len)
{
	struct client *cl = ctx;
	bool ok = queue_record(cl, line, len, true);

	if (!ok) {
		cl->lost++;
		cl->srv->st.follower_lost++;
	}
	if (cl->used)
		client_flush(cl);
	return ok;
}

/* The keys of an events filter (custode_event_filter_to_json); another is a typo, not "no filter". */
static const char *filter_unknown_key(const json_t *jf)
{
	static const char *const known[] = {"run", "reason", "since_ns"};
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)jf, k, v) {
		size_t i = 0;

		while (i < sizeof(known) / sizeof(known[0]) && strcmp(k, known[i]))
			i++;
		if (i == sizeof(known) / sizeof(known[0]))
			return k;
	}
	return NULL;
}

static void cmd_events(struct client *cl, const json_t *req)
{
	struct custode_event_filter f;
	struct custode_refusal why = {0};
	const json_t *jf = json_object_get(req, "filter");
	const char *unknown;

	memset(&f, 0, sizeof(f));
	if (jf && json_is_object(jf) && (unknown = filter_unknown_key(jf))) {
		custode_refuse(&why, EINVAL, CUSTODE_REASON_DAEMON_PROTOCOL,
			       "events: unknown key \"%.64s\" in \"filter\" (its keys: run, reason, since_ns)", unknown);
		client_error(cl, &why);
		return;
	}
	if (jf && (!json_is_object(jf) || custode_event_filter_from_json(jf, &f) < 0)) {
		custode_refuse(&why, EINVAL, CUSTODE_REASON_DAEMON_PROTOCOL,
			       "events: \"filter\" must be {\"run\": ID, \"reason\": CODE, \"since_ns\": N}");
		client_error(cl, &why);
		return;
	}
	/* the replay goes as far as the client's queue allows each time (client_pump), then the end or following */
	cl->cursor = custode_stream_cursor_open(cl->srv->stream, &f);
	if (cl->cursor < 0) {
		custode_refuse(&why, ENOSPC, CUSTODE_REASON_DAEMON_PROTOCOL, "too many replays at once");
		client_error(cl, &why);
		return;
	}
	cl->replay_follow = json_is_true(json_object_get(req, "follow"));
	cl->replay_f = f;
	cl->replay_n = 0;
}

/* Go on with an events replay as far as the client's queue allows. true when it moved. */
static bool client_pump(struct client *cl)
{
	struct custode_refusal why = {0};
	size_t n = 0;
	bool done;

	if (cl->cursor < 0 || cl->closing)
		return false;
	cl->lost += custode_stream_cursor_lost(cl->srv->stream, cl->cursor);
	done = custode_stream_cursor_next(cl->srv->stream, cl->cursor, take_replay, cl, &n);
	cl->replay_n += n;
	if (!done || cl->cursor < 0) /* not yet, or overflowed */
		return n > 0 || cl->cursor < 0;
	custode_stream_cursor_close(cl->srv->stream, cl->cursor);
	cl->cursor = -1;
	if (!cl->replay_follow) {
		queue_lost(cl, false);
		client_send(cl, json_pack("{s:b, s:b, s:I}", "ok", 1, "end", 1, "count", (json_int_t)cl->replay_n));
		return true;
	}
	/* caught up: nothing new can come between the last replayed record and the first followed one */
	cl->follow = custode_stream_follow(cl->srv->stream, &cl->replay_f, take_follow, cl);
	if (cl->follow < 0) {
		custode_refuse(&why, ENOSPC, CUSTODE_REASON_DAEMON_PROTOCOL, "too many followers");
		client_error(cl, &why);
		cl->closing = true;
	}
	return true;
}

static void handle_line(struct client *cl, const char *line, size_t len)
{
	struct custode_refusal why = {0};
	json_error_t jerr;
	json_t *req, *ans;
	const char *cmd;

	json_decref(cl->id);
	cl->id = NULL;
	/* json_loads would stop at the NUL and judge only what comes before it */
	if (memchr(line, 0, len)) {
		custode_refuse(&why, EINVAL, CUSTODE_REASON_DAEMON_PROTOCOL,
			       "a request is one JSON object per line: a NUL byte at offset %zu",
			       (size_t)((const char *)memchr(line, 0, len) - line));
		client_error(cl, &why);
		return;
	}
	req = json_loads(line, JSON_REJECT_DUPLICATES, &jerr);
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
	} else if ((ans = cl->srv->fn(cl->srv->ctx, cmd, req, cl->pid, &why))) {
		json_object_set_new(ans, "ok", json_true());
		client_send(cl, ans);
	} else {
		client_error(cl, &why);
	}
	json_decref(req);
}

static void refuse_too_long(struct client *cl)
{
	struct custode_refusal why = {0};

	custode_refuse(&why, E2BIG, CUSTODE_REASON_DAEMON_PROTOCOL, "request longer than %u bytes",
		       CUSTODE_CONTROL_MAX_LINE);
	client_error(cl, &why);
	cl->closing = true;
}

/* Handle the requests read already, while the client is not busy. true when one was. */
static bool client_process(struct client *cl)
{
	bool moved = false;

	while (cl->used && !cl->closing && !client_busy(cl) && cl->rlen) {
		size_t before = cl->rlen;
		char *line;
		int r = custode_control_take_line(cl->rbuf, &cl->rlen, CUSTODE_CONTROL_MAX_LINE, &line);

		if (!r)
			break;
		moved = true;
		if (r < 0) {
			if (r == -E2BIG)
				refuse_too_long(cl);
			else
				cl->closing = true;
			break;
		}
		handle_line(cl, line, before - cl->rlen - 1);
		free(line);
	}
	return moved;
}

/*
 * Everything that can be done for a client now, without waiting: the
 * replay and the requests read already, as far as its queue allows, and
 * sending. Then it is closed or watched for what it waits for.
 */
static void client_run(struct client *cl)
{
	while (cl->used && client_write(cl)) {
		bool moved = client_pump(cl);

		if (client_process(cl))
			moved = true;
		/* done, or waiting for the client to read (the socket is full: EPOLLOUT) */
		if (!moved || cl->wlen >= ANSWER_QUEUE_HIGH || cl->closing)
			break;
	}
	if (cl->used)
		client_flush(cl);
}

/* Read requests while the client is not busy; each is handled as it comes. */
static void client_read(struct client *cl)
{
	while (cl->used && !cl->closing && !client_busy(cl)) {
		ssize_t n;

		if (cl->rcap - cl->rlen < 4096) {
			size_t cap = cl->rcap ? cl->rcap * 2 : 8192;
			char *nb;

			if (cap > CUSTODE_CONTROL_MAX_LINE * 2)
				cap = CUSTODE_CONTROL_MAX_LINE * 2;
			if (cap <= cl->rcap) {
				refuse_too_long(cl);
				return;
			}
			nb = realloc(cl->rbuf, cap);
			if (!nb) {
				client_close(cl);
				return;
			}
			cl->rbuf = nb;
			cl->rcap = cap;
		}
		n = recv(cl->fd, cl->rbuf + cl->rlen, cl->rcap - cl->rlen, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			/* the peer is done sending; answers still go out, then we close */
			cl->closing = true;
			if (cl->follow >= 0 || !cl->wlen)
				client_close(cl);
			return;
		}
		cl->rlen += (size_t)n;
		client_run(cl);
	}
}

static int client_event(void *arg, uint32_t revents)
{
	struct client *cl = arg;

	/* what was waiting for room in its queue first (EPOLLOUT), then what it sent */
	client_run(cl);
	if (cl->used && (revents & (EPOLLIN | EPOLLHUP | EPOLLRDHUP | EPOLLERR)))
		client_read(cl);
	if (cl->used)
		client_flush(cl);
	return 0;
}

static int accept_event(void *arg, uint32_t revents)
{
	struct custode_control_server *srv = arg;

	(void)revents;
	for (;;) {
		struct custode_refusal why = {0};
		struct ucred cred = {.pid = 0, .uid = (uid_t)-1};
		socklen_t len = sizeof(cred);
		struct client *cl = NULL;
		int fd = accept4(srv->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0)
			return 0; /* EAGAIN, or a peer gone before we took it */
		for (int i = 0; i < MAX_CLIENTS && !cl; i++)
			if (!srv->c[i].used)
				cl = &srv->c[i];
		if (!cl) {
			static const char busy[] = "{\"ok\":false,\"reason\":\"daemon.protocol\",\"detail\":\"too many "
						   "clients\"}\n";
			(void)!send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			close(fd);
			continue;
		}
		client_reset(cl);
		cl->used = true;
		cl->fd = fd;
		if (custode_loop_add(srv->loop, fd, EPOLLIN | EPOLLRDHUP, client_event, cl) < 0) {
			close(fd);
			cl->used = false;
			continue;
		}
		/* root only: the directory and the socket's mode keep others out; the peer's credentials decide */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
			cl->pid = cred.pid;
		if (len != sizeof(cred) || cl->pid <= 0 || cred.uid != 0) {
			custode_refuse(&why, EPERM, CUSTODE_REASON_DAEMON_PEER,
				       "the control socket answers root only (peer uid %d, pid %d)",
				       len == sizeof(cred) ? (int)cred.uid : -1, len == sizeof(cred) ? (int)cred.pid : -1);
			client_error(cl, &why);
			cl->closing = true;
			client_flush(cl);
		} else if (srv->peer_check && srv->peer_check(srv->peer_ctx, cred.pid, &why) < 0) {
			/* root inside a run (an attached unit or pod) must not detach itself */
			client_error(cl, &why);
			cl->closing = true;
			client_flush(cl);
		}
	}
}

void custode_control_set_peer_check(struct custode_control_server *srv,
				    int (*fn)(void *ctx, int pid, struct custode_refusal *why), void *ctx)
{
	srv->peer_check = fn;
	srv->peer_ctx = ctx;
}

int custode_control_listen(struct custode_loop *loop, const char *path, struct custode_stream *stream,
			   custode_control_handler fn, void *ctx, struct custode_control_server **out,
			   struct custode_refusal *why)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct custode_control_server *srv;
	struct stat st;
	int err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return custode_refuse(why, ENAMETOOLONG, CUSTODE_REASON_RUN_SETUP_FAILED, "%s: name too long", path);
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return custode_refuse(why, ENOMEM, CUSTODE_REASON_RUN_SETUP_FAILED, "out of memory");
	for (int i = 0; i < MAX_CLIENTS; i++) {
		srv->c[i].srv = srv;
		client_reset(&srv->c[i]);
	}
	srv->loop = loop;
	srv->stream = stream;
	srv->fn = fn;
	srv->ctx = ctx;
	snprintf(srv->path, sizeof(srv->path), "%s", path);
	strcpy(sa.sun_path, path);
	/* a socket left by a daemon that died: we hold the daemon lock, nobody else serves it */
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(path);
	srv->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (srv->fd < 0) {
		err = errno;
		free(srv);
		return custode_refuse(why, err, CUSTODE_REASON_RUN_SETUP_FAILED, "control socket: %s", strerror(err));
	}
	{
		mode_t old = umask(0177); /* born 0600: no window with a wider mode */
		err = bind(srv->fd, (struct sockaddr *)&sa, sizeof(sa));
		umask(old);
	}
	if (err < 0 || chmod(path, 0600) < 0 || listen(srv->fd, 64) < 0) {
		err = errno;
		close(srv->fd);
		free(srv);
		return custode_refuse(why, err, err == EADDRINUSE ? CUSTODE_REASON_DAEMON_RUNNING : CUSTODE_REASON_RUN_SETUP_FAILED,
				      "control socket %s: %s", path, strerror(err));
	}
	if ((err = custode_loop_add(loop, srv->fd, EPOLLIN, accept_event, srv))) {
		close(srv->fd);
		free(srv);
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "event loop: %s", strerror(-err));
	}
	*out = srv;
	return 0;
}

void custode_control_shutdown(struct custode_control_server *srv)
{
	if (!srv)
		return;
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (srv->c[i].used) {
			client_flush(&srv->c[i]);
			client_close(&srv->c[i]);
		}
	if (srv->fd >= 0) {
		custode_loop_del(srv->loop, srv->fd);
		close(srv->fd);
		unlink(srv->path);
	}
	/* what listen and set_peer_check set goes with the handle */
	free(srv);
}

void custode_control_counts(const struct custode_control_server *srv, size_t *clients, size_t *followers)
{
	*clients = *followers = 0;
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (srv->c[i].used) {
			(*clients)++;
			*followers += srv->c[i].follow >= 0;
		}
}

void custode_control_stats(const struct custode_control_server *srv, struct custode_control_stats *out)
{
	*out = srv->st;
}
