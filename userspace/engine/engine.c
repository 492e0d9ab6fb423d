// SPDX-License-Identifier: Apache-2.0
/*
 * The engine's lifecycle (engine.h): the host it needs, the lock, and
 * opening the pinned engine — adopting it, replacing a stale or half-loaded
 * one, loading what is missing — and unloading it. Loading is load.c, the
 * pins pins.c, rule sets rules.c, runs runs.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>

#include "cgroup/cgroup.h"
#include "engine/engine.h"
#include "engine/engine_int.h"
#include "engine/hooks.h"
#include "engine/maps.h"
#include "util/fsutil.h"

static void engine_reset_fds(struct custode_engine *e)
{
	e->runs_fd = e->counters_fd = e->rules_fd = e->events_fd = e->stats_fd = e->meta_fd = -1;
	e->net_rules_fd = e->net_private_fd = e->net_inbound_fd = e->pins_fd = e->users_fd = e->identities_fd = -1;
	e->identity_filter = NULL;
}

static int ensure_bpffs(struct custode_refusal *why)
{
	struct statfs st;

	if (statfs("/sys/fs/bpf", &st) == 0 && st.f_type == BPF_FS_MAGIC)
		return 0;
	if (mkdir("/sys/fs/bpf", 0700) < 0 && errno != EEXIST)
		return custode_refuse(why, errno, CUSTODE_REASON_KERNEL_NO_BPFFS, "mkdir /sys/fs/bpf: %s", strerror(errno));
	if (mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700") < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_KERNEL_NO_BPFFS, "mount bpffs on /sys/fs/bpf: %s",
				      strerror(errno));
	return 0;
}

int custode_host_prepare(struct custode_engine *e, struct custode_refusal *why)
{
	int err;

	memset(e, 0, sizeof(*e));
	engine_reset_fds(e);
	if (geteuid() != 0)
		return custode_refuse(why, EPERM, CUSTODE_REASON_PRIVILEGE_REQUIRED,
				      "custode needs root (CAP_BPF, CAP_SYS_ADMIN); running as uid %u", geteuid());
	err = custode_cgroup2_mount(e->cg_mount, sizeof(e->cg_mount));
	if (err)
		return custode_refuse(why, -err, CUSTODE_REASON_KERNEL_NO_CGROUP2,
				      "no cgroup2 mount in /proc/self/mountinfo");
	err = custode_cgroup_root(e->cg_mount, e->cg_root, sizeof(e->cg_root));
	if (err)
		return custode_refuse(why, -err, CUSTODE_REASON_CGROUP_FAILED,
				      "CUSTODE_CGROUP_ROOT must be a directory below %s", e->cg_mount);
	if (mkdir(e->cg_root, 0755) < 0 && errno != EEXIST)
		return custode_refuse(why, errno, CUSTODE_REASON_CGROUP_FAILED, "mkdir %s: %s", e->cg_root,
				      strerror(errno));
	/* Limits need controllers delegated down to the runs; best effort here, reported per run. */
	custode_cgroup_enable_controllers(e->cg_mount, "memory pids cpu");
	custode_cgroup_enable_controllers(e->cg_root, "memory pids cpu");
	err = ensure_bpffs(why);
	if (err)
		return err;
	if (custode_mkdir_p(CUSTODE_RUNS_DIR, 0700) < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "mkdir %s: %s", CUSTODE_RUNS_DIR,
				      strerror(errno));
	return 0;
}

int custode_engine_lock(void)
{
	int fd;

	if (custode_mkdir_p(CUSTODE_STATE_DIR, 0700) < 0)
		return -errno;
	fd = open(CUSTODE_ENGINE_LOCK_FILE, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			int err = -errno;
			close(fd);
			return err;
		}
	}
	return fd;
}

void custode_engine_unlock(int fd)
{
	if (fd >= 0)
		close(fd);
}

static int open_maps(struct custode_engine *e)
{
	e->runs_fd = custode_map_open(CUSTODE_MAP_RUNS);
	e->counters_fd = custode_map_open(CUSTODE_MAP_COUNTERS);
	e->rules_fd = custode_map_open(CUSTODE_MAP_PATH_RULES);
	e->events_fd = custode_map_open(CUSTODE_MAP_EVENTS);
	e->stats_fd = custode_map_open(CUSTODE_MAP_STATS);
	e->identities_fd = custode_map_open(CUSTODE_MAP_IDENTITIES);
	if (e->runs_fd < 0 || e->counters_fd < 0 || e->rules_fd < 0 || e->events_fd < 0 || e->stats_fd < 0 ||
	    e->identities_fd < 0)
		return -ENOENT;
	return 0;
}

