// SPDX-License-Identifier: Apache-2.0
/* A container's cgroup, for `custode attach/detach --container` (container.h). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <jansson.h>

#include "attach/capture.h"
#include "attach/container.h"
#include "cgroup/cgroup.h"

/* More than `podman ps -a --format json` says of a few thousand containers. */
#define PS_MAX (16 << 20)
/* How deep the cgroup search goes (kubepods.slice/kubepods-besteffort.slice/...-pod<uid>.slice/<scope>: 4). */
#define SCAN_DEPTH 8

/* The runtimes' names for a container's cgroup: prefix, then the id, then the suffix. */
static const struct {
	const char *prefix, *suffix, *runtime;
} namings[] = {
	{"libpod-", ".scope", "podman"}, {"libpod-", "", "podman"},	    {"cri-containerd-", ".scope", "containerd"},
	{"crio-", ".scope", "cri-o"},	 {"docker-", ".scope", "docker"},
};

static bool is_hex(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

int custode_container_arg(const char *arg, bool *hex, struct custode_refusal *why)
{
	size_t len = arg ? strlen(arg) : 0;

	if (!len)
		return custode_refuse(why, EINVAL, CUSTODE_REASON_RUN_USAGE, "--container: an empty name or id");
	if (len > CUSTODE_CONTAINER_NAME_MAX)
		return custode_refuse(why, ENAMETOOLONG, CUSTODE_REASON_RUN_USAGE,
				      "--container '%.64s...': longer than %d characters", arg, CUSTODE_CONTAINER_NAME_MAX);
	for (const char *c = arg; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
		      (c > arg && strchr("_.-", *c))))
			return custode_refuse(why, EINVAL, CUSTODE_REASON_RUN_USAGE,
					      "--container '%.64s': '%c' is not allowed in a container name or id "
					      "([A-Za-z0-9][A-Za-z0-9_.-]*)",
					      arg, *c);
	if (hex)
		*hex = len <= CUSTODE_CONTAINER_ID_LEN && is_hex(arg, len);
	return 0;
}

const char *custode_container_scope_id(const char *base, char id[CUSTODE_CONTAINER_ID_LEN + 1])
{
	size_t len = strlen(base);

	for (size_t i = 0; i < sizeof(namings) / sizeof(namings[0]); i++) {
		size_t pl = strlen(namings[i].prefix), sl = strlen(namings[i].suffix);

		if (len != pl + CUSTODE_CONTAINER_ID_LEN + sl || strncmp(base, namings[i].prefix, pl) ||
		    strcmp(base + pl + CUSTODE_CONTAINER_ID_LEN, namings[i].suffix) ||
		    !is_hex(base + pl, CUSTODE_CONTAINER_ID_LEN))
			continue;
		if (id) {
			memcpy(id, base + pl, CUSTODE_CONTAINER_ID_LEN);
			id[CUSTODE_CONTAINER_ID_LEN] = 0;
		}
		return namings[i].runtime;
	}
	return NULL;
}

int custode_container_list_parse(const char *text, struct custode_container **list, size_t *n,
				 struct custode_refusal *why)
{
	json_error_t jerr;
	json_t *arr = json_loads(text, JSON_REJECT_DUPLICATES, &jerr), *c;
	struct custode_container *l = NULL;
	size_t i, count;

	if (!json_is_array(arr)) {
		json_decref(arr);
		return custode_refuse(why, EPROTO, CUSTODE_REASON_RUN_SETUP_FAILED,
				      "podman ps: not a JSON array%s%s", arr ? "" : ": ", arr ? "" : jerr.text);
	}
	count = json_array_size(arr);
	if (count && !(l = calloc(count, sizeof(*l)))) {
		json_decref(arr);
		return custode_refuse(why, ENOMEM, CUSTODE_REASON_RUN_SETUP_FAILED, "out of memory");
	}
	json_array_foreach(arr, i, c) {
		const char *id = json_string_value(json_object_get(c, "Id"));
		const char *state = json_string_value(json_object_get(c, "State"));
		json_t *names = json_object_get(c, "Names"), *pid = json_object_get(c, "Pid");
		const char *name = json_is_array(names) ? json_string_value(json_array_get(names, 0))
							: json_string_value(names);

		if (!id || strlen(id) != CUSTODE_CONTAINER_ID_LEN || !is_hex(id, CUSTODE_CONTAINER_ID_LEN) ||
		    (pid && !json_is_integer(pid)) || (name && strlen(name) > CUSTODE_CONTAINER_NAME_MAX)) {
			free(l);
			json_decref(arr);
			return custode_refuse(why, EPROTO, CUSTODE_REASON_RUN_SETUP_FAILED,
					      "podman ps: entry %zu has no 64-hex Id, or a bad Names or Pid", i);
		}
		memcpy(l[i].id, id, CUSTODE_CONTAINER_ID_LEN + 1);
		snprintf(l[i].name, sizeof(l[i].name), "%s", name ? name : "");
		snprintf(l[i].state, sizeof(l[i].state), "%s", state ? state : "");
		l[i].pid = pid && json_integer_value(pid) > 0 && json_integer_value(pid) <= INT_MAX
				   ? (int)json_integer_value(pid)
				   : 0;
	}
	json_decref(arr);
	*list = l;
	*n = count;
	return 0;
}

