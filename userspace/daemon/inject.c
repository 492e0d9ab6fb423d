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

#define INJECT_MAX 4096

static struct {
	pthread_mutex_t lock;
	json_t *q[INJECT_MAX];
	size_t head, n;
	int efd;
	uint64_t injected, dropped;
} I = {.lock = PTHREAD_MUTEX_INITIALIZER, .efd = -1};

void custode_stream_inject(json_t *ev)
{
	uint64_t one = 1;
	bool queued = false;

	if (!ev)
		return;
	pthread_mutex_lock(&I.lock);
	if (I.efd >= 0 && I.n < INJECT_MAX) {
		I.q[(I.head + I.n++) % INJECT_MAX] = ev;
		queued = true;
		(void)!write(I.efd, &one, sizeof(one));
	} else if (I.efd >= 0) {
		I.dropped++;
	}
	pthread_mutex_unlock(&I.lock);
	if (!queued)
		json_decref(ev);
}

static int inject_ready(void *arg, uint32_t revents)
{
	json_t *batch[256];
	uint64_t v;
	size_t n;

	(void)arg;
	(void)revents;
	(void)!read(I.efd, &v, sizeof(v));
	do {
		pthread_mutex_lock(&I.lock);
		for (n = 0; n < sizeof(batch) / sizeof(batch[0]) && I.n; n++) {
			batch[n] = I.q[I.head];
			I.head = (I.head + 1) % INJECT_MAX;
			I.n--;
		}
		I.injected += n;
		pthread_mutex_unlock(&I.lock);
		for (size_t i = 0; i < n; i++) {
			custode_event_enrich(S.en, batch[i]);
			stream_publish(batch[i]);
			json_decref(batch[i]);
		}
	} while (n == sizeof(batch) / sizeof(batch[0]));
	return 0;
}

int stream_inject_open(void)
{
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	pthread_mutex_lock(&I.lock);
	I.efd = fd;
	pthread_mutex_unlock(&I.lock);
	err = custode_loop_add(fd, EPOLLIN, inject_ready, NULL);
	return err < 0 ? err : 0;
}

void stream_inject_close(void)
{
	pthread_mutex_lock(&I.lock);
	if (I.efd >= 0) {
		custode_loop_del(I.efd);
		close(I.efd);
	}
	I.efd = -1;
	while (I.n) {
		json_decref(I.q[I.head]);
		I.head = (I.head + 1) % INJECT_MAX;
		I.n--;
	}
	pthread_mutex_unlock(&I.lock);
}

void stream_inject_counts(uint64_t *injected, uint64_t *dropped)
{
	pthread_mutex_lock(&I.lock);
	*injected = I.injected;
	*dropped = I.dropped;
	pthread_mutex_unlock(&I.lock);
}
