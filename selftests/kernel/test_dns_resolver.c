// SPDX-License-Identifier: Apache-2.0
/*
 * custode's resolver and the DNS redirect, end to end: a run resolves a name
 * its policy grants and connects to the answer; without its own lookup the
 * same address is denied, and so is another run using the first run's pins;
 * DNS to hard-coded servers (8.8.8.8, 127.0.0.53, an IPv6 server; UDP
 * connected and not, TCP) is answered by the resolver with the source the
 * client expects; denied names never leave the host; DNS is denied when no
 * resolver runs (stopped, killed, or serving another network namespace);
 * pins expire; 10,000 lookups followed at once by a connect see no denial.
 * Every test runs in its own network namespace (test_dns_fixture.h).
 */
#include <sched.h>
#include <sys/socket.h>

#include "test_dns_fixture.h"

#define OK_POLICY(f) dns_policy(f, "ok", "{\"host\":\"ok.test\",\"ports\":[8080]},{\"host\":\"*.wild.test\",\"ports\":[8080]}", NULL)

KTEST(dns_allowed_name_connects)
{
	static struct ktest_result r;
	struct dnsfix f;
	const char *pol;

	if (!dns_setup(&f, NULL))
		return;
	pol = OK_POLICY(&f);
	dns_run(&r, pol, NULL, DARGS("gai-connect", "ok.test", "8080"));
	ASSERT_STREQ(r.out, "ok 203.0.113.10:8080\n", "lookup, then connect to the answer");
	dns_run(&r, pol, NULL, DARGS("connect", "203.0.113.10", "8080"));
	ASSERT_STREQ(r.out, "EPERM\n", "the same address without a lookup by this run");
	ASSERT_CONTAINS(r.err, "net.egress.denied", "reason");
	dns_run(&r, pol, NULL, DARGS("gai-connect", "ok.test", "8081"));
	ASSERT_STREQ(r.out, "EPERM 203.0.113.10:8081\n", "a port the host entry does not grant");
	dns_run(&r, pol, NULL, DARGS("gai-connect", "x.wild.test", "8080"));
	ASSERT_STREQ(r.out, "ok 203.0.113.10:8080\n", "a wildcard grant");
	dns_run(&r, pol, NULL, DARGS("gai", "ok.test", "inet6"));
	ASSERT_STREQ(r.out, "2001:db8::10\n", "AAAA");
	dns_run(&r, pol, NULL, DARGS("res", "ok.test"));
	ASSERT_CONTAINS(r.out, "A 203.0.113.10 ttl 300", "res_query");
	dns_teardown(&f);
}

KTEST(dns_pins_belong_to_the_run)
{
	static struct ktest_result r;
	struct ktest_proc a;
	struct dnsfix f;
	char out[1024];
	__u64 cgid = 0;
	const char *pol, *other;

	if (!dns_setup(&f, DARGS("--verbose")))
		return;
	pol = OK_POLICY(&f);
	other = dns_policy(&f, "other", "{\"host\":\"other.test\",\"ports\":[8080]}", NULL);
	/* run A looks ok.test up and stays alive, holding its pins */
	if (!ASSERT_TRUE(dns_hold(&a, pol, DARGS("gai-connect", "ok.test", "8080"), out, sizeof(out), &cgid), "run A"))
		goto out;
	ASSERT_STREQ(out, "ok 203.0.113.10:8080\n", "run A connects");
	ASSERT_EQ(dns_logged_pins(&f, "ok.test", "A"), 1, "the resolver pinned one (203.0.113.10, tcp 8080)");
	if (dns_count_pins(cgid) >= 0)
		ASSERT_EQ(dns_count_pins(cgid), 1, "run A holds one pin in the engine's map");
	else
		ktest_log("custode's maps are reserved to custode here: the pin is checked from the resolver's log");
	/* runs B (same policy, no lookup) and C (another policy) may not use them */
	dns_run(&r, pol, NULL, DARGS("connect", "203.0.113.10", "8080"));
	ASSERT_STREQ(r.out, "EPERM\n", "run B, same policy, while A's pin lives");
	dns_run(&r, other, NULL, DARGS("connect", "203.0.113.10", "8080"));
	ASSERT_STREQ(r.out, "EPERM\n", "run C, another policy");
	/* C's own lookup of its own name pins only its own answer */
	dns_run(&r, other, NULL, DARGS("gai-connect", "other.test", "8080"));
	ASSERT_STREQ(r.out, "ok 203.0.113.12:8080\n", "run C's own name");
	dns_run(&r, other, NULL, DARGS("gai-connect", "ok.test", "8080"));
	ASSERT_STREQ(r.out, "lookup failed\n", "run C can't look up A's name");
	dns_release(&a);
	if (dns_count_pins(cgid) >= 0)
		ASSERT_EQ(dns_pins_after_teardown(cgid), 0, "A's pins are gone with A (the daemon's gc)");
out:
	dns_teardown(&f);
}

