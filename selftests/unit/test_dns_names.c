// SPDX-License-Identifier: Apache-2.0
/*
 * A run's name grants (userspace/dns/names.c) and how policy host entries
 * become them (userspace/policy/net.c): exact and "*." matching, the name
 * tricks (allowed.com.evil.net, evilallowed.com, apex vs wildcard, case,
 * trailing dots, over-long names), port unions, and the strict names file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "dns/names.h"
#include "dns/wire.h"
#include "policy/net.h"
#include "policy/policy.h"

#define DOC(N) "{\"schema\":\"custode.policy/v1\",\"name\":\"t\",\"version\":1,\"content\":{\"network\":" N "}}"

static struct custode_dns_names names_of(const char *json)
{
	struct custode_policy *p = NULL;
	struct custode_refusal why = {0};
	struct custode_net_ruleset rs;
	struct custode_dns_names n;

	cr_assert_eq(custode_policy_parse(json, strlen(json), &p, &why), 0, "%s", why.detail);
	cr_assert_eq(custode_policy_compile_net(p, NULL, 0, 7, &rs, &why), 0, "%s", why.detail);
	cr_assert_eq(custode_dns_names_build(0x1234, rs.hosts, rs.n_hosts, &n), 0);
	custode_net_ruleset_free(&rs);
	custode_policy_free(p);
	return n;
}

/* ports granted to a name given as text ("" when the text is not a valid name) */
static size_t match(const struct custode_dns_names *n, const char *text, struct custode_dns_port *out)
{
	struct custode_dns_name dn;

	if (custode_dns_name_from_text(text, &dn) < 0)
		return 0;
	return custode_dns_names_match(n, &dn, out, 64);
}

static const char *POLICY = DOC("{\"egress\":[{\"host\":\"allowed.com\",\"ports\":[443]},"
				"{\"host\":\"*.Wild.Example.\",\"ports\":[443,80]},"
				"{\"host\":\"api.wild.example\",\"ports\":[8443],\"proto\":\"udp\"},"
				"{\"host\":\"allowed.com\",\"ports\":[443,22]},"
				"{\"cidr\":\"203.0.113.0/24\",\"ports\":[443]}]}");

Test(dns_names, compile_keeps_cidrs_and_hands_hosts_over)
{
	struct custode_policy *p = NULL;
	struct custode_refusal why = {0};
	struct custode_net_ruleset rs;

	cr_assert_eq(custode_policy_parse(POLICY, strlen(POLICY), &p, &why), 0, "%s", why.detail);
	cr_assert_eq(custode_policy_compile_net(p, NULL, 0, 7, &rs, &why), 0, "%s", why.detail);
	cr_assert_eq(rs.n, 1, "the CIDR rule still becomes a kernel key");
	cr_assert_eq(rs.n_hosts, 4);
	cr_assert_str_eq(rs.hosts[0].name, "allowed.com");
	cr_assert_str_eq(rs.hosts[1].name, "*.wild.example", "lowercased, trailing dot dropped");
	cr_assert_eq(rs.hosts[1].n_ports, 2);
	cr_assert_eq(rs.hosts[1].proto, 6);
	cr_assert_eq(rs.hosts[2].proto, 17);
	custode_net_ruleset_free(&rs);
	cr_assert_null(rs.hosts);
	custode_policy_free(p);
}

Test(dns_names, exact)
{
	struct custode_dns_names n = names_of(POLICY);
	struct custode_dns_port pp[64];

	cr_assert_eq(match(&n, "allowed.com", pp), 2, "443 and 22, merged from two entries");
	cr_assert_eq(pp[0].proto, 6);
	cr_assert_eq(pp[0].port, 22);
	cr_assert_eq(pp[1].port, 443);
	cr_assert_eq(match(&n, "ALLOWED.Com", pp), 2, "case-insensitive");
	cr_assert_eq(match(&n, "allowed.com.", pp), 2, "trailing dot");
	cr_assert_eq(match(&n, "allowed.com.evil.net", pp), 0);
	cr_assert_eq(match(&n, "evilallowed.com", pp), 0);
	cr_assert_eq(match(&n, "www.allowed.com", pp), 0, "an exact grant covers no subdomain");
	cr_assert_eq(match(&n, "com", pp), 0);
	cr_assert_eq(match(&n, "allowed.co", pp), 0);
	custode_dns_names_free(&n);
}

