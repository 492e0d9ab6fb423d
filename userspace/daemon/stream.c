// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "custode/abi.h"
#include "daemon/loop.h"
#include "daemon/stream.h"
#include "engine/maps.h"
#include "state/runstate.h"
#include "util/reasons.h"
#include "util/time.h"

#define MAX_FOLLOWERS 64
#define MAX_CURSORS 64
#define STALE_ROTATED_MAX 1000 /* FILE.(keep+1) .. left by a larger --events-file-keep: removed up to this many */
#define SINK_QUEUE_MAX (4u << 20)
/*
 * The reconcile table: open addressing, twice the kernel throttle map's
 * entries, never more than 3/4 used (a new pair past that is reported as
 * the kernel says). Only pairs with suppressed denials have a slot, and a
 * slot goes when its kernel entry does.
 */
#define RECONCILE_SLOTS (2 * CUSTODE_MAX_THROTTLE)
#define RECONCILE_MAX (RECONCILE_SLOTS / 4 * 3)
#define RECONCILE_MASK ((size_t)RECONCILE_SLOTS - 1)
_Static_assert((RECONCILE_SLOTS & (RECONCILE_SLOTS - 1)) == 0, "RECONCILE_SLOTS is a power of two");
/* keys a flush pass may go through (the kernel restarts a walk whose last key went): past it, the pass is cut */
#define THROTTLE_PASS_MAX (4 * CUSTODE_MAX_THROTTLE)
#define TICK_MS 1000

/* A non-blocking output: a bounded queue, flushed when the fd is writable. */
struct outq {
	int fd;
	bool pollable, watching, gone;
	char *buf;
	size_t len, cap;
	uint64_t dropped;
};

struct hist {
	char *line;
	size_t len;
	__u64 run_id;
	char reason[48];
	int64_t wall_ns;
};

struct follower {
	bool used;
	struct custode_event_filter f;
	custode_stream_take_fn take;
	void *ctx;
};

/* A resumable replay of the history: the next position to offer, and what left the history before it got there. */
struct cursor {
	bool used;
	struct custode_event_filter f;
	uint64_t pos;
	uint64_t lost;
};

/* Runs by cgroup id, remembered after they end: a run's last throttle summary comes after it. */
struct known_run {
	__u64 cgid, run_id;
	__u32 version;
};
#define KNOWN_SLOTS 16384

/* What the stream already said about a (run cgroup, reason)'s suppressed denials: reconciles kernel and daemon reports. */
struct reconcile {
	__u64 run_cgid;
	__u32 reason;
	bool used;
	__u64 total;
	uint64_t pass; /* the last pass over the kernel map that saw the pair's entry */
};

static struct {
	struct custode_stream_opts o;
	int events_fd, throttle_fd, stats_fd, runs_fd, cfg_fd;
	struct ring_buffer *rb;
	int64_t boot_to_wall;
	struct custode_event_enricher *en;
	struct outq out;
	bool out_text, out_none;
	int file_fd;
	uint64_t file_size;
	uint64_t file_torn; /* bytes of a line written only in part and not yet cut off again */
	struct hist *hist;
	size_t hist_head, hist_n;
	uint64_t hist_seq; /* records ever kept: the position of the next one (the oldest kept is hist_seq - hist_n) */
	struct follower fol[MAX_FOLLOWERS];
	struct cursor cur[MAX_CURSORS];
	struct reconcile *rec;
	size_t rec_used;
	uint64_t rec_pass;
	struct known_run *known;
	uint64_t last_dropped;
	__u64 baseline_boot_ns; /* CLOCK_BOOTTIME of throttle_baseline: kernel records older than it are covered by it */
	int ncpu;
	struct custode_stream_stats st;
} S = {.events_fd = -1, .throttle_fd = -1, .stats_fd = -1, .runs_fd = -1, .cfg_fd = -1, .file_fd = -1};

/* ---- sinks ---- */

static int outq_event(void *arg, uint32_t revents);

/* The reader is gone: every line still queued (one partly written included) is lost. */
static void outq_lose(struct outq *q)
{
	for (size_t i = 0; i < q->len; i++)
		q->dropped += q->buf[i] == '\n';
	q->gone = true;
	q->len = 0;
}

