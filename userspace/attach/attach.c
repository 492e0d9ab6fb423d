// SPDX-License-Identifier: Apache-2.0
/* Attached runs: attach, detach, list, adopt, reap (attach.h, docs/operations.md). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <bpf/bpf.h>

#include "engine/hostaddrs.h"
#include "attach/attach.h"
#include "bundle/jcs.h"
#include "util/time.h"
#include "cgroup/cgroup.h"
#include "dns/launch.h"
#include "dns/names.h"
#include "policy/compile.h"
#include "policy/net.h"
#include "policy/profiles.h"
#include "run/runstate.h"
#include "util/fsutil.h"

#define MAX_ATTACHED CUSTODE_MAX_RUNS

/* ---- pure parts ---- */

bool custode_path_nested(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if (la > lb) {
		const char *t = a;
		size_t lt = la;
		a = b;
		la = lb;
		b = t;
		lb = lt;
	}
	/* a is the shorter: equal, or b continues a with a '/' */
	return strncmp(a, b, la) == 0 && (lb == la || b[la] == '/');
}

int custode_attach_check_path(const char *mount, const char *path, const char *custode_root, int root_level,
			      const char *self_cgroup, int *level, char *gate, size_t gate_len,
			      struct custode_refusal *why)
{
	size_t lm = strlen(mount);
	const char *p;
	int lv = 0;

	if (strncmp(path, mount, lm) || path[lm] != '/' || !path[lm + 1])
		return custode_refuse(why, EINVAL, CUSTODE_REASON_ATTACH_CGROUP,
				      "%s is not a cgroup below the cgroup v2 mount %s (the root cgroup can't be a run)",
				      path, mount);
	if (custode_path_nested(path, custode_root))
		return custode_refuse(why, EINVAL, CUSTODE_REASON_ATTACH_CGROUP,
				      "%s is %s custode's own subtree %s (runs there are made by `custode run`)", path,
				      strlen(path) >= strlen(custode_root) ? "inside" : "above", custode_root);
	if (self_cgroup && self_cgroup[0] && custode_path_nested(path, self_cgroup) &&
	    strlen(path) <= strlen(self_cgroup))
		return custode_refuse(why, EINVAL, CUSTODE_REASON_ATTACH_CGROUP,
				      "%s holds custode's daemon itself (%s): it can't confine itself", path, self_cgroup);
	for (p = path + lm; *p; p++)
		if (*p == '/')
			lv++;
	if (lv < root_level)
		return custode_refuse(why, EINVAL, CUSTODE_REASON_ATTACH_CGROUP,
				      "%s is at cgroup level %d, above custode's root level %d: attach a cgroup at level "
				      "%d or deeper (docs/operations.md)",
				      path, lv, root_level, root_level);
	if (lv - root_level >= CUSTODE_GATE_LEVELS)
		return custode_refuse(why, EINVAL, CUSTODE_REASON_ATTACH_CGROUP,
				      "%s is %d levels below custode's root level; at most %d", path, lv - root_level,
				      CUSTODE_GATE_LEVELS - 1);
	/* the gate: the first root_level components */
	{
		const char *q = path + lm;
		int n = 0;

		while (*q && n <= root_level) {
			if (*q == '/' && ++n == root_level + 1)
				break;
			q++;
		}
		if ((size_t)(q - path) >= gate_len)
			return custode_refuse(why, ENAMETOOLONG, CUSTODE_REASON_ATTACH_CGROUP, "%s: path too long", path);
		memcpy(gate, path, (size_t)(q - path));
		gate[q - path] = 0;
	}
	*level = lv;
	return 0;
}

int custode_gates_plan(const struct custode_gates *cur, const struct custode_gate_want *want, size_t n,
		       struct custode_gates *phase1, struct custode_gates *phase2)
{
	struct custode_gates p1 = *cur;
	__u32 wanted_levels[CUSTODE_MAX_GATES];
	__u64 new_ids[CUSTODE_MAX_GATES * 4];
	__u32 new_levels[CUSTODE_MAX_GATES * 4];
	size_t n_new = 0;

	/* phase 1: keep the slots of gates still wanted (levels replaced), free the others */
	for (int k = 0; k < CUSTODE_MAX_GATES; k++) {
		wanted_levels[k] = 0;
		if (!p1.gate[k].id)
			continue;
		for (size_t i = 0; i < n; i++)
			if (want[i].gate_id == p1.gate[k].id && want[i].level_bit >= 0 &&
			    want[i].level_bit < CUSTODE_GATE_LEVELS)
				wanted_levels[k] |= 1u << want[i].level_bit;
	}
	for (int k = 0; k < CUSTODE_MAX_GATES; k++) {
		if (!p1.gate[k].id)
			continue;
		if (!wanted_levels[k]) {
			memset(&p1.gate[k], 0, sizeof(p1.gate[k]));
			p1.used &= ~(1u << k);
		} else {
			p1.gate[k].levels = wanted_levels[k];
			p1.used |= 1u << k;
		}
	}
	/* gates not in a slot yet */
	for (size_t i = 0; i < n; i++) {
		bool have = false;

		if (!want[i].gate_id || want[i].level_bit < 0 || want[i].level_bit >= CUSTODE_GATE_LEVELS)
			continue;
		for (int k = 0; k < CUSTODE_MAX_GATES; k++)
			if (p1.gate[k].id == want[i].gate_id)
				have = true;
		if (have)
			continue;
		for (size_t j = 0; j < n_new; j++)
			if (new_ids[j] == want[i].gate_id) {
				new_levels[j] |= 1u << want[i].level_bit;
				have = true;
			}
		if (have)
			continue;
		if (n_new == sizeof(new_ids) / sizeof(new_ids[0]))
			return -ENOSPC;
		new_ids[n_new] = want[i].gate_id;
		new_levels[n_new++] = 1u << want[i].level_bit;
	}
	*phase1 = p1;
	/* phase 2: the new gates, into slots that were free before phase 1 (so no slot changes its id at once) */
	for (size_t j = 0; j < n_new; j++) {
		int k;

		for (k = 0; k < CUSTODE_MAX_GATES; k++)
			if (!p1.gate[k].id && !cur->gate[k].id)
				break;
		if (k == CUSTODE_MAX_GATES)
			return -ENOSPC;
		p1.gate[k].id = new_ids[j];
		p1.gate[k].levels = new_levels[j];
		p1.used |= 1u << k;
	}
	*phase2 = p1;
	return 0;
}

/* ---- cgroups ---- */

