// SPDX-License-Identifier: Apache-2.0
#include <string.h>

#include "policy/profiles.h"

const struct custode_builtin_profile *custode_profile_find(const char *name)
{
	for (const struct custode_builtin_profile *p = custode_builtin_profiles; p->name; p++)
		if (strcmp(p->name, name) == 0)
			return p;
	return NULL;
}
