// SPDX-License-Identifier: Apache-2.0
/*
 * Runs in the engine's maps (engine.h): registration, the run's record and
 * counters, the generations that invalidate cached decisions, and the wait
 * for programs still running with what they read before a change.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/membarrier.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "engine/engine.h"
#include "engine/maps.h"
#include "state/ended.h"
#include "state/runstate.h"

int custode_engine_count_runs(struct custode_engine *e)
{
	__u64 key, next;
	int n = 0;
	void *prev = NULL;

	while (bpf_map_get_next_key(e->runs_fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		n++;
	}
	return n;
}

int custode_engine_register(struct custode_engine *e, __u64 cgid, const struct custode_run *run)
{
	struct custode_counters zero;
	int err;

	memset(&zero, 0, sizeof(zero));
	if (bpf_map_update_elem(e->counters_fd, &cgid, &zero, BPF_ANY) < 0)
		return -errno;
	if (bpf_map_update_elem(e->runs_fd, &cgid, run, BPF_NOEXIST) < 0) {
		err = -errno;
		bpf_map_delete_elem(e->counters_fd, &cgid);
		return err;
	}
	return custode_engine_bump_runs_gen();
}

int custode_engine_bump_fs_gen(struct custode_engine *e)
{
	__u32 zero = 0;
	__u64 gen = 0;
	int fd = custode_map_open(CUSTODE_MAP_FS_GEN);

	if (fd < 0)
		return -errno;
	/* the kernel adds 1 atomically; a jump of 2^32 can't land on a value it used before */
	if (bpf_map_lookup_elem(fd, &zero, &gen) == 0) {
		gen += 1ull << 32;
		bpf_map_update_elem(fd, &zero, &gen, BPF_ANY);
	}
	close(fd);
	(void)e;
	return 0;
}

int custode_engine_run_cache(void)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	int fd = custode_map_open(CUSTODE_MAP_RUN_CACHE), active;

	if (fd < 0)
		return -errno;
	memset(&info, 0, sizeof(info));
	active = bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && info.type == 32 /* BPF_MAP_TYPE_CGRP_STORAGE */;
	close(fd);
	return active;
}

/*
 * An fd of the map called `name` that the loaded file_open program uses (the
 * file class's unpinned maps), its info in *m; -errno: no file class, or no
 * such map.
 */