int custode_cgroup_path_by_id(const char *mount, __u64 id, char *out, size_t len)
{
	struct {
		struct file_handle fh;
		__u64 id;
	} h;
	char link[64];
	ssize_t n;
	int mfd, fd, err = 0;

	memset(&h, 0, sizeof(h));
	h.fh.handle_bytes = sizeof(__u64);
	h.fh.handle_type = 0xfe; /* FILEID_KERNFS: cgroup2 exports the kernfs node id */
	memcpy(h.fh.f_handle, &id, sizeof(id));
	mfd = open(mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (mfd < 0)
		return -errno;
	fd = open_by_handle_at(mfd, &h.fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		err = errno == ESTALE ? -ENOENT : -errno;
		close(mfd);
		return err;
	}
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, out, len - 1);
	if (n <= 0)
		err = n < 0 ? -errno : -ENOENT;
	else
		out[n] = 0;
	close(fd);
	close(mfd);
	return err;
}

static bool cgroup_is(const char *path, __u64 id)
{
	__u64 got;

	return path[0] && custode_cgroup_id(path, &got) == 0 && got == id;
}

/* The daemon's own cgroup ("" if unknown). */
static void self_cgroup(const char *mount, char *out, size_t len)
{
	if (custode_cgroup_of_pid(mount, 0, out, len) < 0)
		out[0] = 0;
}

/* ---- state files ---- */

static void attach_state_path(__u64 run_id, char *out, size_t len)
{
	char hex[17];

	custode_run_id_format(run_id, hex);
	snprintf(out, len, "%s/%s.attach.json", CUSTODE_RUNS_DIR, hex);
}

static int attached_write(const struct custode_attached *a)
{
	char path[PATH_MAX], hex[17], *text;
	json_t *o;
	int err;

	custode_run_id_format(a->run_id, hex);
	o = json_pack("{s:s, s:s, s:I, s:I, s:i, s:I, s:{s:s, s:I, s:s, s:s, s:s}, s:s}", "run_id", hex, "cgroup",
		      a->cgroup, "cgroup_id", (json_int_t)a->cgroup_id, "gate_id", (json_int_t)a->gate_id, "level", a->level,
		      "attached_at", (json_int_t)a->attached_at, "policy", "name", a->policy_name, "version",
		      (json_int_t)a->policy_version, "source", a->policy_source, "ref", a->policy_ref, "digest",
		      a->policy_digest, "workspace", a->workspace);
	if (!o)
		return -ENOMEM;
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!text)
		return -ENOMEM;
	attach_state_path(a->run_id, path, sizeof(path));
	err = custode_write_file_atomic(path, text, strlen(text), 0600);
	free(text);
	return err;
}

static int copy_json_str(const json_t *o, const char *key, char *out, size_t len)
{
	const char *v = json_string_value(json_object_get(o, key));

	if (!v || strlen(v) >= len)
		return -EINVAL;
	strcpy(out, v);
	return 0;
}

int custode_attached_read(__u64 run_id, struct custode_attached *out)
{
	char path[PATH_MAX], *text = NULL, hex[32];
	struct custode_attached *a;
	json_t *o, *pol;
	int err;

	attach_state_path(run_id, path, sizeof(path));
	if ((err = custode_read_file(path, 1 << 20, &text, NULL)))
		return err;
	o = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	free(text);
	a = calloc(1, sizeof(*a));
	err = -EINVAL;
	if (!a || !json_is_object(o))
		goto out;
	pol = json_object_get(o, "policy");
	if (copy_json_str(o, "run_id", hex, sizeof(hex)) || custode_run_id_parse(hex, &a->run_id) ||
	    a->run_id != run_id || copy_json_str(o, "cgroup", a->cgroup, sizeof(a->cgroup)) ||
	    !json_is_integer(json_object_get(o, "cgroup_id")) || !json_is_integer(json_object_get(o, "gate_id")) ||
	    !json_is_integer(json_object_get(o, "level")) || !json_is_object(pol) ||
	    copy_json_str(pol, "name", a->policy_name, sizeof(a->policy_name)) ||
	    copy_json_str(pol, "source", a->policy_source, sizeof(a->policy_source)) ||
	    copy_json_str(pol, "ref", a->policy_ref, sizeof(a->policy_ref)) ||
	    copy_json_str(pol, "digest", a->policy_digest, sizeof(a->policy_digest)) ||
	    copy_json_str(o, "workspace", a->workspace, sizeof(a->workspace)))
		goto out;
	a->cgroup_id = (__u64)json_integer_value(json_object_get(o, "cgroup_id"));
	a->gate_id = (__u64)json_integer_value(json_object_get(o, "gate_id"));
	a->level = (int)json_integer_value(json_object_get(o, "level"));
	a->attached_at = json_integer_value(json_object_get(o, "attached_at"));
	a->policy_version = (uint64_t)json_integer_value(json_object_get(pol, "version"));
	*out = *a;
	err = 0;
out:
	free(a);
	json_decref(o);
	return err;
}

int custode_attached_list(struct custode_attached *out, int max)
{
	DIR *d = opendir(CUSTODE_RUNS_DIR);
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while (n < max && (de = readdir(d))) {
		char hex[17];
		__u64 id;

		if (strlen(de->d_name) != 16 + strlen(".attach.json") || strcmp(de->d_name + 16, ".attach.json"))
			continue;
		snprintf(hex, sizeof(hex), "%.16s", de->d_name);
		if (custode_run_id_parse(hex, &id) == 0 && custode_attached_read(id, &out[n]) == 0)
			n++;
	}
	closedir(d);
	return n;
}

static void attached_remove(__u64 run_id)
{
	char path[PATH_MAX];

	attach_state_path(run_id, path, sizeof(path));
	unlink(path);
	custode_runstate_remove(run_id);
	custode_dns_names_remove(run_id);
}

/* Where ${workspace} and ${tmp} point when nothing is bound: below a root-only directory, never created. */
static void unbound_path(__u64 run_id, const char *what, char *out, size_t len)
{
	char hex[17];

	custode_run_id_format(run_id, hex);
	snprintf(out, len, "%s/%s.unbound/%s", CUSTODE_RUNS_DIR, hex, what);
}

/* ---- the gates ---- */

static int gates_fd(struct custode_refusal *why)
{
	int fd = bpf_obj_get(CUSTODE_PIN_MAPS "/custode_gates");

	if (fd < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_ENGINE_MISMATCH,
				      "the pinned engine has no custode_gates map (an older build, in use by runs): "
				      "attached runs need the engine to be replaced once idle");
	return fd;
}

