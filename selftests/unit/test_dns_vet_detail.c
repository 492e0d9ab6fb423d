// SPDX-License-Identifier: Apache-2.0
/*
 * The resolver's detail for a dropped answer names the address and its
 * class by reason name (net.loopback), never a bare class number (issue 16).
 */
#include <stdio.h>
#include <string.h>
#include <criterion/criterion.h>

#include "custode/reasons.h"
#include "dns/vet.h"
#include "dns/wire.h"
#include "test_dns_build.h"

static const struct {
	const char *addr;
	unsigned type;
	const char *detail;
} dropped[] = {
	{"127.0.0.2", 1, "every address of ok.test is special (first: 127.0.0.2, net.loopback)"},
	{"169.254.169.254", 1, "every address of ok.test is special (first: 169.254.169.254, net.metadata)"},
	{"10.0.0.1", 1, "every address of ok.test is special (first: 10.0.0.1, net.private_address)"},
	{"fe80::1", 28, "every address of ok.test is special (first: fe80::1, net.link_local)"},
	{"::ffff:127.0.0.1", 28, "every address of ok.test is special (first: ::ffff:127.0.0.1, net.loopback)"},
};

Test(dns_vet_detail, names_the_address_and_its_class)
{
	static const struct custode_dns_vet_opts none;
	struct custode_dns_vetted v;
	struct custode_dns_name q;
	struct custode_dns_msg d;
	static struct tmsg m; /* 70 KB: not on the stack */

	cr_assert_eq(custode_dns_name_from_text("ok.test", &q), 0);
	for (size_t i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++) {
		t_header(&m, 1, 0x8180, 1, 1, 0, 0);
		t_question(&m, "ok.test", dropped[i].type);
		if (dropped[i].type == 1)
			t_a(&m, NULL, dropped[i].addr, 300);
		else
			t_aaaa(&m, NULL, dropped[i].addr, 300);
		cr_assert_eq(custode_dns_parse(m.b, m.n, &d), 0);
		custode_dns_vet(&q, (uint16_t)dropped[i].type, &d, &none, &v);
		cr_assert_eq(v.reason, CUSTODE_REASON_DNS_ANSWER_PRIVATE, "%s", dropped[i].addr);
		cr_expect_str_eq(v.detail, dropped[i].detail);
		cr_expect_null(strstr(v.detail, "class"), "%s", v.detail);
	}
}
