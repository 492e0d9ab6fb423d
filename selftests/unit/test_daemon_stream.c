// SPDX-License-Identifier: Apache-2.0
/*
 * The daemon's denial stream (userspace/daemon/stream.c and its parts
 * sink.c, history.c, inject.c, throttle.c) without the engine:
 * custode_stream_open needs the pinned BPF maps, so this file builds the
 * stream with custode_stream_new and drives its publishing and sinks
 * directly, through the functions and fields of daemon/stream_impl.h. The rotating events
 * file (rotation before a line would pass the limit, FILE.1 .. FILE.N, no
 * line split across files, appending to an existing file, no torn line
 * after a short write, reopened after logrotate, stale FILE.N removed), the
 * non-blocking stdout sink (a full pipe never blocks the daemon, loss is
 * counted per line, nothing is lost or torn that was not counted), the
 * history (and cursors that resume a replay) and followers with their
 * filters, and the reconciliation of kernel throttle records (the kernel's
 * throttle map faked: the stream reads the engine's maps through the map
 * operations of its options, the fake's here).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <criterion/criterion.h>

#include "daemon/loop.h"
#include "daemon/stream_impl.h"
#include "util/fsutil.h"
#include "util/time.h"

static char tdir[64], tfile[128];
static struct custode_stream *strm; /* the stream under test: setup makes it, custode_stream_close frees it */
static struct custode_loop *loop;   /* its loop, for a test with a pollable sink (NULL: none) */
static const struct custode_stream_map_ops fake_maps;

static void tmpdir(void)
{
	snprintf(tdir, sizeof(tdir), "/tmp/custode-stream-XXXXXX");
	cr_assert_not_null(mkdtemp(tdir));
	snprintf(tfile, sizeof(tfile), "%s/events.jsonl", tdir);
}

static void rm_tmpdir(void)
{
	custode_rm_rf(tdir);
}

/* What custode_stream_open sets up, minus the engine: sinks, history, reconciliation tables. */
static void setup(const char *file, uint64_t max_bytes, unsigned keep, size_t history)
{
	struct custode_stream_opts o = {
		.stdout_format = "none",
		.file = file,
		.file_max_bytes = max_bytes,
		.file_keep = keep,
		.history = history,
		.maps = &fake_maps, /* the fake for its map, libbpf's for any other */
	};

	signal(SIGPIPE, SIG_IGN); /* as the daemon does */
	cr_assert_eq(custode_stream_new(loop, &o, &strm), 0);
	cr_assert(strm->out_none && strm->out.fd == -1 && strm->rec.cap && strm->known.cap && (!history || strm->hist));
	if (file)
		cr_assert_eq(stream_file_open(strm), 0);
}

/* A decision record of about `size` bytes as a JSON line. */
static json_t *rec(unsigned seq, const char *reason, const char *run_id, size_t size)
{
	char pad[8192];
	json_t *o;

	if (size > sizeof(pad) - 1)
		size = sizeof(pad) - 1;
	memset(pad, 'p', sizeof(pad));
	o = json_pack("{s:i, s:s, s:i, s:s, s:s, s:s}", "version", 2, "type", "decision", "seq", (int)seq, "time",
		      "2026-01-01T00:00:00.000000Z", "run_id", run_id ? run_id : "0000000000000001", "reason",
		      reason ? reason : "file.read.denied");
	cr_assert_not_null(o);
	{
		char *text = json_dumps(o, JSON_COMPACT);
		size_t have = strlen(text) + 10; /* ,"pad":"" and the newline */

		free(text);
		pad[size > have ? size - have : 0] = 0;
	}
	json_object_set_new(o, "pad", json_string(pad));
	return o;
}

static void pub(unsigned seq, size_t size)
{
	json_t *o = rec(seq, NULL, NULL, size);

	stream_publish(strm, o);
	json_decref(o);
}

static off_t size_of(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : -1;
}

/* Seqs of the lines of a file, in order; every line must be a complete JSON record. Returns the count. */
static int seqs_of(const char *path, int *out, int max)
{
	char *text = NULL, *save = NULL;
	size_t len = 0;
	int n = 0;

	if (custode_read_file(path, 64u << 20, &text, &len) < 0)
		return -1;
	cr_expect(len == 0 || text[len - 1] == '\n', "%s ends with a whole line", path);
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		json_t *o = json_loads(line, JSON_REJECT_DUPLICATES, NULL);

		cr_expect(json_is_object(o), "%s: a line that is not a record: %.80s", path, line);
		if (n < max)
			out[n] = (int)json_integer_value(json_object_get(o, "seq"));
		n++;
		json_decref(o);
	}
	free(text);
	return n;
}

/* ---- the rotating events file ---- */

Test(stream_file, rotates_before_a_line_would_pass_the_limit)
{
	char path[256];
	int seqs[64], next = 4;

	tmpdir();
	setup(tfile, 1000, 3, 0);
	for (unsigned i = 0; i < 20; i++) {
		pub(i, 230);
		cr_expect_leq(size_of(tfile), 1000, "after line %u", i);
	}
	cr_expect_eq(strm->st.file_rotations, 4);
	cr_expect_eq(strm->st.sink_dropped[1], 0);
	/* FILE.3 (oldest) .. FILE.1, FILE: 4 lines each, in order, none split; FILE.4 never made */
	for (int k = 3; k >= 0; k--) {
		int n;

		if (k)
			snprintf(path, sizeof(path), "%s.%d", tfile, k);
		else
			snprintf(path, sizeof(path), "%s", tfile);
		n = seqs_of(path, seqs, 64);
		cr_expect_eq(n, 4, "%s holds %d lines", path, n);
		cr_expect_leq(size_of(path), 1000, "%s", path);
		for (int i = 0; i < n && i < 64; i++)
			cr_expect_eq(seqs[i], next++, "%s line %d", path, i);
	}
	snprintf(path, sizeof(path), "%s.4", tfile);
	cr_expect_eq(size_of(path), -1, "only file_keep rotated files are kept");
	custode_stream_close(strm);
	rm_tmpdir();
}

Test(stream_file, exact_fit_does_not_rotate)
{
	int seqs[8];

	tmpdir();
	setup(tfile, 1000, 2, 0);
	pub(0, 500);
	pub(1, 500); /* exactly 1000 bytes: still one file */
	cr_expect_eq(size_of(tfile), 1000);
	cr_expect_eq(strm->st.file_rotations, 0);
	pub(2, 1);
	cr_expect_eq(strm->st.file_rotations, 1);
	cr_expect_eq(seqs_of(tfile, seqs, 8), 1);
	cr_expect_eq(seqs[0], 2);
	custode_stream_close(strm);
	rm_tmpdir();
}

Test(stream_file, a_line_longer_than_the_limit_is_kept_whole)
{
	char path[256];
	int seqs[8];

	tmpdir();
	setup(tfile, 1000, 2, 0);
	pub(0, 100);
	pub(1, 5000); /* rotates first, then goes whole into a file of its own */
	cr_expect_eq(size_of(tfile), 5000);
	cr_expect_eq(seqs_of(tfile, seqs, 8), 1);
	cr_expect_eq(seqs[0], 1);
	pub(2, 100);
	cr_expect_eq(seqs_of(tfile, seqs, 8), 1);
	cr_expect_eq(seqs[0], 2);
	snprintf(path, sizeof(path), "%s.1", tfile);
	cr_expect_eq(seqs_of(path, seqs, 8), 1);
	cr_expect_eq(seqs[0], 1);
	snprintf(path, sizeof(path), "%s.2", tfile);
	cr_expect_eq(seqs_of(path, seqs, 8), 1);
	cr_expect_eq(seqs[0], 0);
	custode_stream_close(strm);
	rm_tmpdir();
}

