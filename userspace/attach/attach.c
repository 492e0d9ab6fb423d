// SPDX-License-Identifier: Apache-2.0
/* Attached runs: attach and detach (attach.h, docs/operations.md). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>

#include "attach/attach.h"
#include "attach/registry.h"
#include "bundle/source.h"
#include "cgroup/cgroup.h"
#include "engine/gates.h"
#include "engine/hostaddrs.h"
#include "run/program.h"
#include "state/runstate.h"

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

/* ---- attach and detach ---- */

/* The daemon's own cgroup ("" if unknown). */
static void self_cgroup(const char *mount, char *out, size_t len)
{
	if (custode_cgroup_of_pid(mount, 0, out, len) < 0)
		out[0] = 0;
}

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
	custode_state_path(id, CUSTODE_STATE_RUN, path, sizeof(path));
	if (access(path, F_OK) == 0)
		return custode_refuse(why, EEXIST, CUSTODE_REASON_ATTACH_EXISTS, "run %s exists", hex);
	{
		size_t n;
		__u64 *keys = custode_attach_run_keys(e, &n);

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

/* The cgroup to attach: canonical, a cgroup v2 directory custode may attach, not a run yet. */
static int attach_target(struct custode_engine *e, const char *cgroup, char canon[PATH_MAX], char gate[PATH_MAX],
			 struct custode_attached *a, struct custode_refusal *why)
{
	char self[PATH_MAX], probe[PATH_MAX + 32];
	struct custode_run run;
	int err;

	if (!cgroup || !realpath(cgroup, canon))
		return custode_refuse(why, errno ? errno : EINVAL, CUSTODE_REASON_ATTACH_CGROUP, "cgroup %s: %s",
				      cgroup ? cgroup : "(none)", strerror(errno ? errno : EINVAL));
	snprintf(probe, sizeof(probe), "%s/cgroup.procs", canon);
	if (access(probe, F_OK) < 0)
		return custode_refuse(why, ENOTDIR, CUSTODE_REASON_ATTACH_CGROUP, "%s is not a cgroup v2 directory", canon);
	self_cgroup(e->cg_mount, self, sizeof(self));
	if ((err = custode_attach_check_path(e->cg_mount, canon, e->cg_root, (int)e->meta.root_level, self, &a->level,
					     gate, PATH_MAX, why)))
		return err;
	if ((err = custode_cgroup_id(canon, &a->cgroup_id)) || (err = custode_cgroup_id(gate, &a->gate_id)))
		return custode_refuse(why, -err, CUSTODE_REASON_ATTACH_CGROUP, "cgroup id of %s: %s", canon,
				      strerror(-err));
	if (custode_engine_get_run(e, a->cgroup_id, &run) == 0)
		return custode_refuse(why, EEXIST, CUSTODE_REASON_ATTACH_EXISTS, "%s is already a run", canon);
	snprintf(a->cgroup, sizeof(a->cgroup), "%s", canon);
	return 0;
}

/* Attached cgroups never nest, and lie below at most CUSTODE_MAX_GATES gates. */
static int check_others(const struct custode_attached *a, const char *gate, struct custode_refusal *why)
{
	struct custode_attached *others = calloc(MAX_ATTACHED, sizeof(*others));
	__u64 gates[CUSTODE_MAX_GATES + 1];
	int n_gates = 0, n_others, err = 0;
	const char *canon = a->cgroup;

	if (!others)
		return custode_refuse(why, ENOMEM, CUSTODE_REASON_RUN_SETUP_FAILED, "out of memory");
	n_others = custode_attached_list(others, MAX_ATTACHED);
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
		if (!ours)
			err = custode_refuse(why, ENOSPC, CUSTODE_REASON_ENGINE_MAP_FULL,
					     "attached runs already lie below %d cgroups at custode's root level (%s "
					     "would be one more); docs/operations.md",
					     CUSTODE_MAX_GATES, gate);
	}
out:
	free(others);
	return err;
}

/*
 * The policy of the request, if an attached run can have it. A bundle (file
 * or named) is only compared with the version floor here (*info out):
 * custode_attach raises the floor once the attach has succeeded, so an attach
 * refused after this (required limits, the engine, the state, the rules)
 * leaves it where it was, as `custode run --bundle` does (docs/bundles.md).
 */
