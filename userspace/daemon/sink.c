// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/stat.h>

#include "daemon/stream_impl.h"
#include "daemon/loop.h"

/* ---- sinks ---- */

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
			q->watching = custode_loop_add(q->loop, q->fd, EPOLLOUT, stream_outq_event, q) == 0;
		} else if (!want && q->watching) {
			custode_loop_del(q->loop, q->fd);
			q->watching = false;
		}
	}
}

int stream_outq_event(void *arg, uint32_t revents)
{
	struct outq *q = arg;

	if (revents & (EPOLLERR | EPOLLHUP))
		outq_lose(q);
	outq_flush(q);
	if (q->gone && q->watching) {
		custode_loop_del(q->loop, q->fd);
		q->watching = false;
	}
	return 0;
}

void stream_outq_push(struct outq *q, const char *line, size_t n)
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
void stream_stdout_open(struct custode_stream *s)
{
	struct stat st;

	s->out.fd = 1;
	if (fstat(1, &st) < 0) {
		s->out.gone = true;
		return;
	}
	if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))
		return;
	s->out.pollable = true;
	if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
		int fd = open("/proc/self/fd/1", O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0) {
			s->out.fd = fd;
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
int stream_file_open(struct custode_stream *s)
{
	struct stat st, rst;
	char last;
	int fd, fl, e = 0;

	fd = open(s->o.file, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);
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
	s->file_fd = fd;
	s->file_torn = 0;
	s->file_size = (uint64_t)st.st_size;
	/*
	 * A file that ends inside a line (a writer killed mid-line): end that
	 * line first, so it stays one bad line and our first record a whole one.
	 * The fd is write-only: read the last byte through a second open, of
	 * the same file only.
	 */
	if (s->file_size) {
		int rfd = open(s->o.file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

		if (rfd >= 0 && fstat(rfd, &rst) == 0 && rst.st_dev == st.st_dev && rst.st_ino == st.st_ino &&
		    pread(rfd, &last, 1, (off_t)s->file_size - 1) == 1 && last != '\n' && write(s->file_fd, "\n", 1) == 1)
			s->file_size++;
		if (rfd >= 0)
			close(rfd);
	}
	return 0;
}

/* Why file_open refused, for a person. */
const char *stream_file_open_strerror(int err)
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
bool stream_file_dir_shared(const char *file, char *dir, size_t len, mode_t *mode)
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

static void file_rotate(struct custode_stream *s)
{
	char from[PATH_MAX + 16], to[PATH_MAX + 16];

	close(s->file_fd);
	s->file_fd = -1;
	for (unsigned k = s->o.file_keep; k > 1; k--) {
		snprintf(from, sizeof(from), "%s.%u", s->o.file, k - 1);
		snprintf(to, sizeof(to), "%s.%u", s->o.file, k);
		rename(from, to);
	}
	snprintf(to, sizeof(to), "%s.1", s->o.file);
	if (s->o.file_keep)
		rename(s->o.file, to);
	else
		unlink(s->o.file);
	/*
	 * FILE.(keep+1) and on: left by an earlier daemon with a larger
	 * --events-file-keep. Nothing would ever rotate them away again.
	 */
	for (unsigned k = s->o.file_keep + 1; k <= s->o.file_keep + STALE_ROTATED_MAX; k++) {
		snprintf(to, sizeof(to), "%s.%u", s->o.file, k);
		if (unlink(to) < 0 && errno == ENOENT)
			break;
	}
	s->st.file_rotations++;
	stream_file_open(s);
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
void stream_file_check(struct custode_stream *s)
{
	struct stat fst, pst;

	if (!s->o.file || s->file_fd < 0 || fstat(s->file_fd, &fst) < 0)
		return;
	if (stat(s->o.file, &pst) == 0) {
		if (pst.st_dev == fst.st_dev && pst.st_ino == fst.st_ino) {
			s->file_size = (uint64_t)fst.st_size; /* truncated (copytruncate) or written by others */
			return;
		}
	} else if (errno != ENOENT && errno != ENOTDIR) {
		return; /* can't tell now (EACCES, ELOOP, ...): keep the file we have */
	}
	stream_file_untear(s); /* the old file ends whole if it can; the new one starts clean */
	s->file_torn = 0;
	close(s->file_fd);
	s->file_fd = -1;
	s->st.file_reopens++;
	stream_file_open(s); /* on failure file_write tries again for each line, and counts what it drops */
}

/*
 * Cut the file back to where a line that could not be written whole began
 * (its start: our offset, just past what was written, less that). A file
 * that can't be cut (chattr +a) gets the line ended instead: one bad line,
 * and the next record still a line of its own. true when nothing torn is
 * left for a record to be glued to.
 */
bool stream_file_untear(struct custode_stream *s)
{
	off_t end;

	if (!s->file_torn)
		return true;
	end = lseek(s->file_fd, 0, SEEK_CUR); /* O_APPEND: just past our last write */
	if (end >= 0 && (uint64_t)end >= s->file_torn && ftruncate(s->file_fd, end - (off_t)s->file_torn) == 0) {
		s->file_size = s->file_size > s->file_torn ? s->file_size - s->file_torn : 0;
	} else if (write(s->file_fd, "\n", 1) == 1) {
		s->file_size++;
	} else {
		return false; /* still full: the next line tries again, and is dropped until then */
	}
	s->file_torn = 0;
	return true;
}

void stream_file_write(struct custode_stream *s, const char *line, size_t n)
{
	size_t done = 0;

	if (s->file_fd < 0 && stream_file_open(s) < 0) {
		s->st.sink_dropped[1]++;
		return;
	}
	/* a torn line the last write left that could not be cut then: no record goes after it */
	if (!stream_file_untear(s)) {
		s->st.sink_dropped[1]++;
		return;
	}
	if (s->file_size + n > s->o.file_max_bytes && s->file_size)
		file_rotate(s);
	if (s->file_fd < 0) {
		s->st.sink_dropped[1]++;
		return;
	}
	while (done < n) {
		ssize_t w = write(s->file_fd, line + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			/*
			 * A short write (disk full, a file size limit): part of the
			 * line is in the file. Cut it off, or the next record would
			 * be appended to it and both lines be lost to a reader.
			 */
			s->st.sink_dropped[1]++;
			s->file_torn = done;
			stream_file_untear(s);
			return;
		}
		s->file_size += (uint64_t)w;
		done += (size_t)w;
	}
}

