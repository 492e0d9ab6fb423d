// SPDX-License-Identifier: Apache-2.0
/*
 * The host's own addresses (issue 13, class 7). A local service listening on
 * every address is reachable through the host's non-loopback addresses too:
 * 127.0.0.1:8090 is denied as loopback, but the host's own 198.51.100.1:8090
 * reaches the same socket — directly under a broad egress rule, or through a
 * granted name whose DNS answer is that address (the last step of DNS
 * rebinding). custode classifies the addresses of the run's network
 * namespace (map custode_host_addrs, kept current from rtnetlink) as
 * net.host_address, denied unless granted as a literal (--allow ADDR:PORT)
 * or by network.private; the resolver drops such answers.
 *
 * The fixture (ktest_netns): the near namespace, where tests and runs live,
 * owns 198.51.100.1 and 2001:db8:1::1; the far one (the "internet") holds
 * the test addresses 203.0.113.10 and 2001:db8::10.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "test_dns_fixture.h"

#define BROAD                                                                                               \
	"{\"cidr\":\"0.0.0.0/0\",\"ports\":[8080,8090]},{\"cidr\":\"::/0\",\"ports\":[8080,8090]},"       \
	"{\"cidr\":\"0.0.0.0/0\",\"ports\":[8090],\"proto\":\"udp\"},{\"cidr\":\"::/0\",\"ports\":[8090],\"proto\":\"udp\"}"

/* A local service on every address of the near namespace, port 8090 (TCP, both families; UDP v4). */
static bool local_service(void)
{
	struct sockaddr_in s4 = {.sin_family = AF_INET, .sin_port = htons(8090)};
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6, .sin6_port = htons(8090), .sin6_addr = IN6ADDR_ANY_INIT};
	int on = 1, a = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), b = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0),
	    u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	setsockopt(b, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
	/* leaked on purpose: they live as long as the test process */
	return a >= 0 && b >= 0 && u >= 0 && bind(a, (struct sockaddr *)&s4, sizeof(s4)) == 0 && listen(a, 64) == 0 &&
	       bind(b, (struct sockaddr *)&s6, sizeof(s6)) == 0 && listen(b, 64) == 0 &&
	       bind(u, (struct sockaddr *)&s4, sizeof(s4)) == 0;
}

KTEST(hostaddr_broad_rule_reaches_no_local_service)
{
	static struct ktest_result r;
	static const struct {
		const char *addr, *proto;
	} own[] = {
		{"198.51.100.1", "tcp"}, {"2001:db8:1::1", "tcp"}, {"::ffff:198.51.100.1", "tcp"}, {"198.51.100.1", "udp"},
	};
	struct dnsfix f;
	const char *pol;
	json_t *ev, *e;

	if (!dns_setup(&f, NULL))
		return;
	if (!ASSERT_TRUE(local_service(), "a local service on port 8090"))
		goto out;
	pol = dns_policy(&f, "broad", BROAD, NULL);
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		char what[96];

		snprintf(what, sizeof(what), "%s %s", own[i].addr, own[i].proto);
		/* control: outside any run the host's own address reaches the local service */
		ASSERT_STREQ(dns_outside(&r, DARGS("connect", own[i].addr, "8090", own[i].proto)), "ok\n", what);
		ktest_events();
		dns_run(&r, pol, NULL, DARGS("connect", own[i].addr, "8090", own[i].proto));
		ASSERT_STREQ(r.out, "EPERM\n", what);
		ASSERT_CONTAINS(r.err, "net.host_address", what);
		ev = ktest_events();
		e = ktest_find_net_event(ev, "net.host_address", NULL, 8090);
		if (ASSERT_TRUE(e != NULL, what))
			ASSERT_STREQ(json_string_value(json_object_get(json_object_get(e, "net"), "addr_class")), "host",
				     "addr_class");
		json_decref(ev);
	}
	/* ordinary workload: the same broad rule reaches remote destinations */
	dns_run(&r, pol, NULL, DARGS("connect", "203.0.113.10", "8080"));
	ASSERT_STREQ(r.out, "ok\n", "a remote destination under the broad rule");
	dns_run(&r, pol, NULL, DARGS("connect", "2001:db8::10", "8080"));
	ASSERT_STREQ(r.out, "ok\n", "a remote IPv6 destination under the broad rule");
	/* loopback keeps its own reason */
	dns_run(&r, pol, NULL, DARGS("connect", "127.0.0.1", "8090"));
	ASSERT_STREQ(r.out, "EPERM\n", "loopback");
	ASSERT_CONTAINS(r.err, "net.loopback", "loopback reason");
out:
	dns_teardown(&f);
}

