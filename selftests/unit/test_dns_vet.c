// SPDX-License-Identifier: Apache-2.0
/*
 * Vetting upstream answers (userspace/dns/vet.c): only the question's CNAME
 * chain and the A/AAAA records of its last name survive; special addresses
 * are dropped (rebinding to 127.0.0.2, 10.0.0.1, 169.254.169.254, 0.0.0.0,
 * ::ffff:127.0.0.1, fd00:ec2::254, 64:ff9b::a9fe:a9fe) unless granted;
 * unrelated and additional records never count; chains are bounded, loops
 * refused; strict mode needs every CNAME target granted; answers must match
 * the question.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <criterion/criterion.h>

#include "custode/addr.h"
#include "custode/reasons.h"
#include "dns/vet.h"
#include "dns/wire.h"
#include "test_dns_build.h"

static struct tmsg m;
static struct custode_dns_msg d;
static struct custode_dns_vetted v;

static struct custode_dns_name nm(const char *s)
{
	struct custode_dns_name n;

	cr_assert_eq(custode_dns_name_from_text(s, &n), 0, "%s", s);
	return n;
}

static void vet(const char *qname, unsigned qtype, const struct custode_dns_vet_opts *o)
{
	struct custode_dns_name q = nm(qname);
	static const struct custode_dns_vet_opts none;

	cr_assert_eq(custode_dns_parse(m.b, m.n, &d), 0, "test message parses");
	custode_dns_vet(&q, (uint16_t)qtype, &d, o ? o : &none, &v);
}

static void answer(const char *qname, unsigned qtype, unsigned an, unsigned ar)
{
	t_header(&m, 1, 0x8180, 1, an, 0, ar);
	t_question(&m, qname, qtype);
}

Test(dns_vet, plain_answer)
{
	answer("ok.test", 1, 2, 0);
	t_a(&m, NULL, "203.0.113.10", 300);
	t_a(&m, NULL, "203.0.113.11", 60);
	vet("ok.test", 1, NULL);
	cr_assert_eq(v.reason, 0);
	cr_assert_eq(v.rcode, CUSTODE_DNS_NOERROR);
	cr_assert_eq(v.n_addrs, 2);
	cr_assert_eq(v.ttl, 60, "least TTL");
	cr_assert_eq(v.n_chain, 1);
	cr_assert_eq(v.addrs[1][15], 11);
}

static const struct {
	const char *addr;
	unsigned type;
	int cls;
} rebinding[] = {
	{"127.0.0.2", 1, CUSTODE_ADDR_LOOPBACK},
	{"10.0.0.1", 1, CUSTODE_ADDR_PRIVATE},
	{"169.254.169.254", 1, CUSTODE_ADDR_METADATA},
	{"0.0.0.0", 1, CUSTODE_ADDR_UNSPECIFIED},
	{"::ffff:127.0.0.1", 28, CUSTODE_ADDR_LOOPBACK},
	{"fd00:ec2::254", 28, CUSTODE_ADDR_METADATA},
	{"64:ff9b::a9fe:a9fe", 28, CUSTODE_ADDR_METADATA},
	{"::1", 28, CUSTODE_ADDR_LOOPBACK},
	{"fe80::1", 28, CUSTODE_ADDR_LINK_LOCAL},
	{"2002:a9fe:a9fe::", 28, CUSTODE_ADDR_METADATA},
};

Test(dns_vet, rebinding_answers_are_denied)
{
	for (size_t i = 0; i < sizeof(rebinding) / sizeof(rebinding[0]); i++) {
		answer("ok.test", rebinding[i].type, 1, 0);
		if (rebinding[i].type == 1)
			t_a(&m, NULL, rebinding[i].addr, 300);
		else
			t_aaaa(&m, NULL, rebinding[i].addr, 300);
		vet("ok.test", rebinding[i].type, NULL);
		cr_assert_eq(v.reason, CUSTODE_REASON_DNS_ANSWER_PRIVATE, "%s", rebinding[i].addr);
		cr_assert(v.deny, "%s", rebinding[i].addr);
		cr_assert_eq(v.n_addrs, 0, "%s", rebinding[i].addr);
		cr_assert_eq(v.dropped, 1);
		cr_assert_eq(v.first_dropped_class, rebinding[i].cls, "%s", rebinding[i].addr);
	}
}

Test(dns_vet, mixed_answers_lose_the_private_ones)
{
	answer("mixed.test", 1, 3, 0);
	t_a(&m, NULL, "10.0.0.1", 300);
	t_a(&m, NULL, "203.0.113.10", 300);
	t_a(&m, NULL, "127.0.0.1", 300);
	vet("mixed.test", 1, NULL);
	cr_assert_eq(v.reason, 0);
	cr_assert_eq(v.n_addrs, 1);
	cr_assert_eq(v.addrs[0][12], 203);
	cr_assert_eq(v.dropped, 2);
}

static bool grant_10_0_0_1(void *ctx, const uint8_t addr[16])
{
	(void)ctx;
	return addr[10] == 0xff && addr[12] == 10 && addr[13] == 0 && addr[14] == 0 && addr[15] == 1;
}

Test(dns_vet, granted_literal_is_kept)
{
	struct custode_dns_vet_opts o = {.granted = grant_10_0_0_1};

	answer("mixed.test", 1, 2, 0);
	t_a(&m, NULL, "10.0.0.1", 300);
	t_a(&m, NULL, "10.0.0.2", 300);
	vet("mixed.test", 1, &o);
	cr_assert_eq(v.n_addrs, 1);
	cr_assert_eq(v.addrs[0][15], 1);
	cr_assert_eq(v.dropped, 1);
}

/* the host's own addresses (198.51.100.1 here, and the private 10.0.0.1) */
static bool host_198_51_100_1(void *ctx, const uint8_t addr[16])
{
	(void)ctx;
	return addr[10] == 0xff && ((addr[12] == 198 && addr[13] == 51 && addr[14] == 100 && addr[15] == 1) ||
				    (addr[12] == 10 && addr[13] == 0 && addr[14] == 0 && addr[15] == 1));
}