Test(stream_file, keep_zero_removes)
{
	char path[256];
	int seqs[8];

	tmpdir();
	setup(tfile, 300, 0, 0);
	pub(0, 200);
	pub(1, 200);
	cr_expect_eq(strm->st.file_rotations, 1);
	cr_expect_eq(seqs_of(tfile, seqs, 8), 1);
	cr_expect_eq(seqs[0], 1);
	snprintf(path, sizeof(path), "%s.1", tfile);
	cr_expect_eq(size_of(path), -1);
	custode_stream_close(strm);
	rm_tmpdir();
}

Test(stream_file, appends_to_an_existing_file_and_counts_it)
{
	char path[256];
	int fd, seqs[8];

	tmpdir();
	fd = open(tfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	for (int i = 0; i < 9; i++)
		cr_assert_eq(write(fd, "{\"seq\":99999999999}\n", 20), 20); /* 180 bytes from an earlier daemon */
	close(fd);
	setup(tfile, 400, 2, 0);
	pub(0, 200);
	cr_expect_eq(size_of(tfile), 380, "appended");
	pub(1, 200); /* 380 + 200 > 400 */
	cr_expect_eq(strm->st.file_rotations, 1);
	snprintf(path, sizeof(path), "%s.1", tfile);
	cr_expect_eq(seqs_of(path, seqs, 8), 10, "the earlier lines and ours, together");
	cr_expect_eq(seqs_of(tfile, seqs, 8), 1);
	custode_stream_close(strm);
	rm_tmpdir();
}

Test(stream_file, mode_and_unwritable_path)
{
	char sub[160];
	struct stat st;
	int seqs[8];

	tmpdir();
	snprintf(sub, sizeof(sub), "%s/later/events.jsonl", tdir);
	setup(NULL, 1000, 2, 0);
	strm->o.file = sub;
	pub(0, 100);
	pub(1, 100);
	cr_expect_eq(strm->st.sink_dropped[1], 2, "lines the file could not take are counted");
	snprintf(sub, sizeof(sub), "%s/later", tdir);
	cr_assert_eq(mkdir(sub, 0700), 0);
	snprintf(sub, sizeof(sub), "%s/later/events.jsonl", tdir);
	pub(2, 100);
	cr_expect_eq(strm->st.sink_dropped[1], 2, "the file is opened again when it can be");
	cr_expect_eq(seqs_of(sub, seqs, 8), 1);
	cr_expect_eq(seqs[0], 2);
	cr_assert_eq(stat(sub, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0600, "denial records are not for everyone");
	custode_stream_close(strm);
	rm_tmpdir();
}

/* The file's whole text (malloc'd), or NULL. */
static char *slurp(const char *path, size_t *len)
{
	char *text = NULL;

	if (custode_read_file(path, 64u << 20, &text, len) < 0)
		return NULL;
	return text;
}

/*
 * BUG (stream.c, file_write): a write that took only part of a line (disk
 * full) left that part in the file, and the next record was appended to it:
 * two lines lost to every reader, one of them counted. The part is cut off
 * again (the line counted as dropped) so the file only ever holds whole
 * lines. A file size limit gives the short write a full disk would.
 */
Test(stream_file, short_write_leaves_no_torn_line)
{
	struct rlimit old, lim;
	int seqs[16];

	tmpdir();
	setup(tfile, 1u << 20, 2, 0);
	signal(SIGXFSZ, SIG_IGN); /* EFBIG instead */
	pub(0, 300);
	pub(1, 300);
	pub(2, 300);
	cr_assert_eq(size_of(tfile), 900);
	cr_assert_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 1000;
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
	pub(3, 300); /* 100 bytes fit, then EFBIG */
	cr_expect_eq(strm->st.sink_dropped[1], 1, "the line that did not fit is counted");
	cr_expect_eq(size_of(tfile), 900, "and nothing of it stays in the file");
	pub(4, 300); /* does not fit at all: nothing written */
	cr_expect_eq(strm->st.sink_dropped[1], 2);
	cr_expect_eq(size_of(tfile), 900);
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
	pub(5, 300);
	cr_expect_eq(strm->st.sink_dropped[1], 2);
	cr_expect_eq(strm->file_size, 1200, "the size kept is the file's");
	cr_expect_eq(seqs_of(tfile, seqs, 16), 4, "whole lines only");
	cr_expect(seqs[0] == 0 && seqs[1] == 1 && seqs[2] == 2 && seqs[3] == 5, "%d %d %d %d", seqs[0], seqs[1], seqs[2],
		  seqs[3]);
	custode_stream_close(strm);
	rm_tmpdir();
}

/* A file that ends inside a line (a writer killed mid-line): our first record is not glued to it. */
Test(stream_file, file_ending_inside_a_line_is_ended_first)
{
	static const char before[] = "{\"seq\":90}\n{\"seq\":9";
	char *text, *last;
	size_t len;
	json_t *o;
	int fd;

	tmpdir();
	fd = open(tfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, before, sizeof(before) - 1), (ssize_t)sizeof(before) - 1);
	close(fd);
	setup(tfile, 1u << 20, 2, 0);
	pub(7, 100);
	text = slurp(tfile, &len);
	cr_assert_not_null(text);
	cr_assert(len > sizeof(before) && text[len - 1] == '\n');
	cr_expect_eq(memcmp(text, before, sizeof(before) - 1), 0, "what was there is kept");
	cr_expect_eq(text[sizeof(before) - 1], '\n', "the cut line is ended");
	text[len - 1] = 0;
	last = strrchr(text, '\n') + 1;
	o = json_loads(last, 0, NULL);
	cr_expect_eq(json_integer_value(json_object_get(o, "seq")), 7, "our record is a line of its own: %s", last);
	json_decref(o);
	free(text);
	custode_stream_close(strm);
	rm_tmpdir();
}

/*
 * BUG (stream.c): after the events file was renamed (logrotate) or removed,
 * the daemon went on writing into the renamed file, or into a removed one
 * nobody could read, until it restarted. The tick notices the path no
 * longer names the file and opens it again; a truncation (logrotate's
 * copytruncate) needs nothing: lines go on at the new end (O_APPEND).
 */
Test(stream_file, renamed_or_removed_file_reopened_by_the_tick)
{
	char moved[160];
	struct stat st;
	int seqs[8];

	tmpdir();
	snprintf(moved, sizeof(moved), "%s.rotated", tfile);
	setup(tfile, 1u << 20, 2, 0);
	pub(0, 200);
	stream_tick(strm);
	cr_expect_eq(strm->st.file_reopens, 0, "nothing happened to the file");
	/* logrotate's create mode: rename, then the writer should open the name again */
	cr_assert_eq(rename(tfile, moved), 0);
	pub(1, 200); /* before the tick: still into the renamed file, lost to nobody */
	stream_tick(strm);
	cr_expect_eq(strm->st.file_reopens, 1);
	pub(2, 200);
	cr_expect_eq(seqs_of(moved, seqs, 8), 2);
	cr_expect_eq(seqs[1], 1);
	cr_expect_eq(seqs_of(tfile, seqs, 8), 1, "the name is a new file");
	cr_expect_eq(seqs[0], 2);
	cr_assert_eq(stat(tfile, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0600, "with the same mode");
	cr_expect_eq(strm->file_size, (uint64_t)st.st_size, "its size counted from the new file");
	/* removed */
	cr_assert_eq(unlink(tfile), 0);
	stream_tick(strm);
	cr_expect_eq(strm->st.file_reopens, 2);
	pub(3, 200);
	cr_expect_eq(seqs_of(tfile, seqs, 8), 1);
	cr_expect_eq(seqs[0], 3);
	/* copytruncate: the same file, emptied; the next line starts it (no hole), and the size follows */
	cr_assert_eq(truncate(tfile, 0), 0);
	stream_tick(strm);
	cr_expect_eq(strm->st.file_reopens, 2, "the same file: not reopened");
	cr_expect_eq(strm->file_size, 0);
	pub(4, 200);
	cr_expect_eq(size_of(tfile), 200, "no hole of zeros before it");
	cr_expect_eq(seqs_of(tfile, seqs, 8), 1);
	cr_expect_eq(seqs[0], 4);
	custode_stream_close(strm);
	rm_tmpdir();
}

/*
 * BUG (stream.c, file_rotate): after --events-file-keep was lowered, the
 * rotated files past the new count (FILE.(keep+1) ..) stayed forever.
 */
Test(stream_file, lowered_keep_removes_rotated_files_past_it)
{
	char path[256];

	tmpdir();
	for (int k = 1; k <= 6; k++) {
		int fd;

		snprintf(path, sizeof(path), "%s.%d", tfile, k);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		cr_assert_geq(fd, 0);
		close(fd);
	}
	snprintf(path, sizeof(path), "%s.9", tfile); /* past a gap: not ours to look for */
	close(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600));
	setup(tfile, 300, 2, 0);
	pub(0, 200);
	pub(1, 200);
	cr_expect_eq(strm->st.file_rotations, 1);
	for (int k = 1; k <= 6; k++) {
		snprintf(path, sizeof(path), "%s.%d", tfile, k);
		if (k <= 2)
			cr_expect_geq(size_of(path), 0, "%s kept", path);
		else
			cr_expect_eq(size_of(path), -1, "%s removed", path);
	}
	snprintf(path, sizeof(path), "%s.9", tfile);
	cr_expect_geq(size_of(path), 0);
	custode_stream_close(strm);
	rm_tmpdir();
}

Test(stream_file, keep_zero_removes_every_rotated_file)
{
	char path[256];

	tmpdir();
	snprintf(path, sizeof(path), "%s.1", tfile);
	close(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600));
	snprintf(path, sizeof(path), "%s.2", tfile);
	close(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600));
	setup(tfile, 300, 0, 0);
	pub(0, 200);
	pub(1, 200);
	cr_expect_eq(strm->st.file_rotations, 1);
	cr_expect_eq(size_of(path), -1);
	snprintf(path, sizeof(path), "%s.1", tfile);
	cr_expect_eq(size_of(path), -1);
	custode_stream_close(strm);
	rm_tmpdir();
}

