// SPDX-License-Identifier: Apache-2.0
/*
 * Who a run executes as (run/user.h): the answer read from /etc/passwd when
 * nsswitch.conf names "files" first is the one NSS gives, by name and by uid,
 * for every user of this host's /etc/passwd; unknown names and root are refused.
 */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <criterion/criterion.h>

#include "run/user.h"

Test(run_user, every_passwd_user_resolves_as_nss_says)
{
	struct passwd *pw;
	int n = 0;

	unsetenv("SUDO_UID");
	setpwent();
	while ((pw = getpwent())) {
		struct passwd want = *pw;
		char name[64], uid[16];
		struct custode_run_user u;
		struct custode_refusal why = {0};

		if (strlen(pw->pw_name) >= sizeof(name))
			continue;
		snprintf(name, sizeof(name), "%s", want.pw_name);
		snprintf(uid, sizeof(uid), "%u", (unsigned)want.pw_uid);
		if (want.pw_uid == 0 || want.pw_gid == 0) {
			cr_expect_lt(custode_run_user_resolve(name, &u, &why), 0, "%s: root (or group root) is refused", name);
			continue;
		}
		/* the name: getpwnam's answer */
		pw = getpwnam(name);
		cr_assert_not_null(pw);
		cr_assert_eq(custode_run_user_resolve(name, &u, &why), 0, "%s: %s", name, why.detail);
		cr_expect_eq(u.uid, pw->pw_uid, "%s: uid", name);
		cr_expect_eq(u.gid, pw->pw_gid, "%s: gid", name);
		cr_expect_str_eq(u.name, pw->pw_name);
		/* the uid: getpwuid's answer (the first entry with that uid) */
		pw = getpwuid(want.pw_uid);
		cr_assert_not_null(pw);
		cr_assert_eq(custode_run_user_resolve(uid, &u, &why), 0, "%s: %s", uid, why.detail);
		cr_expect_eq(u.uid, pw->pw_uid, "uid %s", uid);
		cr_expect_eq(u.gid, pw->pw_gid, "uid %s: gid", uid);
		cr_expect_str_eq(u.name, pw->pw_name);
		n++;
		/* getpwnam/getpwuid reset the enumeration: walk on from this entry */
		setpwent();
		for (struct passwd *q; (q = getpwent()) && strcmp(q->pw_name, name);)
			;
	}
	endpwent();
	cr_expect_gt(n, 0, "some user of /etc/passwd was checked");
}

Test(run_user, unknown_names_and_root_are_refused)
{
	struct custode_run_user u;
	struct custode_refusal why = {0};

	cr_expect_lt(custode_run_user_resolve("no-such-user-custode", &u, &why), 0);
	cr_expect_lt(custode_run_user_resolve("root", &u, &why), 0);
	cr_expect_lt(custode_run_user_resolve("0", &u, &why), 0);
	/* a uid no entry has: runs as that number, group the same number */
	cr_expect_eq(custode_run_user_resolve("54321", &u, &why), 0, "%s", why.detail);
	cr_expect_eq(u.uid, 54321);
	cr_expect_eq(u.gid, 54321);
	cr_expect_str_eq(u.name, "54321");
}