Test(dns_vet, host_addresses_are_dropped_unless_granted)
{
	struct custode_dns_vet_opts o = {.host = host_198_51_100_1};

	answer("rhost.test", 1, 2, 0);
	t_a(&m, NULL, "198.51.100.1", 300);
	t_a(&m, NULL, "203.0.113.10", 300);
	vet("rhost.test", 1, &o);
	cr_assert_eq(v.reason, 0);
	cr_assert_eq(v.n_addrs, 1);
	cr_assert_eq(v.addrs[0][12], 203);
	cr_assert_eq(v.dropped, 1);
	cr_assert_eq(v.first_dropped_class, CUSTODE_ADDR_HOST);

	answer("rhost.test", 1, 1, 0);
	t_a(&m, NULL, "198.51.100.1", 300);
	vet("rhost.test", 1, &o);
	cr_assert_eq(v.reason, CUSTODE_REASON_DNS_ANSWER_PRIVATE);
	cr_assert_eq(v.n_addrs, 0);
	cr_assert(strstr(v.detail, "net.host_address") != NULL, "%s", v.detail);

	/* a private address of the host granted by network.private stays */
	o.granted = grant_10_0_0_1;
	answer("rhost.test", 1, 1, 0);
	t_a(&m, NULL, "10.0.0.1", 300);
	vet("rhost.test", 1, &o);
	cr_assert_eq(v.n_addrs, 1);
}

Test(dns_vet, additional_authority_and_unrelated_records_never_count)
{
	/* answer: the name's A, an unrelated A; authority: NS; additional: A records of the name and another */
	t_header(&m, 1, 0x8180, 1, 2, 1, 2);
	t_question(&m, "ok.test", 1);
	t_a(&m, NULL, "203.0.113.10", 300);
	t_a(&m, "other.test", "203.0.113.14", 300);
	t_name(&m, "test");
	t_u16(&m, 2);
	t_u16(&m, 1);
	t_u32(&m, 300);
	t_u16(&m, 9);
	t_name(&m, "ns.test");
	t_a(&m, NULL, "203.0.113.15", 300);
	t_a(&m, "ns.test", "198.51.100.66", 300);
	vet("ok.test", 1, NULL);
	cr_assert_eq(v.n_addrs, 1);
	cr_assert_eq(v.addrs[0][15], 10);
}