Test(dns_names, wildcard)
{
	struct custode_dns_names n = names_of(POLICY);
	struct custode_dns_port pp[64];

	cr_assert_eq(match(&n, "a.wild.example", pp), 2);
	cr_assert_eq(match(&n, "a.b.c.wild.example", pp), 2, "one or more labels");
	cr_assert_eq(match(&n, "wild.example", pp), 0, "never the apex");
	cr_assert_eq(match(&n, "evilwild.example", pp), 0);
	cr_assert_eq(match(&n, "wild.example.evil.net", pp), 0);
	cr_assert_eq(match(&n, "A.WILD.EXAMPLE.", pp), 2);
	/* api.wild.example: the exact udp grant and the wildcard's tcp ports */
	cr_assert_eq(match(&n, "api.wild.example", pp), 3);
	cr_assert_eq(pp[0].proto, 6);
	cr_assert_eq(pp[0].port, 80);
	cr_assert_eq(pp[1].port, 443);
	cr_assert_eq(pp[2].proto, 17);
	cr_assert_eq(pp[2].port, 8443);
	custode_dns_names_free(&n);
}

Test(dns_names, invalid_names_match_nothing)
{
	struct custode_dns_names n = names_of(DOC("{\"egress\":[{\"host\":\"*.example\",\"ports\":[443]}]}"));
	struct custode_dns_port pp[8];
	struct custode_dns_name dn = {.host = false, .wire_len = 9, .text = ""};
	char big[300];

	cr_assert_eq(custode_dns_names_match(&n, &dn, pp, 8), 0, "not a host name");
	memset(big, 'a', 64);
	strcpy(big + 64, ".example");
	cr_assert_eq(match(&n, big, pp), 0, "a 64-byte label is not a name");
	memset(big, 'a', 250);
	strcpy(big + 250, ".example");
	cr_assert_eq(match(&n, big, pp), 0, "longer than 253 bytes");
	custode_dns_names_free(&n);
}

Test(dns_names, parse_strict)
{
	struct custode_dns_names n;
	struct custode_dns_port pp[8];
	static const char *const bad[] = {
		"",
		"[]",
		"{\"version\":1,\"run_id\":\"0000000000001234\"}",
		"{\"version\":2,\"run_id\":\"0000000000001234\",\"hosts\":[]}",
		"{\"version\":1,\"run_id\":\"1234\",\"hosts\":[]}",
		"{\"version\":1,\"run_id\":\"0000000000001234\",\"hosts\":[],\"x\":1}",
		"{\"version\":1,\"run_id\":\"0000000000001234\",\"hosts\":[{\"host\":\"a.b\",\"proto\":\"tcp\",\"ports\":[0]}]}",
		"{\"version\":1,\"run_id\":\"0000000000001234\",\"hosts\":[{\"host\":\"a.b\",\"proto\":\"sctp\",\"ports\":[1]}]}",
		"{\"version\":1,\"run_id\":\"0000000000001234\",\"hosts\":[{\"host\":\"a b\",\"proto\":\"tcp\",\"ports\":[1]}]}",
		"{\"version\":1,\"run_id\":\"0000000000001234\",\"hosts\":[{\"host\":\"*\",\"proto\":\"tcp\",\"ports\":[1]}]}",
		"{\"version\":1,\"run_id\":\"0000000000001234\",\"hosts\":[{\"host\":\"a.b\",\"proto\":\"tcp\",\"ports\":[]}]}",
		"{\"version\":1,\"run_id\":\"0000000000001234\",\"hosts\":[{\"host\":\"a.b\",\"proto\":\"tcp\",\"ports\":[1],\"y\":0}]}",
		"{\"version\":1,\"version\":1,\"run_id\":\"0000000000001234\",\"hosts\":[]}",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(custode_dns_names_parse(bad[i], strlen(bad[i]), &n), -EINVAL, "%s", bad[i]);
	{
		const char *ok = "{\"version\":1,\"run_id\":\"0000000000001234\",\"hosts\":["
				 "{\"host\":\"*.b.example\",\"proto\":\"tcp\",\"ports\":[443,443]},"
				 "{\"host\":\"a.example\",\"proto\":\"udp\",\"ports\":[53]}]}";
		cr_assert_eq(custode_dns_names_parse(ok, strlen(ok), &n), 0);
		cr_assert_eq(n.run_id, 0x1234);
		cr_assert_eq(n.n, 2);
		cr_assert_eq(match(&n, "x.b.example", pp), 1, "repeated port merged");
		cr_assert_eq(match(&n, "a.example", pp), 1);
		cr_assert_eq(pp[0].proto, 17);
		custode_dns_names_free(&n);
	}
}

Test(dns_names, no_hosts)
{
	struct custode_dns_names n = names_of(DOC("{\"egress\":[]}"));
	struct custode_dns_port pp[8];

	cr_assert_eq(n.n, 0);
	cr_assert_eq(match(&n, "anything.example", pp), 0);
	custode_dns_names_free(&n);
}
