// SPDX-License-Identifier: Apache-2.0
/*
 * util/table: the one hash table. Insert, find, delete; backward-shift
 * deletion inside and across the end of a probe cluster; a bounded table at
 * its max, and an evicting one; growth; walks that delete; clear; struct
 * keys and sets; and random operations checked against a plain array.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <criterion/criterion.h>

#include "util/table.h"

/* Hashes that make clusters on purpose: the key is its home (mod the slots), or 8 keys share one. */
static uint64_t hash_ident(const void *key)
{
	uint64_t k;

	memcpy(&k, key, sizeof(k));
	return k;
}

static uint64_t hash_by8(const void *key)
{
	uint64_t k;

	memcpy(&k, key, sizeof(k));
	return k >> 3;
}

/* xorshift64: the same sequence on every run */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void init_u64(struct custode_table *t, size_t slots, size_t max, uint64_t (*hash)(const void *))
{
	struct custode_table_spec spec = {
		.key_size = sizeof(uint64_t), .val_size = sizeof(uint64_t), .slots = slots, .max = max, .hash = hash};

	cr_assert_eq(custode_table_init(t, &spec), 0);
}

static uint64_t *find_u64(struct custode_table *t, uint64_t k)
{
	return custode_table_find(t, &k);
}

static int put_u64(struct custode_table *t, uint64_t k, uint64_t v)
{
	void *val;
	int ret = custode_table_insert(t, &k, &val);

	if (ret >= 0)
		*(uint64_t *)val = v;
	return ret;
}

Test(util_table, insert_find_delete)
{
	struct custode_table t;
	void *val;
	uint64_t k = 42;

	init_u64(&t, 16, 0, NULL);
	cr_assert_null(find_u64(&t, 42));
	cr_assert_eq(custode_table_insert(&t, &k, &val), 1, "new");
	cr_assert_eq(*(uint64_t *)val, 0, "a new value starts zeroed");
	*(uint64_t *)val = 4200;
	cr_assert_eq(custode_table_insert(&t, &k, &val), 0, "there already");
	cr_assert_eq(*(uint64_t *)val, 4200, "and its value kept");
	cr_assert_eq(custode_table_insert(&t, &k, NULL), 0, "no value wanted");
	cr_assert_eq(custode_table_count(&t), 1);
	cr_assert_eq(*find_u64(&t, 42), 4200);
	cr_assert_null(find_u64(&t, 43));
	cr_assert(custode_table_delete(&t, &k));
	cr_assert_not(custode_table_delete(&t, &k), "deleted already");
	cr_assert_null(find_u64(&t, 42));
	cr_assert_eq(custode_table_count(&t), 0);
	k = 0; /* key 0 is a key like any other */
	cr_assert_eq(custode_table_insert(&t, &k, NULL), 1);
	cr_assert_not_null(find_u64(&t, 0));
	custode_table_free(&t);
	custode_table_free(&t); /* twice: harmless */
	cr_assert_null(find_u64(&t, 0), "a freed table is empty");
}

Test(util_table, bad_specs)
{
	struct custode_table t;
	static const struct custode_table_spec bad[] = {
		{.key_size = 0, .slots = 16},                /* no key */
		{.key_size = 8, .slots = 0},                 /* no slots */
		{.key_size = 8, .slots = 1},                 /* one slot: never an empty one */
		{.key_size = 8, .slots = 12},                /* not a power of two */
		{.key_size = 8, .slots = 16, .max = 16},     /* no empty slot left when full */
		{.key_size = 8, .slots = 16, .max = 17},
		{.key_size = 8, .slots = 16, .evict = true}, /* evicting, but not bounded */
		{.key_size = SIZE_MAX, .slots = 16},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&t, 0x5a, sizeof(t));
		cr_expect_eq(custode_table_init(&t, &bad[i]), -EINVAL, "spec %zu", i);
		cr_expect_eq(t.cap, 0, "spec %zu: zeroed", i);
		cr_expect_eq(custode_table_insert(&t, &(uint64_t){1}, NULL), -EINVAL, "spec %zu: not usable", i);
		custode_table_free(&t);
	}
}