static void outq_flush(struct outq *q)
{
	while (q->len && !q->gone) {
		ssize_t w = write(q->fd, q->buf, q->len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			break;
		if (w <= 0) {
			outq_lose(q); /* the reader left: count what it would have got */
			break;
		}
		memmove(q->buf, q->buf + w, q->len - (size_t)w);
		q->len -= (size_t)w;
	}
	if (q->pollable && !q->gone) {
		bool want = q->len > 0;

		if (want && !q->watching) {
			q->watching = custode_loop_add(q->fd, EPOLLOUT, outq_event, q) == 0;
		} else if (!want && q->watching) {
			custode_loop_del(q->fd);
			q->watching = false;
		}
	}
}

static int outq_event(void *arg, uint32_t revents)
{
	struct outq *q = arg;

	if (revents & (EPOLLERR | EPOLLHUP))
		outq_lose(q);
	outq_flush(q);
	if (q->gone && q->watching) {
		custode_loop_del(q->fd);
		q->watching = false;
	}
	return 0;
}

static void outq_push(struct outq *q, const char *line, size_t n)
{
	if (q->gone || q->fd < 0) {
		q->dropped++;
		return;
	}
	if (!q->pollable) {
		/* a regular file: writes don't wait for a reader */
		while (n) {
			ssize_t w = write(q->fd, line, n);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				q->dropped++;
				return;
			}
			line += w;
			n -= (size_t)w;
		}
		return;
	}
	if (q->len + n > SINK_QUEUE_MAX) {
		q->dropped++;
		outq_flush(q);
		return;
	}
	if (q->len + n > q->cap) {
		size_t cap = q->cap ? q->cap : 65536;
		char *nb;

		while (cap < q->len + n)
			cap *= 2;
		nb = realloc(q->buf, cap);
		if (!nb) {
			q->dropped++;
			return;
		}
		q->buf = nb;
		q->cap = cap;
	}
	memcpy(q->buf + q->len, line, n);
	q->len += n;
	outq_flush(q);
}

/*
 * stdout: a pipe, socket or terminal is written without blocking (a new open
 * file description where possible, so the caller's stays as it was).
 */
static void stdout_open(void)
{
	struct stat st;

	S.out.fd = 1;
	if (fstat(1, &st) < 0) {
		S.out.gone = true;
		return;
	}
	if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))
		return;
	S.out.pollable = true;
	if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
		int fd = open("/proc/self/fd/1", O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0) {
			S.out.fd = fd;
			return;
		}
	}
	fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK);
}

/*
 * Open (or create, 0600) the events file: a regular file only. The daemon
 * is root and the path is opened again after every rotation: a symbolic
 * link put there (in a directory others can write) would have root append
 * to any file, and a FIFO would hold the loop in open(2) until a reader
 * came. O_NOFOLLOW refuses the link (ELOOP), O_NONBLOCK makes the open of a
 * FIFO or device return at once, and fstat refuses what is not a regular
 * file (-EINVAL). 0 or -errno.
 */
