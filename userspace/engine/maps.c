// SPDX-License-Identifier: Apache-2.0
/* Pinned maps by id, meta and links (maps.h): every bpf_obj_get of custode's pins. */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "custode/abi.h"
#include "engine/maps.h"

static const char *const map_names[CUSTODE_MAP_COUNT] = {
#define CUSTODE_X_MAP(id, name) [CUSTODE_MAP_##id] = #name,
	CUSTODE_PINNED_MAPS(CUSTODE_X_MAP)
#undef CUSTODE_X_MAP
};

const char *custode_map_name(enum custode_map_id id)
{
	return (unsigned)id < CUSTODE_MAP_COUNT ? map_names[id] : NULL;
}

int custode_map_open(enum custode_map_id id)
{
	const char *name = custode_map_name(id);
	char path[PATH_MAX];

	if (!name) {
		errno = EINVAL;
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "%s/%s", CUSTODE_PIN_MAPS, name);
	return bpf_obj_get(path);
}

int custode_meta_open(void)
{
	return bpf_obj_get(CUSTODE_PIN_META);
}

int custode_meta_create(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "custode_meta", sizeof(__u32), sizeof(struct custode_meta), 1, &opts);

	if (fd < 0)
		return -errno;
	if (bpf_obj_pin(fd, CUSTODE_PIN_META) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int custode_link_open(const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", CUSTODE_PIN_LINKS, name);
	return bpf_obj_get(path);
}

/* The id of a pinned map's file name; CUSTODE_MAP_COUNT for a name that isn't one of custode's maps. */
static enum custode_map_id map_id_of(const char *name)
{
	int id;

	for (id = 0; id < CUSTODE_MAP_COUNT; id++)
		if (!strcmp(map_names[id], name))
			break;
	return (enum custode_map_id)id;
}

#define COUNT_KEY_MAX 512 /* larger than any key of custode's maps */

/* Whether custode_map_entries counts a map's entries: arrays are always full. */
static bool counted(const struct bpf_map_info *info)
{
	return info->type == BPF_MAP_TYPE_HASH || info->type == BPF_MAP_TYPE_LRU_HASH ||
	       info->type == BPF_MAP_TYPE_LPM_TRIE;
}

/* Keys of a counted map (info->key_size at most COUNT_KEY_MAX), at most limit. */
static long long count_keys(int fd, const struct bpf_map_info *info, long long limit)
{
	unsigned char key[COUNT_KEY_MAX], next[COUNT_KEY_MAX];
	void *prev = NULL;
	long long n = 0;

	while (n < limit && bpf_map_get_next_key(fd, prev, next) == 0) {
		memcpy(key, next, info->key_size);
		prev = key;
		n++;
	}
	return n;
}

void custode_map_entries(long long limit, int (*fn)(const struct custode_map_count *m, void *arg), void *arg)
{
	DIR *d = opendir(CUSTODE_PIN_MAPS);
	struct dirent *de;
	int stop = 0;

	while (!stop && d && (de = readdir(d))) {
		struct custode_map_count m = {.name = de->d_name};
		struct bpf_map_info info;
		__u32 len = sizeof(info);
		int fd;

		if (de->d_name[0] == '.')
			continue;
		fd = custode_map_open(map_id_of(de->d_name));
		memset(&info, 0, sizeof(info));
		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) < 0 || (counted(&info) && info.key_size > COUNT_KEY_MAX)) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		m.type = info.type;
		m.max_entries = info.max_entries;
		m.entries = counted(&info) ? count_keys(fd, &info, limit) : -1;
		close(fd);
		stop = fn(&m, arg);
	}
	if (d)
		closedir(d);
}
