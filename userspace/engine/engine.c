// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <linux/membarrier.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <openssl/evp.h>

#include "cgroup/cgroup.h"
#include "engine/engine.h"
#include "engine/hooks.h"
#include "engine/maps.h"
#include "engine/probe.h"
#include "engine/self.h"
#include "util/fsutil.h"

#include "file.skel.h"
#include "net.skel.h"
#include "proc.skel.h"

static void engine_reset_fds(struct custode_engine *e)
{
	e->runs_fd = e->counters_fd = e->rules_fd = e->events_fd = e->stats_fd = e->meta_fd = -1;
	e->net_rules_fd = e->net_private_fd = e->net_inbound_fd = e->pins_fd = e->users_fd = e->identities_fd = -1;
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

static __u64 build_digest(void)
{
	unsigned char md[32];
	unsigned int mdlen = 0;
	const void *bytes;
	size_t sz = 0;
	__u64 d = 0;

	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	if (!ctx)
		return 0;
	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1) {
		bytes = file_bpf__elf_bytes(&sz);
		EVP_DigestUpdate(ctx, bytes, sz);
		bytes = net_bpf__elf_bytes(&sz);
		EVP_DigestUpdate(ctx, bytes, sz);
		bytes = proc_bpf__elf_bytes(&sz);
		EVP_DigestUpdate(ctx, bytes, sz);
		if (EVP_DigestFinal_ex(ctx, md, &mdlen) == 1)
			memcpy(&d, md, sizeof(d));
	}
	EVP_MD_CTX_free(ctx);
	return d;
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

static int read_meta(int fd, struct custode_meta *m)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(fd, &zero, m) ? -errno : 0;
}

static int write_meta(int fd, const struct custode_meta *m)
{
	__u32 zero = 0;
	return bpf_map_update_elem(fd, &zero, m, BPF_ANY) ? -errno : 0;
}

static int unlink_dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int err = 0;

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		char path[PATH_MAX];
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (unlink(path) < 0 && errno != ENOENT && !err)
			err = -errno;
	}
	closedir(d);
	return err;
}

/* The ids of the programs behind the pinned links (as many as fit in ids[max]). */
static size_t pinned_prog_ids(__u32 *ids, size_t max)
{
	DIR *d = opendir(CUSTODE_PIN_LINKS);
	struct dirent *de;
	size_t n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max) {
		struct bpf_link_info info;
		__u32 len = sizeof(info);
		char path[PATH_MAX];
		int fd;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", CUSTODE_PIN_LINKS, de->d_name);
		fd = bpf_obj_get(path);
		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && info.prog_id)
			ids[n++] = info.prog_id;
		close(fd);
	}
	closedir(d);
	return n;
}

/*
 * Wait until none of these programs runs any more. Dropping a link's last
 * reference detaches it later, not at once (the bpffs inode is freed after
 * an RCU grace period, an LSM trampoline is rebuilt after an RCU tasks grace
 * period): measured on 6.12 under TCG, an unpinned file_open program kept
 * deciding for seconds, with maps the next engine no longer fills. A
 * program's id goes away only once it is detached and freed.
 */
#define UNPIN_WAIT_MS 60000

static int wait_progs_gone(const __u32 *ids, size_t n)
{
	for (int waited = 0;; waited += 10) {
		size_t alive = 0;

		for (size_t i = 0; i < n; i++) {
			int fd = bpf_prog_get_fd_by_id(ids[i]);

			if (fd >= 0) {
				close(fd);
				alive++;
			} else if (errno != ENOENT) {
				alive++; /* can't tell: keep waiting */
			}
		}
		if (!alive)
			return 0;
		if (waited >= UNPIN_WAIT_MS)
			return -ETIMEDOUT;
		usleep(10000);
	}
}

static int unpin_all(void)
{
	__u32 ids[256];
	size_t n = pinned_prog_ids(ids, sizeof(ids) / sizeof(ids[0]));
	int err = 0, r;

	/* Links first: their programs stop running before the maps go. */
	r = unlink_dir_entries(CUSTODE_PIN_LINKS);
	if (r)
		err = r;
	if ((r = wait_progs_gone(ids, n)) && !err)
		err = r;
	if (unlink(CUSTODE_PIN_ROOT "/meta") < 0 && errno != ENOENT && !err)
		err = -errno;
	r = unlink_dir_entries(CUSTODE_PIN_MAPS);
	if (r && !err)
		err = r;
	return err;
}

/*
 * Attach every program of obj that is set to load — LSM and tracing programs
 * by their section, cgroup programs to cgfd (the cgroup v2 root) — and pin
 * each link as CUSTODE_PIN_LINKS/<program name>. A failure unpins what this
 * call pinned: no class is ever left half attached.
 */
