// SPDX-License-Identifier: Apache-2.0
/*
 * Rule sets in the engine's maps (engine.h): the id a run's rules are keyed
 * by, the file and egress rules of a rule set, and their deletion — by the
 * rules when they are known, by a scan when only the id is (gc).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "engine/engine.h"
#include "engine/engine_int.h"
#include "engine/maps.h"
#include "util/table.h"

#define KERNEL_ENOTSUPP 524 /* what bpf() says of a batch operation a map type lacks */

/* A batch call that failed with err (an errno) before doing anything: does this map type lack the operation? */
static bool batch_missing(int err)
{
	return err == EINVAL || err == KERNEL_ENOTSUPP || err == EOPNOTSUPP;
}

int custode_engine_alloc_ruleset(struct custode_engine *e, __u32 *out)
{
	/* Another launcher may have allocated since we opened the engine: re-read under the lock. */
	int err = engine_meta_read(e->meta_fd, &e->meta);

	if (err)
		return err;
	for (int tries = 0; tries < 1 << 20; tries++) {
		__u32 id = e->meta.next_ruleset++;
		__u64 key, next;
		void *prev = NULL;
		bool used = false;
		struct custode_run run;

		if (e->meta.next_ruleset == 0)
			e->meta.next_ruleset = 1;
		if (id == 0)
			continue;
		while (!used && bpf_map_get_next_key(e->runs_fd, prev, &next) == 0) {
			key = next;
			prev = &key;
			if (bpf_map_lookup_elem(e->runs_fd, &key, &run) == 0 && run.ruleset == id)
				used = true;
		}
		if (used)
			continue;
		*out = id;
		return engine_meta_write(e->meta_fd, &e->meta);
	}
	return -ENOSPC;
}

/*
 * Add n keys with their values: BPF_MAP_UPDATE_BATCH where the map has it
 * (one call for the lot), else a call a key. Keys and values are packed
 * arrays of the map's sizes.
 */
static int update_keys(int fd, const void *keys, const void *vals, size_t n, size_t key_size, size_t val_size)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts, .elem_flags = BPF_ANY);
	__u32 count = (__u32)n;
	size_t i;

	if (!n || bpf_map_update_batch(fd, keys, vals, &count, &opts) == 0)
		return 0;
	/* count: how many went in before the failure; a real one (map full: E2BIG) is the caller's */
	if (count || !batch_missing(errno))
		return -errno;
	for (i = 0; i < n; i++) /* no batch for this map type: a call a key */
		if (bpf_map_update_elem(fd, (const char *)keys + i * key_size, (const char *)vals + i * val_size, BPF_ANY) <
		    0)
			return -errno;
	return 0;
}

/*
 * The restricting-identity filter (include/custode/abi.h), mapped on first
 * use: the counts are shared by every process that adds or deletes rules,
 * so they change by atomic adds through the mapping. NULL (errno set) if it
 * can't be opened or mapped.
 */
#define IDENTITY_FILTER_BYTES ((size_t)CUSTODE_IDENTITY_FILTER_SLOTS * sizeof(__u64))

/* The pinned filter mapped with prot (flags: MAP_SHARED and these); NULL (errno set) on failure. */
static __u64 *map_filter(int prot, int flags)
{
	int fd = custode_map_open(CUSTODE_MAP_IDENTITY_FILTER), err;
	void *p;

	if (fd < 0)
		return NULL;
	p = mmap(NULL, IDENTITY_FILTER_BYTES, prot, MAP_SHARED | flags, fd, 0);
	err = errno;
	close(fd);
	errno = err;
	return p == MAP_FAILED ? NULL : p;
}

static __u64 *identity_filter(struct custode_engine *e)
{
	if (!e->identity_filter)
		e->identity_filter = map_filter(PROT_READ | PROT_WRITE, MAP_POPULATE);
	return e->identity_filter;
}

void custode_engine_unmap_filter(struct custode_engine *e)
{
	if (e->identity_filter)
		munmap(e->identity_filter, IDENTITY_FILTER_BYTES);
	e->identity_filter = NULL;
}

