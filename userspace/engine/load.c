// SPDX-License-Identifier: Apache-2.0
/*
 * Loading the engine's classes (engine_int.h): each BPF object fitted to this
 * kernel, verified, attached and its links pinned, then recorded in meta; and
 * the dry load doctor uses, which pins and attaches nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "engine/engine.h"
#include "engine/engine_int.h"
#include "engine/hooks.h"
#include "engine/maps.h"
#include "engine/probe.h"
#include "engine/self.h"

#include "file.skel.h"
#include "net.skel.h"
#include "proc.skel.h"
#include "bpf_digest.h"

/*
 * The first 8 bytes of SHA-256 over the file, net and proc objects this
 * binary embeds, in that order: made at build time (cmake/BpfDigest.cmake);
 * selftests/unit/test_engine_digest.c checks it against the embedded bytes.
 */
__u64 engine_build_digest(void)
{
	__u64 d;

	memcpy(&d, custode_bpf_digest, sizeof(d));
	return d;
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

/* Note a loaded class in meta (creating and pinning meta on first use). */
static int record_class(struct custode_engine *e, unsigned cls, struct custode_refusal *why)
{
	int err;

	if (e->meta_fd < 0) {
		e->meta_fd = custode_meta_create();
		if (e->meta_fd < 0)
			return custode_refuse(why, -e->meta_fd, CUSTODE_REASON_ENGINE_LOAD_FAILED, "pin meta: %s",
					      strerror(-e->meta_fd));
	}
	e->meta.classes |= cls;
	err = engine_meta_write(e->meta_fd, &e->meta);
	if (err)
		return custode_refuse(why, -err, CUSTODE_REASON_ENGINE_LOAD_FAILED, "write meta: %s", strerror(-err));
	return 0;
}

int engine_load_missing(struct custode_engine *e, unsigned missing, struct custode_refusal *why)
{
	int err = 0;

	/*
	 * LSM classes first: on hosts that refuse them, nothing else gets pinned
	 * in vain. Each class that loads is recorded in meta at once, so a later
	 * failure never leaves pinned programs that meta doesn't describe.
	 */
	if (missing & CUSTODE_CLASS_FILE) {
		custode_libbpf_log_reset();
		if ((err = load_file_class(e, why)) || (err = record_class(e, CUSTODE_CLASS_FILE, why)))
			return err;
	}
	if (missing & CUSTODE_CLASS_PROCESS) {
		custode_libbpf_log_reset();
		if ((err = load_proc_class(e, why)) || (err = record_class(e, CUSTODE_CLASS_PROCESS, why)))
			return err;
	}
	if (missing & CUSTODE_CLASS_EGRESS) {
		custode_libbpf_log_reset();
		if ((err = load_net_class(e, why)) || (err = record_class(e, CUSTODE_CLASS_EGRESS, why)))
			return err;
	}
	return 0;
}
