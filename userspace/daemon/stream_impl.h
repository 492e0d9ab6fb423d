/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The denial stream's parts, private to userspace/daemon/stream*.c and the
 * files it is split into (stream.c the consumer, sink.c stdout and the
 * events file, history.c history, cursors and followers, throttle.c the
 * throttle records and drops, inject.c records from other threads). The
 * stream is one instance (S below); the files share its state.
 */
#ifndef CUSTODE_DAEMON_STREAM_IMPL_H
#define CUSTODE_DAEMON_STREAM_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <bpf/libbpf.h>

#include "custode/abi.h"
#include "daemon/stream.h"

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

struct stream_state {
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
};

extern struct stream_state custode_stream_S;
#define S custode_stream_S

/*
 * How the stream reads the engine's maps after open (throttle.c): libbpf's
 * calls; the unit test points this at a fake kernel throttle map.
 */
struct stream_map_ops {
	int (*get_next_key)(int fd, const void *key, void *next_key);
	int (*lookup_elem)(int fd, const void *key, void *value);
};
extern const struct stream_map_ops *stream_maps;

/* sink.c */
void stream_stdout_open(void);
int stream_file_open(void);
const char *stream_file_open_strerror(int err);
bool stream_file_dir_shared(const char *file, char *dir, size_t len, mode_t *mode);
void stream_file_check(void);
bool stream_file_untear(void);
void stream_file_write(const char *line, size_t n);
void stream_outq_push(struct outq *q, const char *line, size_t n);
/* history.c */
void stream_publish(json_t *ev);
/* inject.c */
int stream_inject_open(void);
void stream_inject_close(void);
void stream_inject_counts(uint64_t *injected, uint64_t *dropped);
/* throttle.c */
bool stream_reconcile_kernel(json_t *ev);
void stream_throttle_flush(uint64_t window_ns);
void stream_throttle_baseline(void);
void stream_drops_check(bool baseline);

#endif