/*
 * One cluster, built by hand with the key as its home (mod 16): slots 3..9
 * hold 3, 19, 4, 5, 35, 6, 7 (19 and 35 have home 3; all but 3 sit past
 * their home). Deleting any one of them leaves every other reachable and
 * the cluster one slot shorter.
 */
Test(util_table, backward_shift_in_a_cluster)
{
	static const uint64_t keys[] = {3, 19, 4, 5, 35, 6, 7};
	const size_t n = sizeof(keys) / sizeof(keys[0]);

	for (size_t del = 0; del < n; del++) {
		struct custode_table t;

		init_u64(&t, 16, 15, hash_ident);
		for (size_t i = 0; i < n; i++)
			cr_assert_eq(put_u64(&t, keys[i], keys[i] * 10), 1);
		for (size_t i = 0; i < n; i++)
			cr_assert_eq(memcmp(t.slot + (3 + i) * t.stride, &keys[i], 8), 0, "slot %zu", 3 + i);
		cr_assert(custode_table_delete(&t, &keys[del]));
		for (size_t i = 0; i < n; i++) {
			uint64_t *v = find_u64(&t, keys[i]);

			if (i == del)
				cr_assert_null(v, "deleted %llu", (unsigned long long)keys[i]);
			else
				cr_assert(v && *v == keys[i] * 10, "after deleting %llu: %llu lost",
					  (unsigned long long)keys[del], (unsigned long long)keys[i]);
		}
		/* the cluster shrank by one: slot 3 + n - 1 is empty again */
		cr_assert_not(t.used[3 + n - 1], "deleting %llu", (unsigned long long)keys[del]);
		cr_assert_eq(custode_table_count(&t), n - 1);
		custode_table_free(&t);
	}
}

/* A cluster that runs past the last slot into the first ones: the same across the wrap. */
Test(util_table, backward_shift_across_the_end)
{
	/* homes 14, 14, 15, 14, 0, 1 in 16 slots: they fill 14, 15, 0, 1, 2, 3 */
	static const uint64_t keys[] = {14, 30, 15, 46, 16, 17};
	const size_t n = sizeof(keys) / sizeof(keys[0]);

	for (size_t del = 0; del < n; del++) {
		struct custode_table t;

		init_u64(&t, 16, 15, hash_ident);
		for (size_t i = 0; i < n; i++)
			cr_assert_eq(put_u64(&t, keys[i], ~keys[i]), 1);
		cr_assert(t.used[14] && t.used[15] && t.used[0] && t.used[1] && t.used[2] && t.used[3] && !t.used[4]);
		cr_assert(custode_table_delete(&t, &keys[del]));
		for (size_t i = 0; i < n; i++) {
			uint64_t *v = find_u64(&t, keys[i]);

			if (i == del)
				cr_assert_null(v);
			else
				cr_assert(v && *v == ~keys[i], "after deleting %llu: %llu lost",
					  (unsigned long long)keys[del], (unsigned long long)keys[i]);
		}
		cr_assert_not(t.used[3], "the cluster ends one slot earlier");
		custode_table_free(&t);
	}
}

Test(util_table, bounded_full)
{
	struct custode_table t;
	uint64_t k;
	void *val = &k;

	init_u64(&t, 8, 6, NULL);
	for (k = 100; k < 106; k++)
		cr_assert_eq(put_u64(&t, k, k), 1);
	k = 200;
	cr_assert_eq(custode_table_insert(&t, &k, &val), -ENOSPC, "a seventh key is refused");
	cr_assert_eq(val, &k, "*val untouched");
	cr_assert_eq(custode_table_count(&t), 6);
	cr_assert_eq(t.cap, 8, "a bounded table does not grow");
	for (k = 100; k < 106; k++) {
		cr_assert_eq(custode_table_insert(&t, &k, &val), 0, "a key already there is found when full");
		cr_assert_eq(*(uint64_t *)val, k);
	}
	k = 103;
	cr_assert(custode_table_delete(&t, &k));
	cr_assert_eq(put_u64(&t, 200, 2), 1, "room again after a delete");
	cr_assert_eq(put_u64(&t, 201, 2), -ENOSPC);
	cr_assert_null(find_u64(&t, 201), "a refused key is not there");
	custode_table_free(&t);
}

