// SPDX-License-Identifier: Apache-2.0
/* A systemd unit's cgroup, for `custode attach --unit` (unit.h). */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attach/capture.h"
#include "attach/unit.h"
#include "cgroup/cgroup.h"

/* The unit types systemctl recognises in a name; without one, NAME means NAME.service. */
static const char *const unit_types[] = {".service", ".socket", ".target", ".device", ".mount", ".automount",
					 ".swap",    ".timer",  ".path",   ".slice",  ".scope"};

/* More than `systemctl show` of three properties can say (a ControlGroup is at most PATH_MAX). */
#define SHOW_MAX 65536

static bool has_type(const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; i < sizeof(unit_types) / sizeof(unit_types[0]); i++) {
		size_t tl = strlen(unit_types[i]);

		if (len > tl && !strcmp(name + len - tl, unit_types[i]))
			return true;
	}
	return false;
}

int custode_unit_name(const char *arg, char *out, size_t outlen, struct custode_refusal *why)
{
	size_t len = arg ? strlen(arg) : 0;
	bool typed;

	if (!len)
		return custode_refuse(why, EINVAL, CUSTODE_REASON_RUN_USAGE, "--unit: an empty unit name");
	if (arg[0] == '-' || arg[0] == '.')
		return custode_refuse(why, EINVAL, CUSTODE_REASON_RUN_USAGE,
				      "--unit '%.64s': a unit name does not start with '%c'", arg, arg[0]);
	for (const char *c = arg; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
		      strchr(":_.@-\\", *c)))
			return custode_refuse(why, EINVAL, CUSTODE_REASON_RUN_USAGE,
					      "--unit '%.64s': '%c' is not allowed in a unit name (one unit, no glob)",
					      arg, *c);
	typed = has_type(arg);
	if (len + (typed ? 0 : strlen(".service")) > CUSTODE_UNIT_NAME_MAX)
		return custode_refuse(why, ENAMETOOLONG, CUSTODE_REASON_RUN_USAGE,
				      "--unit '%.64s...': longer than systemd's %d characters", arg,
				      CUSTODE_UNIT_NAME_MAX);
	if (len + (typed ? 0 : strlen(".service")) >= outlen)
		return custode_refuse(why, ENAMETOOLONG, CUSTODE_REASON_RUN_USAGE, "--unit: the name does not fit");
	snprintf(out, outlen, "%s%s", arg, typed ? "" : ".service");
	return 0;
}

/* Copy the value of KEY=VALUE line text (which starts with key=) into out. */
static int take(const char *line, size_t len, const char *key, char *out, size_t outlen, bool *seen)
{
	size_t kl = strlen(key);

	if (len < kl + 1 || strncmp(line, key, kl) || line[kl] != '=')
		return 0;
	if (len - kl - 1 >= outlen)
		return -ENAMETOOLONG;
	memcpy(out, line + kl + 1, len - kl - 1);
	out[len - kl - 1] = 0;
	*seen = true;
	return 1;
}

int custode_unit_props_parse(const char *text, struct custode_unit_props *out, struct custode_refusal *why)
{
	struct custode_unit_props p = {0};
	bool seen[3] = {false, false, false};
	static const char *const keys[3] = {"LoadState", "ActiveState", "ControlGroup"};

	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char *dst[3] = {p.load_state, p.active_state, p.control_group};
		size_t dlen[3] = {sizeof(p.load_state), sizeof(p.active_state), sizeof(p.control_group)};

		for (int k = 0; k < 3; k++) {
			int r = take(line, len, keys[k], dst[k], dlen[k], &seen[k]);

			if (r < 0)
				return custode_refuse(why, -r, CUSTODE_REASON_RUN_SETUP_FAILED,
						      "systemctl show: %s is longer than %zu bytes", keys[k], dlen[k] - 1);
			if (r)
				break;
		}
		line = nl ? nl + 1 : NULL;
	}
	for (int k = 0; k < 3; k++)
		if (!seen[k])
			return custode_refuse(why, EPROTO, CUSTODE_REASON_RUN_SETUP_FAILED,
					      "systemctl show: no %s= in its output", keys[k]);
	*out = p;
	return 0;
}