int custode_container_pick(const struct custode_container *list, size_t n, const char *arg, size_t *idx,
			   struct custode_refusal *why)
{
	size_t len = strlen(arg), found = n, matches = 0;

	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i].id, arg)) {
			*idx = i;
			return 0;
		}
	for (size_t i = 0; i < n; i++)
		if (list[i].name[0] && !strcmp(list[i].name, arg)) {
			*idx = i;
			return 0;
		}
	for (size_t i = 0; i < n; i++)
		if (!strncmp(list[i].id, arg, len)) {
			found = i;
			matches++;
		}
	if (matches > 1)
		return custode_refuse(why, EEXIST, CUSTODE_REASON_CONTAINER_AMBIGUOUS,
				      "'%s' is the start of %zu container ids (give more of the id, or the name)", arg,
				      matches);
	if (!matches)
		return custode_refuse(why, ENOENT, CUSTODE_REASON_CONTAINER_UNKNOWN,
				      "no container has the id or name '%s'", arg);
	*idx = found;
	return 0;
}

int custode_container_cgroup_of(const char *cgdir, const char *id, char *out, size_t outlen,
				struct custode_refusal *why)
{
	size_t len = strlen(cgdir);
	char got[CUSTODE_CONTAINER_ID_LEN + 1];

	while (len > 1) {
		size_t start = len;

		while (start > 0 && cgdir[start - 1] != '/')
			start--;
		if (start > 0 && len - start <= NAME_MAX) {
			char base[NAME_MAX + 1];

			memcpy(base, cgdir + start, len - start);
			base[len - start] = 0;
			if (custode_container_scope_id(base, got) && !strcmp(got, id)) {
				if (len >= outlen)
					return custode_refuse(why, ENAMETOOLONG, CUSTODE_REASON_ATTACH_CGROUP,
							      "container %.12s: its cgroup path is longer than %zu bytes",
							      id, outlen - 1);
				memcpy(out, cgdir, len);
				out[len] = 0;
				return 0;
			}
		}
		if (start == 0)
			break;
		len = start - 1;
	}
	return custode_refuse(why, ESRCH, CUSTODE_REASON_ATTACH_CGROUP,
			      "container %.12s: its process's cgroup %.256s is not named for it (libpod-<id>.scope, "
			      "...): was it started with --cgroups=disabled or split?",
			      id, cgdir);
}

/* What the search found so far. */
struct scan {
	const char *prefix;
	size_t prefix_len;
	char id[CUSTODE_CONTAINER_ID_LEN + 1];
	char path[PATH_MAX];
	size_t ids, dirs;
};

static void scan_dir(struct scan *s, const char *dir, int depth)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char id[CUSTODE_CONTAINER_ID_LEN + 1], sub[PATH_MAX];

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) >= (int)sizeof(sub))
			continue;
		if (custode_container_scope_id(de->d_name, id) && !strncmp(id, s->prefix, s->prefix_len)) {
			/* its own subtree is the container's: not searched */
			if (!s->dirs || strcmp(s->id, id))
				s->ids++;
			s->dirs++;
			memcpy(s->id, id, sizeof(id));
			snprintf(s->path, sizeof(s->path), "%s", sub);
			continue;
		}
		if (depth < SCAN_DEPTH)
			scan_dir(s, sub, depth + 1);
	}
	closedir(d);
}

int custode_container_scan(const char *mount, const char *prefix, char *out, size_t outlen,
			   char id[CUSTODE_CONTAINER_ID_LEN + 1], struct custode_refusal *why)
{
	struct scan s = {.prefix = prefix, .prefix_len = strlen(prefix)};

	scan_dir(&s, mount, 1);
	if (!s.dirs)
		return custode_refuse(why, ENOENT, CUSTODE_REASON_CONTAINER_UNKNOWN,
				      "no container cgroup (libpod-, cri-containerd-, crio-, docker-<id>.scope) below "
				      "%s has an id starting with '%s'",
				      mount, prefix);
	if (s.ids > 1 || s.dirs > 1)
		return custode_refuse(why, EEXIST, CUSTODE_REASON_CONTAINER_AMBIGUOUS,
				      "'%s' matches %zu container cgroups below %s (give more of the id)", prefix, s.dirs,
				      mount);
	if (strlen(s.path) >= outlen)
		return custode_refuse(why, ENAMETOOLONG, CUSTODE_REASON_ATTACH_CGROUP,
				      "container %.12s: its cgroup path is longer than %zu bytes", s.id, outlen - 1);
	snprintf(out, outlen, "%s", s.path);
	memcpy(id, s.id, CUSTODE_CONTAINER_ID_LEN + 1);
	return 0;
}

