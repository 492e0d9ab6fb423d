// SPDX-License-Identifier: Apache-2.0
/*
 * What the resolver lets through from a hostile upstream (dnsd): rebinding
 * answers (127.0.0.2, 10.0.0.1, 169.254.169.254, 0.0.0.0, ::ffff:127.0.0.1,
 * fd00:ec2::254, 64:ff9b::a9fe:a9fe) pin nothing and reach no run; a TTL-0
 * name flipping public → private; mixed answers lose their private
 * addresses; literals granted by network.private survive; CNAME chains
 * (trusted, or each target granted), loops, a 20-hop chain; records in the
 * additional section or unrelated to the question; an HTTPS record with a
 * private ipv4hint; malformed and mismatched upstream answers; truncation
 * and the TCP retry. Each case checks both the answer the run gets and what
 * the kernel then lets it reach.
 */
#include "test_dns_fixture.h"

static const char *granting(struct dnsfix *f, const char *const *names)
{
	char egress[4096] = "";
	size_t off = 0;

	for (; *names; names++)
		off += (size_t)snprintf(egress + off, sizeof(egress) - off, "%s{\"host\":\"%s\",\"ports\":[8080]}",
					off ? "," : "", *names);
	static int n;
	char name[32];

	snprintf(name, sizeof(name), "granting%d", n++);
	return dns_policy(f, name, egress, NULL);
}

KTEST(dns_rebinding_pins_nothing)
{
	static struct ktest_result r;
	static const struct {
		const char *name, *type, *addr, *reason;
	} cases[] = {
		{"r127.test", "A", "127.0.0.2", "net.loopback"},
		{"r10.test", "A", "10.0.0.1", "net.private_address"},
		{"rmeta.test", "A", "169.254.169.254", "net.metadata"},
		{"rzero.test", "A", "0.0.0.0", "net.unspecified"},
		{"rmapped.test", "AAAA", "::ffff:127.0.0.1", "net.loopback"},
		{"rec2.test", "AAAA", "fd00:ec2::254", "net.metadata"},
		{"rnat64.test", "AAAA", "64:ff9b::a9fe:a9fe", "net.metadata"},
	};
	struct dnsfix f;
	const char *pol;

	if (!dns_setup(&f, NULL))
		return;
	pol = granting(&f, DARGS("r127.test", "r10.test", "rmeta.test", "rzero.test", "rmapped.test", "rec2.test",
				 "rnat64.test"));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ktest_proc p;
		char out[2048];
		__u64 cgid = 0;

		/* the lookup, in a run that stays alive so its pins can be counted */
		if (!ASSERT_TRUE(dns_hold(&p, pol, DARGS("query", "8.8.8.8", "53", "udp", cases[i].name, cases[i].type), out,
					  sizeof(out), &cgid),
				 cases[i].name))
			continue;
		ASSERT_STREQ(out, "from 8.8.8.8:53\nrcode REFUSED\n", cases[i].name);
		ASSERT_EQ(dns_logged_pins(&f, cases[i].name, cases[i].type), 0, cases[i].name);
		if (dns_count_pins(cgid) >= 0)
			ASSERT_EQ(dns_count_pins(cgid), 0, cases[i].name);
		dns_release(&p);
		/* and the address itself stays out of reach */
		dns_run(&r, pol, NULL, DARGS("connect", cases[i].addr, "8080"));
		ASSERT_STREQ(r.out, "EPERM\n", cases[i].addr);
		ASSERT_CONTAINS(r.err, cases[i].reason, cases[i].addr);
		ASSERT_EQ(dns_count(f.dnsd_log, cases[i].name), 1, "asked upstream once");
	}
	ASSERT_TRUE(dns_count(f.daemon_log, "\"reason\":\"dns.answer.private\"") >= 7, "each reported by the daemon");
	/* getaddrinfo sees nothing at all */
	dns_run(&r, pol, NULL, DARGS("gai", "r10.test"));
	ASSERT_TRUE(!strncmp(r.out, "EAI_", 4), "getaddrinfo gets no address");
	ASSERT_CONTAINS(r.err, "resolver: dns.answer.private", "the launcher's summary");
	dns_teardown(&f);
}

KTEST(dns_ttl0_flip_public_to_private)
{
	static struct ktest_result r;
	struct dnsfix f;
	struct ktest_proc p;
	char out[2048];
	__u64 cgid = 0;
	const char *pol;

	if (!dns_setup(&f, DARGS("--verbose")))
		return;
	pol = granting(&f, DARGS("flip.test"));
	/* one run: the first answer is public (TTL 0), the second private */
	if (!ASSERT_TRUE(dns_hold(&p, pol, DARGS("query", "8.8.8.8", "53", "udp", "flip.test", "A"), out, sizeof(out),
				  &cgid),
			 "first lookup"))
		goto out;
	ASSERT_STREQ(out, "from 8.8.8.8:53\nrcode NOERROR\nA 203.0.113.11 ttl 0\n", "public, TTL 0");
	ASSERT_EQ(dns_logged_pins(&f, "flip.test", "A"), 1, "pinned (for the clamp's minimum)");
	if (dns_count_pins(cgid) >= 0)
		ASSERT_EQ(dns_count_pins(cgid), 1, "in the engine's map");
	dns_release(&p);
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "flip.test", "A"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode REFUSED\n", "then private: refused");
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "flip.test", "A"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode REFUSED\n", "and again");
	dns_run(&r, pol, NULL, DARGS("connect", "10.0.0.1", "8080"));
	ASSERT_STREQ(r.out, "EPERM\n", "the private address is out of reach");
	ASSERT_EQ(dns_count(f.dnsd_log, "flip.test"), 3, "TTL 0: asked upstream every time, nothing cached");
	ASSERT_EQ(dns_logged_pins(&f, "flip.test", "A"), 1, "the private answers pinned nothing");
out:
	dns_teardown(&f);
}

