// SPDX-License-Identifier: Apache-2.0
/* custode daemon's upstream parsing (userspace/daemon/daemon.c): --upstream and /etc/resolv.conf. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <netinet/in.h>
#include <criterion/criterion.h>

#include "daemon/daemon.h"

static unsigned port_of(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ? ntohs(((const struct sockaddr_in *)ss)->sin_port)
					: ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
}

Test(dns_daemon, upstream_forms)
{
	struct sockaddr_storage ss;
	socklen_t len;

	cr_assert_eq(custode_daemon_parse_upstream("127.0.0.1", &ss, &len), 0);
	cr_assert_eq(ss.ss_family, AF_INET);
	cr_assert_eq(port_of(&ss), 53);
	cr_assert_eq(len, sizeof(struct sockaddr_in));
	cr_assert_eq(custode_daemon_parse_upstream("10.1.2.3:5300", &ss, &len), 0);
	cr_assert_eq(port_of(&ss), 5300);
	cr_assert_eq(custode_daemon_parse_upstream("[2001:db8::1]:853", &ss, &len), 0);
	cr_assert_eq(ss.ss_family, AF_INET6);
	cr_assert_eq(port_of(&ss), 853);
	cr_assert_eq(custode_daemon_parse_upstream("[2001:db8::1]", &ss, &len), 0);
	cr_assert_eq(port_of(&ss), 53);
	cr_assert_eq(custode_daemon_parse_upstream("2001:db8::1", &ss, &len), 0, "bare IPv6, default port");
	static const char *const bad[] = {"", "dns.google", "1.2.3.4:", "1.2.3.4:0", "1.2.3.4:65536", "1.2.3.4:+53",
					  "[2001:db8::1", "[2001:db8::1]53", "1.2.3.4:53x", "127.0.0.1:54",
					  "127.9.9.9:54", "[::1]:54"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(custode_daemon_parse_upstream(bad[i], &ss, &len), -EINVAL, "%s", bad[i]);
}

Test(dns_daemon, resolv_conf)
{
	struct sockaddr_storage ss[3];
	socklen_t lens[3];
	const char *text = "# comment\nsearch example.com\nnameserver 10.255.255.53\noptions edns0\n"
			   "nameserver fe80::1%eth0\nnameserver bogus\n  nameserver   2001:db8::53  \n"
			   "nameserver 192.0.2.1\n";

	cr_assert_eq(custode_daemon_resolv_conf(text, ss, lens, 3), 3);
	cr_assert_eq(ss[0].ss_family, AF_INET);
	cr_assert_eq(ss[1].ss_family, AF_INET6, "scope id dropped");
	cr_assert_eq(ss[2].ss_family, AF_INET6);
	cr_assert_eq(port_of(&ss[2]), 53);
	cr_assert_eq(custode_daemon_resolv_conf("", ss, lens, 3), 0);
	cr_assert_eq(custode_daemon_resolv_conf("nameserver 127.0.0.53", ss, lens, 3), 1, "no trailing newline");
}
