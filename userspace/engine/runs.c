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

/*
 * The run's decision table (include/custode/abi.h, struct custode_decision):
 * a fresh array, its slot 0 naming the run, put in custode_decisions before
 * the run exists, at the first of its two places not held by another live
 * run (custode_decision_places says whose each is; a table whose run is gone
 * is replaced). Both held: the run keeps no decisions (engine status shows
 * fewer tables than runs). A live run's own table is -EEXIST, as its
 * registration would be. 0 also when the engine has no file class (nothing
 * to keep); -errno if the table can't be made.
 */
static int decisions_add(struct custode_engine *e, __u64 cgid)
{
	struct custode_decision o = {.ino = cgid, .kind = CUSTODE_DECISION_OWNER};
	int outer = custode_map_open(CUSTODE_MAP_DECISIONS), places = custode_map_open(CUSTODE_MAP_DECISION_PLACES);
	int inner = -1, err = 0;
	struct custode_decision_place at;
	struct bpf_map_info info;
	struct custode_run run;
	__u32 zero = 0, len = sizeof(info);

	if (outer < 0 || places < 0) {
		err = errno == ENOENT ? 0 : -errno;
		goto out;
	}
	inner = bpf_map_create(BPF_MAP_TYPE_ARRAY, "custode_run_dec", sizeof(__u32), sizeof(struct custode_decision),
			       CUSTODE_DECISION_SLOTS, NULL);
	memset(&info, 0, sizeof(info));
	if (inner < 0 || bpf_map_update_elem(inner, &zero, &o, BPF_ANY) < 0 ||
	    bpf_obj_get_info_by_fd(inner, &info, &len) < 0) {
		err = -errno;
		goto out;
	}
	for (int probe = 0; probe < 2; probe++) {
		__u32 i = custode_decision_table_index(cgid, probe);

		if (bpf_map_lookup_elem(places, &i, &at) < 0) {
			err = -errno;
			goto out;
		}
		if (at.cgroup_id == cgid && bpf_map_lookup_elem(e->runs_fd, &cgid, &run) == 0) {
			err = -EEXIST;
			goto out;
		}
		if (at.cgroup_id && at.cgroup_id != cgid && bpf_map_lookup_elem(e->runs_fd, &at.cgroup_id, &run) == 0)
			continue; /* another live run's */
		if (bpf_map_update_elem(outer, &i, &inner, BPF_ANY) < 0) {
			err = -errno;
			goto out;
		}
		at = (struct custode_decision_place){.cgroup_id = cgid, .map_id = info.id};
		if (bpf_map_update_elem(places, &i, &at, BPF_ANY) < 0)
			err = -errno;
		goto out;
	}
out:
	if (inner >= 0)
		close(inner); /* custode_decisions holds it now */
	if (places >= 0)
		close(places);
	if (outer >= 0)
		close(outer);
	return err;
}

/* The run's table goes (freed by the kernel once no hook still uses it). */
static void decisions_drop(__u64 cgid)
{
	int outer = custode_map_open(CUSTODE_MAP_DECISIONS), places = custode_map_open(CUSTODE_MAP_DECISION_PLACES);
	struct custode_decision_place at, none = {0};

	for (int probe = 0; outer >= 0 && places >= 0 && probe < 2; probe++) {
		__u32 i = custode_decision_table_index(cgid, probe);

		if (bpf_map_lookup_elem(places, &i, &at) == 0 && at.cgroup_id == cgid) {
			bpf_map_delete_elem(outer, &i);
			bpf_map_update_elem(places, &i, &none, BPF_ANY);
		}
	}
	if (places >= 0)
		close(places);
	if (outer >= 0)
		close(outer);
}

int custode_engine_register(struct custode_engine *e, __u64 cgid, const struct custode_run *run)
{
	struct custode_counters zero;
	int err;

	memset(&zero, 0, sizeof(zero));
	if ((err = decisions_add(e, cgid)))
		return err;
	if (bpf_map_update_elem(e->counters_fd, &cgid, &zero, BPF_ANY) < 0) {
		err = -errno;
		decisions_drop(cgid);
		return err;
	}
	if (bpf_map_update_elem(e->runs_fd, &cgid, run, BPF_NOEXIST) < 0) {
		err = -errno;
		bpf_map_delete_elem(e->counters_fd, &cgid);
		decisions_drop(cgid);
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

/* The values of array map fd (at most max of them) in vals, in one call: how many were read. */
static __u32 array_read(int fd, void *vals, __u32 max)
{
	static __u32 keys[CUSTODE_DECISION_SLOTS > CUSTODE_DECISION_TABLES ? CUSTODE_DECISION_SLOTS
									     : CUSTODE_DECISION_TABLES];
	__u32 batch = 0, n = max < sizeof(keys) / sizeof(keys[0]) ? max : sizeof(keys) / sizeof(keys[0]);
	LIBBPF_OPTS(bpf_map_batch_opts, opts);

	/* ENOENT: the array's end reached, n read */
	if (bpf_map_lookup_batch(fd, NULL, &batch, keys, vals, &n, &opts) < 0 && errno != ENOENT)
		return 0;
	return n;
}

/* Slots of a run's table that hold a decision (a checksum set). */
static __u32 table_used(__u32 map_id)
{
	static struct custode_decision v[CUSTODE_DECISION_SLOTS];
	int fd = bpf_map_get_fd_by_id(map_id);
	__u32 n, used = 0;

	if (fd < 0)
		return 0;
	n = array_read(fd, v, CUSTODE_DECISION_SLOTS);
	close(fd);
	for (__u32 i = 0; i < n; i++)
		used += v[i].sum != 0;
	return used;
}

int custode_engine_decision_tables(struct custode_decision_table *out, int max)
{
	static struct custode_decision_place at[CUSTODE_DECISION_TABLES];
	int fd = custode_map_open(CUSTODE_MAP_DECISION_PLACES), k = 0;
	__u32 n;

	if (fd < 0)
		return -errno;
	n = array_read(fd, at, CUSTODE_DECISION_TABLES);
	close(fd);
	for (__u32 i = 0; i < n && k < max; i++) {
		if (!at[i].cgroup_id)
			continue;
		out[k].cgroup_id = at[i].cgroup_id;
		out[k].map_id = at[i].map_id;
		out[k].used = table_used(at[i].map_id);
		k++;
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
	decisions_drop(cgid);
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
