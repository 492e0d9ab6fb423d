// SPDX-License-Identifier: Apache-2.0
/*
 * The built-in profiles' content digests computed at build time
 * (tools/gen/profile-digest.c) are the ones the launcher would compute, one
 * per profile, and custode_source_profile hands them out.
 */
#include <string.h>
#include <criterion/criterion.h>

#include "bundle/source.h"
#include "policy/profiles.h"

Test(profile_digest, table_matches_the_runtime_digest)
{
	size_t n = 0;

	for (const struct custode_builtin_profile *p = custode_builtin_profiles; p->name; p++) {
		const struct custode_profile_digest *d;
		char want[80];

		custode_policy_content_digest(p->text, p->len, want);
		cr_assert(strncmp(want, "sha256:", 7) == 0, "%s: runtime digest \"%s\"", p->name, want);
		for (d = custode_profile_digests; d->name && strcmp(d->name, p->name); d++)
			;
		cr_assert_not_null(d->name, "no build-time digest for built-in profile %s", p->name);
		cr_assert_str_eq(d->digest, want, "%s", p->name);
		n++;
	}
	cr_assert_geq(n, 3);
}

Test(profile_digest, source_profile_gives_it)
{
	struct custode_resolved_policy r;
	struct custode_refusal why = {0};
	char want[80];
	const struct custode_builtin_profile *p = custode_profile_find("read");

	cr_assert_not_null(p);
	memset(&r, 0, sizeof(r));
	cr_assert_eq(custode_source_profile("read", &r, &why), 0, "%s", why.detail);
	custode_policy_content_digest(p->text, p->len, want);
	cr_assert_str_eq(r.digest, want);
	custode_policy_free(r.p);
}
