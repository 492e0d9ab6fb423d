/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Denial records: the engine's binary records (include/custode/event.h) as
 * JSON lines with stable field names (docs/events.md, docs/events.schema.json),
 * their one-line human form, filters (--run, --reason, --since), and what a
 * reader adds that the kernel does not write: the policy's name and the
 * executable's path, verified against the identity the kernel recorded.
 */
#ifndef CUSTODE_EVENTS_H
#define CUSTODE_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <linux/types.h>

#include "custode/event.h"
#include "state/state.h"

/* Name of a hook ("file_open"), or NULL. */
const char *custode_hook_name(int hook);

/*
 * A record's "time" is RFC 3339 UTC with microseconds,
 * "2026-01-01T00:00:00.123456Z": util/time.h, custode_time_show(), the form of every shown time.
 */
/* CLOCK_REALTIME - CLOCK_BOOTTIME, in ns: what turns a record's boot_ns into wall time. */
int64_t custode_boot_to_wall_ns(void);

/*
 * Validate a raw ring-buffer record (version 1 or 2) and convert it to JSON
 * (docs/events.md). boot_to_wall_ns is added to boot_ns to get wall-clock
 * time. Returns NULL for a record that is too short, of an unknown version,
 * or inconsistent. Decision records have "type": "decision", throttle
 * records "type": "throttle" (with "throttle": {count, total, since}).
 */
json_t *custode_event_to_json(const void *data, size_t size, int64_t boot_to_wall_ns);
/* One line for terminals (decision, throttle and dropped records). */
int custode_event_format(const json_t *ev, char *out, size_t len);

/* ---- filters: custode events --run ID --reason CODE --since T ---- */

struct custode_event_filter {
	bool has_run;
	__u64 run_id;
	char reason[96];     /* "" any; an exact code or an fnmatch pattern ("file.*") */
	bool has_since;
	int64_t since_wall_ns; /* records at or after this wall-clock time */
};

/*
 * --since: RFC 3339 ("2026-01-01T10:00:00Z", fraction allowed), "@UNIXSECONDS",
 * or a duration back from now_wall_ns ("90s", "15m", "2h", "7d", "1w").
 * 0 or -EINVAL.
 */
int custode_event_since_parse(const char *s, int64_t now_wall_ns, int64_t *out_wall_ns);
/* --reason: a known code, or a pattern with '*' that matches at least one known code. 0 or -EINVAL. */
int custode_event_reason_check(const char *s);
/* Does the record match? Records without a wall time never match a --since filter. */
bool custode_event_filter_match(const struct custode_event_filter *f, const json_t *ev);
/* The same on a record's run id, reason name and wall time (0: unknown). */
bool custode_event_filter_match_meta(const struct custode_event_filter *f, __u64 run_id, const char *reason,
				     int64_t wall_ns);
/* The filter as the control protocol carries it ({"run": ..., "reason": ..., "since_ns": ...}) and back. */
json_t *custode_event_filter_to_json(const struct custode_event_filter *f);
int custode_event_filter_from_json(const json_t *o, struct custode_event_filter *f);

/* ---- what a reader adds ---- */

/*
 * A reader's caches: run id → policy name (from the run's state file in
 * /run/custode/runs), and (tgid, exe identity) → the executable's path.
 */
struct custode_event_enricher;
struct custode_event_enricher *custode_event_enricher_new(void);
void custode_event_enricher_free(struct custode_event_enricher *en);
/* Remember a run's policy name (the daemon knows it before the state file may be gone). */
void custode_event_enricher_set_policy(struct custode_event_enricher *en, __u64 run_id, const char *name);
/*
 * Add "policy.name" (when known) and "exe.path" — only when /proc/TGID/exe
 * still is the file the kernel recorded (same device and inode), so a path
 * is never attributed to the wrong executable.
 */
void custode_event_enrich(struct custode_event_enricher *en, json_t *ev);

/*
 * The executable of a process by the kernel's identity: dev (major << 20 |
 * minor of the superblock) and inode, from an fd of /proc/PID/exe, its
 * fdinfo and /proc/PID/mountinfo; and its path (readlink). 0 or -errno.
 */
int custode_proc_exe(int pid, __u64 *dev, __u64 *ino, char *path, size_t len);

/* ---- reading without the daemon: the spool of records drained but not shown (spool.c) ---- */

#define CUSTODE_EVENT_SPOOL CUSTODE_STATE_DIR "/events.spool" /* its lock: PATH.lock */
#define CUSTODE_EVENT_SPOOL_MAX 10000                   /* records kept; older ones dropped and counted */

/* Where a reader takes raw records from: the ring buffer (events.c), a unit test's list. */
struct custode_event_source {
	/* Hand every waiting record to fn, in order; each is consumed. Records handed, or -errno. */
	int (*drain)(void *ctx, int (*fn)(void *arg, void *data, size_t size), void *arg);
	void *ctx;
};

struct custode_event_read {
	const char *spool;                         /* CUSTODE_EVENT_SPOOL, or a test's */
	size_t max_kept;                           /* 0: CUSTODE_EVENT_SPOOL_MAX */
	const struct custode_event_filter *filter; /* NULL: every record */
	struct custode_event_enricher *en;         /* NULL: records as the engine wrote them */
	int64_t boot_to_wall_ns;
	void (*show)(void *arg, const json_t *ev);
	void *arg;
	/* out: shown by this read, left in the spool, bad records, dropped from the spool in all */
	unsigned long shown, kept, bad;
	uint64_t dropped;
};

/*
 * One read: under the spool's lock, show the spool's records the filter
 * matches (they leave it), then drain src (NULL: none) and show what matches;
 * every record not shown stays in the spool, in order, for the next read.
 * 0, or -errno: the lock can't be taken (nothing was drained), or the spool
 * can't be read or written (r->kept says how many records that concerns).
 */
int custode_event_read_once(struct custode_event_read *r, const struct custode_event_source *src);
/*
 * Take the whole spool (the daemon, at start): fn for each record, oldest
 * first, then the spool removed; *dropped: records it had dropped. Records
 * taken, or -errno.
 */
int custode_event_spool_take(const char *path, void (*fn)(void *arg, const json_t *ev), void *arg,
			     uint64_t *dropped);

int custode_cmd_events(int argc, char **argv);

#endif
