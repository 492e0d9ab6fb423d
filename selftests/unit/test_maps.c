// SPDX-License-Identifier: Apache-2.0
/*
 * include/custode/maps.h against the built BPF objects: every map an object
 * pins by name is listed there, and every listed name is pinned by some
 * object. The objects are opened, not loaded (no kernel needed), from the
 * bytes embedded in the binary — the very objects the engine loads.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <criterion/criterion.h>
#include <bpf/libbpf.h>

#include "custode/abi.h"
#include "engine/maps.h"

#include "file.skel.h"
#include "net.skel.h"
#include "proc.skel.h"

typedef const void *(*elf_bytes_fn)(size_t *sz);

static const struct {
	const char *name;
	elf_bytes_fn bytes;
} objects[] = {{"file", file_bpf__elf_bytes}, {"net", net_bpf__elf_bytes}, {"proc", proc_bpf__elf_bytes}};

static int listed(const char *name)
{
	for (int i = 0; i < CUSTODE_MAP_COUNT; i++)
		if (strcmp(custode_map_name((enum custode_map_id)i), name) == 0)
			return i;
	return -1;
}

Test(maps, names_are_listed_once)
{
	for (int i = 0; i < CUSTODE_MAP_COUNT; i++) {
		const char *n = custode_map_name((enum custode_map_id)i);

		cr_assert_not_null(n, "id %d has no name", i);
		cr_assert_eq(strncmp(n, "custode_", 8), 0, "%s: custode's objects are named custode_*", n);
		cr_assert_eq(listed(n), i, "%s listed twice", n);
	}
	cr_assert_null(custode_map_name(CUSTODE_MAP_COUNT));
	errno = 0;
	cr_assert_lt(custode_map_open(CUSTODE_MAP_COUNT), 0);
	cr_assert_eq(errno, EINVAL);
}

Test(maps, list_matches_the_bpf_objects)
{
	bool pinned[CUSTODE_MAP_COUNT] = {false};
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = CUSTODE_PIN_MAPS);

	for (size_t o = 0; o < sizeof(objects) / sizeof(objects[0]); o++) {
		size_t sz = 0;
		const void *bytes = objects[o].bytes(&sz);
		struct bpf_object *obj = bpf_object__open_mem(bytes, sz, &opts);
		struct bpf_map *map;

		cr_assert_not_null(obj, "%s object opens: %s", objects[o].name, strerror(errno));
		bpf_object__for_each_map(map, obj) {
			const char *name = bpf_map__name(map);
			const char *pin = bpf_map__pin_path(map);
			char want[256];
			int id;

			if (!pin)
				continue; /* not pinned: the object's own */
			id = listed(name);
			cr_assert_geq(id, 0, "%s object pins %s, which include/custode/maps.h doesn't list", objects[o].name,
				      name);
			snprintf(want, sizeof(want), "%s/%s", CUSTODE_PIN_MAPS, name);
			cr_assert_str_eq(pin, want, "%s is pinned where custode_map_open looks", name);
			pinned[id] = true;
		}
		bpf_object__close(obj);
	}
	for (int i = 0; i < CUSTODE_MAP_COUNT; i++)
		cr_expect(pinned[i], "%s is listed but no object pins it", custode_map_name((enum custode_map_id)i));
}

/*
 * The decision table (include/custode/abi.h): what the file object declares
 * is what userspace reads (engine status) — one array of the ABI's slots.
 */
Test(maps, decision_table_shape)
{
	size_t sz;
	const void *bytes = file_bpf__elf_bytes(&sz);
	struct bpf_object *obj = bpf_object__open_mem(bytes, sz, NULL);
	struct bpf_map *m;

	cr_assert_not_null(obj);
	m = bpf_object__find_map_by_name(obj, "custode_decisions");
	cr_assert_not_null(m);
	cr_expect_eq(bpf_map__type(m), BPF_MAP_TYPE_ARRAY);
	cr_expect_eq(bpf_map__max_entries(m), CUSTODE_DECISION_SLOTS);
	cr_expect_eq(bpf_map__key_size(m), sizeof(__u32));
	cr_expect_eq(bpf_map__value_size(m), sizeof(struct custode_decision));
	bpf_object__close(obj);
}
