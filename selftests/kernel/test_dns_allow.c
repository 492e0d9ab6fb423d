// SPDX-License-Identifier: Apache-2.0
/* custode run --allow HOST:PORT: a host grant through the resolver, like a policy's host entry. */
#include "test_dns_fixture.h"

KTEST(dns_allow_flag_grants_a_host)
{
	static struct ktest_result r;
	struct dnsfix f;
	const char *pol;

	if (!dns_setup(&f, NULL))
		return;
	pol = dns_policy(&f, "allow-flag", "", NULL); /* a network section that grants nothing itself */
	dns_run(&r, pol, NULL, DARGS("gai-connect", "ok.test", "8080"));
	ASSERT_CONTAINS(r.out, "lookup failed", "control: without the grant the resolver refuses the name");
	dns_run(&r, pol, DARGS("--allow", "ok.test:8080"), DARGS("gai-connect", "ok.test", "8080"));
	ASSERT_STREQ(r.out, "ok 203.0.113.10:8080\n", "--allow ok.test:8080: lookup, pin, connect");
	dns_run(&r, pol, DARGS("--allow", "OK.TEST:8080"), DARGS("gai-connect", "ok.test", "8081"));
	ASSERT_STREQ(r.out, "EPERM 203.0.113.10:8081\n", "only the granted port (and the name is case-insensitive)");
	dns_run(&r, pol, DARGS("--allow", "ok.test:8080"), DARGS("gai-connect", "other.test", "8080"));
	ASSERT_TRUE(strncmp(r.out, "ok", 2) != 0, "another name stays refused");
	dns_teardown(&f);
}
