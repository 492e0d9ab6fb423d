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
#include "util/exit.h"
#include "engine/engine.h"
#include "engine/maps.h"
#include "policy/policy.h"
#include "policy/profiles.h"
#include "util/reasons.h"

static void engine_usage(FILE *f)
{
	fprintf(f, "usage: custode engine status [--json]\n"
		   "       custode engine load\n"
		   "       custode engine unload [--force]\n"
		   "\n"
		   "The pinned engine lives under " CUSTODE_PIN_ROOT " and outlives every custode\n"
		   "process. `custode run` loads it on first use; `load` does so ahead of time\n"
		   "(every class this host supports); `unload` unpins it and is refused while\n"
		   "runs are registered, unless --force (which leaves those runs unconfined).\n"
		   "\n"
		   "Exit: 0 done; 1 refused or failed (status: no engine loaded); 2 usage;\n"
		   "125 not root.\n");
}

static json_t *class_list(unsigned classes)
{
	json_t *a = json_array();

	if (classes & CUSTODE_CLASS_FILE)
		json_array_append_new(a, json_string("file"));
	if (classes & CUSTODE_CLASS_PROCESS)
		json_array_append_new(a, json_string("process"));
	if (classes & CUSTODE_CLASS_EGRESS)
		json_array_append_new(a, json_string("egress"));
	return a;
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

	optind = 1;
	while ((c = getopt_long(argc, argv, "jfh", opts, NULL)) != -1) {
		if (c == 'j')
			json = true;
		else if (c == 'f')
			force = true;
		else if (c == 'h') {
			engine_usage(stdout);
			return 0;
		} else {
			engine_usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		engine_usage(stderr);
		return EXIT_USAGE;
	}
	verb = argv[optind];
	if (strcmp(verb, "status") && strcmp(verb, "load") && strcmp(verb, "unload")) {
		fprintf(stderr, "custode engine: unknown action '%s'\n", verb);
		engine_usage(stderr);
		return EXIT_USAGE;
	}
	if ((err = custode_host_prepare(&e, &why)))
		goto fail;
	if (!strcmp(verb, "load")) {
		err = custode_engine_open(&e, CUSTODE_CLASS_FILE, CUSTODE_ENGINE_LOAD, &why);
		if (err)
			goto fail;
		printf("custode: engine loaded at %s\n", CUSTODE_PIN_ROOT);
		custode_engine_close(&e);
		return 0;
	}
	err = custode_engine_open(&e, 0, 0, &why);
	if (err && !strcmp(verb, "unload") && why.reason == CUSTODE_REASON_ENGINE_MISSING)
		return 0;
	if (err) {
		if (!strcmp(verb, "status") && json && why.reason == CUSTODE_REASON_ENGINE_MISSING) {
			printf("{\"loaded\":false}\n");
			return 1;
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
		json_t *o;

		custode_engine_get_stats(&e, &st);
		o = json_pack("{s:b, s:s, s:i, s:o, s:I, s:i, s:I, s:I, s:I}", "loaded", 1, "pin_root", CUSTODE_PIN_ROOT,
			      "abi_version", (int)e.meta.abi_version, "classes", class_list(e.meta.classes),
			      "cgroup_root_id", (json_int_t)e.meta.root_cgroup_id, "runs", runs, "events",
			      (json_int_t)st.events, "events_dropped", (json_int_t)st.events_dropped, "loaded_at",
			      (json_int_t)e.meta.loaded_at);
		json_object_set_new(o, "cgroup_root", json_string(e.cg_root));
		{
			int rc = custode_engine_run_cache();
			json_object_set_new(o, "run_cache",
					    json_string(rc > 0 ? "cgroup-storage" : rc == 0 ? "off" : "absent"));
		}
		json_object_set_new(o, "entries", map_entries());
		if (json) {
			json_dumpf(o, stdout, JSON_COMPACT);
			putchar('\n');
		} else {
			char *text = json_dumps(o, JSON_INDENT(2));
			puts(text);
			free(text);
		}
		json_decref(o);
	}
	custode_engine_close(&e);
	return 0;
fail:
	fprintf(stderr, "custode: engine: %s: %s\n", custode_reason_name(why.reason), why.detail);
	return why.reason == CUSTODE_REASON_PRIVILEGE_REQUIRED ? EXIT_REFUSED : EXIT_FAILURE;
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
	bool json = argc > 1 && !strcmp(argv[1], "--json");

	if (argc > 1 && !strcmp(argv[1], "show"))
		return profiles_show(argc, argv);
	if (argc > 1 && !json) {
		if (!strcmp(argv[1], "--help")) {
			printf(PROFILES_USAGE "\nList the built-in profiles; `show NAME` prints one's policy document\n"
			       "(docs/policy.md), to start a policy of your own from.\n");
			return 0;
		}
		fprintf(stderr, PROFILES_USAGE);
		return EXIT_USAGE;
	}
	for (const struct custode_builtin_profile *p = custode_builtin_profiles; p->name; p++) {
		struct custode_policy *pol = NULL;
		struct custode_refusal why;
		if (custode_policy_parse(p->text, p->len, &pol, &why)) {
			fprintf(stderr, "custode: profiles: built-in '%s' is invalid: %s\n", p->name, why.detail);
			return 1;
		}
		if (json)
			printf("{\"name\":\"%s\",\"policy\":\"%s\",\"version\":%llu,\"rules\":%zu}\n", p->name, pol->name,
			       (unsigned long long)pol->version, pol->n_fs);
		else
			printf("%-16s %s v%llu, %zu filesystem rules\n", p->name, pol->name,
			       (unsigned long long)pol->version, pol->n_fs);
		custode_policy_free(pol);
	}
	return 0;
}