static int attach_and_pin(struct bpf_object *obj, int cgfd, const char *where, struct custode_refusal *why)
{
	struct bpf_program *prog;
	int err = 0;

	bpf_object__for_each_program(prog, obj) {
		char pin[PATH_MAX];
		struct bpf_link *link;

		if (!bpf_program__autoload(prog))
			continue;
		link = cgfd >= 0 ? bpf_program__attach_cgroup(prog, cgfd) : bpf_program__attach(prog);
		if (!link) {
			err = custode_refuse(why, errno, CUSTODE_REASON_ENGINE_LOAD_FAILED, "attach %s%s%s: %s",
					     bpf_program__section_name(prog), cgfd >= 0 ? " to " : "", cgfd >= 0 ? where : "",
					     strerror(errno));
			goto rollback;
		}
		snprintf(pin, sizeof(pin), "%s/%s", CUSTODE_PIN_LINKS, bpf_program__name(prog));
		err = bpf_link__pin(link, pin);
		bpf_link__destroy(link); /* closes our fd; the pin keeps the program attached */
		if (err) {
			err = custode_refuse(why, -err, CUSTODE_REASON_ENGINE_LOAD_FAILED, "pin %s: %s", pin, strerror(-err));
			goto rollback;
		}
	}
	return 0;
rollback:
	bpf_object__for_each_program(prog, obj) {
		char pin[PATH_MAX];
		snprintf(pin, sizeof(pin), "%s/%s", CUSTODE_PIN_LINKS, bpf_program__name(prog));
		unlink(pin);
	}
	return err;
}

/* The run cache map fitted to this kernel; *use (if given) says whether the object may use it. */
static int fit_run_cache(struct bpf_object *obj, volatile __u32 *use, struct custode_refusal *why)
{
	bool have = false;
	int err = custode_fit_run_cache(obj, &have);

	if (err)
		return custode_refuse(why, -err, CUSTODE_REASON_ENGINE_LOAD_FAILED, "run cache map: %s", strerror(-err));
	if (use)
		*use = have;
	return 0;
}

/* A load failure of an LSM object: doctor's cause if the host refuses LSM programs, else the verifier's words. */
static int lsm_load_refusal(int err, const char *what, struct custode_refusal *why)
{
	struct custode_probe_result pr;

	custode_probe_lsm(&pr);
	if (!pr.lsm_loads)
		return custode_refuse(why, -err, CUSTODE_REASON_KERNEL_LSM_UNAVAILABLE, "%s", pr.lsm_cause);
	return custode_refuse(why, -err, CUSTODE_REASON_ENGINE_LOAD_FAILED, "load %s: %s; libbpf said: %s", what,
			      strerror(-err), custode_libbpf_log());
}

static int load_file_class(struct custode_engine *e, struct custode_refusal *why)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = CUSTODE_PIN_MAPS);
	struct file_bpf *skel;
	int err;

	skel = file_bpf__open_opts(&opts);
	if (!skel)
		return custode_refuse(why, errno, CUSTODE_REASON_ENGINE_LOAD_FAILED, "open file engine: %s",
				      strerror(errno));
	skel->rodata->custode_root_cgid = e->meta.root_cgroup_id;
	skel->rodata->custode_root_level = e->meta.root_level;
	err = custode_fit_hooks(skel->obj, "file engine", why);
	if (!err)
		err = fit_run_cache(skel->obj, &skel->rodata->custode_use_run_cache, why);
	if (err) {
		file_bpf__destroy(skel);
		return err;
	}
	err = file_bpf__load(skel);
	if (err)
		err = lsm_load_refusal(err, "file engine", why);
	else
		err = attach_and_pin(skel->obj, -1, NULL, why);
	file_bpf__destroy(skel);
	return err;
}

/*
 * The process class (bpf/proc.bpf.c). Its bpf_map/bpf_prog programs reserve
 * custode's objects to the binary loading them now, identified by the
 * kernel's view of our executable (engine/self.h).
 */
