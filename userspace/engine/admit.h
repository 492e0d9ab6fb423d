/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Upgrades without draining (docs/process.md, "Upgrades"): once the process
 * class is loaded, only the binary that loaded it may open the engine. A
 * binary that may open it admits another custode binary — the daemon, asked
 * over its control socket by the new binary itself, or `custode engine admit
 * --exe PATH` run by an admitted binary — by adding that file's identity
 * (struct custode_exe_key) to the map custode_admitted.
 *
 * What is admitted: a regular file owned by root and writable by no one else,
 * whose contents carry custode's ABI marker (CUSTODE_ABI_MARKER) with the
 * pinned engine's ABI version. A binary of another ABI could not use the
 * engine's maps: refused (engine.abi_differs) rather than admitted uselessly.
 */
#ifndef CUSTODE_ENGINE_ADMIT_H
#define CUSTODE_ENGINE_ADMIT_H

#include <stddef.h>
#include <linux/types.h>
#include <jansson.h>

#include "util/reasons.h"

/*
 * The engine ABI version a binary's contents declare: 0 and *abi; -ENOENT
 * when no marker is followed by a version and a newline; -EINVAL when two
 * markers disagree. Pure (unit-tested).
 */
int custode_binary_abi_parse(const void *buf, size_t len, unsigned *abi);

/*
 * Whether the file open at fd (read access) may be admitted to an engine of
 * engine_abi: 0 and *abi (its version); refused with engine.admit_refused
 * (not a regular file, not root's, writable by group or others, no marker,
 * larger than 1 GiB) or engine.abi_differs.
 */
int custode_admit_check(int fd, unsigned engine_abi, unsigned *abi, struct custode_refusal *why);

/*
 * Admit the executable open at fd (read access; its mount in the mount
 * namespace of mount_pid, 0 for this process's) to the pinned engine of
 * engine_abi, on behalf of process by. 0 admitted now, 1 already allowed
 * (this very binary, admitted before, or an engine without the process class,
 * which reserves it to no binary); refused otherwise (why).
 * *out (when non-NULL): {"dev", "ino", "abi_version", "already", "reserved"}.
 */
int custode_engine_admit_fd(int fd, int mount_pid, unsigned engine_abi, int by, json_t **out,
			    struct custode_refusal *why);

/*
 * Binaries admitted to the pinned engine, as a JSON array of {"dev", "ino",
 * "abi_version", "by_pid", "admitted_at"}; an empty array when the process
 * class (and its map) is absent; NULL when the map can't be read.
 */
json_t *custode_engine_admitted_json(void);

#endif
