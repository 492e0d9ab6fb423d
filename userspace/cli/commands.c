// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "cli/commands.h"
#include "cli/output.h"
#include "control/control.h"
#include "engine/admit.h"
#include "util/exit.h"
#include "engine/engine.h"
#include "engine/maps.h"
#include "engine/probe.h"
#include "policy/policy.h"
#include "policy/profiles.h"
#include "util/reasons.h"
#include "util/time.h"
#include "util/usage.h"

static void engine_usage(FILE *f)
{
	fprintf(f, "usage: custode engine status [--json]\n"
		   "       custode engine load\n"
		   "       custode engine unload [--force]\n"
		   "       custode engine admit [--exe PATH] [--json]\n"
		   "\n"
		   "The pinned engine lives under " CUSTODE_PIN_ROOT " and outlives every custode\n"
		   "process. `custode run` loads it on first use; `load` does so ahead of time,\n"
		   "with every class this host supports (file where BPF-LSM programs load, egress\n"
		   "where cgroup BPF programs do), and names each class not loaded and why\n"
		   "(kernel.lsm_unavailable: ...). The process class is left to the first run:\n"
		   "it reserves the engine to the binary that loads it (docs/process.md).\n"
		   "A load that fails leaves nothing under " CUSTODE_PIN_ROOT ". `unload` unpins\n"
		   "the engine and is refused while runs are registered, unless --force (which\n"
		   "leaves those runs unconfined).\n"
		   "\n"
		   "`admit` lets a new custode binary open an engine whose process class an\n"
		   "older one loaded (an upgrade without draining the runs:\n"
		   "docs/process.md). Run by the new binary, it asks the running daemon to admit\n"
		   "the binary that asks; with --exe PATH, run by a binary that may open the\n"
		   "engine, it admits PATH itself. Admitted: a root-owned file writable by no one\n"
		   "else that carries the engine's ABI (engine.admit_refused, engine.abi_differs).\n"
		   "It then checks that the binary opens the engine.\n"
		   "\n"
		   "Exit: 0 done (load: some class loaded; unload: also when none was loaded;\n"
		   "admit: also when the binary could open the engine already, or none is loaded);\n"
		   "125 refused or failed (not root; status: no engine loaded, engine.missing;\n"
		   "load: no class loads here: the reason code is on stderr); 2 usage.\n");
}

/* What `engine load` loads where the host allows it (the process class: see engine_usage). */
#define ENGINE_LOAD_CLASSES (CUSTODE_CLASS_FILE | CUSTODE_CLASS_EGRESS)

static const char *class_name(unsigned cls)
{
	return cls == CUSTODE_CLASS_FILE ? "file" : cls == CUSTODE_CLASS_PROCESS ? "process" : "egress";
}

static json_t *class_list(unsigned classes)
{
	json_t *a = json_array();

	for (unsigned cls = CUSTODE_CLASS_FILE; cls <= CUSTODE_CLASS_EGRESS; cls <<= 1)
		if (classes & cls)
			json_array_append_new(a, json_string(class_name(cls)));
	return a;
}

/*
 * `engine load`: every class of ENGINE_LOAD_CLASSES the host loads, each
 * other one named on stderr with the probe's cause; refused (with the first
 * cause) when none loads.
 */
static int engine_load(struct custode_engine *e, struct custode_refusal *why)
{
	struct custode_probe_result pr = {0};
	unsigned want, skipped;
	char *names;
	json_t *list;
	int err;

	custode_probe_lsm(&pr);
	custode_probe_cgroup(&pr);
	want = custode_probe_classes(&pr, ENGINE_LOAD_CLASSES);
	skipped = ENGINE_LOAD_CLASSES & ~want;
	for (unsigned cls = CUSTODE_CLASS_FILE; cls <= CUSTODE_CLASS_EGRESS; cls <<= 1) {
		if (!(skipped & cls))
			continue;
		custode_probe_class_refusal(&pr, cls, why);
		if (!want)
			return -EOPNOTSUPP; /* why: the first class's cause */
		fprintf(stderr, "custode: engine: not loaded: %s class: %s: %s\n", class_name(cls),
			custode_reason_name(why->reason), why->detail);
	}
	if ((err = custode_engine_open(e, want, CUSTODE_ENGINE_LOAD, why)))
		return err;
	list = class_list(e->meta.classes);
	names = json_dumps(list, JSON_COMPACT);
	printf("custode: engine loaded at %s: classes %s\n", CUSTODE_PIN_ROOT, names ? names : "?");
	free(names);
	json_decref(list);
	custode_engine_close(e);
	return 0;
}

static int add_map_entries(const struct custode_map_count *m, void *arg)
{
	if (m->entries >= 0)
		json_object_set_new(arg, m->name, json_integer(m->entries));
	return 0;
}

