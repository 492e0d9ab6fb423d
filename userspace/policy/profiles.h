/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CUSTODE_POLICY_PROFILES_H
#define CUSTODE_POLICY_PROFILES_H

#include <stddef.h>

/* Built-in profiles: the JSON documents of policies/, compiled into the binary. */
struct custode_builtin_profile {
	const char *name;
	const char *text;
	size_t len;
};

extern const struct custode_builtin_profile custode_builtin_profiles[];

const struct custode_builtin_profile *custode_profile_find(const char *name);

#endif
