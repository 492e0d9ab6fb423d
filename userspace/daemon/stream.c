// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <bpf/bpf.h>

#include "daemon/stream_impl.h"
#include "daemon/loop.h"
#include "engine/maps.h"

/* libbpf's map reads: what the stream uses unless its options give others */
static int libbpf_get_next_key(void *ctx, int fd, const void *key, void *next_key)
{
	(void)ctx;
	return bpf_map_get_next_key(fd, key, next_key);
}

static int libbpf_lookup_elem(void *ctx, int fd, const void *key, void *value)
{
	(void)ctx;
	return bpf_map_lookup_elem(fd, key, value);
}

static const struct custode_stream_map_ops libbpf_maps = {
	.get_next_key = libbpf_get_next_key,
	.lookup_elem = libbpf_lookup_elem,
};

void custode_stream_stats(struct custode_stream *s, struct custode_stream_stats *out)
{
	*out = s->st;
	stream_inject_counts(s, &out->injected, &out->inject_dropped);
	out->sink_dropped[0] = s->out.dropped;
	out->history = s->hist_n;
	out->followers = 0;
	for (int i = 0; i < MAX_FOLLOWERS; i++)
		out->followers += s->fol[i].used;
}


/* ---- the consumer ---- */

int stream_on_record(void *ctx, void *data, size_t size)
{
	struct custode_stream *s = ctx;
	json_t *ev = custode_event_to_json(data, size, s->boot_to_wall);
	const char *type;

	if (!ev) {
		s->st.bad++;
		return 0;
	}
	type = json_string_value(json_object_get(ev, "type"));
	custode_event_enrich(s->en, ev);
	if (!type || strcmp(type, "throttle") || stream_reconcile_kernel(s, ev))
		stream_publish(s, ev);
	json_decref(ev);
	return 0;
}

static int rb_ready(void *arg, uint32_t revents)
{
	struct custode_stream *s = arg;

	(void)revents;
	ring_buffer__consume(s->rb);
	return 0;
}

static void spool_record(void *arg, const json_t *ev)
{
	stream_publish(arg, (json_t *)ev);
}

/*
 * Records a `custode events` without the daemon drained but did not show
 * (events/spool.c): published as if read now, oldest first, and the spool
 * removed. At start, and on each tick while a spool exists (a reader that
 * was reading as the daemon started may have left one).
 */
static void stream_take_spool(struct custode_stream *s)
{
	uint64_t dropped = 0;
	int n;

	if (access(CUSTODE_EVENT_SPOOL, F_OK) < 0)
		return;
	n = custode_event_spool_take(CUSTODE_EVENT_SPOOL, spool_record, s, &dropped);
	if (n < 0)
		fprintf(stderr, "custode daemon: events: the spool %s: %s\n", CUSTODE_EVENT_SPOOL, strerror(-n));
	if (n > 0)
		fprintf(stderr, "custode daemon: events: %d records no reader had shown taken from %s\n", n,
			CUSTODE_EVENT_SPOOL);
	if (n >= 0 && dropped)
		fprintf(stderr, "custode daemon: events: %llu records no reader had shown were dropped from %s (full)\n",
			(unsigned long long)dropped, CUSTODE_EVENT_SPOOL);
}

int stream_tick(void *arg)
{
	struct custode_stream *s = arg;
	uint64_t window = s->o.throttle_window_ms ? s->o.throttle_window_ms * 1000000ull : CUSTODE_THROTTLE_WINDOW_NS;

	s->boot_to_wall = custode_boot_to_wall_ns(); /* follows clock changes */
	if (s->rb) {
		stream_take_spool(s);
		ring_buffer__consume(s->rb);
	}
	stream_drops_check(s, false);
	stream_throttle_flush(s, window);
	stream_file_check(s);
	return 0;
}