/*
 * The file class's per-CPU path buffers: {"slots": N, "claims": [per slot],
 * "held": [per slot], "steals": N, "lost": N}, or null without a file class
 * of this build. A claim of a slot past the first means a hook found the
 * one before held by a hook preempted on its CPU; steals and lost stay 0
 * unless every slot of a CPU was held at once.
 */
static json_t *scratch_json(void)
{
	struct custode_scratch_head h[CUSTODE_SCRATCH_SLOTS];
	json_t *claims, *held;
	json_int_t steals = 0, lost = 0;

	if (custode_engine_scratch(h) < 0)
		return json_null();
	claims = json_array();
	held = json_array();
	for (int k = 0; k < CUSTODE_SCRATCH_SLOTS; k++) {
		json_array_append_new(claims, json_integer((json_int_t)h[k].claims));
		json_array_append_new(held, json_integer((json_int_t)h[k].owner));
		steals += (json_int_t)h[k].steals;
		lost += (json_int_t)h[k].lost;
	}
	return json_pack("{s:i, s:o, s:o, s:I, s:I}", "slots", CUSTODE_SCRATCH_SLOTS, "claims", claims, "held", held,
			 "steals", steals, "lost", lost);
}

/* The decision table (bpf/file.bpf.c), shared by the runs: null without a file class. */
static json_t *decisions_json(struct custode_engine *e)
{
	static struct custode_decision_use u[CUSTODE_MAX_RUNS];
	struct custode_decision_totals t;
	int n = custode_engine_decisions(e, u, CUSTODE_MAX_RUNS, &t);
	json_t *runs;

	if (n < 0)
		return json_null();
	runs = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(runs, json_pack("{s:I, s:I}", "cgroup_id", (json_int_t)u[i].cgroup_id,
						      "slots_used", (json_int_t)u[i].used));
	return json_pack("{s:i, s:I, s:I, s:I, s:o}", "slots", CUSTODE_DECISION_SLOTS, "bytes",
			 (json_int_t)(CUSTODE_DECISION_SLOTS * sizeof(struct custode_decision)), "slots_used",
			 (json_int_t)t.used, "slots_of_ended_runs", (json_int_t)t.ended, "runs", runs);
}

/*
 * Entries of every pinned hash and trie map ({"custode_runs": 0, ...}), so an
 * operator or a test can see that runs leave nothing behind.
 */
static json_t *map_entries(void)
{
	json_t *o = json_object();

	custode_map_entries(1LL << 24, add_map_entries, o);
	return o;
}

/* Print what was admitted: a line, or the document {"admitted": {...}, "path", "opens"}. */
static void admit_report(json_t *admitted, const char *path, bool json)
{
	bool already = json_is_true(json_object_get(admitted, "already"));
	__u64 dev = (__u64)json_integer_value(json_object_get(admitted, "dev"));

	if (json) {
		json_t *o = json_pack("{s:O, s:s, s:b}", "admitted", admitted, "path", path, "opens", 1);

		custode_print_document(o, stdout);
		json_decref(o);
		return;
	}
	if (json_is_false(json_object_get(admitted, "reserved"))) {
		printf("custode: engine: %s opens the engine: no process class is loaded, so it is reserved to no "
		       "binary\n",
		       path);
		return;
	}
	printf("custode: engine: %s %s (dev %llu:%llu, ino %lld): it opens the engine\n",
	       already ? "already admitted:" : "admitted", path, (unsigned long long)(dev >> 20),
	       (unsigned long long)(dev & 0xfffff), (long long)json_integer_value(json_object_get(admitted, "ino")));
}

/*
 * `engine admit [--exe PATH]`: see engine_usage. Without --exe: this binary,
 * by the daemon (when this binary is locked out) or by itself (when it may
 * already open the engine: nothing to do). Either way the end is checked by
 * opening the engine again.
 */