KTEST(dns_hardcoded_servers_answered_by_the_resolver)
{
	static struct ktest_result r;
	struct dnsfix f;
	const char *pol;

	if (!dns_setup(&f, NULL))
		return;
	pol = OK_POLICY(&f);
	/* control: outside a run there is no route to 8.8.8.8 here */
	ASSERT_STREQ(dns_outside(&r, DARGS("query", "8.8.8.8", "53", "udp", "ok.test", "A")), "ENETUNREACH\n",
		     "control: no route out of the test's namespace");
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "ok.test", "A"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode NOERROR\nA 203.0.113.10 ttl 300\n", "UDP, connected");
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "ok.test", "A", "unconnected"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode NOERROR\nA 203.0.113.10 ttl 300\n", "UDP, sendto/recvfrom");
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "tcp", "ok.test", "A"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode NOERROR\nA 203.0.113.10 ttl 300\n", "TCP (getpeername)");
	dns_run(&r, pol, NULL, DARGS("query", "127.0.0.53", "53", "udp", "ok.test", "AAAA"));
	ASSERT_STREQ(r.out, "from 127.0.0.53:53\nrcode NOERROR\nAAAA 2001:db8::10 ttl 300\n", "systemd-resolved's stub");
	dns_run(&r, pol, NULL, DARGS("query", "2001:4860:4860::8888", "53", "udp", "ok.test", "A"));
	ASSERT_STREQ(r.out, "from [2001:4860:4860::8888]:53\nrcode NOERROR\nA 203.0.113.10 ttl 300\n", "IPv6 server");
	dns_run(&r, pol, NULL, DARGS("query", "1.1.1.1", "53", "udp", "ok.test", "A", "unconnected", "v6"));
	ASSERT_STREQ(r.out, "from [::ffff:1.1.1.1]:53\nrcode NOERROR\nA 203.0.113.10 ttl 300\n",
		     "IPv4 server from a dual-stack IPv6 socket");
	dns_run(&r, pol, NULL, DARGS("query", "2001:4860:4860::8888", "53", "tcp", "ok.test", "A"));
	ASSERT_STREQ(r.out, "from [2001:4860:4860::8888]:53\nrcode NOERROR\nA 203.0.113.10 ttl 300\n", "IPv6 TCP");
	/* the resolver's own port, addressed directly: the run's own token all the same */
	dns_run(&r, pol, NULL, DARGS("query", "127.99.0.1", "54", "udp", "ok.test", "A"));
	ASSERT_STREQ(r.out, "from 127.99.0.1:54\nrcode NOERROR\nA 203.0.113.10 ttl 300\n", "the resolver's port");
	/* a process outside every run can't pose as a run at the resolver's port */
	ASSERT_STREQ(dns_outside(&r, DARGS("query", "127.1.2.3", "54", "udp", "ok.test", "A")), "EPERM\n",
		     "outside a run: the resolver's port is closed");
	dns_teardown(&f);
}

