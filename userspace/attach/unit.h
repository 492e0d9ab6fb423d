/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `custode attach --unit NAME`: a systemd unit's cgroup, asked of systemd
 * with `systemctl show` (no D-Bus library: systemctl is on every systemd
 * host, and its `show` output is a stable KEY=VALUE format). Resolved by the
 * client, which then attaches the cgroup path as `--cgroup` would; the
 * daemon checks that path as for any other attach.
 *
 * Library code: refusals (unit.no_systemd, unit.unknown, unit.no_cgroup,
 * run.usage), no logging.
 */
#ifndef CUSTODE_ATTACH_UNIT_H
#define CUSTODE_ATTACH_UNIT_H

#include <stddef.h>

#include "util/reasons.h"

/* systemd's own limit on a unit name (UNIT_NAME_MAX), the suffix included. */
#define CUSTODE_UNIT_NAME_MAX 255

/* What `systemctl show -p LoadState,ActiveState,ControlGroup` said of a unit. */
struct custode_unit_props {
	char load_state[32];   /* "loaded", "not-found", "masked", ... */
	char active_state[32]; /* "active", "activating", "inactive", ... */
	char control_group[4096]; /* "/system.slice/foo.service", or "" when it has none */
};

/*
 * Check a unit name as given on the command line and write the name to ask
 * systemd for: a name without a type suffix means NAME.service (as
 * systemctl does). Refused (run.usage): empty, over CUSTODE_UNIT_NAME_MAX,
 * starting with '-' or '.', characters outside systemd's unit-name set
 * ([A-Za-z0-9:_.@\-]), a glob.
 */
int custode_unit_name(const char *arg, char *out, size_t outlen, struct custode_refusal *why);

/*
 * Parse `systemctl show` output (KEY=VALUE lines; other keys ignored) into
 * *out. Refused (daemon.protocol is not systemd's: run.setup_failed) when a
 * key is missing or a value does not fit.
 */
int custode_unit_props_parse(const char *text, struct custode_unit_props *out, struct custode_refusal *why);

/*
 * The cgroup v2 directory of a unit: props->control_group below mount.
 * Refused: unit.unknown (LoadState not-found), unit.no_cgroup (no
 * ControlGroup: not started, or stopped), attach.cgroup (a ControlGroup
 * that is not an absolute, normalized path below the root, or is the root).
 * name: for the messages.
 */
int custode_unit_cgroup_path(const char *mount, const char *name, const struct custode_unit_props *props, char *out,
			     size_t outlen, struct custode_refusal *why);

/*
 * Is this a systemd host? PID 1 is systemd (/proc/1/comm) and
 * /run/systemd/system exists (sd_booted()'s test). 0 or unit.no_systemd.
 * root: "" for the real root (a test may point it elsewhere).
 */
int custode_unit_systemd_host(const char *root, struct custode_refusal *why);

/*
 * All of the above, for real: check name, check the host, run
 * `systemctl show` (from PATH), parse, resolve below the cgroup2 mount.
 * On success out holds the cgroup directory and unit (if non-NULL, of
 * unit_len bytes) the full unit name.
 */
int custode_unit_resolve(const char *arg, char *unit, size_t unit_len, char *out, size_t outlen,
			 struct custode_refusal *why);

#endif
