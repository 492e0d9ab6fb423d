/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CUSTODE_RUN_PTY_H
#define CUSTODE_RUN_PTY_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <termios.h>

/*
 * The run's terminal (docs/process.md, "Terminals"). A run never shares the
 * caller's terminal: the launcher puts it in a session of its own, and when
 * any of the launcher's stdin/stdout/stderr is a terminal it gives the run a
 * pty pair of its own instead, relaying bytes between the caller's terminal
 * and the master (like script(1), `systemd-run --pty`). TIOCSTI, ^C and ^Z
 * in the run then reach the run's own pty and session, never the caller's.
 */

/* Which fds take part, decided from which of the launcher's fds 0..2 are terminals. */
struct custode_pty_plan {
	unsigned slave_fds; /* bit i: the run's fd i is the pty's slave (0: no pty) */
	int in;             /* the launcher's fd relayed into the run's terminal (0), or -1 */
	int out;            /* the launcher's fd showing the run's terminal output, or -1 */
	int term;           /* the launcher's fd whose termios and window size the pty copies, or -1 */
};

/* Pure: is_tty[i] says whether the launcher's fd i is a terminal. */
void custode_pty_plan(const bool is_tty[3], struct custode_pty_plan *out);

struct custode_pty {
	struct custode_pty_plan plan;
	int master, slave; /* -1: none (slave: the launcher's copy, closed once the run has it) */
	int in, out;       /* the caller's terminal as relayed: in read, out written (a non-blocking reopen) */
	bool out_reopened; /* out is the launcher's own reopen, closed at the end */
	bool reading;      /* in is relayed: the launcher is not in the terminal's background */
	bool master_eof;   /* EIO: every slave fd of the run is closed */
	bool raw;          /* the caller's terminal is in raw mode; saved is restored at the end */
	struct termios saved;
	int64_t cap;       /* output cap shared with the stdout/stderr pipes: -1 none */
	int64_t *written;  /* bytes the run wrote, pipes and pty together (NULL: not counted) */
	char *to_run, *to_term;
	size_t to_run_len, to_term_len;
};

/* No pty, nothing open: every call below is then harmless. */
void custode_pty_init(struct custode_pty *p);

/*
 * Decide from the launcher's fds 0..2 and, when one is a terminal, open the
 * pty: master (O_CLOEXEC, non-blocking) and the launcher's copy of the slave
 * (O_NOCTTY|O_CLOEXEC), the slave with the caller's termios and window size.
 * Without a terminal p->master is -1 and every other call does nothing.
 * -errno on failure (p is then closed).
 */
int custode_pty_open(struct custode_pty *p);

/*
 * In the run's first process, after setsid(): make the slave its controlling
 * terminal and its fd i for every bit of plan.slave_fds; then no other fd
 * 0..2 may be a terminal. -errno on failure.
 */
int custode_pty_child(const struct custode_pty *p);

/*
 * Signals the launcher takes through its signalfd: SIGWINCH and SIGCONT
 * (window size, foreground), and SIGTSTP/SIGTTIN/SIGTTOU, so that nothing —
 * a keyboard ^Z on a terminal not in raw mode, a background read — stops the
 * launcher while it holds a run and its deadline. Blocked, not ignored: the
 * child restores the old mask and inherits no disposition.
 */
void custode_pty_sigmask(sigset_t *mask);
/* A signal from that set: true when it was the pty's (handled or deliberately dropped). */
bool custode_pty_signal(struct custode_pty *p, int sig);

/*
 * In the launcher once the run's first process exists: drop the launcher's
 * slave copy (so the master reads EIO when the run's last holder closes it),
 * put the caller's terminal in raw mode unless the launcher is in its
 * background, and restore it on a fatal signal too. Nothing here fails the
 * run: a terminal that refuses raw mode only means the input is not relayed.
 */
void custode_pty_start(struct custode_pty *p);

/* The pty's three poll entries (fd -1 when idle): master, the caller's terminal in, out. */
void custode_pty_pollfds(const struct custode_pty *p, struct pollfd pfd[3]);
/* Relay after poll(). Returns true when the output cap has just been exceeded. */
bool custode_pty_io(struct custode_pty *p, const struct pollfd pfd[3]);
/* Relay what the master holds now, without waiting. Returns true when the cap has just been exceeded. */
bool custode_pty_drain(struct custode_pty *p);
/*
 * After the run's processes are gone: relay what the master still holds
 * (waiting at most timeout_ms on a terminal that does not take it), restore
 * the caller's terminal, close everything. Returns true when the cap has just
 * been exceeded. Idempotent.
 */
bool custode_pty_finish(struct custode_pty *p, int timeout_ms);
/* Restore the caller's terminal (if raw) and close without relaying. Idempotent. */
void custode_pty_close(struct custode_pty *p);

#endif
