/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CUSTODE_EVENTS_H
#define CUSTODE_EVENTS_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "custode/event.h"

/* Name of a hook ("file_open"), or NULL. */
const char *custode_hook_name(int hook);

/*
 * Validate a raw ring-buffer record and convert it to JSON (docs/events.md).
 * boot_to_wall_ns is added to boot_ns to get wall-clock time. Returns NULL
 * for a record that is too short, of an unknown version, or inconsistent.
 */
json_t *custode_event_to_json(const void *data, size_t size, int64_t boot_to_wall_ns);
/* One line for terminals. */
int custode_event_format(const json_t *ev, char *out, size_t len);

int custode_cmd_events(int argc, char **argv);

#endif
