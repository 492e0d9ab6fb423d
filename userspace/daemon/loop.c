// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "daemon/daemon.h"
#include "daemon/loop.h"

#define MAX_FDS 256
#define MAX_TIMERS 32

struct slot {
	int fd;
	custode_loop_fn fn;
	void *arg;
	uint32_t gen;
	bool used;
};

struct timer {
	unsigned period_ms;
	uint64_t due;
	int (*fn)(void *arg);
	void *arg;
	bool used;
};

static struct {
	int ep;
	struct slot slots[MAX_FDS];
	struct timer timers[MAX_TIMERS];
} L = {.ep = -1};

uint64_t custode_loop_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int custode_loop_init(void)
{
	memset(&L, 0, sizeof(L));
	L.ep = epoll_create1(EPOLL_CLOEXEC);
	return L.ep < 0 ? -errno : 0;
}

void custode_loop_fini(void)
{
	if (L.ep >= 0)
		close(L.ep);
	L.ep = -1;
}

static struct slot *find(int fd)
{
	for (int i = 0; i < MAX_FDS; i++)
		if (L.slots[i].used && L.slots[i].fd == fd)
			return &L.slots[i];
	return NULL;
}

int custode_loop_add(int fd, uint32_t events, custode_loop_fn fn, void *arg)
{
	struct epoll_event ev = {.events = events};
	int i;

	if (fd < 0 || !fn)
		return -EINVAL;
	if (find(fd))
		return -EEXIST;
	for (i = 0; i < MAX_FDS && L.slots[i].used; i++)
		;
	if (i == MAX_FDS)
		return -ENOSPC;
	L.slots[i].gen++;
	ev.data.u64 = (uint64_t)L.slots[i].gen << 32 | (uint32_t)i;
	if (epoll_ctl(L.ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	L.slots[i].fd = fd;
	L.slots[i].fn = fn;
	L.slots[i].arg = arg;
	L.slots[i].used = true;
	return 0;
}

int custode_loop_mod(int fd, uint32_t events)
{
	struct slot *s = find(fd);
	struct epoll_event ev = {.events = events};

	if (!s)
		return -ENOENT;
	ev.data.u64 = (uint64_t)s->gen << 32 | (uint32_t)(s - L.slots);
	return epoll_ctl(L.ep, EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : 0;
}

int custode_loop_del(int fd)
{
	struct slot *s = find(fd);

	if (!s)
		return -ENOENT;
	epoll_ctl(L.ep, EPOLL_CTL_DEL, fd, NULL);
	s->used = false; /* events already fetched for it carry the old generation: ignored */
	s->gen++;
	return 0;
}

int custode_loop_timer(unsigned period_ms, int (*fn)(void *arg), void *arg)
{
	for (int i = 0; i < MAX_TIMERS; i++) {
		if (L.timers[i].used)
			continue;
		L.timers[i].used = true;
		L.timers[i].period_ms = period_ms ? period_ms : 1;
		L.timers[i].due = custode_loop_now_ms() + L.timers[i].period_ms;
		L.timers[i].fn = fn;
		L.timers[i].arg = arg;
		return i;
	}
	return -ENOSPC;
}

int custode_loop_run(volatile sig_atomic_t *stop)
{
	struct epoll_event evs[64];

	while (!*stop) {
		uint64_t now = custode_loop_now_ms(), next = now + 1000;
		int n, timeout;

		for (int i = 0; i < MAX_TIMERS; i++)
			if (L.timers[i].used && L.timers[i].due < next)
				next = L.timers[i].due;
		timeout = next > now ? (int)(next - now) : 0;
		n = epoll_wait(L.ep, evs, 64, timeout);
		if (n < 0 && errno != EINTR)
			return -errno;
		for (int i = 0; i < n && !*stop; i++) {
			uint32_t idx = (uint32_t)evs[i].data.u64, gen = (uint32_t)(evs[i].data.u64 >> 32);
			struct slot *s;
			int r;

			if (idx >= MAX_FDS)
				continue;
			s = &L.slots[idx];
			if (!s->used || s->gen != gen)
				continue;
			r = s->fn(s->arg, evs[i].events);
			if (r < 0)
				return r;
		}
		now = custode_loop_now_ms();
		for (int i = 0; i < MAX_TIMERS && !*stop; i++) {
			struct timer *t = &L.timers[i];
			int r;

			if (!t->used || t->due > now)
				continue;
			t->due = now + t->period_ms;
			r = t->fn(t->arg);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* ---- the public face, for other parts of the daemon (daemon.h) ---- */

struct simple {
	int fd;
	int (*handler)(void *arg);
	void *arg;
	bool used;
};

static struct simple simple[16];

static int simple_dispatch(void *arg, uint32_t revents)
{
	struct simple *s = arg;

	(void)revents;
	return s->handler(s->arg);
}

int custode_daemon_add_fd(int fd, int (*handler)(void *arg), void *arg)
{
	for (int i = 0; i < 16; i++) {
		int err;

		if (simple[i].used)
			continue;
		simple[i] = (struct simple){.fd = fd, .handler = handler, .arg = arg, .used = true};
		err = custode_loop_add(fd, EPOLLIN, simple_dispatch, &simple[i]);
		if (err)
			simple[i].used = false;
		return err;
	}
	return -ENOSPC;
}

int custode_daemon_remove_fd(int fd)
{
	for (int i = 0; i < 16; i++)
		if (simple[i].used && simple[i].fd == fd) {
			simple[i].used = false;
			return custode_loop_del(fd);
		}
	return -ENOENT;
}

int custode_daemon_add_timer(unsigned period_ms, int (*handler)(void *arg), void *arg)
{
	return custode_loop_timer(period_ms, handler, arg);
}