/*
 * An evicting table at max: the entry in the new key's home slot goes, or
 * if that is empty the first one after it (across the end); a key already
 * there evicts nothing.
 */
Test(util_table, evicting_full)
{
	struct custode_table t;
	struct custode_table_spec spec = {
		.key_size = sizeof(uint64_t), .val_size = sizeof(uint64_t), .slots = 8, .max = 4, .hash = hash_ident, .evict = true};

	cr_assert_eq(custode_table_init(&t, &spec), 0);
	for (uint64_t k = 1; k <= 4; k++)
		cr_assert_eq(put_u64(&t, k, k * 10), 1);
	cr_assert_eq(put_u64(&t, 3, 33), 0, "a key already there: nothing evicted");
	cr_assert_eq(custode_table_count(&t), 4);
	cr_assert_eq(put_u64(&t, 9, 90), 1, "home 1: 1 goes");
	cr_assert_null(find_u64(&t, 1));
	cr_assert(find_u64(&t, 9) && *find_u64(&t, 9) == 90 && t.used[1], "9 in slot 1, its value zeroed then set");
	cr_assert_eq(*find_u64(&t, 2), 20);
	cr_assert_eq(*find_u64(&t, 3), 33);
	cr_assert_eq(*find_u64(&t, 4), 40);
	cr_assert_eq(custode_table_count(&t), 4);
	cr_assert_eq(put_u64(&t, 6, 60), 1, "home 6 empty: the first entry after it, across the end (9 in slot 1)");
	cr_assert_null(find_u64(&t, 9));
	cr_assert(find_u64(&t, 6) && find_u64(&t, 2) && find_u64(&t, 3) && find_u64(&t, 4));
	cr_assert_eq(custode_table_count(&t), 4);
	/* 2, 10, 18 (home 2) in slots 2..4, 5 in 5: 26 (home 2) evicts 2, 10 and 18 move back, 26 goes to slot 4 */
	custode_table_clear(&t);
	for (uint64_t k = 2; k <= 18; k += 8)
		cr_assert_eq(put_u64(&t, k, k), 1);
	cr_assert_eq(put_u64(&t, 5, 5), 1);
	cr_assert_eq(put_u64(&t, 26, 26), 1);
	cr_assert_null(find_u64(&t, 2));
	cr_assert(find_u64(&t, 10) && find_u64(&t, 18) && find_u64(&t, 5) && find_u64(&t, 26));
	cr_assert_eq(memcmp(t.slot + 2 * t.stride, &(uint64_t){10}, 8), 0);
	cr_assert_eq(memcmp(t.slot + 4 * t.stride, &(uint64_t){26}, 8), 0);
	custode_table_free(&t);
}

/* Many more keys than max: count stays at max, the key just put is always there, every entry found. */
Test(util_table, evicting_churn)
{
	struct custode_table t;
	struct custode_table_spec spec = {
		.key_size = sizeof(uint64_t), .val_size = sizeof(uint64_t), .slots = 1024, .max = 512, .evict = true};
	struct custode_table_iter it;
	const void *key;
	void *val;
	uint64_t s = 11;
	size_t seen = 0;

	cr_assert_eq(custode_table_init(&t, &spec), 0);
	for (unsigned i = 0; i < 20000; i++) {
		uint64_t k = rnd(&s) % 5000;

		cr_assert_geq(put_u64(&t, k, k + 1), 0);
		cr_assert(find_u64(&t, k) && *find_u64(&t, k) == k + 1, "%u: %llu just put", i, (unsigned long long)k);
		cr_assert_leq(custode_table_count(&t), 512);
	}
	cr_assert_eq(custode_table_count(&t), 512);
	custode_table_iter_init(&t, &it);
	while (custode_table_iter_next(&t, &it, &key, &val)) {
		uint64_t k;

		memcpy(&k, key, sizeof(k));
		cr_assert_eq(find_u64(&t, k), val, "%llu reachable", (unsigned long long)k);
		seen++;
	}
	cr_assert_eq(seen, 512);
	custode_table_free(&t);
}

