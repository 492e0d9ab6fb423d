// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "daemon/daemon.h"
#include "daemon/loop.h"

#define MAX_FDS 256
#define MAX_TIMERS 32
#define MAX_SIMPLE 16 /* custode_daemon_add_fd's */

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

/* An fd of custode_daemon_add_fd: its handler takes only arg. */
struct simple {
	int fd;
	int (*handler)(void *arg);
	void *arg;
	bool used;
};

struct custode_loop {
	int ep;
	struct slot slots[MAX_FDS];
	struct timer timers[MAX_TIMERS];
	struct simple simple[MAX_SIMPLE];
};

uint64_t custode_loop_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int custode_loop_init(struct custode_loop **out)
{
	struct custode_loop *l = calloc(1, sizeof(*l));
	int err;

	if (!l)
		return -ENOMEM;
	l->ep = epoll_create1(EPOLL_CLOEXEC);
	if (l->ep < 0) {
		err = -errno;
		free(l);
		return err;
	}
	*out = l;
	return 0;
}

void custode_loop_fini(struct custode_loop *l)
{
	if (!l)
		return;
	if (l->ep >= 0)
		close(l->ep);
	free(l);
}

static struct slot *find(struct custode_loop *l, int fd)
{
	for (int i = 0; i < MAX_FDS; i++)
		if (l->slots[i].used && l->slots[i].fd == fd)
			return &l->slots[i];
	return NULL;
}

int custode_loop_add(struct custode_loop *l, int fd, uint32_t events, custode_loop_fn fn, void *arg)
{
	struct epoll_event ev = {.events = events};
	int i;

	if (fd < 0 || !fn)
		return -EINVAL;
	if (find(l, fd))
		return -EEXIST;
	for (i = 0; i < MAX_FDS && l->slots[i].used; i++)
		;
	if (i == MAX_FDS)
		return -ENOSPC;
	l->slots[i].gen++;
	ev.data.u64 = (uint64_t)l->slots[i].gen << 32 | (uint32_t)i;
	if (epoll_ctl(l->ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	l->slots[i].fd = fd;
	l->slots[i].fn = fn;
	l->slots[i].arg = arg;
	l->slots[i].used = true;
	return 0;
}

int custode_loop_mod(struct custode_loop *l, int fd, uint32_t events)
{
	struct slot *s = find(l, fd);
	struct epoll_event ev = {.events = events};

	if (!s)
		return -ENOENT;
	ev.data.u64 = (uint64_t)s->gen << 32 | (uint32_t)(s - l->slots);
	return epoll_ctl(l->ep, EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : 0;
}

int custode_loop_del(struct custode_loop *l, int fd)
{
	struct slot *s = find(l, fd);

	if (!s)
		return -ENOENT;
	epoll_ctl(l->ep, EPOLL_CTL_DEL, fd, NULL);
	s->used = false; /* events already fetched for it carry the old generation: ignored */
	s->gen++;
	return 0;
}

int custode_loop_timer(struct custode_loop *l, unsigned period_ms, int (*fn)(void *arg), void *arg)
{
	for (int i = 0; i < MAX_TIMERS; i++) {
		if (l->timers[i].used)
			continue;
		l->timers[i].used = true;
		l->timers[i].period_ms = period_ms ? period_ms : 1;
		l->timers[i].due = custode_loop_now_ms() + l->timers[i].period_ms;
		l->timers[i].fn = fn;
		l->timers[i].arg = arg;
		return i;
	}
	return -ENOSPC;
}

int custode_loop_run(struct custode_loop *l, volatile sig_atomic_t *stop)
{
	struct epoll_event evs[64];

	while (!*stop) {
		uint64_t now = custode_loop_now_ms(), next = now + 1000;
		int n, timeout;

		for (int i = 0; i < MAX_TIMERS; i++)
			if (l->timers[i].used && l->timers[i].due < next)
				next = l->timers[i].due;
		timeout = next > now ? (int)(next - now) : 0;
		n = epoll_wait(l->ep, evs, 64, timeout);
		if (n < 0 && errno != EINTR)
			return -errno;
		for (int i = 0; i < n && !*stop; i++) {
			uint32_t idx = (uint32_t)evs[i].data.u64, gen = (uint32_t)(evs[i].data.u64 >> 32);
			struct slot *s;
			int r;

			if (idx >= MAX_FDS)
				continue;
			s = &l->slots[idx];
			if (!s->used || s->gen != gen)
				continue;
			r = s->fn(s->arg, evs[i].events);
			if (r < 0)
				return r;
		}
		now = custode_loop_now_ms();
		for (int i = 0; i < MAX_TIMERS && !*stop; i++) {
			struct timer *t = &l->timers[i];
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

static int simple_dispatch(void *arg, uint32_t revents)
{
	struct simple *s = arg;

	(void)revents;
	return s->handler(s->arg);
}

int custode_daemon_add_fd(struct custode_loop *l, int fd, int (*handler)(void *arg), void *arg)
{
	for (int i = 0; i < MAX_SIMPLE; i++) {
		struct simple *s = &l->simple[i];
		int err;

		if (s->used)
			continue;
		*s = (struct simple){.fd = fd, .handler = handler, .arg = arg, .used = true};
		err = custode_loop_add(l, fd, EPOLLIN, simple_dispatch, s);
		if (err)
			s->used = false;
		return err;
	}
	return -ENOSPC;
}

int custode_daemon_remove_fd(struct custode_loop *l, int fd)
{
	for (int i = 0; i < MAX_SIMPLE; i++)
		if (l->simple[i].used && l->simple[i].fd == fd) {
			l->simple[i].used = false;
			return custode_loop_del(l, fd);
		}
	return -ENOENT;
}

int custode_daemon_add_timer(struct custode_loop *l, unsigned period_ms, int (*handler)(void *arg), void *arg)
{
	return custode_loop_timer(l, period_ms, handler, arg);
}