long long custode_engine_identity_filter_total(void)
{
	__u64 *filter = map_filter(PROT_READ, 0);
	long long total = 0;

	if (!filter)
		return -errno;
	for (size_t i = 0; i < CUSTODE_IDENTITY_FILTER_SLOTS; i++)
		total += (long long)__atomic_load_n(&filter[i], __ATOMIC_RELAXED);
	munmap(filter, IDENTITY_FILTER_BYTES);
	return total;
}

static bool identity_restricts(const struct custode_identity *v)
{
	return v->flags & CUSTODE_IDENTITY_RESTRICTS;
}

/* Count the restricting identities of rs in the filter, before they exist in the map. */
static int count_identities(struct custode_engine *e, const struct custode_fs_ruleset *rs)
{
	__u64 *filter = NULL;

	for (size_t i = 0; i < rs->n_ids; i++) {
		if (!identity_restricts(&rs->ids[i].val))
			continue;
		if (!filter && !(filter = identity_filter(e)))
			return -errno; /* unable to count it: the restriction can't go in */
		__atomic_fetch_add(&filter[custode_identity_slot(rs->ids[i].key.dev, rs->ids[i].key.ino)], 1,
				   __ATOMIC_SEQ_CST);
	}
	return 0;
}

/*
 * Delete identities by key, each taken out with its value so that exactly
 * one deleter uncounts a restricting one. Without the filter mapped the
 * counts stay high: lookups, never a missed restriction.
 */
static int delete_identity_keys(struct custode_engine *e, const struct custode_identity_key *keys, size_t n,
				size_t *deleted)
{
	struct custode_identity val;
	__u64 *filter = NULL;
	int err = 0;

	for (size_t i = 0; i < n; i++) {
		if (bpf_map_lookup_and_delete_elem(e->identities_fd, &keys[i], &val) < 0) {
			if (errno != ENOENT && !err)
				err = -errno;
			continue;
		}
		if (deleted)
			(*deleted)++;
		if (identity_restricts(&val) && (filter || (filter = identity_filter(e))))
			__atomic_fetch_sub(&filter[custode_identity_slot(keys[i].dev, keys[i].ino)], 1, __ATOMIC_SEQ_CST);
	}
	return err;
}

int custode_engine_add_rules(struct custode_engine *e, __u32 ruleset, const struct custode_fs_ruleset *rs)
{
	struct custode_path_key *keys;
	struct custode_path_rule *vals;
	size_t n;
	int err = count_identities(e, rs);

	for (size_t i = 0; i < rs->n_ids && !err; i++)
		if (bpf_map_update_elem(e->identities_fd, &rs->ids[i].key, &rs->ids[i].val, BPF_ANY) < 0)
			err = -errno;
	if (err || !rs->n)
		return err;
	if ((err = custode_ruleset_entries(rs, ruleset, &keys, &vals, &n)))
		return err;
	err = update_keys(e->rules_fd, keys, vals, n, sizeof(*keys), sizeof(*vals));
	free(keys);
	free(vals);
	return err;
}

int custode_engine_delete_rules(struct custode_engine *e, __u32 ruleset, const struct custode_fs_ruleset *rs)
{
	int err = 0;

	for (size_t i = 0; i < rs->n_ids; i++) {
		int r = delete_identity_keys(e, &rs->ids[i].key, 1, NULL);

		if (r && !err)
			err = r;
	}
	for (size_t i = 0; i < rs->n; i++) {
		struct custode_path_key keys[2];
		int n = custode_rule_keys(&rs->rules[i], ruleset, keys);

		for (int k = 0; k < n; k++)
			if (bpf_map_delete_elem(e->rules_fd, &keys[k]) < 0 && errno != ENOENT && !err)
				err = -errno;
	}
	return err;
}

/* Keys collected by one walk of a map. */
struct keyset {
	unsigned char *keys;
	size_t n, cap, key_size;
};