KTEST(dns_mixed_and_literal_answers)
{
	static struct ktest_result r;
	struct dnsfix f;
	const char *pol, *lit;

	if (!dns_setup(&f, NULL))
		return;
	pol = granting(&f, DARGS("mixed.test", "private.test"));
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "mixed.test", "A"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode NOERROR\nA 203.0.113.10 ttl 300\n", "only the public address");
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "mixed.test", "AAAA"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode NOERROR\nAAAA 2001:db8::10 ttl 300\n", "only the public IPv6");
	ASSERT_CONTAINS(kt_slurp(f.daemon_log), "\"dropped\":2", "the daemon reports what it dropped");
	/* 127.0.0.1 granted as a literal by network.private: the answer keeps it, the connect works */
	lit = dns_policy(&f, "literal", "{\"host\":\"private.test\",\"ports\":[8080]}", "\"127.0.0.1/32\"");
	dns_run(&r, pol, NULL, DARGS("gai-connect", "private.test", "8080"));
	ASSERT_STREQ(r.out, "lookup failed\n", "without the literal: refused");
	dns_run(&r, lit, NULL, DARGS("gai-connect", "private.test", "8080"));
	ASSERT_STREQ(r.out, "ok 127.0.0.1:8080\n", "with the literal");
	dns_teardown(&f);
}

KTEST(dns_cname_policy)
{
	static struct ktest_result r;
	struct dnsfix f;
	const char *pol, *both;

	if (!dns_setup(&f, NULL))
		return;
	pol = granting(&f, DARGS("cname.test", "cname-denied.test", "cname-private.test", "chain3.test", "chain20.test",
				 "loop.test"));
	/* trusted targets (the default): the chain is followed, the final address pinned under the granted name */
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "cname-denied.test", "A"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode NOERROR\nCNAME evil.test ttl 300\nA 203.0.113.12 ttl 300\n",
		     "CNAME to a name the policy does not grant: followed (trusted targets)");
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "evil.test", "A"));
	ASSERT_CONTAINS(r.out, "rcode REFUSED", "the target itself is still not granted");
	dns_run(&r, pol, NULL, DARGS("gai-connect", "cname.test", "8080"));
	ASSERT_STREQ(r.out, "ok 203.0.113.11:8080\n", "connect to the chain's address");
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "cname-private.test", "A"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode REFUSED\n", "CNAME to a private address");
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "chain3.test", "A"));
	ASSERT_CONTAINS(r.out, "CNAME c3.chain3.test ttl 300\nA 203.0.113.10 ttl 300", "a 3-hop chain");
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "chain20.test", "A"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode SERVFAIL\n", "a 20-hop chain (more than 8)");
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "loop.test", "A"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode SERVFAIL\n", "a CNAME loop");
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "tcp", "loop.test", "A"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode SERVFAIL\n", "a CNAME loop, over TCP");
	dns_teardown(&f);

	/* --cname-targets granted: every hop must be granted too */
	if (!dns_setup(&f, DARGS("--cname-targets", "granted")))
		return;
	pol = granting(&f, DARGS("cname.test", "cname-denied.test"));
	both = granting(&f, DARGS("cname.test", "*.other.test"));
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "cname-denied.test", "A"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode REFUSED\n", "strict: a target that is not granted");
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "cname.test", "A"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode REFUSED\n", "strict: target.other.test is not granted");
	dns_run(&r, both, NULL, DARGS("query", "8.8.8.8", "53", "udp", "cname.test", "A"));
	ASSERT_CONTAINS(r.out, "A 203.0.113.11 ttl 300", "strict: a granted target");
	dns_teardown(&f);
}

