// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <jansson.h>

#include "cgroup/cgroup.h"
#include "dns/names.h"
#include "state/runstate.h"
#include "util/exit.h"
#include "util/fsutil.h"
#include "run/run.h"
#include "util/reasons.h"
#include "util/usage.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: custode gc [--json]\n"
		   "\n"
		   "Reap orphaned runs: runs whose launcher is gone (killed, crashed). Each\n"
		   "orphan's processes are killed, its cgroup removed, then it is\n"
		   "unregistered; until then it stays confined. Also removes registrations\n"
		   "whose cgroup no longer exists.\n"
		   "\n"
		   "  --json   one JSON array on stdout, an object per reaped run\n"
		   "  --help   this text\n"
		   "\n"
		   "Exit: 0 done (nothing to reap, or no engine loaded), 1 some run could not be\n"
		   "reaped, 2 usage, 125 custode cannot operate (not root, the pinned engine\n"
		   "can't be read). With no engine nothing is registered, so a cron job running\n"
		   "gc on a host where no run has started yet succeeds.\n");
}

/* gc's reporter: ctx is the --json document (docs/output.md) each reap is added to, or NULL for a line on stderr. */
static void gc_report(void *ctx, const char *hex, const char *what, int err)
{
	json_t *json = ctx;

	if (json)
		json_array_append_new(json, json_pack("{s:s, s:s, s:b}", "run_id", hex, "action", what, "ok", !err));
	else if (err)
		fprintf(stderr, "custode: gc: run %s: %s failed: %s\n", hex, what, strerror(-err));
	else
		fprintf(stderr, "custode: gc: run %s: %s\n", hex, what);
}

/* Orphans known from state files: launcher gone means the run lock is free. */
static int reap_state_files(struct custode_engine *e, custode_gc_report_fn report, void *ctx)
{
	DIR *d = custode_state_list_open();
	int failed = 0;
	__u64 id;

	if (!d)
		return 0;
	while (custode_state_list_next(d, CUSTODE_STATE_LOCK, &id)) {
		struct custode_runstate st;
		char hex[17];
		int fd, err;

		custode_run_id_format(id, hex);
		fd = custode_runlock_try(id);
		if (fd < 0)
			continue; /* launcher alive (or unreadable): not ours to touch */
		err = custode_runstate_read(id, &st);
		if (err == -ENOENT) {
			/*
			 * The launcher died setting up (it writes its state once,
			 * registered): its private tmp (empty: no process ran) and the
			 * resolver's names file go here; a run-<id> cgroup and its
			 * registration, if it got that far, go in reap_cgroups, which
			 * finds no lock then.
			 */
			char tmp[PATH_MAX];

			custode_run_tmp_path(id, tmp, sizeof(tmp));
			custode_rm_rf(tmp);
			custode_dns_names_remove(id);
			custode_runstate_remove(id);
			close(fd);
			continue;
		}
		if (err) {
			report(ctx, hex, "read state", err);
			failed = 1;
			close(fd);
			continue;
		}
		err = custode_run_reap(e, &st, NULL, NULL, NULL, NULL);
		report(ctx, hex, "reaped orphaned run", err);
		failed |= err != 0;
		close(fd);
	}
	closedir(d);
	return failed;
}

/* run-* cgroups with no launcher lock file at all (state lost) are orphans too. */
static int reap_cgroups(struct custode_engine *e, custode_gc_report_fn report, void *ctx)
{
	DIR *d = opendir(e->cg_root);
	struct dirent *de;
	int failed = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		struct custode_runstate st;
		struct custode_run run;
		__u64 id;
		int err;

		if (de->d_type != DT_DIR || strncmp(de->d_name, "run-", 4) != 0 || custode_run_id_parse(de->d_name, &id) < 0)
			continue;
		if (custode_runlock_exists(id))
			continue; /* handled through its state file */
		memset(&st, 0, sizeof(st));
		st.run_id = id;
		snprintf(st.cgroup, sizeof(st.cgroup), "%s/%s", e->cg_root, de->d_name);
		custode_run_tmp_path(id, st.tmp, sizeof(st.tmp));
		if (custode_cgroup_id(st.cgroup, &st.cgroup_id) < 0)
			continue;
		if (custode_engine_get_run(e, st.cgroup_id, &run) == 0)
			st.ruleset = run.ruleset;
		err = custode_run_reap(e, &st, NULL, NULL, NULL, NULL);
		report(ctx, de->d_name + 4, "reaped run without state", err);
		failed |= err != 0;
	}
	closedir(d);
	return failed;
}

