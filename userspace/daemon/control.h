/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's control socket (docs/operations.md, "Control protocol"):
 * AF_UNIX stream at CUSTODE_CONTROL_SOCKET, root only (the directory is 0700,
 * the socket 0600, and every peer's SO_PEERCRED uid must be 0). JSON lines:
 * one request object per line with a "cmd"; one or more answer objects per
 * line, the last with "ok".
 */
#ifndef CUSTODE_DAEMON_CONTROL_H
#define CUSTODE_DAEMON_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>

#include "util/reasons.h"

struct custode_stream;

#define CUSTODE_CONTROL_SOCKET "/run/custode/control.sock"
#define CUSTODE_CONTROL_MAX_LINE (64u << 10)

/* ---- client side (custode attach/detach/runs/events) ---- */

struct custode_control_client {
	int fd;
	char *buf;
	size_t len, cap;
};

/*
 * Connect to the daemon. 0; -ENOENT/-ECONNREFUSED (why: daemon.not_running)
 * when no daemon listens; another -errno (why says) otherwise.
 */
int custode_control_connect(struct custode_control_client *c, struct custode_refusal *why);
void custode_control_close(struct custode_control_client *c);
/* Send one request (a JSON object) as a line. */
int custode_control_send(struct custode_control_client *c, const json_t *req);
/*
 * The next answer line, parsed (the caller owns it). timeout_ms < 0 waits
 * forever. NULL with *err: -EPIPE at the end of the stream, -ETIMEDOUT,
 * -EPROTO for a line that is not a JSON object, or another -errno.
 */
json_t *custode_control_recv(struct custode_control_client *c, int timeout_ms, int *err);
/*
 * One request, one answer: connect, send, read the answer, close. An answer
 * {"ok": false, "reason": R, "detail": D} becomes a refusal with R and D.
 */
int custode_control_call(const json_t *req, json_t **resp, int timeout_ms, struct custode_refusal *why);

/* An answer line for a refusal: {"ok": false, "reason": ..., "detail": ...}. */
json_t *custode_control_error(const struct custode_refusal *why);

/* ---- server side (the daemon) ---- */

/*
 * A command handler: the answer's fields (the server adds "ok": true and the
 * request's "id"), or NULL with *why filled (sent as an error answer).
 */
typedef json_t *(*custode_control_handler)(void *ctx, const char *cmd, const json_t *req,
					     struct custode_refusal *why);

/*
 * Listen on path (a stale socket is replaced: the caller holds the daemon
 * lock), mode 0600, in the daemon's loop. The server answers "ping" and
 * "events" (a replay and follow of stream, which must outlive the server)
 * itself and passes every other command to fn. What a client has
 * not read yet is bounded: past 1 MiB of answers its further requests wait
 * unread (an events replay too) until it reads; an answer that would take
 * it past 8 MiB closes it instead (counted); a follower's records past 8 MiB
 * are skipped for it and counted. No client ever makes the daemon wait.
 */
int custode_control_listen(const char *path, struct custode_stream *stream, custode_control_handler fn, void *ctx,
			   struct custode_refusal *why);
/*
 * A further check of a root peer by pid (the daemon: refuse processes inside
 * a run): fn(ctx, ...) < 0 and why filled to refuse it (daemon.peer). NULL: none.
 */
void custode_control_set_peer_check(int (*fn)(void *ctx, int pid, struct custode_refusal *why), void *ctx);
void custode_control_shutdown(void);
/* Connected clients, and followers of the stream among them. */
void custode_control_counts(size_t *clients, size_t *followers);

struct custode_control_stats {
	uint64_t overflow_disconnects; /* clients closed: an answer would have taken their unread queue past the hard cap */
	uint64_t follower_lost;        /* records skipped for followers too slow to take them (each told {"lost": N}) */
};
void custode_control_stats(struct custode_control_stats *out);

/* ---- line buffering, shared by both sides (pure; unit-tested) ---- */

/*
 * Take the next complete line out of buf[0..*len) (the newline is dropped,
 * the rest moved to the front). 1 and *line (malloc'd, NUL-terminated) when
 * there is one; 0 when the buffer holds no full line yet; -E2BIG when more
 * than max bytes wait without a newline.
 */
int custode_control_take_line(char *buf, size_t *len, size_t max, char **line);

#endif
