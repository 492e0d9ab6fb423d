/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The receipt of a run (docs/receipts.md): what ran, under which policy,
 * what was enforced and by which mechanism, what was not and why, the exact
 * denial counts, and how it ended.
 */
#ifndef CUSTODE_RUN_RECEIPT_H
#define CUSTODE_RUN_RECEIPT_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "custode/abi.h"
#include "policy/policy.h"
#include "run/env.h"
#include "run/limits.h"
#include "state/runstate.h"
#include "run/user.h"
#include "custode/resolver.h"

#define CUSTODE_RECEIPT_VERSION 1

struct custode_receipt {
	const struct custode_runstate *st;
	const struct custode_policy *policy;
	const char *policy_source;  /* "profile", "file", "bundle" */
	const char *policy_ref;     /* profile name, file path or bundle path */
	const char *policy_digest;  /* "sha256:..." over the JCS form of content, or NULL */
	const json_t *bundle;       /* bundle details (signers, validity), or NULL */
	const struct custode_run_user *user;
	char *const *argv;
	bool audit;
	size_t egress_keys, private_grants;
	const struct custode_counters *counters;
	int exit_code;              /* what custode run exits with */
	int wait_status;            /* raw waitpid status of the command, -1 if unknown */
	const char *cancelled;      /* "timeout", "signal", "output", or NULL */
	bool reaped;                /* the cgroup emptied and was removed */
	int64_t started_ns, ended_ns; /* CLOCK_REALTIME */
	int64_t memory_peak, pids_peak; /* -1: not available */
	const struct custode_dns_counters *dns; /* the resolver's counts for the run, or NULL */
	__u64 policy_version_at_end; /* the version in force at the end (a live update may have changed it) */
	const struct custode_limits_applied *limits; /* cgroup limits, or NULL */
	const struct custode_run_env *env;  /* the command's environment, or NULL */
	bool ptrace_allowed;        /* seccomp let ptrace through ("ptrace": "run") */
	int64_t timeout_sec;        /* 0: none */
	const char *timeout_source; /* "policy" or "--timeout" */
	int64_t output_cap;         /* -1: no cap */
	int64_t output_written;
};

json_t *custode_receipt_json(const struct custode_receipt *r);

/*
 * Where --receipt writes, checked (and opened, when it is no file to
 * replace) before the command starts, so an unusable destination refuses the
 * run (docs/receipts.md):
 * - "-": stdout;
 * - "/dev/fd/N", "/proc/self/fd/N": fd N, which must be open for writing;
 * - an existing FIFO, terminal or other device: opened for writing now;
 * - otherwise a regular file, written atomically at the end: it must not be
 *   a directory, and its directory must be one we may write in.
 */
struct custode_receipt_dest {
	const char *path;
	int fd; /* written directly (not atomically) when >= 0 */
};

int custode_receipt_open(const char *path, struct custode_receipt_dest *d, struct custode_refusal *why);
void custode_receipt_close(struct custode_receipt_dest *d);
/* Write the receipt where d says. */
int custode_receipt_write(const struct custode_receipt_dest *d, const json_t *receipt);

#endif