static int engine_admit(struct custode_engine *e, const char *exe, bool json, struct custode_refusal *why)
{
	char self[PATH_MAX];
	json_t *admitted = NULL, *resp = NULL;
	ssize_t n;
	int err, fd;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = 0;
	err = custode_engine_open(e, 0, 0, why);
	if (err && why->reason == CUSTODE_REASON_ENGINE_MISSING) {
		printf(json ? "{\"admitted\":null,\"loaded\":false,\"opens\":true}\n"
			    : "custode: engine: no engine is pinned: any custode binary may load one\n");
		return 0;
	}
	if (!err) {
		if (!exe) {
			fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
			exe = self;
		} else {
			fd = open(exe, O_RDONLY | O_CLOEXEC);
		}
		if (fd < 0) {
			err = custode_refuse(why, errno, CUSTODE_REASON_ENGINE_ADMIT_REFUSED, "%s: %s", exe, strerror(errno));
		} else {
			err = custode_engine_admit_fd(fd, 0, e->meta.abi_version, (int)getpid(), &admitted, why);
			close(fd);
		}
		custode_engine_close(e);
		if (err < 0)
			return err;
		admit_report(admitted, exe, json);
		json_decref(admitted);
		return 0;
	}
	if (why->reason != CUSTODE_REASON_ENGINE_PROTECTED)
		return err;
	if (exe)
		return custode_refuse(why, EPERM, CUSTODE_REASON_ENGINE_PROTECTED,
				      "--exe: this binary may not open the engine itself, so it cannot admit "
				      "another; run it without --exe to ask the daemon, or run `engine admit --exe` "
				      "with the binary that loaded the engine");
	{
		json_t *req = json_pack("{s:s}", "cmd", "admit");

		err = custode_control_call(req, &resp, 30000, why);
		json_decref(req);
	}
	if (err) {
		if (why->reason == CUSTODE_REASON_DAEMON_NOT_RUNNING)
			return custode_refuse(why, EPERM, CUSTODE_REASON_ENGINE_PROTECTED,
					      "the pinned engine is reserved to another custode binary and no daemon "
					      "runs to admit this one: run `custode engine admit --exe %s` with the "
					      "binary that loaded the engine (a running custode's /proc/PID/exe works), "
					      "or wait until no run is registered and reload the engine",
					      self);
		return err;
	}
	/* the kernel has the last word: this binary opens the engine now */
	if ((err = custode_engine_open(e, 0, 0, why))) {
		json_decref(resp);
		return err;
	}
	custode_engine_close(e);
	admit_report(json_object_get(resp, "admitted"), self, json);
	json_decref(resp);
	return 0;
}

int custode_cmd_engine(int argc, char **argv)
{
	static const struct option opts[] = {{"json", no_argument, NULL, 'j'}, {"force", no_argument, NULL, 'f'},
					     {"exe", required_argument, NULL, 'e'}, {"help", no_argument, NULL, 'h'},
					     {0}};
	struct custode_refusal why = {0};
	struct custode_engine e;
	bool json = false, force = false;
	const char *verb, *exe = NULL;
	int c, err;

	custode_getopt_start();
	while ((c = getopt_long(argc, argv, "jfh", opts, NULL)) != -1) {
		if (c == 'j')
			json = true;
		else if (c == 'e')
			exe = optarg;
		else if (c == 'f')
			force = true;
		else if (c == 'h') {
			engine_usage(stdout);
			return 0;
		} else {
			return custode_usage_bad_option("engine", EXIT_USAGE, argv);
		}
	}
	if (optind == argc)
		return custode_usage_error("engine", EXIT_USAGE, "needs an action: status, load, unload or admit");
	verb = argv[optind];
	if (strcmp(verb, "status") && strcmp(verb, "load") && strcmp(verb, "unload") && strcmp(verb, "admit"))
		return custode_usage_error("engine", EXIT_USAGE, "unknown action '%s'", verb);
	if (exe && strcmp(verb, "admit"))
		return custode_usage_error("engine", EXIT_USAGE, "--exe goes with admit only");
	if (exe && exe[0] != '/')
		return custode_usage_error("engine", EXIT_USAGE, "--exe: not an absolute path: %s", exe);
	if (optind + 1 < argc)
		return custode_usage_extra_arg("engine", EXIT_USAGE, argv[optind + 1]);
	if ((err = custode_host_prepare(&e, &why)))
		goto fail;
	if (!strcmp(verb, "load")) {
		if ((err = engine_load(&e, &why)))
			goto fail;
		return 0;
	}
	if (!strcmp(verb, "admit")) {
		if ((err = engine_admit(&e, exe, json, &why)))
			goto fail;
		return 0;
	}
	err = custode_engine_open(&e, 0, 0, &why);
	if (err && !strcmp(verb, "unload") && why.reason == CUSTODE_REASON_ENGINE_MISSING)
		return 0;
	if (err) {
		if (!strcmp(verb, "status") && json && why.reason == CUSTODE_REASON_ENGINE_MISSING) {
			printf("{\"loaded\":false}\n"); /* a document still, for scripts */
			return EXIT_REFUSED;
		}
		goto fail;
	}
	if (!strcmp(verb, "unload")) {
		err = custode_engine_unload(&e, force, &why);
		if (err)
			goto fail;
		return 0;
	}
	{
		struct custode_stats st = {0};
		int runs = custode_engine_count_runs(&e);
		char when[CUSTODE_TIME_LEN];
		json_t *o;

		custode_engine_get_stats(&e, &st);
		o = json_pack("{s:b, s:s, s:i, s:o, s:I, s:i, s:I, s:I, s:I}", "loaded", 1, "pin_root", CUSTODE_PIN_ROOT,
			      "abi_version", (int)e.meta.abi_version, "classes", class_list(e.meta.classes),
			      "cgroup_root_id", (json_int_t)e.meta.root_cgroup_id, "runs", runs, "events",
			      (json_int_t)st.events, "events_dropped", (json_int_t)st.events_dropped, "loaded_at",
			      (json_int_t)e.meta.loaded_at);
		json_object_set_new(o, "loaded_at_time",
				    json_string(custode_time_show_sec((int64_t)e.meta.loaded_at, when, sizeof(when))));
		json_object_set_new(o, "cgroup_root", json_string(e.cg_root));
		{
			int rc = custode_engine_run_cache();
			/* without cgroup storage (6.1) the LSM classes keep it per task (bpf/lib/run.bpf.h) */
			bool lsm = e.meta.classes & (CUSTODE_CLASS_FILE | CUSTODE_CLASS_PROCESS);
			const char *kind = rc > 0 ? "cgroup-storage" : rc < 0 ? "absent" : lsm ? "task-storage" : "off";

			json_object_set_new(o, "run_cache", json_string(kind));
		}
		{
			long long ids = custode_engine_identity_filter_total();

			json_object_set_new(o, "decisions", decisions_json(&e));
			json_object_set_new(o, "restricting_identities", ids >= 0 ? json_integer(ids) : json_null());
		}
		json_object_set_new(o, "scratch", scratch_json());
		{
			long long nc = custode_engine_newcomers_live();

			json_object_set_new(o, "newcomers", nc >= 0 ? json_integer(nc) : json_null());
		}
		json_object_set_new(o, "entries", map_entries());
		{
			json_t *adm = custode_engine_admitted_json();

			json_object_set_new(o, "admitted", adm ? adm : json_null());
		}
		if (json)
			custode_print_document(o, stdout);
		else
			custode_print_engine_status(o, stdout);
		json_decref(o);
	}
	custode_engine_close(&e);
	return 0;
fail:
	fprintf(stderr, "custode: engine: %s: %s\n", custode_reason_name(why.reason), why.detail);
	return EXIT_REFUSED;
}