static int file_open(void)
{
	struct stat st, rst;
	char last;
	int fd, fl, e = 0;

	fd = open(S.o.file, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		e = errno;
	else if (!S_ISREG(st.st_mode))
		e = EINVAL;
	if (e) {
		close(fd);
		return -e;
	}
	if ((fl = fcntl(fd, F_GETFL)) >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK); /* a regular file: plain writes from here on */
	S.file_fd = fd;
	S.file_torn = 0;
	S.file_size = (uint64_t)st.st_size;
	/*
	 * A file that ends inside a line (a writer killed mid-line): end that
	 * line first, so it stays one bad line and our first record a whole one.
	 * The fd is write-only: read the last byte through a second open, of
	 * the same file only.
	 */
	if (S.file_size) {
		int rfd = open(S.o.file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

		if (rfd >= 0 && fstat(rfd, &rst) == 0 && rst.st_dev == st.st_dev && rst.st_ino == st.st_ino &&
		    pread(rfd, &last, 1, (off_t)S.file_size - 1) == 1 && last != '\n' && write(S.file_fd, "\n", 1) == 1)
			S.file_size++;
		if (rfd >= 0)
			close(rfd);
	}
	return 0;
}

/* Why file_open refused, for a person. */
static const char *file_open_strerror(int err)
{
	switch (err) {
	case ELOOP:
		return "a symbolic link (refused: the events file is opened only as a regular file, never through a link)";
	case EINVAL:
	case ENXIO:
		return "not a regular file (refused)";
	default:
		return strerror(err);
	}
}

/*
 * The events file's directory, writable by group or others without the
 * sticky bit: whoever can write there can replace the file (root then
 * writes into what they put there; links and FIFOs are refused, but lines
 * go to a file of theirs or are lost). dir gets the directory's name.
 */
static bool file_dir_shared(const char *file, char *dir, size_t len, mode_t *mode)
{
	const char *slash = strrchr(file, '/');
	struct stat st;

	if (!slash)
		snprintf(dir, len, ".");
	else if (slash == file)
		snprintf(dir, len, "/");
	else
		snprintf(dir, len, "%.*s", (int)(slash - file), file);
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return false;
	*mode = st.st_mode & 07777;
	return (st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX);
}

static bool file_untear(void);

static void file_rotate(void)
{
	char from[PATH_MAX + 16], to[PATH_MAX + 16];

	close(S.file_fd);
	S.file_fd = -1;
	for (unsigned k = S.o.file_keep; k > 1; k--) {
		snprintf(from, sizeof(from), "%s.%u", S.o.file, k - 1);
		snprintf(to, sizeof(to), "%s.%u", S.o.file, k);
		rename(from, to);
	}
	snprintf(to, sizeof(to), "%s.1", S.o.file);
	if (S.o.file_keep)
		rename(S.o.file, to);
	else
		unlink(S.o.file);
	/*
	 * FILE.(keep+1) and on: left by an earlier daemon with a larger
	 * --events-file-keep. Nothing would ever rotate them away again.
	 */
	for (unsigned k = S.o.file_keep + 1; k <= S.o.file_keep + STALE_ROTATED_MAX; k++) {
		snprintf(to, sizeof(to), "%s.%u", S.o.file, k);
		if (unlink(to) < 0 && errno == ENOENT)
			break;
	}
	S.st.file_rotations++;
	file_open();
}

/*
 * The events file renamed or removed under us (logrotate's default
 * create mode, or someone's rm): lines would go on into a file nobody
 * looks at, or into no file at all. Called from the tick: when the path no
 * longer names the file we hold, open the path again (O_APPEND|O_CREAT,
 * the same mode) and count it. logrotate's copytruncate is fine as it is:
 * the file is written with O_APPEND, so after the truncation the next line
 * lands at the new end (no hole of zeros); the size we track is taken from
 * the file again here.
 */
static void file_check(void)
{
	struct stat fst, pst;

	if (!S.o.file || S.file_fd < 0 || fstat(S.file_fd, &fst) < 0)
		return;
	if (stat(S.o.file, &pst) == 0) {
		if (pst.st_dev == fst.st_dev && pst.st_ino == fst.st_ino) {
			S.file_size = (uint64_t)fst.st_size; /* truncated (copytruncate) or written by others */
			return;
		}
	} else if (errno != ENOENT && errno != ENOTDIR) {
		return; /* can't tell now (EACCES, ELOOP, ...): keep the file we have */
	}
	file_untear(); /* the old file ends whole if it can; the new one starts clean */
	S.file_torn = 0;
	close(S.file_fd);
	S.file_fd = -1;
	S.st.file_reopens++;
	file_open(); /* on failure file_write tries again for each line, and counts what it drops */
}

/*
 * Cut the file back to where a line that could not be written whole began
 * (its start: our offset, just past what was written, less that). A file
 * that can't be cut (chattr +a) gets the line ended instead: one bad line,
 * and the next record still a line of its own. true when nothing torn is
 * left for a record to be glued to.
 */
static bool file_untear(void)
{
	off_t end;

	if (!S.file_torn)
		return true;
	end = lseek(S.file_fd, 0, SEEK_CUR); /* O_APPEND: just past our last write */
	if (end >= 0 && (uint64_t)end >= S.file_torn && ftruncate(S.file_fd, end - (off_t)S.file_torn) == 0) {
		S.file_size = S.file_size > S.file_torn ? S.file_size - S.file_torn : 0;
	} else if (write(S.file_fd, "\n", 1) == 1) {
		S.file_size++;
	} else {
		return false; /* still full: the next line tries again, and is dropped until then */
	}
	S.file_torn = 0;
	return true;
}

static void file_write(const char *line, size_t n)
{
	size_t done = 0;

	if (S.file_fd < 0 && file_open() < 0) {
		S.st.sink_dropped[1]++;
		return;
	}
	/* a torn line the last write left that could not be cut then: no record goes after it */
	if (!file_untear()) {
		S.st.sink_dropped[1]++;
		return;
	}
	if (S.file_size + n > S.o.file_max_bytes && S.file_size)
		file_rotate();
	if (S.file_fd < 0) {
		S.st.sink_dropped[1]++;
		return;
	}
	while (done < n) {
		ssize_t w = write(S.file_fd, line + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			/*
			 * A short write (disk full, a file size limit): part of the
			 * line is in the file. Cut it off, or the next record would
			 * be appended to it and both lines be lost to a reader.
			 */
			S.st.sink_dropped[1]++;
			S.file_torn = done;
			file_untear();
			return;
		}
		S.file_size += (uint64_t)w;
		done += (size_t)w;
	}
}

/* ---- publishing ---- */

/* A kept record at position pos leaves the history: a cursor that had not reached it and wanted it lost it. */
static void cursors_evict(const struct hist *h, uint64_t pos)
{
	for (int i = 0; i < MAX_CURSORS; i++) {
		struct cursor *c = &S.cur[i];

		if (c->used && c->pos <= pos && custode_event_filter_match_meta(&c->f, h->run_id, h->reason, h->wall_ns))
			c->lost++;
	}
}

static void publish(json_t *ev)
{
	const char *reason = json_string_value(json_object_get(ev, "reason"));
	const char *rid = json_string_value(json_object_get(ev, "run_id"));
	const char *t = json_string_value(json_object_get(ev, "time"));
	const char *type = json_string_value(json_object_get(ev, "type"));
	char *line = json_dumps(ev, JSON_COMPACT);
	int64_t wall = 0;
	__u64 run_id = 0;
	size_t len;

	if (!line)
		return;
	len = strlen(line);
	if (rid)
		custode_run_id_parse(rid, &run_id);
	if (t)
		custode_time_parse_ns(t, &wall);
	if (type && !strcmp(type, "decision"))
		S.st.records++;
	/* sinks: a line each, with its newline */
	line[len] = '\n';
	if (!S.out_none) {
		if (S.out_text) {
			char text[8192];
			int n = custode_event_format(ev, text, sizeof(text) - 1);

			if (n > (int)sizeof(text) - 2)
				n = (int)sizeof(text) - 2;
			text[n] = '\n';
			outq_push(&S.out, text, (size_t)n + 1);
		} else {
			outq_push(&S.out, line, len + 1);
		}
	}
	if (S.o.file)
		file_write(line, len + 1);
	line[len] = 0;
	for (int i = 0; i < MAX_FOLLOWERS; i++)
		if (S.fol[i].used && custode_event_filter_match_meta(&S.fol[i].f, run_id, reason, wall))
			S.fol[i].take(S.fol[i].ctx, line, len);
	/* the history keeps the line (ownership moves there) */
	if (!S.o.history) {
		free(line);
		return;
	}
	{
		struct hist *h = &S.hist[(S.hist_head + S.hist_n) % S.o.history];

		if (S.hist_n == S.o.history) {
			h = &S.hist[S.hist_head];
			cursors_evict(h, S.hist_seq - S.hist_n);
			free(h->line);
			S.hist_head = (S.hist_head + 1) % S.o.history;
		} else {
			S.hist_n++;
		}
		S.hist_seq++;
		h->line = line;
		h->len = len;
		h->run_id = run_id;
		h->wall_ns = wall;
		snprintf(h->reason, sizeof(h->reason), "%s", reason ? reason : "");
	}
}

size_t custode_stream_replay(const struct custode_event_filter *f, custode_stream_take_fn take, void *ctx)
{
	size_t n = 0;

	for (size_t i = 0; i < S.hist_n; i++) {
		const struct hist *h = &S.hist[(S.hist_head + i) % S.o.history];

		if (!custode_event_filter_match_meta(f, h->run_id, h->reason, h->wall_ns))
			continue;
		take(ctx, h->line, h->len);
		n++;
	}
	return n;
}

int custode_stream_cursor_open(const struct custode_event_filter *f)
{
	for (int i = 0; i < MAX_CURSORS; i++) {
		if (S.cur[i].used)
			continue;
		memset(&S.cur[i], 0, sizeof(S.cur[i]));
		S.cur[i].used = true;
		if (f)
			S.cur[i].f = *f;
		S.cur[i].pos = S.hist_seq - S.hist_n;
		return i;
	}
	return -ENOSPC;
}

static struct cursor *cursor_of(int h)
{
	return h >= 0 && h < MAX_CURSORS && S.cur[h].used ? &S.cur[h] : NULL;
}

bool custode_stream_cursor_next(int h, custode_stream_take_fn take, void *ctx, size_t *taken)
{
	struct cursor *c = cursor_of(h);
	uint64_t first = S.hist_seq - S.hist_n;

	if (!c)
		return true;
	if (c->pos < first) /* what it missed is counted already (cursors_evict) */
		c->pos = first;
	for (; c->pos < S.hist_seq; c->pos++) {
		const struct hist *r = &S.hist[(S.hist_head + (size_t)(c->pos - first)) % S.o.history];

		if (!custode_event_filter_match_meta(&c->f, r->run_id, r->reason, r->wall_ns))
			continue;
		if (!take(ctx, r->line, r->len))
			return false; /* offered again next time */
		if (taken)
			(*taken)++;
	}
	return true;
}

uint64_t custode_stream_cursor_lost(int h)
{
	struct cursor *c = cursor_of(h);
	uint64_t n = c ? c->lost : 0;

	if (c)
		c->lost = 0;
	return n;
}

void custode_stream_cursor_close(int h)
{
	if (cursor_of(h))
		S.cur[h].used = false;
}

int custode_stream_follow(const struct custode_event_filter *f, custode_stream_take_fn take, void *ctx)
{
	for (int i = 0; i < MAX_FOLLOWERS; i++) {
		if (S.fol[i].used)
			continue;
		S.fol[i].used = true;
		S.fol[i].f = *f;
		S.fol[i].take = take;
		S.fol[i].ctx = ctx;
		return i;
	}
	return -ENOSPC;
}

void custode_stream_unfollow(int handle)
{
	if (handle >= 0 && handle < MAX_FOLLOWERS)
		S.fol[handle].used = false;
}

void custode_stream_set_policy(__u64 run_id, const char *name)
{
	custode_event_enricher_set_policy(S.en, run_id, name);
}

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
			publish(batch[i]);
			json_decref(batch[i]);
		}
	} while (n == sizeof(batch) / sizeof(batch[0]));
	return 0;
}