Test(dns_vet, wrong_type_and_class_ignored)
{
	answer("ok.test", 28, 2, 0);
	t_a(&m, NULL, "203.0.113.10", 300); /* an A record in an AAAA answer */
	t_rr_head(&m, NULL, 28, 300, 16);
	t_put(&m, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x10", 16);
	m.b[m.n - 16 - 8] = 0;
	m.b[m.n - 16 - 7] = 3; /* class CH */
	vet("ok.test", 28, NULL);
	cr_assert_eq(v.reason, 0);
	cr_assert_eq(v.n_addrs, 0, "nothing of type AAAA in class IN: NODATA");
	cr_assert_eq(v.rcode, CUSTODE_DNS_NOERROR);
}

Test(dns_vet, cname_chain_followed)
{
	answer("www.ok.test", 1, 3, 0);
	t_cname(&m, NULL, "edge.cdn.test", 100);
	t_cname(&m, "edge.cdn.test", "e1.cdn.test", 50);
	t_a(&m, "e1.cdn.test", "203.0.113.10", 200);
	vet("www.ok.test", 1, NULL);
	cr_assert_eq(v.reason, 0);
	cr_assert_eq(v.n_chain, 3);
	cr_assert_str_eq(v.chain[2].text, "e1.cdn.test");
	cr_assert_eq(v.n_addrs, 1);
	cr_assert_eq(v.ttl, 50);
}

Test(dns_vet, address_of_an_intermediate_name_is_not_used)
{
	answer("www.ok.test", 1, 3, 0);
	t_cname(&m, NULL, "edge.cdn.test", 100);
	t_a(&m, NULL, "203.0.113.10", 100); /* next to a CNAME: not the chain's end */
	t_a(&m, "edge.cdn.test", "203.0.113.11", 100);
	vet("www.ok.test", 1, NULL);
	cr_assert_eq(v.n_addrs, 1);
	cr_assert_eq(v.addrs[0][15], 11);
}

Test(dns_vet, chain_limits)
{
	char owner[64], target[64];

	for (int hops = 8; hops <= 20; hops += 12) {
		answer("chain.test", 1, (unsigned)hops + 1, 0);
		snprintf(owner, sizeof(owner), "chain.test");
		for (int i = 1; i <= hops; i++) {
			snprintf(target, sizeof(target), "c%d.chain.test", i);
			t_cname(&m, i == 1 ? NULL : owner, target, 300);
			snprintf(owner, sizeof(owner), "%s", target);
		}
		t_a(&m, owner, "203.0.113.10", 300);
		vet("chain.test", 1, NULL);
		if (hops == 8) {
			cr_assert_eq(v.reason, 0, "8 hops are followed");
			cr_assert_eq(v.n_addrs, 1);
		} else {
			cr_assert_eq(v.reason, CUSTODE_REASON_DNS_UPSTREAM, "20 hops are refused");
			cr_assert_eq(v.rcode, CUSTODE_DNS_SERVFAIL);
			cr_assert_eq(v.n_addrs, 0);
		}
	}
}

Test(dns_vet, cname_loop_refused)
{
	answer("loop.test", 1, 2, 0);
	t_cname(&m, NULL, "loop2.test", 300);
	t_cname(&m, "loop2.test", "loop.test", 300);
	vet("loop.test", 1, NULL);
	cr_assert_eq(v.reason, CUSTODE_REASON_DNS_UPSTREAM);
	cr_assert(strstr(v.detail, "loop") != NULL, "%s", v.detail);
	cr_assert_eq(v.n_addrs, 0);

	answer("self.test", 1, 1, 0);
	t_cname(&m, NULL, "self.test", 300);
	vet("self.test", 1, NULL);
	cr_assert_eq(v.reason, CUSTODE_REASON_DNS_UPSTREAM);
}

Test(dns_vet, conflicting_cnames_refused)
{
	answer("ok.test", 1, 3, 0);
	t_cname(&m, NULL, "a.test", 300);
	t_cname(&m, NULL, "b.test", 300);
	t_a(&m, "a.test", "203.0.113.10", 300);
	vet("ok.test", 1, NULL);
	cr_assert_eq(v.reason, CUSTODE_REASON_DNS_MALFORMED);
}

static bool only_cdn(void *ctx, const struct custode_dns_name *n)
{
	(void)ctx;
	return !strcmp(n->text, "edge.cdn.test");
}

Test(dns_vet, strict_cname_targets)
{
	struct custode_dns_vet_opts o = {.cname_strict = true, .name_ok = only_cdn};

	answer("www.ok.test", 1, 2, 0);
	t_cname(&m, NULL, "edge.cdn.test", 300);
	t_a(&m, "edge.cdn.test", "203.0.113.10", 300);
	vet("www.ok.test", 1, &o);
	cr_assert_eq(v.reason, 0, "a granted target");
	cr_assert_eq(v.n_addrs, 1);

	answer("www.ok.test", 1, 2, 0);
	t_cname(&m, NULL, "evil.test", 300);
	t_a(&m, "evil.test", "203.0.113.12", 300);
	vet("www.ok.test", 1, &o);
	cr_assert_eq(v.reason, CUSTODE_REASON_DNS_NAME_DENIED, "a target that is not granted");
	cr_assert(v.deny);
	cr_assert_eq(v.n_addrs, 0);

	/* trusted mode (the default) follows it */
	vet("www.ok.test", 1, NULL);
	cr_assert_eq(v.reason, 0);
	cr_assert_eq(v.n_addrs, 1);
}

Test(dns_vet, cname_to_private_answer)
{
	answer("www.ok.test", 1, 2, 0);
	t_cname(&m, NULL, "inside.corp.test", 300);
	t_a(&m, "inside.corp.test", "10.0.0.1", 300);
	vet("www.ok.test", 1, NULL);
	cr_assert_eq(v.reason, CUSTODE_REASON_DNS_ANSWER_PRIVATE);
	cr_assert_eq(v.n_addrs, 0);
}

Test(dns_vet, rcodes)
{
	t_header(&m, 1, 0x8183, 1, 1, 0, 0);
	t_question(&m, "nx.test", 1);
	t_cname(&m, NULL, "x.test", 300);
	vet("nx.test", 1, NULL);
	cr_assert_eq(v.rcode, CUSTODE_DNS_NXDOMAIN);
	cr_assert_eq(v.reason, 0);
	cr_assert_eq(v.n_addrs, 0);

	t_header(&m, 1, 0x8182, 1, 0, 0, 0);
	t_question(&m, "sf.test", 1);
	vet("sf.test", 1, NULL);
	cr_assert_eq(v.rcode, CUSTODE_DNS_SERVFAIL);
	cr_assert_eq(v.reason, CUSTODE_REASON_DNS_UPSTREAM);
	cr_assert_not(v.deny);

	t_header(&m, 1, 0x8185, 1, 1, 0, 0); /* REFUSED with an answer attached: still refused */
	t_question(&m, "r.test", 1);
	t_a(&m, NULL, "203.0.113.10", 300);
	vet("r.test", 1, NULL);
	cr_assert_eq(v.reason, CUSTODE_REASON_DNS_UPSTREAM);
	cr_assert_eq(v.n_addrs, 0);
}

Test(dns_vet, ttls)
{
	answer("ok.test", 1, 2, 0);
	t_a(&m, NULL, "203.0.113.10", 0x80000000u);
	t_a(&m, NULL, "203.0.113.11", 500);
	vet("ok.test", 1, NULL);
	cr_assert_eq(v.ttl, 0, "a TTL with the top bit set is 0 (RFC 2181)");

	answer("ok.test", 1, 1, 0);
	t_a(&m, NULL, "203.0.113.10", 0);
	vet("ok.test", 1, NULL);
	cr_assert_eq(v.ttl, 0);
	cr_assert_eq(v.n_addrs, 1);
}

Test(dns_vet, duplicates_and_cap)
{
	answer("many.test", 1, 40, 0);
	for (int i = 0; i < 40; i++) {
		char a[32];
		snprintf(a, sizeof(a), "203.0.113.%d", i % 36);
		t_a(&m, NULL, a, 300);
	}
	vet("many.test", 1, NULL);
	cr_assert_eq(v.n_addrs, CUSTODE_DNS_MAX_ADDRS);
	for (size_t i = 0; i < v.n_addrs; i++)
		for (size_t j = i + 1; j < v.n_addrs; j++)
			cr_assert_neq(memcmp(v.addrs[i], v.addrs[j], 16), 0);
}

Test(dns_vet, answers_must_match_the_question)
{
	struct custode_dns_name q = nm("ok.test");

	t_header(&m, 0x1111, 0x8180, 1, 0, 0, 0);
	t_question(&m, "OK.Test", 1);
	cr_assert_eq(custode_dns_parse(m.b, m.n, &d), 0);
	cr_assert(custode_dns_answers(&d, 0x1111, &q, 1), "case-insensitive");
	cr_assert_not(custode_dns_answers(&d, 0x1112, &q, 1), "other id");
	cr_assert_not(custode_dns_answers(&d, 0x1111, &q, 28), "other type");
	q = nm("ok2.test");
	cr_assert_not(custode_dns_answers(&d, 0x1111, &q, 1), "other name");
	q = nm("ok.test");
	m.b[2] &= 0x7f; /* QR clear: a query, not an answer */
	cr_assert_eq(custode_dns_parse(m.b, m.n, &d), 0);
	cr_assert_not(custode_dns_answers(&d, 0x1111, &q, 1));
	m.b[2] |= 0x80 | 0x10; /* opcode 2 */
	cr_assert_eq(custode_dns_parse(m.b, m.n, &d), 0);
	cr_assert_not(custode_dns_answers(&d, 0x1111, &q, 1));
}