static void *runs_keys(struct custode_engine *e, size_t *n)
{
	__u64 *keys = calloc(CUSTODE_MAX_RUNS, sizeof(*keys)), key, next;
	void *prev = NULL;

	*n = 0;
	if (!keys)
		return NULL;
	while (*n < CUSTODE_MAX_RUNS && bpf_map_get_next_key(e->runs_fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		keys[(*n)++] = key;
	}
	return keys;
}

/* What gate and level an attached run needs: from its state, else by resolving its cgroup id. */
static int attached_want(struct custode_engine *e, __u64 cgid, const struct custode_run *run,
			 struct custode_gate_want *w)
{
	struct custode_attached *a = malloc(sizeof(*a));
	char path[PATH_MAX], gate[PATH_MAX];
	struct custode_refusal why;
	int level, err = -ENOENT;

	if (!a)
		return -ENOMEM;
	if (custode_attached_read(run->run_id, a) == 0 && a->cgroup_id == cgid) {
		w->gate_id = a->gate_id;
		w->level_bit = a->level - (int)e->meta.root_level;
		err = 0;
	} else if (custode_cgroup_path_by_id(e->cg_mount, cgid, path, sizeof(path)) == 0 &&
		   custode_attach_check_path(e->cg_mount, path, e->cg_root, (int)e->meta.root_level, NULL, &level, gate,
					     sizeof(gate), &why) == 0 &&
		   custode_cgroup_id(gate, &w->gate_id) == 0) {
		w->level_bit = level - (int)e->meta.root_level;
		err = 0;
	}
	free(a);
	return err;
}

/* Rewrite the gates from the registered attached runs (two phases: include/custode/abi.h). */
static int gates_sync(struct custode_engine *e, struct custode_refusal *why)
{
	struct custode_gates cur, p1, p2;
	struct custode_gate_want *want;
	size_t n_keys, n = 0, unresolved = 0;
	__u64 *keys;
	__u32 zero = 0;
	int fd, err;

	if ((fd = gates_fd(why)) < 0)
		return fd;
	keys = runs_keys(e, &n_keys);
	want = calloc(CUSTODE_MAX_RUNS + CUSTODE_MAX_GATES * CUSTODE_GATE_LEVELS, sizeof(*want));
	if (!keys || !want) {
		err = custode_refuse(why, ENOMEM, CUSTODE_REASON_RUN_SETUP_FAILED, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n_keys; i++) {
		struct custode_run run;

		if (custode_engine_get_run(e, keys[i], &run) < 0 || !(run.flags & CUSTODE_RUN_ATTACHED))
			continue;
		if (attached_want(e, keys[i], &run, &want[n]) == 0)
			n++;
		else
			unresolved++;
	}
	memset(&cur, 0, sizeof(cur));
	if (bpf_map_lookup_elem(fd, &zero, &cur) < 0) {
		err = custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "read custode_gates: %s",
				     strerror(errno));
		goto out;
	}
	/*
	 * A registered attached run whose gate can't be worked out (no state
	 * file and no path for its id) may still hold processes: fail closed,
	 * keep every gate bit there is and only add.
	 */
	if (unresolved)
		for (int k = 0; k < CUSTODE_MAX_GATES; k++)
			for (int b = 0; cur.gate[k].id && b < CUSTODE_GATE_LEVELS; b++)
				if ((cur.gate[k].levels >> b) & 1) {
					want[n].gate_id = cur.gate[k].id;
					want[n++].level_bit = b;
				}
	if ((err = custode_gates_plan(&cur, want, n, &p1, &p2))) {
		err = custode_refuse(why, -err, CUSTODE_REASON_ENGINE_MAP_FULL,
				     "attached runs lie below more than %d distinct cgroups at custode's root level",
				     CUSTODE_MAX_GATES);
		goto out;
	}
	if ((memcmp(&p1, &cur, sizeof(cur)) && bpf_map_update_elem(fd, &zero, &p1, BPF_ANY) < 0) ||
	    (memcmp(&p2, &p1, sizeof(p1)) && bpf_map_update_elem(fd, &zero, &p2, BPF_ANY) < 0))
		err = custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "write custode_gates: %s",
				     strerror(errno));
	/* the run cache may hold answers computed with the old gates */
	if (custode_engine_bump_runs_gen() < 0 && !err)
		err = custode_refuse(why, EIO, CUSTODE_REASON_RUN_SETUP_FAILED, "bump custode_runs_gen");
out:
	free(keys);
	free(want);
	close(fd);
	return err;
}

/* ---- policies ---- */

struct resolved {
	struct custode_policy *p;
	char source[16];
	char ref[PATH_MAX];
	char digest[80];
	int64_t not_before, not_after; /* bundles */
};

static void digest_of_text(const char *text, size_t len, char out[80])
{
	json_t *doc = json_loadb(text, len, 0, NULL);

	out[0] = 0;
	if (doc && custode_jcs_sha256(json_object_get(doc, "content"), out, NULL, 0) < 0)
		out[0] = 0;
	json_decref(doc);
}

static int resolve_profile(const char *name, struct resolved *r, struct custode_refusal *why)
{
	const struct custode_builtin_profile *bp = custode_profile_find(name);
	int err;

	if (!bp)
		return custode_refuse(why, ENOENT, CUSTODE_REASON_POLICY_UNKNOWN_PROFILE,
				      "no built-in profile named '%s' (see `custode profiles`)", name);
	if ((err = custode_policy_parse(bp->text, bp->len, &r->p, why)))
		return err;
	snprintf(r->source, sizeof(r->source), "profile");
	snprintf(r->ref, sizeof(r->ref), "%s", bp->name);
	digest_of_text(bp->text, bp->len, r->digest);
	return 0;
}

/* The highest version of a named policy among the verified bundles of dir (path and info out). */
static int find_named(const char *dir, const char *name, __u64 want_version, const struct custode_policy_source *src,
		      struct custode_policy **out, struct custode_bundle_info *info, char *path_out, size_t path_len,
		      struct custode_refusal *why)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int64_t now = (int64_t)time(NULL);
	bool found = false;

	if (!d)
		return custode_refuse(why, errno, CUSTODE_REASON_POLICY_UNKNOWN_PROFILE, "bundles %s: %s", dir,
				      strerror(errno));
	while ((de = readdir(d))) {
		struct custode_refusal w = {0};
		struct custode_policy *p = NULL;
		struct custode_bundle_info i;
		char path[PATH_MAX];
		struct stat st;

		if (de->d_name[0] == '.') /* ".", "..", a ConfigMap's "..data" internals */
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (custode_bundle_verify_file(path, src->trust, now, &p, &i, &w) < 0)
			continue;
		if (strcmp(i.name, name) || (want_version != (__u64)-1 && i.version != want_version) ||
		    (found && i.version <= info->version) || custode_bundle_floor_check(src->state_dir, &i, &w) < 0) {
			custode_policy_free(p);
			continue;
		}
		if (found)
			custode_policy_free(*out);
		*out = p;
		*info = i;
		snprintf(path_out, path_len, "%s", path);
		found = true;
	}
	closedir(d);
	if (!found)
		return custode_refuse(why, ENOENT, CUSTODE_REASON_POLICY_UNKNOWN_PROFILE,
				      "no bundle in %s verifies as policy '%s'%s", dir, name,
				      want_version != (__u64)-1 ? " at that version" : "");
	return 0;
}