static int inject_open(void)
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

static void inject_close(void)
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

void custode_stream_stats(struct custode_stream_stats *out)
{
	*out = S.st;
	pthread_mutex_lock(&I.lock);
	out->injected = I.injected;
	out->inject_dropped = I.dropped;
	pthread_mutex_unlock(&I.lock);
	out->sink_dropped[0] = S.out.dropped;
	out->history = S.hist_n;
	out->followers = 0;
	for (int i = 0; i < MAX_FOLLOWERS; i++)
		out->followers += S.fol[i].used;
}

/* ---- throttle records: kernel and daemon, reconciled by the monotonic totals ---- */

/* A pair's home slot: the whole key mixed (cgroup ids are close together, reasons small). */
static size_t rec_home(__u64 cgid, __u32 reason)
{
	__u64 x = cgid ^ ((__u64)reason * 0x9e3779b97f4a7c15ull);

	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return (size_t)x & RECONCILE_MASK;
}

/*
 * A pair's slot (linear probing), made when create and the table is below
 * RECONCILE_MAX. At most 3/4 used: a probe always ends at an empty slot,
 * after a few steps.
 */
static struct reconcile *rec_slot(__u64 cgid, __u32 reason, bool create)
{
	size_t i = rec_home(cgid, reason);

	for (size_t n = 0; n < RECONCILE_SLOTS; n++, i = (i + 1) & RECONCILE_MASK) {
		struct reconcile *r = &S.rec[i];

		if (r->used && r->run_cgid == cgid && r->reason == reason)
			return r;
		if (!r->used) {
			if (!create || S.rec_used >= RECONCILE_MAX)
				return NULL; /* full: report as the kernel says */
			r->used = true;
			r->run_cgid = cgid;
			r->reason = reason;
			r->total = 0;
			r->pass = S.rec_pass;
			S.rec_used++;
			return r;
		}
	}
	return NULL;
}

