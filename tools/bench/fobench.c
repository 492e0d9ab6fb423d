// SPDX-License-Identifier: Apache-2.0
/*
 * fobench: the helper of firstopen-bench and churn-bench (tools/bench).
 *
 *   fobench mk ROOT N DEPTH...
 *       For each DEPTH (>= 2) create N empty files ROOT/d<DEPTH>/x/.../f<i>,
 *       DEPTH directories below ROOT's parent (ROOT itself is the first),
 *       plus ROOT/warm. Modes 0755/0644, so any user may read them.
 *   fobench dirs PREFIX N
 *       mkdir PREFIX<i> for i < N (the extra, unrelated rules' directories).
 *   fobench open [OPTS] ROOT N DEPTH...
 *       Open+close ROOT/warm 200 times (the process's own first-time costs),
 *       idle one second (deferred work of what ran before), then, for each
 *       DEPTH, open()+close() each of its N files once — the first open of
 *       that file by this process — and print the mean ns per file; then a second pass over the same files (cached opens). Prints
 *       one line: the DEPTH first-open means, then the DEPTH second-pass means.
 *   fobench churn DIR REQ ACK idle|churn|unlink
 *       The churner (outside every run): for each byte read from the fifo
 *       REQ, rename DIR/a <-> DIR/b and create+unlink DIR/u (with "churn"),
 *       or only create+unlink DIR/u (with "unlink": temporary files), then
 *       write one byte to the fifo ACK. Ends at EOF on REQ.
 *   fobench sync [OPTS] N REQ ACK FILE...
 *       For each FILE: N/10 warm-up then N timed open()+close(), each one
 *       after a round trip with the churner (after one idle second) (write REQ, read ACK); only the
 *       open+close is timed (the clock reads' own cost, measured first, is
 *       subtracted). Prints one mean ns per FILE.
 *
 * OPTS (open, sync): --landlock NRULES: restrict itself first with a Landlock
 * ruleset the shape of the benches' custode policy: read+exec on /usr /bin
 * /sbin /lib /lib64, read on /etc and on /tmp/fo (the tree), read+write on
 * /tmp/fosync (the fifos), read on NRULES directories /tmp/bench/d<i> (which
 * must exist). --uid UID: drop to UID/GID (a custode run's CMD runs as
 * nobody; the other configurations do too, so DAC checks match).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/landlock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "landlock_rule.h"

#define MAXDEPTHS 16
#define PATHLEN 512

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void dirname_at(char *buf, size_t len, const char *root, long depth)
{
	size_t o = (size_t)snprintf(buf, len, "%s/d%ld", root, depth);
	for (long i = 2; i < depth && o + 3 < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "/x");
}

static int mkdir_p(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			return perror(path), -1;
		*p = '/';
	}
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return perror(path), -1;
	return 0;
}

static int touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return perror(path), -1;
	close(fd);
	return 0;
}

static int cmd_mk(int argc, char **argv)
{
	char dir[PATHLEN], f[PATHLEN + 32];
	long n;

	if (argc < 4 || (n = atol(argv[2])) <= 0)
		return fprintf(stderr, "usage: fobench mk ROOT N DEPTH...\n"), 2;
	umask(022);
	snprintf(dir, sizeof(dir), "%s", argv[1]);
	if (mkdir_p(dir) < 0)
		return 1;
	snprintf(f, sizeof(f), "%s/warm", argv[1]);
	if (touch(f) < 0)
		return 1;
	for (int d = 3; d < argc; d++) {
		long depth = atol(argv[d]);
		if (depth < 2)
			return fprintf(stderr, "fobench: depth %ld < 2\n", depth), 2;
		dirname_at(dir, sizeof(dir), argv[1], depth);
		if (mkdir_p(dir) < 0)
			return 1;
		for (long i = 0; i < n; i++) {
			snprintf(f, sizeof(f), "%s/f%ld", dir, i);
			if (touch(f) < 0)
				return 1;
		}
	}
	return 0;
}

static int cmd_dirs(int argc, char **argv)
{
	char d[PATHLEN];
	long n;

	if (argc != 3 || (n = atol(argv[2])) < 0)
		return fprintf(stderr, "usage: fobench dirs PREFIX N\n"), 2;
	for (long i = 0; i < n; i++) {
		snprintf(d, sizeof(d), "%s%ld", argv[1], i);
		if (mkdir(d, 0755) < 0 && errno != EEXIST)
			return perror(d), 1;
	}
	return 0;
}

/* The same shape as llbench's ruleset, plus the tree and the fifos. */
static int landlock(long nrules)
{
	const __u64 rd = LL_RD;
	char dir[64];
	int ruleset = landlock_system_ruleset();

	if (ruleset < 0)
		return -1;
	if (add_rule(ruleset, "/tmp/fo", rd) < 0 ||
	    add_rule(ruleset, "/tmp/fosync", rd | LANDLOCK_ACCESS_FS_WRITE_FILE) < 0)
		return perror("landlock_add_rule"), -1;
	for (long i = 0; i < nrules; i++) {
		snprintf(dir, sizeof(dir), "/tmp/bench/d%ld", i);
		if (add_rule(ruleset, dir, rd) < 0)
			return perror(dir), -1;
	}
	return landlock_enforce(ruleset);
}

/* --landlock N, --uid U; returns the index of the first other argument, or -1. */
static int options(int argc, char **argv)
{
	long ll = -1, uid = -1;
	int i = 1;

	for (; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--landlock"))
			ll = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--uid"))
			uid = atol(argv[i + 1]);
		else
			break;
	}
	if (uid >= 0 && (setgroups(0, NULL) < 0 || setresgid((gid_t)uid, (gid_t)uid, (gid_t)uid) < 0 ||
			 setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) < 0))
		return perror("fobench: --uid"), -1;
	if (ll >= 0 && landlock(ll) < 0)
		return -1;
	return i;
}

