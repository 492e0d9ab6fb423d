// SPDX-License-Identifier: Apache-2.0
/*
 * util/sockaddr: the one "ADDR:PORT" parser (daemon --upstream and
 * resolv.conf through their DNS rules, --metrics-listen directly): forms,
 * a required port, every port 1..65535, malformed input, formatting back.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <criterion/criterion.h>

#include "util/sockaddr.h"

Test(util_sockaddr, forms_with_a_default_port)
{
	static const struct {
		const char *s;
		int family;
		uint16_t port;
		const char *back;
	} c[] = {
		{"127.0.0.1", AF_INET, 53, "127.0.0.1:53"},
		{"10.1.2.3:5300", AF_INET, 5300, "10.1.2.3:5300"},
		{"[2001:db8::1]:853", AF_INET6, 853, "[2001:db8::1]:853"},
		{"[2001:db8::1]", AF_INET6, 53, "[2001:db8::1]:53"},
		{"2001:db8::1", AF_INET6, 53, "[2001:db8::1]:53"},
		{"::ffff:1.2.3.4", AF_INET6, 53, "[::ffff:1.2.3.4]:53"},
		{"1.2.3.4:0053", AF_INET, 53, "1.2.3.4:53"},
	};
	struct sockaddr_storage ss;
	socklen_t len;
	char buf[CUSTODE_SOCKADDR_LEN];

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		cr_assert_eq(custode_sockaddr_parse(c[i].s, 53, &ss, &len), 0, "%s", c[i].s);
		cr_expect_eq(ss.ss_family, c[i].family, "%s", c[i].s);
		cr_expect_eq(len, c[i].family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6), "%s",
			     c[i].s);
		cr_expect_eq(custode_sockaddr_port(&ss), c[i].port, "%s", c[i].s);
		cr_expect_str_eq(custode_sockaddr_format(&ss, buf, sizeof(buf)), c[i].back);
	}
}

Test(util_sockaddr, port_required_without_default)
{
	static const char *const bad[] = {"127.0.0.1", "[::1]", "::1", "2001:db8::1"};
	struct sockaddr_storage ss;
	socklen_t len;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(custode_sockaddr_parse(bad[i], 0, &ss, &len), -EINVAL, "\"%s\" accepted", bad[i]);
	cr_assert_eq(custode_sockaddr_parse("[::1]:9464", 0, &ss, &len), 0);
	cr_expect_eq(ss.ss_family, AF_INET6);
	cr_expect_eq(custode_sockaddr_port(&ss), 9464);
}

/*
 * --metrics-listen takes any port: refusing the resolver's 54 on loopback is
 * a DNS upstream rule (daemon.c, tested in test_dns_daemon.c), not an address rule.
 */
Test(util_sockaddr, every_port_accepted)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char s[32];

	for (unsigned port = 1; port <= 65535; port++) {
		snprintf(s, sizeof(s), "127.0.0.1:%u", port);
		cr_assert_eq(custode_sockaddr_parse(s, 0, &ss, &len), 0, "%s", s);
		cr_assert_eq(custode_sockaddr_port(&ss), port, "%s", s);
	}
	cr_assert_eq(custode_sockaddr_parse("127.0.0.1:54", 0, &ss, &len), 0);
	cr_assert_eq(custode_sockaddr_parse("[::1]:54", 0, &ss, &len), 0);
}

Test(util_sockaddr, malformed_refused)
{
	static const char *const bad[] = {
		"",
		":",
		":53",
		"dns.google",
		"dns.google:53",
		"localhost:9464",
		"1.2.3.4:",
		"1.2.3.4:0",
		"1.2.3.4:65536",
		"1.2.3.4:99999999999999999999",
		"1.2.3.4:+53",
		"1.2.3.4:-53",
		"1.2.3.4: 53",
		"1.2.3.4:53x",
		"1.2.3.4:0x35",
		"1.2.3.4:53:53",
		"1.2.3",
		"1.2.3.256:53",
		" 1.2.3.4:53",
		"[2001:db8::1",
		"[2001:db8::1]53",
		"[2001:db8::1]:",
		"[1.2.3.4]:53x",
		"[]:53",
		"[fe80::1%eth0]:53", /* scope ids are not kept */
		"[2001:db8::1]:53]",
		"[0000:0000:0000:0000:0000:0000:0000:0000:0000]:53", /* longer than any address */
	};
	struct sockaddr_storage ss, before;
	socklen_t len = 7;

	memset(&before, 0x5a, sizeof(before));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ss = before;
		cr_expect_eq(custode_sockaddr_parse(bad[i], 53, &ss, &len), -EINVAL, "\"%s\" accepted", bad[i]);
		cr_expect_eq(memcmp(&ss, &before, sizeof(ss)), 0, "\"%s\": output written on failure", bad[i]);
		cr_expect_eq(len, 7, "\"%s\": length written on failure", bad[i]);
	}
	cr_expect_eq(custode_sockaddr_parse(NULL, 53, &ss, &len), -EINVAL);
}