static int resolve_bundle(const char *path, const char *name, const struct custode_policy_source *src,
			  struct resolved *r, struct custode_refusal *why)
{
	struct custode_bundle_info info;
	int err;

	if (!src || !src->trust)
		return custode_refuse(why, EPERM, CUSTODE_REASON_BUNDLE_KEY,
				      "the daemon has no trusted keys (start it with --bundles DIR --trust KEY)");
	if (name) {
		if (!src->bundles_dir)
			return custode_refuse(why, ENOENT, CUSTODE_REASON_POLICY_UNKNOWN_PROFILE,
					      "the daemon watches no bundles (--bundles DIR) to find policy '%s' in", name);
		if ((err = find_named(src->bundles_dir, name, (__u64)-1, src, &r->p, &info, r->ref, sizeof(r->ref), why)))
			return err;
		/* the floor first, as every consumer of a bundle does (docs/bundles.md) */
		if ((err = custode_bundle_accept(src->state_dir, &info, NULL, why))) {
			custode_policy_free(r->p);
			r->p = NULL;
			return err;
		}
	} else {
		if ((err = custode_bundle_load(path, src->trust, (int64_t)time(NULL), src->state_dir, &r->p, &info, why)))
			return err;
		if (!realpath(path, r->ref))
			snprintf(r->ref, sizeof(r->ref), "%s", path);
	}
	snprintf(r->source, sizeof(r->source), "bundle");
	snprintf(r->digest, sizeof(r->digest), "%s", info.digest);
	r->not_before = info.not_before;
	r->not_after = info.not_after;
	return 0;
}

int custode_attach_verify(const struct custode_attached *a, __u32 running_version,
			  const struct custode_policy_source *src, struct custode_refusal *why)
{
	struct custode_refusal w = {0};

	if (!strcmp(a->policy_source, "profile")) {
		struct resolved r = {0};

		if (resolve_profile(a->policy_ref, &r, &w) < 0)
			return custode_refuse(why, ENOENT, CUSTODE_REASON_POLICY_UNVERIFIED, "profile %s: %s: %s",
					      a->policy_ref, custode_reason_name(w.reason), w.detail);
		if (r.p->version != running_version || (a->policy_digest[0] && strcmp(r.digest, a->policy_digest))) {
			int err = custode_refuse(why, ESTALE, CUSTODE_REASON_POLICY_UNVERIFIED,
						 "built-in profile %s is now v%llu (%s), the run has v%u (%s): this "
						 "custode's profile differs from the one attached",
						 a->policy_ref, (unsigned long long)r.p->version, r.digest, running_version,
						 a->policy_digest);
			custode_policy_free(r.p);
			return err;
		}
		custode_policy_free(r.p);
		return 0;
	}
	if (!strcmp(a->policy_source, "bundle")) {
		struct custode_policy *p = NULL;
		struct custode_bundle_info info;
		char path[PATH_MAX];
		int64_t now = (int64_t)time(NULL);

		if (!src || !src->trust)
			return custode_refuse(why, EPERM, CUSTODE_REASON_POLICY_UNVERIFIED,
					      "bundle %s: the daemon has no trusted keys to verify it with (--trust)",
					      a->policy_ref);
		/* the attached file, at the version the run has (a live update may have moved it on) */
		if (custode_bundle_verify_file(a->policy_ref, src->trust, now, &p, &info, &w) == 0 &&
		    !strcmp(info.name, a->policy_name) && info.version == running_version &&
		    custode_bundle_floor_check(src->state_dir, &info, &w) == 0) {
			custode_policy_free(p);
			return 0;
		}
		custode_policy_free(p);
		p = NULL;
		if (src->bundles_dir && find_named(src->bundles_dir, a->policy_name, running_version, src, &p, &info, path,
						   sizeof(path), &w) == 0) {
			custode_policy_free(p);
			return 0;
		}
		return custode_refuse(why, ESTALE, CUSTODE_REASON_POLICY_UNVERIFIED,
				      "%s v%u: no bundle verifies at that version any more (%s: %s)", a->policy_name,
				      running_version, custode_reason_name(w.reason) ? custode_reason_name(w.reason) : "",
				      w.detail);
	}
	return custode_refuse(why, EINVAL, CUSTODE_REASON_POLICY_UNVERIFIED, "unknown policy source '%s'",
			      a->policy_source);
}

/* ---- the runs, as JSON ---- */

static json_t *counters_json(const struct custode_counters *c)
{
	json_t *by = json_object();
	__u64 total = 0;

	for (int i = 0; i < CUSTODE_REASON_KERNEL_MAX; i++) {
		const char *name = custode_reason_name(i);

		if (!c->denials[i])
			continue;
		total += c->denials[i];
		json_object_set_new(by, name ? name : "unknown", json_integer((json_int_t)c->denials[i]));
	}
	return json_pack("{s:I, s:o}", "total", (json_int_t)total, "by_reason", by);
}

static json_t *classes_json(__u32 flags)
{
	json_t *a = json_array();

	if (flags & CUSTODE_RUN_FILE)
		json_array_append_new(a, json_string("file"));
	if (flags & CUSTODE_RUN_PROCESS)
		json_array_append_new(a, json_string("process"));
	if (flags & CUSTODE_RUN_NET)
		json_array_append_new(a, json_string("egress"));
	return a;
}

static json_t *time_json(int64_t t)
{
	char buf[32];

	return t > 0 ? json_string(custode_time_format(t, buf, sizeof(buf))) : json_null();
}

/* Is the launcher of a run alive? Its lock is held. (No lock file is created here.) */
static const char *launcher_state(__u64 run_id)
{
	char path[PATH_MAX], hex[17];
	int fd;

	custode_run_id_format(run_id, hex);
	snprintf(path, sizeof(path), "%s/%s.lock", CUSTODE_RUNS_DIR, hex);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return "orphaned";
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		close(fd);
		return "orphaned";
	}
	close(fd);
	return "live";
}