Test(util_table, grows)
{
	struct custode_table t;
	const uint64_t n = 100000;

	init_u64(&t, 2, 0, NULL);
	for (uint64_t k = 0; k < n; k++) {
		cr_assert_eq(put_u64(&t, k * 0x10001, k), 1);
		cr_assert_leq(custode_table_count(&t) * 4, t.cap * 3, "at most 3/4 full");
	}
	cr_assert_eq(custode_table_count(&t), n);
	for (uint64_t k = 0; k < n; k++) {
		uint64_t *v = find_u64(&t, k * 0x10001);

		cr_assert(v && *v == k, "%llu", (unsigned long long)k);
	}
	cr_assert_null(find_u64(&t, 1));
	custode_table_free(&t);
}

/* A walk that deletes: every entry seen exactly once, the kept ones all still there. */
static void walk_deleting(uint64_t (*hash)(const void *), size_t slots, const uint64_t *keys, size_t n)
{
	struct custode_table t;
	struct custode_table_iter it;
	const void *key;
	void *val;
	size_t seen = 0, kept;

	init_u64(&t, slots, slots - 1, hash);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(put_u64(&t, keys[i], 0), 1);
	custode_table_iter_init(&t, &it);
	while (custode_table_iter_next(&t, &it, &key, &val)) {
		uint64_t k;

		memcpy(&k, key, sizeof(k));
		cr_assert_eq(*(uint64_t *)val, 0, "%llu seen twice", (unsigned long long)k);
		*(uint64_t *)val = 1;
		seen++;
		if (k % 2 == 0) {
			custode_table_iter_remove(&t, &it);
			custode_table_iter_remove(&t, &it); /* twice: a no-op, not the next entry */
		}
	}
	cr_assert_eq(seen, n);
	for (size_t i = 0; i < n; i++) {
		uint64_t *v = find_u64(&t, keys[i]);

		if (keys[i] % 2 == 0)
			cr_assert_null(v, "%llu deleted", (unsigned long long)keys[i]);
		else
			cr_assert(v && *v == 1, "%llu kept", (unsigned long long)keys[i]);
	}
	/* a second walk that deletes the rest */
	kept = 0;
	for (size_t i = 0; i < n; i++)
		kept += keys[i] % 2;
	seen = 0;
	custode_table_iter_init(&t, &it);
	while (custode_table_iter_next(&t, &it, NULL, NULL)) {
		custode_table_iter_remove(&t, &it);
		seen++;
	}
	cr_assert_eq(seen, kept);
	cr_assert_eq(custode_table_count(&t), 0);
	custode_table_free(&t);
}

Test(util_table, walk_while_deleting)
{
	/* clusters that cross the end, every second key deleted where it sits among the others */
	static const uint64_t wrap[] = {14, 30, 15, 46, 16, 17, 62, 13, 29, 0, 1, 2, 3};
	uint64_t many[700];
	uint64_t s = 7;

	walk_deleting(hash_ident, 16, wrap, sizeof(wrap) / sizeof(wrap[0]));
	for (size_t i = 0; i < 700; i++)
		many[i] = i * 3 + 1;
	walk_deleting(hash_by8, 1024, many, 700);
	walk_deleting(NULL, 1024, many, 700);
	for (size_t i = 0; i < 700; i++)
		many[i] = rnd(&s);
	walk_deleting(hash_by8, 1024, many, 700);
}

