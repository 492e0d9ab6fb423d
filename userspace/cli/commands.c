// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <unistd.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "cli/commands.h"
#include "cli/output.h"
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
		   "Exit: 0 done (load: some class loaded; unload: also when none was loaded);\n"
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
 * Entries of every pinned hash and trie map ({"custode_runs": 0, ...}), so an
 * operator or a test can see that runs leave nothing behind.
 */
static json_t *map_entries(void)
{
	json_t *o = json_object();

	custode_map_entries(1LL << 24, add_map_entries, o);
	return o;
}

int custode_cmd_engine(int argc, char **argv)
{
	static const struct option opts[] = {{"json", no_argument, NULL, 'j'}, {"force", no_argument, NULL, 'f'},
					     {"help", no_argument, NULL, 'h'}, {0}};
	struct custode_refusal why = {0};
	struct custode_engine e;
	bool json = false, force = false;
	const char *verb;
	int c, err;

	custode_getopt_start();
	while ((c = getopt_long(argc, argv, "jfh", opts, NULL)) != -1) {
		if (c == 'j')
			json = true;
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
		return custode_usage_error("engine", EXIT_USAGE, "needs an action: status, load or unload");
	verb = argv[optind];
	if (strcmp(verb, "status") && strcmp(verb, "load") && strcmp(verb, "unload"))
		return custode_usage_error("engine", EXIT_USAGE, "unknown action '%s'", verb);
	if (optind + 1 < argc)
		return custode_usage_extra_arg("engine", EXIT_USAGE, argv[optind + 1]);
	if ((err = custode_host_prepare(&e, &why)))
		goto fail;
	if (!strcmp(verb, "load")) {
		if ((err = engine_load(&e, &why)))
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
			json_object_set_new(o, "run_cache",
					    json_string(rc > 0 ? "cgroup-storage" : rc == 0 ? "off" : "absent"));
		}
		json_object_set_new(o, "entries", map_entries());
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
