/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CUSTODE_CGROUP_H
#define CUSTODE_CGROUP_H

#include <stddef.h>
#include <linux/types.h>

/*
 * Find the cgroup v2 mount point in a /proc/self/mountinfo text. A pure v2
 * host has it at /sys/fs/cgroup, a hybrid host at /sys/fs/cgroup/unified;
 * /sys/fs/cgroup wins if both exist. Returns 0, -ENOENT, or -ENAMETOOLONG.
 */
int custode_cgroup2_mount_parse(const char *mountinfo, char *out, size_t outlen);
/* Same, reading /proc/self/mountinfo. */
int custode_cgroup2_mount(char *out, size_t outlen);

/*
 * custode's own subtree: $CUSTODE_CGROUP_ROOT if set (it must lie on the
 * cgroup2 mount, e.g. a systemd-delegated directory), else <mount>/custode.
 */
int custode_cgroup_root(const char *mount, char *out, size_t outlen);

/* Number of path components of path below mount (0 for the mount itself). */
int custode_cgroup_level(const char *mount, const char *path);

/*
 * The cgroup v2 directory of process pid (0: this process): its
 * /proc/PID/cgroup "0::/x" line joined to mount (as this process's cgroup
 * namespace shows it). -ENOENT without a v2 entry, -ENAMETOOLONG.
 */
int custode_cgroup_of_pid(const char *mount, int pid, char *out, size_t outlen);

/*
 * Make this process see cgroup paths as the cgroup v2 mount shows them.
 * /proc/PID/cgroup is relative to the reader's cgroup namespace: a daemon in
 * a container's own namespace with the host's cgroup2 mounted would read
 * every path wrong, its own as "/", and could attach the cgroup that holds
 * it. The view holds when the cgroup it computes for itself (mount + its
 * /proc/self/cgroup path) lists its pid; when not, it enters PID 1's cgroup
 * namespace (a DaemonSet with hostPID: the host's) and checks again. 0 when
 * the view holds; -errno of setns when it can't enter; -ENXIO when it still
 * doesn't hold (no hostPID: PID 1 shares the private namespace).
 */
int custode_cgroupns_host(const char *mount);

/* The kernel's 64-bit id of a cgroup v2 directory (what BPF's cgroup id helpers return). */
int custode_cgroup_id(const char *path, __u64 *id);

/* Enable the controllers among `wanted` (space-separated) that `path`'s cgroup.controllers offers, in its subtree_control. */
int custode_cgroup_enable_controllers(const char *path, const char *wanted);

/* Kill every process in the cgroup and its descendants (cgroup.kill; fallback: SIGKILL loop). */
int custode_cgroup_kill(const char *path);
/* Wait until cgroup.events says "populated 0", up to timeout_ms. -ETIMEDOUT otherwise. */
int custode_cgroup_wait_empty(const char *path, int timeout_ms);
/* Remove the cgroup and its child cgroups, deepest first. */
int custode_cgroup_remove(const char *path);
/* Write pid into path/cgroup.procs. */
int custode_cgroup_move(const char *path, int pid);

/* The cgroup v2 path of a cgroup id (open_by_handle_at), for registrations without state. */
int custode_cgroup_path_by_id(const char *mount, __u64 id, char *out, size_t len);

#endif
