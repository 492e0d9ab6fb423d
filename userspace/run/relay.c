// SPDX-License-Identifier: Apache-2.0
/* The command's output relayed to the launcher's, under limits.outputBytes (relay.h). */
#include <errno.h>
#include <unistd.h>

#include "run/relay.h"

static void relay_out(struct custode_relay *r, int i, const char *buf, size_t n)
{
	while (n && !r->sink_gone[i]) {
		ssize_t w = write(i ? 2 : 1, buf, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			r->sink_gone[i] = true; /* our reader left: keep counting, stop relaying */
			break;
		}
		buf += w;
		n -= (size_t)w;
	}
}

/* Relay what pipe i holds now. Returns true when the cap has just been exceeded. */
bool custode_relay_drain(struct custode_relay *r, int i)
{
	char buf[65536];
	bool over = false;

	while (r->fd[i] >= 0) {
		ssize_t n = read(r->fd[i], buf, sizeof(buf));
		int64_t room;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			close(r->fd[i]);
			r->fd[i] = -1;
			break;
		}
		room = r->cap < 0 ? n : r->cap - r->written;
		if (room > 0)
			relay_out(r, i, buf, (size_t)(room < n ? room : n));
		if (r->cap >= 0 && r->written <= r->cap && r->written + n > r->cap)
			over = true;
		r->written += n;
	}
	return over;
}
