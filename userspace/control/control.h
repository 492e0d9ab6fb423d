/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's control socket (docs/operations.md, "Control protocol"):
 * AF_UNIX stream at CUSTODE_CONTROL_SOCKET, root only (the directory is 0700,
 * the socket 0600, and every peer's SO_PEERCRED uid must be 0). JSON lines:
 * one request object per line with a "cmd"; one or more answer objects per
 * line, the last with "ok".
 *
 * This header is the protocol and its client (control/client.c), used by
 * the commands that talk to the daemon; the server is daemon/control.h.
 */
#ifndef CUSTODE_CONTROL_CONTROL_H
#define CUSTODE_CONTROL_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>

#include "util/reasons.h"

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

/* ---- line buffering, shared by both sides (pure; unit-tested) ---- */

/*
 * Take the next complete line out of buf[0..*len) (the newline is dropped,
 * the rest moved to the front). 1 and *line (malloc'd, NUL-terminated) when
 * there is one; 0 when the buffer holds no full line yet; -E2BIG when more
 * than max bytes wait without a newline.
 */
int custode_control_take_line(char *buf, size_t *len, size_t max, char **line);

#endif