static int keyset_add(struct keyset *ks, const void *key)
{
	if (ks->n == ks->cap) {
		size_t cap = ks->cap ? ks->cap * 2 : 256;
		unsigned char *k = realloc(ks->keys, cap * ks->key_size);

		if (!k)
			return -ENOMEM;
		ks->keys = k;
		ks->cap = cap;
	}
	memcpy(ks->keys + ks->n++ * ks->key_size, key, ks->key_size);
	return 0;
}

#define WALK_BATCH 1024u

/*
 * Collect the keys that match(key), in one walk: BPF_MAP_LOOKUP_BATCH where
 * the map has it (hash maps: a few calls for the whole map), else
 * get_next_key (one call a key). -EOPNOTSUPP: the batch walk could not be
 * done (no batch for this map type, or it failed): walk by keys.
 */
static int collect_batch(int fd, const struct bpf_map_info *info, bool (*match)(const void *key, const void *arg),
			 const void *arg, struct keyset *ks)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	unsigned char token[256];
	unsigned char *keys = malloc((size_t)WALK_BATCH * info->key_size);
	unsigned char *vals = malloc((size_t)WALK_BATCH * info->value_size);
	bool first = true, done = false;
	int err = 0;

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	while (!done && !err) {
		__u32 count = WALK_BATCH;

		if (bpf_map_lookup_batch(fd, first ? NULL : token, token, keys, vals, &count, &opts) < 0) {
			if (errno != ENOENT)
				err = -EOPNOTSUPP; /* no batch for this type (ENOTSUPP), or it failed: walk by keys */
			done = true;       /* ENOENT: the last keys are in this answer */
		}
		first = false;
		for (__u32 i = 0; i < count && !err; i++)
			if (match(keys + (size_t)i * info->key_size, arg))
				err = keyset_add(ks, keys + (size_t)i * info->key_size);
	}
	free(keys);
	free(vals);
	return err;
}

static int collect_by_key(int fd, bool (*match)(const void *key, const void *arg), const void *arg, struct keyset *ks)
{
	unsigned char key[256], next[256];
	void *prev = NULL;
	int err = 0;

	while (!err && bpf_map_get_next_key(fd, prev, next) == 0) {
		memcpy(key, next, ks->key_size);
		prev = key;
		if (match(key, arg))
			err = keyset_add(ks, key);
	}
	return err;
}

/* Delete the collected keys: one BPF_MAP_DELETE_BATCH where the map has it, a call a key otherwise. */
static int delete_keys(int fd, const struct keyset *ks, size_t *deleted)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	size_t i = 0;
	int err = 0;

	while (i < ks->n) {
		__u32 count = (__u32)(ks->n - i);

		if (bpf_map_delete_batch(fd, ks->keys + i * ks->key_size, &count, &opts) == 0) {
			*deleted += count;
			return 0;
		}
		/* count: how many went before the failure; a key gone meanwhile (ENOENT) is skipped */
		*deleted += count;
		i += count;
		if (errno == ENOENT) {
			i++;
			continue;
		}
		if (count || !batch_missing(errno))
			return -errno;
		break; /* no batch for this map type: by key below */
	}
	for (; i < ks->n; i++) {
		if (bpf_map_delete_elem(fd, ks->keys + i * ks->key_size) == 0)
			(*deleted)++;
		else if (errno != ENOENT && !err)
			err = -errno;
	}
	return err;
}

/*
 * Delete the keys of a map that match(key), in time linear in the map's
 * size: a walk collects them, then they go by key. Deleting during a
 * get_next_key walk restarts it from the first key, so deletion while
 * walking is quadratic (a 10k-rule swap took 159 s in the guest, a run's
 * teardown 42 s with 100k pins). With settle, a pass repeats while it
 * deleted something: keys added during the walk (the resolver pinning for a
 * run being torn down) go in the next one. A retired rule set gets no new
 * keys (no run points to it, so nobody adds to it): one pass.
 */