int custode_stream_new(struct custode_loop *loop, const struct custode_stream_opts *o, struct custode_stream **out)
{
	const struct custode_table_spec rec = {.key_size = sizeof(struct custode_throttle_key),
					       .val_size = sizeof(struct reconcile), .slots = RECONCILE_SLOTS, .max = RECONCILE_MAX};
	const struct custode_table_spec known = {.key_size = sizeof(__u64), .val_size = sizeof(struct known_run),
						 .slots = KNOWN_SLOTS, .max = KNOWN_MAX, .evict = true};
	struct custode_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->events_fd = s->throttle_fd = s->stats_fd = s->runs_fd = s->cfg_fd = s->file_fd = -1;
	s->loop = loop;
	s->out.loop = loop;
	s->out.fd = -1;
	s->o = *o;
	s->o.maps = NULL; /* the copy below is what the stream uses */
	s->maps = o->maps ? *o->maps : libbpf_maps;
	if (!s->o.stdout_format)
		s->o.stdout_format = "json";
	if (!s->o.file_max_bytes)
		s->o.file_max_bytes = 64ull << 20;
	s->out_text = !strcmp(s->o.stdout_format, "text");
	s->out_none = !strcmp(s->o.stdout_format, "none");
	s->hist = s->o.history ? calloc(s->o.history, sizeof(*s->hist)) : NULL;
	if (custode_table_init(&s->rec, &rec) < 0 || custode_table_init(&s->known, &known) < 0 ||
	    (s->o.history && !s->hist) || stream_inject_init(s) < 0) {
		custode_table_free(&s->rec);
		custode_table_free(&s->known);
		free(s->hist);
		free(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

/*
 * What the stream holds, let go without a word to anyone: no record
 * consumed or written, the engine's throttling left as it is (a stream
 * that failed to open, and the end of custode_stream_close).
 */
static void stream_free(struct custode_stream *s)
{
	int fds[] = {s->events_fd, s->throttle_fd, s->stats_fd, s->runs_fd, s->cfg_fd, s->file_fd};

	stream_inject_close(s);
	stream_inject_fini(s);
	if (s->rb)
		ring_buffer__free(s->rb);
	free(s->out.buf);
	for (size_t i = 0; i < s->hist_n; i++)
		free(s->hist[(s->hist_head + i) % s->o.history].line);
	free(s->hist);
	custode_table_free(&s->rec);
	custode_table_free(&s->known);
	custode_event_enricher_free(s->en);
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (s->out.fd > 2)
		close(s->out.fd);
	free(s);
}

/*
 * The engine's maps and its throttling: our own fds (the engine handle may
 * be reopened, for new classes, without touching the consumer).
 */
static int stream_open_maps(struct custode_stream *s, struct custode_refusal *why)
{
	struct custode_event_cfg cfg = {0};
	__u32 zero = 0;

	s->events_fd = custode_map_open(CUSTODE_MAP_EVENTS);
	s->stats_fd = custode_map_open(CUSTODE_MAP_STATS);
	s->runs_fd = custode_map_open(CUSTODE_MAP_RUNS);
	s->throttle_fd = custode_map_open(CUSTODE_MAP_THROTTLE);
	s->cfg_fd = custode_map_open(CUSTODE_MAP_EVENT_CFG);
	if (s->events_fd < 0 || s->stats_fd < 0)
		return custode_refuse(why, ENOENT, CUSTODE_REASON_ENGINE_MISSING, "the engine's event maps are missing");
	if (s->cfg_fd >= 0) {
		cfg.burst = s->o.throttle_burst;
		cfg.window_ns = s->o.throttle_window_ms * 1000000ull;
		cfg.flags = s->o.no_throttle ? CUSTODE_EVENT_CFG_NO_THROTTLE : 0;
		bpf_map_update_elem(s->cfg_fd, &zero, &cfg, BPF_ANY);
	}
	return 0;
}

/* --events-file: a warning when its directory is shared, and the first open. */
static int stream_open_file(struct custode_stream *s, struct custode_refusal *why)
{
	char dir[PATH_MAX];
	mode_t mode = 0;
	int err;

	if (stream_file_dir_shared(s->o.file, dir, sizeof(dir), &mode))
		fprintf(stderr,
			"custode daemon: warning: --events-file %s: its directory %s (mode %04o) can be written by "
			"group or others without the sticky bit: they can replace the file\n",
			s->o.file, dir, (unsigned)mode);
	if ((err = stream_file_open(s)) < 0)
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "--events-file %s: %s", s->o.file,
				      stream_file_open_strerror(-err));
	return 0;
}

/* What came before this stream is not reported again; then the ring buffer and the tick in the loop. */
static int stream_start(struct custode_stream *s, struct custode_refusal *why)
{
	struct timespec bt;
	int err;

	s->boot_to_wall = custode_boot_to_wall_ns();
	clock_gettime(CLOCK_BOOTTIME, &bt);
	s->baseline_boot_ns = (__u64)bt.tv_sec * 1000000000ull + (__u64)bt.tv_nsec;
	stream_throttle_baseline(s);
	stream_drops_check(s, true);
	stream_take_spool(s);
	s->rb = ring_buffer__new(s->events_fd, stream_on_record, s, NULL);
	if (!s->rb)
		return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "map the ring buffer: %s",
				      strerror(errno));
	if ((err = custode_loop_add(s->loop, ring_buffer__epoll_fd(s->rb), EPOLLIN, rb_ready, s)) ||
	    (err = custode_loop_timer(s->loop, TICK_MS, stream_tick, s)) < 0 || (err = stream_inject_open(s)) < 0)
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "event loop: %s", strerror(-err));
	return 0;
}

int custode_stream_open(struct custode_loop *loop, const struct custode_stream_opts *o, struct custode_stream **out,
			struct custode_refusal *why)
{
	struct custode_stream *s = NULL;
	int err;

	if (custode_stream_new(loop, o, &s) < 0)
		return custode_refuse(why, ENOMEM, CUSTODE_REASON_RUN_SETUP_FAILED, "out of memory");
	s->ncpu = libbpf_num_possible_cpus();
	s->en = custode_event_enricher_new();
	if (!s->en)
		err = custode_refuse(why, ENOMEM, CUSTODE_REASON_RUN_SETUP_FAILED, "out of memory");
	else if (!(err = stream_open_maps(s, why)) && !(err = s->o.file ? stream_open_file(s, why) : 0)) {
		stream_stdout_open(s);
		err = stream_start(s, why);
	}
	if (err) {
		stream_free(s);
		return err;
	}
	*out = s;
	return 0;
}

void custode_stream_close(struct custode_stream *s)
{
	if (!s)
		return;
	stream_inject_close(s);
	if (s->rb) {
		ring_buffer__consume(s->rb);
		ring_buffer__free(s->rb);
	}
	s->rb = NULL;
	if (s->out.len) {
		/* last chance, without waiting */
		(void)!write(s->out.fd, s->out.buf, s->out.len);
	}
	/* throttling back to the engine's defaults for whoever reads the ring buffer next (not after SIGKILL) */
	if (s->cfg_fd >= 0 && (s->o.no_throttle || s->o.throttle_burst || s->o.throttle_window_ms)) {
		struct custode_event_cfg cfg = {0};
		__u32 zero = 0;

		bpf_map_update_elem(s->cfg_fd, &zero, &cfg, BPF_ANY);
	}
	if (s->file_fd >= 0)
		stream_file_untear(s);
	stream_free(s);
}
