/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `custode attach --container ID|NAME` and `custode detach --container`: a
 * container's cgroup v2, found through its runtime's cgroup naming. Resolved
 * by the client, which then attaches (or detaches) the cgroup path as
 * `--cgroup` would; the daemon checks that path as for any other attach.
 *
 * Two ways, in order (docs/operations.md, "Attaching a container"):
 *  1. podman, when it is in PATH: `podman ps -a --no-trunc --format json`
 *     lists the containers (id, names, state, pid); ARG is a full id, a
 *     name or a unique id prefix (podman's own lookup order). The cgroup is
 *     the one of the container's process (/proc/PID/cgroup), or the nearest
 *     ancestor of it, that carries the runtime's name for that id.
 *  2. otherwise, or when podman does not know ARG and ARG is hex: the
 *     cgroup tree is searched for the runtimes' scope names with an id that
 *     starts with ARG (any runtime: containerd, CRI-O, docker, podman).
 *
 * Library code: refusals (container.unknown, container.ambiguous,
 * container.not_running, container.no_runtime, attach.cgroup, run.usage),
 * no logging.
 */
#ifndef CUSTODE_ATTACH_CONTAINER_H
#define CUSTODE_ATTACH_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>

#include "util/reasons.h"

/* A full container id: 64 lowercase hex digits (podman, docker, containerd, CRI-O). */
#define CUSTODE_CONTAINER_ID_LEN 64
/* The longest name taken (podman and docker have none; this bounds ours). */
#define CUSTODE_CONTAINER_NAME_MAX 255

/* One container as its runtime lists it. */
struct custode_container {
	char id[CUSTODE_CONTAINER_ID_LEN + 1];
	char name[CUSTODE_CONTAINER_NAME_MAX + 1]; /* the first name, or "" */
	char state[32];				   /* "running", "exited", "created", "paused", ... */
	int pid;				   /* the container's first process, 0 when none */
};

/*
 * Check ARG as given on the command line: a name ([A-Za-z0-9][A-Za-z0-9_.-]*,
 * at most CUSTODE_CONTAINER_NAME_MAX) or an id prefix (which is such a name
 * too). Refused (run.usage): empty, too long, another character. *is_hex:
 * ARG could be an id prefix (1 to 64 lowercase hex digits).
 */
int custode_container_arg(const char *arg, bool *is_hex, struct custode_refusal *why);

/*
 * Is base (one cgroup directory name) a runtime's name for a container:
 * libpod-<id>.scope or libpod-<id> (podman, systemd or cgroupfs manager),
 * cri-containerd-<id>.scope, crio-<id>.scope, docker-<id>.scope, with a
 * full id? Its runtime ("podman", "containerd", "cri-o", "docker") or NULL;
 * the id into id (if non-NULL). libpod-conmon-<id>.scope and
 * crio-conmon-<id>.scope (the monitors, not the containers) are not.
 */
const char *custode_container_scope_id(const char *base, char id[CUSTODE_CONTAINER_ID_LEN + 1]);

/*
 * Parse the JSON array of `podman ps -a --no-trunc --format json` (fields
 * Id, Names, State, Pid; others ignored) into *list (malloc'd, *n entries).
 * Refused (run.setup_failed) when it is not such an array.
 */
int custode_container_list_parse(const char *text, struct custode_container **list, size_t *n,
				 struct custode_refusal *why);

/*
 * Which container of list ARG names: the one with that full id, else the
 * one of that name, else the one whose id starts with ARG. *idx on success.
 * Refused: container.unknown (none), container.ambiguous (a prefix of more
 * than one id).
 */
int custode_container_pick(const struct custode_container *list, size_t n, const char *arg, size_t *idx,
			   struct custode_refusal *why);

/*
 * The container's cgroup from the cgroup directory of its process (cgdir,
 * an absolute path): cgdir itself or the nearest ancestor whose name is a
 * runtime's name for id (a container may run in a child of its scope).
 * Refused (attach.cgroup): none is (e.g. `podman run --cgroups=disabled`,
 * whose processes stay in conmon's cgroup), or it would not fit.
 */
int custode_container_cgroup_of(const char *cgdir, const char *id, char *out, size_t outlen,
				struct custode_refusal *why);

/*
 * Search the cgroup tree below mount (at most 8 levels deep) for runtime
 * scope names (custode_container_scope_id) whose id starts with prefix. One
 * id: its topmost directory into out, the id into id. Refused:
 * container.unknown (none), container.ambiguous (more than one id, or two
 * unnested directories of one id).
 */
int custode_container_scan(const char *mount, const char *prefix, char *out, size_t outlen,
			   char id[CUSTODE_CONTAINER_ID_LEN + 1], struct custode_refusal *why);

/* What custode_container_resolve found. */
struct custode_container_found {
	char id[CUSTODE_CONTAINER_ID_LEN + 1];
	char name[CUSTODE_CONTAINER_NAME_MAX + 1]; /* "" when found by the cgroup search */
	const char *runtime;			   /* "podman", "containerd", "cri-o", "docker" */
	char cgroup[4096];			   /* the cgroup directory */
};

/*
 * All of the above, for real (podman from PATH). Refused as above, plus
 * container.not_running (podman knows it, but it has no process) and
 * container.no_runtime (ARG is not hex and podman can't be asked).
 */
int custode_container_resolve(const char *arg, struct custode_container_found *out, struct custode_refusal *why);

#endif