/* The info of map fd, whose keys must be key_size bytes (at most 256: the walks' buffers). */
static int walk_info(int fd, size_t key_size, struct bpf_map_info *info)
{
	__u32 len = sizeof(*info);

	memset(info, 0, sizeof(*info));
	if (bpf_obj_get_info_by_fd(fd, info, &len) < 0)
		return -errno;
	return info->key_size != key_size || key_size > 256 ? -EINVAL : 0;
}

/* The keys of map fd that match(key), in ks (emptied first): one batch walk, or a walk by keys where there is none. */
static int collect_matching(int fd, const struct bpf_map_info *info, bool (*match)(const void *key, const void *arg),
			    const void *arg, struct keyset *ks)
{
	int err;

	ks->n = 0;
	err = collect_batch(fd, info, match, arg, ks);
	if (err == -EOPNOTSUPP) {
		ks->n = 0;
		err = collect_by_key(fd, match, arg, ks);
	}
	return err;
}

static int delete_matching_with(int fd, size_t key_size, bool (*match)(const void *key, const void *arg),
				const void *arg, bool settle, struct custode_engine *ids_of)
{
	struct bpf_map_info info;
	struct keyset ks = {.key_size = key_size};
	size_t deleted;
	int err;

	if (fd < 0)
		return 0;
	if ((err = walk_info(fd, key_size, &info)))
		return err;
	do {
		deleted = 0;
		err = collect_matching(fd, &info, match, arg, &ks);
		if (!err && ids_of) /* identities: each uncounted from the filter as it goes */
			err = delete_identity_keys(ids_of, (const struct custode_identity_key *)ks.keys, ks.n, &deleted);
		else if (!err)
			err = delete_keys(fd, &ks, &deleted);
	} while (settle && !err && deleted);
	free(ks.keys);
	return err;
}

static int delete_matching(int fd, size_t key_size, bool (*match)(const void *key, const void *arg), const void *arg,
			   bool settle)
{
	return delete_matching_with(fd, key_size, match, arg, settle, NULL);
}

static bool identity_key_of(const void *key, const void *arg)
{
	return ((const struct custode_identity_key *)key)->ruleset == *(const __u32 *)arg;
}

static bool net_key_of(const void *key, const void *arg)
{
	return ((const struct custode_net_key *)key)->ruleset == *(const __u32 *)arg;
}

static bool private_key_of(const void *key, const void *arg)
{
	return ((const struct custode_private_key *)key)->ruleset == *(const __u32 *)arg;
}

static bool pin_key_of(const void *key, const void *arg)
{
	return ((const struct custode_pin_key *)key)->run_cgid == *(const __u64 *)arg;
}

static bool path_key_of(const void *key, const void *arg)
{
	return ((const struct custode_path_key *)key)->ruleset == *(const __u32 *)arg;
}

int custode_engine_delete_ruleset(struct custode_engine *e, __u32 ruleset)
{
	delete_matching_with(e->identities_fd, sizeof(struct custode_identity_key), identity_key_of, &ruleset, false, e);
	return delete_matching(e->rules_fd, sizeof(struct custode_path_key), path_key_of, &ruleset, false);
}

int custode_engine_add_net(struct custode_engine *e, const struct custode_net_ruleset *rs)
{
	__u32 one = 1;
	int err;

	if ((rs->n || rs->n_priv) && e->net_rules_fd < 0)
		return -ENOENT;
	if ((err = update_keys(e->net_rules_fd, rs->keys, rs->vals, rs->n, sizeof(*rs->keys), sizeof(*rs->vals))))
		return err;
	for (size_t i = 0; i < rs->n_priv; i++)
		if (bpf_map_update_elem(e->net_private_fd, &rs->priv[i], &one, BPF_ANY) < 0)
			return -errno;
	if (rs->n_inbound && e->net_inbound_fd < 0)
		return -ENOENT;
	for (size_t i = 0; i < rs->n_inbound; i++)
		if (bpf_map_update_elem(e->net_inbound_fd, &rs->inbound[i], &one, BPF_ANY) < 0)
			return -errno;
	return 0;
}