static json_t *run_json(struct custode_engine *e, __u64 cgid, const struct custode_run *run,
			const struct custode_policy_source *src, bool verify)
{
	struct custode_counters c;
	struct custode_runstate *st = malloc(sizeof(*st));
	struct custode_attached *a = malloc(sizeof(*a));
	bool have_st, have_a;
	char hex[17];
	json_t *o, *pol;

	if (!st || !a) {
		free(st);
		free(a);
		return NULL;
	}
	custode_run_id_format(run->run_id, hex);
	memset(&c, 0, sizeof(c));
	custode_engine_get_counters(e, cgid, &c);
	have_st = custode_runstate_read(run->run_id, st) == 0 && st->cgroup_id == cgid;
	have_a = (run->flags & CUSTODE_RUN_ATTACHED) && custode_attached_read(run->run_id, a) == 0 && a->cgroup_id == cgid;
	pol = json_pack("{s:I}", "version", (json_int_t)run->policy_version);
	if (have_st)
		json_object_set_new(pol, "name", json_string(st->policy));
	if (have_st && st->source[0])
		json_object_set_new(pol, "source", json_string(st->source));
	if (have_a) {
		json_object_set_new(pol, "ref", json_string(a->policy_ref));
		if (verify) {
			struct custode_refusal why = {0};

			if (custode_attach_verify(a, run->policy_version, src, &why) == 0) {
				json_object_set_new(pol, "verified", json_true());
			} else {
				json_object_set_new(pol, "verified", json_false());
				json_object_set_new(pol, "unverified", json_string(why.detail));
			}
		}
	}
	o = json_pack("{s:s, s:s, s:I, s:o, s:s, s:o, s:o}", "run_id", hex, "kind",
		      (run->flags & CUSTODE_RUN_ATTACHED) ? "attached" : "launched", "cgroup_id", (json_int_t)cgid, "policy",
		      pol, "mode", (run->flags & CUSTODE_RUN_AUDIT) ? "audit" : "enforce", "classes",
		      classes_json(run->flags), "denials", counters_json(&c));
	if (have_a) {
		json_object_set_new(o, "cgroup", json_string(a->cgroup));
		json_object_set_new(o, "started", time_json(a->attached_at));
		json_object_set_new(o, "state", json_string((run->flags & CUSTODE_RUN_CANCELLED) ? "cancelled" : "live"));
	} else if (have_st) {
		json_object_set_new(o, "cgroup", json_string(st->cgroup));
		json_object_set_new(o, "started", time_json(st->started));
		if (run->flags & CUSTODE_RUN_ATTACHED) {
			json_object_set_new(o, "state", json_string("live"));
		} else {
			json_object_set_new(o, "launcher_pid", json_integer(st->launcher_pid));
			json_object_set_new(o, "state", json_string((run->flags & CUSTODE_RUN_CANCELLED) ? "cancelled"
												      : launcher_state(run->run_id)));
		}
	} else {
		json_object_set_new(o, "cgroup", json_null());
		json_object_set_new(o, "started", json_null());
		json_object_set_new(o, "state", json_string("no-state"));
	}
	free(st);
	free(a);
	return o;
}

json_t *custode_runs_list(struct custode_engine *e, const struct custode_policy_source *src, bool verify)
{
	json_t *arr = json_array();
	size_t n;
	__u64 *keys = runs_keys(e, &n);

	for (size_t i = 0; keys && i < n; i++) {
		struct custode_run run;
		json_t *o;

		if (custode_engine_get_run(e, keys[i], &run) < 0)
			continue;
		o = run_json(e, keys[i], &run, src, verify);
		if (o)
			json_array_append_new(arr, o);
	}
	free(keys);
	return arr;
}

/* ---- attach and detach ---- */

static int new_run_id(struct custode_engine *e, const struct custode_attach_req *req, __u64 *out,
		      struct custode_refusal *why)
{
	char path[PATH_MAX], hex[17];
	__u64 id = req->run_id;

	if (!req->has_run_id && getrandom(&id, sizeof(id), 0) != sizeof(id))
		return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "getrandom: %s", strerror(errno));
	if (!id)
		return custode_refuse(why, EINVAL, CUSTODE_REASON_RUN_USAGE, "run id 0 is reserved");
	custode_run_id_format(id, hex);
	snprintf(path, sizeof(path), "%s/%s.json", CUSTODE_RUNS_DIR, hex);
	if (access(path, F_OK) == 0)
		return custode_refuse(why, EEXIST, CUSTODE_REASON_ATTACH_EXISTS, "run %s exists", hex);
	{
		size_t n;
		__u64 *keys = runs_keys(e, &n);

		for (size_t i = 0; keys && i < n; i++) {
			struct custode_run run;
			if (custode_engine_get_run(e, keys[i], &run) == 0 && run.run_id == id) {
				free(keys);
				return custode_refuse(why, EEXIST, CUSTODE_REASON_ATTACH_EXISTS, "run %s is registered", hex);
			}
		}
		free(keys);
	}
	*out = id;
	return 0;
}

/*
 * Every attached run needs the file and process classes whatever its policy:
 * they keep its processes in the run (writes on cgroupfs outside it,
 * clone3(CLONE_INTO_CGROUP)) — attached processes may be root and have no
 * seccomp filter. Where they can't load (no BPF-LSM), attach is refused.
 */
static unsigned classes_needed(const struct custode_policy *p)
{
	return custode_policy_classes(p) | CUSTODE_CLASS_FILE | CUSTODE_CLASS_PROCESS;
}

