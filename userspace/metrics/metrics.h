/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Metrics in the Prometheus text exposition format (version 0.0.4), served
 * by the daemon on a local endpoint and/or written to a textfile for
 * node_exporter (docs/operations.md, "Metrics").
 */
#ifndef CUSTODE_METRICS_H
#define CUSTODE_METRICS_H

#include <stddef.h>
#include <stdint.h>

/*
 * The bundle hook: record the accepted bundle of a policy — its version and
 * validity window (unix seconds) — shown as custode_policy_bundle_version and
 * custode_policy_bundle_not_after_seconds{policy=...}. Thread-safe; call
 * whenever a bundle is accepted (the daemon's bundle watcher).
 */
void custode_metrics_set_bundle(const char *policy, uint64_t version, int64_t not_before, int64_t not_after);
/* Forget a policy's bundle (no longer offered). */
void custode_metrics_clear_bundle(const char *policy);
/* Call fn for each recorded bundle (under the lock: fn must not call back into the hook). */
void custode_metrics_each_bundle(void (*fn)(void *ctx, const char *policy, uint64_t version, int64_t not_before,
					    int64_t not_after),
				 void *ctx);

/* ---- the exposition format (pure; unit-tested) ---- */

struct custode_prom;

struct custode_prom *custode_prom_new(void);
void custode_prom_free(struct custode_prom *p);
/* Declare a family (once; later samples of that name belong to it). type: "counter", "gauge". */
void custode_prom_family(struct custode_prom *p, const char *name, const char *type, const char *help);
/*
 * A sample of a declared family: labels as name, value pairs ending with
 * NULL (values escaped as the format requires). A sample with the same name
 * and labels as an earlier one is added to it.
 */
void custode_prom_add(struct custode_prom *p, const char *name, double value, ...) __attribute__((sentinel));
/* A family of one sample without labels: custode_prom_family(), then custode_prom_add() of value. */
void custode_prom_one(struct custode_prom *p, const char *name, const char *type, const char *help, double value);
/* The text: families in declaration order, samples sorted by labels. Caller frees. */
char *custode_prom_render(const struct custode_prom *p);

/* Escape a label value (\\, \", \n) into out. */
void custode_prom_escape(const char *in, char *out, size_t len);

#endif
