/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The server side of the daemon's control socket: listening in the daemon's
 * loop, the peer check, the clients' counts. The server is a handle (struct
 * custode_control_server, from custode_control_listen, freed by
 * custode_control_shutdown), passed to every function below. The protocol
 * (the socket's path, JSON lines, the line buffering) and its client are
 * control/control.h.
 */
#ifndef CUSTODE_DAEMON_CONTROL_H
#define CUSTODE_DAEMON_CONTROL_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "control/control.h"
#include "util/reasons.h"

struct custode_loop;
struct custode_stream;

/* ---- server side (the daemon) ---- */

/* The control server: a handle, from custode_control_listen. */
struct custode_control_server;

/*
 * A command handler: the answer's fields (the server adds "ok": true and the
 * request's "id"), or NULL with *why filled (sent as an error answer).
 * peer_pid: the client's pid from SO_PEERCRED at connect (the client is
 * waiting for this answer, so the pid is still its own).
 */
typedef json_t *(*custode_control_handler)(void *ctx, const char *cmd, const json_t *req, int peer_pid,
					     struct custode_refusal *why);

/*
 * Listen on path (a stale socket is replaced: the caller holds the daemon
 * lock), mode 0600, in the daemon's loop (which must outlive the server):
 * 0 and *out, or -errno with why filled (*out untouched). The server answers
 * "ping" and "events" (a replay and follow of stream, which must outlive the
 * server) itself and passes every other command to fn. What a client has
 * not read yet is bounded: past 1 MiB of answers its further requests wait
 * unread (an events replay too) until it reads; an answer that would take
 * it past 8 MiB closes it instead (counted); a follower's records past 8 MiB
 * are skipped for it and counted. No client ever makes the daemon wait.
 */
int custode_control_listen(struct custode_loop *loop, const char *path, struct custode_stream *stream,
			   custode_control_handler fn, void *ctx, struct custode_control_server **out,
			   struct custode_refusal *why);
/*
 * A further check of a root peer by pid (the daemon: refuse processes inside
 * a run): fn(ctx, ...) < 0 and why filled to refuse it (daemon.peer). NULL: none.
 */
void custode_control_set_peer_check(struct custode_control_server *srv,
				    int (*fn)(void *ctx, int pid, struct custode_refusal *why), void *ctx);
/*
 * Flush what can be sent without waiting, close every client and the socket
 * (its path removed) and free the server, with what listen and the peer
 * check set (the stream is no longer read). NULL: nothing.
 */
void custode_control_shutdown(struct custode_control_server *srv);
/* Connected clients, and followers of the stream among them. */
void custode_control_counts(const struct custode_control_server *srv, size_t *clients, size_t *followers);

struct custode_control_stats {
	uint64_t overflow_disconnects; /* clients closed: an answer would have taken their unread queue past the hard cap */
	uint64_t follower_lost;        /* records skipped for followers too slow to take them (each told {"lost": N}) */
};
void custode_control_stats(const struct custode_control_server *srv, struct custode_control_stats *out);

#endif
