// SPDX-License-Identifier: Apache-2.0
/*
 * The registry of every run, launched and attached (attach.h, registry.h):
 * attached runs' state files, the gates they need, the `runs` listing,
 * policy verification, adoption and reaping.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "attach/attach.h"
#include "attach/registry.h"
#include "bundle/source.h"
#include "util/time.h"
#include "cgroup/cgroup.h"
#include "dns/names.h"
#include "engine/gates.h"
#include "state/runstate.h"
#include "util/fsutil.h"

#define MAX_ATTACHED CUSTODE_MAX_RUNS

static bool cgroup_is(const char *path, __u64 id)
{
	__u64 got;

	return path[0] && custode_cgroup_id(path, &got) == 0 && got == id;
}

/* ---- state files ---- */

int custode_attached_write(const struct custode_attached *a)
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
	custode_state_path(a->run_id, CUSTODE_STATE_ATTACH, path, sizeof(path));
	err = custode_write_file_volatile(path, text, strlen(text), 0600);
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

	custode_state_path(run_id, CUSTODE_STATE_ATTACH, path, sizeof(path));
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
	DIR *d = custode_state_list_open();
	int n = 0;
	__u64 id;

	if (!d)
		return 0;
	while (n < max && custode_state_list_next(d, CUSTODE_STATE_ATTACH, &id))
		if (custode_attached_read(id, &out[n]) == 0)
			n++;
	closedir(d);
	return n;
}

void custode_attached_remove(__u64 run_id)
{
	char path[PATH_MAX];

	custode_state_path(run_id, CUSTODE_STATE_ATTACH, path, sizeof(path));
	unlink(path);
	custode_runstate_remove(run_id);
	custode_dns_names_remove(run_id);
}

/* ---- the gates ---- */

__u64 *custode_attach_run_keys(struct custode_engine *e, size_t *n)
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

/* Rewrite the gates from the registered attached runs (two phases: engine/gates.h). */
int custode_attach_gates_sync(struct custode_engine *e, struct custode_refusal *why)
{
	size_t cap = CUSTODE_MAX_RUNS + CUSTODE_MAX_GATES * CUSTODE_GATE_LEVELS;
	struct custode_gate_want *want;
	size_t n_keys, n = 0, unresolved = 0;
	__u64 *keys;
	int err;

	keys = custode_attach_run_keys(e, &n_keys);
	want = calloc(cap, sizeof(*want));
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
	err = custode_gates_apply(want, n, cap, unresolved > 0, why);
out:
	free(keys);
	free(want);
	return err;
}

/* ---- policies ---- */

int custode_attach_verify(const struct custode_attached *a, __u64 running_version,
			  const struct custode_policy_source *src, struct custode_refusal *why)
{
	struct custode_refusal w = {0};

	if (!strcmp(a->policy_source, "profile")) {
		struct custode_resolved_policy r = {0};

		if (custode_source_profile(a->policy_ref, &r, &w) < 0)
			return custode_refuse(why, ENOENT, CUSTODE_REASON_POLICY_UNVERIFIED, "profile %s: %s: %s",
					      a->policy_ref, custode_reason_name(w.reason), w.detail);
		if (r.p->version != running_version || (a->policy_digest[0] && strcmp(r.digest, a->policy_digest))) {
			int err = custode_refuse(why, ESTALE, CUSTODE_REASON_POLICY_UNVERIFIED,
						 "built-in profile %s is now v%llu (%s), the run has v%llu (%s): this "
						 "custode's profile differs from the one attached",
						 a->policy_ref, (unsigned long long)r.p->version, r.digest,
						 (unsigned long long)running_version,
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
		    custode_bundle_floor_check(custode_source_floor_dir(src), &info, &w) == 0) {
			custode_policy_free(p);
			return 0;
		}
		custode_policy_free(p);
		p = NULL;
		if (src->bundles_dir && custode_source_find_named(src->bundles_dir, a->policy_name, running_version, src, &p, &info, path,
						   sizeof(path), &w) == 0) {
			custode_policy_free(p);
			return 0;
		}
		return custode_refuse(why, ESTALE, CUSTODE_REASON_POLICY_UNVERIFIED,
				      "%s v%llu: no bundle verifies at that version any more (%s: %s)", a->policy_name,
				      (unsigned long long)running_version, custode_reason_name(w.reason) ? custode_reason_name(w.reason) : "",
				      w.detail);
	}
	return custode_refuse(why, EINVAL, CUSTODE_REASON_POLICY_UNVERIFIED, "unknown policy source '%s'",
			      a->policy_source);
}

/* ---- the runs, as JSON ---- */

json_t *custode_attach_counters_json(const struct custode_counters *c)
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
	char buf[CUSTODE_TIME_LEN];

	return t > 0 ? json_string(custode_time_show_sec(t, buf, sizeof(buf))) : json_null();
}

/* Is the launcher of a run alive? Its lock is held. */
static const char *launcher_state(__u64 run_id)
{
	return custode_runlock_held(run_id) ? "live" : "orphaned";
}

json_t *custode_attach_run_json(struct custode_engine *e, __u64 cgid, const struct custode_run *run,
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
		      classes_json(run->flags), "denials", custode_attach_counters_json(&c));
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
	__u64 *keys = custode_attach_run_keys(e, &n);

	for (size_t i = 0; keys && i < n; i++) {
		struct custode_run run;
		json_t *o;

		if (custode_engine_get_run(e, keys[i], &run) < 0)
			continue;
		o = custode_attach_run_json(e, keys[i], &run, src, verify);
		if (o)
			json_array_append_new(arr, o);
	}
	free(keys);
	return arr;
}

/* Unregister an attached run and delete everything it had; counts out. */
int custode_attached_drop(struct custode_engine *e, __u64 cgid, const struct custode_run *run,
			 struct custode_counters *final)
{
	int err;

	err = custode_engine_unregister_final(e, cgid, final);
	custode_attach_gates_sync(e, NULL);
	custode_engine_delete_ruleset(e, run->ruleset);
	custode_engine_delete_net_ruleset(e, run->ruleset);
	custode_engine_delete_pins(e, cgid);
	custode_attached_remove(run->run_id);
	return err;
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
	__u64 *keys = custode_attach_run_keys(e, &n);
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
				o = custode_attach_run_json(e, cgid, &run, NULL, false);
				custode_attached_drop(e, cgid, &run, NULL);
				changed = true;
				reaped++;
				report(fn, ctx, "reaped", "its cgroup is gone", o);
				json_decref(o);
				continue;
			}
			if (!adopt)
				continue;
			adopted++;
			o = custode_attach_run_json(e, cgid, &run, src, have_a);
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
			o = custode_attach_run_json(e, cgid, &run, NULL, false);
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
			o = custode_attach_run_json(e, cgid, &run, NULL, false);
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
			custode_attached_remove(list[k].run_id);
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
		custode_attach_gates_sync(e, NULL);
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