/*
 * Idle a second before measuring: the RCU callbacks and kworkers of what ran
 * before (the tree just made, the last tree removed, the run's setup) run now,
 * not inside the timed loop. Under icount with sleep=off the guest clock
 * skips idle time, so this costs little wall time.
 */
static void settle(void)
{
	struct timespec ts = {.tv_sec = 1};
	nanosleep(&ts, NULL);
}

static int open_close(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return perror(path), -1;
	close(fd);
	return 0;
}

static int cmd_open(int argc, char **argv)
{
	char dir[PATHLEN], f[PATHLEN + 32];
	double first[MAXDEPTHS], again[MAXDEPTHS];
	int a = options(argc, argv), nd;
	long n;

	if (a < 0)
		return 1;
	argc -= a, argv += a;
	if (argc < 3 || (n = atol(argv[1])) <= 0 || (nd = argc - 2) > MAXDEPTHS)
		return fprintf(stderr, "usage: fobench open [--landlock N] [--uid U] ROOT N DEPTH...\n"), 2;
	snprintf(f, sizeof(f), "%s/warm", argv[0]);
	for (int i = 0; i < 200; i++)
		if (open_close(f) < 0)
			return 1;
	settle();
	for (int pass = 0; pass < 2; pass++)
		for (int d = 0; d < nd; d++) {
			double t0, t1;
			dirname_at(dir, sizeof(dir), argv[0], atol(argv[d + 2]));
			t0 = now_ns();
			for (long i = 0; i < n; i++) {
				snprintf(f, sizeof(f), "%s/f%ld", dir, i);
				if (open_close(f) < 0)
					return 1;
			}
			t1 = now_ns();
			(pass ? again : first)[d] = (t1 - t0) / n;
		}
	for (int d = 0; d < nd; d++)
		printf("%.1f ", first[d]);
	for (int d = 0; d < nd; d++)
		printf("%.1f%s", again[d], d + 1 < nd ? " " : "\n");
	return 0;
}

static int cmd_churn(int argc, char **argv)
{
	char a[PATHLEN], b[PATHLEN], u[PATHLEN], c;
	int req, ack, churn, renames, flip = 0;

	if (argc != 5 || (strcmp(argv[4], "idle") && strcmp(argv[4], "churn") && strcmp(argv[4], "unlink")))
		return fprintf(stderr, "usage: fobench churn DIR REQ ACK idle|churn|unlink\n"), 2;
	renames = !strcmp(argv[4], "churn");
	churn = renames || !strcmp(argv[4], "unlink");
	snprintf(a, sizeof(a), "%s/a", argv[1]);
	snprintf(b, sizeof(b), "%s/b", argv[1]);
	snprintf(u, sizeof(u), "%s/u", argv[1]);
	if (mkdir(argv[1], 0755) < 0 && errno != EEXIST)
		return perror(argv[1]), 1;
	unlink(b);
	unlink(u);
	if (access(a, F_OK) < 0 && touch(a) < 0)
		return 1;
	if ((req = open(argv[2], O_RDONLY | O_CLOEXEC)) < 0 || (ack = open(argv[3], O_WRONLY | O_CLOEXEC)) < 0)
		return perror("fobench churn: fifo"), 1;
	while (read(req, &c, 1) == 1) {
		if (churn) {
			if ((renames && rename(flip ? b : a, flip ? a : b) < 0) || touch(u) < 0 || unlink(u) < 0)
				return perror("fobench churn"), 1;
			flip = !flip;
		}
		if (write(ack, &c, 1) != 1)
			return perror("fobench churn: ack"), 1;
	}
	return 0;
}

static int cmd_sync(int argc, char **argv)
{
	int a = options(argc, argv), req, ack;
	long n;
	char c = 'x';
	double tare = 0;

	if (a < 0)
		return 1;
	argc -= a, argv += a;
	if (argc < 4 || (n = atol(argv[0])) <= 0)
		return fprintf(stderr, "usage: fobench sync [--landlock N] [--uid U] N REQ ACK FILE...\n"), 2;
	if ((req = open(argv[1], O_WRONLY | O_CLOEXEC)) < 0 || (ack = open(argv[2], O_RDONLY | O_CLOEXEC)) < 0)
		return perror("fobench sync: fifo"), 1;
	settle();
	for (long i = 0; i < n; i++) { /* what two clock reads cost, to subtract */
		double t0 = now_ns();
		tare += now_ns() - t0;
	}
	tare /= n;
	for (int f = 3; f < argc; f++) {
		double sum = 0;
		for (long i = 0; i < n / 10 + n; i++) {
			double t0, t1;
			if (write(req, &c, 1) != 1 || read(ack, &c, 1) != 1)
				return perror("fobench sync: churner"), 1;
			t0 = now_ns();
			if (open_close(argv[f]) < 0)
				return 1;
			t1 = now_ns();
			if (i >= n / 10)
				sum += t1 - t0 - tare;
		}
		printf("%.1f%s", sum / n, f + 1 < argc ? " " : "\n");
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "mk"))
		return cmd_mk(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "dirs"))
		return cmd_dirs(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "open"))
		return cmd_open(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "churn"))
		return cmd_churn(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "sync"))
		return cmd_sync(argc - 1, argv + 1);
	fprintf(stderr, "usage: fobench mk|dirs|open|churn|sync ... (see tools/bench/fobench.c)\n");
	return 2;
}