/* Registrations whose cgroup is gone and whose launcher is not alive. */
static int reap_registrations(struct custode_engine *e, custode_gc_report_fn report, void *ctx)
{
	__u64 key, next, gone[256], ids[256];
	__u32 rulesets[256];
	void *prev = NULL;
	int n = 0, failed = 0;

	while (n < 256 && bpf_map_get_next_key(e->runs_fd, prev, &next) == 0) {
		struct custode_run run;
		char hex[17], path[PATH_MAX];
		__u64 cgid;
		int fd;

		key = next;
		prev = &key;
		if (custode_engine_get_run(e, key, &run) < 0)
			continue;
		if (run.flags & CUSTODE_RUN_ATTACHED)
			continue; /* the daemon's (custode attach): it reaps them when their cgroup goes */
		custode_run_id_format(run.run_id, hex);
		snprintf(path, sizeof(path), "%s/run-%s", e->cg_root, hex);
		if (custode_cgroup_id(path, &cgid) == 0 && cgid == key)
			continue;
		fd = custode_runlock_try(run.run_id);
		if (fd < 0)
			continue;
		close(fd);
		rulesets[n] = run.ruleset;
		ids[n] = run.run_id;
		gone[n++] = key;
	}
	for (int i = 0; i < n; i++) {
		char hex[17];
		int err = custode_engine_unregister(e, gone[i]);

		if (!err)
			err = custode_engine_delete_ruleset(e, rulesets[i]);
		if (!err)
			err = custode_engine_delete_net_ruleset(e, rulesets[i]);
		/* their pins: in one walk for all (custode_cmd_gc), or by the daemon's resolver */
		custode_runstate_remove(ids[i]);
		snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)gone[i]);
		report(ctx, hex, "removed registration of a vanished cgroup", err);
		failed |= err != 0;
	}
	return failed;
}

/*
 * Every orphan, through report: what `custode gc` does, and the daemon on its
 * timer. Returns nonzero if some run could not be reaped.
 */
int custode_run_reap_orphans(struct custode_engine *e, custode_gc_report_fn report, void *ctx)
{
	int failed = reap_state_files(e, report, ctx);

	failed |= reap_cgroups(e, report, ctx);
	failed |= reap_registrations(e, report, ctx);
	return failed;
}

int custode_cmd_gc(int argc, char **argv)
{
	static const struct option opts[] = {{"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0}};
	struct custode_refusal why = {0};
	struct custode_engine e;
	bool json = false;
	json_t *reaped;
	int c, failed;

	custode_getopt_start();
	while ((c = getopt_long(argc, argv, "+jh", opts, NULL)) != -1) {
		if (c == 'j')
			json = true;
		else if (c == 'h') {
			usage(stdout);
			return 0;
		} else {
			return custode_usage_bad_option("gc", EXIT_USAGE, argv);
		}
	}
	if (optind < argc)
		return custode_usage_extra_arg("gc", EXIT_USAGE, argv[optind]);
	if (custode_host_prepare(&e, &why) || custode_engine_open(&e, 0, 0, &why)) {
		if (why.reason == CUSTODE_REASON_ENGINE_MISSING) {
			if (json)
				printf("[]\n");
			return 0; /* no engine, nothing registered, nothing to reap */
		}
		fprintf(stderr, "custode: gc: %s: %s\n", custode_reason_name(why.reason), why.detail);
		return EXIT_REFUSED;
	}
	/* --json: one document, every reap in it */
	reaped = json ? json_array() : NULL;
	failed = custode_run_reap_orphans(&e, gc_report, reaped);
	/* the pins of every run reaped (and of any run that ended before): one walk of the pin map */
	if (e.pins_fd >= 0) {
		size_t n;
		int err = custode_pins_delete_unregistered(e.pins_fd, e.runs_fd, &n);

		if (err) {
			fprintf(stderr, "custode: gc: pins of ended runs: %s\n", strerror(-err));
			failed = 1;
		}
	}
	custode_engine_close(&e);
	if (reaped) {
		json_dumpf(reaped, stdout, JSON_COMPACT);
		putchar('\n');
		json_decref(reaped);
	}
	return failed ? 1 : 0;
}
