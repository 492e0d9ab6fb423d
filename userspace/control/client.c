// SPDX-License-Identifier: Apache-2.0
/* The client side of the control socket (control/control.h). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "control/control.h"
#include "util/time.h"

int custode_control_take_line(char *buf, size_t *len, size_t max, char **line)
{
	char *nl = memchr(buf, '\n', *len);
	size_t n;

	if (!nl)
		return *len > max ? -E2BIG : 0;
	n = (size_t)(nl - buf);
	if (n > max)
		return -E2BIG;
	*line = malloc(n + 1);
	if (!*line)
		return -ENOMEM;
	memcpy(*line, buf, n);
	(*line)[n] = 0;
	memmove(buf, nl + 1, *len - n - 1);
	*len -= n + 1;
	return 1;
}

static const char *socket_path(void)
{
	const char *p = getenv("CUSTODE_CONTROL_SOCKET");
	return p && *p ? p : CUSTODE_CONTROL_SOCKET;
}

int custode_control_connect(struct custode_control_client *c, struct custode_refusal *why)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *path = socket_path();
	int fd;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	if (strlen(path) >= sizeof(sa.sun_path))
		return custode_refuse(why, ENAMETOOLONG, CUSTODE_REASON_DAEMON_NOT_RUNNING, "%s: name too long", path);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_DAEMON_NOT_RUNNING, "socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = errno;

		close(fd);
		if (err == ENOENT || err == ECONNREFUSED)
			return custode_refuse(why, err, CUSTODE_REASON_DAEMON_NOT_RUNNING,
					      "no custode daemon listens on %s (start `custode daemon`)", path);
		return custode_refuse(why, err, err == EACCES ? CUSTODE_REASON_PRIVILEGE_REQUIRED
							       : CUSTODE_REASON_DAEMON_NOT_RUNNING,
				      "connect %s: %s", path, strerror(err));
	}
	c->fd = fd;
	return 0;
}

void custode_control_close(struct custode_control_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

int custode_control_send(struct custode_control_client *c, const json_t *req)
{
	char *text = json_dumps(req, JSON_COMPACT);
	size_t n, off = 0;
	int err = 0;

	if (!text)
		return -ENOMEM;
	n = strlen(text);
	text[n] = '\n'; /* json_dumps's NUL becomes the newline; we write n + 1 bytes */
	while (off < n + 1) {
		ssize_t w = send(c->fd, text + off, n + 1 - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			err = w < 0 ? -errno : -EPIPE;
			break;
		}
		off += (size_t)w;
	}
	free(text);
	return err;
}

json_t *custode_control_recv(struct custode_control_client *c, int timeout_ms, int *err)
{
	long long deadline = timeout_ms >= 0 ? custode_mono_ms() + timeout_ms : 0;

	*err = 0;
	for (;;) {
		char *line = NULL;
		int r = custode_control_take_line(c->buf ? c->buf : "", &c->len, CUSTODE_CONTROL_MAX_LINE * 64, &line);
		struct pollfd p = {.fd = c->fd, .events = POLLIN};
		ssize_t n;

		if (r < 0) {
			*err = r;
			return NULL;
		}
		if (r == 1) {
			json_t *o = json_loads(line, JSON_REJECT_DUPLICATES, NULL);

			free(line);
			if (!json_is_object(o)) {
				json_decref(o);
				*err = -EPROTO;
				return NULL;
			}
			return o;
		}
		if (c->cap - c->len < 65536) {
			size_t cap = c->cap ? c->cap * 2 : 131072;
			char *nb = realloc(c->buf, cap);

			if (!nb) {
				*err = -ENOMEM;
				return NULL;
			}
			c->buf = nb;
			c->cap = cap;
		}
		r = poll(&p, 1, timeout_ms < 0 ? -1 : (int)(deadline - custode_mono_ms() > 0 ? deadline - custode_mono_ms() : 0));
		if (r < 0 && errno == EINTR) {
			*err = -EINTR;
			return NULL;
		}
		if (r == 0) {
			*err = -ETIMEDOUT;
			return NULL;
		}
		n = read(c->fd, c->buf + c->len, c->cap - c->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			*err = n < 0 ? -errno : -EPIPE;
			return NULL;
		}
		c->len += (size_t)n;
	}
}

json_t *custode_control_error(const struct custode_refusal *why)
{
	const char *name = custode_reason_name(why->reason);

	return json_pack("{s:b, s:s, s:s}", "ok", 0, "reason", name ? name : "unknown", "detail", why->detail);
}

int custode_control_call(const json_t *req, json_t **resp, int timeout_ms, struct custode_refusal *why)
{
	struct custode_control_client c;
	json_t *o;
	int err;

	if ((err = custode_control_connect(&c, why)))
		return err;
	if ((err = custode_control_send(&c, req))) {
		custode_control_close(&c);
		return custode_refuse(why, -err, CUSTODE_REASON_DAEMON_PROTOCOL, "sending to the daemon: %s",
				      strerror(-err));
	}
	o = custode_control_recv(&c, timeout_ms, &err);
	custode_control_close(&c);
	if (!o)
		return custode_refuse(why, err == -EPROTO ? EPROTO : -err, CUSTODE_REASON_DAEMON_PROTOCOL,
				      "no answer from the daemon: %s", strerror(-err));
	if (!json_is_true(json_object_get(o, "ok"))) {
		const char *r = json_string_value(json_object_get(o, "reason"));
		const char *d = json_string_value(json_object_get(o, "detail"));
		int code = r ? custode_reason_from_name(r) : -1;

		custode_refuse(why, EPERM, code >= 0 ? code : CUSTODE_REASON_DAEMON_PROTOCOL, "%s",
			       d ? d : "the daemon refused without a reason");
		json_decref(o);
		return -EPERM;
	}
	*resp = o;
	return 0;
}
