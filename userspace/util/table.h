/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one hash table of userspace: fixed-size keys and values copied into
 * its slots, open addressing with linear probing, deletion by backward shift
 * (no tombstones: every entry stays reachable from its home slot through
 * used slots only, and a probe ends at the first empty slot).
 *
 * Three shapes, chosen at init:
 *   growing  (max 0): the slots double when an insert would fill more than
 *            3/4 of them; the only limit is memory.
 *   bounded  (max > 0): the slots never change; an insert past max entries
 *            is refused with -ENOSPC (what the caller does then is its
 *            policy: the daemon's reconcile table reports as the kernel
 *            says). max < slots, so a probe always meets an empty slot;
 *            a max of 3/4 of the slots keeps probes short.
 *   evicting (max > 0, evict): bounded, and a cache: an insert past max
 *            entries first deletes the entry in the new key's home slot,
 *            or if that is empty the first entry after it. What is
 *            forgotten is chosen by hash, not by age (the daemon's known
 *            runs).
 *
 * Cost: find, insert and delete are O(1) expected, a probe's length growing
 * with the fill (at 3/4 full, 2.5 slots on average for a hit, 8.5 for a
 * miss); a delete also rehashes the keys it moves back. A growth rehashes
 * every entry (O(n), amortized O(1) per insert); a walk and a clear are
 * O(slots), and a grown table does not shrink. No allocation per entry: one
 * block for the slots, replaced when it grows.
 *
 * Keys are compared with memcmp: a struct key's padding must be zeroed. The
 * default hash mixes a key of 8 bytes with custode_hash_u64() and any other
 * with custode_hash_bytes(); a table may bring its own (spec.hash). Values
 * are aligned to 8 bytes and start zeroed. A pointer into the table (a
 * value, a walk's key) stays valid until the next insert, delete or clear:
 * an entry whose address is held elsewhere is stored as a pointer to it.
 *
 * Not thread-safe; no locking. Library code: nothing here logs.
 */
#ifndef CUSTODE_UTIL_TABLE_H
#define CUSTODE_UTIL_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct custode_table_spec {
	size_t key_size; /* > 0 */
	size_t val_size; /* 0: a set (a value pointer is then the stored key) */
	size_t slots;    /* a power of two >= 2: the slots to start with (growing), or for good (bounded) */
	size_t max;      /* 0: growing; else bounded: at most max entries, max < slots */
	uint64_t (*hash)(const void *key); /* NULL: the default above; its low bits pick the home slot */
	bool evict;      /* bounded only: an insert at max evicts an entry (above) instead of failing */
};

struct custode_table {
	struct custode_table_spec spec;
	size_t stride;  /* bytes per slot: the key, then the value, each rounded up to 8 */
	size_t val_off; /* the value's offset in a slot */
	size_t cap;     /* slots, a power of two (0: not initialised, or freed) */
	size_t count;   /* entries */
	unsigned char *used; /* cap flags */
	unsigned char *slot; /* cap * stride bytes */
};

/*
 * A walk over every entry, in slot order from just after an empty slot.
 * Each entry present when the walk starts, and not removed before its turn,
 * is visited exactly once. While walking, the one change allowed is
 * custode_table_iter_remove() of the entry just visited (backward shift
 * moves only entries of the walk's current cluster, none it has passed).
 */
struct custode_table_iter {
	size_t start; /* an empty slot: where the walk ends */
	size_t pos;   /* the next slot to look at */
	size_t cur;   /* the slot of the entry last visited */
};

/* 0, -EINVAL (a spec as above it is not), -ENOMEM. On failure t is zeroed (free is harmless). */
int custode_table_init(struct custode_table *t, const struct custode_table_spec *spec);
/* Frees the slots; t is then as zeroed (empty, to be initialised again before use). */
void custode_table_free(struct custode_table *t);

/* The value of key, NULL if absent. */
void *custode_table_find(const struct custode_table *t, const void *key);
/*
 * Get or insert: *val (if not NULL) gets key's value. 1: inserted (value
 * zeroed; in an evicting table at max, after one entry went), 0: already
 * there, -ENOSPC: a bounded table at max (not evicting), -ENOMEM: a
 * growing table that could not grow. *val is untouched on failure. A key
 * already there is found even in a full table.
 */
int custode_table_insert(struct custode_table *t, const void *key, void **val);
/* Delete key's entry: true if there was one. */
bool custode_table_delete(struct custode_table *t, const void *key);
/* Delete every entry; the slots stay. */
void custode_table_clear(struct custode_table *t);

static inline size_t custode_table_count(const struct custode_table *t)
{
	return t->count;
}

void custode_table_iter_init(const struct custode_table *t, struct custode_table_iter *it);
/* The next entry: its key and value (either pointer may be NULL). false: the walk is over. */
bool custode_table_iter_next(struct custode_table *t, struct custode_table_iter *it, const void **key, void **val);
/* Delete the entry the last custode_table_iter_next() gave; the walk goes on with the next one. */
void custode_table_iter_remove(struct custode_table *t, struct custode_table_iter *it);

/* The 64-bit finalizer of SplitMix64 (Stafford's Mix13): every input bit moves every output bit. */
static inline uint64_t custode_hash_u64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* n bytes, 8 at a time through custode_hash_u64(), the length in the seed. Not keyed: no defence against chosen collisions. */
uint64_t custode_hash_bytes(const void *p, size_t n);

#endif
