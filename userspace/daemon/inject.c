// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdint.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "daemon/stream_impl.h"
#include "daemon/loop.h"

/* ---- records from other threads ---- */

/* The queue's lock; no eventfd yet: records injected before stream_inject_open are let go uncounted. */
int stream_inject_init(struct custode_stream *s)
{
	s->inj.efd = -1;
	return -pthread_mutex_init(&s->inj.lock, NULL);
}

void stream_inject_fini(struct custode_stream *s)
{
	pthread_mutex_destroy(&s->inj.lock);
}

void custode_stream_inject(struct custode_stream *s, json_t *ev)
{
	uint64_t one = 1;
	bool queued = false;

	if (!ev)
		return;
	pthread_mutex_lock(&s->inj.lock);
	if (s->inj.efd >= 0 && s->inj.n < INJECT_MAX) {
		s->inj.q[(s->inj.head + s->inj.n++) % INJECT_MAX] = ev;
		queued = true;
		(void)!write(s->inj.efd, &one, sizeof(one));
	} else if (s->inj.efd >= 0) {
		s->inj.dropped++;
	}
	pthread_mutex_unlock(&s->inj.lock);
	if (!queued)
		json_decref(ev);
}

static int inject_ready(void *arg, uint32_t revents)
{
	struct custode_stream *s = arg;
	json_t *batch[256];
	uint64_t v;
	size_t n;

	(void)revents;
	(void)!read(s->inj.efd, &v, sizeof(v));
	do {
		pthread_mutex_lock(&s->inj.lock);
		for (n = 0; n < sizeof(batch) / sizeof(batch[0]) && s->inj.n; n++) {
			batch[n] = s->inj.q[s->inj.head];
			s->inj.head = (s->inj.head + 1) % INJECT_MAX;
			s->inj.n--;
		}
		s->inj.injected += n;
		pthread_mutex_unlock(&s->inj.lock);
		for (size_t i = 0; i < n; i++) {
			custode_event_enrich(s->en, batch[i]);
			stream_publish(s, batch[i]);
			json_decref(batch[i]);
		}
	} while (n == sizeof(batch) / sizeof(batch[0]));
	return 0;
}

int stream_inject_open(struct custode_stream *s)
{
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	pthread_mutex_lock(&s->inj.lock);
	s->inj.efd = fd;
	pthread_mutex_unlock(&s->inj.lock);
	err = custode_loop_add(s->loop, fd, EPOLLIN, inject_ready, s);
	return err < 0 ? err : 0;
}

void stream_inject_close(struct custode_stream *s)
{
	pthread_mutex_lock(&s->inj.lock);
	if (s->inj.efd >= 0) {
		custode_loop_del(s->loop, s->inj.efd);
		close(s->inj.efd);
	}
	s->inj.efd = -1;
	while (s->inj.n) {
		json_decref(s->inj.q[s->inj.head]);
		s->inj.head = (s->inj.head + 1) % INJECT_MAX;
		s->inj.n--;
	}
	pthread_mutex_unlock(&s->inj.lock);
}

void stream_inject_counts(struct custode_stream *s, uint64_t *injected, uint64_t *dropped)
{
	pthread_mutex_lock(&s->inj.lock);
	*injected = s->inj.injected;
	*dropped = s->inj.dropped;
	pthread_mutex_unlock(&s->inj.lock);
}