static int file_prog_map(const char *name, struct bpf_map_info *m)
{
	struct bpf_link_info link;
	struct bpf_prog_info prog;
	__u32 ids[64], n, len;
	int lfd = custode_link_open("custode_file_open"), pfd, err;

	if (lfd < 0)
		return -errno;
	memset(&link, 0, sizeof(link));
	len = sizeof(link);
	if (bpf_obj_get_info_by_fd(lfd, &link, &len) < 0 || (pfd = bpf_prog_get_fd_by_id(link.prog_id)) < 0) {
		err = -errno;
		close(lfd);
		return err;
	}
	close(lfd);
	memset(&prog, 0, sizeof(prog));
	prog.nr_map_ids = sizeof(ids) / sizeof(ids[0]);
	prog.map_ids = (__u64)(unsigned long)ids;
	len = sizeof(prog);
	if (bpf_obj_get_info_by_fd(pfd, &prog, &len) < 0) {
		err = -errno;
		close(pfd);
		return err; /* ids unfilled: never walk them */
	}
	close(pfd);
	n = prog.nr_map_ids < sizeof(ids) / sizeof(ids[0]) ? prog.nr_map_ids : sizeof(ids) / sizeof(ids[0]);
	for (__u32 i = 0; i < n; i++) {
		int mfd = bpf_map_get_fd_by_id(ids[i]);

		if (mfd < 0)
			continue;
		memset(m, 0, sizeof(*m));
		len = sizeof(*m);
		if (bpf_obj_get_info_by_fd(mfd, m, &len) == 0 && !strcmp(m->name, name))
			return mfd;
		close(mfd);
	}
	return -ENOENT;
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

int custode_engine_decisions(struct custode_engine *e, struct custode_decision_use *out, int max,
			     struct custode_decision_totals *t)
{
	static struct custode_decision v[CUSTODE_DECISION_SLOTS];
	static __u32 keys[CUSTODE_DECISION_SLOTS];
	static __u64 live[CUSTODE_MAX_RUNS];
	int fd = custode_map_open(CUSTODE_MAP_DECISIONS), nlive = 0, k = 0;
	__u32 batch = 0, n = CUSTODE_DECISION_SLOTS;
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u64 key, next;
	void *prev = NULL;

	memset(t, 0, sizeof(*t));
	if (fd < 0)
		return -errno;
	/* one call for the whole array (ENOENT: its end reached, n read) */
	if (bpf_map_lookup_batch(fd, NULL, &batch, keys, v, &n, &opts) < 0 && errno != ENOENT) {
		int err = -errno;

		close(fd);
		return err;
	}
	close(fd);
	while (nlive < CUSTODE_MAX_RUNS && bpf_map_get_next_key(e->runs_fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		live[nlive++] = key;
	}
	qsort(live, (size_t)nlive, sizeof(live[0]), cmp_u64);
	for (int i = 0; i < nlive && k < max; i++)
		out[k++] = (struct custode_decision_use){.cgroup_id = live[i]};
	for (__u32 i = 0; i < n; i++) {
		__u64 *at;

		if (!v[i].sum)
			continue;
		t->used++;
		at = bsearch(&v[i].run, live, (size_t)nlive, sizeof(live[0]), cmp_u64);
		if (!at) {
			t->ended++; /* an ended run's: dead, free for the next run that maps there */
			continue;
		}
		if (at - live < k)
			out[at - live].used++;
	}
	return k;
}

int custode_engine_scratch(struct custode_scratch_head sum[CUSTODE_SCRATCH_SLOTS])
{
	struct bpf_map_info m;
	int fd = file_prog_map("file_scratch", &m), ncpu = libbpf_num_possible_cpus(), err = 0;
	size_t stride;
	char *vals;

	if (fd < 0)
		return fd;
	/* an engine of an earlier build (one slot, no head) has nothing to show */
	if (m.max_entries != CUSTODE_SCRATCH_SLOTS || m.value_size < sizeof(struct custode_scratch_head) || ncpu <= 0) {
		close(fd);
		return -ENOENT;
	}
	stride = ((size_t)m.value_size + 7) & ~(size_t)7;
	vals = malloc(stride * (size_t)ncpu);
	if (!vals) {
		close(fd);
		return -ENOMEM;
	}
	memset(sum, 0, sizeof(*sum) * CUSTODE_SCRATCH_SLOTS);
	for (__u32 k = 0; k < CUSTODE_SCRATCH_SLOTS && !err; k++) {
		if (bpf_map_lookup_elem(fd, &k, vals) < 0) {
			err = -errno;
			break;
		}
		for (int c = 0; c < ncpu; c++) {
			const struct custode_scratch_head *h = (const void *)(vals + stride * (size_t)c);

			sum[k].owner += h->owner != 0; /* slots held now */
			sum[k].claims += h->claims;
			sum[k].steals += h->steals;
			sum[k].lost += h->lost;
		}
	}
	free(vals);
	close(fd);
	return err;
}

long long custode_engine_newcomers_live(void)
{
	__u32 zero = 0;
	__u64 n = 0;
	int fd = custode_map_open(CUSTODE_MAP_NEWCOMERS_LIVE), err = 0;

	if (fd < 0)
		return -errno;
	if (bpf_map_lookup_elem(fd, &zero, &n) < 0)
		err = -errno;
	close(fd);
	return err ? err : (long long)n;
}

/*
 * After every change to custode_runs or custode_gates: the run cache
 * (include/custode/abi.h) holds only answers computed at the new value.
 */
int custode_engine_bump_runs_gen(void)
{
	__u32 zero = 0;
	__u64 gen = 0;
	int fd = custode_map_open(CUSTODE_MAP_RUNS_GEN), err = 0;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno; /* an engine without the run cache */
	if (bpf_map_lookup_elem(fd, &zero, &gen) < 0)
		err = -errno;
	gen = (gen + 1) & ~CUSTODE_RUN_CACHE_VALID;
	if (!err && bpf_map_update_elem(fd, &zero, &gen, BPF_ANY) < 0)
		err = -errno;
	close(fd);
	return err;
}

int custode_engine_unregister(struct custode_engine *e, __u64 cgid)
{
	return custode_engine_unregister_final(e, cgid, NULL);
}

/*
 * A run's final counts go into the totals of ended runs (state/ended.h) so
 * the daemon's metrics count runs that ended between its snapshots, or while
 * it was not running. Best effort: the unregistration never fails for it.
 */
static void record_ended(__u64 run_id, const struct custode_counters *c)
{
	struct custode_runstate *st;
	bool any = false;

	for (int k = 0; k < CUSTODE_REASON_KERNEL_MAX && !any; k++)
		any = c->denials[k] != 0;
	if (!any || !(st = malloc(sizeof(*st))))
		return;
	custode_ended_add(CUSTODE_ENDED_FILE, custode_runstate_read(run_id, st) == 0 ? st->policy : NULL, c, NULL);
	free(st);
}

int custode_engine_unregister_final(struct custode_engine *e, __u64 cgid, struct custode_counters *final)
{
	struct custode_counters c;
	struct custode_run run;
	bool had = custode_engine_get_run(e, cgid, &run) == 0;
	int err = 0;

	/* the run first: from here on no hook counts for it, so the counters read next are its last */
	if (bpf_map_delete_elem(e->runs_fd, &cgid) < 0 && errno != ENOENT)
		err = -errno;
	custode_engine_bump_fs_gen(e);
	custode_engine_bump_runs_gen();
	if (custode_engine_get_counters(e, cgid, &c) < 0)
		memset(&c, 0, sizeof(c));
	if (had)
		record_ended(run.run_id, &c);
	if (final)
		*final = c;
	if (bpf_map_delete_elem(e->counters_fd, &cgid) < 0 && errno != ENOENT && !err)
		err = -errno;
	return err;
}

int custode_engine_get_run(struct custode_engine *e, __u64 cgid, struct custode_run *out)
{
	return bpf_map_lookup_elem(e->runs_fd, &cgid, out) ? -errno : 0;
}

int custode_engine_set_run(struct custode_engine *e, __u64 cgid, const struct custode_run *run)
{
	int err = bpf_map_update_elem(e->runs_fd, &cgid, run, BPF_EXIST) ? -errno : 0;

	/* a changed run (cancelled, new rules) must not be served decisions cached for the old one */
	custode_engine_bump_fs_gen(e);
	return err;
}

int custode_engine_quiesce(void)
{
	int err;

	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0)
		return 0;
	err = -errno;
	/* refused on nohz_full hosts: a grace period takes milliseconds; wait well beyond one */
	usleep(100 * 1000);
	return err;
}

int custode_engine_get_counters(struct custode_engine *e, __u64 cgid, struct custode_counters *out)
{
	return bpf_map_lookup_elem(e->counters_fd, &cgid, out) ? -errno : 0;
}

int custode_engine_get_stats(struct custode_engine *e, struct custode_stats *out)
{
	int ncpu = libbpf_num_possible_cpus();
	struct custode_stats *per;
	__u32 zero = 0;

	if (ncpu <= 0)
		return -EINVAL;
	per = calloc((size_t)ncpu, sizeof(*per));
	if (!per)
		return -ENOMEM;
	if (bpf_map_lookup_elem(e->stats_fd, &zero, per) < 0) {
		int err = -errno;
		free(per);
		return err;
	}
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < ncpu; i++) {
		out->events += per[i].events;
		out->events_dropped += per[i].events_dropped;
	}
	free(per);
	return 0;
}