KTEST(dns_denied_names_never_leave)
{
	static struct ktest_result r;
	struct dnsfix f;
	const char *pol;

	if (!dns_setup(&f, NULL))
		return;
	pol = OK_POLICY(&f);
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "other.test", "A"));
	ASSERT_STREQ(r.out, "from 8.8.8.8:53\nrcode REFUSED\n", "a name the policy does not grant");
	ASSERT_CONTAINS(r.err, "resolver: dns.name.denied=1", "the launcher's summary");
	dns_run(&r, pol, NULL, DARGS("gai", "other.test"));
	ASSERT_STREQ(r.out, "EAI_AGAIN\n", "getaddrinfo gives up on REFUSED");
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "tcp", "other.test", "A"));
	ASSERT_CONTAINS(r.out, "rcode REFUSED", "over TCP too");
	ASSERT_EQ(dns_count(f.dnsd_log, "other.test"), 0, "never sent upstream");
	ASSERT_CONTAINS(kt_slurp(f.daemon_log), "\"reason\":\"dns.name.denied\"", "the daemon's decision log");
	dns_teardown(&f);

	/* --deny nxdomain */
	if (!dns_setup(&f, DARGS("--deny", "nxdomain")))
		return;
	pol = OK_POLICY(&f);
	dns_run(&r, pol, NULL, DARGS("gai", "other.test"));
	ASSERT_STREQ(r.out, "EAI_NONAME\n", "NXDOMAIN: getaddrinfo says no such name");
	dns_teardown(&f);
}

KTEST(dns_name_tricks)
{
	static struct ktest_result r;
	struct dnsfix f;
	const char *pol;
	char name[400];
	static const struct {
		const char *name;
		const char *rcode;
		const char *what;
	} cases[] = {
		{"ok.test.evil.test", "rcode REFUSED", "granted name as a prefix"},
		{"evilok.test", "rcode REFUSED", "granted name as a suffix without a dot"},
		{"wild.test", "rcode REFUSED", "the apex of a *. rule"},
		{"a.wild.test", "rcode NOERROR", "one label below"},
		{"a.b.c.wild.test", "rcode NOERROR", "several labels below"},
		{"OK.TeSt", "rcode NOERROR", "mixed case"},
		{"ok.test.", "rcode NOERROR", "trailing dot"},
		{"X.WILD.TEST.", "rcode NOERROR", "mixed case and trailing dot under a wildcard"},
		{"wild.test.evil.test", "rcode REFUSED", "wildcard suffix as a prefix"},
		{"ok_test", "rcode REFUSED", "another name"},
	};

	if (!dns_setup(&f, NULL))
		return;
	pol = OK_POLICY(&f);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", cases[i].name, "A"));
		ASSERT_CONTAINS(r.out, cases[i].rcode, cases[i].what);
	}
	/* a 64-byte label is not a length (0x40 is a label type): FORMERR */
	memset(name, 'a', 64);
	strcpy(name + 64, ".wild.test");
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", name, "A"));
	ASSERT_CONTAINS(r.out, "rcode FORMERR", "64-byte label");
	/* 63-byte labels up to 253 bytes are fine; one byte more is not a name */
	memset(name, 'a', 253);
	name[63] = name[127] = name[191] = '.';
	strcpy(name + 243, ".wild.test");
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", name, "A"));
	ASSERT_CONTAINS(r.out, "rcode NOERROR", "a 253-byte name under the wildcard");
	memset(name, 'a', 253);
	name[63] = name[127] = name[191] = '.';
	strcpy(name + 244, ".wild.test");
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", name, "A"));
	ASSERT_CONTAINS(r.out, "rcode FORMERR", "a 254-byte name");
	ASSERT_EQ(dns_count(f.dnsd_log, "evil"), 0, "nothing denied went upstream");
	dns_teardown(&f);
}

