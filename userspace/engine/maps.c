// SPDX-License-Identifier: Apache-2.0
/* Pinned maps by id, meta and links (maps.h): every bpf_obj_get of custode's pins. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
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