static int load_proc_class(struct custode_engine *e, struct custode_refusal *why)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = CUSTODE_PIN_MAPS);
	struct proc_bpf *skel;
	__u64 dev = 0, ino = 0;
	int err;

	err = custode_self_exe_identity(&dev, &ino);
	if (err)
		return custode_refuse(why, -err, CUSTODE_REASON_ENGINE_LOAD_FAILED,
				      "identity of this executable (/proc/self/fdinfo, mountinfo): %s", strerror(-err));
	skel = proc_bpf__open_opts(&opts);
	if (!skel)
		return custode_refuse(why, errno, CUSTODE_REASON_ENGINE_LOAD_FAILED, "open process engine: %s",
				      strerror(errno));
	skel->rodata->custode_root_cgid = e->meta.root_cgroup_id;
	skel->rodata->custode_root_level = e->meta.root_level;
	skel->rodata->custode_exe_dev = dev;
	skel->rodata->custode_exe_ino = ino;
	err = custode_fit_hooks(skel->obj, "process engine", why);
	if (!err)
		err = fit_run_cache(skel->obj, &skel->rodata->custode_use_run_cache, why);
	if (err) {
		proc_bpf__destroy(skel);
		return err;
	}
	err = proc_bpf__load(skel);
	if (err)
		err = lsm_load_refusal(err, "process engine", why);
	else
		err = attach_and_pin(skel->obj, -1, NULL, why);
	proc_bpf__destroy(skel);
	return err;
}

static int load_net_class(struct custode_engine *e, struct custode_refusal *why)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = CUSTODE_PIN_MAPS);
	struct net_bpf *skel;
	int err = 0, cgfd;

	cgfd = open(e->cg_mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cgfd < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_CGROUP_FAILED, "open %s: %s", e->cg_mount,
				      strerror(errno));
	skel = net_bpf__open_opts(&opts);
	if (!skel) {
		err = custode_refuse(why, errno, CUSTODE_REASON_ENGINE_LOAD_FAILED, "open egress engine: %s",
				     strerror(errno));
		goto out;
	}
	skel->rodata->custode_root_cgid = e->meta.root_cgroup_id;
	skel->rodata->custode_root_level = e->meta.root_level;
	/* the map only, so every object pins the same one: cgroup programs can't call bpf_get_current_task_btf */
	if ((err = fit_run_cache(skel->obj, NULL, why)))
		goto out;
	err = net_bpf__load(skel);
	if (err) {
		struct custode_probe_result pr = {0};

		custode_probe_cgroup(&pr);
		if (!pr.cgroup_loads)
			err = custode_refuse(why, -err, CUSTODE_REASON_KERNEL_CGROUP_BPF_UNAVAILABLE, "%s",
					     pr.cgroup_cause);
		else
			err = custode_refuse(why, -err, CUSTODE_REASON_ENGINE_LOAD_FAILED,
					     "load egress engine: %s; libbpf said: %s", strerror(-err), custode_libbpf_log());
		goto out;
	}
	/*
	 * Attach at the root of the cgroup v2 hierarchy: every socket passes
	 * here, including sockets made outside a run and passed into it.
	 */
	err = attach_and_pin(skel->obj, cgfd, e->cg_mount, why);
out:
	net_bpf__destroy(skel);
	close(cgfd);
	return err;
}

/*
 * A dry load of one class: the real object, verified by this kernel with
 * realistic constants, but unpinned, with its maps shrunk, never attached,
 * and destroyed at once. What doctor means by "available".
 */
static void dry_maps(struct bpf_object *obj)
{
	struct bpf_map *map;

	bpf_object__for_each_map(map, obj) {
		bpf_map__set_pin_path(map, NULL);
		switch (bpf_map__type(map)) {
		case BPF_MAP_TYPE_HASH:
		case BPF_MAP_TYPE_LRU_HASH:
		case BPF_MAP_TYPE_LPM_TRIE:
		case BPF_MAP_TYPE_PERCPU_HASH:
			bpf_map__set_max_entries(map, 1);
			break;
		case BPF_MAP_TYPE_RINGBUF:
			bpf_map__set_max_entries(map, 4096);
			break;
		default:
			break;
		}
	}
}

static int dry_refusal(int err, const char *what, struct custode_refusal *why)
{
	char prog[128], verdict[256];

	custode_libbpf_failure(prog, sizeof(prog), verdict, sizeof(verdict));
	return custode_refuse(why, -err, CUSTODE_REASON_ENGINE_LOAD_FAILED, "%s: program %s: %s", what,
			      prog[0] ? prog : "(unknown)", verdict[0] ? verdict : strerror(-err));
}

