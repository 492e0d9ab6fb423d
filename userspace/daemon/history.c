// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/stream_impl.h"
#include "state/state.h"
#include "util/time.h"

/* ---- publishing ---- */

/* A kept record at position pos leaves the history: a cursor that had not reached it and wanted it lost it. */
static void cursors_evict(struct custode_stream *s, const struct hist *h, uint64_t pos)
{
	for (int i = 0; i < MAX_CURSORS; i++) {
		struct cursor *c = &s->cur[i];

		if (c->used && c->pos <= pos && custode_event_filter_match_meta(&c->f, h->run_id, h->reason, h->wall_ns))
			c->lost++;
	}
}

void stream_publish(struct custode_stream *s, json_t *ev)
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
		s->st.records++;
	/* sinks: a line each, with its newline */
	line[len] = '\n';
	if (!s->out_none) {
		if (s->out_text) {
			char text[8192];
			int n = custode_event_format(ev, text, sizeof(text) - 1);

			if (n > (int)sizeof(text) - 2)
				n = (int)sizeof(text) - 2;
			text[n] = '\n';
			stream_outq_push(&s->out, text, (size_t)n + 1);
		} else {
			stream_outq_push(&s->out, line, len + 1);
		}
	}
	if (s->o.file)
		stream_file_write(s, line, len + 1);
	line[len] = 0;
	for (int i = 0; i < MAX_FOLLOWERS; i++)
		if (s->fol[i].used && custode_event_filter_match_meta(&s->fol[i].f, run_id, reason, wall))
			s->fol[i].take(s->fol[i].ctx, line, len);
	/* the history keeps the line (ownership moves there) */
	if (!s->o.history) {
		free(line);
		return;
	}
	{
		struct hist *h = &s->hist[(s->hist_head + s->hist_n) % s->o.history];

		if (s->hist_n == s->o.history) {
			h = &s->hist[s->hist_head];
			cursors_evict(s, h, s->hist_seq - s->hist_n);
			free(h->line);
			s->hist_head = (s->hist_head + 1) % s->o.history;
		} else {
			s->hist_n++;
		}
		s->hist_seq++;
		h->line = line;
		h->len = len;
		h->run_id = run_id;
		h->wall_ns = wall;
		snprintf(h->reason, sizeof(h->reason), "%s", reason ? reason : "");
	}
}

size_t custode_stream_replay(struct custode_stream *s, const struct custode_event_filter *f, custode_stream_take_fn take,
			     void *ctx)
{
	size_t n = 0;

	for (size_t i = 0; i < s->hist_n; i++) {
		const struct hist *h = &s->hist[(s->hist_head + i) % s->o.history];

		if (!custode_event_filter_match_meta(f, h->run_id, h->reason, h->wall_ns))
			continue;
		take(ctx, h->line, h->len);
		n++;
	}
	return n;
}

int custode_stream_cursor_open(struct custode_stream *s, const struct custode_event_filter *f)
{
	for (int i = 0; i < MAX_CURSORS; i++) {
		if (s->cur[i].used)
			continue;
		memset(&s->cur[i], 0, sizeof(s->cur[i]));
		s->cur[i].used = true;
		if (f)
			s->cur[i].f = *f;
		s->cur[i].pos = s->hist_seq - s->hist_n;
		return i;
	}
	return -ENOSPC;
}

static struct cursor *cursor_of(struct custode_stream *s, int h)
{
	return h >= 0 && h < MAX_CURSORS && s->cur[h].used ? &s->cur[h] : NULL;
}

bool custode_stream_cursor_next(struct custode_stream *s, int h, custode_stream_take_fn take, void *ctx, size_t *taken)
{
	struct cursor *c = cursor_of(s, h);
	uint64_t first = s->hist_seq - s->hist_n;

	if (!c)
		return true;
	if (c->pos < first) /* what it missed is counted already (cursors_evict) */
		c->pos = first;
	for (; c->pos < s->hist_seq; c->pos++) {
		const struct hist *r = &s->hist[(s->hist_head + (size_t)(c->pos - first)) % s->o.history];

		if (!custode_event_filter_match_meta(&c->f, r->run_id, r->reason, r->wall_ns))
			continue;
		if (!take(ctx, r->line, r->len))
			return false; /* offered again next time */
		if (taken)
			(*taken)++;
	}
	return true;
}

uint64_t custode_stream_cursor_lost(struct custode_stream *s, int h)
{
	struct cursor *c = cursor_of(s, h);
	uint64_t n = c ? c->lost : 0;

	if (c)
		c->lost = 0;
	return n;
}

void custode_stream_cursor_close(struct custode_stream *s, int h)
{
	if (cursor_of(s, h))
		s->cur[h].used = false;
}

int custode_stream_follow(struct custode_stream *s, const struct custode_event_filter *f, custode_stream_take_fn take,
			  void *ctx)
{
	for (int i = 0; i < MAX_FOLLOWERS; i++) {
		if (s->fol[i].used)
			continue;
		s->fol[i].used = true;
		s->fol[i].f = *f;
		s->fol[i].take = take;
		s->fol[i].ctx = ctx;
		return i;
	}
	return -ENOSPC;
}

void custode_stream_unfollow(struct custode_stream *s, int handle)
{
	if (handle >= 0 && handle < MAX_FOLLOWERS)
		s->fol[handle].used = false;
}

void custode_stream_set_policy(struct custode_stream *s, __u64 run_id, const char *name)
{
	custode_event_enricher_set_policy(s->en, run_id, name);
}