/* Raw queries in hex: header (id 0x1234), then the question "ok.test" (026f6b 0474657374 00, type, class) */
KTEST(dns_malformed_queries)
{
	static struct ktest_result r;
	struct dnsfix f;
	const char *pol;
	static const struct {
		const char *hex;
		const char *expect;
		const char *what;
	} cases[] = {
		{"123401000000000000000000", "rcode FORMERR", "qdcount 0"},
		{"123401000002000000000000026f6b04746573740000010001026f6b0474657374000001000" "1", "rcode FORMERR",
		 "qdcount 2"},
		{"123401000001000000000000c00c00010001", "rcode FORMERR", "question name is a pointer (a loop)"},
		{"12340100000100000000000002", "rcode FORMERR", "truncated question"},
		{"1234010000010001000000000" "26f6b0474657374000001000" "1c00c000100010000003c0004cb00710a",
		 "rcode FORMERR", "a query carrying an answer"},
		{"1234910000010000000000000" "26f6b04746573740000010001", "noreply", "opcode 2 with QR set: a response, ignored"},
		{"1234110000010000000000000" "26f6b04746573740000010001", "rcode NOTIMP", "opcode 2 (STATUS)"},
		{"123401000001000000000001026f6b04746573740000010001" "0000290200000100000000", "rcode BADVERS",
		 "EDNS version 1"},
		{"123401000001000000000000026f6b04746573740000010003", "rcode REFUSED", "class CH"},
		{"12340100000100000000000080610000010001", "rcode FORMERR", "label type 10"},
		{"1234", "noreply", "shorter than a header"},
		{"123401000001000000000000406161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616100000100" "01",
		 "rcode FORMERR", "label type 01"},
	};

	if (!dns_setup(&f, NULL))
		return;
	pol = OK_POLICY(&f);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		dns_run(&r, pol, NULL, DARGS("raw", "8.8.8.8", "53", "udp", cases[i].hex));
		ASSERT_CONTAINS(r.out, cases[i].expect, cases[i].what);
		dns_run(&r, pol, NULL, DARGS("raw", "8.8.8.8", "53", "tcp", cases[i].hex));
		ASSERT_CONTAINS(r.out, cases[i].expect, cases[i].what);
	}
	/* the resolver is still there and well */
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "ok.test", "A"));
	ASSERT_CONTAINS(r.out, "A 203.0.113.10", "still answering");
	ASSERT_TRUE(kill(f.daemon, 0) == 0, "daemon alive");
	dns_teardown(&f);
}

KTEST(dns_denied_without_a_resolver)
{
	static struct ktest_result r;
	struct dnsfix f;
	const char *pol, *cidr;

	if (!dns_setup_no_daemon(&f))
		return;
	pol = OK_POLICY(&f);
	cidr = dns_policy(&f, "cidr", "{\"cidr\":\"203.0.113.0/24\",\"ports\":[8080]}", NULL);
	dns_run(&r, pol, NULL, DARGS("gai", "ok.test"));
	ASSERT_EQ(r.code, 125, "host entries and no resolver: refused");
	ASSERT_CONTAINS(r.err, "dns.no_resolver", "reason");
	dns_run(&r, cidr, NULL, DARGS("query", "8.8.8.8", "53", "udp", "ok.test", "A"));
	ASSERT_STREQ(r.out, "EPERM\n", "DNS without a resolver");
	ASSERT_CONTAINS(r.err, "net.dns.denied", "reason");
	dns_run(&r, cidr, NULL, DARGS("query", "8.8.8.8", "53", "tcp", "ok.test", "A"));
	ASSERT_STREQ(r.out, "EPERM\n", "TCP too");

	/* up: answered; stopped: denied again */
	if (!ASSERT_TRUE(dns_start_daemon(&f, NULL), "daemon"))
		goto out;
	dns_run(&r, cidr, NULL, DARGS("query", "8.8.8.8", "53", "udp", "ok.test", "A"));
	ASSERT_CONTAINS(r.out, "rcode REFUSED", "up: the resolver answers (the CIDR policy grants no name)");
	kt_stop(&f.daemon, SIGTERM);
	dns_run(&r, cidr, NULL, DARGS("query", "8.8.8.8", "53", "udp", "ok.test", "A"));
	ASSERT_STREQ(r.out, "EPERM\n", "stopped: denied at once");

	/* killed: its heartbeat stops; denied within three seconds */
	if (!ASSERT_TRUE(dns_start_daemon(&f, NULL), "daemon again"))
		goto out;
	kt_stop(&f.daemon, SIGKILL);
	sleep(4);
	dns_run(&r, cidr, NULL, DARGS("query", "8.8.8.8", "53", "udp", "ok.test", "A"));
	ASSERT_STREQ(r.out, "EPERM\n", "SIGKILLed: denied once the heartbeat is stale");
	dns_run(&r, pol, NULL, DARGS("gai", "ok.test"));
	ASSERT_CONTAINS(r.err, "dns.no_resolver", "and the launcher refuses host entries");
out:
	dns_teardown(&f);
}