int custode_engine_delete_net(struct custode_engine *e, const struct custode_net_ruleset *rs)
{
	int err = 0;

	if (e->net_rules_fd < 0)
		return 0;
	for (size_t i = 0; i < rs->n; i++)
		if (bpf_map_delete_elem(e->net_rules_fd, &rs->keys[i]) < 0 && errno != ENOENT && !err)
			err = -errno;
	for (size_t i = 0; i < rs->n_priv; i++)
		if (bpf_map_delete_elem(e->net_private_fd, &rs->priv[i]) < 0 && errno != ENOENT && !err)
			err = -errno;
	for (size_t i = 0; i < rs->n_inbound && e->net_inbound_fd >= 0; i++)
		if (bpf_map_delete_elem(e->net_inbound_fd, &rs->inbound[i]) < 0 && errno != ENOENT && !err)
			err = -errno;
	return err;
}

int custode_engine_delete_net_ruleset(struct custode_engine *e, __u32 ruleset)
{
	int err = delete_matching(e->net_rules_fd, sizeof(struct custode_net_key), net_key_of, &ruleset, false);
	int r = delete_matching(e->net_private_fd, sizeof(struct custode_private_key), private_key_of, &ruleset, false);
	int q = delete_matching(e->net_inbound_fd, sizeof(struct custode_private_key), private_key_of, &ruleset, false);

	return err ? err : r ? r : q;
}

int custode_engine_delete_pins(struct custode_engine *e, __u64 run_cgid)
{
	return delete_matching(e->pins_fd, sizeof(struct custode_pin_key), pin_key_of, &run_cgid, true);
}

static bool any_key(const void *key, const void *arg)
{
	(void)key;
	(void)arg;
	return true;
}

/*
 * Whether run cgid is registered, asked of the runs map once per run: 1
 * registered, 0 not, -errno. memo: cgid -> 1 + the answer.
 */
static int registered(int runs_fd, struct custode_table *memo, __u64 cgid)
{
	struct custode_run run;
	unsigned char *v;
	int r = custode_table_insert(memo, &cgid, (void **)&v);

	if (r < 0)
		return r;
	if (r == 0)
		return *v - 1;
	if (bpf_map_lookup_elem(runs_fd, &cgid, &run) == 0)
		*v = 2;
	else if (errno == ENOENT)
		*v = 1;
	else {
		custode_table_delete(memo, &cgid);
		return -errno;
	}
	return *v - 1;
}

/*
 * The pins of every run no longer registered, in one walk of the pin map
 * (the launcher leaves its run's pins to this: its teardown then costs the
 * same whatever pins other runs hold). The walk comes first and the
 * registrations are asked after it: a pin is only written for a registered
 * run, so a pin the walk saw whose run is unregistered afterwards belongs to
 * a run that ended (cgroup ids are never reused). *deleted: how many went.
 */
int custode_pins_delete_unregistered(int pins_fd, int runs_fd, size_t *deleted)
{
	struct custode_table_spec spec = {.key_size = sizeof(__u64), .val_size = 1, .slots = 64};
	struct keyset all = {.key_size = sizeof(struct custode_pin_key)};
	struct keyset gone = {.key_size = sizeof(struct custode_pin_key)};
	struct custode_table memo;
	struct bpf_map_info info;
	int err;

	*deleted = 0;
	if ((err = walk_info(pins_fd, sizeof(struct custode_pin_key), &info)) ||
	    (err = custode_table_init(&memo, &spec)))
		return err;
	err = collect_matching(pins_fd, &info, any_key, NULL, &all);
	for (size_t i = 0; i < all.n && !err; i++) {
		const struct custode_pin_key *k = (const void *)(all.keys + i * all.key_size);
		int reg = registered(runs_fd, &memo, k->run_cgid);

		if (reg < 0)
			err = reg;
		else if (!reg)
			err = keyset_add(&gone, k);
	}
	if (!err)
		err = delete_keys(pins_fd, &gone, deleted);
	custode_table_free(&memo);
	free(all.keys);
	free(gone.keys);
	return err;
}
