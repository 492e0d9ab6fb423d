// SPDX-License-Identifier: Apache-2.0
/*
 * ttyprobe: terminal operations a run might try against the terminal of the
 * shell that started it (issue 13, the caller's terminal), printing one
 * outcome line per operation ("ok" or the errno name). It never prints the
 * bytes it pushes, so a test can look for them in a terminal's input and
 * output.
 *
 *   ttyprobe tiocsti TEXT TARGET...
 *       push every byte of TEXT with TIOCSTI into each TARGET, printing
 *       "TARGET ok|ERRNO" (or "TARGET open:ERRNO" when it can't be opened).
 *       TARGET: fd0 fd1 fd2 (the probe's stdio), tty (/dev/tty), or a path.
 *   ttyprobe tiocsti-hold TEXT TARGET...
 *       as tiocsti, then print "done" and wait for a line on stdin before
 *       exiting (its output is not the last thing a relay has to carry).
 *   ttyprobe wait tiocsti TEXT TARGET...
 *       open every path TARGET now, print "ready PID", read a line, then as
 *       above (a process that held the terminal before it was moved into a run).
 *   ttyprobe tstp
 *       try to stop whoever started the run: TIOCSTI of ^Z into fd 0
 *       ("sti-z"), SIGTSTP to the parent ("kill-parent") and to its process
 *       group ("kill-parent-group"), SIGTSTP to its own group
 *       ("kill-own-group"); then print "waiting" and sleep forever.
 *   ttyprobe ctty      "ctty ok" when /dev/tty opens (a controlling terminal), else "ctty ERRNO"
 *   ttyprobe [wait] ownpty
 *       make a pty of its own (posix_openpt, grantpt, unlockpt), open its
 *       slave by name (/dev/pts/N) and pass a line through it: "ok", or
 *       "STEP:ERRNO". With wait: print "ready PID", read a line first.
 * Exit: 0 (the outcomes are on stdout), 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static const char *errname(int e)
{
	static char b[32];

	switch (e) {
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case EINVAL: return "EINVAL";
	case EIO: return "EIO";
	case ENXIO: return "ENXIO";
	case ENOTTY: return "ENOTTY";
	case ENOENT: return "ENOENT";
	case EBADF: return "EBADF";
	case ESRCH: return "ESRCH";
	case EFAULT: return "EFAULT";
	case ENODEV: return "ENODEV";
	default:
		snprintf(b, sizeof(b), "errno%d", e);
		return b;
	}
}

#define MAX_TARGETS 16

struct target {
	const char *name;
	int fd;     /* -1: could not be opened */
	int err;    /* the open's errno */
	bool owned; /* opened here */
};

static void open_target(struct target *t, const char *name)
{
	t->name = name;
	t->fd = -1;
	t->err = 0;
	t->owned = false;
	if (!strcmp(name, "fd0") || !strcmp(name, "fd1") || !strcmp(name, "fd2")) {
		t->fd = name[2] - '0';
		return;
	}
	t->fd = open(!strcmp(name, "tty") ? "/dev/tty" : name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (t->fd < 0)
		t->err = errno;
	else
		t->owned = true;
}

static void sti(struct target *t, const char *text)
{
	int r = 0;

	if (t->fd < 0) {
		printf("%s open:%s\n", t->name, errname(t->err));
		return;
	}
	for (const char *c = text; *c && r == 0; c++)
		r = ioctl(t->fd, TIOCSTI, c);
	printf("%s %s\n", t->name, r == 0 ? "ok" : errname(errno));
	if (t->owned)
		close(t->fd);
}

static int tiocsti(int argc, char **argv, bool wait, bool hold)
{
	struct target t[MAX_TARGETS];
	int n = 0;
	char line[64];

	if (argc < 2)
		return 2;
	for (int i = 1; i < argc && n < MAX_TARGETS; i++)
		open_target(&t[n++], argv[i]);
	if (wait) {
		printf("ready %d\n", (int)getpid());
		if (!fgets(line, sizeof(line), stdin))
			return 2;
	}
	for (int i = 0; i < n; i++)
		sti(&t[i], argv[0]);
	if (hold) {
		printf("done\n");
		if (!fgets(line, sizeof(line), stdin))
			return 2;
	}
	return 0;
}

static void report(const char *what, int r)
{
	printf("%s %s\n", what, r == 0 ? "ok" : errname(errno));
}

static int tstp(void)
{
	char z = 0x1a;
	pid_t parent = getppid(), pg = getpgid(parent);

	report("sti-z", ioctl(0, TIOCSTI, &z));
	report("kill-parent", kill(parent, SIGTSTP));
	if (pg > 0)
		report("kill-parent-group", kill(-pg, SIGTSTP));
	else
		report("kill-parent-group", -1);
	printf("kill-own-group pending\n");
	fflush(stdout);
	report("kill-own-group", kill(0, SIGTSTP));
	printf("waiting\n");
	fflush(stdout);
	while (pause() < 0 || true)
		;
	return 0;
}

static int ownpty(bool wait)
{
	char name[64], line[64], got[16];
	int m, sl;

	if (wait) {
		printf("ready %d\n", (int)getpid());
		if (!fgets(line, sizeof(line), stdin))
			return 2;
	}
	m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0)
		return printf("ptmx:%s\n", errname(errno)), 0;
	if (grantpt(m) || unlockpt(m) || ptsname_r(m, name, sizeof(name)))
		return printf("unlock:%s\n", errname(errno)), 0;
	sl = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (sl < 0)
		return printf("open:%s\n", errname(errno)), 0;
	if (write(m, "hi\n", 3) != 3)
		return printf("write:%s\n", errname(errno)), 0;
	if (read(sl, got, sizeof(got)) < 2 || strncmp(got, "hi", 2))
		return printf("read:%s\n", errname(errno)), 0;
	printf("ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "tiocsti"))
		return tiocsti(argc - 2, argv + 2, false, false);
	if (!strcmp(argv[1], "tiocsti-hold"))
		return tiocsti(argc - 2, argv + 2, false, true);
	if (argc >= 3 && !strcmp(argv[1], "wait") && !strcmp(argv[2], "tiocsti"))
		return tiocsti(argc - 3, argv + 3, true, false);
	if (!strcmp(argv[1], "tstp"))
		return tstp();
	if (!strcmp(argv[1], "ownpty"))
		return ownpty(false);
	if (argc >= 3 && !strcmp(argv[1], "wait") && !strcmp(argv[2], "ownpty"))
		return ownpty(true);
	if (!strcmp(argv[1], "ctty")) {
		int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);

		printf("ctty %s\n", fd >= 0 ? "ok" : errname(errno));
		return 0;
	}
	fprintf(stderr, "usage: ttyprobe tiocsti TEXT TARGET... | wait tiocsti TEXT TARGET... | tstp | ctty | [wait] ownpty\n");
	return 2;
}
