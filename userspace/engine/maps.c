// SPDX-License-Identifier: Apache-2.0
/* Pinned maps by id (maps.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>

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
