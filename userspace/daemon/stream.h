/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The denial stream (docs/events.md, docs/operations.md): the daemon is the
 * one consumer of the engine's ring buffer. Each record becomes a JSON line
 * (policy name and executable path added) written to stdout (the journal
 * under systemd), optionally to a rotating file, kept in a bounded history
 * for `custode events`, and passed to followers. No sink ever blocks the
 * daemon: a sink that can't keep up loses lines and the loss is counted; the
 * engine itself never waits for anyone (a full ring buffer drops records and
 * counts them per CPU).
 */
#ifndef CUSTODE_DAEMON_STREAM_H
#define CUSTODE_DAEMON_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "events/events.h"
#include "util/reasons.h"

/* The stream: a handle, from custode_stream_open (or _new), passed to every function below. */
struct custode_stream;
struct custode_loop;

/*
 * How the stream reads the engine's maps once it is open (throttle
 * summaries, run ids, drop counts): libbpf's bpf_map_get_next_key and
 * bpf_map_lookup_elem by default; a unit test passes a fake kernel map.
 */
struct custode_stream_map_ops {
	int (*get_next_key)(void *ctx, int fd, const void *key, void *next_key);
	int (*lookup_elem)(void *ctx, int fd, const void *key, void *value);
	void *ctx;
};

struct custode_stream_opts {
	const char *stdout_format; /* "json" (default), "text", "none" */
	const char *file;          /* rotating JSON-lines file, or NULL */
	uint64_t file_max_bytes;   /* rotate past this (default 64 MiB) */
	unsigned file_keep;        /* rotated files kept: FILE.1 .. FILE.N (default 5) */
	size_t history;            /* records kept in memory for `custode events` (default 10000) */
	uint32_t throttle_burst;   /* 0: the engine's default */
	uint64_t throttle_window_ms;
	bool no_throttle;
	const struct custode_stream_map_ops *maps; /* NULL: libbpf's (copied: need not outlive the call) */
};

/*
 * The daemon's stream: the engine's maps, the sinks (stdout, --events-file),
 * the baselines, the ring buffer and the tick in the daemon's loop (which
 * must outlive the stream). 0 and *out, or -errno with why filled (*out
 * untouched).
 */
int custode_stream_open(struct custode_loop *loop, const struct custode_stream_opts *o, struct custode_stream **out,
			struct custode_refusal *why);
/*
 * A stream without the engine (what _open builds first): the options with
 * their defaults, the history and the throttle tables; no map, no sink
 * opened, nothing in the loop yet (stdout is no sink: out.fd -1); loop is
 * where a sink opened later waits (NULL: a stream with no pollable sink).
 * For unit tests, which then open what they need through stream_impl.h. 0
 * and *out, or -ENOMEM.
 */
int custode_stream_new(struct custode_loop *loop, const struct custode_stream_opts *o, struct custode_stream **out);
/* Flush and close what is open, give the engine its default throttling back, free the stream. NULL: nothing. */
void custode_stream_close(struct custode_stream *s);

/*
 * A follower takes one record line (JSON, no newline); false when it can't
 * right now (the stream counts the loss for it; lost_fn tells it later).
 */
typedef bool (*custode_stream_take_fn)(void *ctx, const char *line, size_t len);

/* Replay the history through take (oldest first); returns how many matched. */
size_t custode_stream_replay(struct custode_stream *s, const struct custode_event_filter *f, custode_stream_take_fn take,
			     void *ctx);
/*
 * A replay that resumes: a reader that can't take the whole history at once
 * (a client's queue is full) goes on where it stopped, and the history
 * keeps moving meanwhile. A cursor starts at the oldest record kept
 * (-ENOSPC when all are in use). _next passes the matching records it has
 * not passed yet through take, oldest first, adding to *taken (may be
 * NULL), until take returns false (that record is offered again next time:
 * false) or it has passed the newest (true: caught up; a reader that goes
 * on to follow calls custode_stream_follow now, before anything new comes).
 * _lost: matching records that left the history before the cursor got to
 * them, since the last call (a reader says so before its next record).
 */
int custode_stream_cursor_open(struct custode_stream *s, const struct custode_event_filter *f);
bool custode_stream_cursor_next(struct custode_stream *s, int h, custode_stream_take_fn take, void *ctx, size_t *taken);
uint64_t custode_stream_cursor_lost(struct custode_stream *s, int h);
void custode_stream_cursor_close(struct custode_stream *s, int h);
/* Follow new records; returns a handle for unfollow, or -ENOSPC. */
int custode_stream_follow(struct custode_stream *s, const struct custode_event_filter *f, custode_stream_take_fn take,
			  void *ctx);
void custode_stream_unfollow(struct custode_stream *s, int handle);

/* A registered run (the daemon's snapshots): remembered for summaries written after it ended. */
void custode_stream_note_run(struct custode_stream *s, __u64 cgid, __u64 run_id, __u64 version);
/* The daemon learned a run's policy name (attach): used for its records. */
void custode_stream_set_policy(struct custode_stream *s, __u64 run_id, const char *name);

/*
 * A record made by another thread (the resolver's decisions): queued under a
 * lock and published by the event loop like any other. Takes the reference.
 * Never blocks: past the queue's bound the record is dropped and counted.
 */
void custode_stream_inject(struct custode_stream *s, json_t *ev);

struct custode_stream_stats {
	uint64_t records;          /* decision records published */
	uint64_t throttle_records; /* throttle records published (kernel and daemon) */
	uint64_t throttled;        /* denials those throttle records cover */
	uint64_t dropped;          /* records the ring buffer lost, as reported in "dropped" records */
	uint64_t bad;              /* records of an unknown version or size */
	uint64_t sink_dropped[2];  /* lines a slow or gone sink lost: [0] stdout, [1] file */
	uint64_t file_rotations;
	uint64_t file_reopens;     /* the events file was renamed or removed under us (logrotate): opened again */
	uint64_t injected;         /* records from other threads published (resolver decisions) */
	uint64_t inject_dropped;   /* and lost because the loop had not taken the previous ones yet */
	size_t history, followers;
};
void custode_stream_stats(struct custode_stream *s, struct custode_stream_stats *out);

#endif