Test(util_table, empty_walks)
{
	struct custode_table t = {0};
	struct custode_table_iter it;

	custode_table_iter_init(&t, &it);
	cr_assert_not(custode_table_iter_next(&t, &it, NULL, NULL), "a zeroed table");
	custode_table_iter_remove(&t, &it); /* nothing visited: a no-op */
	init_u64(&t, 4, 0, NULL);
	custode_table_iter_init(&t, &it);
	cr_assert_not(custode_table_iter_next(&t, &it, NULL, NULL), "an empty table");
	custode_table_free(&t);
}

Test(util_table, clear)
{
	struct custode_table t;
	struct custode_table_iter it;

	init_u64(&t, 64, 48, NULL);
	for (uint64_t k = 1; k <= 48; k++)
		cr_assert_eq(put_u64(&t, k, k), 1);
	cr_assert_eq(put_u64(&t, 49, 49), -ENOSPC);
	custode_table_clear(&t);
	cr_assert_eq(custode_table_count(&t), 0);
	for (uint64_t k = 1; k <= 48; k++)
		cr_assert_null(find_u64(&t, k));
	custode_table_iter_init(&t, &it);
	cr_assert_not(custode_table_iter_next(&t, &it, NULL, NULL));
	for (uint64_t k = 101; k <= 148; k++)
		cr_assert_eq(put_u64(&t, k, 7), 1, "all the room back");
	cr_assert_eq(*find_u64(&t, 148), 7);
	custode_table_free(&t);
}

/* A struct key with padding (zeroed, as the header asks), as the resolver's pins are keyed. */
struct pinlike {
	uint64_t cgid;
	uint8_t proto;
	uint8_t pad0;
	uint16_t port;
	uint32_t pad1;
	uint8_t addr[16];
};

static struct pinlike pinlike(uint64_t cgid, uint8_t proto, uint16_t port, uint8_t last)
{
	struct pinlike k;

	memset(&k, 0, sizeof(k));
	k.cgid = cgid;
	k.proto = proto;
	k.port = port;
	k.addr[15] = last;
	return k;
}

Test(util_table, struct_keys)
{
	struct custode_table t;
	struct custode_table_spec spec = {.key_size = sizeof(struct pinlike), .val_size = 40, .slots = 4};
	struct pinlike k;
	void *val;

	cr_assert_eq(custode_table_init(&t, &spec), 0);
	for (unsigned i = 0; i < 2000; i++) {
		k = pinlike(1000 + i % 7, i % 2 ? 6 : 17, (uint16_t)(i % 100), (uint8_t)(i / 7));
		cr_assert_eq(custode_table_insert(&t, &k, &val), 1, "%u", i);
		cr_assert_eq(((uintptr_t)val & 7), 0, "values aligned to 8");
		memset(val, (int)(i & 0xff), 40);
	}
	for (unsigned i = 0; i < 2000; i++) {
		unsigned char *v;

		k = pinlike(1000 + i % 7, i % 2 ? 6 : 17, (uint16_t)(i % 100), (uint8_t)(i / 7));
		v = custode_table_find(&t, &k);
		cr_assert(v && v[0] == (i & 0xff) && v[39] == (i & 0xff), "%u", i);
	}
	k = pinlike(1000, 17, 0, 0);
	cr_assert_not_null(custode_table_find(&t, &k));
	k.addr[0] = 1; /* one byte off */
	cr_assert_null(custode_table_find(&t, &k));
	custode_table_free(&t);
}

Test(util_table, sets_and_small_keys)
{
	struct custode_table t;
	struct custode_table_spec spec = {.key_size = sizeof(uint32_t), .slots = 16};
	uint32_t k;
	void *val;

	cr_assert_eq(custode_table_init(&t, &spec), 0);
	for (k = 0; k < 1000; k++)
		cr_assert_eq(custode_table_insert(&t, &k, NULL), 1);
	k = 500;
	cr_assert_eq(custode_table_insert(&t, &k, &val), 0);
	cr_assert_eq(memcmp(val, &k, sizeof(k)), 0, "a set's value is the stored key");
	cr_assert_not_null(custode_table_find(&t, &k));
	k = 1000;
	cr_assert_null(custode_table_find(&t, &k));
	custode_table_free(&t);
}

