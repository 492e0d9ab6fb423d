/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one way to open a map the engine pinned under CUSTODE_PIN_MAPS: by its
 * id in include/custode/maps.h, never by a name typed again.
 */
#ifndef CUSTODE_ENGINE_MAPS_H
#define CUSTODE_ENGINE_MAPS_H

#include "custode/maps.h"

/* The map's name (its BPF variable and its file in bpffs), or NULL for an id out of range. */
const char *custode_map_name(enum custode_map_id id);

/* A new fd for pinned map id; negative with errno set when it can't be opened (bpf_obj_get's convention). */
int custode_map_open(enum custode_map_id id);

#endif