/*
 * Free slot i, moving later slots of its cluster back into the gap where
 * their probe allows (no tombstones: every used slot stays reachable from
 * its home through used slots only).
 */
static void rec_remove(size_t i)
{
	size_t j = i;

	S.rec_used--;
	for (;;) {
		S.rec[i].used = false;
		for (;;) {
			size_t k;

			j = (j + 1) & RECONCILE_MASK;
			if (!S.rec[j].used)
				return;
			k = rec_home(S.rec[j].run_cgid, S.rec[j].reason);
			/* j stays where it is when its home lies in (i, j] */
			if (((j - k) & RECONCILE_MASK) < ((j - i) & RECONCILE_MASK))
				continue;
			break;
		}
		S.rec[i] = S.rec[j];
		i = j;
	}
}

/*
 * After a complete pass over the kernel map: the slots of pairs whose entry
 * it did not see (evicted, or gone with their run) are freed. The walk
 * starts after an empty slot: removals move slots back within their cluster
 * only, so a moved slot is one the walk has still to look at (the current
 * position is looked at again).
 */
static void rec_sweep(void)
{
	size_t start = 0, i;

	while (start < RECONCILE_SLOTS && S.rec[start].used)
		start++;
	if (start == RECONCILE_SLOTS)
		return; /* never: at most 3/4 used */
	i = (start + 1) & RECONCILE_MASK;
	while (i != start) {
		if (S.rec[i].used && S.rec[i].pass != S.rec_pass)
			rec_remove(i);
		else
			i = (i + 1) & RECONCILE_MASK;
	}
}

/*
 * A kernel throttle record: its count is what the kernel had not reported;
 * the daemon may have reported part of it already (a quiet window's
 * summary). Keep what's new; a record with nothing new is not published.
 */
