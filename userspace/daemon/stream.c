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

struct stream_state custode_stream_S = {.events_fd = -1, .throttle_fd = -1, .stats_fd = -1, .runs_fd = -1, .cfg_fd = -1, .file_fd = -1};

void custode_stream_stats(struct custode_stream_stats *out)
{
	*out = S.st;
	stream_inject_counts(&out->injected, &out->inject_dropped);
	out->sink_dropped[0] = S.out.dropped;
	out->history = S.hist_n;
	out->followers = 0;
	for (int i = 0; i < MAX_FOLLOWERS; i++)
		out->followers += S.fol[i].used;
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
	if (!type || strcmp(type, "throttle") || stream_reconcile_kernel(ev))
		stream_publish(ev);
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
	stream_drops_check(false);
	stream_throttle_flush(window);
	stream_file_check();
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

		if (stream_file_dir_shared(S.o.file, dir, sizeof(dir), &mode))
			fprintf(stderr,
				"custode: daemon: warning: --events-file %s: its directory %s (mode %04o) can be written by "
				"group or others without the sticky bit: they can replace the file\n",
				S.o.file, dir, (unsigned)mode);
		if ((err = stream_file_open()) < 0)
			return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "--events-file %s: %s", S.o.file,
					      stream_file_open_strerror(-err));
	}
	stream_stdout_open();
	S.boot_to_wall = custode_boot_to_wall_ns();
	{
		struct timespec bt;

		clock_gettime(CLOCK_BOOTTIME, &bt);
		S.baseline_boot_ns = (__u64)bt.tv_sec * 1000000000ull + (__u64)bt.tv_nsec;
	}
	stream_throttle_baseline();
	stream_drops_check(true);
	S.rb = ring_buffer__new(S.events_fd, on_record, NULL, NULL);
	if (!S.rb)
		return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "map the ring buffer: %s",
				      strerror(errno));
	if ((err = custode_loop_add(ring_buffer__epoll_fd(S.rb), EPOLLIN, rb_ready, NULL)) ||
	    (err = custode_loop_timer(TICK_MS, tick, NULL)) < 0 || (err = stream_inject_open()) < 0)
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "event loop: %s", strerror(-err));
	return 0;
}

void custode_stream_close(void)
{
	stream_inject_close();
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
		stream_file_untear();
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