KTEST(dns_one_daemon_per_host)
{
	static struct ktest_result r;
	struct dnsfix f;
	char *argv[] = {(char *)ktest_custode(), "daemon", "--upstream", "127.0.0.1:5300", NULL};

	if (!dns_setup(&f, NULL))
		return;
	ktest_run(argv, -1, 30000, &r);
	ASSERT_EQ(r.code, 125, "a second daemon");
	ASSERT_CONTAINS(r.err, "daemon.running", "reason");
	ASSERT_TRUE(kill(f.daemon, 0) == 0, "the first one is untouched");
	dns_teardown(&f);
}

/* A run in another network namespace than the resolver's gets no DNS. */
KTEST(dns_other_network_namespace)
{
	struct dnsfix f;
	const char *pol, *cidr;
	int pipefd[2], st;
	char out[4096] = "";
	ssize_t n, got = 0;
	pid_t pid;

	if (!dns_setup(&f, NULL))
		return;
	pol = OK_POLICY(&f);
	cidr = dns_policy(&f, "cidr", "{\"cidr\":\"203.0.113.0/24\",\"ports\":[8080]}", NULL);
	if (!ASSERT_EQ(pipe(pipefd), 0, "pipe"))
		goto out;
	pid = fork();
	if (pid == 0) {
		char *a1[] = {(char *)ktest_custode(), "run", "--policy", (char *)pol, "--", (char *)ktest_helper("dprobe"),
			      "gai", "ok.test", NULL};
		char *a2[] = {(char *)ktest_custode(), "run", "--policy", (char *)cidr, "--", (char *)ktest_helper("dprobe"),
			      "query", "8.8.8.8", "53", "udp", "ok.test", "A", NULL};
		static struct ktest_result r1, r2;

		if (unshare(CLONE_NEWNET) < 0 || system("ip link set lo up") != 0)
			_exit(3);
		ktest_run(a1, -1, 60000, &r1);
		ktest_run(a2, -1, 60000, &r2);
		dprintf(pipefd[1], "code1=%d err1=%s|out2=%s|err2=%s", r1.code, r1.err, r2.out, r2.err);
		_exit(0);
	}
	close(pipefd[1]);
	while ((n = read(pipefd[0], out + got, sizeof(out) - 1 - (size_t)got)) > 0)
		got += n;
	out[got] = 0;
	close(pipefd[0]);
	waitpid(pid, &st, 0);
	ASSERT_CONTAINS(out, "code1=125", "launcher refuses");
	ASSERT_CONTAINS(out, "serves another network namespace", "and says why");
	ASSERT_CONTAINS(out, "out2=EPERM", "DNS from another namespace is denied");
	ASSERT_CONTAINS(out, "net.dns.denied", "reason");
out:
	dns_teardown(&f);
}

KTEST(dns_dot_and_quic_to_unpinned_addresses_denied)
{
	static struct ktest_result r;
	struct dnsfix f;
	const char *pol;

	if (!dns_setup(&f, NULL))
		return;
	pol = dns_policy(&f, "dot", "{\"host\":\"ok.test\",\"ports\":[443]}", NULL);
	dns_run(&r, pol, NULL, DARGS("connect", "8.8.8.8", "853"));
	ASSERT_STREQ(r.out, "EPERM\n", "DNS over TLS to 8.8.8.8");
	dns_run(&r, pol, NULL, DARGS("connect", "1.1.1.1", "443", "udp"));
	ASSERT_STREQ(r.out, "EPERM\n", "QUIC (DoH3) to 1.1.1.1");
	dns_run(&r, pol, NULL, DARGS("connect", "2001:4860:4860::8888", "853"));
	ASSERT_STREQ(r.out, "EPERM\n", "DoT over IPv6");
	/* a pinned address: TCP 443 is granted, QUIC to it is not (pins are per protocol and port) */
	{
		char script[1024];
		char *argv[] = {(char *)ktest_custode(), "run", "--policy", (char *)pol, "--", "/bin/sh", "-c", script, NULL};

		snprintf(script, sizeof(script), "%s gai-connect ok.test 443; %s connect 203.0.113.10 443 udp",
			 ktest_helper("dprobe"), ktest_helper("dprobe"));
		ktest_run(argv, -1, 60000, &r);
		ASSERT_STREQ(r.out, "ECONNREFUSED 203.0.113.10:443\nEPERM\n",
			     "TCP 443 passes custode (nothing listens there); UDP 443 to the same address does not");
	}
	dns_teardown(&f);
}