/*
 * Ask podman. 1: podman is not there or did not answer (*why says why, for
 * when nothing else finds it); 0 with *list; <0 refused.
 */
static int podman_list(struct custode_container **list, size_t *n, struct custode_refusal *why)
{
	char *argv[] = {"podman", "ps", "--all", "--no-trunc", "--format", "json", NULL};
	char *text = NULL;
	int status = 0, err = custode_capture(argv, PS_MAX, true, &text, &status);

	if (err == -ENOENT) {
		custode_refuse(why, ENOENT, CUSTODE_REASON_CONTAINER_NO_RUNTIME,
			       "podman is not in PATH: a container name needs it (give the id: the cgroup tree is "
			       "searched for it)");
		return 1;
	}
	if (err)
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "running podman ps: %s",
				      strerror(-err));
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		free(text);
		custode_refuse(why, EIO, CUSTODE_REASON_CONTAINER_NO_RUNTIME,
			       "podman ps failed (exit %d): a container name needs it (give the id: the cgroup tree is "
			       "searched for it)",
			       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		return 1;
	}
	err = custode_container_list_parse(text, list, n, why);
	free(text);
	return err;
}

int custode_container_resolve(const char *arg, struct custode_container_found *out, struct custode_refusal *why)
{
	struct custode_container *list = NULL;
	struct custode_refusal asked = {0};
	int asked_err = 0;
	char mount[PATH_MAX], cgdir[PATH_MAX];
	size_t n = 0, i;
	bool hex;
	int err;

	if ((err = custode_container_arg(arg, &hex, why)))
		return err;
	if ((err = custode_cgroup2_mount(mount, sizeof(mount))) < 0)
		return custode_refuse(why, -err, CUSTODE_REASON_CGROUP_FAILED, "no cgroup v2 mount: %s", strerror(-err));
	err = podman_list(&list, &n, &asked);
	asked_err = err > 0 ? -ENOENT : err;
	if (err < 0) {
		*why = asked;
		return err;
	}
	if (err == 0 && (err = asked_err = custode_container_pick(list, n, arg, &i, &asked)) == 0) {
		const struct custode_container *c = &list[i];

		memset(out, 0, sizeof(*out));
		memcpy(out->id, c->id, sizeof(out->id));
		memcpy(out->name, c->name, sizeof(out->name));
		out->runtime = "podman";
		if (c->pid <= 0 || (strcmp(c->state, "running") && strcmp(c->state, "paused")))
			err = custode_refuse(why, ESRCH, CUSTODE_REASON_CONTAINER_NOT_RUNNING,
					     "container %s (%.12s) is %s: it has no process, no cgroup to attach",
					     c->name[0] ? c->name : "-", c->id, c->state[0] ? c->state : "not running");
		else if ((err = custode_cgroup_of_pid(mount, c->pid, cgdir, sizeof(cgdir))) < 0)
			err = custode_refuse(why, -err, err == -ENOENT ? CUSTODE_REASON_CONTAINER_NOT_RUNNING
								       : CUSTODE_REASON_ATTACH_CGROUP,
					     "container %s (%.12s): the cgroup of its process %d: %s",
					     c->name[0] ? c->name : "-", c->id, c->pid, strerror(-err));
		else
			err = custode_container_cgroup_of(cgdir, c->id, out->cgroup, sizeof(out->cgroup), why);
		free(list);
		return err;
	}
	free(list);
	/* an ambiguous prefix among podman's is ambiguous: not searched further */
	if (err < 0 && asked.reason == CUSTODE_REASON_CONTAINER_AMBIGUOUS) {
		*why = asked;
		return err;
	}
	if (!hex) {
		*why = asked;
		return asked_err < 0 ? asked_err : -ENOENT;
	}
	memset(out, 0, sizeof(*out));
	if ((err = custode_container_scan(mount, arg, out->cgroup, sizeof(out->cgroup), out->id, why)))
		return err;
	out->runtime = custode_container_scope_id(strrchr(out->cgroup, '/') + 1, NULL);
	return 0;
}
