// SPDX-License-Identifier: Apache-2.0
/*
 * The run's terminal: a pty pair owned by the launcher (pty.h,
 * docs/process.md "Terminals"). The run never gets the caller's terminal:
 * TIOCSTI needs the target to be the caller's controlling terminal, and the
 * line discipline signals only the terminal's foreground process group, so
 * a run in its own session on its own pty can push bytes and type ^C or ^Z
 * only into itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "run/pty.h"
#include "util/time.h"

/* What the relay holds at most in each direction; a full buffer stops reading its source (backpressure). */
#define TO_RUN_MAX 4096
#define TO_TERM_MAX 65536

void custode_pty_plan(const bool is_tty[3], struct custode_pty_plan *out)
{
	memset(out, 0, sizeof(*out));
	out->in = out->out = out->term = -1;
	for (int i = 0; i < 3; i++)
		if (is_tty[i])
			out->slave_fds |= 1u << i;
	if (!out->slave_fds)
		return;
	if (is_tty[0])
		out->in = 0;
	/* what the run's terminal shows goes where the caller sees output; with only stdin a terminal, to it (echo) */
	out->out = is_tty[1] ? 1 : is_tty[2] ? 2 : 0;
	out->term = is_tty[0] ? 0 : out->out;
}

void custode_pty_init(struct custode_pty *p)
{
	memset(p, 0, sizeof(*p));
	p->plan.in = p->plan.out = p->plan.term = -1;
	p->master = p->slave = p->in = p->out = -1;
	p->cap = -1;
}

/*
 * Restoring the caller's terminal from a fatal signal's handler: the launcher
 * never leaves it raw when it dies of SIGSEGV, SIGABRT, SIGUSR1 and the like
 * (SIGINT, SIGTERM, SIGHUP, SIGQUIT come through the signalfd and end the run
 * normally; only SIGKILL leaves it raw — `stty sane` or `reset` then).
 */
static struct {
	volatile sig_atomic_t armed;
	int fd;
	struct termios t;
	unsigned long installed; /* bit: we installed the handler of that signal */
} guard;

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS, SIGALRM, SIGUSR1,
				    SIGUSR2, SIGPROF, SIGVTALRM, SIGXCPU, SIGXFSZ, SIGIO, SIGPWR, SIGSTKFLT};

static void guard_handler(int sig)
{
	int e = errno;

	if (guard.armed)
		tcsetattr(guard.fd, TCSANOW, &guard.t); /* async-signal-safe */
	errno = e;
	raise(sig); /* SA_RESETHAND|SA_NODEFER: the default action, now */
}

static void guard_arm(int fd, const struct termios *t)
{
	struct sigaction sa, old;

	guard.fd = fd;
	guard.t = *t;
	guard.armed = 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = guard_handler;
	sa.sa_flags = SA_RESETHAND | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++) {
		int sig = fatal_signals[i];

		/* a disposition someone chose (SIG_IGN, a handler) stays */
		if (sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO) &&
		    sigaction(sig, &sa, NULL) == 0)
			guard.installed |= 1ul << sig;
	}
}

static void guard_disarm(void)
{
	guard.armed = 0;
	for (int sig = 1; sig < 64; sig++)
		if (guard.installed & (1ul << sig))
			signal(sig, SIG_DFL);
	guard.installed = 0;
}

