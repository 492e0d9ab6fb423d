/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one way to open what the engine pinned in bpffs: a map under
 * CUSTODE_PIN_MAPS by its id in include/custode/maps.h, never by a name
 * typed again; meta; a link under CUSTODE_PIN_LINKS.
 */
#ifndef CUSTODE_ENGINE_MAPS_H
#define CUSTODE_ENGINE_MAPS_H

#include <linux/types.h>

#include "custode/abi.h"
#include "custode/maps.h"

/* The engine's description (struct custode_meta): userspace's own map, pinned beside the maps and links. */
#define CUSTODE_PIN_META CUSTODE_PIN_ROOT "/meta"

/* The map's name (its BPF variable and its file in bpffs), or NULL for an id out of range. */
const char *custode_map_name(enum custode_map_id id);

/* A new fd for pinned map id; negative with errno set when it can't be opened (bpf_obj_get's convention). */
int custode_map_open(enum custode_map_id id);

/* Meta, pinned: an fd, or negative with errno set (bpf_obj_get's convention). */
int custode_meta_open(void);
/* Create meta (one zeroed struct custode_meta) and pin it: an fd, or -errno. */
int custode_meta_create(void);

/* The link pinned as CUSTODE_PIN_LINKS/<name> (bpf_obj_get's convention). */
int custode_link_open(const char *name);

/* One pinned map, as custode_map_entries counts it. */
struct custode_map_count {
	const char *name;
	__u32 type;        /* enum bpf_map_type */
	__u32 max_entries;
	long long entries; /* -1: not counted (not a hash, LRU hash or trie: arrays are always full) */
};

/*
 * Call fn for every map pinned under CUSTODE_PIN_MAPS, in the directory's
 * order, with the entries of the hash, LRU hash and trie maps counted (at
 * most `limit`). A map that can't be opened, or a hash map whose key is too
 * large to walk, is left out. Stops when fn returns non-zero. Only custode
 * may open the maps (bpf/proc.bpf.c reserves them to the custode binary).
 */
void custode_map_entries(long long limit, int (*fn)(const struct custode_map_count *m, void *arg), void *arg);

#endif