KTEST(dns_pin_expiry_and_ttls)
{
	static struct ktest_result r;
	struct dnsfix f;
	const char *pol;
	char script[1024];
	char *argv[16];

	if (!dns_setup(&f, DARGS("--ttl-min", "1", "--ttl-max", "2", "--pin-grace", "1")))
		return;
	pol = dns_policy(&f, "short", "{\"host\":\"short.test\",\"ports\":[8080]},{\"host\":\"ok.test\",\"ports\":[8080]},"
				      "{\"host\":\"bigttl.test\",\"ports\":[8080]}",
			 NULL);
	/* one run: look up (TTL 1: pinned for 1 + 1 s), connect, wait 3 s, connect again */
	snprintf(script, sizeof(script), "%s gai-connect short.test 8080; sleep 3; %s connect 203.0.113.11 8080",
		 ktest_helper("dprobe"), ktest_helper("dprobe"));
	argv[0] = (char *)ktest_custode();
	argv[1] = "run";
	argv[2] = "--policy";
	argv[3] = (char *)pol;
	argv[4] = "--";
	argv[5] = "/bin/sh";
	argv[6] = "-c";
	argv[7] = script;
	argv[8] = NULL;
	ktest_run(argv, -1, 60000, &r);
	ASSERT_STREQ(r.out, "ok 203.0.113.11:8080\nEPERM\n", "connect works, then is denied after expiry + grace");
	/* TTLs the run is told: never above the clamp, never above what upstream said */
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "ok.test", "A"));
	ASSERT_CONTAINS(r.out, "A 203.0.113.10 ttl 2", "300 s upstream, clamped to --ttl-max 2");
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "short.test", "A"));
	ASSERT_CONTAINS(r.out, "A 203.0.113.11 ttl 1", "1 s upstream");
	dns_run(&r, pol, NULL, DARGS("query", "8.8.8.8", "53", "udp", "bigttl.test", "A"));
	ASSERT_CONTAINS(r.out, "A 203.0.113.10 ttl 0", "2^32-1 upstream means 0 (RFC 2181)");
	dns_teardown(&f);
}

/*
 * The pin is in the map before the reply leaves: a connect right after the
 * lookup never races it. A fresh name and address every time (AAAA
 * 2001:db8:5::N, routed nowhere), so every connect depends on the pin its own lookup made.
 */
KTEST(dns_lookup_then_connect_never_races)
{
	static struct ktest_result r;
	struct dnsfix f;
	const char *pol;

	if (!dns_setup(&f, DARGS("--pin-quota", "20000")))
		return;
	pol = dns_policy(&f, "seq", "{\"host\":\"*.seq.test\",\"ports\":[9]}", NULL);
	dns_run(&r, pol, NULL, DARGS("connect", "2001:db8:5::5", "9"));
	ASSERT_STREQ(r.out, "EPERM\n", "control: no lookup, denied");
	dns_run(&r, pol, NULL, DARGS("loop", "n%ld.seq.test", "9", "10000", "inet6"));
	ASSERT_STREQ(r.out, "done 10000 denied 0 lookup_failed 0 other 10000\n",
		     "10,000 lookups, each followed at once by a connect: none denied (other: no route, past the hook)");
	dns_teardown(&f);
}
