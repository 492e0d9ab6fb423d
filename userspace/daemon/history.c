// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/stream_impl.h"
#include "state/state.h"
#include "util/time.h"

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

void stream_publish(json_t *ev)
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
			stream_outq_push(&S.out, text, (size_t)n + 1);
		} else {
			stream_outq_push(&S.out, line, len + 1);
		}
	}
	if (S.o.file)
		stream_file_write(line, len + 1);
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