int custode_attach(struct custode_engine *e, const struct custode_attach_req *req,
		   const struct custode_policy_source *src, json_t **out, struct custode_refusal *why)
{
	struct custode_attached *a = calloc(1, sizeof(*a)), *others = NULL;
	struct custode_runstate *st = calloc(1, sizeof(*st));
	struct custode_fs_ruleset fs = {0};
	struct custode_net_ruleset net = {0};
	struct custode_bindings b;
	struct resolved r = {0};
	struct custode_run run = {0};
	char canon[PATH_MAX], self[PATH_MAX], gate[PATH_MAX], tmp[PATH_MAX], ws[PATH_MAX], probe[PATH_MAX + 32];
	bool state_written = false, rules_added = false, registered = false;
	int err, n_others, lock, level;
	__u64 cgid;

	if (!a || !st) {
		err = custode_refuse(why, ENOMEM, CUSTODE_REASON_RUN_SETUP_FAILED, "out of memory");
		goto out;
	}
	if (!!req->profile + !!req->policy + !!req->bundle != 1) {
		err = custode_refuse(why, EINVAL, CUSTODE_REASON_RUN_USAGE,
				     "exactly one of a profile, a policy name or a bundle is needed");
		goto out;
	}
	/* the cgroup */
	if (!req->cgroup || !realpath(req->cgroup, canon)) {
		err = custode_refuse(why, errno ? errno : EINVAL, CUSTODE_REASON_ATTACH_CGROUP, "cgroup %s: %s",
				     req->cgroup ? req->cgroup : "(none)", strerror(errno ? errno : EINVAL));
		goto out;
	}
	snprintf(probe, sizeof(probe), "%s/cgroup.procs", canon);
	if (access(probe, F_OK) < 0) {
		err = custode_refuse(why, ENOTDIR, CUSTODE_REASON_ATTACH_CGROUP, "%s is not a cgroup v2 directory", canon);
		goto out;
	}
	self_cgroup(e->cg_mount, self, sizeof(self));
	if ((err = custode_attach_check_path(e->cg_mount, canon, e->cg_root, (int)e->meta.root_level, self, &level, gate,
					     sizeof(gate), why)))
		goto out;
	if ((err = custode_cgroup_id(canon, &cgid)) || (err = custode_cgroup_id(gate, &a->gate_id))) {
		err = custode_refuse(why, -err, CUSTODE_REASON_ATTACH_CGROUP, "cgroup id of %s: %s", canon, strerror(-err));
		goto out;
	}
	if (custode_engine_get_run(e, cgid, &run) == 0) {
		err = custode_refuse(why, EEXIST, CUSTODE_REASON_ATTACH_EXISTS, "%s is already a run", canon);
		goto out;
	}
	others = calloc(MAX_ATTACHED, sizeof(*others));
	if (!others) {
		err = custode_refuse(why, ENOMEM, CUSTODE_REASON_RUN_SETUP_FAILED, "out of memory");
		goto out;
	}
	n_others = custode_attached_list(others, MAX_ATTACHED);
	{
		__u64 gates[CUSTODE_MAX_GATES + 1];
		int n_gates = 0;

		for (int i = 0; i < n_others; i++) {
			bool seen = false;

			if (custode_path_nested(canon, others[i].cgroup)) {
				char oh[17];

				custode_run_id_format(others[i].run_id, oh);
				err = custode_refuse(why, EEXIST,
						     strcmp(canon, others[i].cgroup) ? CUSTODE_REASON_ATTACH_CGROUP
										     : CUSTODE_REASON_ATTACH_EXISTS,
						     "%s %s %s, attached as run %s: attached cgroups never nest", canon,
						     !strcmp(canon, others[i].cgroup)		    ? "is"
						     : strlen(canon) > strlen(others[i].cgroup) ? "is inside"
												  : "holds",
						     others[i].cgroup, oh);
				goto out;
			}
			for (int k = 0; k < n_gates; k++)
				seen |= gates[k] == others[i].gate_id;
			if (!seen && n_gates < CUSTODE_MAX_GATES + 1)
				gates[n_gates++] = others[i].gate_id;
		}
		if (n_gates >= CUSTODE_MAX_GATES) {
			bool ours = false;

			for (int k = 0; k < n_gates; k++)
				ours |= gates[k] == a->gate_id;
			if (!ours) {
				err = custode_refuse(why, ENOSPC, CUSTODE_REASON_ENGINE_MAP_FULL,
						     "attached runs already lie below %d cgroups at custode's root level (%s "
						     "would be one more); docs/operations.md",
						     CUSTODE_MAX_GATES, gate);
				goto out;
			}
		}
	}
	/* the policy */
	if (req->profile)
		err = resolve_profile(req->profile, &r, why);
	else
		err = resolve_bundle(req->bundle, req->policy, src, &r, why);
	if (err)
		goto out;
	if (r.p->has_limits && r.p->limits.required) {
		err = custode_refuse(why, ENOTSUP, CUSTODE_REASON_POLICY_UNSUPPORTED,
				     "%s requires limits; an attached cgroup's limits belong to its owner (systemd, the "
				     "container runtime): attach a policy without \"required\" limits",
				     r.p->name);
		goto out;
	}
	/* the engine classes the policy needs (loaded if missing) */
	{
		unsigned need = classes_needed(r.p);

		if ((need & ~e->meta.classes)) {
			custode_engine_close(e);
			if ((err = custode_host_prepare(e, why)) || (err = custode_engine_open(e, need, CUSTODE_ENGINE_LOAD, why))) {
				/*
				 * The daemon's one engine handle must survive a refused load
				 * (e.g. kernel.lsm_unavailable): reopen what is pinned, or
				 * detach, runs and the reaper would lose the engine.
				 */
				struct custode_refusal w = {0};

				custode_engine_close(e);
				if (custode_host_prepare(e, &w) || custode_engine_open(e, 0, 0, &w))
					fprintf(stderr, "custode daemon: attach: reopening the engine after a refused load: %s: %s\n",
						custode_reason_name(w.reason), w.detail);
				goto out;
			}
		}
	}
	if ((err = gates_fd(why)) < 0)
		goto out;
	close(err);
	err = 0;
	/* the run and its state, before anything is registered (adoption cleans up a half-made one) */
	if ((err = new_run_id(e, req, &a->run_id, why)))
		goto out;
	if (req->workspace) {
		if (!realpath(req->workspace, ws)) {
			err = custode_refuse(why, errno, CUSTODE_REASON_RUN_WORKSPACE, "workspace %s: %s", req->workspace,
					     strerror(errno));
			goto out;
		}
	} else {
		unbound_path(a->run_id, "workspace", ws, sizeof(ws));
	}
	unbound_path(a->run_id, "tmp", tmp, sizeof(tmp));
	a->cgroup_id = cgid;
	a->level = level;
	a->attached_at = (int64_t)time(NULL);
	snprintf(a->cgroup, sizeof(a->cgroup), "%s", canon);
	snprintf(a->policy_name, sizeof(a->policy_name), "%s", r.p->name);
	a->policy_version = r.p->version;
	snprintf(a->policy_source, sizeof(a->policy_source), "%s", r.source);
	snprintf(a->policy_ref, sizeof(a->policy_ref), "%s", r.ref);
	snprintf(a->policy_digest, sizeof(a->policy_digest), "%s", r.digest);
	snprintf(a->workspace, sizeof(a->workspace), "%s", ws);
	st->run_id = a->run_id;
	st->cgroup_id = cgid;
	st->launcher_pid = getpid(); /* the daemon: no launcher; no <id>.lock, so `custode gc` leaves it alone */
	st->started = a->attached_at;
	snprintf(st->cgroup, sizeof(st->cgroup), "%s", canon);
	snprintf(st->tmp, sizeof(st->tmp), "%s", tmp);
	snprintf(st->workspace, sizeof(st->workspace), "%s", ws);
	snprintf(st->policy, sizeof(st->policy), "%s", r.p->name);
	snprintf(st->source, sizeof(st->source), "%s", r.source);
	lock = custode_engine_lock();
	if (lock < 0) {
		err = custode_refuse(why, -lock, CUSTODE_REASON_RUN_SETUP_FAILED, "engine lock: %s", strerror(-lock));
		goto out;
	}
	err = custode_engine_alloc_ruleset(e, &st->ruleset);
	custode_engine_unlock(lock);
	if (err) {
		err = custode_refuse(why, -err, CUSTODE_REASON_ENGINE_MAP_FULL, "no free rule set: %s", strerror(-err));
		goto out;
	}
	state_written = true;
	if ((err = attached_write(a)) || (err = custode_runstate_write(st))) {
		err = custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "state file: %s", strerror(-err));
		goto undo;
	}
	b.workspace = ws;
	b.tmp = tmp;
	/* the addresses of the cgroup's network namespace are local services to it (net.host_address) */
	if (r.p->has_network && (err = custode_hostaddrs_watch_pid(custode_hostaddrs_cgroup_pid(canon), why)))
		goto undo;
	if ((err = custode_policy_compile_fs(r.p, &b, st->ruleset, &fs, why)) ||
	    (err = custode_policy_compile_net(r.p, NULL, 0, st->ruleset, &net, why)) ||
	    (err = custode_dns_run_prepare(a->run_id, &net, why)))
		goto undo;
	rules_added = true;
	if ((err = custode_engine_add_rules(e, st->ruleset, &fs)) || (err = custode_engine_add_net(e, &net))) {
		err = custode_refuse(why, -err, err == -E2BIG || err == -ENOSPC ? CUSTODE_REASON_ENGINE_MAP_FULL
									 : CUSTODE_REASON_RUN_SETUP_FAILED,
				     "adding the rules: %s", strerror(-err));
		goto undo;
	}
	memset(&run, 0, sizeof(run));
	run.run_id = a->run_id;
	run.ruleset = st->ruleset;
	run.policy_version = (__u32)r.p->version;
	run.flags = CUSTODE_RUN_ATTACHED | (r.p->has_filesystem ? CUSTODE_RUN_FILE : 0) |
		    (r.p->has_network ? CUSTODE_RUN_NET : 0) | (r.p->has_network && !net.listen ? CUSTODE_RUN_NO_LISTEN : 0) |
		    (r.p->has_network && net.inbound_set ? CUSTODE_RUN_INBOUND : 0) |
		    (r.p->audit ? CUSTODE_RUN_AUDIT : 0) | (r.p->has_process ? CUSTODE_RUN_PROCESS : 0) |
		    (r.p->has_process && r.p->ptrace_run ? CUSTODE_RUN_PTRACE_RUN : 0) |
		    (r.p->has_process && r.p->wx_deny ? CUSTODE_RUN_WX_DENY : 0);
	if ((err = custode_engine_register(e, cgid, &run))) {
		err = custode_refuse(why, -err, err == -E2BIG ? CUSTODE_REASON_ENGINE_MAP_FULL : CUSTODE_REASON_RUN_SETUP_FAILED,
				     "register run: %s", strerror(-err));
		goto undo;
	}
	registered = true;
	/* from this update on, the engine finds the cgroup's tasks */
	if ((err = gates_sync(e, why)))
		goto undo;
	*out = run_json(e, cgid, &run, src, false);
	if (*out && r.not_after) {
		json_t *pol = json_object_get(*out, "policy");

		json_object_set_new(pol, "not_before", json_integer(r.not_before));
		json_object_set_new(pol, "not_after", json_integer(r.not_after));
	}
	if (*out) {
		json_object_set_new(json_object_get(*out, "policy"), "digest", json_string(r.digest));
		json_object_set_new(*out, "level", json_integer(level));
		json_object_set_new(*out, "gate", json_string(gate));
	}
	if (*out) {
		json_t *ne = json_array();

		if (r.p->has_limits)
			json_array_append_new(ne, json_pack("{s:s, s:s}", "class", "limits", "reason",
							     "an attached cgroup's limits belong to its owner"));
		if (r.p->has_env)
			json_array_append_new(ne, json_pack("{s:s, s:s}", "class", "environment", "reason",
							     "the processes are running already"));
		json_array_append_new(ne, json_pack("{s:s, s:s}", "class", "syscalls", "reason",
						     "the launcher's seccomp filter applies to launched runs only"));
		json_object_set_new(*out, "not_enforced", ne);
	}
	err = 0;
	goto out;