static int attach_policy(const struct custode_attach_req *req, const struct custode_policy_source *src,
			 struct custode_resolved_policy *r, struct custode_bundle_info *info,
			 struct custode_refusal *why)
{
	int err;

	if (req->profile) {
		err = custode_source_profile(req->profile, r, why);
	} else {
		struct custode_policy_source checked = {0};

		if (src)
			checked = *src;
		checked.check_floor_only = true;
		err = custode_source_bundle(req->bundle, req->policy, src ? &checked : NULL, r, info, why);
	}
	if (err)
		return err;
	if (r->p->has_limits && r->p->limits.required)
		return custode_refuse(why, ENOTSUP, CUSTODE_REASON_POLICY_UNSUPPORTED,
				      "%s requires limits; an attached cgroup's limits belong to its owner (systemd, the "
				      "container runtime): attach a policy without \"required\" limits",
				      r->p->name);
	return 0;
}

/* The engine classes the policy needs (loaded if missing), and the gate map. */
static int attach_engine(struct custode_engine *e, const struct custode_policy *p, struct custode_refusal *why)
{
	unsigned need = classes_needed(p);
	int err, fd;

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
			return err;
		}
	}
	if ((fd = custode_gates_open(why)) < 0)
		return fd;
	close(fd);
	return 0;
}

/* The run's id, bindings and both state records (not written yet). */
static int attach_state(struct custode_engine *e, const struct custode_attach_req *req,
			const struct custode_resolved_policy *r, struct custode_attached *a, struct custode_runstate *st,
			struct custode_refusal *why)
{
	char ws[PATH_MAX];
	int err;

	if ((err = new_run_id(e, req, &a->run_id, why)))
		return err;
	if (req->workspace) {
		if (!realpath(req->workspace, ws))
			return custode_refuse(why, errno, CUSTODE_REASON_RUN_WORKSPACE, "workspace %s: %s", req->workspace,
					      strerror(errno));
	} else {
		/* nothing bound: below a root-only directory, never created */
		custode_state_path(a->run_id, CUSTODE_STATE_UNBOUND_WORKSPACE, ws, sizeof(ws));
	}
	a->attached_at = (int64_t)time(NULL);
	snprintf(a->policy_name, sizeof(a->policy_name), "%s", r->p->name);
	a->policy_version = r->p->version;
	snprintf(a->policy_source, sizeof(a->policy_source), "%s", r->source);
	snprintf(a->policy_ref, sizeof(a->policy_ref), "%s", r->ref);
	snprintf(a->policy_digest, sizeof(a->policy_digest), "%s", r->digest);
	snprintf(a->workspace, sizeof(a->workspace), "%s", ws);
	st->run_id = a->run_id;
	st->cgroup_id = a->cgroup_id;
	st->launcher_pid = getpid(); /* the daemon: no launcher; no <id>.lock, so `custode gc` leaves it alone */
	st->started = a->attached_at;
	snprintf(st->cgroup, sizeof(st->cgroup), "%s", a->cgroup);
	custode_state_path(a->run_id, CUSTODE_STATE_UNBOUND_TMP, st->tmp, sizeof(st->tmp));
	snprintf(st->workspace, sizeof(st->workspace), "%s", ws);
	snprintf(st->policy, sizeof(st->policy), "%s", r->p->name);
	snprintf(st->source, sizeof(st->source), "%s", r->source);
	return 0;
}

/* What `custode attach` prints: the run, its policy's provenance, its place, and what does not apply. */
static json_t *attach_result(struct custode_engine *e, const struct custode_attached *a, const struct custode_run *run,
			     const struct custode_resolved_policy *r, const char *gate,
			     const struct custode_policy_source *src)
{
	json_t *o = custode_attach_run_json(e, a->cgroup_id, run, src, false), *ne;

	if (!o)
		return NULL;
	if (r->not_after) {
		json_t *pol = json_object_get(o, "policy");

		custode_bundle_window_json(pol, r->not_before, r->not_after);
	}
	json_object_set_new(json_object_get(o, "policy"), "digest", json_string(r->digest));
	json_object_set_new(o, "level", json_integer(a->level));
	json_object_set_new(o, "gate", json_string(gate));
	ne = json_array();
	if (r->p->has_limits)
		json_array_append_new(ne, json_pack("{s:s, s:s}", "class", "limits", "reason",
						     "an attached cgroup's limits belong to its owner"));
	if (r->p->has_env)
		json_array_append_new(ne, json_pack("{s:s, s:s}", "class", "environment", "reason",
						     "the processes are running already"));
	json_array_append_new(ne, json_pack("{s:s, s:s}", "class", "syscalls", "reason",
					     "the launcher's seccomp filter applies to launched runs only"));
	json_object_set_new(o, "not_enforced", ne);
	return o;
}