static bool reconcile_kernel(json_t *ev)
{
	json_t *t = json_object_get(ev, "throttle");
	__u64 cgid = (__u64)json_integer_value(json_object_get(t, "run_cgid"));
	__u64 total = (__u64)json_integer_value(json_object_get(t, "total"));
	int reason = custode_reason_from_name(json_string_value(json_object_get(ev, "reason")));
	struct reconcile *r = reason >= 0 ? rec_slot(cgid, (__u32)reason, false) : NULL;
	bool fresh = false;
	__u64 count;

	{
		const char *rid = json_string_value(json_object_get(ev, "run_id"));
		__u64 id;

		if (rid && custode_run_id_parse(rid, &id) == 0 && id)
			custode_stream_note_run(cgid, id,
						(__u32)json_integer_value(json_object_get(json_object_get(ev, "policy"), "version")));
	}
	if (!r && reason >= 0)
		fresh = (r = rec_slot(cgid, (__u32)reason, true)) != NULL;
	if (!r)
		return true;
	/*
	 * A record written before this daemon started (left in the ring buffer by
	 * the last one) whose total the baseline already holds: covered by the
	 * baseline, not an eviction (it would be reported twice).
	 */
	if (!fresh && total <= r->total &&
	    (__u64)json_integer_value(json_object_get(ev, "boot_ns")) < S.baseline_boot_ns)
		return false;
	/*
	 * Nothing said about this entry yet (a new slot), or the kernel's entry
	 * was evicted and started again: what the kernel had not reported.
	 */
	if (fresh || total < r->total)
		count = (__u64)json_integer_value(json_object_get(t, "count"));
	else
		count = total - r->total;
	r->total = total;
	if (!count)
		return false;
	json_object_set_new(t, "count", json_integer((json_int_t)count));
	S.st.throttle_records++;
	S.st.throttled += count;
	return true;
}

static struct known_run *known_slot(__u64 cgid, bool create)
{
	size_t h = (size_t)((cgid * 0x9e3779b97f4a7c15ull) >> 40) % KNOWN_SLOTS;

	for (size_t i = 0; i < KNOWN_SLOTS; i++) {
		struct known_run *k = &S.known[(h + i) % KNOWN_SLOTS];

		if (k->cgid == cgid)
			return k;
		if (!k->cgid) {
			if (!create)
				return NULL;
			k->cgid = cgid;
			return k;
		}
	}
	/* full: recycle the home slot (an old run's summary may then lack its id) */
	return create ? &S.known[h] : NULL;
}

void custode_stream_note_run(__u64 cgid, __u64 run_id, __u32 version)
{
	struct known_run *k = S.known && cgid ? known_slot(cgid, true) : NULL;

	if (k) {
		k->cgid = cgid;
		k->run_id = run_id;
		k->version = version;
	}
}

/* A run by cgroup id: registered now, or seen while it was (its summary may come after it ended). */
static __u64 run_id_of(__u64 cgid, __u32 *version)
{
	struct custode_run run;
	struct known_run *k;

	*version = 0;
	if (S.runs_fd >= 0 && bpf_map_lookup_elem(S.runs_fd, &cgid, &run) == 0) {
		custode_stream_note_run(cgid, run.run_id, run.policy_version);
		*version = run.policy_version;
		return run.run_id;
	}
	k = S.known ? known_slot(cgid, false) : NULL;
	if (!k)
		return 0;
	*version = k->version;
	return k->run_id;
}

/*
 * Suppressed denials the kernel has not summarised because no later denial
 * of that run and reason came (the storm stopped): once the window is over,
 * the daemon says so itself.
 */
static void throttle_flush(uint64_t window_ns)
{
	struct custode_throttle_key key, next;
	struct custode_throttle val;
	struct timespec bt;
	void *prev = NULL;
	size_t keys = 0;
	__u64 now;
	int err;

	if (S.throttle_fd < 0)
		return;
	clock_gettime(CLOCK_BOOTTIME, &bt);
	now = (__u64)bt.tv_sec * 1000000000ull + (__u64)bt.tv_nsec;
	S.rec_pass++;
	/*
	 * The kernel makes an entry for the first denial of every (run,
	 * reason); only those with suppressed denials need a slot. Each entry
	 * seen marks its slot for this pass; after a complete pass the rest go.
	 */
	while ((err = bpf_map_get_next_key(S.throttle_fd, prev, &next)) == 0 && keys++ < THROTTLE_PASS_MAX) {
		struct reconcile *r;
		char when[64], since[64], hex[17];
		__u32 version;
		__u64 run_id;
		json_t *ev;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(S.throttle_fd, &key, &val) < 0)
			continue;
		r = rec_slot(key.run_cgid, key.reason, val.suppressed > 0);
		if (!r)
			continue;
		r->pass = S.rec_pass;
		if (val.suppressed < r->total)
			r->total = 0; /* suppressed only grows: the entry was evicted and made again since */
		if (val.suppressed <= r->total || now - val.window_start_ns < window_ns)
			continue;
		run_id = run_id_of(key.run_cgid, &version);
		custode_run_id_format(run_id, hex);
		custode_time_format_ns((int64_t)now + S.boot_to_wall, 6, when, sizeof(when));
		custode_time_format_ns((int64_t)val.window_start_ns + S.boot_to_wall, 6, since, sizeof(since));
		ev = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:{s:I}, s:{s:I, s:I, s:s, s:I}}", "version",
			       CUSTODE_EVENT_VERSION, "type", "throttle", "source", "daemon", "time", when, "run_id", hex,
			       "reason", custode_reason_name((int)key.reason) ? custode_reason_name((int)key.reason) : "unknown",
			       "policy", "version", (json_int_t)version, "throttle", "count",
			       (json_int_t)(val.suppressed - r->total), "total", (json_int_t)val.suppressed, "since", since,
			       "run_cgid", (json_int_t)key.run_cgid);
		S.st.throttle_records++;
		S.st.throttled += val.suppressed - r->total;
		r->total = val.suppressed;
		if (ev) {
			custode_event_enrich(S.en, ev);
			publish(ev);
			json_decref(ev);
		}
	}
	if (err == -ENOENT) /* the whole map was seen (not cut by an error or endless restarts) */
		rec_sweep();
}

