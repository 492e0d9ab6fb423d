/* SPDX-License-Identifier: Apache-2.0 */
/*
 * custode daemon --bundles DIR: watch a directory of signed bundles (plain
 * files, or a Kubernetes ConfigMap mount with its ..data symlink swap), and
 * apply each new version of a policy to the live runs started with that
 * policy's bundle (docs/bundles.md, "Live updates"): verify → accept (the
 * version floor, persisted) → swap each run atomically. Any failure keeps
 * the last good policy in force.
 */
#ifndef CUSTODE_DAEMON_BUNDLES_H
#define CUSTODE_DAEMON_BUNDLES_H

#include "bundle/bundle.h"
#include "engine/engine.h"

struct custode_bundle_watch;

/* The watch owns trust. state_dir NULL: CUSTODE_BUNDLE_STATE_DIR. */
int custode_bundle_watch_open(const char *dir, const char *state_dir, struct custode_trust *trust,
			      struct custode_bundle_watch **out, struct custode_refusal *why);
void custode_bundle_watch_close(struct custode_bundle_watch *w);
/* An inotify fd: readable when DIR changed (then call scan). */
int custode_bundle_watch_fd(const struct custode_bundle_watch *w);
/* Drain the fd's events, rescan DIR, accept and apply what is new. Logs to stderr. */
void custode_bundle_watch_scan(struct custode_bundle_watch *w, struct custode_engine *e);

/*
 * Watch in a thread of its own (with its own engine handle): scan at start,
 * on every change, and every minute, until *stop. 0 or -errno.
 */
int custode_bundle_watch_start(struct custode_bundle_watch *w, volatile int *stop);
void custode_bundle_watch_join(struct custode_bundle_watch *w);

#endif