KTEST(dns_junk_records_and_https_hints)
{
	static struct ktest_result r;
	struct dnsfix f;
	const char *pol;
	char script[1024];
	char *argv[] = {(char *)ktest_custode(), "run", "--policy", NULL, "--", "/bin/sh", "-c", script, NULL};

	if (!dns_setup(&f, NULL))
		return;
	pol = granting(&f, DARGS("additional.test", "unrelated.test", "https.test", "many.test"));
	argv[3] = (char *)pol;
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "additional.test", "A"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode NOERROR\nA 203.0.113.10 ttl 300\n",
		     "authority and additional sections dropped");
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "unrelated.test", "A"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode NOERROR\nA 203.0.113.10 ttl 300\n", "an unrelated answer record dropped");
	/* what was dropped is not pinned: in one run, look both up, then try the junk addresses */
	snprintf(script, sizeof(script),
		 "P=%s; $P gai-connect additional.test 8080; $P gai-connect unrelated.test 8080; "
		 "$P connect 203.0.113.14 8080; $P connect 198.51.100.66 8080",
		 ktest_helper("dprobe"));
	ktest_run(argv, -1, 60000, &r);
	ASSERT_STREQ(r.out, "ok 203.0.113.10:8080\nok 203.0.113.10:8080\nEPERM\nEPERM\n", "junk addresses unpinned");
	/* HTTPS: no record (its hints would bypass vetting); the A lookup works */
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "https.test", "HTTPS"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode NOERROR\n", "HTTPS answered empty");
	ASSERT_EQ(dns_count(f.dnsd_log, "https.test 65"), 0, "and not even asked upstream");
	snprintf(script, sizeof(script), "P=%s; $P gai-connect https.test 8080; $P connect 10.0.0.1 8080; $P connect 203.0.113.14 8080",
		 ktest_helper("dprobe"));
	ktest_run(argv, -1, 60000, &r);
	ASSERT_STREQ(r.out, "ok 203.0.113.10:8080\nEPERM\nEPERM\n", "the hints' addresses are out of reach");
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "https.test", "MX"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode NOERROR\n", "other types: answered empty");
	/* 40 addresses upstream: 32 kept (over UDP, 512 bytes hold fewer: TC, then TCP) */
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "tcp", "many.test", "A"));
	{
		int n = 0;
		for (const char *s = strstr(r.out, "\nA "); s; s = strstr(s + 1, "\nA "))
			n++;
		ASSERT_EQ(n, 32, "at most 32 addresses");
	}
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "many.test", "A"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode NOERROR TC\n", "too large for 512 bytes: truncated, no records");
	dns_teardown(&f);
}

KTEST(dns_malformed_upstream_answers)
{
	static struct ktest_result r;
	static const char *const bad[] = {"comploop.test", "fwdptr.test", "badrdlen.test", "overrun.test", "qd0.test",
					  "qd2.test",	   "wrongq.test",  "garbage.test",  "trailing.test", "servfail.test",
					  "wrongid.test",  "silent.test"};
	struct dnsfix f;
	const char *pol;
	char egress[4096] = "";
	size_t off = 0;

	if (!dns_setup(&f, DARGS("--upstream-timeout", "300")))
		return;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		off += (size_t)snprintf(egress + off, sizeof(egress) - off, "{\"host\":\"%s\",\"ports\":[8080]},", bad[i]);
	snprintf(egress + off, sizeof(egress) - off, "{\"host\":\"tc.test\",\"ports\":[8080]},"
						     "{\"host\":\"ok.test\",\"ports\":[8080]},{\"host\":\"nx.test\",\"ports\":[8080]}");
	pol = dns_policy(&f, "bad", egress, NULL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		long t0 = kt_ms();

		dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", bad[i], "A"));
		ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode SERVFAIL\n", bad[i]);
		ASSERT_TRUE(kt_ms() - t0 < 20000, "answered in time");
	}
	ASSERT_TRUE(dns_count(f.daemon_log, "\"reason\":\"dns.malformed\"") >= 8, "reported as malformed");
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "nx.test", "A"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode NXDOMAIN\n", "NXDOMAIN passes through");
	/* truncated over UDP: the resolver retries over TCP itself */
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "tc.test", "A"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode NOERROR\nA 203.0.113.15 ttl 300\n", "TCP retry");
	ASSERT_EQ(dns_count(f.dnsd_log, "tcp tc.test"), 1, "upstream saw the TCP query");
	dns_run(&r, pol, NULL, DARGS("gai-connect", "tc.test", "8080"));
	ASSERT_STREQ(r.out, "ok 203.0.113.15:8080\n", "and its answer is pinned");
	/* still alive and well */
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "ok.test", "A"));
	ASSERT_CONTAINS(r.out, "A 203.0.113.10", "still answering");
	ASSERT_TRUE(kill(f.daemon, 0) == 0, "daemon alive");
	dns_teardown(&f);
}

KTEST(dns_audit_mode_reports)
{
	static struct ktest_result r;
	struct dnsfix f;
	const char *pol;

	if (!dns_setup(&f, NULL))
		return;
	pol = granting(&f, DARGS("ok.test"));
	dns_run(&r, pol, DARGS("--audit"), DARGS("query", "8.8.8.8", "53", "udp", "other.test", "A"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode NOERROR\nA 203.0.113.12 ttl 300\n", "audit: resolved anyway");
	ASSERT_CONTAINS(r.err, "resolver: dns.name.denied=1 (audit", "reported");
	ASSERT_CONTAINS(kt_slurp(f.daemon_log), "\"enforced\":false", "not enforced");
	dns_teardown(&f);
}