KTEST(hostaddr_granted_as_literal)
{
	static struct ktest_result r;
	struct dnsfix f;
	const char *pol;

	if (!dns_setup(&f, NULL))
		return;
	if (!ASSERT_TRUE(local_service(), "a local service on port 8090") ||
	    !ASSERT_EQ(system("ip addr add 10.99.0.1/32 dev ktv0"), 0, "a private address of the host"))
		goto out;
	pol = dns_policy(&f, "broad2", BROAD, NULL);
	/* --allow names the address itself: the operator means this host */
	dns_run(&r, pol, DARGS("--allow", "198.51.100.1:8090"), DARGS("connect", "198.51.100.1", "8090"));
	ASSERT_STREQ(r.out, "ok\n", "--allow ADDR:PORT of the host's own address");
	dns_run(&r, pol, DARGS("--allow", "198.51.100.1:8090"), DARGS("connect", "2001:db8:1::1", "8090"));
	ASSERT_STREQ(r.out, "EPERM\n", "a literal grants that address only");
	/* a private address of the host: denied as the host's, granted by network.private */
	dns_run(&r, pol, NULL, DARGS("connect", "10.99.0.1", "8090"));
	ASSERT_STREQ(r.out, "EPERM\n", "the host's private address under a broad rule");
	ASSERT_CONTAINS(r.err, "net.host_address", "reason: the host's, not just private");
	pol = dns_policy(&f, "broadpriv", BROAD, "\"10.99.0.0/16\"");
	dns_run(&r, pol, NULL, DARGS("connect", "10.99.0.1", "8090"));
	ASSERT_STREQ(r.out, "ok\n", "network.private grants it");
out:
	dns_teardown(&f);
}

/* Addresses that appear while a run lives are the host's from then on (rtnetlink). */
KTEST(hostaddr_new_address_during_the_run)
{
	static struct ktest_result r;
	char flag[600], script[2048];
	struct dnsfix f;
	struct ktest_proc p;
	const char *pol;

	if (!dns_setup(&f, NULL))
		return;
	if (!ASSERT_TRUE(local_service(), "a local service on port 8090"))
		goto out;
	pol = dns_policy(&f, "broad3", BROAD, NULL);
	snprintf(flag, sizeof(flag), "%s/added", f.d.ws);
	/* the run waits for the address, then tries until custode has caught up (or 20 s) */
	snprintf(script, sizeof(script),
		 "until [ -e %s ]; do sleep 0.05; done; i=0; while [ $i -lt 200 ]; do r=$(%s connect 198.51.100.7 8090); "
		 "[ \"$r\" = EPERM ] && break; i=$((i+1)); sleep 0.1; done; echo \"$r\"",
		 flag, ktest_helper("dprobe"));
	{
		char *argv[] = {(char *)ktest_custode(), "run", "--policy", (char *)pol, "--workspace", f.d.ws, "--",
				"/bin/sh", "-c", script, NULL};
		char line[256] = "";

		if (!ASSERT_TRUE(ktest_spawn(argv, -1, &p) == 0, "run started"))
			goto out;
		ASSERT_EQ(system("ip addr add 198.51.100.7/32 dev ktv0"), 0, "new address");
		/* control: the new address reaches the local service outside a run */
		ASSERT_STREQ(dns_outside(&r, DARGS("connect", "198.51.100.7", "8090")), "ok\n", "control");
		ASSERT_TRUE(ktest_write_file(flag, "", 0644), "flag");
		ASSERT_TRUE(ktest_read_line(p.out, line, sizeof(line), 60000), "the run's answer");
		ASSERT_STREQ(line, "EPERM", "the address added during the run is the host's");
		ASSERT_EQ(ktest_wait(&p, 60000), 0, "the run ends");
		ktest_proc_close(&p);
	}
out:
	dns_teardown(&f);
}

/* A granted name answering with the host's own address: the resolver drops the answer. */
KTEST(hostaddr_dns_answer_is_dropped)
{
	static struct ktest_result r;
	struct dnsfix f;
	const char *pol;

	if (!dns_setup(&f, NULL))
		return;
	if (!ASSERT_TRUE(local_service(), "a local service on port 8090"))
		goto out;
	pol = dns_policy(&f, "names", "{\"host\":\"rhost.test\",\"ports\":[8090]},{\"host\":\"rhostmix.test\",\"ports\":[8080,8090]}",
			 NULL);
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "rhost.test", "A"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode REFUSED\n", "rhost.test A: refused");
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "rhost.test", "AAAA"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode REFUSED\n", "rhost.test AAAA: refused");
	dns_run(&r, pol, NULL, DARGS("gai-connect", "rhost.test", "8090"));
	ASSERT_TRUE(strncmp(r.out, "ok", 2) != 0, "no connection to the host through its name");
	dns_run(&r, pol, NULL, DARGS("connect", "198.51.100.1", "8090"));
	ASSERT_STREQ(r.out, "EPERM\n", "nor to the address");
	ASSERT_CONTAINS(r.err, "net.host_address", "reason");
	/* mixed answers lose only the host's address */
	dns_run(&r, pol, NULL, DARGS("gai-connect", "rhostmix.test", "8080"));
	ASSERT_STREQ(r.out, "ok 203.0.113.10:8080\n", "the remote address of a mixed answer");
out:
	dns_teardown(&f);
}