int custode_attach(struct custode_engine *e, const struct custode_attach_req *req,
		   const struct custode_policy_source *src, json_t **out, struct custode_refusal *why)
{
	struct custode_attached *a = calloc(1, sizeof(*a));
	struct custode_runstate *st = calloc(1, sizeof(*st));
	struct custode_program pr = {0};
	struct custode_resolved_policy r = {0};
	struct custode_bundle_info info = {0};
	struct custode_run run = {0};
	char canon[PATH_MAX], gate[PATH_MAX];
	bool state_written = false;
	int err;

	if (!a || !st) {
		err = custode_refuse(why, ENOMEM, CUSTODE_REASON_RUN_SETUP_FAILED, "out of memory");
		goto out;
	}
	if (!!req->profile + !!req->policy + !!req->bundle != 1) {
		err = custode_refuse(why, EINVAL, CUSTODE_REASON_RUN_USAGE,
				     "exactly one of a profile, a policy name or a bundle is needed");
		goto out;
	}
	if ((err = attach_target(e, req->cgroup, canon, gate, a, why)) || (err = check_others(a, gate, why)) ||
	    (err = attach_policy(req, src, &r, &info, why)) || (err = attach_engine(e, r.p, why)))
		goto out;
	/* the run and its state, before anything is registered (adoption cleans up a half-made one) */
	if ((err = attach_state(e, req, &r, a, st, why)))
		goto out;
	pr.policy = r.p;
	pr.bindings.workspace = st->workspace;
	pr.bindings.tmp = st->tmp;
	pr.run_id = a->run_id;
	if ((err = custode_program_ruleset(e, &pr, why)))
		goto out;
	st->ruleset = pr.ruleset;
	state_written = true;
	if ((err = custode_attached_write(a)) || (err = custode_runstate_write(st))) {
		err = custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "state file: %s", strerror(-err));
		goto undo;
	}
	/* the addresses of the cgroup's network namespace are local services to it (net.host_address) */
	if (r.p->has_network && (err = custode_hostaddrs_watch_pid(custode_hostaddrs_cgroup_pid(canon), why)))
		goto undo;
	if ((err = custode_program_rules(e, &pr, why)) ||
	    (err = custode_program_register(e, &pr, a->cgroup_id, CUSTODE_RUN_ATTACHED, &run, why)))
		goto undo;
	/* from this update on, the engine finds the cgroup's tasks */
	if ((err = custode_attach_gates_sync(e, why)))
		goto undo;
	/*
	 * The version floor, last: nothing else can refuse the attach now. If it
	 * can't be raised (bundle.rollback: another acceptor raised it since the
	 * check; bundle.state), the attach is undone: no run has a policy the
	 * floor does not cover.
	 */
	if (!req->profile && (err = custode_source_accept(src, &info, why)))
		goto undo;
	*out = attach_result(e, a, &run, &r, gate, src);
	err = 0;
	goto out;
undo:
	{
		bool was_registered = pr.registered;

		custode_program_undo(e, &pr);
		if (was_registered)
			custode_attach_gates_sync(e, NULL);
	}
	if (state_written)
		custode_attached_remove(a->run_id);
out:
	custode_program_free(&pr);
	custode_policy_free(r.p);
	free(a);
	free(st);
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
		keys = custode_attach_run_keys(e, &n);
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
	o = custode_attach_run_json(e, cgid, &run, NULL, false);
	err = custode_attached_drop(e, cgid, &run, &c);
	if (o) {
		json_object_set_new(o, "denials", custode_attach_counters_json(&c));
		json_object_set_new(o, "state", json_string("detached"));
	}
	if (err) {
		json_decref(o);
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "unregister %s: %s", hex, strerror(-err));
	}
	*out = o;
	return 0;
}

