/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The denial stream's parts, private to userspace/daemon/stream*.c and the
 * files it is split into (stream.c the consumer, sink.c stdout and the
 * events file, history.c history, cursors and followers, throttle.c the
 * throttle records and drops, inject.c records from other threads). The
 * stream is a handle (struct custode_stream, below), passed to every
 * function of these files. The unit test (selftests/unit/test_daemon_stream.c)
 * includes this header too: it builds a stream with custode_stream_new,
 * reads and sets the fields below and calls the functions declared here.
 */
#ifndef CUSTODE_DAEMON_STREAM_IMPL_H
#define CUSTODE_DAEMON_STREAM_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <pthread.h>
#include <bpf/libbpf.h>

#include "custode/abi.h"
#include "daemon/stream.h"
#include "util/table.h"

#define MAX_FOLLOWERS 64
#define MAX_CURSORS 64
#define STALE_ROTATED_MAX 1000 /* FILE.(keep+1) .. left by a larger --events-file-keep: removed up to this many */
#define SINK_QUEUE_MAX (4u << 20)
/*
 * The reconcile table (util/table.h, bounded): twice the kernel throttle
 * map's entries in slots, never more than 3/4 of them used (a new pair past
 * that is reported as the kernel says). Only pairs with suppressed denials
 * have an entry, and an entry goes when its kernel entry does.
 */
#define RECONCILE_SLOTS (2 * CUSTODE_MAX_THROTTLE)
#define RECONCILE_MAX (RECONCILE_SLOTS / 4 * 3)
/* keys a flush pass may go through (the kernel restarts a walk whose last key went): past it, the pass is cut */
#define THROTTLE_PASS_MAX (4 * CUSTODE_MAX_THROTTLE)
#define TICK_MS 1000


/* A non-blocking output: a bounded queue, flushed when the fd is writable. */
struct outq {
	struct custode_loop *loop; /* where a pollable fd waits until it is writable */
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

/*
 * Runs by cgroup id, remembered after they end: a run's last throttle
 * summary comes after it. The known-runs table (util/table.h, evicting) is
 * keyed by cgroup id; it remembers KNOWN_MAX runs (as many as its slots
 * were before it was a util/table, in twice the slots: probes stay short).
 * A new run past that evicts the run in its home slot, or if that is empty
 * the first after it: a run chosen by hash, not by age, whose later
 * summaries then carry no run id (as before: a full table recycled the
 * home slot).
 */
struct known_run {
	__u64 run_id;
	__u64 version;
};
#define KNOWN_SLOTS 32768
#define KNOWN_MAX (KNOWN_SLOTS / 2)

/* Records made by other threads (inject.c): a queue under a lock, published by the loop. */
#define INJECT_MAX 4096
struct stream_inject {
	pthread_mutex_t lock;
	json_t *q[INJECT_MAX];
	size_t head, n;
	int efd;
	uint64_t injected, dropped;
};

/*
 * What the stream already said about a (run cgroup, reason)'s suppressed
 * denials: reconciles kernel and daemon reports. The reconcile table's
 * value; its key is the pair as a struct custode_throttle_key (padding
 * zeroed).
 */
struct reconcile {
	__u64 total;
	uint64_t pass; /* the last pass over the kernel map that saw the pair's entry */
};

struct custode_stream {
	struct custode_loop *loop; /* the ring buffer, the tick, the injected records' eventfd, a slow sink */
	struct custode_stream_opts o;
	struct custode_stream_map_ops maps; /* how the engine's maps are read after open (throttle.c) */
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
	struct custode_table rec; /* struct custode_throttle_key -> struct reconcile */
	uint64_t rec_pass;
	struct custode_table known; /* cgroup id -> struct known_run */
	uint64_t last_dropped;
	__u64 baseline_boot_ns; /* CLOCK_BOOTTIME of throttle_baseline: kernel records older than it are covered by it */
	int ncpu;
	struct custode_stream_stats st;
	struct stream_inject inj;
};

/* stream.c: the ring buffer's callback (ctx: the stream), and the loop's tick (arg: the stream) */
int stream_on_record(void *ctx, void *data, size_t size);
int stream_tick(void *arg);
/* sink.c */
void stream_stdout_open(struct custode_stream *s);
int stream_file_open(struct custode_stream *s);
const char *stream_file_open_strerror(int err);
bool stream_file_dir_shared(const char *file, char *dir, size_t len, mode_t *mode);
void stream_file_check(struct custode_stream *s);
bool stream_file_untear(struct custode_stream *s);
void stream_file_write(struct custode_stream *s, const char *line, size_t n);
void stream_outq_push(struct outq *q, const char *line, size_t n);
int stream_outq_event(void *arg, uint32_t revents); /* the loop's handler of a queue's fd (arg: the outq) */
/* history.c */
void stream_publish(struct custode_stream *s, json_t *ev);
/* inject.c */
int stream_inject_init(struct custode_stream *s);
int stream_inject_open(struct custode_stream *s);
void stream_inject_close(struct custode_stream *s);
void stream_inject_fini(struct custode_stream *s);
void stream_inject_counts(struct custode_stream *s, uint64_t *injected, uint64_t *dropped);
/* throttle.c: the reconcile table (a pair's entry, made when create; removing the entries a pass did not see) */
struct reconcile *stream_rec_slot(struct custode_stream *s, __u64 cgid, __u32 reason, bool create);
void stream_rec_sweep(struct custode_stream *s);
__u64 stream_run_id_of(struct custode_stream *s, __u64 cgid, __u64 *version);
bool stream_reconcile_kernel(struct custode_stream *s, json_t *ev);
void stream_throttle_flush(struct custode_stream *s, uint64_t window_ns);
void stream_throttle_baseline(struct custode_stream *s);
void stream_drops_check(struct custode_stream *s, bool baseline);

#endif