undo:
	if (registered) {
		custode_engine_unregister(e, cgid);
		gates_sync(e, NULL);
	}
	if (rules_added) {
		custode_engine_delete_rules(e, st->ruleset, &fs);
		custode_engine_delete_net(e, &net);
	}
	if (state_written)
		attached_remove(a->run_id);
out:
	custode_fs_ruleset_free(&fs);
	custode_net_ruleset_free(&net);
	custode_policy_free(r.p);
	free(others);
	free(a);
	free(st);
	return err;
}

/* Unregister an attached run and delete everything it had; counts out. */
static int attached_drop(struct custode_engine *e, __u64 cgid, const struct custode_run *run,
			 struct custode_counters *final)
{
	int err;

	err = custode_engine_unregister_final(e, cgid, final);
	gates_sync(e, NULL);
	custode_engine_delete_ruleset(e, run->ruleset);
	custode_engine_delete_net_ruleset(e, run->ruleset);
	custode_engine_delete_pins(e, cgid);
	attached_remove(run->run_id);
	return err;
}

int custode_detach(struct custode_engine *e, __u64 run_id, const char *cgroup, json_t **out,
		   struct custode_refusal *why)
{
	struct custode_counters c;
	struct custode_run run;
	char canon[PATH_MAX], hex[17];
	__u64 cgid = 0;
	size_t n;
	__u64 *keys;
	json_t *o;
	int err;

