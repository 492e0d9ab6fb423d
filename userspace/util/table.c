// SPDX-License-Identifier: Apache-2.0
/* The one hash table: open addressing, linear probing, backward-shift deletion (util/table.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/table.h"

#define ROUND8(n) (((n) + 7) & ~(size_t)7)

uint64_t custode_hash_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = custode_hash_u64(n ^ 0x9e3779b97f4a7c15ull), w;

	for (; n >= 8; b += 8, n -= 8) {
		memcpy(&w, b, 8);
		h = custode_hash_u64(h ^ w);
	}
	if (n) {
		w = 0;
		memcpy(&w, b, n);
		h = custode_hash_u64(h ^ w);
	}
	return h;
}

static inline unsigned char *key_at(const struct custode_table *t, size_t i)
{
	return t->slot + i * t->stride;
}

static size_t home(const struct custode_table *t, const void *key)
{
	uint64_t h, w;

	if (t->spec.hash)
		h = t->spec.hash(key);
	else if (t->spec.key_size == sizeof(w)) {
		memcpy(&w, key, sizeof(w));
		h = custode_hash_u64(w);
	} else
		h = custode_hash_bytes(key, t->spec.key_size);
	return (size_t)h & (t->cap - 1);
}

/* key's slot if there (*found), else the empty slot that ends its probe. Needs cap > count. */
static size_t probe(const struct custode_table *t, const void *key, bool *found)
{
	size_t i = home(t, key);

	while (t->used[i]) {
		if (!memcmp(key_at(t, i), key, t->spec.key_size)) {
			*found = true;
			return i;
		}
		i = (i + 1) & (t->cap - 1);
	}
	*found = false;
	return i;
}

static int alloc_slots(struct custode_table *t, size_t cap)
{
	unsigned char *used = calloc(cap, 1), *slot = calloc(cap, t->stride);

	if (!used || !slot) {
		free(used);
		free(slot);
		return -ENOMEM;
	}
	t->used = used;
	t->slot = slot;
	t->cap = cap;
	return 0;
}

int custode_table_init(struct custode_table *t, const struct custode_table_spec *spec)
{
	memset(t, 0, sizeof(*t));
	if (!spec->key_size || spec->slots < 2 || (spec->slots & (spec->slots - 1)) ||
	    (spec->max && spec->max >= spec->slots) || (spec->evict && !spec->max) || spec->key_size > SIZE_MAX / 4 ||
	    spec->val_size > SIZE_MAX / 4)
		return -EINVAL;
	t->spec = *spec;
	t->stride = ROUND8(spec->key_size) + ROUND8(spec->val_size);
	t->val_off = spec->val_size ? ROUND8(spec->key_size) : 0;
	if (alloc_slots(t, spec->slots) < 0) {
		memset(t, 0, sizeof(*t));
		return -ENOMEM;
	}
	return 0;
}

void custode_table_free(struct custode_table *t)
{
	free(t->used);
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

void *custode_table_find(const struct custode_table *t, const void *key)
{
	bool found;
	size_t i;

	if (!t->count)
		return NULL;
	i = probe(t, key, &found);
	return found ? key_at(t, i) + t->val_off : NULL;
}

/* Twice the slots, every entry at its new home (probe order among equals does not matter: keys are unique). */
static int grow(struct custode_table *t)
{
	struct custode_table old = *t;

	if (old.cap > SIZE_MAX / 2 / old.stride || alloc_slots(t, old.cap * 2) < 0) {
		*t = old;
		return -ENOMEM;
	}
	for (size_t i = 0; i < old.cap; i++) {
		size_t j;
		bool found;

		if (!old.used[i])
			continue;
		j = probe(t, key_at(&old, i), &found);
		t->used[j] = 1;
		memcpy(key_at(t, j), key_at(&old, i), t->stride);
	}
	free(old.used);
	free(old.slot);
	return 0;
}

static void remove_at(struct custode_table *t, size_t i);

/* An evicting table at max: the first entry at or after key's home slot goes (there is one: max > 0). */
static void evict(struct custode_table *t, const void *key)
{
	size_t i = home(t, key);

	while (!t->used[i])
		i = (i + 1) & (t->cap - 1);
	remove_at(t, i);
}

int custode_table_insert(struct custode_table *t, const void *key, void **val)
{
	bool found;
	size_t i;

	if (!t->cap)
		return -EINVAL;
	i = probe(t, key, &found);
	if (!found) {
		if (t->spec.max) {
			if (t->count >= t->spec.max) {
				if (!t->spec.evict)
					return -ENOSPC;
				evict(t, key);
				i = probe(t, key, &found);
			}
		} else if ((t->count + 1) * 4 > t->cap * 3) {
			if (grow(t) < 0)
				return -ENOMEM;
			i = probe(t, key, &found);
		}
		t->used[i] = 1;
		memset(key_at(t, i), 0, t->stride);
		memcpy(key_at(t, i), key, t->spec.key_size);
		t->count++;
	}
	if (val)
		*val = key_at(t, i) + t->val_off;
	return !found;
}

/*
 * Free slot i, moving later slots of its cluster back into the gap where
 * their probe allows: an entry at j whose home k lies cyclically in (i, j]
 * stays, any other moves to i, and the gap goes on from j. Ends at the first
 * empty slot.
 */
static void remove_at(struct custode_table *t, size_t i)
{
	size_t mask = t->cap - 1, j = i;

	t->count--;
	for (;;) {
		t->used[i] = 0;
		for (;;) {
			size_t k;

			j = (j + 1) & mask;
			if (!t->used[j])
				return;
			k = home(t, key_at(t, j));
			if (((j - k) & mask) >= ((j - i) & mask))
				break;
		}
		memcpy(key_at(t, i), key_at(t, j), t->stride);
		t->used[i] = 1;
		i = j;
	}
}

bool custode_table_delete(struct custode_table *t, const void *key)
{
	bool found;
	size_t i;

	if (!t->count)
		return false;
	i = probe(t, key, &found);
	if (found)
		remove_at(t, i);
	return found;
}

void custode_table_clear(struct custode_table *t)
{
	if (t->cap)
		memset(t->used, 0, t->cap);
	t->count = 0;
}

/*
 * The walk starts after an empty slot and ends there: a removal moves
 * entries back only within the cluster it happens in, which ends before
 * that slot, so an entry moved is one the walk has still to look at (the
 * slot just emptied is looked at again).
 */
void custode_table_iter_init(const struct custode_table *t, struct custode_table_iter *it)
{
	size_t start = 0;

	while (start < t->cap && t->used[start])
		start++; /* found: count < cap */
	it->start = start;
	it->pos = t->cap ? (start + 1) & (t->cap - 1) : start;
	it->cur = start;
}

bool custode_table_iter_next(struct custode_table *t, struct custode_table_iter *it, const void **key, void **val)
{
	for (; it->pos != it->start; it->pos = (it->pos + 1) & (t->cap - 1)) {
		if (!t->used[it->pos])
			continue;
		it->cur = it->pos;
		it->pos = (it->pos + 1) & (t->cap - 1);
		if (key)
			*key = key_at(t, it->cur);
		if (val)
			*val = key_at(t, it->cur) + t->val_off;
		return true;
	}
	return false;
}

void custode_table_iter_remove(struct custode_table *t, struct custode_table_iter *it)
{
	if (it->cur == it->start)
		return; /* nothing visited, or removed already */
	remove_at(t, it->cur);
	it->pos = it->cur;
	it->cur = it->start;
}
