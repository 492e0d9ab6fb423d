// SPDX-License-Identifier: Apache-2.0
/*
 * Terminals (issue 13, classes 1 and 2: docs/bypass-catalogue.md, docs/process.md
 * "Terminals"). A run used to share the terminal of the shell that started
 * custode: TIOCSTI pushed commands into that shell's input (also through
 * /dev/tty), a typed ^Z stopped the launcher so --timeout never fired, and
 * another login's /dev/pts/N (same uid, mode 0620) could be read and written.
 *
 * Here a pty pair made by the test stands for the caller's terminal: its
 * slave is the controlling terminal of a new session (setsid + TIOCSCTTY)
 * in which custode (or, for the controls, the probe itself) is started; what
 * "the shell" would read next is the slave's input queue, what it shows is
 * the master's output. Each attack is shown working outside any run (the
 * control), then failing inside one with its reason code and an event.
 * Probes: helpers/ttyprobe.c and tprobe.
 */
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "procutil.h"

#define NET_ONLY POLICY("tty-net", "{\"network\":{\"egress\":[]}}")
#define CMD_TIOCSTI 0x5412

/* ---- a pty pair standing for a terminal of the user ---- */

struct term {
	int master, slave;
	char path[64];
};

/* A fresh pty pair; its slave chowned to owner (>= 0), mode 0620, like a login's terminal. */
static bool term_open(struct term *t, int owner)
{
	t->slave = -1;
	t->path[0] = 0;
	t->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (t->master < 0 || grantpt(t->master) || unlockpt(t->master) || ptsname_r(t->master, t->path, sizeof(t->path)))
		return false;
	if (owner >= 0 && (chown(t->path, (uid_t)owner, (gid_t)-1) || chmod(t->path, 0620)))
		return false;
	/* the test keeps the slave open: the master never sees a hangup, the input queue stays readable */
	t->slave = open(t->path, O_RDWR | O_NOCTTY | O_CLOEXEC);
	return t->slave >= 0;
}

static void term_close(struct term *t)
{
	if (t->slave >= 0)
		close(t->slave);
	if (t->master >= 0)
		close(t->master);
	t->slave = t->master = -1;
}

/*
 * What the shell would read next from its terminal: the slave's input queue
 * (raw mode first, so a line without its newline is readable too).
 */
