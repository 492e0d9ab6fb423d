/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's event loop: epoll over file descriptors, each with its
 * handler, and periodic timers. Everything the daemon does in its main
 * thread runs from here (the ring-buffer consumer, the control socket, the
 * metrics endpoint, the sinks); nothing in it may block for long. The loop
 * is a handle (struct custode_loop, from custode_loop_init), passed to every
 * function below and to each part of the daemon that watches an fd or keeps
 * a timer in it (the stream, the service, the control server, daemon.c).
 */
#ifndef CUSTODE_DAEMON_LOOP_H
#define CUSTODE_DAEMON_LOOP_H

#include <signal.h>
#include <stdint.h>

/* A handler: revents are EPOLLIN/EPOLLOUT/EPOLLHUP/EPOLLERR bits. < 0: a fatal error, the daemon stops. */
typedef int (*custode_loop_fn)(void *arg, uint32_t revents);

/* The loop: a handle, from custode_loop_init. */
struct custode_loop;

/* A new loop (its epoll instance), nothing watched: 0 and *out, or -errno (*out untouched). */
int custode_loop_init(struct custode_loop **out);
/* Close the loop's epoll instance and free it (the fds it watched stay open). NULL: nothing. */
void custode_loop_fini(struct custode_loop *l);
/* Watch fd for events (EPOLLIN, EPOLLOUT, ...). -EEXIST if fd is watched already. */
int custode_loop_add(struct custode_loop *l, int fd, uint32_t events, custode_loop_fn fn, void *arg);
int custode_loop_mod(struct custode_loop *l, int fd, uint32_t events);
/* Stop watching fd (does not close it). Safe from inside any handler, for any fd. */
int custode_loop_del(struct custode_loop *l, int fd);
/* Call fn(arg) every period_ms (first call after period_ms). Returns a timer id >= 0. */
int custode_loop_timer(struct custode_loop *l, unsigned period_ms, int (*fn)(void *arg), void *arg);
/* Run until *stop is set or a handler fails; returns 0 or that handler's negative value. */
int custode_loop_run(struct custode_loop *l, volatile sig_atomic_t *stop);
/* Monotonic milliseconds. */
uint64_t custode_loop_now_ms(void);

#endif