int custode_pty_open(struct custode_pty *p)
{
	bool tty[3];
	struct termios t;
	struct winsize ws;
	int err;

	custode_pty_init(p);
	for (int i = 0; i < 3; i++)
		tty[i] = isatty(i) == 1;
	custode_pty_plan(tty, &p->plan);
	if (!p->plan.slave_fds)
		return 0;
	p->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (p->master < 0 || grantpt(p->master) < 0 || unlockpt(p->master) < 0)
		goto fail;
	/* The slave from the master itself (4.13+), not by a name another process could race for. */
	p->slave = ioctl(p->master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (p->slave < 0 && (errno == EINVAL || errno == ENOTTY)) {
		char name[64];

		if (ptsname_r(p->master, name, sizeof(name)) != 0)
			goto fail;
		p->slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	}
	if (p->slave < 0)
		goto fail;
	/*
	 * The slave stays root's (0620, as devpts made it): a process of the run's
	 * user — another run as nobody — can't open it by name. The run uses the
	 * fds it inherits and /dev/tty.
	 */
	/* The caller's settings (erase character, IUTF8, ...) and size, as script(1) does. */
	if (tcgetattr(p->plan.term, &t) == 0 && tcsetattr(p->slave, TCSANOW, &t) < 0)
		goto fail;
	if (ioctl(p->plan.term, TIOCGWINSZ, &ws) == 0 && ioctl(p->master, TIOCSWINSZ, &ws) < 0)
		goto fail;
	if (fcntl(p->master, F_SETFL, O_RDWR | O_NONBLOCK) < 0)
		goto fail;
	p->to_run = malloc(TO_RUN_MAX);
	p->to_term = malloc(TO_TERM_MAX);
	if (!p->to_run || !p->to_term) {
		errno = ENOMEM;
		goto fail;
	}
	return 0;
fail:
	err = errno ? errno : EIO;
	custode_pty_close(p);
	return -err;
}

int custode_pty_child(const struct custode_pty *p)
{
	if (p->master >= 0) {
		/* a session leader without a terminal: the slave becomes its controlling terminal, its group the foreground */
		if (ioctl(p->slave, TIOCSCTTY, 0) < 0)
			return -errno;
		for (int i = 0; i < 3; i++)
			if ((p->plan.slave_fds & (1u << i)) && dup2(p->slave, i) < 0)
				return -errno;
	}
	/* fds above 2 are closed next: the slave is the only terminal the run gets */
	for (int i = 0; i < 3; i++)
		if (!(p->plan.slave_fds & (1u << i)) && isatty(i))
			return -EPERM;
	return 0;
}

void custode_pty_sigmask(sigset_t *mask)
{
	sigaddset(mask, SIGWINCH);
	sigaddset(mask, SIGCONT);
	sigaddset(mask, SIGTSTP);
	sigaddset(mask, SIGTTIN);
	sigaddset(mask, SIGTTOU);
}

static void copy_winsize(struct custode_pty *p)
{
	struct winsize ws;

	/* the kernel sends SIGWINCH to the run's foreground group when the size changes */
	if (p->master >= 0 && ioctl(p->plan.term, TIOCGWINSZ, &ws) == 0)
		ioctl(p->master, TIOCSWINSZ, &ws);
}

/* Raw mode and input relay, unless the caller's job is in the terminal's background. */
static void attach(struct custode_pty *p)
{
	struct termios t;
	pid_t fg;

	if (p->master < 0 || p->plan.in < 0 || p->raw)
		return;
	/*
	 * In the background (`custode run ... &`) the terminal is the shell's:
	 * leave its mode alone and don't read (SIGTTIN/SIGTTOU are blocked, so
	 * the kernel would let us). SIGCONT after `fg` brings us here again.
	 * A terminal that is not our controlling one has no foreground (-1).
	 */
	fg = tcgetpgrp(p->plan.in);
	if (fg >= 0 && fg != getpgrp())
		return;
	if (tcgetattr(p->plan.in, &p->saved) < 0)
		return;
	t = p->saved;
	cfmakeraw(&t); /* ^C, ^Z, ^\ become bytes for the run's line discipline */
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	guard_arm(p->plan.in, &p->saved);
	if (tcsetattr(p->plan.in, TCSANOW, &t) < 0) {
		guard_disarm();
		return;
	}
	p->raw = true;
	p->in = p->plan.in;
	p->reading = true;
}

static void restore(struct custode_pty *p)
{
	if (!p->raw)
		return;
	/*
	 * Input the relay didn't read belongs to the run, never to the shell
	 * that gets the terminal back: a terminal's answer to a query the run
	 * printed just before it ended (title or colour reports, DECRQSS) would
	 * otherwise be read there as typed.
	 */
	tcflush(p->plan.in, TCIFLUSH);
	/* TCSANOW: never wait on output a terminal may never drain */
	tcsetattr(p->plan.in, TCSANOW, &p->saved);
	guard_disarm();
	p->raw = false;
}

bool custode_pty_signal(struct custode_pty *p, int sig)
{
	switch (sig) {
	case SIGWINCH:
		copy_winsize(p);
		return true;
	case SIGCONT:
		attach(p);
		copy_winsize(p);
		return true;
	case SIGTSTP:
	case SIGTTIN:
	case SIGTTOU:
		return true; /* the launcher holds a deadline: it does not stop */
	default:
		return false;
	}
}

void custode_pty_start(struct custode_pty *p)
{
	char path[64];

	if (p->master < 0)
		return;
	close(p->slave);
	p->slave = -1;
	/*
	 * Write the caller's terminal through a reopen of our own, non-blocking,
	 * so a terminal that stops taking output (^S, a reader that left) can't
	 * hold the launcher past its deadline. O_NONBLOCK on the fd we inherited
	 * would change the open file the caller's shell shares.
	 */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", p->plan.out);
	p->out = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	p->out_reopened = p->out >= 0;
	if (p->out < 0)
		p->out = p->plan.out; /* blocking writes, then */
	attach(p);
}

void custode_pty_pollfds(const struct custode_pty *p, struct pollfd pfd[3])
{
	short ev = 0;

	for (int i = 0; i < 3; i++)
		pfd[i] = (struct pollfd){.fd = -1};
	if (p->master < 0 || p->master_eof)
		return;
	if (p->out < 0 || p->to_term_len < TO_TERM_MAX)
		ev |= POLLIN;
	if (p->to_run_len)
		ev |= POLLOUT;
	if (ev)
		pfd[0] = (struct pollfd){.fd = p->master, .events = ev};
	if (p->reading && p->to_run_len < TO_RUN_MAX)
		pfd[1] = (struct pollfd){.fd = p->in, .events = POLLIN};
	if (p->out >= 0 && p->to_term_len)
		pfd[2] = (struct pollfd){.fd = p->out, .events = POLLOUT};
}

static void read_input(struct custode_pty *p)
{
	ssize_t n;

	do
		n = read(p->in, p->to_run + p->to_run_len, TO_RUN_MAX - p->to_run_len);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		p->to_run_len += (size_t)n;
	else if (n == 0 || errno != EAGAIN)
		p->reading = false; /* hung up, or EIO in the background: leave the terminal to its owner */
}

/* What the run's terminal shows, counted against the output cap with the pipes. */
static bool read_master(struct custode_pty *p)
{
	bool over = false;

	while (p->master >= 0 && !p->master_eof) {
		bool keep = p->out >= 0; /* a terminal that went away: keep counting, stop relaying */
		char *dst = keep ? p->to_term + p->to_term_len : p->to_term;
		size_t room = keep ? TO_TERM_MAX - p->to_term_len : TO_TERM_MAX;
		int64_t allowed;
		ssize_t n;

		if (!room)
			break;
		n = read(p->master, dst, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			/* EIO: the run's last process closed its terminal (the kernel flushed what it wrote first) */
			p->master_eof = true;
			break;
		}
		allowed = n;
		if (p->written && p->cap >= 0) {
			int64_t left = p->cap - *p->written;

			allowed = left <= 0 ? 0 : left < n ? left : n;
			if (*p->written <= p->cap && *p->written + n > p->cap)
				over = true;
		}
		if (p->written)
			*p->written += n;
		if (keep)
			p->to_term_len += (size_t)allowed;
	}
	return over;
}

static void shift(char *buf, size_t *len, size_t n)
{
	memmove(buf, buf + n, *len - n);
	*len -= n;
}

static void flush_to_run(struct custode_pty *p)
{
	while (p->to_run_len) {
		ssize_t w = p->master_eof ? -1 : write(p->master, p->to_run, p->to_run_len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			return; /* the run is not reading: input waits (and stops being read) */
		if (w <= 0) {
			p->to_run_len = 0;
			return;
		}
		shift(p->to_run, &p->to_run_len, (size_t)w);
	}
}

static void flush_to_term(struct custode_pty *p)
{
	while (p->to_term_len) {
		ssize_t w = p->out < 0 ? -1 : write(p->out, p->to_term, p->to_term_len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			return;
		if (w <= 0) {
			if (p->out_reopened && p->out >= 0)
				close(p->out);
			p->out = -1;
			p->out_reopened = false;
			p->to_term_len = 0;
			return;
		}
		shift(p->to_term, &p->to_term_len, (size_t)w);
	}
}

bool custode_pty_io(struct custode_pty *p, const struct pollfd pfd[3])
{
	bool over = false;

	if (p->master < 0)
		return false;
	if (pfd[1].fd >= 0 && pfd[1].revents)
		read_input(p);
	if (pfd[0].fd >= 0 && (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
		over = read_master(p);
	flush_to_run(p);
	flush_to_term(p);
	return over;
}

bool custode_pty_drain(struct custode_pty *p)
{
	bool over;

	if (p->master < 0)
		return false;
	over = read_master(p);
	flush_to_term(p);
	return over;
}

bool custode_pty_finish(struct custode_pty *p, int timeout_ms)
{
	long long deadline = custode_mono_ms() + timeout_ms;
	bool over = false;

	while (p->master >= 0) {
		long long left;

		over |= read_master(p);
		flush_to_term(p);
		/*
		 * Done at EOF: the run's last holder of the slave is gone, and the
		 * kernel hands over everything it wrote before the EIO. "Nothing to
		 * read yet" is not the end: what the run wrote last may still be on
		 * its way to the master (the tty layer pushes it from a work queue),
		 * and the run's last fds may be closing. A holder that escaped the run
		 * and keeps the slave open costs the deadline, no more.
		 */
		if (!p->to_term_len && p->master_eof)
			break;
		left = deadline - custode_mono_ms();
		if (left <= 0)
			break;
		{
			struct pollfd f[2] = {{.fd = p->to_term_len ? p->out : -1, .events = POLLOUT},
					      {.fd = p->master_eof ? -1 : p->master, .events = POLLIN}};

			if (p->to_term_len == TO_TERM_MAX)
				f[1].fd = -1;
			poll(f, 2, (int)left);
		}
	}
	custode_pty_close(p);
	return over;
}

void custode_pty_close(struct custode_pty *p)
{
	restore(p);
	if (p->out_reopened && p->out >= 0)
		close(p->out);
	p->out = p->in = -1;
	p->out_reopened = p->reading = false;
	if (p->slave >= 0)
		close(p->slave);
	if (p->master >= 0)
		close(p->master);
	p->slave = p->master = -1;
	free(p->to_run);
	free(p->to_term);
	p->to_run = p->to_term = NULL;
	p->to_run_len = p->to_term_len = 0;
}