static const char *term_pending(struct term *t)
{
	static char buf[4096];
	struct termios tio;
	size_t n = 0;
	int fl;

	buf[0] = 0;
	if (tcgetattr(t->slave, &tio) == 0) {
		cfmakeraw(&tio);
		tcsetattr(t->slave, TCSANOW, &tio);
	}
	fl = fcntl(t->slave, F_GETFL);
	fcntl(t->slave, F_SETFL, fl | O_NONBLOCK);
	for (;;) {
		struct pollfd pf = {.fd = t->slave, .events = POLLIN};
		ssize_t r;

		if (poll(&pf, 1, 200) <= 0 || n + 1 >= sizeof(buf))
			break;
		r = read(t->slave, buf + n, sizeof(buf) - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	fcntl(t->slave, F_SETFL, fl);
	for (size_t i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = '.';
	buf[n] = 0;
	/* back to a cooked terminal for whoever uses it next */
	if (tcgetattr(t->slave, &tio) == 0) {
		tio.c_iflag |= ICRNL;
		tio.c_oflag |= OPOST | ONLCR;
		tio.c_lflag |= ICANON | ECHO | ISIG | IEXTEN;
		tcsetattr(t->slave, TCSANOW, &tio);
	}
	return buf;
}

/* ---- a session on that terminal ---- */

struct session {
	struct ktest_proc p;
	struct term *t;
	int code; /* -1: still running */
	size_t n;
	char out[32768]; /* the terminal's output (master) and, without a terminal stdio, the child's pipes */
};

/*
 * Start argv as the leader of a new session whose controlling terminal is
 * t's slave; stdin/stdout/stderr the slave (tty_stdio) or /dev/null and
 * pipes. uid >= 0: drop to that uid after taking the terminal.
 */
static bool sess_start(struct session *s, struct term *t, char *const argv[], int uid, bool tty_stdio)
{
	int out[2] = {-1, -1}, err[2] = {-1, -1};

	memset(s, 0, sizeof(*s));
	s->t = t;
	s->code = -1;
	s->p.in = s->p.out = s->p.err = -1;
	if (!tty_stdio && (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)))
		return false;
	s->p.pid = fork();
	if (s->p.pid < 0)
		return false;
	if (s->p.pid == 0) {
		int fd, nul;

		if (setsid() < 0)
			_exit(97);
		fd = open(t->path, O_RDWR);
		if (fd < 0 || ioctl(fd, TIOCSCTTY, 0) < 0)
			_exit(96);
		if (tty_stdio) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		} else {
			nul = open("/dev/null", O_RDWR | O_CLOEXEC);
			if (nul < 0 || dup2(nul, 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
				_exit(95);
		}
		if (fd > 2)
			close(fd);
		if (uid >= 0) {
			gid_t g = (gid_t)uid;

			if (setgroups(1, &g) || setgid(g) || setuid((uid_t)uid))
				_exit(99);
		}
		execv(argv[0], argv);
		_exit(98);
	}
	if (!tty_stdio) {
		close(out[1]);
		close(err[1]);
		s->p.out = out[0];
		s->p.err = err[0];
	}
	return true;
}

static void sess_append(struct session *s, const char *b, ssize_t r)
{
	for (ssize_t i = 0; i < r && s->n + 1 < sizeof(s->out); i++)
		s->out[s->n++] = b[i] ? b[i] : '.';
	s->out[s->n] = 0;
}

/* One round: read what the terminal and pipes have (waiting up to ms), reap the child. Bytes read. */
static size_t sess_poll(struct session *s, int ms)
{
	struct pollfd pf[3] = {
		{.fd = s->t->master, .events = POLLIN}, {.fd = s->p.out, .events = POLLIN}, {.fd = s->p.err, .events = POLLIN}};
	int *fds[3] = {NULL, &s->p.out, &s->p.err};
	char b[4096];
	size_t got = 0;
	int st;

	if (poll(pf, 3, ms) > 0) {
		for (int i = 0; i < 3; i++) {
			ssize_t r;

			if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			r = read(pf[i].fd, b, sizeof(b));
			if (r > 0) {
				sess_append(s, b, r);
				got += (size_t)r;
			} else if (fds[i] && r == 0) {
				close(*fds[i]);
				*fds[i] = -1;
			}
		}
	}
	if (s->code < 0 && waitpid(s->p.pid, &st, WNOHANG) == s->p.pid)
		s->code = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 255;
	return got;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait (hang detector: timeout_ms, stretched) until text shows in the output; false if the child ended first. */
static bool sess_until(struct session *s, const char *text, int timeout_ms)
{
	long long end = now_ms() + ktest_slack(timeout_ms);

	while (now_ms() < end) {
		if (strstr(s->out, text))
			return true;
		sess_poll(s, 50);
		if (s->code >= 0 && s->p.out < 0 && s->p.err < 0) {
			while (sess_poll(s, 20))
				;
			return strstr(s->out, text) != NULL;
		}
	}
	return strstr(s->out, text) != NULL;
}

/* Wait for the child's exit (hang detector), then take what is left; its exit code, -1 if it had to be killed. */
static int sess_end(struct session *s, int timeout_ms)
{
	long long end = now_ms() + ktest_slack(timeout_ms);

	while (now_ms() < end && !(s->code >= 0 && s->p.out < 0 && s->p.err < 0))
		sess_poll(s, 50);
	if (s->code < 0) {
		ktest_log("session %d did not end: killing it", s->p.pid);
		kill(s->p.pid, SIGKILL);
		waitpid(s->p.pid, NULL, 0);
		ktest_proc_close(&s->p);
		return -1;
	}
	while (sess_poll(s, 50))
		;
	ktest_proc_close(&s->p);
	return s->code;
}

/* Another login on t: a session leader outside any run whose controlling terminal t is. */
static int hold_session(struct term *t)
{
	int ready[2], pid;
	char c = 0;

	if (pipe2(ready, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		int fd;

		close(ready[0]);
		if (setsid() < 0)
			_exit(97);
		fd = open(t->path, O_RDWR);
		if (fd < 0 || ioctl(fd, TIOCSCTTY, 0) < 0)
			_exit(96);
		if (write(ready[1], "r", 1) != 1)
			_exit(95);
		close(ready[1]);
		for (;;)
			pause();
	}
	close(ready[1]);
	if (pid < 0 || read(ready[0], &c, 1) != 1 || c != 'r') {
		close(ready[0]);
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		return -1;
	}
	close(ready[0]);
	return pid;
}

static void end_holder(int pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

/* ---- dev.tty.legacy_tiocsti (6.2+): 0 means TIOCSTI needs CAP_SYS_ADMIN even on one's own terminal ---- */

static char legacy_saved[16];

static void legacy_tiocsti_on(void)
{
	const char *p = "/proc/sys/dev/tty/legacy_tiocsti";
	int fd = open(p, O_RDWR | O_CLOEXEC);
	ssize_t r;

	legacy_saved[0] = 0;
	if (fd < 0) {
		ktest_log("no %s on this kernel: TIOCSTI is always legacy here", p);
		return;
	}
	r = read(fd, legacy_saved, sizeof(legacy_saved) - 1);
	legacy_saved[r > 0 ? r : 0] = 0;
	legacy_saved[strcspn(legacy_saved, "\n")] = 0;
	if (lseek(fd, 0, SEEK_SET) < 0 || write(fd, "1\n", 2) != 2)
		ktest_log("%s: could not set it to 1", p);
	close(fd);
	ktest_log("dev.tty.legacy_tiocsti was %s, set to 1 for the test", legacy_saved[0] ? legacy_saved : "?");
}

static void legacy_tiocsti_restore(void)
{
	int fd;

	if (!legacy_saved[0])
		return;
	fd = open("/proc/sys/dev/tty/legacy_tiocsti", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, legacy_saved, strlen(legacy_saved)) < 0)
			ktest_log("could not restore dev.tty.legacy_tiocsti");
		close(fd);
	}
}

/* "TARGET RESULT" of a ttyprobe tiocsti line in out */
static bool has_line(const char *out, const char *target, const char *result)
{
	char want[256];

	snprintf(want, sizeof(want), "%s %s", target, result);
	return strstr(out, want) != NULL;
}

static json_t *ioctl_event(json_t *arr, unsigned cmd)
{
	size_t i;
	json_t *e;

	json_array_foreach(arr, i, e) {
		const char *h = json_string_value(json_object_get(e, "hook")) ?: "";
		const char *r = json_string_value(json_object_get(e, "reason")) ?: "";

		if ((!strcmp(h, "file_ioctl") || !strcmp(h, "file_ioctl_compat")) && !strcmp(r, "process.tty.denied") &&
		    json_integer_value(json_object_get(json_object_get(e, "task"), "command")) == cmd)
			return e;
	}
	return NULL;
}

/*
 * TIOCSTI into the caller's terminal: the control (a probe in the caller's
 * session) types into the shell's input, directly and through /dev/tty.
 * custode's run has its own session on its own pty: its TIOCSTI is refused
 * on every terminal (the run's own pty and /dev/tty included:
 * process.tty.denied), the caller's /dev/pts/N can't be opened
 * (file.tty.denied), and with the caller's stdio not a terminal the run has
 * no controlling terminal at all (/dev/tty: ENXIO). A root process moved
 * into a run that holds the caller's terminal open is refused too.
 */
KTEST(tty_tiocsti_does_not_reach_the_callers_terminal)
{
	static struct session s;
	static struct ktest_result r;
	struct ktest_dirs d;
	struct term t = {-1, -1, ""};
	struct ktest_proc tg;
	unsigned long addr;
	const char *pol, *pending;
	int holder = -1, pid = 0;
	json_t *ev;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	pol = pu_policy(d.root, "net", NET_ONLY);
	legacy_tiocsti_on();
	/* the caller's terminal: the run's uid owns it, as a login's terminal (DAC would let the run open it) */
	if (!ASSERT_TRUE(term_open(&t, NOBODY), "a pty for the caller's terminal"))
		goto out;
	ktest_log("the caller's terminal: %s", t.path);

	/* control 1: a process of the caller's session (as the run's uid) types into the shell's input */
	{
		char *argv[] = {(char *)ktest_helper("ttyprobe"), "tiocsti", "ctl-stdio-Q7\n", "fd0", NULL};

		if (ASSERT_TRUE(sess_start(&s, &t, argv, NOBODY, true), "control on the caller's terminal")) {
			ASSERT_EQ(sess_end(&s, 60000), 0, "control exits");
			ASSERT_TRUE(has_line(s.out, "fd0", "ok"), "control: TIOCSTI into the caller's terminal (stdin)");
			ASSERT_CONTAINS(term_pending(&t), "ctl-stdio-Q7", "control: the shell reads the pushed bytes");
		}
	}
	/* control 2: stdio not a terminal, through /dev/tty (the controlling terminal) */
	{
		char *argv[] = {(char *)ktest_helper("ttyprobe"), "tiocsti", "ctl-devtty-Q7\n", "tty", NULL};

		if (ASSERT_TRUE(sess_start(&s, &t, argv, NOBODY, false), "control through /dev/tty")) {
			ASSERT_EQ(sess_end(&s, 60000), 0, "control exits");
			ASSERT_TRUE(has_line(s.out, "tty", "ok"), "control: TIOCSTI through /dev/tty");
			ASSERT_CONTAINS(term_pending(&t), "ctl-devtty-Q7", "control: the shell reads the pushed bytes");
		}
	}

	/* the run, on the caller's terminal: its own pty, relayed */
	ktest_events();
	{
		char **argv = pu_argv(ARGS("--profile", "read", "--workspace", d.ws),
				      ARGS(ktest_helper("ttyprobe"), "tiocsti-hold", "run-pty-Q7\n", "fd0", "fd1", "tty", t.path));

		if (ASSERT_TRUE(sess_start(&s, &t, argv, -1, true), "custode run on the caller's terminal")) {
			/* the probe's outcomes, then a line typed at the caller's terminal lets it end */
			ASSERT_TRUE(sess_until(&s, "done", 120000), "the probe's outcomes through the relay");
			ASSERT_TRUE(write(t.master, "\n", 1) == 1, "type return");
			ASSERT_EQ(sess_end(&s, 120000), 0, "the run ends");
			ktest_log("the caller's terminal showed: %s", s.out);
			ASSERT_TRUE(has_line(s.out, "fd0", "EPERM"), "TIOCSTI on the run's stdin (its own pty)");
			ASSERT_TRUE(has_line(s.out, "fd1", "EPERM"), "TIOCSTI on the run's stdout (its own pty)");
			ASSERT_TRUE(has_line(s.out, "tty", "EPERM"), "TIOCSTI through the run's /dev/tty");
			ASSERT_TRUE(has_line(s.out, t.path, "open:EACCES"), "the caller's /dev/pts/N by path");
			ASSERT_TRUE(strstr(s.out, "run-pty-Q7") == NULL, "the pushed bytes never show on the caller's terminal");
			/*
			 * While the run lasts the launcher reads the caller's terminal (the relay), so bytes
			 * pushed into it would have gone to the run's pty and been echoed back: the output
			 * check above; what was left after the run ends is the shell's.
			 */
			pending = term_pending(&t);
			ASSERT_TRUE(strstr(pending, "run-pty-Q7") == NULL, "the pushed bytes never reach the shell's input");
			ev = ktest_events();
			ASSERT_TRUE(ioctl_event(ev, CMD_TIOCSTI) != NULL, "event: file_ioctl TIOCSTI process.tty.denied");
			ASSERT_TRUE(ktest_find_event(ev, "file_open", "file.tty.denied", t.path) != NULL,
				    "event: file_open of the caller's terminal, file.tty.denied");
			json_decref(ev);
		}
	}
	/* the run with stdio redirected (no relay): no controlling terminal, so no /dev/tty to push into */
	{
		char **argv = pu_argv(ARGS("--profile", "read", "--workspace", d.ws),
				      ARGS(ktest_helper("ttyprobe"), "tiocsti", "run-devtty-Q7\n", "tty", t.path));

		if (ASSERT_TRUE(sess_start(&s, &t, argv, -1, false), "custode run, stdio not a terminal")) {
			ASSERT_EQ(sess_end(&s, 120000), 0, "the run ends");
			ktest_log("the run said: %s", s.out);
			ASSERT_TRUE(has_line(s.out, "tty", "open:ENXIO"), "the run has no controlling terminal");
			ASSERT_TRUE(has_line(s.out, t.path, "open:EACCES"), "the caller's /dev/pts/N by path");
			ASSERT_TRUE(strstr(term_pending(&t), "run-devtty-Q7") == NULL,
				    "the pushed bytes never reach the shell's input");
		}
	}

	/* attached root holding the caller's terminal (opened before it was moved in); the shell leads its session */
	holder = hold_session(&t);
	if (!ASSERT_TRUE(holder > 0, "the shell's session on the terminal"))
		goto out;
	{
		char *argv[] = {(char *)ktest_helper("ttyprobe"), "tiocsti", "ctl-root-Q7\n", t.path, NULL};

		ktest_run(argv, -1, 30000, &r);
		ASSERT_TRUE(has_line(r.out, t.path, "ok"), "control: root outside any run pushes into another session's terminal");
		ASSERT_CONTAINS(term_pending(&t), "ctl-root-Q7", "control: the shell reads the pushed bytes");
	}
	if (ASSERT_TRUE(pu_run_target(pol, &tg, &pid, &addr), "a run to move into")) {
		const char *line;
		char want[128];

		ktest_events();
		line = pu_moved_in(ktest_helper("ttyprobe"), pid, ARGS("tiocsti", "att-root-Q7\n", t.path));
		snprintf(want, sizeof(want), "%s EPERM", t.path);
		ASSERT_STREQ(line, want, "TIOCSTI by a root process attached to a run");
		ASSERT_TRUE(strstr(term_pending(&t), "att-root-Q7") == NULL, "the pushed bytes never reach the shell's input");
		ev = ktest_events();
		ASSERT_TRUE(ioctl_event(ev, CMD_TIOCSTI) != NULL, "event: file_ioctl TIOCSTI process.tty.denied (attached)");
		json_decref(ev);
		ASSERT_EQ(pu_stop(&tg), 0, "the run ends");
	}
out:
	end_holder(holder);
	term_close(&t);
	legacy_tiocsti_restore();
}

/* An ordinary workload: an interactive shell through the launcher's pty relay. */
KTEST(tty_interactive_shell_through_relay)
{
	static struct session s;
	struct ktest_dirs d;
	struct term t = {-1, -1, ""};
	char **argv;
	const char *cmd = "echo hello-$((1+2))\n";

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs") || !ASSERT_TRUE(term_open(&t, -1), "the caller's terminal"))
		goto out;
	argv = pu_argv(ARGS("--profile", "read", "--workspace", d.ws), ARGS("/bin/sh"));
	if (!ASSERT_TRUE(sess_start(&s, &t, argv, -1, true), "custode run -- /bin/sh on the terminal"))
		goto out;
	/* the prompt: the shell reads its terminal now (typed-ahead input would do too, this is only politer) */
	{
		long long end = now_ms() + ktest_slack(60000);

		while (s.n == 0 && s.code < 0 && now_ms() < end)
			sess_poll(&s, 50);
	}
	ktest_log("before typing: %s", s.out);
	ASSERT_TRUE(write(t.master, cmd, strlen(cmd)) == (ssize_t)strlen(cmd), "type a command");
	ASSERT_TRUE(sess_until(&s, "hello-3", 60000), "its output comes back through the relay");
	ASSERT_TRUE(write(t.master, "exit\n", 5) == 5, "type exit");
	ASSERT_EQ(sess_end(&s, 60000), 0, "the shell exits, custode with it");
	ktest_log("the terminal showed: %s", s.out);
	/* the caller's terminal is cooked again */
	{
		struct termios tio;

		if (ASSERT_EQ(tcgetattr(t.slave, &tio), 0, "tcgetattr"))
			ASSERT_TRUE((tio.c_lflag & (ICANON | ECHO)) == (ICANON | ECHO), "the caller's terminal restored");
	}
out:
	term_close(&t);
}

/*
 * What a run writes just before it exits reaches the caller's terminal: the
 * tty layer hands the run's last bytes to the relay's master from a work
 * queue, so "nothing to read yet" at the run's exit is no end of output
 * (the relay used to stop there and drop the last lines on a loaded host).
 * Many short runs in a row, each writing lines and exiting at once.
 */
KTEST(tty_relay_keeps_the_last_output)
{
	static struct session s;
	struct ktest_dirs d;
	struct term t = {-1, -1, ""};
	int lost = 0;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs") || !ASSERT_TRUE(term_open(&t, -1), "the caller's terminal"))
		goto out;
	for (int i = 0; i < 12; i++) {
		char script[128], last[32];
		char **argv;

		snprintf(last, sizeof(last), "last-line-%d", i);
		snprintf(script, sizeof(script), "echo first-%d; echo second-%d; echo %s", i, i, last);
		argv = pu_argv(ARGS("--profile", "read", "--workspace", d.ws), ARGS("/bin/sh", "-c", script));
		if (!ASSERT_TRUE(sess_start(&s, &t, argv, -1, true), "custode run on the terminal"))
			goto out;
		ASSERT_EQ(sess_end(&s, 60000), 0, "the run exits 0");
		/* the test's own terminal has the same queue: wait for the line (hang detector), don't sample */
		{
			long long end = now_ms() + ktest_slack(5000);

			while (!strstr(s.out, last) && now_ms() < end)
				sess_poll(&s, 50);
		}
		if (!strstr(s.out, last)) {
			ktest_log("run %d: the terminal showed: %s", i, s.out);
			lost++;
		}
	}
	ASSERT_EQ(lost, 0, "no run lost its last line on the way to the caller's terminal");
out:
	term_close(&t);
}

/*
 * Another login of the same user: a pty whose session is led outside the
 * run, its slave owned by the run's uid with mode 0620. Outside any run that
 * uid opens it (reads what is typed there, writes a fake prompt); inside a
 * run the open is refused whatever the mode (file.tty.denied), also for a
 * root process moved into a run; so is a host pty of no session. A pty the
 * run makes itself stays usable.
 */
KTEST(tty_foreign_pts_denied)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	struct term t = {-1, -1, ""}, fresh = {-1, -1, ""};
	struct ktest_proc tg;
	unsigned long addr;
	const char *pol;
	int holder = -1, pid = 0;
	json_t *ev;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	pol = pu_policy(d.root, "net", NET_ONLY);
	if (!ASSERT_TRUE(term_open(&t, NOBODY), "another login's pty") || !ASSERT_TRUE(term_open(&fresh, NOBODY), "a fresh pty"))
		goto out;
	holder = hold_session(&t);
	if (!ASSERT_TRUE(holder > 0, "the other login leads a session on it"))
		goto out;
	ktest_log("the other login's terminal: %s (session %d); a fresh pty: %s", t.path, holder, fresh.path);

	/* controls: the run's uid, outside any run */
	{
		char *rd[] = {(char *)ktest_tprobe(), "open", t.path, "r", NULL};
		char *wr[] = {(char *)ktest_tprobe(), "open", t.path, "w", NULL};

		ktest_run(rd, NOBODY, 30000, &r);
		ASSERT_STREQ(r.out, "ok\n", "control: the same uid reads the other login's terminal");
		ktest_run(wr, NOBODY, 30000, &r);
		ASSERT_STREQ(r.out, "ok\n", "control: the same uid writes the other login's terminal");
	}
	/* a launched run (as that uid) */
	ktest_events();
	ktest_run(pu_argv(ARGS("--profile", "read", "--workspace", d.ws), ARGS(ktest_tprobe(), "open", t.path, "r")), -1,
		  120000, &r);
	ASSERT_STREQ(r.out, "EACCES\n", "a run reads another login's terminal");
	ktest_run(pu_argv(ARGS("--profile", "read", "--workspace", d.ws), ARGS(ktest_tprobe(), "open", t.path, "w")), -1,
		  120000, &r);
	ASSERT_STREQ(r.out, "EACCES\n", "a run writes another login's terminal");
	ev = ktest_events();
	ASSERT_TRUE(ktest_find_event(ev, "file_open", "file.tty.denied", t.path) != NULL, "event: file.tty.denied");
	json_decref(ev);
	/*
	 * A host pty of no session (made by a program that never gave it one,
	 * or a login whose leader is gone): not the run's either. Control: the
	 * same uid outside any run opens it.
	 */
	{
		char *rd[] = {(char *)ktest_tprobe(), "open", fresh.path, "rw", NULL};

		ktest_run(rd, NOBODY, 30000, &r);
		ASSERT_STREQ(r.out, "ok\n", "control: the same uid opens a host pty of no session");
	}
	/* a policy with no file section: what refuses is the terminal rule every run has, not a path rule */
	ktest_events();
	ktest_run(pu_argv(ARGS("--policy", pol), ARGS(ktest_tprobe(), "open", fresh.path, "r")), -1, 120000, &r);
	ASSERT_STREQ(r.out, "EACCES\n", "a run opens a host pty of no session");
	ev = ktest_events();
	ASSERT_TRUE(ktest_find_event(ev, "file_open", "file.tty.denied", fresh.path) != NULL,
		    "event: file.tty.denied (no session)");
	json_decref(ev);
	/* ordinary: a pty the run makes itself is its own, by its /dev/pts/N name too */
	ktest_run(pu_argv(ARGS("--policy", pol), ARGS(ktest_helper("ttyprobe"), "ownpty")), -1, 120000, &r);
	ASSERT_STREQ(r.out, "ok\n", "a run makes a pty and opens its slave by name");

	/* a root process moved into a run */
	if (ASSERT_TRUE(pu_run_target(pol, &tg, &pid, &addr), "a run to move into")) {
		ASSERT_STREQ(pu_moved_in(ktest_tprobe(), pid, ARGS("open", t.path, "rw")), "EACCES",
			     "root attached to a run opens another login's terminal");
		ev = ktest_events();
		ASSERT_TRUE(ktest_find_event(ev, "file_open", "file.tty.denied", t.path) != NULL, "event (attached)");
		json_decref(ev);
		ASSERT_STREQ(pu_moved_in(ktest_tprobe(), pid, ARGS("open", fresh.path, "rw")), "EACCES",
			     "root attached to a run opens a host pty of no session");
		ASSERT_STREQ(pu_moved_in(ktest_helper("ttyprobe"), pid, ARGS("ownpty")), "ok",
			     "root attached to a run makes a pty and opens its slave by name");
		ASSERT_STREQ(pu_moved_in(ktest_tprobe(), pid, ARGS("open", "/dev/ptmx", "rw")), "ok", "/dev/ptmx in the run");
		ASSERT_EQ(pu_stop(&tg), 0, "the run ends");
	}
	/* and still open to the other login's own uid outside, after all that */
	{
		char *rd[] = {(char *)ktest_tprobe(), "open", t.path, "rw", NULL};

		ktest_run(rd, NOBODY, 30000, &r);
		ASSERT_STREQ(r.out, "ok\n", "control again, outside any run");
	}
out:
	end_holder(holder);
	term_close(&fresh);
	term_close(&t);
}

/*
 * ^Z from the run: TIOCSTI of \x1a into its terminal (refused), SIGTSTP to
 * the launcher and its process group, to its own group, and a ^Z typed at
 * the caller's terminal. With the caller's stdio a terminal, that terminal
 * is raw while the run lasts: the ^Z reaches the run's pty, whose foreground
 * is the run. With stdio redirected (no relay), the caller's terminal is
 * still cooked and the line discipline sends SIGTSTP to its foreground
 * group, the launcher's: the launcher blocks it. Either way the launcher
 * never stops: --timeout fires and custode exits 124 in bounded time.
 */
KTEST(tty_sigtstp_cannot_stop_the_timeout)
{
	static struct session s;
	struct ktest_dirs d;
	struct term t = {-1, -1, ""};
	char **argv;
	long long t0;
	int code;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	legacy_tiocsti_on();
	if (!ASSERT_TRUE(term_open(&t, NOBODY), "the caller's terminal"))
		goto out;
	for (int relay = 1; relay >= 0; relay--) {
		const char *how = relay ? "stdio the caller's terminal (relayed)" : "stdio redirected, the terminal cooked";

		ktest_log("%s", how);
		argv = pu_argv(ARGS("--profile", "read", "--workspace", d.ws, "--timeout", "3"),
			       ARGS(ktest_helper("ttyprobe"), "tstp"));
		t0 = now_ms();
		if (!ASSERT_TRUE(sess_start(&s, &t, argv, -1, relay), "custode run --timeout 3 on the terminal"))
			goto out;
		if (ASSERT_TRUE(sess_until(&s, "kill-own-group pending", 60000), how)) {
			/* the user types ^Z too */
			ASSERT_TRUE(write(t.master, "\x1a", 1) == 1, "type ^Z");
		}
		code = sess_end(&s, 120000);
		ktest_log("after %lld ms, the terminal and the run showed: %s", now_ms() - t0, s.out);
		ASSERT_EQ(code, 124, how);
		ASSERT_TRUE(has_line(s.out, "sti-z", "EPERM"), "TIOCSTI of ^Z refused");
		ASSERT_TRUE(!has_line(s.out, "kill-parent", "ok"), "SIGTSTP to the launcher refused");
		ASSERT_TRUE(!has_line(s.out, "kill-parent-group", "ok"), "SIGTSTP to the launcher's group refused");
		term_pending(&t); /* a cooked terminal again, nothing left in it */
	}
out:
	term_close(&t);
	legacy_tiocsti_restore();
}