/* The egress maps exist once the egress class has been loaded. */
static int open_net_maps(struct custode_engine *e)
{
	if (e->net_rules_fd >= 0)
		return 0;
	e->net_rules_fd = custode_map_open(CUSTODE_MAP_NET_RULES);
	e->net_private_fd = custode_map_open(CUSTODE_MAP_NET_PRIVATE);
	e->net_inbound_fd = custode_map_open(CUSTODE_MAP_NET_INBOUND);
	e->pins_fd = custode_map_open(CUSTODE_MAP_PINS);
	if (e->net_rules_fd < 0 || e->net_private_fd < 0 || e->net_inbound_fd < 0 || e->pins_fd < 0)
		return -ENOENT;
	return 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void custode_engine_close(struct custode_engine *e)
{
	close_fd(&e->runs_fd);
	close_fd(&e->counters_fd);
	close_fd(&e->rules_fd);
	close_fd(&e->events_fd);
	close_fd(&e->stats_fd);
	close_fd(&e->meta_fd);
	close_fd(&e->net_rules_fd);
	close_fd(&e->net_private_fd);
	close_fd(&e->net_inbound_fd);
	close_fd(&e->pins_fd);
	close_fd(&e->users_fd);
	close_fd(&e->identities_fd);
	custode_engine_unmap_filter(e);
}

/* Close the map fds but keep our place among the engine's users. */
static void close_maps(struct custode_engine *e)
{
	int users = e->users_fd;

	e->users_fd = -1;
	custode_engine_close(e);
	e->users_fd = users;
}

/*
 * Whether any other process has the engine open. Every user holds
 * engine.users shared, taken while holding the engine lock, so under the
 * engine lock this answer can't go stale: a launcher that opened the engine
 * but hasn't registered its run yet still counts.
 */
static bool engine_has_other_users(struct custode_engine *e)
{
	if (flock(e->users_fd, LOCK_EX | LOCK_NB) == 0) {
		flock(e->users_fd, LOCK_SH); /* back to shared; we hold the engine lock, nobody races */
		return false;
	}
	return true;
}

/* Join the engine's users: engine.users held shared for as long as this handle is open. */
static int join_users(struct custode_engine *e, struct custode_refusal *why)
{
	if (e->users_fd >= 0)
		return 0;
	e->users_fd = open(CUSTODE_ENGINE_USERS_FILE, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (e->users_fd < 0 || flock(e->users_fd, LOCK_SH) < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "engine users lock: %s",
				      strerror(errno));
	return 0;
}

/* What this custode would pin here: meta's fields that must match for the pinned engine to be used. */
static int wanted_meta(const struct custode_engine *e, struct custode_meta *want, struct custode_refusal *why)
{
	__u64 root_id;
	int level, err;

	err = custode_cgroup_id(e->cg_root, &root_id);
	if (err)
		return custode_refuse(why, -err, CUSTODE_REASON_CGROUP_FAILED, "cgroup id of %s: %s", e->cg_root,
				      strerror(-err));
	level = custode_cgroup_level(e->cg_mount, e->cg_root);
	if (level < 0)
		return custode_refuse(why, EINVAL, CUSTODE_REASON_CGROUP_FAILED, "%s is not below %s", e->cg_root,
				      e->cg_mount);
	memset(want, 0, sizeof(*want));
	want->abi_version = CUSTODE_ABI_VERSION;
	want->root_cgroup_id = root_id;
	want->root_level = (__u32)level;
	want->build_digest = engine_build_digest();
	return 0;
}

/*
 * Adopt the engine that meta describes (e->meta_fd open, e->meta filled),
 * or, when it is stale and idle, unpin it (e->meta_fd closed). No meta, or
 * one that can't be read, leaves e->meta_fd closed too.
 */
static int adopt_pinned(struct custode_engine *e, const struct custode_meta *want, unsigned flags,
			struct custode_refusal *why)
{
	struct custode_meta cur;
	int err;

	e->meta_fd = custode_meta_open();
	if (e->meta_fd < 0 && errno == EPERM) {
		/* The process class reserves the engine to the binary that loaded it: never treat that as "no engine". */
		return custode_refuse(why, EPERM, CUSTODE_REASON_ENGINE_PROTECTED,
				      "the pinned engine is reserved to the custode binary that loaded it (another "
				      "build or copy of custode is running): use that binary, or reboot "
				      "(docs/process.md)");
	}
	if (e->meta_fd >= 0 && engine_meta_read(e->meta_fd, &cur) == 0) {
		bool same_root = cur.abi_version == want->abi_version && cur.root_cgroup_id == want->root_cgroup_id &&
				 cur.root_level == want->root_level;
		bool idle = (open_maps(e) < 0 || custode_engine_count_runs(e) == 0) && !engine_has_other_users(e);

		if (same_root && !(cur.build_digest != want->build_digest && idle && (flags & CUSTODE_ENGINE_LOAD))) {
			e->meta = cur;
			return 0;
		}
		if (!idle)
			return custode_refuse(why, EBUSY, CUSTODE_REASON_ENGINE_MISMATCH,
					      "the pinned engine (ABI %u, cgroup root %llu) differs from this custode "
					      "(ABI %u, cgroup root %llu) and has registered runs",
					      cur.abi_version, (unsigned long long)cur.root_cgroup_id, CUSTODE_ABI_VERSION,
					      (unsigned long long)want->root_cgroup_id);
		/* Stale and idle: nothing is confined by it and nobody is about to be. Replace it. */
		close_maps(e);
		err = engine_unpin_all();
		if (err)
			return custode_refuse(why, -err, CUSTODE_REASON_ENGINE_LOAD_FAILED, "unpin stale engine: %s",
					      strerror(-err));
	} else if (e->meta_fd >= 0) {
		close_fd(&e->meta_fd);
	}
	return 0;
}

/*
 * No meta: nothing complete is pinned. Leftovers of an interrupted load are
 * removed — unless runs are registered in them, which would lose their
 * confinement — and e->meta describes a new, empty engine.
 */
static int start_fresh(struct custode_engine *e, const struct custode_meta *want, unsigned flags,
		       struct custode_refusal *why)
{
	int err;

	if (!(flags & CUSTODE_ENGINE_LOAD))
		return custode_refuse(why, ENOENT, CUSTODE_REASON_ENGINE_MISSING,
				      "no engine is pinned at %s (custode run loads it)", CUSTODE_PIN_ROOT);
	if ((open_maps(e) == 0 && custode_engine_count_runs(e) > 0) || engine_has_other_users(e))
		return custode_refuse(why, EBUSY, CUSTODE_REASON_ENGINE_MISMATCH,
				      "%s has registered runs or users but no engine description (meta); "
				      "refusing to replace it (custode engine unload --force clears it)",
				      CUSTODE_PIN_ROOT);
	close_maps(e);
	if ((err = engine_unpin_all()))
		return custode_refuse(why, -err, CUSTODE_REASON_ENGINE_LOAD_FAILED, "clear leftovers: %s",
				      strerror(-err));
	if (custode_mkdir_p(CUSTODE_PIN_MAPS, 0700) < 0 || custode_mkdir_p(CUSTODE_PIN_LINKS, 0700) < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_ENGINE_LOAD_FAILED, "mkdir %s: %s", CUSTODE_PIN_ROOT,
				      strerror(errno));
	e->meta = *want;
	e->meta.next_ruleset = 1;
	e->meta.loaded_at = (__u64)time(NULL);
	return 0;
}

/* The map fds of every class meta describes. */
static int open_class_maps(struct custode_engine *e, struct custode_refusal *why)
{
	if (e->runs_fd < 0 && open_maps(e) < 0)
		return custode_refuse(why, ENOENT, CUSTODE_REASON_ENGINE_MISSING, "engine maps missing under %s",
				      CUSTODE_PIN_MAPS);
	if ((e->meta.classes & CUSTODE_CLASS_EGRESS) && open_net_maps(e) < 0)
		return custode_refuse(why, ENOENT, CUSTODE_REASON_ENGINE_MISSING, "egress maps missing under %s",
				      CUSTODE_PIN_MAPS);
	return 0;
}

int custode_engine_open(struct custode_engine *e, unsigned need, unsigned flags, struct custode_refusal *why)
{
	struct custode_meta want;
	int lock, err;
	unsigned missing;

	if ((err = wanted_meta(e, &want, why)))
		return err;
	lock = custode_engine_lock();
	if (lock < 0)
		return custode_refuse(why, -lock, CUSTODE_REASON_RUN_SETUP_FAILED, "engine lock: %s", strerror(-lock));
	if ((err = join_users(e, why)) || (err = adopt_pinned(e, &want, flags, why)))
		goto out;
	if (e->meta_fd < 0 && (err = start_fresh(e, &want, flags, why)))
		goto out;
	missing = need & ~e->meta.classes;
	if (missing && !(flags & CUSTODE_ENGINE_LOAD)) {
		err = custode_refuse(why, ENOENT, CUSTODE_REASON_ENGINE_MISSING,
				     "the pinned engine lacks classes 0x%x", missing);
		goto out;
	}
	if (!(err = engine_load_missing(e, missing, why)))
		err = open_class_maps(e, why);
out:
	custode_hooks_release();
	custode_engine_unlock(lock);
	if (err)
		custode_engine_close(e);
	return err;
}

int custode_engine_unload(struct custode_engine *e, bool force, struct custode_refusal *why)
{
	int lock, err, n;

	lock = custode_engine_lock();
	if (lock < 0)
		return custode_refuse(why, -lock, CUSTODE_REASON_RUN_SETUP_FAILED, "engine lock: %s", strerror(-lock));
	if (e->runs_fd >= 0 && (n = custode_engine_count_runs(e)) > 0 && !force) {
		custode_engine_unlock(lock);
		return custode_refuse(why, EBUSY, CUSTODE_REASON_ENGINE_MISMATCH,
				      "%d runs are registered; unloading would leave them unconfined", n);
	}
	if (e->users_fd >= 0 && engine_has_other_users(e) && !force) {
		custode_engine_unlock(lock);
		return custode_refuse(why, EBUSY, CUSTODE_REASON_ENGINE_MISMATCH,
				      "another custode process has the engine open (a run being set up?)");
	}
	custode_engine_close(e);
	err = engine_unpin_all();
	custode_engine_unlock(lock);
	if (err)
		return custode_refuse(why, -err, CUSTODE_REASON_ENGINE_LOAD_FAILED, "unpin: %s", strerror(-err));
	return 0;
}
