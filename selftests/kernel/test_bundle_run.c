// SPDX-License-Identifier: Apache-2.0
/* custode run --bundle B --trust K: the verified policy is enforced; every refusal runs nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "ktest.h"

static bool sign(const char *dir, const char *name, int version, const char *out)
{
	char policy[512], cmd[2048];
	char doc[1024];

	snprintf(doc, sizeof(doc),
		 "{\"schema\":\"custode.policy/v1\",\"name\":\"%s\",\"version\":%d,\"content\":{\"network\":{\"egress\":"
		 "[{\"cidr\":\"203.0.113.0/24\",\"ports\":[8080]}]}}}",
		 name, version);
	snprintf(policy, sizeof(policy), "%s/policy-v%d.json", dir, version);
	if (!ktest_write_file(policy, doc, 0644))
		return false;
	snprintf(cmd, sizeof(cmd), "%s bundle sign --key %s/key --valid-for 1h %s > %s 2>/dev/null", ktest_custode(),
		 dir, policy, out);
	return system(cmd) == 0;
}

KTEST(bundle_run_enforces_verified_policy)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	char name[64], key[400], pub[400], b1[400], b2[400], bad[400], cmd[1400];
	char *keygen[] = {(char *)ktest_custode(), "bundle", "keygen", "--out", key, NULL};

	ktest_need_cgroup_bpf();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs") || !ASSERT_TRUE(ktest_netns(), "netns"))
		return;
	/* a fresh policy name, so the host's version floors from earlier runs don't interfere */
	snprintf(name, sizeof(name), "test/bundle-%ld-%d", (long)time(NULL), getpid());
	snprintf(key, sizeof(key), "%s/key", d.root);
	snprintf(pub, sizeof(pub), "%s/key.pub", d.root);
	snprintf(b1, sizeof(b1), "%s/b1.json", d.root);
	snprintf(b2, sizeof(b2), "%s/b2.json", d.root);
	snprintf(bad, sizeof(bad), "%s/bad.json", d.root);
	if (!ASSERT_EQ(ktest_run(keygen, -1, 30000, &r), 0, "keygen") || !ASSERT_TRUE(sign(d.root, name, 1, b1), "sign v1") ||
	    !ASSERT_TRUE(sign(d.root, name, 2, b2), "sign v2"))
		return;

	char *ok[] = {(char *)ktest_custode(), "run", "--bundle", b2, "--trust", pub, "--", (char *)ktest_tprobe(),
		      "connect", "203.0.113.10", "8080", NULL};
	char *denied[] = {(char *)ktest_custode(), "run", "--bundle", b2, "--trust", pub, "--", (char *)ktest_tprobe(),
			  "connect", "203.0.113.10", "8081", NULL};
	char *rollback[] = {(char *)ktest_custode(), "run", "--bundle", b1, "--trust", pub, "--", "/bin/echo", "RAN", NULL};
	char *tampered[] = {(char *)ktest_custode(), "run", "--bundle", bad, "--trust", pub, "--", "/bin/echo", "RAN", NULL};
	char *untrusted[] = {(char *)ktest_custode(), "run", "--bundle", b2, "--trust", "/dev/null", "--", "/bin/echo", "RAN", NULL};

	ktest_run(ok, -1, 60000, &r);
	ASSERT_STREQ(r.out, "ok\n", "the bundle's grant");
	ktest_run(denied, -1, 60000, &r);
	ASSERT_STREQ(r.out, "EPERM\n", "outside the bundle's grant");
	/* v2 was accepted: v1 is now a rollback */
	ktest_run(rollback, -1, 60000, &r);
	ASSERT_EQ(r.code, 125, "rollback refused");
	ASSERT_CONTAINS(r.err, "bundle.rollback", "reason");
	ASSERT_TRUE(strstr(r.out, "RAN") == NULL, "nothing ran");
	/* flip one payload character: the signature no longer verifies */
	snprintf(cmd, sizeof(cmd), "sed 's/\"payload\":\"e/\"payload\":\"f/' %s > %s", b2, bad);
	ASSERT_EQ(system(cmd), 0, "tamper");
	ktest_run(tampered, -1, 60000, &r);
	ASSERT_EQ(r.code, 125, "tampered refused");
	ASSERT_CONTAINS(r.err, "bundle.signature", "reason");
	ASSERT_TRUE(strstr(r.out, "RAN") == NULL, "nothing ran");
	ktest_run(untrusted, -1, 60000, &r);
	ASSERT_EQ(r.code, 125, "no usable trust key");
	ASSERT_TRUE(strstr(r.out, "RAN") == NULL, "nothing ran");
	/* leave no floor behind for this throwaway name */
	snprintf(cmd, sizeof(cmd), "rm -f /var/lib/custode/bundles/test%%bundle-*");
	system(cmd);
}
