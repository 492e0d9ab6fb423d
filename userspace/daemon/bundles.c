// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "daemon/bundles.h"
#include "metrics/metrics.h"
#include "state/runstate.h"
#include "run/program.h"
#include "run/swap.h"

#define MAX_CANDIDATES 256

struct seen {
	char path[PATH_MAX];
	struct timespec mtime;
	off_t size;
};

struct candidate {
	char path[PATH_MAX];
	struct custode_policy *policy;
	struct custode_bundle_info info;
};

struct custode_bundle_watch {
	pthread_t thread;
	bool started;
	volatile int *stop;
	char dir[PATH_MAX];
	char state_dir[PATH_MAX];
	struct custode_trust *trust;
	int ifd;
	/* files already refused, so a bad file is reported once, not at every scan */
	struct seen refused[MAX_CANDIDATES];
	size_t n_refused;
	/* a scan's scratch: the newest acceptable version of each policy name (emptied by the scan) */
	struct candidate best[MAX_CANDIDATES];
};

int custode_bundle_watch_open(const char *dir, const char *state_dir, struct custode_trust *trust,
			      struct custode_bundle_watch **out, struct custode_refusal *why)
{
	struct custode_bundle_watch *w = calloc(1, sizeof(*w));
	struct stat st;

	if (!w)
		return -ENOMEM;
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		free(w);
		return custode_refuse(why, ENOTDIR, CUSTODE_REASON_DAEMON_USAGE, "--bundles %s: not a directory", dir);
	}
	snprintf(w->dir, sizeof(w->dir), "%s", dir);
	snprintf(w->state_dir, sizeof(w->state_dir), "%s", state_dir ? state_dir : CUSTODE_BUNDLE_STATE_DIR);
	/* ConfigMap updates rename ..data: MOVED_TO/CREATE on the directory itself catch them */
	w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->ifd < 0 || inotify_add_watch(w->ifd, dir,
					   IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE |
						   IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF) < 0) {
		int err = errno;
		if (w->ifd >= 0)
			close(w->ifd);
		free(w);
		return custode_refuse(why, err, CUSTODE_REASON_RUN_SETUP_FAILED, "inotify on %s: %s", dir, strerror(err));
	}
	w->trust = trust;
	*out = w;
	return 0;
}

void custode_bundle_watch_close(struct custode_bundle_watch *w)
{
	if (!w)
		return;
	close(w->ifd);
	custode_trust_free(w->trust);
	free(w);
}

int custode_bundle_watch_fd(const struct custode_bundle_watch *w)
{
	return w->ifd;
}

static bool refused_before(struct custode_bundle_watch *w, const char *path, const struct stat *st, bool remember)
{
	for (size_t i = 0; i < w->n_refused; i++)
		if (!strcmp(w->refused[i].path, path) && w->refused[i].size == st->st_size &&
		    w->refused[i].mtime.tv_sec == st->st_mtim.tv_sec && w->refused[i].mtime.tv_nsec == st->st_mtim.tv_nsec)
			return true;
	if (remember) {
		struct seen *s = &w->refused[w->n_refused < MAX_CANDIDATES ? w->n_refused++ : MAX_CANDIDATES - 1];
		snprintf(s->path, sizeof(s->path), "%s", path);
		s->mtime = st->st_mtim;
		s->size = st->st_size;
	}
	return false;
}

/* Swap every live run that started from this policy name's bundle and isn't at this version yet. */
static void apply(struct custode_engine *e, const struct candidate *c)
{
	DIR *d = custode_state_list_open();
	__u64 id;

	if (!d)
		return;
	while (custode_state_list_next(d, CUSTODE_STATE_RUN, &id)) {
		struct custode_refusal why = {0};
		struct custode_runstate st;
		struct custode_run run;
		char hex[17];

		custode_run_id_format(id, hex);
		if (custode_runstate_read(id, &st) < 0)
			continue;
		if (strcmp(st.source, "bundle") || strcmp(st.policy, c->info.name))
			continue;
		if (custode_engine_get_run(e, st.cgroup_id, &run) < 0 || custode_program_current(&run, c->info.version))
			continue;
		if (custode_run_swap_policy(e, &st, c->policy, &why) < 0)
			fprintf(stderr, "custode daemon: bundles: run %s keeps %s v%llu: %s: %s\n", hex, c->info.name,
				(unsigned long long)run.policy_version, custode_reason_name(why.reason), why.detail);
		else
			fprintf(stderr, "custode daemon: bundles: run %s: %s v%llu -> v%llu\n", hex, c->info.name,
				(unsigned long long)run.policy_version, (unsigned long long)c->info.version);
	}
	closedir(d);
	/*
	 * A swap's compiled rule sets and map batches are freed by now; glibc
	 * keeps freed heap (and raises its mmap threshold after large frees), so
	 * without this the daemon stays at its peak (tools/bench/swapbench: RSS).
	 */
	malloc_trim(0);
}