/* Start from what the kernel holds: what happened before this daemon is not reported again. */
static void throttle_baseline(void)
{
	struct custode_throttle_key key, next;
	struct custode_throttle val;
	void *prev = NULL;
	size_t keys = 0;

	if (S.throttle_fd < 0)
		return;
	while (bpf_map_get_next_key(S.throttle_fd, prev, &next) == 0 && keys++ < THROTTLE_PASS_MAX) {
		struct reconcile *r;

		key = next;
		prev = &key;
		/* an entry with nothing suppressed needs no slot: a new slot's total is 0 */
		if (bpf_map_lookup_elem(S.throttle_fd, &key, &val) == 0 && val.suppressed &&
		    (r = rec_slot(key.run_cgid, key.reason, true)))
			r->total = val.suppressed;
	}
}

/* Records the full ring buffer lost, per CPU: one "dropped" record when the count moved. */
static void drops_check(bool baseline)
{
	struct custode_stats *per;
	__u32 zero = 0;
	__u64 total = 0;
	json_t *ev, *arr;
	char when[64];

	if (S.stats_fd < 0 || S.ncpu <= 0 || !(per = calloc((size_t)S.ncpu, sizeof(*per))))
		return;
	if (bpf_map_lookup_elem(S.stats_fd, &zero, per) < 0) {
		free(per);
		return;
	}
	arr = json_array();
	for (int i = 0; i < S.ncpu; i++) {
		total += per[i].events_dropped;
		json_array_append_new(arr, json_integer((json_int_t)per[i].events_dropped));
	}
	free(per);
	if (baseline || total <= S.last_dropped) {
		S.last_dropped = total;
		json_decref(arr);
		return;
	}
	{
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		custode_time_format_ns(now.tv_sec * 1000000000LL + now.tv_nsec, 6, when, sizeof(when));
	}
	ev = json_pack("{s:i, s:s, s:s, s:s, s:I, s:I, s:o}", "version", CUSTODE_EVENT_VERSION, "type", "dropped",
		       "source", "daemon", "time", when, "count", (json_int_t)(total - S.last_dropped), "total",
		       (json_int_t)total, "per_cpu", arr);
	S.st.dropped += total - S.last_dropped;
	S.last_dropped = total;
	if (ev) {
		publish(ev);
		json_decref(ev);
	}
}

/* ---- the consumer ---- */

static int on_record(void *ctx, void *data, size_t size)
{
	json_t *ev = custode_event_to_json(data, size, S.boot_to_wall);
	const char *type;

	(void)ctx;
	if (!ev) {
		S.st.bad++;
		return 0;
	}
	type = json_string_value(json_object_get(ev, "type"));
	custode_event_enrich(S.en, ev);
	if (!type || strcmp(type, "throttle") || reconcile_kernel(ev))
		publish(ev);
	json_decref(ev);
	return 0;
}

static int rb_ready(void *arg, uint32_t revents)
{
	(void)arg;
	(void)revents;
	ring_buffer__consume(S.rb);
	return 0;
}

static int tick(void *arg)
{
	uint64_t window = S.o.throttle_window_ms ? S.o.throttle_window_ms * 1000000ull : CUSTODE_THROTTLE_WINDOW_NS;

	(void)arg;
	S.boot_to_wall = custode_boot_to_wall_ns(); /* follows clock changes */
	if (S.rb)
		ring_buffer__consume(S.rb);
	drops_check(false);
	throttle_flush(window);
	file_check();
	return 0;
}

