/* SPDX-License-Identifier: Apache-2.0 */
/*
 * custode's exit statuses: the one list. Users script against these
 * (docs/cli.md has the table of every command, README.md, docs/bundles.md,
 * each command's --help); a value here never changes. 0 is success;
 * EXIT_FAILURE (1) only where docs/cli.md says so: doctor (none available),
 * gc (a run not reaped) and daemon (a fatal error while running).
 *
 * The 124-127 range follows timeout(1), env(1) and chroot(1), so
 * `custode run` composes with them: a status the wrapped command cannot
 * easily produce by accident means custode itself spoke.
 */
#ifndef CUSTODE_UTIL_EXIT_H
#define CUSTODE_UTIL_EXIT_H

/* Bad command line: unknown option, missing or malformed argument. */
#define EXIT_USAGE 2
/* run --timeout expired and the run was killed (as timeout(1)). */
#define EXIT_TIMEOUT 124
/*
 * custode refused or failed, not root included: the reason code is on stderr
 * (run, attach, detach, runs, events, gc, daemon, engine; not doctor).
 */
#define EXIT_REFUSED 125
/* run: the command was found but could not be executed (as env(1)). */
#define EXIT_CANNOT_EXEC 126
/* run: the command was not found (as env(1)). */
#define EXIT_NOT_FOUND 127

/*
 * `custode bundle ...` refused: a bundle, key or state file that does not
 * verify, or a signing step that failed. 1 and not EXIT_REFUSED because the
 * bundle commands never wrap another command, so there is no status to stay
 * clear of, and docs/bundles.md promised "1 refused" before the list was
 * unified: scripts test for it.
 */
#define EXIT_BUNDLE_REFUSED 1

#endif
