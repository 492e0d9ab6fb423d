// SPDX-License-Identifier: Apache-2.0
/* A run's command never has root or capabilities (natively and in the guest). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ktest.h"

static const char *status_field(const char *text, const char *field, char *out, size_t len)
{
	const char *p = strstr(text, field);

	out[0] = 0;
	if (p)
		sscanf(p + strlen(field), " %63s", out);
	(void)len;
	return out;
}

KTEST(run_drops_root_and_capabilities)
{
	static struct ktest_result r;
	char v[64];
	char *status[] = {(char *)ktest_custode(), "run", "--profile", "net-only", "--", "/bin/cat", "/proc/self/status", NULL};
	char *asroot[] = {(char *)ktest_custode(), "run", "--profile", "net-only", "--user", "root", "--", "/bin/echo", "RAN", NULL};
	char *as0[] = {(char *)ktest_custode(), "run", "--profile", "net-only", "--user", "0", "--", "/bin/echo", "RAN", NULL};
	char *sudo[] = {"/usr/bin/env", "SUDO_UID=1000", "SUDO_GID=1000", (char *)ktest_custode(), "run", "--profile",
			"net-only", "--", "/usr/bin/id", "-u", NULL};
	char *nouser[] = {(char *)ktest_custode(), "run", "--profile", "net-only", "--user", "no-such-user", "--", "/bin/echo", "RAN", NULL};

	ktest_need_cgroup_bpf();
	ASSERT_EQ(ktest_run(status, -1, 60000, &r), 0, "run");
	ASSERT_STREQ(status_field(r.out, "Uid:", v, sizeof(v)), "65534", "root caller: the command runs as nobody");
	ASSERT_STREQ(status_field(r.out, "CapEff:", v, sizeof(v)), "0000000000000000", "no effective capabilities");
	ASSERT_STREQ(status_field(r.out, "CapPrm:", v, sizeof(v)), "0000000000000000", "no permitted capabilities");
	ASSERT_STREQ(status_field(r.out, "CapBnd:", v, sizeof(v)), "0000000000000000", "empty bounding set");
	ASSERT_STREQ(status_field(r.out, "CapAmb:", v, sizeof(v)), "0000000000000000", "no ambient capabilities");
	ASSERT_STREQ(status_field(r.out, "NoNewPrivs:", v, sizeof(v)), "1", "no_new_privs");
	ASSERT_STREQ(status_field(r.out, "Seccomp:", v, sizeof(v)), "2", "seccomp filter installed");

	ktest_run(asroot, -1, 60000, &r);
	ASSERT_EQ(r.code, 125, "--user root refused");
	ASSERT_CONTAINS(r.err, "run.root_unprotected", "reason");
	ASSERT_TRUE(strstr(r.out, "RAN") == NULL, "nothing ran");
	ASSERT_EQ(ktest_run(as0, -1, 60000, &r), 125, "--user 0 refused");
	ASSERT_EQ(ktest_run(nouser, -1, 60000, &r), 125, "unknown user refused");
	ASSERT_CONTAINS(r.err, "run.user", "reason");
	if (access("/usr/bin/id", X_OK) == 0) {
		ASSERT_EQ(ktest_run(sudo, -1, 60000, &r), 0, "through sudo");
		ASSERT_STREQ(r.out, "1000\n", "the sudo caller's uid");
	}
}
