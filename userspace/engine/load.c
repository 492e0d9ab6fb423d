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
	if (use) /* LSM objects: the cgroup's storage, or (6.1) the task's (bpf/lib/run.bpf.h) */
		*use = have ? CUSTODE_RUN_CACHE_CGROUP : CUSTODE_RUN_CACHE_TASK;
	return 0;
}

/*
 * A class's skeleton seen through what loading it needs: its object, the
 * constants it is given, its own load and destroy. The skeletons differ
 * only in type and constants; CLASS_SKELETON makes the adapter of each.
 */
struct class_skel {
	void *skel;
	struct bpf_object *obj;
	volatile __u64 *root_cgid;
	volatile __u32 *root_level;
	volatile __u32 *use_run_cache;     /* NULL: the object pins the run cache map, never uses it */
	volatile __u64 *exe_dev, *exe_ino; /* NULL but in the process class */
	int (*load)(void *skel);
	void (*destroy)(void *skel);
};

#define CLASS_SKELETON(name, ...)                                                                                      \
	static int name##_load(void *s)                                                                                \
	{                                                                                                              \
		return name##_bpf__load(s);                                                                            \
	}                                                                                                              \
	static void name##_destroy(void *s)                                                                            \
	{                                                                                                              \
		name##_bpf__destroy(s);                                                                                \
	}                                                                                                              \
	static bool name##_open(const struct bpf_object_open_opts *opts, struct class_skel *c)                        \
	{                                                                                                              \
		struct name##_bpf *s = name##_bpf__open_opts(opts);                                                    \
                                                                                                                       \
		if (s)                                                                                                 \
			*c = (struct class_skel){.skel = s, .obj = s->obj, .root_cgid = &s->rodata->custode_root_cgid, \
						 .root_level = &s->rodata->custode_root_level, .load = name##_load,    \
						 .destroy = name##_destroy, __VA_ARGS__};                              \
		return s;                                                                                              \
	}

CLASS_SKELETON(file, .use_run_cache = &s->rodata->custode_use_run_cache)
/*
 * The process class (bpf/proc.bpf.c). Its bpf_map/bpf_prog programs reserve
 * custode's objects to the binary loading them now, identified by the
 * kernel's view of our executable (engine/self.h).
 */
CLASS_SKELETON(proc, .use_run_cache = &s->rodata->custode_use_run_cache, .exe_dev = &s->rodata->custode_exe_dev,
	       .exe_ino = &s->rodata->custode_exe_ino)
/* the run cache map only, so every object pins the same one: cgroup programs can't call bpf_get_current_task_btf */
CLASS_SKELETON(net, .use_run_cache = NULL)

/* The classes, in the order they load: LSM ones first (cgroup programs attach at the cgroup v2 root). */
static const struct engine_class {
	unsigned cls;
	const char *what;
	bool lsm;
	bool (*open)(const struct bpf_object_open_opts *opts, struct class_skel *c);
} engine_classes[] = {
	{CUSTODE_CLASS_FILE, "file engine", true, file_open},
	{CUSTODE_CLASS_PROCESS, "process engine", true, proc_open},
	{CUSTODE_CLASS_EGRESS, "egress engine", false, net_open},
};

/* The constants a class's object is given (the process class's identity of this executable too). */
struct class_consts {
	__u64 root_cgid;
	__u32 root_level;
	__u64 exe_dev, exe_ino;
};

/* Open a class's object (opts NULL: unpinned) and give it its constants. */
static int open_class(const struct engine_class *k, const struct bpf_object_open_opts *opts,
		      const struct class_consts *v, struct class_skel *c, struct custode_refusal *why)
{
	if (!k->open(opts, c))
		return custode_refuse(why, errno, CUSTODE_REASON_ENGINE_LOAD_FAILED, "open %s: %s", k->what,
				      strerror(errno));
	*c->root_cgid = v->root_cgid;
	*c->root_level = v->root_level;
	if (c->exe_dev) {
		*c->exe_dev = v->exe_dev;
		*c->exe_ino = v->exe_ino;
	}
	return 0;
}

/* Fit an opened class to this kernel: the hooks of an LSM class, the run cache map. */
static int fit_class(const struct engine_class *k, struct class_skel *c, struct custode_refusal *why)
{
	int err = k->lsm ? custode_fit_hooks(c->obj, k->what, why) : 0;

	if (!err)
		err = fit_run_cache(c->obj, c->use_run_cache, why);
	return err;
}

/*
 * A load failure: doctor's cause if the host refuses the class's kind of
 * programs (LSM, or cgroup BPF), else the verifier's words.
 */
static int load_refusal(int err, const struct engine_class *k, struct custode_refusal *why)
{
	struct custode_probe_result pr = {0};

	if (k->lsm)
		custode_probe_lsm(&pr);
	else
		custode_probe_cgroup(&pr);
	if (!custode_probe_classes(&pr, k->cls)) {
		custode_probe_class_refusal(&pr, k->cls, why);
		return err;
	}
	return custode_refuse(why, -err, CUSTODE_REASON_ENGINE_LOAD_FAILED, "load %s: %s; libbpf said: %s", k->what,
			      strerror(-err), custode_libbpf_log());
}

/*
 * Load one class: fitted, verified, attached (LSM and tracing programs by
 * their section; cgroup programs at the root of the cgroup v2 hierarchy,
 * where every socket passes, including sockets made outside a run and
 * passed into it) and its links pinned.
 */
static int load_class(struct custode_engine *e, const struct engine_class *k, struct custode_refusal *why)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = CUSTODE_PIN_MAPS);
	struct class_consts v = {.root_cgid = e->meta.root_cgroup_id, .root_level = e->meta.root_level};
	struct class_skel c;
	int err, cgfd = -1;

	if (k->cls == CUSTODE_CLASS_PROCESS && (err = custode_self_exe_identity(&v.exe_dev, &v.exe_ino)))
		return custode_refuse(why, -err, CUSTODE_REASON_ENGINE_LOAD_FAILED,
				      "identity of this executable (/proc/self/fdinfo, mountinfo): %s", strerror(-err));
	if (!k->lsm && (cgfd = open(e->cg_mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_CGROUP_FAILED, "open %s: %s", e->cg_mount,
				      strerror(errno));
	if ((err = open_class(k, &opts, &v, &c, why)))
		goto out;
	if (!(err = fit_class(k, &c, why))) {
		err = c.load(c.skel);
		err = err ? load_refusal(err, k, why) : attach_and_pin(c.obj, cgfd, e->cg_mount, why);
	}
	c.destroy(c.skel);
out:
	if (cgfd >= 0)
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
	/* any live ids: the verifier folds these constants */
	struct class_consts v = {.root_cgid = 1, .root_level = 1, .exe_dev = 1, .exe_ino = 1};
	const struct engine_class *k = NULL;
	struct class_skel c;
	int err;

	custode_libbpf_log_reset();
	for (size_t i = 0; i < sizeof(engine_classes) / sizeof(engine_classes[0]); i++)
		if (engine_classes[i].cls == cls)
			k = &engine_classes[i];
	if (!k)
		return custode_refuse(why, EINVAL, CUSTODE_REASON_ENGINE_LOAD_FAILED, "unknown class %#x", cls);
	if (cls == CUSTODE_CLASS_PROCESS)
		custode_self_exe_identity(&v.exe_dev, &v.exe_ino);
	if ((err = open_class(k, NULL, &v, &c, why)))
		return err;
	dry_maps(c.obj);
	err = fit_class(k, &c, why);
	if (!err && (err = c.load(c.skel)))
		err = dry_refusal(err, k->what, why);
	c.destroy(c.skel);
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
	for (size_t i = 0; i < sizeof(engine_classes) / sizeof(engine_classes[0]); i++) {
		const struct engine_class *k = &engine_classes[i];

		if (!(missing & k->cls))
			continue;
		custode_libbpf_log_reset();
		if ((err = load_class(e, k, why)) || (err = record_class(e, k->cls, why))) {
			if (e->meta_fd < 0)
				engine_clear_unrecorded(); /* a fresh engine whose first class failed: leave no trace */
			return err;
		}
	}
	return 0;
}