int custode_unit_cgroup_path(const char *mount, const char *name, const struct custode_unit_props *props, char *out,
			     size_t outlen, struct custode_refusal *why)
{
	const char *cg = props->control_group;

	if (!strcmp(props->load_state, "not-found"))
		return custode_refuse(why, ENOENT, CUSTODE_REASON_UNIT_UNKNOWN, "%s: systemd has no such unit", name);
	if (!cg[0])
		return custode_refuse(why, ESRCH, CUSTODE_REASON_UNIT_NO_CGROUP,
				      "%s has no cgroup (LoadState=%s, ActiveState=%s): start it first, or attach "
				      "it from its own ExecStartPre=+ (docs/operations.md)",
				      name, props->load_state, props->active_state);
	/*
	 * systemd writes a normalized absolute path; anything else is not a
	 * value to join to the mount (a ".." would leave it).
	 */
	if (cg[0] != '/' || !strcmp(cg, "/") || strstr(cg, "//") || cg[strlen(cg) - 1] == '/')
		return custode_refuse(why, EINVAL, CUSTODE_REASON_ATTACH_CGROUP,
				      "%s: ControlGroup '%.256s' is not a cgroup below the root", name, cg);
	for (const char *c = cg; (c = strstr(c, "/.")); c++)
		if (c[2] == 0 || c[2] == '/' || (c[2] == '.' && (c[3] == 0 || c[3] == '/')))
			return custode_refuse(why, EINVAL, CUSTODE_REASON_ATTACH_CGROUP,
					      "%s: ControlGroup '%.256s' is not a normalized path", name, cg);
	if (strlen(mount) + strlen(cg) >= outlen)
		return custode_refuse(why, ENAMETOOLONG, CUSTODE_REASON_ATTACH_CGROUP,
				      "%s: %s%.64s... is longer than %zu bytes", name, mount, cg, outlen - 1);
	snprintf(out, outlen, "%s%s", mount, cg);
	return 0;
}

int custode_unit_systemd_host(const char *root, struct custode_refusal *why)
{
	char path[PATH_MAX], comm[32] = "";
	struct stat st;
	FILE *f;

	snprintf(path, sizeof(path), "%s/proc/1/comm", root);
	if ((f = fopen(path, "re"))) {
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
	}
	comm[strcspn(comm, "\n")] = 0;
	if (strcmp(comm, "systemd"))
		return custode_refuse(why, ENOSYS, CUSTODE_REASON_UNIT_NO_SYSTEMD,
				      "PID 1 is '%s', not systemd: --unit needs a systemd host (use --cgroup PATH)",
				      comm[0] ? comm : "unknown");
	snprintf(path, sizeof(path), "%s/run/systemd/system", root);
	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return custode_refuse(why, ENOSYS, CUSTODE_REASON_UNIT_NO_SYSTEMD,
				      "%s is missing: systemd did not boot this host (use --cgroup PATH)", path);
	return 0;
}

/* Run `systemctl show` of three properties of unit; its stdout (malloc'd) in *text. */
static int systemctl_show(const char *unit, char **text, struct custode_refusal *why)
{
	char *argv[] = {"systemctl", "show", "--property=LoadState", "--property=ActiveState",
			"--property=ControlGroup", "--", (char *)unit, NULL};
	char *buf = NULL;
	int status = 0, err = custode_capture(argv, SHOW_MAX, false, &buf, &status);

	if (err == -ENOENT)
		return custode_refuse(why, ENOENT, CUSTODE_REASON_UNIT_NO_SYSTEMD,
				      "running systemctl: %s (not in PATH: --unit needs a systemd host; use --cgroup PATH)",
				      strerror(ENOENT));
	if (err == -E2BIG)
		return custode_refuse(why, E2BIG, CUSTODE_REASON_RUN_SETUP_FAILED, "systemctl show: more than %d bytes",
				      SHOW_MAX);
	if (err)
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "running systemctl: %s", strerror(-err));
	/* e.g. "System has not been booted with systemd", or no bus: its stderr said which */
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		free(buf);
		return custode_refuse(why, ENOSYS, CUSTODE_REASON_UNIT_NO_SYSTEMD,
				      "systemctl show %s failed (exit %d): is systemd running? (use --cgroup PATH)", unit,
				      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	}
	*text = buf;
	return 0;
}

int custode_unit_resolve(const char *arg, char *unit, size_t unit_len, char *out, size_t outlen,
			 struct custode_refusal *why)
{
	struct custode_unit_props *props = NULL;
	char name[CUSTODE_UNIT_NAME_MAX + 1], mount[PATH_MAX];
	char *text = NULL;
	int err;

	if ((err = custode_unit_name(arg, name, sizeof(name), why)) || (err = custode_unit_systemd_host("", why)))
		return err;
	if ((err = custode_cgroup2_mount(mount, sizeof(mount))) < 0)
		return custode_refuse(why, -err, CUSTODE_REASON_CGROUP_FAILED, "no cgroup v2 mount: %s", strerror(-err));
	if ((err = systemctl_show(name, &text, why)))
		return err;
	if (!(props = malloc(sizeof(*props)))) {
		err = custode_refuse(why, ENOMEM, CUSTODE_REASON_RUN_SETUP_FAILED, "out of memory");
		goto out;
	}
	if ((err = custode_unit_props_parse(text, props, why)) ||
	    (err = custode_unit_cgroup_path(mount, name, props, out, outlen, why)))
		goto out;
	if (unit)
		snprintf(unit, unit_len, "%s", name);
out:
	free(props);
	free(text);
	return err;
}