Test(util_table, hashes)
{
	uint8_t b[17] = {0};

	cr_assert_neq(custode_hash_u64(1), custode_hash_u64(2));
	cr_assert_neq(custode_hash_bytes(b, 8), custode_hash_bytes(b, 9), "the length counts");
	cr_assert_neq(custode_hash_bytes(b, 0), custode_hash_bytes(b, 16));
	cr_assert_eq(custode_hash_bytes(b, 17), custode_hash_bytes(b, 17));
	b[16] = 1;
	cr_assert_neq(custode_hash_bytes(b, 17), custode_hash_bytes((uint8_t[17]){0}, 17), "the tail counts");
}

/*
 * Random operations on keys 0..KEYS-1, checked after each against a plain
 * array: inserts, deletes, finds, and walks that delete about a third of
 * what they see; bounded and growing, with a good hash and a bad one.
 */
#define KEYS 600
static void random_ops(size_t slots, size_t max, uint64_t (*hash)(const void *), uint64_t seed)
{
	struct custode_table t;
	bool present[KEYS] = {0};
	uint64_t vals[KEYS] = {0};
	size_t n = 0;

	init_u64(&t, slots, max, hash);
	for (int op = 0; op < 30000; op++) {
		uint64_t r = rnd(&seed), k = (r >> 8) % KEYS;

		switch (r % 8) {
		case 0: case 1: case 2: case 3: {
			int ret = put_u64(&t, k, r);

			if (present[k])
				cr_assert_eq(ret, 0);
			else if (max && n == max)
				cr_assert_eq(ret, -ENOSPC, "op %d", op);
			else {
				cr_assert_eq(ret, 1, "op %d", op);
				present[k] = true;
				n++;
			}
			if (ret >= 0)
				vals[k] = r;
			break;
		}
		case 4: case 5:
			cr_assert_eq(custode_table_delete(&t, &k), present[k], "op %d", op);
			if (present[k])
				n--;
			present[k] = false;
			break;
		case 6: {
			uint64_t *v = find_u64(&t, k);

			cr_assert_eq(v != NULL, present[k], "op %d", op);
			if (v)
				cr_assert_eq(*v, vals[k]);
			break;
		}
		default: {
			struct custode_table_iter it;
			bool seen[KEYS] = {0};
			const void *key;
			void *val;

			if (r % 64 >= 8)
				break; /* walks are slow: one op in 64 */
			custode_table_iter_init(&t, &it);
			while (custode_table_iter_next(&t, &it, &key, &val)) {
				uint64_t wk;

				memcpy(&wk, key, sizeof(wk));
				cr_assert(wk < KEYS && present[wk] && !seen[wk], "op %d: %llu", op, (unsigned long long)wk);
				cr_assert_eq(*(uint64_t *)val, vals[wk]);
				seen[wk] = true;
				if (rnd(&seed) % 3 == 0) {
					custode_table_iter_remove(&t, &it);
					present[wk] = false;
					n--;
				}
			}
			for (size_t i = 0; i < KEYS; i++)
				cr_assert(!present[i] || seen[i], "op %d: %zu not visited", op, i);
		}
		}
		cr_assert_eq(custode_table_count(&t), n, "op %d", op);
	}
	for (uint64_t k = 0; k < KEYS; k++) {
		uint64_t *v = find_u64(&t, k);

		cr_assert_eq(v != NULL, present[k]);
		if (v)
			cr_assert_eq(*v, vals[k]);
	}
	custode_table_free(&t);
}

Test(util_table, random_against_reference)
{
	random_ops(512, 384, NULL, 1);
	random_ops(512, 384, hash_by8, 2);
	random_ops(512, 511, hash_by8, 3); /* all but one slot: the longest probes */
	random_ops(1024, 1023, hash_ident, 4);
	random_ops(2, 0, NULL, 5);
	random_ops(4, 0, hash_by8, 6);
}