void custode_bundle_watch_scan(struct custode_bundle_watch *w, struct custode_engine *e)
{
	struct candidate *best = w->best;
	char buf[4096];
	size_t n_best = 0;
	int64_t now = (int64_t)time(NULL);
	DIR *d;
	struct dirent *de;

	while (read(w->ifd, buf, sizeof(buf)) > 0)
		; /* the events only say "something changed": everything is rescanned */
	d = opendir(w->dir);
	if (!d) {
		fprintf(stderr, "custode daemon: bundles: %s: %s\n", w->dir, strerror(errno));
		return;
	}
	while ((de = readdir(d))) {
		struct custode_refusal why = {0};
		struct custode_policy *p = NULL;
		struct custode_bundle_info info;
		char path[PATH_MAX];
		struct stat st;
		size_t i;

		/* dot entries: ".", "..", and a ConfigMap's "..data", "..2026_..." internals (files link through them) */
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", w->dir, de->d_name);
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (custode_bundle_verify_file(path, w->trust, now, &p, &info, &why) < 0) {
			if (!refused_before(w, path, &st, true))
				fprintf(stderr, "custode daemon: bundles: refusing %s: %s: %s\n", path,
					custode_reason_name(why.reason), why.detail);
			continue;
		}
		/* lower versions than the floor: refused (and said so) */
		if (custode_bundle_floor_check(w->state_dir, &info, &why) < 0) {
			if (!refused_before(w, path, &st, true))
				fprintf(stderr, "custode daemon: bundles: refusing %s: %s: %s\n", path,
					custode_reason_name(why.reason), why.detail);
			custode_policy_free(p);
			continue;
		}
		for (i = 0; i < n_best; i++)
			if (!strcmp(best[i].info.name, info.name))
				break;
		if (i < n_best && best[i].info.version >= info.version) {
			custode_policy_free(p);
			continue;
		}
		if (i == n_best) {
			if (n_best == MAX_CANDIDATES) {
				custode_policy_free(p);
				continue;
			}
			n_best++;
		} else {
			custode_policy_free(best[i].policy);
		}
		snprintf(best[i].path, sizeof(best[i].path), "%s", path);
		best[i].policy = p;
		best[i].info = info;
	}
	closedir(d);
	for (size_t i = 0; i < n_best; i++) {
		struct custode_refusal why = {0};
		bool raised = false;

		/* the floor is persisted before any run sees the policy */
		if (custode_bundle_accept(w->state_dir, &best[i].info, &raised, &why) < 0) {
			fprintf(stderr, "custode daemon: bundles: refusing %s: %s: %s\n", best[i].path,
				custode_reason_name(why.reason), why.detail);
		} else {
			if (raised)
				fprintf(stderr, "custode daemon: bundles: accepted %s v%llu (%s)\n", best[i].info.name,
					(unsigned long long)best[i].info.version, best[i].info.digest);
			apply(e, &best[i]);
			/* the metrics show every accepted policy's version and validity, not only attached ones */
			custode_metrics_set_bundle(best[i].info.name, best[i].info.version, best[i].info.not_before,
						   best[i].info.not_after);
		}
		custode_policy_free(best[i].policy);
		best[i].policy = NULL;
	}
}

static void *watch_thread(void *arg)
{
	struct custode_bundle_watch *w = arg;
	struct custode_refusal why = {0};
	struct custode_engine e;
	int idle = 0; /* polls (a second each) without a change: a rescan at 60 */

	if (custode_host_prepare(&e, &why) < 0 || custode_engine_open(&e, 0, 0, &why) < 0) {
		fprintf(stderr, "custode daemon: bundles: no engine: %s: %s\n", custode_reason_name(why.reason),
			why.detail);
		return NULL;
	}
	custode_bundle_watch_scan(w, &e);
	while (!*w->stop) {
		struct pollfd p = {.fd = w->ifd, .events = POLLIN};
		int n = poll(&p, 1, 1000);

		if (n > 0) {
			usleep(50000); /* let a burst of changes (a ConfigMap swap) settle */
			custode_bundle_watch_scan(w, &e);
			idle = 0;
		} else if (++idle >= 60) {
			custode_bundle_watch_scan(w, &e); /* a periodic rescan: nothing is missed for long */
			idle = 0;
		}
	}
	custode_engine_close(&e);
	return NULL;
}

int custode_bundle_watch_start(struct custode_bundle_watch *w, volatile int *stop)
{
	int err;

	w->stop = stop;
	err = pthread_create(&w->thread, NULL, watch_thread, w);
	if (err)
		return -err;
	w->started = true;
	return 0;
}

void custode_bundle_watch_join(struct custode_bundle_watch *w)
{
	if (w && w->started)
		pthread_join(w->thread, NULL);
}