#define PROFILES_USAGE "usage: custode profiles [--json]\n       custode profiles show NAME\n"

/* `custode profiles show NAME`: the built-in's policy document, as compiled in (a start for your own). */
static int profiles_show(int argc, char **argv)
{
	const struct custode_builtin_profile *bp;

	if (argc != 3) {
		fprintf(stderr, "custode: profiles show: one NAME is required\n" PROFILES_USAGE);
		return EXIT_USAGE;
	}
	bp = custode_profile_find(argv[2]);
	if (!bp) {
		fprintf(stderr, "custode: profiles show: no built-in profile named '%s' (`custode profiles` lists them)\n",
			argv[2]);
		return EXIT_USAGE;
	}
	return fwrite(bp->text, 1, bp->len, stdout) == bp->len && fflush(stdout) == 0 ? 0 : EXIT_FAILURE;
}

int custode_cmd_profiles(int argc, char **argv)
{
	static const struct option opts[] = {{"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0}};
	bool json = false;
	json_t *rows;
	int c;

	if (argc > 1 && !strcmp(argv[1], "show"))
		return profiles_show(argc, argv);
	custode_getopt_start();
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 'j') {
			json = true;
		} else if (c == 'h') {
			printf(PROFILES_USAGE "\nList the built-in profiles; `show NAME` prints one's policy document\n"
			       "(docs/policy.md), to start a policy of your own from.\n"
			       "\n"
			       "Exit: 0 done; 2 usage.\n");
			return 0;
		} else {
			return custode_usage_bad_option("profiles", EXIT_USAGE, argv);
		}
	}
	if (optind < argc)
		return custode_usage_extra_arg("profiles", EXIT_USAGE, argv[optind]);
	rows = json_array();
	for (const struct custode_builtin_profile *p = custode_builtin_profiles; p->name; p++) {
		struct custode_policy *pol = NULL;
		struct custode_refusal why;
		if (custode_policy_parse(p->text, p->len, &pol, &why)) {
			fprintf(stderr, "custode: profiles: built-in '%s' is invalid: %s\n", p->name, why.detail);
			json_decref(rows);
			return 1;
		}
		json_array_append_new(rows, custode_profile_row(p->name, pol->name, pol->version, pol->n_fs));
		custode_policy_free(pol);
	}
	if (json)
		custode_print_document(rows, stdout);
	else
		custode_print_profiles(rows, stdout);
	json_decref(rows);
	return 0;
}