int custode_stream_open(const struct custode_stream_opts *o, struct custode_refusal *why)
{
	struct custode_event_cfg cfg = {0};
	__u32 zero = 0;
	int err;

	S.o = *o;
	if (!S.o.stdout_format)
		S.o.stdout_format = "json";
	if (!S.o.file_max_bytes)
		S.o.file_max_bytes = 64ull << 20;
	S.out_text = !strcmp(S.o.stdout_format, "text");
	S.out_none = !strcmp(S.o.stdout_format, "none");
	S.ncpu = libbpf_num_possible_cpus();
	S.en = custode_event_enricher_new();
	S.rec = calloc(RECONCILE_SLOTS, sizeof(*S.rec));
	S.known = calloc(KNOWN_SLOTS, sizeof(*S.known));
	S.hist = S.o.history ? calloc(S.o.history, sizeof(*S.hist)) : NULL;
	if (!S.en || !S.rec || !S.known || (S.o.history && !S.hist))
		return custode_refuse(why, ENOMEM, CUSTODE_REASON_RUN_SETUP_FAILED, "out of memory");
	/* our own fds: the engine handle may be reopened (new classes) without touching the consumer */
	S.events_fd = custode_map_open(CUSTODE_MAP_EVENTS);
	S.stats_fd = custode_map_open(CUSTODE_MAP_STATS);
	S.runs_fd = custode_map_open(CUSTODE_MAP_RUNS);
	S.throttle_fd = custode_map_open(CUSTODE_MAP_THROTTLE);
	S.cfg_fd = custode_map_open(CUSTODE_MAP_EVENT_CFG);
	if (S.events_fd < 0 || S.stats_fd < 0)
		return custode_refuse(why, ENOENT, CUSTODE_REASON_ENGINE_MISSING, "the engine's event maps are missing");
	if (S.cfg_fd >= 0) {
		cfg.burst = S.o.throttle_burst;
		cfg.window_ns = S.o.throttle_window_ms * 1000000ull;
		cfg.flags = S.o.no_throttle ? CUSTODE_EVENT_CFG_NO_THROTTLE : 0;
		bpf_map_update_elem(S.cfg_fd, &zero, &cfg, BPF_ANY);
	}
	if (S.o.file) {
		char dir[PATH_MAX];
		mode_t mode = 0;

		if (file_dir_shared(S.o.file, dir, sizeof(dir), &mode))
			fprintf(stderr,
				"custode: daemon: warning: --events-file %s: its directory %s (mode %04o) can be written by "
				"group or others without the sticky bit: they can replace the file\n",
				S.o.file, dir, (unsigned)mode);
		if ((err = file_open()) < 0)
			return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "--events-file %s: %s", S.o.file,
					      file_open_strerror(-err));
	}
	stdout_open();
	S.boot_to_wall = custode_boot_to_wall_ns();
	{
		struct timespec bt;

		clock_gettime(CLOCK_BOOTTIME, &bt);
		S.baseline_boot_ns = (__u64)bt.tv_sec * 1000000000ull + (__u64)bt.tv_nsec;
	}
	throttle_baseline();
	drops_check(true);
	S.rb = ring_buffer__new(S.events_fd, on_record, NULL, NULL);
	if (!S.rb)
		return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "map the ring buffer: %s",
				      strerror(errno));
	if ((err = custode_loop_add(ring_buffer__epoll_fd(S.rb), EPOLLIN, rb_ready, NULL)) ||
	    (err = custode_loop_timer(TICK_MS, tick, NULL)) < 0 || (err = inject_open()) < 0)
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "event loop: %s", strerror(-err));
	return 0;
}

void custode_stream_close(void)
{
	inject_close();
	if (S.rb) {
		ring_buffer__consume(S.rb);
		ring_buffer__free(S.rb);
	}
	S.rb = NULL;
	if (S.out.len) {
		/* last chance, without waiting */
		(void)!write(S.out.fd, S.out.buf, S.out.len);
	}
	free(S.out.buf);
	/* throttling back to the engine's defaults for whoever reads the ring buffer next (not after SIGKILL) */
	if (S.cfg_fd >= 0 && (S.o.no_throttle || S.o.throttle_burst || S.o.throttle_window_ms)) {
		struct custode_event_cfg cfg = {0};
		__u32 zero = 0;

		bpf_map_update_elem(S.cfg_fd, &zero, &cfg, BPF_ANY);
	}
	if (S.file_fd >= 0)
		file_untear();
	for (size_t i = 0; i < S.hist_n; i++)
		free(S.hist[(S.hist_head + i) % S.o.history].line);
	free(S.hist);
	free(S.rec);
	free(S.known);
	custode_event_enricher_free(S.en);
	{
		int fds[] = {S.events_fd, S.throttle_fd, S.stats_fd, S.runs_fd, S.cfg_fd, S.file_fd};
		for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
			if (fds[i] >= 0)
				close(fds[i]);
	}
	if (S.out.fd > 2)
		close(S.out.fd);
	memset(&S, 0, sizeof(S));
	S.events_fd = S.throttle_fd = S.stats_fd = S.runs_fd = S.cfg_fd = S.file_fd = -1;
}
