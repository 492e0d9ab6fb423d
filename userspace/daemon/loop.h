/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's one event loop: epoll over file descriptors, each with its
 * handler, and periodic timers. Everything the daemon does in its main
 * thread runs from here (the ring-buffer consumer, the control socket, the
 * metrics endpoint, the sinks); nothing in it may block for long.
 */
#ifndef CUSTODE_DAEMON_LOOP_H
#define CUSTODE_DAEMON_LOOP_H

#include <signal.h>
#include <stdint.h>

/* A handler: revents are EPOLLIN/EPOLLOUT/EPOLLHUP/EPOLLERR bits. < 0: a fatal error, the daemon stops. */
typedef int (*custode_loop_fn)(void *arg, uint32_t revents);

int custode_loop_init(void);
void custode_loop_fini(void);
/* Watch fd for events (EPOLLIN, EPOLLOUT, ...). -EEXIST if fd is watched already. */
int custode_loop_add(int fd, uint32_t events, custode_loop_fn fn, void *arg);
int custode_loop_mod(int fd, uint32_t events);
/* Stop watching fd (does not close it). Safe from inside any handler, for any fd. */
int custode_loop_del(int fd);
/* Call fn(arg) every period_ms (first call after period_ms). Returns a timer id >= 0. */
int custode_loop_timer(unsigned period_ms, int (*fn)(void *arg), void *arg);
/* Run until *stop is set or a handler fails; returns 0 or that handler's negative value. */
int custode_loop_run(volatile sig_atomic_t *stop);
/* Monotonic milliseconds. */
uint64_t custode_loop_now_ms(void);

#endif