/* ---- the stdout sink: non-blocking, losses counted ---- */

static int pipe_sink(int *rfd)
{
	int p[2];

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	cr_assert_eq(fcntl(p[1], F_SETFL, O_NONBLOCK), 0);
	cr_assert_eq(fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
	strm->out_none = false;
	strm->out.fd = p[1];
	strm->out.pollable = true;
	*rfd = p[0];
	return p[1];
}

static size_t queued_lines(void)
{
	size_t n = 0;

	for (size_t i = 0; i < strm->out.len; i++)
		n += strm->out.buf[i] == '\n';
	return n;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

Test(stream_stdout, full_pipe_never_blocks_and_counts_losses)
{
	int rfd, seq = 0, got = 0, last = -1;
	double t0;
	char *all, *save = NULL;
	size_t cap = 16u << 20, len = 0;
	unsigned published, dropped;

	cr_assert_eq(custode_loop_init(&loop), 0);
	setup(NULL, 0, 0, 0);
	pipe_sink(&rfd);
	alarm(60); /* a sink that blocks would hang here: fail instead */
	t0 = now_s();
	/* nobody reads: the pipe fills, then the queue, then lines are lost */
	while (!strm->out.dropped && seq < 20000)
		pub((unsigned)seq++, 1000);
	cr_assert_gt(strm->out.dropped, 0, "the 4 MiB queue ends somewhere");
	cr_expect(strm->out.watching, "the loop waits for the pipe to drain");
	for (int i = 0; i < 10; i++)
		pub((unsigned)seq++, 1000);
	cr_expect_eq(strm->out.dropped, 11, "each line that did not fit is one loss");
	cr_expect_leq(strm->out.len, SINK_QUEUE_MAX);
	cr_expect_lt(now_s() - t0, 30.0, "publishing did not wait for the reader");
	published = (unsigned)seq;
	dropped = (unsigned)strm->out.dropped;

	/* the reader comes back: everything queued arrives, whole and in order */
	all = malloc(cap);
	cr_assert_not_null(all);
	for (;;) {
		ssize_t n = read(rfd, all + len, cap - len - 1);

		if (n > 0) {
			len += (size_t)n;
			continue;
		}
		if (!strm->out.len)
			break;
		stream_outq_event(&strm->out, EPOLLOUT);
	}
	all[len] = 0;
	cr_expect(len && all[len - 1] == '\n', "no torn line at the end");
	for (char *line = strtok_r(all, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		json_t *o = json_loads(line, 0, NULL);
		int s;

		cr_assert(json_is_object(o), "a torn or mixed line: %.60s", line);
		s = (int)json_integer_value(json_object_get(o, "seq"));
		cr_expect_eq(s, last + 1, "in order, nothing missing that was not counted");
		last = s;
		got++;
		json_decref(o);
	}
	cr_expect_eq((unsigned)got + dropped, published, "delivered + counted losses = published");
	cr_expect_not(strm->out.watching, "nothing queued: nothing to wait for");
	free(all);
	close(rfd);
	custode_stream_close(strm);
	custode_loop_fini(loop);
	loop = NULL;
}

/*
 * BUG (stream.c, outq_flush/outq_event): when the reader left, the whole
 * queue — possibly thousands of lines — was dropped and counted as one
 * loss. The count is of lines (custode_stream_stats: "lines a slow or gone
 * sink lost"), so every queued line counts.
 */
Test(stream_stdout, reader_gone_counts_every_queued_line)
{
	int rfd, seq = 0;
	size_t queued;

	cr_assert_eq(custode_loop_init(&loop), 0);
	setup(NULL, 0, 0, 0);
	pipe_sink(&rfd);
	while (!strm->out.len)
		pub((unsigned)seq++, 700);
	for (int i = 0; i < 4; i++)
		pub((unsigned)seq++, 700);
	queued = queued_lines();
	cr_assert_geq(queued, 5);
	cr_assert_eq(strm->out.dropped, 0);
	close(rfd); /* the reader leaves (SIGPIPE is ignored, as in the daemon) */
	pub((unsigned)seq++, 700);
	cr_expect(strm->out.gone);
	cr_expect_eq(strm->out.len, 0);
	cr_expect_eq(strm->out.dropped, queued + 1, "%zu queued + 1 new line lost, counted %llu", queued,
		     (unsigned long long)strm->out.dropped);
	pub((unsigned)seq++, 700);
	cr_expect_eq(strm->out.dropped, queued + 2, "and each line after");
	custode_stream_close(strm);
	custode_loop_fini(loop);
	loop = NULL;
}

Test(stream_stdout, hangup_event_counts_every_queued_line)
{
	int rfd, seq = 0;
	size_t queued;

	cr_assert_eq(custode_loop_init(&loop), 0);
	setup(NULL, 0, 0, 0);
	pipe_sink(&rfd);
	while (!strm->out.len)
		pub((unsigned)seq++, 700);
	for (int i = 0; i < 3; i++)
		pub((unsigned)seq++, 700);
	queued = queued_lines();
	close(rfd);
	stream_outq_event(&strm->out, EPOLLERR | EPOLLOUT); /* what epoll says for a pipe whose reader left */
	cr_expect(strm->out.gone);
	cr_expect_not(strm->out.watching);
	cr_expect_eq(strm->out.dropped, queued);
	custode_stream_close(strm);
	custode_loop_fini(loop);
	loop = NULL;
}

Test(stream_stdout, absent_sink_counts_and_never_blocks)
{
	setup(NULL, 0, 0, 4);
	strm->out_none = false;
	strm->out.gone = true;
	for (unsigned i = 0; i < 5; i++)
		pub(i, 100);
	cr_expect_eq(strm->out.dropped, 5);
	cr_expect_eq(strm->hist_n, 4, "the history keeps records whatever the sinks do");
	custode_stream_close(strm);
}

Test(stream_stdout, stdout_pipe_reopened_nonblocking_callers_fd_untouched)
{
	int p[2], saved = dup(1), fl1;

	cr_assert_geq(saved, 0);
	setup(NULL, 0, 0, 0);
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	cr_assert_eq(dup2(p[1], 1), 1);
	stream_stdout_open(strm);
	fl1 = fcntl(1, F_GETFL);
	cr_expect(strm->out.pollable);
	cr_expect_neq(strm->out.fd, 1, "a file description of its own");
	cr_expect(fcntl(strm->out.fd, F_GETFL) & O_NONBLOCK, "written without blocking");
	cr_expect_not(fl1 & O_NONBLOCK, "the caller's stdout stays blocking");
	/* and it is the same pipe */
	cr_assert_eq(write(strm->out.fd, "x\n", 2), 2);
	{
		char b[4] = "";

		cr_expect_eq(read(p[0], b, sizeof(b)), 2);
		cr_expect_eq(b[0], 'x');
	}
	close(strm->out.fd);
	memset(&strm->out, 0, sizeof(strm->out));
	dup2(saved, 1);
	close(saved);
	close(p[0]);
	close(p[1]);
	custode_stream_close(strm);
}

Test(stream_stdout, stdout_regular_file_written_directly)
{
	char path[160];
	int saved = dup(1), fd, seqs[8];

	tmpdir();
	snprintf(path, sizeof(path), "%s/out", tdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(dup2(fd, 1), 1);
	close(fd);
	setup(NULL, 0, 0, 0);
	strm->out_none = false;
	stream_stdout_open(strm);
	cr_expect_not(strm->out.pollable);
	cr_expect_eq(strm->out.fd, 1);
	pub(7, 300);
	pub(8, 300);
	dup2(saved, 1);
	close(saved);
	cr_expect_eq(seqs_of(path, seqs, 8), 2);
	cr_expect_eq(seqs[1], 8);
	custode_stream_close(strm);
	rm_tmpdir();
}

/* ---- history and followers ---- */

struct taken {
	int n;
	int seq[16];
	bool newline;
};

static bool take(void *ctx, const char *line, size_t len)
{
	struct taken *t = ctx;
	json_t *o = json_loadb(line, len, 0, NULL);

	cr_expect(json_is_object(o), "a record line: %.*s", (int)len, line);
	if (memchr(line, '\n', len))
		t->newline = true;
	if (t->n < 16)
		t->seq[t->n] = (int)json_integer_value(json_object_get(o, "seq"));
	t->n++;
	json_decref(o);
	return true;
}

static void pub_r(unsigned seq, const char *reason, const char *run)
{
	json_t *o = rec(seq, reason, run, 0);

	stream_publish(strm, o);
	json_decref(o);
}

Test(stream_history, replay_oldest_first_bounded_and_filtered)
{
	struct custode_event_filter f;
	struct taken t = {0};

	setup(NULL, 0, 0, 3);
	pub_r(0, "file.read.denied", "0000000000000001");
	pub_r(1, "net.loopback", "0000000000000002");
	pub_r(2, "file.write.denied", "0000000000000001");
	pub_r(3, "net.egress.denied", "0000000000000001");
	pub_r(4, "file.read.denied", "0000000000000002");
	cr_expect_eq(custode_stream_replay(strm, NULL, take, &t), 3, "the last 3");
	cr_expect(t.seq[0] == 2 && t.seq[1] == 3 && t.seq[2] == 4);
	cr_expect_not(t.newline, "lines are given without their newline");

	memset(&f, 0, sizeof(f));
	snprintf(f.reason, sizeof(f.reason), "file.*");
	memset(&t, 0, sizeof(t));
	cr_expect_eq(custode_stream_replay(strm, &f, take, &t), 2);
	cr_expect(t.seq[0] == 2 && t.seq[1] == 4);

	memset(&f, 0, sizeof(f));
	f.has_run = true;
	f.run_id = 1;
	memset(&t, 0, sizeof(t));
	cr_expect_eq(custode_stream_replay(strm, &f, take, &t), 2);
	cr_expect(t.seq[0] == 2 && t.seq[1] == 3);

	memset(&f, 0, sizeof(f));
	f.has_since = true;
	custode_time_parse_ns("2026-01-01T00:00:00.000001Z", &f.since_wall_ns);
	memset(&t, 0, sizeof(t));
	cr_expect_eq(custode_stream_replay(strm, &f, take, &t), 0, "all records are from before");
	custode_stream_close(strm);
}

Test(stream_history, no_history)
{
	struct taken t = {0};

	setup(NULL, 0, 0, 0);
	pub(0, 100);
	cr_expect_eq(custode_stream_replay(strm, NULL, take, &t), 0);
	custode_stream_close(strm);
}

Test(stream_history, followers_get_matching_records_until_they_leave)
{
	struct custode_event_filter f;
	struct taken t = {0}, all = {0};
	struct custode_stream_stats st;
	int h, h2, hs[MAX_FOLLOWERS];

	setup(NULL, 0, 0, 8);
	memset(&f, 0, sizeof(f));
	snprintf(f.reason, sizeof(f.reason), "net.*");
	h = custode_stream_follow(strm, &f, take, &t);
	cr_assert_geq(h, 0);
	memset(&f, 0, sizeof(f));
	h2 = custode_stream_follow(strm, &f, take, &all);
	cr_assert_geq(h2, 0);
	pub_r(0, "file.read.denied", NULL);
	pub_r(1, "net.loopback", NULL);
	custode_stream_stats(strm, &st);
	cr_expect_eq(st.followers, 2);
	custode_stream_unfollow(strm, h);
	pub_r(2, "net.loopback", NULL);
	cr_expect_eq(t.n, 1);
	cr_expect_eq(t.seq[0], 1);
	cr_expect_eq(all.n, 3);
	custode_stream_unfollow(strm, h2);
	custode_stream_unfollow(strm, -1); /* harmless */
	custode_stream_unfollow(strm, MAX_FOLLOWERS);
	for (int i = 0; i < MAX_FOLLOWERS; i++)
		cr_assert_geq(hs[i] = custode_stream_follow(strm, &f, take, &all), 0);
	cr_expect_eq(custode_stream_follow(strm, &f, take, &all), -ENOSPC);
	custode_stream_unfollow(strm, hs[5]);
	cr_expect_eq(custode_stream_follow(strm, &f, take, &all), hs[5]);
	custode_stream_close(strm);
}

/* A reader that takes up to `room` records, then is full. */
struct slow {
	struct taken t;
	int room;
};

static bool take_some(void *ctx, const char *line, size_t len)
{
	struct slow *s = ctx;

	if (s->room <= 0)
		return false;
	s->room--;
	return take(&s->t, line, len);
}

Test(stream_history, cursor_resumes_where_the_reader_stopped)
{
	struct slow s = {0};
	size_t n = 0;
	int h;

	setup(NULL, 0, 0, 8);
	for (unsigned i = 0; i < 5; i++)
		pub(i, 0);
	h = custode_stream_cursor_open(strm, NULL);
	cr_assert_geq(h, 0);
	s.room = 2;
	cr_expect_not(custode_stream_cursor_next(strm, h, take_some, &s, &n), "the reader is full");
	cr_expect_eq(n, 2);
	s.room = 2;
	cr_expect_not(custode_stream_cursor_next(strm, h, take_some, &s, &n));
	pub(5, 0); /* the history moves on meanwhile */
	s.room = 10;
	cr_expect(custode_stream_cursor_next(strm, h, take_some, &s, &n), "caught up");
	cr_expect_eq(n, 6);
	cr_assert_eq(s.t.n, 6);
	for (int i = 0; i < 6; i++)
		cr_expect_eq(s.t.seq[i], i, "each once, in order");
	cr_expect_eq(custode_stream_cursor_lost(strm, h), 0);
	cr_expect(custode_stream_cursor_next(strm, h, take_some, &s, &n), "nothing more");
	cr_expect_eq(n, 6);
	custode_stream_cursor_close(strm, h);
	custode_stream_cursor_close(strm, h); /* harmless */
	custode_stream_cursor_close(strm, -1);
	custode_stream_cursor_close(strm, MAX_CURSORS);
	custode_stream_close(strm);
}

Test(stream_history, cursor_counts_matching_records_it_lost)
{
	struct custode_event_filter f;
	struct slow s = {0};
	size_t n = 0;
	int h, all;

	setup(NULL, 0, 0, 4);
	memset(&f, 0, sizeof(f));
	snprintf(f.reason, sizeof(f.reason), "net.*");
	pub_r(0, "net.loopback", NULL);
	pub_r(1, "file.read.denied", NULL);
	pub_r(2, "net.loopback", NULL);
	h = custode_stream_cursor_open(strm, &f);
	all = custode_stream_cursor_open(strm, NULL);
	cr_assert(h >= 0 && all >= 0 && h != all);
	s.room = 1;
	cr_expect_not(custode_stream_cursor_next(strm, h, take_some, &s, &n));
	cr_expect_eq(s.t.seq[0], 0);
	/* 4 more: 1 and 2 leave the history before the cursor reached them; only 2 was for it */
	pub_r(3, "file.read.denied", NULL);
	pub_r(4, "net.loopback", NULL);
	pub_r(5, "file.read.denied", NULL);
	pub_r(6, "net.loopback", NULL);
	cr_expect_eq(custode_stream_cursor_lost(strm, h), 1);
	cr_expect_eq(custode_stream_cursor_lost(strm, h), 0, "told once");
	cr_expect_eq(custode_stream_cursor_lost(strm, all), 3, "0, 1 and 2, unfiltered");
	s.room = 10;
	cr_expect(custode_stream_cursor_next(strm, h, take_some, &s, &n));
	cr_expect_eq(s.t.n, 3);
	cr_expect(s.t.seq[1] == 4 && s.t.seq[2] == 6, "%d %d", s.t.seq[1], s.t.seq[2]);
	custode_stream_cursor_close(strm, h);
	custode_stream_cursor_close(strm, all);
	/* all slots: the next is refused */
	for (int i = 0; i < MAX_CURSORS; i++)
		cr_assert_geq(custode_stream_cursor_open(strm, NULL), 0);
	cr_expect_eq(custode_stream_cursor_open(strm, NULL), -ENOSPC);
	custode_stream_close(strm);
}

Test(stream_history, cursor_without_history)
{
	size_t n = 0;
	struct taken t = {0};
	int h;

	setup(NULL, 0, 0, 0);
	pub(0, 10);
	h = custode_stream_cursor_open(strm, NULL);
	cr_assert_geq(h, 0);
	cr_expect(custode_stream_cursor_next(strm, h, take, &t, &n));
	cr_expect_eq(n, 0);
	cr_expect_eq(custode_stream_cursor_lost(strm, h), 0);
	custode_stream_close(strm);
}

Test(stream_history, stats_count_decisions)
{
	struct custode_stream_stats st;
	json_t *o;

	setup(NULL, 0, 0, 8);
	pub(0, 100);
	o = json_pack("{s:i, s:s, s:s, s:s, s:i, s:i, s:[i]}", "version", 2, "type", "dropped", "source", "daemon", "time",
		      "2026-01-01T00:00:00.000000Z", "count", 1, "total", 1, "per_cpu", 1);
	stream_publish(strm, o);
	json_decref(o);
	custode_stream_stats(strm, &st);
	cr_expect_eq(st.records, 1, "a dropped record is no decision");
	cr_expect_eq(st.history, 2);
	custode_stream_close(strm);
}

/* ---- kernel throttle records ---- */

static void kernel_throttle_at(uint64_t count, uint64_t total, uint64_t boot_ns);

static void kernel_throttle(uint64_t count, uint64_t total)
{
	kernel_throttle_at(count, total, 1000);
}

static void kernel_throttle_at(uint64_t count, uint64_t total, uint64_t boot_ns)
{
	struct custode_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.version = CUSTODE_EVENT_VERSION;
	ev.size = sizeof(ev);
	ev.hook = CUSTODE_HOOK_FILE_OPEN;
	ev.reason = CUSTODE_REASON_FILE_READ_DENIED;
	ev.flags = CUSTODE_EVENT_ENFORCED | CUSTODE_EVENT_THROTTLE;
	ev.object = CUSTODE_OBJECT_THROTTLE;
	ev.run_id = 0x77;
	ev.boot_ns = boot_ns;
	ev.obj.throttle.count = count;
	ev.obj.throttle.total = total;
	ev.obj.throttle.since_ns = 500;
	ev.obj.throttle.run_cgid = 4242;
	cr_assert_eq(stream_on_record(strm, &ev, sizeof(ev)), 0);
}

static bool take_count(void *ctx, const char *line, size_t len)
{
	struct taken *t = ctx;
	json_t *o = json_loadb(line, len, 0, NULL);

	if (t->n < 16)
		t->seq[t->n] = (int)json_integer_value(json_object_get(json_object_get(o, "throttle"), "count"));
	t->n++;
	json_decref(o);
	return true;
}

Test(stream_throttle, kernel_records_reconciled_by_totals)
{
	struct taken t = {0};
	struct reconcile *r;

	setup(NULL, 0, 0, 16);
	kernel_throttle(10, 10);
	kernel_throttle(5, 15);
	kernel_throttle(5, 15); /* nothing new: not published */
	/* the daemon reported up to 20 itself (a quiet window's summary) */
	r = stream_rec_slot(strm, 4242, CUSTODE_REASON_FILE_READ_DENIED, false);
	cr_assert_not_null(r);
	r->total = 20;
	kernel_throttle(10, 25); /* 5 of these 10 were said already */
	kernel_throttle(3, 3);   /* the kernel's entry started again */
	cr_expect_eq(custode_stream_replay(strm, NULL, take_count, &t), 4);
	cr_expect(t.seq[0] == 10 && t.seq[1] == 5 && t.seq[2] == 5 && t.seq[3] == 3, "counts %d %d %d %d", t.seq[0],
		  t.seq[1], t.seq[2], t.seq[3]);
	cr_expect_eq(strm->st.throttle_records, 4);
	cr_expect_eq(strm->st.throttled, 23);
	cr_expect_eq(strm->st.records, 0);
	/* the run is remembered by its cgroup for summaries after it ends */
	{
		__u64 version;

		cr_expect_eq(stream_run_id_of(strm, 4242, &version), 0x77);
	}
	custode_stream_close(strm);
}

/* Runs remembered after they end: KNOWN_MAX of them; each new one past that makes one other forgotten, never itself. */
Test(stream_throttle, known_runs_full_forgets_one_per_new_run)
{
	size_t remembered = 0;
	__u64 version;

	setup(NULL, 0, 0, 4);
	for (__u64 c = 1; c <= KNOWN_MAX + 100; c++) {
		custode_stream_note_run(strm, c, 0x1000 + c, 3);
		cr_assert_eq(stream_run_id_of(strm, c, &version), 0x1000 + c, "run %llu just seen", (unsigned long long)c);
		cr_assert_eq(version, 3);
	}
	cr_expect_eq(custode_table_count(&strm->known), KNOWN_MAX);
	for (__u64 c = 1; c <= KNOWN_MAX + 100; c++) {
		__u64 id = stream_run_id_of(strm, c, &version);

		cr_assert(id == 0 || id == 0x1000 + c, "run %llu: its own id or none", (unsigned long long)c);
		remembered += id != 0;
	}
	cr_expect_eq(remembered, KNOWN_MAX);
	custode_stream_note_run(strm, 1, 0x5555, 4); /* seen again (remembered or not): its id now */
	cr_expect_eq(stream_run_id_of(strm, 1, &version), 0x5555);
	cr_expect_eq(version, 4);
	custode_stream_close(strm);
}

/* A run's policy version is remembered whole: 2^32 + 1 is not 1 (issue 16). */
Test(stream_throttle, known_run_keeps_64_bit_version)
{
	__u64 version;

	setup(NULL, 0, 0, 4);
	custode_stream_note_run(strm, 7, 0x77, 4294967297ull);
	cr_assert_eq(stream_run_id_of(strm, 7, &version), 0x77);
	cr_expect_eq(version, 4294967297ull, "version %llu", (unsigned long long)version);
	custode_stream_close(strm);
}

Test(stream_throttle, bad_records_counted)
{
	unsigned char junk[200];

	setup(NULL, 0, 0, 4);
	memset(junk, 0xee, sizeof(junk));
	cr_assert_eq(stream_on_record(strm, junk, sizeof(junk)), 0);
	cr_assert_eq(stream_on_record(strm, junk, 10), 0);
	cr_expect_eq(strm->st.bad, 2);
	cr_expect_eq(strm->hist_n, 0);
	custode_stream_close(strm);
}

/* ---- for test_daemon_control.c (the same binary): a history the control server replays ---- */

struct custode_stream *custode_test_stream_history(size_t n);
void custode_test_stream_publish(struct custode_stream *s, unsigned seq, const char *reason, size_t size);

struct custode_stream *custode_test_stream_history(size_t n)
{
	setup(NULL, 0, 0, n);
	return strm;
}

void custode_test_stream_publish(struct custode_stream *s, unsigned seq, const char *reason, size_t size)
{
	json_t *o = rec(seq, reason, NULL, size);

	stream_publish(s, o);
	json_decref(o);
}

/* ---- a fake kernel throttle map (LRU hash): entries in insertion order ---- */

#define FAKE_MAX 40000

static struct fake_entry {
	struct custode_throttle_key k;
	struct custode_throttle v;
	bool live;
} *fake;
static size_t fake_n, fake_cursor;
static int fake_fd = -1;
static long fake_fail_after = -1; /* get_next_key fails (EIO) after this many keys; -1 never */
static long fake_calls;

static bool fake_key_eq(const struct custode_throttle_key *a, const struct custode_throttle_key *b)
{
	return a->run_cgid == b->run_cgid && a->reason == b->reason;
}

static struct fake_entry *fake_find(const struct custode_throttle_key *k)
{
	if (fake_cursor < fake_n && fake[fake_cursor].live && fake_key_eq(&fake[fake_cursor].k, k))
		return &fake[fake_cursor];
	for (size_t i = 0; i < fake_n; i++)
		if (fake[i].live && fake_key_eq(&fake[i].k, k))
			return &fake[i];
	return NULL;
}

/* As the kernel's hash map: no prev, or a prev that is gone, starts from the first key. */
static int fake_map_get_next_key(void *ctx, int fd, const void *key, void *next_key)
{
	const struct custode_throttle_key *prev = key;
	struct fake_entry *e;
	size_t i = 0;

	(void)ctx;
	if (fd != fake_fd)
		return bpf_map_get_next_key(fd, key, next_key);
	if (fake_fail_after >= 0 && fake_calls++ >= fake_fail_after) {
		errno = EIO;
		return -EIO;
	}
	if (prev && (e = fake_find(prev)))
		i = (size_t)(e - fake) + 1;
	for (; i < fake_n; i++) {
		if (fake[i].live) {
			fake_cursor = i;
			memcpy(next_key, &fake[i].k, sizeof(fake[i].k));
			return 0;
		}
	}
	errno = ENOENT;
	return -ENOENT;
}

static int fake_map_lookup_elem(void *ctx, int fd, const void *key, void *value)
{
	struct fake_entry *e;

	(void)ctx;
	if (fd != fake_fd)
		return bpf_map_lookup_elem(fd, key, value);
	if (!(e = fake_find(key))) {
		errno = ENOENT;
		return -ENOENT;
	}
	memcpy(value, &e->v, sizeof(e->v));
	return 0;
}

/* The stream's map reads: the fake for its fd, libbpf's for any other. */
static const struct custode_stream_map_ops fake_maps = {
	.get_next_key = fake_map_get_next_key,
	.lookup_elem = fake_map_lookup_elem,
};

/* The fake map as strm->throttle_fd (a real fd: custode_stream_close closes it). */
static void fake_open(void)
{
	fake = calloc(FAKE_MAX, sizeof(*fake));
	cr_assert_not_null(fake);
	fake_n = fake_cursor = 0;
	fake_fail_after = -1;
	fake_calls = 0;
	fake_fd = strm->throttle_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fake_fd, 0);
}

static void fake_close(void)
{
	custode_stream_close(strm);
	fake_fd = -1;
	free(fake);
	fake = NULL;
}

/* A kernel entry whose window is long over (started at boot). */
static struct fake_entry *fake_put(__u64 cgid, __u32 reason, __u64 suppressed)
{
	struct custode_throttle_key k = {.run_cgid = cgid, .reason = reason};
	struct fake_entry *e = fake_find(&k);

	if (!e) {
		cr_assert_lt(fake_n, FAKE_MAX);
		e = &fake[fake_n++];
		e->k = k;
		e->live = true;
	}
	e->v.suppressed = suppressed;
	e->v.window_start_ns = 0;
	return e;
}

/* Evicted (or gone with its run). */
static void fake_del(__u64 cgid, __u32 reason)
{
	struct custode_throttle_key k = {.run_cgid = cgid, .reason = reason};
	struct fake_entry *e = fake_find(&k);

	if (e)
		e->live = false;
}

static void fake_clear(void)
{
	fake_n = fake_cursor = 0;
}

#define READ_DENIED CUSTODE_REASON_FILE_READ_DENIED
#define WRITE_DENIED CUSTODE_REASON_FILE_WRITE_DENIED

/* A pair's home slot in the reconcile table: util/table.h's default hash of its key, its low bits. */
static size_t rec_home(__u64 cgid, __u32 reason)
{
	struct custode_throttle_key k;

	memset(&k, 0, sizeof(k));
	k.run_cgid = cgid;
	k.reason = reason;
	return (size_t)custode_hash_bytes(&k, sizeof(k)) & (strm->rec.cap - 1);
}

/* The key in slot i of the reconcile table. */
static const struct custode_throttle_key *rec_key(size_t i)
{
	return (const struct custode_throttle_key *)(strm->rec.slot + i * strm->rec.stride);
}

/* Every used slot reachable from its home through used slots (no hole a lookup would stop at); the count right. */
static void rec_check_table(void)
{
	size_t used = 0;

	for (size_t i = 0; i < RECONCILE_SLOTS; i++) {
		const struct custode_throttle_key *k = rec_key(i);

		if (!strm->rec.used[i])
			continue;
		used++;
		for (size_t j = rec_home(k->run_cgid, k->reason); j != i; j = (j + 1) % RECONCILE_SLOTS)
			cr_assert(strm->rec.used[j], "slot %zu (home %zu) cut off by the empty slot %zu", i,
				  rec_home(k->run_cgid, k->reason), j);
		cr_assert_eq((void *)stream_rec_slot(strm, k->run_cgid, k->reason, false),
			     (void *)(strm->rec.slot + i * strm->rec.stride + strm->rec.val_off));
	}
	cr_assert_eq(used, custode_table_count(&strm->rec));
}

/*
 * BUG (stream.c, throttle_flush): a slot was made for every entry of the
 * kernel's throttle map, and the kernel makes one for the first denial of
 * every (run, reason), throttled or not. Past 16,384 pairs the table was
 * full: a pair that then had denials suppressed got no slot, and the
 * summary of its quiet window was never written.
 */
Test(stream_throttle, entries_without_suppressed_denials_take_no_slot)
{
	setup(NULL, 0, 0, 16);
	fake_open();
	for (__u64 i = 0; i < 20000; i++)
		fake_put(1000 + i, READ_DENIED, 0);
	stream_throttle_baseline(strm);
	cr_expect_eq(custode_table_count(&strm->rec), 0, "the baseline made no slot for them");
	stream_throttle_flush(strm, 1);
	cr_expect_eq(custode_table_count(&strm->rec), 0, "nor did a flush");
	cr_expect_eq(strm->st.throttle_records, 0);
	/* a pair with suppressed denials, after all of those: its quiet window is summarised */
	fake_put(999999, READ_DENIED, 7);
	stream_throttle_flush(strm, 1);
	cr_expect_eq(strm->st.throttle_records, 1);
	cr_expect_eq(strm->st.throttled, 7);
	cr_expect_eq(custode_table_count(&strm->rec), 1);
	stream_throttle_flush(strm, 1);
	cr_expect_eq(strm->st.throttle_records, 1, "said once");
	fake_close();
}

/*
 * BUG (stream.c, rec_slot): slots were never freed. Entries come and go
 * (runs end, the LRU evicts): after 16,384 pairs in a daemon's life no new
 * pair got a slot. A slot whose kernel entry a complete pass did not see
 * is freed now; the others keep what was said (nothing said twice).
 */
Test(stream_throttle, slots_of_gone_entries_are_freed)
{
	const unsigned rounds = 20, per = 1000;
	__u64 cgid = 1;

	setup(NULL, 0, 0, 16);
	fake_open();
	for (unsigned r = 0; r < rounds; r++) {
		fake_clear(); /* the previous round's runs ended */
		for (unsigned i = 0; i < per; i++)
			fake_put(cgid++, i % 2 ? READ_DENIED : WRITE_DENIED, 3);
		stream_throttle_flush(strm, 1);
		cr_assert_eq(strm->st.throttle_records, (uint64_t)(r + 1) * per, "round %u: every pair summarised", r);
		cr_assert_eq(custode_table_count(&strm->rec), per, "round %u: the previous round's slots are gone", r);
		stream_throttle_flush(strm, 1);
		cr_assert_eq(strm->st.throttle_records, (uint64_t)(r + 1) * per, "round %u: nothing said twice", r);
	}
	cr_expect_eq(strm->st.throttled, (uint64_t)rounds * per * 3);
	rec_check_table();
	/* entries that stay keep their slots and their totals: only what is new is said */
	fake_put(cgid - 1, READ_DENIED, 5);
	stream_throttle_flush(strm, 1);
	cr_expect_eq(strm->st.throttle_records, (uint64_t)rounds * per + 1);
	cr_expect_eq(strm->st.throttled, (uint64_t)rounds * per * 3 + 2);
	fake_clear();
	stream_throttle_flush(strm, 1);
	cr_expect_eq(custode_table_count(&strm->rec), 0);
	fake_close();
}

/* A pass cut short (an error, or a walk the kernel kept restarting) frees nothing: it did not see everything. */
Test(stream_throttle, cut_pass_frees_nothing)
{
	setup(NULL, 0, 0, 16);
	fake_open();
	for (__u64 i = 1; i <= 10; i++)
		fake_put(i, READ_DENIED, 2);
	stream_throttle_flush(strm, 1);
	cr_assert_eq(custode_table_count(&strm->rec), 10);
	cr_assert_eq(strm->st.throttle_records, 10);
	fake_fail_after = 3; /* the walk ends in EIO after 3 keys */
	fake_calls = 0;
	stream_throttle_flush(strm, 1);
	cr_expect_eq(custode_table_count(&strm->rec), 10, "the slots of the keys it did not get to stay");
	cr_expect_eq(strm->st.throttle_records, 10, "and nothing was said again");
	fake_fail_after = -1;
	stream_throttle_flush(strm, 1);
	cr_expect_eq(custode_table_count(&strm->rec), 10);
	cr_expect_eq(strm->st.throttle_records, 10);
	fake_del(4, READ_DENIED);
	stream_throttle_flush(strm, 1);
	cr_expect_eq(custode_table_count(&strm->rec), 9);
	cr_expect_null(stream_rec_slot(strm, 4, READ_DENIED, false));
	fake_close();
}

/*
 * Freeing slots in the middle of a probe cluster (and one that wraps past
 * the table's end) leaves every other slot reachable with its total.
 */
Test(stream_throttle, removal_keeps_probing_correct)
{
	const size_t home = RECONCILE_SLOTS - 6;
	__u64 keys[64];
	size_t n = 0;

	setup(NULL, 0, 0, 0);
	/* pairs whose home is home .. home+2: one cluster of 64 across the end of the table */
	for (__u64 c = 1; n < 64 && c < (1ull << 32); c++) {
		size_t h = rec_home(c, READ_DENIED);

		if (h == home || h == home + 1 || (n > 40 && h == home + 2))
			keys[n++] = c;
	}
	cr_assert_eq(n, 64);
	for (size_t i = 0; i < n; i++) {
		struct reconcile *r = stream_rec_slot(strm, keys[i], READ_DENIED, true);

		cr_assert_not_null(r);
		r->total = 1000 + i;
	}
	cr_assert(strm->rec.used[0] && strm->rec.used[40], "the cluster wraps");
	rec_check_table();
	/* a pass that saw every third pair */
	strm->rec_pass++;
	for (size_t i = 0; i < n; i += 3)
		stream_rec_slot(strm, keys[i], READ_DENIED, false)->pass = strm->rec_pass;
	stream_rec_sweep(strm);
	rec_check_table();
	cr_expect_eq(custode_table_count(&strm->rec), (n + 2) / 3);
	for (size_t i = 0; i < n; i++) {
		struct reconcile *r = stream_rec_slot(strm, keys[i], READ_DENIED, false);

		if (i % 3) {
			cr_expect_null(r, "pair %zu freed", i);
		} else {
			cr_assert_not_null(r, "pair %zu kept", i);
			cr_expect_eq(r->total, 1000 + i);
		}
	}
	custode_stream_close(strm);
}

/* At most 3/4 of the table is used: a lookup always ends; a pair past that is reported as the kernel says. */
Test(stream_throttle, load_factor_bounded)
{
	size_t made = 0;
	struct taken t = {0};

	setup(NULL, 0, 0, 16);
	for (__u64 c = 100000; c < 100000 + RECONCILE_SLOTS; c++)
		made += stream_rec_slot(strm, c, READ_DENIED, true) != NULL;
	cr_expect_eq(made, RECONCILE_MAX);
	cr_expect_eq(custode_table_count(&strm->rec), RECONCILE_MAX);
	cr_expect_null(stream_rec_slot(strm, 1, READ_DENIED, false));
	cr_expect_not_null(stream_rec_slot(strm, 100000, READ_DENIED, false));
	rec_check_table();
	kernel_throttle(4, 9); /* a new pair (cgroup 4242): no slot, published as it is */
	cr_expect_eq(custode_stream_replay(strm, NULL, take_count, &t), 1);
	cr_expect_eq(t.seq[0], 4);
	custode_stream_close(strm);
}

/* An entry evicted and made again between two passes: its suppressed count starts over, and is reported. */
Test(stream_throttle, restarted_entry_reported_from_zero)
{
	struct reconcile *r;

	setup(NULL, 0, 0, 16);
	fake_open();
	fake_put(7, READ_DENIED, 100);
	stream_throttle_flush(strm, 1);
	cr_assert_eq(strm->st.throttled, 100);
	fake_put(7, READ_DENIED, 5); /* the new entry */
	stream_throttle_flush(strm, 1);
	cr_expect_eq(strm->st.throttle_records, 2);
	cr_expect_eq(strm->st.throttled, 105);
	r = stream_rec_slot(strm, 7, READ_DENIED, false);
	cr_assert_not_null(r);
	cr_expect_eq(r->total, 5);
	fake_close();
}

/*
 * A kernel record for a pair without a slot (its earlier records came
 * before this daemon, or its slot was freed with an earlier entry): the
 * kernel's count is what it had not reported, the total covers more.
 */
Test(stream_throttle, kernel_record_without_a_slot_keeps_its_count)
{
	struct taken t = {0};

	setup(NULL, 0, 0, 16);
	kernel_throttle(4, 10);
	kernel_throttle(2, 12);
	cr_expect_eq(custode_stream_replay(strm, NULL, take_count, &t), 2);
	cr_expect(t.seq[0] == 4 && t.seq[1] == 2, "counts %d %d", t.seq[0], t.seq[1]);
	cr_expect_eq(strm->st.throttled, 6);
	custode_stream_close(strm);
}

/* ---- the events file: never through a link, never a FIFO ---- */

/*
 * BUG (stream.c, file_open): the events file was opened (and opened again
 * after every rotation or logrotate) with O_CREAT but without O_NOFOLLOW:
 * a symbolic link put at the path had root append records to any file.
 */
Test(stream_file, symlink_at_the_path_refused)
{
	char victim[160];
	int seqs[8];

	tmpdir();
	snprintf(victim, sizeof(victim), "%s/victim", tdir);
	cr_assert_eq(close(open(victim, O_WRONLY | O_CREAT | O_EXCL, 0600)), 0);
	cr_assert_eq(symlink(victim, tfile), 0);
	setup(NULL, 1u << 20, 2, 0);
	strm->o.file = tfile;
	cr_expect_eq(stream_file_open(strm), -ELOOP, "refused at start");
	cr_expect_not_null(strstr(stream_file_open_strerror(ELOOP), "symbolic link"));
	pub(0, 100);
	cr_expect_eq(strm->st.sink_dropped[1], 1, "the line is counted as lost");
	cr_expect_eq(size_of(victim), 0, "nothing went through the link");

	/* a regular file, then a link put in its place: the reopen refuses it too */
	cr_assert_eq(unlink(tfile), 0);
	pub(1, 100);
	cr_expect_eq(strm->st.sink_dropped[1], 1);
	cr_expect_eq(seqs_of(tfile, seqs, 8), 1);
	cr_assert_eq(unlink(tfile), 0);
	cr_assert_eq(symlink(victim, tfile), 0);
	stream_tick(strm);
	cr_expect_eq(strm->st.file_reopens, 1);
	pub(2, 100);
	pub(3, 100);
	cr_expect_eq(strm->st.sink_dropped[1], 3);
	cr_expect_eq(size_of(victim), 0, "nothing went through the link");
	/* the link gone: the next line opens the file again */
	cr_assert_eq(unlink(tfile), 0);
	pub(4, 100);
	cr_expect_eq(strm->st.sink_dropped[1], 3);
	cr_expect_eq(seqs_of(tfile, seqs, 8), 1);
	cr_expect_eq(seqs[0], 4);
	custode_stream_close(strm);
	rm_tmpdir();
}

/*
 * BUG (stream.c, file_open): a FIFO at the path held the loop in open(2)
 * until a reader came (and one that came got the records). Without the
 * fix this test runs into its timeout.
 */
Test(stream_file, fifo_at_the_path_refused_without_waiting, .timeout = 10)
{
	char buf[256];
	int rfd, seqs[8];
	double t0;

	tmpdir();
	cr_assert_eq(mkfifo(tfile, 0600), 0);
	setup(NULL, 1u << 20, 2, 0);
	strm->o.file = tfile;
	t0 = now_s();
	cr_expect_lt(stream_file_open(strm), 0, "no reader: refused at once");
	/* a reader: the open succeeds, the file type does not */
	rfd = open(tfile, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	cr_assert_geq(rfd, 0);
	cr_expect_eq(stream_file_open(strm), -EINVAL);
	cr_expect_not_null(strstr(stream_file_open_strerror(EINVAL), "not a regular file"));
	pub(0, 100);
	cr_expect_eq(strm->st.sink_dropped[1], 1);
	cr_expect_leq(read(rfd, buf, sizeof(buf)), 0, "the reader got nothing");
	close(rfd);
	cr_expect_lt(now_s() - t0, 2.0);

	/* a FIFO put in place of the file: the reopen refuses it, lines are counted, nothing waits */
	cr_assert_eq(unlink(tfile), 0);
	pub(1, 100);
	cr_expect_eq(seqs_of(tfile, seqs, 8), 1);
	cr_assert_eq(unlink(tfile), 0);
	cr_assert_eq(mkfifo(tfile, 0600), 0);
	t0 = now_s();
	stream_tick(strm);
	cr_expect_eq(strm->st.file_reopens, 1);
	pub(2, 100);
	cr_expect_eq(strm->st.sink_dropped[1], 2);
	cr_expect_lt(now_s() - t0, 2.0);
	custode_stream_close(strm);
	rm_tmpdir();
}

Test(stream_file, shared_directory_noticed)
{
	char dir[PATH_MAX], file[200];
	mode_t mode;

	tmpdir();
	snprintf(file, sizeof(file), "%s/events.jsonl", tdir);
	cr_assert_eq(chmod(tdir, 0700), 0);
	cr_expect_not(stream_file_dir_shared(file, dir, sizeof(dir), &mode));
	cr_expect_str_eq(dir, tdir);
	cr_assert_eq(chmod(tdir, 0777), 0);
	cr_expect(stream_file_dir_shared(file, dir, sizeof(dir), &mode), "world-writable");
	cr_expect_eq(mode, 0777);
	cr_assert_eq(chmod(tdir, 0770), 0);
	cr_expect(stream_file_dir_shared(file, dir, sizeof(dir), &mode), "group-writable");
	cr_assert_eq(chmod(tdir, 01777), 0);
	cr_expect_not(stream_file_dir_shared(file, dir, sizeof(dir), &mode), "sticky, as /tmp");
	cr_assert_eq(chmod(tdir, 0755), 0);
	cr_expect_not(stream_file_dir_shared(file, dir, sizeof(dir), &mode));
	stream_file_dir_shared("events.jsonl", dir, sizeof(dir), &mode);
	cr_expect_str_eq(dir, ".");
	stream_file_dir_shared("/events.jsonl", dir, sizeof(dir), &mode);
	cr_expect_str_eq(dir, "/");
	rm_tmpdir();
}

Test(stream_throttle, record_from_before_the_restart_is_covered_by_the_baseline)
{
	/*
	 * The last daemon reported up to 100 and stopped; the kernel's rollover
	 * record (total 100) was still in the ring buffer; 50 more were
	 * suppressed. This daemon's baseline holds 150: the stale record is not
	 * an eviction and is not published again.
	 */
	struct taken t = {0};
	struct reconcile *r;

	setup(NULL, 0, 0, 16);
	strm->baseline_boot_ns = 2000;
	r = stream_rec_slot(strm, 4242, CUSTODE_REASON_FILE_READ_DENIED, true);
	cr_assert_not_null(r);
	r->total = 150;
	kernel_throttle_at(100, 100, 1000);
	cr_expect_eq(custode_stream_replay(strm, NULL, take_count, &t), 0, "a stale record is not published");
	cr_expect_eq(r->total, 150, "and does not lower the total");
	/* after the baseline, a lower total is an eviction: the kernel's own count */
	kernel_throttle_at(7, 7, 3000);
	cr_expect_eq(custode_stream_replay(strm, NULL, take_count, &t), 1);
	cr_expect_eq(t.seq[0], 7);
	custode_stream_close(strm);
}
