// SPDX-License-Identifier: Apache-2.0
/*
 * custode_identity_slot (include/custode/abi.h): the slot of the
 * restricting-identity filter that the engine and the launchers both
 * compute for (dev, ino). It must stay in the map, and spread the inodes a
 * policy names (often neighbours: one directory's files, created together)
 * so that a few restrictions leave most slots at 0, where the engine skips
 * the identity lookup.
 */
#include <stdbool.h>
#include <string.h>
#include <criterion/criterion.h>

#include "custode/abi.h"

static unsigned distinct(__u64 dev, __u64 ino0, unsigned n, bool vary_dev)
{
	static bool seen[CUSTODE_IDENTITY_FILTER_SLOTS];
	unsigned count = 0;

	memset(seen, 0, sizeof(seen));
	for (unsigned i = 0; i < n; i++) {
		__u32 s = vary_dev ? custode_identity_slot(dev + i, ino0) : custode_identity_slot(dev, ino0 + i);

		cr_assert_lt(s, CUSTODE_IDENTITY_FILTER_SLOTS, "slot %u of (%llu, %llu) is outside the map", s,
			     (unsigned long long)dev, (unsigned long long)ino0 + i);
		if (!seen[s]) {
			seen[s] = true;
			count++;
		}
	}
	return count;
}

Test(identity_slot, in_the_map_for_any_dev_and_ino)
{
	static const __u64 devs[] = {0, (8u << 20) | 1, (259u << 20) | 3, ~0ull};
	static const __u64 inos[] = {0, 1, 2, 131073, 1ull << 32, ~0ull - 4096};

	for (size_t d = 0; d < sizeof(devs) / sizeof(devs[0]); d++)
		for (size_t i = 0; i < sizeof(inos) / sizeof(inos[0]); i++)
			distinct(devs[d], inos[i], 4096, false);
}

Test(identity_slot, neighbouring_inodes_spread)
{
	/* 4,096 consecutive inodes of one file system: a random hash would fill ~2,590 slots */
	cr_expect_geq(distinct((8u << 20) | 1, 100000, 4096, false), 3000);
	cr_expect_geq(distinct(0, 1, 4096, false), 3000);
	/* the same inode number on 4,096 devices (one per container overlay, say) */
	cr_expect_geq(distinct((8u << 20), 1234, 4096, true), 3000);
	/* a handful of neighbours never share a slot */
	cr_expect_eq(distinct((8u << 20) | 1, 555, 16, false), 16);
}

Test(identity_slot, a_function_of_dev_and_ino_only)
{
	cr_expect_eq(custode_identity_slot(42, 7), custode_identity_slot(42, 7));
	cr_expect_neq(custode_identity_slot(42, 7), custode_identity_slot(43, 7));
}