int custode_engine_dry_load(unsigned cls, struct custode_refusal *why)
{
	const __u64 root_cgid = 1; /* any live id: the verifier folds these constants */
	const __u32 root_level = 1;
	int err = 0;

	custode_libbpf_log_reset();
	if (cls == CUSTODE_CLASS_FILE) {
		struct file_bpf *skel = file_bpf__open();

		if (!skel)
			return custode_refuse(why, errno, CUSTODE_REASON_ENGINE_LOAD_FAILED, "open file engine: %s",
					      strerror(errno));
		skel->rodata->custode_root_cgid = root_cgid;
		skel->rodata->custode_root_level = root_level;
		dry_maps(skel->obj);
		err = custode_fit_hooks(skel->obj, "file engine", why);
		if (!err)
			err = fit_run_cache(skel->obj, &skel->rodata->custode_use_run_cache, why);
		if (!err && (err = file_bpf__load(skel)))
			err = dry_refusal(err, "file engine", why);
		file_bpf__destroy(skel);
	} else if (cls == CUSTODE_CLASS_PROCESS) {
		struct proc_bpf *skel = proc_bpf__open();
		__u64 dev = 1, ino = 1;

		if (!skel)
			return custode_refuse(why, errno, CUSTODE_REASON_ENGINE_LOAD_FAILED, "open process engine: %s",
					      strerror(errno));
		custode_self_exe_identity(&dev, &ino);
		skel->rodata->custode_root_cgid = root_cgid;
		skel->rodata->custode_root_level = root_level;
		skel->rodata->custode_exe_dev = dev;
		skel->rodata->custode_exe_ino = ino;
		dry_maps(skel->obj);
		err = custode_fit_hooks(skel->obj, "process engine", why);
		if (!err)
			err = fit_run_cache(skel->obj, &skel->rodata->custode_use_run_cache, why);
		if (!err && (err = proc_bpf__load(skel)))
			err = dry_refusal(err, "process engine", why);
		proc_bpf__destroy(skel);
	} else if (cls == CUSTODE_CLASS_EGRESS) {
		struct net_bpf *skel = net_bpf__open();

		if (!skel)
			return custode_refuse(why, errno, CUSTODE_REASON_ENGINE_LOAD_FAILED, "open egress engine: %s",
					      strerror(errno));
		skel->rodata->custode_root_cgid = root_cgid;
		skel->rodata->custode_root_level = root_level;
		dry_maps(skel->obj);
		err = fit_run_cache(skel->obj, NULL, why);
		if (!err && (err = net_bpf__load(skel)))
			err = dry_refusal(err, "egress engine", why);
		net_bpf__destroy(skel);
	} else {
		return custode_refuse(why, EINVAL, CUSTODE_REASON_ENGINE_LOAD_FAILED, "unknown class %#x", cls);
	}
	custode_hooks_release();
	return err;
}