	if (cgroup) {
		if (!realpath(cgroup, canon) || custode_cgroup_id(canon, &cgid) < 0)
			return custode_refuse(why, ENOENT, CUSTODE_REASON_RUN_NOT_FOUND, "cgroup %s: %s", cgroup,
					      strerror(errno ? errno : ENOENT));
		if (custode_engine_get_run(e, cgid, &run) < 0)
			return custode_refuse(why, ENOENT, CUSTODE_REASON_RUN_NOT_FOUND, "%s is not a run", canon);
	} else {
		keys = runs_keys(e, &n);
		for (size_t i = 0; keys && i < n && !cgid; i++)
			if (custode_engine_get_run(e, keys[i], &run) == 0 && run.run_id == run_id)
				cgid = keys[i];
		free(keys);
		custode_run_id_format(run_id, hex);
		if (!cgid)
			return custode_refuse(why, ENOENT, CUSTODE_REASON_RUN_NOT_FOUND, "no run %s is registered", hex);
	}
	custode_run_id_format(run.run_id, hex);
	if (!(run.flags & CUSTODE_RUN_ATTACHED))
		return custode_refuse(why, EINVAL, CUSTODE_REASON_RUN_NOT_FOUND,
				      "run %s was started by `custode run`: it ends with its command (or `custode gc`)", hex);
	o = run_json(e, cgid, &run, NULL, false);
	err = attached_drop(e, cgid, &run, &c);
	if (o) {
		json_object_set_new(o, "denials", counters_json(&c));
		json_object_set_new(o, "state", json_string("detached"));
	}
	if (err) {
		json_decref(o);
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "unregister %s: %s", hex, strerror(-err));
	}
	*out = o;
	return 0;
}

/* ---- adoption and reaping ---- */

static void report(custode_attach_report_fn fn, void *ctx, const char *action, const char *detail, const json_t *run)
{
	if (fn)
		fn(ctx, action, detail, run);
}

/*
 * One pass over the registry: reap runs whose cgroup is gone (attached:
 * always; launched: when the launcher is gone too), and with adopt, report
 * and verify the others. Returns runs reaped (adopt: runs adopted).
 */
static int registry_pass(struct custode_engine *e, const struct custode_policy_source *src, bool adopt,
			 custode_attach_report_fn fn, void *ctx)
{
	struct custode_runstate *st = malloc(sizeof(*st));
	struct custode_attached *a = malloc(sizeof(*a));
	char path[PATH_MAX], hex[17];
	size_t n;
	__u64 *keys = runs_keys(e, &n);
	int reaped = 0, adopted = 0;
	bool changed = false;

	if (!st || !a || !keys)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct custode_run run;
		__u64 cgid = keys[i];
		bool gone;
		json_t *o;

		if (custode_engine_get_run(e, cgid, &run) < 0)
			continue;
		custode_run_id_format(run.run_id, hex);
		if (run.flags & CUSTODE_RUN_ATTACHED) {
			bool have_a = custode_attached_read(run.run_id, a) == 0 && a->cgroup_id == cgid;

			if (have_a)
				snprintf(path, sizeof(path), "%s", a->cgroup);
			else if (custode_cgroup_path_by_id(e->cg_mount, cgid, path, sizeof(path)) < 0)
				path[0] = 0;
			gone = !cgroup_is(path, cgid);
			if (gone) {
				o = run_json(e, cgid, &run, NULL, false);
				attached_drop(e, cgid, &run, NULL);
				changed = true;
				reaped++;
				report(fn, ctx, "reaped", "its cgroup is gone", o);
				json_decref(o);
				continue;
			}
			if (!adopt)
				continue;
			adopted++;
			o = run_json(e, cgid, &run, src, have_a);
			if (!have_a)
				report(fn, ctx, "adopted", "its state file is missing: policy unknown (still confined; "
							   "`custode detach` removes it)", o);
			else if (json_is_false(json_object_get(json_object_get(o, "policy"), "verified")))
				report(fn, ctx, "unverified",
				       json_string_value(json_object_get(json_object_get(o, "policy"), "unverified")), o);
			else
				report(fn, ctx, "adopted", NULL, o);
			json_decref(o);
			continue;
		}
		/* launched by `custode run` */
		if (custode_runstate_read(run.run_id, st) == 0 && st->cgroup_id == cgid)
			snprintf(path, sizeof(path), "%s", st->cgroup);
		else
			snprintf(path, sizeof(path), "%s/run-%s", e->cg_root, hex);
		gone = !cgroup_is(path, cgid);
		if (gone && !strcmp(launcher_state(run.run_id), "orphaned")) {
			o = run_json(e, cgid, &run, NULL, false);
			custode_engine_unregister(e, cgid);
			custode_engine_delete_ruleset(e, run.ruleset);
			custode_engine_delete_net_ruleset(e, run.ruleset);
			custode_engine_delete_pins(e, cgid);
			custode_runstate_remove(run.run_id);
			custode_dns_names_remove(run.run_id);
			reaped++;
			report(fn, ctx, "reaped", "its cgroup is gone and its launcher too", o);
			json_decref(o);
			continue;
		}
		if (adopt) {
			adopted++;
			o = run_json(e, cgid, &run, NULL, false);
			report(fn, ctx, "adopted", NULL, o);
			json_decref(o);
		}
	}
	/* attachments that never completed (or half-detached): state without registration */
	if (adopt) {
		struct custode_attached *list = calloc(MAX_ATTACHED, sizeof(*list));
		int m = list ? custode_attached_list(list, MAX_ATTACHED) : 0;

		for (int k = 0; k < m; k++) {
			struct custode_run run;

			if (custode_engine_get_run(e, list[k].cgroup_id, &run) == 0 && run.run_id == list[k].run_id)
				continue;
			if (custode_runstate_read(list[k].run_id, st) == 0) {
				custode_engine_delete_ruleset(e, st->ruleset);
				custode_engine_delete_net_ruleset(e, st->ruleset);
			}
			attached_remove(list[k].run_id);
			custode_run_id_format(list[k].run_id, hex);
			{
				json_t *o = json_pack("{s:s, s:s, s:s}", "run_id", hex, "kind", "attached", "cgroup",
						      list[k].cgroup);
				report(fn, ctx, "cleaned", "an attachment that never completed", o);
				json_decref(o);
			}
		}
		free(list);
	}
	if (adopt || changed)
		gates_sync(e, NULL);
out:
	free(keys);
	free(st);
	free(a);
	return adopt ? adopted : reaped;
}

int custode_attach_adopt(struct custode_engine *e, const struct custode_policy_source *src,
			 custode_attach_report_fn fn, void *ctx)
{
	return registry_pass(e, src, true, fn, ctx);
}

int custode_attach_reap_vanished(struct custode_engine *e, custode_attach_report_fn fn, void *ctx)
{
	return registry_pass(e, NULL, false, fn, ctx);
}
