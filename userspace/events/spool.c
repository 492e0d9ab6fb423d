// SPDX-License-Identifier: Apache-2.0
/*
 * The spool of records a reader drained but did not show (docs/events.md,
 * "Reading without the daemon"). The ring buffer hands each record to one
 * reader only, so a filtered `custode events` keeps what its filter refused
 * here, for the next reader: later reads serve the spool first, in order,
 * then the ring buffer; the daemon takes it over at start. A file of JSON
 * lines under CUSTODE_STATE_DIR, a header line first ({"spool":1,
 * "dropped":N}), replaced by rename under an flock of PATH.lock that every
 * reader holds from load to save, so two readers never serve the same record
 * nor lose one. Bounded: past max records the oldest are dropped and counted
 * in the header, and every reader is told.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>

#include "events/events.h"
#include "util/fsutil.h"

#define SPOOL_FILE_MAX (64u << 20) /* 10,000 records of at most a few KiB each */

struct spool {
	json_t *recs; /* array, oldest first */
	uint64_t dropped;
	bool changed;
};

/* flock PATH.lock (created 0600): its fd, or -errno. */
static int spool_lock(const char *path)
{
	char lock[4096];
	int fd;

	if ((size_t)snprintf(lock, sizeof(lock), "%s.lock", path) >= sizeof(lock))
		return -ENAMETOOLONG;
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	while (flock(fd, LOCK_EX) < 0) {
		int err = -errno;

		if (err != -EINTR) {
			close(fd);
			return err;
		}
	}
	return fd;
}

/* A missing spool is an empty one; lines that are not JSON objects are counted as dropped. */
static int spool_load(const char *path, struct spool *sp)
{
	char *text = NULL, *line, *save = NULL;
	int err = custode_read_file(path, SPOOL_FILE_MAX, &text, NULL);

	sp->recs = json_array();
	sp->dropped = 0;
	sp->changed = false;
	if (!sp->recs) {
		free(text);
		return -ENOMEM;
	}
	if (err == -ENOENT)
		return 0;
	if (err < 0)
		return err;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		json_t *o = json_loads(line, JSON_REJECT_DUPLICATES, NULL);

		if (json_is_object(o) && json_object_get(o, "spool"))
			sp->dropped += (uint64_t)json_integer_value(json_object_get(o, "dropped"));
		else if (json_is_object(o))
			json_array_append(sp->recs, o);
		else
			sp->dropped++;
		json_decref(o);
	}
	free(text);
	return 0;
}

static void spool_keep(struct spool *sp, json_t *ev, size_t max)
{
	json_array_append(sp->recs, ev);
	sp->changed = true;
	while (json_array_size(sp->recs) > max) {
		json_array_remove(sp->recs, 0);
		sp->dropped++;
	}
}

/* Append one line to buf (grown as needed). 0 or -ENOMEM. */
static int append_line(char **buf, size_t *len, size_t *cap, const char *line)
{
	size_t n = strlen(line);

	if (*len + n + 1 > *cap) {
		size_t ncap = *cap;
		char *nb;

		while (*len + n + 1 > ncap)
			ncap *= 2;
		if (!(nb = realloc(*buf, ncap)))
			return -ENOMEM;
		*buf = nb;
		*cap = ncap;
	}
	memcpy(*buf + *len, line, n);
	(*buf)[*len + n] = '\n';
	*len += n + 1;
	return 0;
}

/* Replace the spool (remove it when it holds nothing to tell). */
static int spool_save(const char *path, const struct spool *sp)
{
	size_t i, cap = 4096, len = 0;
	char *buf = malloc(cap), *line, head[64];
	json_t *ev;
	int err;

	if (!buf)
		return -ENOMEM;
	snprintf(head, sizeof(head), "{\"spool\":1,\"dropped\":%llu}", (unsigned long long)sp->dropped);
	err = append_line(&buf, &len, &cap, head);
	json_array_foreach(sp->recs, i, ev) {
		if (err)
			break;
		if (!(line = json_dumps(ev, JSON_COMPACT))) {
			err = -ENOMEM;
			break;
		}
		err = append_line(&buf, &len, &cap, line);
		free(line);
	}
	if (!err && !json_array_size(sp->recs) && !sp->dropped)
		err = unlink(path) < 0 && errno != ENOENT ? -errno : 0;
	else if (!err)
		err = custode_write_file_volatile(path, buf, len, 0600);
	free(buf);
	return err;
}

struct drain_ctx {
	struct custode_event_read *r;
	struct spool *sp;
};

/* A record of the ring buffer: shown if it matches, else kept. */
static int drained(void *arg, void *data, size_t size)
{
	struct drain_ctx *d = arg;
	struct custode_event_read *r = d->r;
	json_t *o = custode_event_to_json(data, size, r->boot_to_wall_ns);

	if (!o) {
		r->bad++;
		return 0;
	}
	if (r->en)
		custode_event_enrich(r->en, o);
	if (custode_event_filter_match(r->filter, o)) {
		r->show(r->arg, o);
		r->shown++;
	} else {
		spool_keep(d->sp, o, r->max_kept ? r->max_kept : CUSTODE_EVENT_SPOOL_MAX);
	}
	json_decref(o);
	return 0;
}

/* The spool's records first: those the filter matches are shown and leave it. */
static void serve_spool(struct custode_event_read *r, struct spool *sp)
{
	for (size_t i = 0; i < json_array_size(sp->recs);) {
		json_t *ev = json_array_get(sp->recs, i);

		if (!custode_event_filter_match(r->filter, ev)) {
			i++;
			continue;
		}
		r->show(r->arg, ev);
		r->shown++;
		json_array_remove(sp->recs, i);
		sp->changed = true;
	}
}

static bool filter_all(const struct custode_event_filter *f)
{
	return !f || (!f->has_run && !f->reason[0] && !f->has_since);
}

int custode_event_read_once(struct custode_event_read *r, const struct custode_event_source *src)
{
	struct drain_ctx d;
	struct spool sp = {0};
	int lock, err, n = 0;

	if ((lock = spool_lock(r->spool)) < 0)
		return lock; /* nothing drained: nothing lost */
	if ((err = spool_load(r->spool, &sp)) < 0)
		goto out;
	serve_spool(r, &sp);
	d.r = r;
	d.sp = &sp;
	if (src)
		n = src->drain(src->ctx, drained, &d);
	r->dropped = sp.dropped;
	if (sp.dropped && filter_all(r->filter) && !json_array_size(sp.recs)) {
		sp.dropped = 0; /* told to a reader that saw everything: the count is consumed like a record */
		sp.changed = true;
	}
	if (sp.changed)
		err = spool_save(r->spool, &sp);
	if (!err && n < 0)
		err = n;
out:
	r->kept = sp.recs ? json_array_size(sp.recs) : 0;
	json_decref(sp.recs);
	close(lock);
	return err;
}

int custode_event_spool_take(const char *path, void (*fn)(void *arg, const json_t *ev), void *arg,
			     uint64_t *dropped)
{
	struct spool sp = {0};
	size_t i, n = 0;
	json_t *ev;
	int lock, err;

	if ((lock = spool_lock(path)) < 0)
		return lock;
	err = spool_load(path, &sp);
	if (!err) {
		json_array_foreach(sp.recs, i, ev)
			fn(arg, ev);
		n = json_array_size(sp.recs);
		*dropped = sp.dropped;
		if (unlink(path) < 0 && errno != ENOENT)
			err = -errno;
	}
	json_decref(sp.recs);
	close(lock);
	return err < 0 ? err : (int)n;
}