static int create_meta(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "custode_meta", sizeof(__u32), sizeof(struct custode_meta), 1, &opts);

	if (fd < 0)
		return -errno;
	if (bpf_obj_pin(fd, CUSTODE_PIN_ROOT "/meta") < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* Note a loaded class in meta (creating and pinning meta on first use). */
static int record_class(struct custode_engine *e, unsigned cls, struct custode_refusal *why)
{
	int err;

	if (e->meta_fd < 0) {
		e->meta_fd = create_meta();
		if (e->meta_fd < 0)
			return custode_refuse(why, -e->meta_fd, CUSTODE_REASON_ENGINE_LOAD_FAILED, "pin meta: %s",
					      strerror(-e->meta_fd));
	}
	e->meta.classes |= cls;
	err = write_meta(e->meta_fd, &e->meta);
	if (err)
		return custode_refuse(why, -err, CUSTODE_REASON_ENGINE_LOAD_FAILED, "write meta: %s", strerror(-err));
	return 0;
}

int custode_engine_count_runs(struct custode_engine *e)
{
	__u64 key, next;
	int n = 0;
	void *prev = NULL;

	while (bpf_map_get_next_key(e->runs_fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		n++;
	}
	return n;
}

int custode_engine_open(struct custode_engine *e, unsigned need, unsigned flags, struct custode_refusal *why)
{
	struct custode_meta cur;
	__u64 root_id, digest = build_digest();
	int level, lock, err = 0;
	unsigned missing;

	err = custode_cgroup_id(e->cg_root, &root_id);
	if (err)
		return custode_refuse(why, -err, CUSTODE_REASON_CGROUP_FAILED, "cgroup id of %s: %s", e->cg_root,
				      strerror(-err));
	level = custode_cgroup_level(e->cg_mount, e->cg_root);
	if (level < 0)
		return custode_refuse(why, EINVAL, CUSTODE_REASON_CGROUP_FAILED, "%s is not below %s", e->cg_root,
				      e->cg_mount);
	lock = custode_engine_lock();
	if (lock < 0)
		return custode_refuse(why, -lock, CUSTODE_REASON_RUN_SETUP_FAILED, "engine lock: %s", strerror(-lock));
	if (e->users_fd < 0) {
		e->users_fd = open(CUSTODE_ENGINE_USERS_FILE, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (e->users_fd < 0 || flock(e->users_fd, LOCK_SH) < 0) {
			err = custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "engine users lock: %s",
					     strerror(errno));
			goto out;
		}
	}

	e->meta_fd = bpf_obj_get(CUSTODE_PIN_ROOT "/meta");
	if (e->meta_fd < 0 && errno == EPERM) {
		/* The process class reserves the engine to the binary that loaded it: never treat that as "no engine". */
		err = custode_refuse(why, EPERM, CUSTODE_REASON_ENGINE_PROTECTED,
				     "the pinned engine is reserved to the custode binary that loaded it (another "
				     "build or copy of custode is running): use that binary, or reboot "
				     "(docs/process.md)");
		goto out;
	}
	if (e->meta_fd >= 0 && read_meta(e->meta_fd, &cur) == 0) {
		bool same_root = cur.abi_version == CUSTODE_ABI_VERSION && cur.root_cgroup_id == root_id &&
				 cur.root_level == (__u32)level;
		bool idle = (open_maps(e) < 0 || custode_engine_count_runs(e) == 0) && !engine_has_other_users(e);

		if (!same_root || (cur.build_digest != digest && idle && (flags & CUSTODE_ENGINE_LOAD))) {
			if (!idle) {
				err = custode_refuse(why, EBUSY, CUSTODE_REASON_ENGINE_MISMATCH,
						     "the pinned engine (ABI %u, cgroup root %llu) differs from this custode "
						     "(ABI %u, cgroup root %llu) and has registered runs",
						     cur.abi_version, (unsigned long long)cur.root_cgroup_id,
						     CUSTODE_ABI_VERSION, (unsigned long long)root_id);
				goto out;
			}
			/* Stale and idle: nothing is confined by it and nobody is about to be. Replace it. */
			close_maps(e);
			err = unpin_all();
			if (err) {
				err = custode_refuse(why, -err, CUSTODE_REASON_ENGINE_LOAD_FAILED,
						     "unpin stale engine: %s", strerror(-err));
				goto out;
			}
		} else {
			e->meta = cur;
		}
	} else if (e->meta_fd >= 0) {
		close_fd(&e->meta_fd);
	}

	if (e->meta_fd < 0) {
		if (!(flags & CUSTODE_ENGINE_LOAD)) {
			err = custode_refuse(why, ENOENT, CUSTODE_REASON_ENGINE_MISSING,
					     "no engine is pinned at %s (custode run loads it)", CUSTODE_PIN_ROOT);
			goto out;
		}
		/*
		 * No meta: nothing complete is pinned. Leftovers of an interrupted
		 * load are removed — unless runs are registered in them, which would
		 * lose their confinement.
		 */
		if ((open_maps(e) == 0 && custode_engine_count_runs(e) > 0) || engine_has_other_users(e)) {
			err = custode_refuse(why, EBUSY, CUSTODE_REASON_ENGINE_MISMATCH,
					     "%s has registered runs or users but no engine description (meta); "
					     "refusing to replace it (custode engine unload --force clears it)",
					     CUSTODE_PIN_ROOT);
			goto out;
		}
		close_maps(e);
		if ((err = unpin_all())) {
			err = custode_refuse(why, -err, CUSTODE_REASON_ENGINE_LOAD_FAILED, "clear leftovers: %s",
					     strerror(-err));
			goto out;
		}
		if (custode_mkdir_p(CUSTODE_PIN_MAPS, 0700) < 0 || custode_mkdir_p(CUSTODE_PIN_LINKS, 0700) < 0) {
			err = custode_refuse(why, errno, CUSTODE_REASON_ENGINE_LOAD_FAILED, "mkdir %s: %s",
					     CUSTODE_PIN_ROOT, strerror(errno));
			goto out;
		}
		memset(&e->meta, 0, sizeof(e->meta));
		e->meta.abi_version = CUSTODE_ABI_VERSION;
		e->meta.root_cgroup_id = root_id;
		e->meta.root_level = (__u32)level;
		e->meta.next_ruleset = 1;
		e->meta.loaded_at = (__u64)time(NULL);
		e->meta.build_digest = digest;
	}

	missing = need & ~e->meta.classes;
	if (missing && !(flags & CUSTODE_ENGINE_LOAD)) {
		err = custode_refuse(why, ENOENT, CUSTODE_REASON_ENGINE_MISSING,
				     "the pinned engine lacks classes 0x%x", missing);
		goto out;
	}
	/*
	 * LSM classes first: on hosts that refuse them, nothing else gets pinned
	 * in vain. Each class that loads is recorded in meta at once, so a later
	 * failure never leaves pinned programs that meta doesn't describe.
	 */
	if (missing & CUSTODE_CLASS_FILE) {
		custode_libbpf_log_reset();
		if ((err = load_file_class(e, why)) || (err = record_class(e, CUSTODE_CLASS_FILE, why)))
			goto out;
	}
	if (missing & CUSTODE_CLASS_PROCESS) {
		custode_libbpf_log_reset();
		if ((err = load_proc_class(e, why)) || (err = record_class(e, CUSTODE_CLASS_PROCESS, why)))
			goto out;
	}
	if (missing & CUSTODE_CLASS_EGRESS) {
		custode_libbpf_log_reset();
		if ((err = load_net_class(e, why)) || (err = record_class(e, CUSTODE_CLASS_EGRESS, why)))
			goto out;
	}
	if (e->runs_fd < 0 && open_maps(e) < 0) {
		err = custode_refuse(why, ENOENT, CUSTODE_REASON_ENGINE_MISSING, "engine maps missing under %s",
				     CUSTODE_PIN_MAPS);
		goto out;
	}
	if ((e->meta.classes & CUSTODE_CLASS_EGRESS) && open_net_maps(e) < 0) {
		err = custode_refuse(why, ENOENT, CUSTODE_REASON_ENGINE_MISSING, "egress maps missing under %s",
				     CUSTODE_PIN_MAPS);
		goto out;
	}
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
	err = unpin_all();
	custode_engine_unlock(lock);
	if (err)
		return custode_refuse(why, -err, CUSTODE_REASON_ENGINE_LOAD_FAILED, "unpin: %s", strerror(-err));
	return 0;
}

int custode_engine_alloc_ruleset(struct custode_engine *e, __u32 *out)
{
	/* Another launcher may have allocated since we opened the engine: re-read under the lock. */
	int err = read_meta(e->meta_fd, &e->meta);

	if (err)
		return err;
	for (int tries = 0; tries < 1 << 20; tries++) {
		__u32 id = e->meta.next_ruleset++;
		__u64 key, next;
		void *prev = NULL;
		bool used = false;
		struct custode_run run;

		if (e->meta.next_ruleset == 0)
			e->meta.next_ruleset = 1;
		if (id == 0)
			continue;
		while (!used && bpf_map_get_next_key(e->runs_fd, prev, &next) == 0) {
			key = next;
			prev = &key;
			if (bpf_map_lookup_elem(e->runs_fd, &key, &run) == 0 && run.ruleset == id)
				used = true;
		}
		if (used)
			continue;
		*out = id;
		return write_meta(e->meta_fd, &e->meta);
	}
	return -ENOSPC;
}

int custode_engine_add_rules(struct custode_engine *e, __u32 ruleset, const struct custode_fs_ruleset *rs)
{
	for (size_t i = 0; i < rs->n_ids; i++)
		if (bpf_map_update_elem(e->identities_fd, &rs->ids[i].key, &rs->ids[i].val, BPF_ANY) < 0)
			return -errno;
	for (size_t i = 0; i < rs->n; i++) {
		struct custode_path_key keys[2];
		struct custode_path_rule val = {.allow = rs->rules[i].allow, .flags = rs->rules[i].flags};
		int n = custode_rule_keys(&rs->rules[i], ruleset, keys);

		for (int k = 0; k < n; k++) {
			/* rename protection is about the path itself (keys[0], "D\0"), never what's below it */
			if (k == 1)
				val.flags &= ~CUSTODE_PATH_RULE_PROTECTS_BELOW;
			if (bpf_map_update_elem(e->rules_fd, &keys[k], &val, BPF_ANY) < 0)
				return -errno;
		}
	}
	return 0;
}

int custode_engine_delete_rules(struct custode_engine *e, __u32 ruleset, const struct custode_fs_ruleset *rs)
{
	int err = 0;

	for (size_t i = 0; i < rs->n_ids; i++)
		if (bpf_map_delete_elem(e->identities_fd, &rs->ids[i].key) < 0 && errno != ENOENT && !err)
			err = -errno;
	for (size_t i = 0; i < rs->n; i++) {
		struct custode_path_key keys[2];
		int n = custode_rule_keys(&rs->rules[i], ruleset, keys);

		for (int k = 0; k < n; k++)
			if (bpf_map_delete_elem(e->rules_fd, &keys[k]) < 0 && errno != ENOENT && !err)
				err = -errno;
	}
	return err;
}

static bool identity_key_of(const void *key, const void *arg);
static int delete_matching(int fd, size_t key_size, bool (*match)(const void *key, const void *arg), const void *arg);

int custode_engine_delete_ruleset(struct custode_engine *e, __u32 ruleset)
{
	delete_matching(e->identities_fd, sizeof(struct custode_identity_key), identity_key_of, &ruleset);
	struct custode_path_key key, next;
	int err = 0, deleted;

	/* Deleting while iterating restarts the walk; repeat until a pass deletes nothing. */
	do {
		void *prev = NULL;
		deleted = 0;
		while (bpf_map_get_next_key(e->rules_fd, prev, &next) == 0) {
			key = next;
			prev = &key;
			if (key.ruleset != ruleset)
				continue;
			if (bpf_map_delete_elem(e->rules_fd, &key) == 0)
				deleted++;
			else if (errno != ENOENT && !err)
				err = -errno;
			prev = NULL;
		}
	} while (deleted && !err);
	return err;
}

int custode_engine_add_net(struct custode_engine *e, const struct custode_net_ruleset *rs)
{
	__u32 one = 1;

	if ((rs->n || rs->n_priv) && e->net_rules_fd < 0)
		return -ENOENT;
	for (size_t i = 0; i < rs->n; i++)
		if (bpf_map_update_elem(e->net_rules_fd, &rs->keys[i], &rs->vals[i], BPF_ANY) < 0)
			return -errno;
	for (size_t i = 0; i < rs->n_priv; i++)
		if (bpf_map_update_elem(e->net_private_fd, &rs->priv[i], &one, BPF_ANY) < 0)
			return -errno;
	if (rs->n_inbound && e->net_inbound_fd < 0)
		return -ENOENT;
	for (size_t i = 0; i < rs->n_inbound; i++)
		if (bpf_map_update_elem(e->net_inbound_fd, &rs->inbound[i], &one, BPF_ANY) < 0)
			return -errno;
	return 0;
}

int custode_engine_delete_net(struct custode_engine *e, const struct custode_net_ruleset *rs)
{
	int err = 0;

	if (e->net_rules_fd < 0)
		return 0;
	for (size_t i = 0; i < rs->n; i++)
		if (bpf_map_delete_elem(e->net_rules_fd, &rs->keys[i]) < 0 && errno != ENOENT && !err)
			err = -errno;
	for (size_t i = 0; i < rs->n_priv; i++)
		if (bpf_map_delete_elem(e->net_private_fd, &rs->priv[i]) < 0 && errno != ENOENT && !err)
			err = -errno;
	for (size_t i = 0; i < rs->n_inbound && e->net_inbound_fd >= 0; i++)
		if (bpf_map_delete_elem(e->net_inbound_fd, &rs->inbound[i]) < 0 && errno != ENOENT && !err)
			err = -errno;
	return err;
}

/* Delete the keys of a map that match(key); restart the walk after each deletion pass. */
static int delete_matching(int fd, size_t key_size, bool (*match)(const void *key, const void *arg), const void *arg)
{
	unsigned char key[64], next[64];
	int err = 0, deleted;

	if (fd < 0 || key_size > sizeof(key))
		return fd < 0 ? 0 : -EINVAL;
	do {
		void *prev = NULL;
		deleted = 0;
		while (bpf_map_get_next_key(fd, prev, next) == 0) {
			memcpy(key, next, key_size);
			prev = key;
			if (!match(key, arg))
				continue;
			if (bpf_map_delete_elem(fd, key) == 0)
				deleted++;
			else if (errno != ENOENT && !err)
				err = -errno;
			prev = NULL;
		}
	} while (deleted && !err);
	return err;
}

static bool identity_key_of(const void *key, const void *arg)
{
	return ((const struct custode_identity_key *)key)->ruleset == *(const __u32 *)arg;
}

static bool net_key_of(const void *key, const void *arg)
{
	return ((const struct custode_net_key *)key)->ruleset == *(const __u32 *)arg;
}

static bool private_key_of(const void *key, const void *arg)
{
	return ((const struct custode_private_key *)key)->ruleset == *(const __u32 *)arg;
}

static bool pin_key_of(const void *key, const void *arg)
{
	return ((const struct custode_pin_key *)key)->run_cgid == *(const __u64 *)arg;
}

int custode_engine_delete_net_ruleset(struct custode_engine *e, __u32 ruleset)
{
	int err = delete_matching(e->net_rules_fd, sizeof(struct custode_net_key), net_key_of, &ruleset);
	int r = delete_matching(e->net_private_fd, sizeof(struct custode_private_key), private_key_of, &ruleset);
	int q = delete_matching(e->net_inbound_fd, sizeof(struct custode_private_key), private_key_of, &ruleset);

	return err ? err : r ? r : q;
}

int custode_engine_delete_pins(struct custode_engine *e, __u64 run_cgid)
{
	return delete_matching(e->pins_fd, sizeof(struct custode_pin_key), pin_key_of, &run_cgid);
}

int custode_engine_register(struct custode_engine *e, __u64 cgid, const struct custode_run *run)
{
	struct custode_counters zero;

	memset(&zero, 0, sizeof(zero));
	if (bpf_map_update_elem(e->counters_fd, &cgid, &zero, BPF_ANY) < 0)
		return -errno;
	if (bpf_map_update_elem(e->runs_fd, &cgid, run, BPF_NOEXIST) < 0) {
		int err = -errno;
		bpf_map_delete_elem(e->counters_fd, &cgid);
		return err;
	}
	return custode_engine_bump_runs_gen();
}

int custode_engine_bump_fs_gen(struct custode_engine *e)
{
	__u32 zero = 0;
	__u64 gen = 0;
	int fd = custode_map_open(CUSTODE_MAP_FS_GEN);

	if (fd < 0)
		return -errno;
	/* the kernel adds 1 atomically; a jump of 2^32 can't land on a value it used before */
	if (bpf_map_lookup_elem(fd, &zero, &gen) == 0) {
		gen += 1ull << 32;
		bpf_map_update_elem(fd, &zero, &gen, BPF_ANY);
	}
	close(fd);
	(void)e;
	return 0;
}

int custode_engine_run_cache(void)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	int fd = custode_map_open(CUSTODE_MAP_RUN_CACHE), active;

	if (fd < 0)
		return -errno;
	memset(&info, 0, sizeof(info));
	active = bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && info.type == 32 /* BPF_MAP_TYPE_CGRP_STORAGE */;
	close(fd);
	return active;
}

/*
 * After every change to custode_runs or custode_gates: the run cache
 * (include/custode/abi.h) holds only answers computed at the new value.
 */
int custode_engine_bump_runs_gen(void)
{
	__u32 zero = 0;
	__u64 gen = 0;
	int fd = custode_map_open(CUSTODE_MAP_RUNS_GEN), err = 0;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno; /* an engine without the run cache */
	if (bpf_map_lookup_elem(fd, &zero, &gen) < 0)
		err = -errno;
	gen = (gen + 1) & ~CUSTODE_RUN_CACHE_VALID;
	if (!err && bpf_map_update_elem(fd, &zero, &gen, BPF_ANY) < 0)
		err = -errno;
	close(fd);
	return err;
}

int custode_engine_unregister(struct custode_engine *e, __u64 cgid)
{
	int err = 0;

	if (bpf_map_delete_elem(e->runs_fd, &cgid) < 0 && errno != ENOENT)
		err = -errno;
	custode_engine_bump_fs_gen(e);
	custode_engine_bump_runs_gen();
	if (bpf_map_delete_elem(e->counters_fd, &cgid) < 0 && errno != ENOENT && !err)
		err = -errno;
	return err;
}

int custode_engine_unregister_final(struct custode_engine *e, __u64 cgid, struct custode_counters *final)
{
	int err = 0;

	/* the run first: from here on no hook counts for it, so the counters read next are its last */
	if (bpf_map_delete_elem(e->runs_fd, &cgid) < 0 && errno != ENOENT)
		err = -errno;
	custode_engine_bump_fs_gen(e);
	custode_engine_bump_runs_gen();
	if (final && custode_engine_get_counters(e, cgid, final) < 0)
		memset(final, 0, sizeof(*final));
	if (bpf_map_delete_elem(e->counters_fd, &cgid) < 0 && errno != ENOENT && !err)
		err = -errno;
	return err;
}

int custode_engine_get_run(struct custode_engine *e, __u64 cgid, struct custode_run *out)
{
	return bpf_map_lookup_elem(e->runs_fd, &cgid, out) ? -errno : 0;
}

int custode_engine_set_run(struct custode_engine *e, __u64 cgid, const struct custode_run *run)
{
	int err = bpf_map_update_elem(e->runs_fd, &cgid, run, BPF_EXIST) ? -errno : 0;

	/* a changed run (cancelled, new rules) must not be served decisions cached for the old one */
	custode_engine_bump_fs_gen(e);
	return err;
}

int custode_engine_quiesce(void)
{
	int err;

	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0)
		return 0;
	err = -errno;
	/* refused on nohz_full hosts: a grace period takes milliseconds; wait well beyond one */
	usleep(100 * 1000);
	return err;
}

int custode_engine_get_counters(struct custode_engine *e, __u64 cgid, struct custode_counters *out)
{
	return bpf_map_lookup_elem(e->counters_fd, &cgid, out) ? -errno : 0;
}

int custode_engine_get_stats(struct custode_engine *e, struct custode_stats *out)
{
	int ncpu = libbpf_num_possible_cpus();
	struct custode_stats *per;
	__u32 zero = 0;

	if (ncpu <= 0)
		return -EINVAL;
	per = calloc((size_t)ncpu, sizeof(*per));
	if (!per)
		return -ENOMEM;
	if (bpf_map_lookup_elem(e->stats_fd, &zero, per) < 0) {
		int err = -errno;
		free(per);
		return err;
	}
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < ncpu; i++) {
		out->events += per[i].events;
		out->events_dropped += per[i].events_dropped;
	}
	free(per);
	return 0;
}
