// SPDX-License-Identifier: Apache-2.0
/*
 * The egress compiler (userspace/policy/net.c): --allow parsing, the keys
 * custode_policy_compile_net produces from parsed policies, its refusals,
 * and a bit-level model of the kernel's LPM trie fed with those keys,
 * checked against the union semantics of the policy's rules.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <criterion/criterion.h>

#include "custode/abi.h"
#include "policy/net.h"
#include "policy/policy.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
#define HEAD "\"schema\":\"custode.policy/v1\",\"name\":\"t\",\"version\":1"
#define DOC(C) "{" HEAD ",\"content\":" C "}"
#define NET(N) DOC("{\"network\":" N "}")
#define RS 0xa5c3e701u

/* ---- helpers ---- */

struct sb {
	char *s;
	size_t n, cap;
};

__attribute__((format(printf, 2, 3))) static void sb_printf(struct sb *b, const char *fmt, ...)
{
	va_list ap;
	int k;

	for (;;) {
		size_t room = b->cap - b->n;
		va_start(ap, fmt);
		k = vsnprintf(b->s ? b->s + b->n : NULL, room, fmt, ap);
		va_end(ap);
		cr_assert_geq(k, 0);
		if ((size_t)k < room) {
			b->n += (size_t)k;
			return;
		}
		b->cap = b->cap ? b->cap * 2 + (size_t)k : 4096 + (size_t)k;
		b->s = realloc(b->s, b->cap);
		cr_assert_not_null(b->s);
	}
}

static struct custode_policy *policy_of(const char *text)
{
	struct custode_policy *p = NULL;
	struct custode_refusal why = {0};
	int err = custode_policy_parse(text, strlen(text), &p, &why);

	cr_assert_eq(err, 0, "test bug: policy refused (%d): %s [%.300s]", err, why.detail, text);
	return p;
}

static void compile_ok(const struct custode_policy *p, const struct custode_allow *allows, size_t n,
		       uint32_t ruleset, struct custode_net_ruleset *rs)
{
	struct custode_refusal why = {0};
	int err = custode_policy_compile_net(p, allows, n, ruleset, rs, &why);

	cr_assert_eq(err, 0, "compile refused (%d): %s", err, why.detail);
}

static void addr_of(const char *s, uint8_t out[16])
{
	cr_assert_eq(custode_addr_parse(s, out), 0, "test bug: \"%s\"", s);
}

/* the key for (proto, port, prefixlen, address), or NULL; asserts it is unique */
static const struct custode_net_key *find_key(const struct custode_net_ruleset *rs, uint8_t proto, uint16_t port,
					      uint32_t prefixlen, const char *addr, uint32_t *flags)
{
	const struct custode_net_key *found = NULL;
	uint8_t a[16];

	addr_of(addr, a);
	for (size_t i = 0; i < rs->n; i++) {
		const struct custode_net_key *k = &rs->keys[i];
		if (k->proto == proto && k->port == port && k->prefixlen == prefixlen && !memcmp(k->addr, a, 16)) {
			cr_assert_null(found, "key %s/%u port %u proto %u twice", addr, prefixlen, port, proto);
			found = k;
			if (flags)
				*flags = rs->vals[i].flags;
		}
	}
	return found;
}

static void expect_key(const struct custode_net_ruleset *rs, uint8_t proto, uint16_t port, uint32_t prefixlen,
		       const char *addr, uint32_t want_flags)
{
	uint32_t flags = ~0u;
	const struct custode_net_key *k = find_key(rs, proto, port, prefixlen, addr, &flags);

	cr_assert_not_null(k, "no key %s prefixlen %u port %u proto %u (of %zu)", addr, prefixlen, port, proto, rs->n);
	cr_expect_eq(k->ruleset, RS, "ruleset %#x", k->ruleset);
	cr_expect_eq(k->_pad0, 0);
	cr_expect_eq(flags, want_flags, "%s port %u: flags %#x", addr, port, flags);
}

static bool is_mapped(const uint8_t a[16])
{
	static const uint8_t m[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return !memcmp(a, m, 12);
}

/* ---- custode_allow_parse ---- */

static struct custode_allow allow_ok(const char *s)
{
	struct custode_allow a;
	struct custode_refusal why = {0};

	memset(&a, 0x5c, sizeof(a));
	cr_assert_eq(custode_allow_parse(s, &a, &why), 0, "--allow %s refused: %s", s, why.detail);
	return a;
}

static void allow_refused(const char *s, int err, int reason)
{
	struct custode_allow a, keep;
	struct custode_refusal why = {0};
	int got;

	memset(&a, 0x5c, sizeof(a));
	memcpy(&keep, &a, sizeof(a));
	got = custode_allow_parse(s, &a, &why);
	cr_expect_eq(got, -err, "--allow \"%s\": %d, want %d", s, got, -err);
	cr_expect_eq(why.reason, reason, "--allow \"%s\": reason %d, want %d (%s)", s, why.reason, reason, why.detail);
	cr_expect(strstr(why.detail, s) != NULL, "--allow \"%s\": detail \"%s\" does not name it", s, why.detail);
	cr_expect_arr_eq(&a, &keep, sizeof(a), "--allow \"%s\": output written on refusal", s);
}

Test(net, allow_ipv4_tcp_default)
{
	struct custode_allow a = allow_ok("203.0.113.10:443");
	uint8_t want[16];

	addr_of("::ffff:203.0.113.10", want);
	cr_assert_arr_eq(a.addr, want, 16);
	cr_assert_eq(a.port, 443);
	cr_assert_eq(a.proto, IPPROTO_TCP);
	cr_assert_eq(a.proto, CUSTODE_PROTO_TCP);
}

Test(net, allow_udp_and_explicit_tcp)
{
	struct custode_allow a = allow_ok("203.0.113.10:53/udp");

	cr_assert_eq(a.port, 53);
	cr_assert_eq(a.proto, IPPROTO_UDP);
	a = allow_ok("203.0.113.10:8443/tcp");
	cr_assert_eq(a.port, 8443);
	cr_assert_eq(a.proto, IPPROTO_TCP);
	a = allow_ok("[2001:db8::1]:443/udp");
	cr_assert_eq(a.proto, IPPROTO_UDP);
}

Test(net, allow_port_bounds)
{
	cr_assert_eq(allow_ok("203.0.113.10:1").port, 1);
	cr_assert_eq(allow_ok("203.0.113.10:65535").port, 65535);
	cr_assert_eq(allow_ok("203.0.113.10:65535/udp").port, 65535);
}

Test(net, allow_ipv6_bracketed)
{
	struct custode_allow a = allow_ok("[2001:db8::1]:443");
	uint8_t want[16];

	addr_of("2001:db8::1", want);
	cr_assert_arr_eq(a.addr, want, 16);
	cr_assert_eq(a.port, 443);
	cr_assert_eq(a.proto, IPPROTO_TCP);
	a = allow_ok("[::1]:8080");
	addr_of("::1", want);
	cr_assert_arr_eq(a.addr, want, 16);
}

Test(net, allow_mapped_is_the_ipv4_address)
{
	struct custode_allow a = allow_ok("[::ffff:1.2.3.4]:80"), b = allow_ok("1.2.3.4:80");

	cr_assert(is_mapped(a.addr));
	cr_assert_arr_eq(a.addr, b.addr, 16);
	cr_assert_eq(a.port, 80);
	cr_assert_eq(a.proto, b.proto);
}

Test(net, allow_private_literals_accepted)
{
	/* literals are explicit grants, private or not: parsing does not classify */
	cr_assert_eq(allow_ok("127.0.0.1:8080").port, 8080);
	cr_assert_eq(allow_ok("169.254.169.254:80").port, 80);
	cr_assert_eq(allow_ok("[fd00:ec2::254]:80").port, 80);
	cr_assert_eq(allow_ok("10.0.0.1:5432").port, 5432);
}

Test(net, allow_usage_refusals)
{
	static const char *const bad[] = {
		"203.0.113.10",         /* missing port */
		"203.0.113.10:",        /* empty port */
		"203.0.113.10:0",       /* port 0 */
		"203.0.113.10:65536",   /* too large */
		"203.0.113.10:99999999999999999999",
		"203.0.113.10:-1",
		"203.0.113.10:abc",
		"203.0.113.10:44a",
		"203.0.113.10:0x1bb",
		"203.0.113.10:443/sctp",
		"203.0.113.10:443/",
		"203.0.113.10:443/udp/",
		"203.0.113.10:443/udpx",
		"203.0.113.10:/udp",
		"203.0.113.10:4 43",
		"2001:db8::1:443",       /* IPv6 without brackets */
		"::1:443",
		":443",                  /* empty host */
		"[2001:db8::1]443",
		"[2001:db8::1]",
		"[2001:db8::1]:",
		"[2001:db8::1:443",
		"[2001:db8::1]]:443",
		"[2001:db8::1]:443/sctp",
		"",
		":",
		"[]",
	};

	for (size_t i = 0; i < N_OF(bad); i++)
		allow_refused(bad[i], EINVAL, CUSTODE_REASON_RUN_USAGE);
}

/* A host name is a grant through the resolver: parsed (lowercased), compiled into a host entry, no literal key. */
Test(net, allow_host_name_goes_through_the_resolver)
{
	static const struct {
		const char *in, *host;
		uint16_t port;
		uint8_t proto;
	} cases[] = {{"pypi.org:443", "pypi.org", 443, CUSTODE_PROTO_TCP},
		     {"Files.PythonHosted.org:443/tcp", "files.pythonhosted.org", 443, CUSTODE_PROTO_TCP},
		     {"localhost:53/udp", "localhost", 53, CUSTODE_PROTO_UDP}};
	struct custode_refusal why;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct custode_allow a;
		struct custode_policy p = {.has_network = true, .listen = true};
		struct custode_net_ruleset rs;

		memset(&a, 0, sizeof(a));
		cr_assert_eq(custode_allow_parse(cases[i].in, &a, &why), 0, "%s: %s", cases[i].in, why.detail);
		cr_assert_str_eq(a.host, cases[i].host);
		cr_assert_eq(a.port, cases[i].port);
		cr_assert_eq(a.proto, cases[i].proto);
		cr_assert_eq(custode_policy_compile_net(&p, &a, 1, 7, &rs, &why), 0, "%s", why.detail);
		cr_assert_eq(rs.n, 0, "no kernel key: the resolver pins what the name resolves to");
		cr_assert_eq(rs.n_hosts, 1);
		cr_assert_str_eq(rs.hosts[0].name, cases[i].host);
		cr_assert_eq(rs.hosts[0].n_ports, 1);
		cr_assert_eq(rs.hosts[0].ports[0], cases[i].port);
		custode_net_ruleset_free(&rs);
	}
}

/*
 * BUG: userspace/policy/net.c:83-87 treats every host that is not an address
 * literal as a host name: "[]:443" (an empty host) is refused with
 * policy.unsupported, "host names need custode's resolver", instead of
 * run.usage like ":443".
 */
Test(net, allow_empty_bracketed_host_is_usage)
{
	allow_refused("[]:443", EINVAL, CUSTODE_REASON_RUN_USAGE);
}

/*
 * BUG: userspace/policy/net.c:83-87, same cause: text that is no host name at
 * all (a CIDR, a bracketed name, spaces) is reported as an unsupported host
 * name rather than as a usage error.
 */
Test(net, allow_non_host_garbage_is_usage)
{
	allow_refused("203.0.113.0/24:443", EINVAL, CUSTODE_REASON_RUN_USAGE);
	allow_refused("[pypi.org]:443", EINVAL, CUSTODE_REASON_RUN_USAGE);
	allow_refused("bad host!:443", EINVAL, CUSTODE_REASON_RUN_USAGE);
}

/* ---- custode_policy_compile_net: keys ---- */

Test(net, cidr_v4_keys_per_port)
{
	struct custode_policy *p =
		policy_of(NET("{\"egress\":[{\"cidr\":\"203.0.113.0/24\",\"ports\":[443,80,8443]}]}"));
	struct custode_net_ruleset rs;

	compile_ok(p, NULL, 0, RS, &rs);
	cr_assert_eq(rs.n, 3);
	for (size_t i = 0; i < rs.n; i++) {
		cr_assert_eq(rs.keys[i].prefixlen, CUSTODE_NET_KEY_PREFIX_BITS + 96 + 24);
		cr_assert_eq(rs.keys[i].prefixlen, 64u + 96 + 24);
		cr_assert(is_mapped(rs.keys[i].addr), "IPv4 rule not in the mapped form");
		cr_assert_eq(rs.keys[i].proto, IPPROTO_TCP);
	}
	expect_key(&rs, IPPROTO_TCP, 443, 184, "203.0.113.0", 0);
	expect_key(&rs, IPPROTO_TCP, 80, 184, "203.0.113.0", 0);
	expect_key(&rs, IPPROTO_TCP, 8443, 184, "203.0.113.0", 0);
	cr_assert_eq(rs.n_priv, 0);
	cr_assert(rs.listen);
	custode_net_ruleset_free(&rs);
	cr_assert_eq(rs.n, 0);
	cr_assert_null(rs.keys);
	custode_net_ruleset_free(&rs); /* twice is harmless */
	custode_policy_free(p);
}

Test(net, cidr_udp_when_asked)
{
	struct custode_policy *p = policy_of(NET("{\"egress\":["
						 "{\"cidr\":\"198.51.100.0/24\",\"ports\":[53,443],\"proto\":\"udp\"},"
						 "{\"cidr\":\"198.51.100.0/24\",\"ports\":[443],\"proto\":\"tcp\"}]}"));
	struct custode_net_ruleset rs;

	compile_ok(p, NULL, 0, RS, &rs);
	cr_assert_eq(rs.n, 3);
	expect_key(&rs, IPPROTO_UDP, 53, 184, "198.51.100.0", 0);
	expect_key(&rs, IPPROTO_UDP, 443, 184, "198.51.100.0", 0);
	expect_key(&rs, IPPROTO_TCP, 443, 184, "198.51.100.0", 0);
	cr_assert_null(find_key(&rs, IPPROTO_TCP, 53, 184, "198.51.100.0", NULL));
	custode_net_ruleset_free(&rs);
	custode_policy_free(p);
}

Test(net, cidr_prefix_lengths)
{
	struct custode_policy *p = policy_of(NET("{\"egress\":["
						 "{\"cidr\":\"0.0.0.0/0\",\"ports\":[1]},"
						 "{\"cidr\":\"203.0.113.10\",\"ports\":[2]},"
						 "{\"cidr\":\"203.0.113.10/32\",\"ports\":[3]},"
						 "{\"cidr\":\"10.0.0.0/8\",\"ports\":[4]},"
						 "{\"cidr\":\"2001:db8::/32\",\"ports\":[5]},"
						 "{\"cidr\":\"2001:db8::10\",\"ports\":[6]},"
						 "{\"cidr\":\"::/0\",\"ports\":[7]},"
						 "{\"cidr\":\"::ffff:192.0.2.0/120\",\"ports\":[8]},"
						 "{\"cidr\":\"172.16.0.0/12\",\"ports\":[9]}]}"));
	struct custode_net_ruleset rs;

	compile_ok(p, NULL, 0, RS, &rs);
	cr_assert_eq(rs.n, 9);
	expect_key(&rs, IPPROTO_TCP, 1, 64 + 96, "0.0.0.0", 0);
	expect_key(&rs, IPPROTO_TCP, 2, 64 + 128, "203.0.113.10", 0);
	expect_key(&rs, IPPROTO_TCP, 3, 64 + 128, "203.0.113.10", 0);
	expect_key(&rs, IPPROTO_TCP, 4, 64 + 96 + 8, "10.0.0.0", 0);
	expect_key(&rs, IPPROTO_TCP, 5, 64 + 32, "2001:db8::", 0);
	expect_key(&rs, IPPROTO_TCP, 6, 64 + 128, "2001:db8::10", 0);
	expect_key(&rs, IPPROTO_TCP, 7, 64, "::", 0);
	expect_key(&rs, IPPROTO_TCP, 8, 64 + 96 + 24, "192.0.2.0", 0);
	expect_key(&rs, IPPROTO_TCP, 9, 64 + 96 + 12, "172.16.0.0", 0);
	for (size_t i = 0; i < rs.n; i++) {
		/* host bits zero: the trie ignores them, but a key is canonical */
		for (uint32_t bit = rs.keys[i].prefixlen - 64; bit < 128; bit++)
			cr_assert_eq(rs.keys[i].addr[bit / 8] & (0x80 >> (bit % 8)), 0, "key %zu has host bits", i);
		cr_assert_leq(rs.keys[i].prefixlen, 8 * (sizeof(struct custode_net_key) - 4), "beyond the key data");
	}
	custode_net_ruleset_free(&rs);
	custode_policy_free(p);
}

Test(net, ruleset_is_copied)
{
	struct custode_policy *p = policy_of(NET("{\"egress\":[{\"cidr\":\"203.0.113.0/24\",\"ports\":[443]}],"
						 "\"private\":[\"10.0.0.0/8\"]}"));
	struct custode_allow a = allow_ok("203.0.113.9:22");
	static const uint32_t sets[] = {0, 1, RS, 0xffffffffu};
	struct custode_net_ruleset rs;

	for (size_t s = 0; s < N_OF(sets); s++) {
		compile_ok(p, &a, 1, sets[s], &rs);
		cr_assert_eq(rs.n, 2);
		cr_assert_eq(rs.n_priv, 1);
		for (size_t i = 0; i < rs.n; i++)
			cr_assert_eq(rs.keys[i].ruleset, sets[s]);
		cr_assert_eq(rs.priv[0].ruleset, sets[s]);
		custode_net_ruleset_free(&rs);
	}
	custode_policy_free(p);
}

Test(net, allow_entries_are_literal_128)
{
	struct custode_policy *p = policy_of(NET("{\"egress\":[{\"cidr\":\"203.0.113.0/24\",\"ports\":[443]}]}"));
	struct custode_allow a[3];
	struct custode_net_ruleset rs;

	a[0] = allow_ok("203.0.113.10:22");
	a[1] = allow_ok("[2001:db8::1]:53/udp");
	a[2] = allow_ok("10.0.0.1:5432");
	compile_ok(p, a, 3, RS, &rs);
	cr_assert_eq(rs.n, 4);
	expect_key(&rs, IPPROTO_TCP, 443, 184, "203.0.113.0", 0);
	expect_key(&rs, IPPROTO_TCP, 22, 192, "203.0.113.10", CUSTODE_NET_RULE_LITERAL);
	expect_key(&rs, IPPROTO_UDP, 53, 192, "2001:db8::1", CUSTODE_NET_RULE_LITERAL);
	expect_key(&rs, IPPROTO_TCP, 5432, 192, "10.0.0.1", CUSTODE_NET_RULE_LITERAL);
	custode_net_ruleset_free(&rs);
	custode_policy_free(p);
}

Test(net, allow_without_network_section)
{
	struct custode_policy *p = policy_of(DOC("{}"));
	struct custode_allow a = allow_ok("203.0.113.10:443");
	struct custode_net_ruleset rs;

	compile_ok(p, &a, 1, RS, &rs);
	cr_assert_eq(rs.n, 1);
	expect_key(&rs, IPPROTO_TCP, 443, 192, "203.0.113.10", CUSTODE_NET_RULE_LITERAL);
	cr_assert(rs.listen);
	custode_net_ruleset_free(&rs);
	custode_policy_free(p);
}

Test(net, private_keys)
{
	struct custode_policy *p = policy_of(NET("{\"private\":[\"10.1.2.3/32\",\"10.0.0.0/8\",\"169.254.169.254\","
						 "\"fd00::/8\",\"fd00:ec2::254\",\"::1/128\",\"0.0.0.0/0\"]}"));
	struct custode_net_ruleset rs;
	static const struct {
		const char *addr;
		uint32_t prefixlen;
	} want[] = {
		{"10.1.2.3", 32 + 128},      {"10.0.0.0", 32 + 96 + 8}, {"169.254.169.254", 32 + 128},
		{"fd00::", 32 + 8},          {"fd00:ec2::254", 32 + 128}, {"::1", 32 + 128},
		{"0.0.0.0", 32 + 96},
	};

	compile_ok(p, NULL, 0, RS, &rs);
	cr_assert_eq(rs.n, 0, "private grants are not egress rules");
	cr_assert_eq(rs.n_priv, N_OF(want));
	cr_assert_not_null(rs.priv);
	for (size_t i = 0; i < N_OF(want); i++) {
		uint8_t a[16];
		bool found = false;
		addr_of(want[i].addr, a);
		for (size_t j = 0; j < rs.n_priv; j++)
			if (!memcmp(rs.priv[j].addr, a, 16) && rs.priv[j].prefixlen == want[i].prefixlen) {
				cr_assert_eq(rs.priv[j].ruleset, RS);
				found = true;
			}
		cr_expect(found, "no private key %s prefixlen %u", want[i].addr, want[i].prefixlen);
	}
	for (size_t j = 0; j < rs.n_priv; j++)
		cr_assert_leq(rs.priv[j].prefixlen, 8 * (sizeof(struct custode_private_key) - 4));
	custode_net_ruleset_free(&rs);
	cr_assert_null(rs.priv);
	cr_assert_eq(rs.n_priv, 0);
	custode_policy_free(p);
}

/* Host entries are not kernel keys: they go to the resolver (userspace/dns), next to the CIDR keys. */
Test(net, host_entries_go_to_the_resolver)
{
	struct custode_policy *p = policy_of(NET("{\"egress\":[{\"cidr\":\"203.0.113.0/24\",\"ports\":[443,80]},"
						 "{\"cidr\":\"2001:db8::/32\",\"ports\":[443]},"
						 "{\"host\":\"PyPI.org.\",\"ports\":[443]}],"
						 "\"private\":[\"10.0.0.0/8\"]}"));
	struct custode_net_ruleset rs;
	struct custode_refusal why = {0};

	cr_assert_eq(custode_policy_compile_net(p, NULL, 0, RS, &rs, &why), 0, "%s", why.detail);
	cr_assert_eq(rs.n, 3, "the CIDR keys");
	cr_assert_eq(rs.n_priv, 1);
	cr_assert_eq(rs.n_hosts, 1);
	cr_assert_str_eq(rs.hosts[0].name, "pypi.org", "lowercase, no trailing dot");
	cr_assert_eq(rs.hosts[0].proto, CUSTODE_PROTO_TCP);
	cr_assert_eq(rs.hosts[0].n_ports, 1);
	cr_assert_eq(rs.hosts[0].ports[0], 443);
	custode_net_ruleset_free(&rs);
	custode_policy_free(p);
}

Test(net, host_entry_with_allow)
{
	struct custode_policy *p = policy_of(NET("{\"egress\":[{\"host\":\"*.example.com\",\"ports\":[443]}]}"));
	struct custode_allow a = allow_ok("203.0.113.10:443");
	struct custode_net_ruleset rs;
	struct custode_refusal why = {0};

	cr_assert_eq(custode_policy_compile_net(p, &a, 1, RS, &rs, &why), 0, "%s", why.detail);
	cr_assert_eq(rs.n, 1);
	cr_assert_eq(rs.n_hosts, 1);
	cr_assert_str_eq(rs.hosts[0].name, "*.example.com");
	custode_net_ruleset_free(&rs);
	custode_policy_free(p);
}

Test(net, listen)
{
	struct custode_net_ruleset rs;
	struct custode_policy *p = policy_of(NET("{}"));

	compile_ok(p, NULL, 0, RS, &rs);
	cr_assert(rs.listen, "listen is true by default");
	custode_net_ruleset_free(&rs);
	custode_policy_free(p);

	p = policy_of(NET("{\"listen\":false,\"egress\":[{\"cidr\":\"203.0.113.0/24\",\"ports\":[443]}]}"));
	compile_ok(p, NULL, 0, RS, &rs);
	cr_assert_not(rs.listen);
	cr_assert_eq(rs.n, 1);
	custode_net_ruleset_free(&rs);
	custode_policy_free(p);

	p = policy_of(NET("{\"listen\":true}"));
	compile_ok(p, NULL, 0, RS, &rs);
	cr_assert(rs.listen);
	custode_net_ruleset_free(&rs);
	custode_policy_free(p);
}

Test(net, no_network_section_compiles_to_nothing)
{
	struct custode_policy *p = policy_of(DOC("{\"filesystem\":[{\"path\":\"/usr\",\"allow\":[\"read\"]}]}"));
	struct custode_net_ruleset rs;

	memset(&rs, 0x5c, sizeof(rs));
	compile_ok(p, NULL, 0, RS, &rs);
	cr_assert_eq(rs.n, 0);
	cr_assert_eq(rs.n_priv, 0);
	cr_assert(rs.listen);
	custode_net_ruleset_free(&rs);
	custode_policy_free(p);

	p = policy_of(NET("{\"egress\":[],\"private\":[]}"));
	compile_ok(p, NULL, 0, RS, &rs);
	cr_assert_eq(rs.n, 0);
	cr_assert_eq(rs.n_priv, 0);
	cr_assert(rs.listen);
	custode_net_ruleset_free(&rs);
	custode_policy_free(p);
}

/*
 * BUG: userspace/policy/net.c:100 says "the same (proto, port, prefix) twice:
 * keep one, literal wins", but add_key keeps every copy: a repeated port, a
 * repeated rule or a --allow equal to a /32 rule each produce duplicate keys,
 * all counted against CUSTODE_MAX_NET_KEYS_PER_RUN; the literal flag wins
 * only because the allows happen to be installed after the rules.
 */
Test(net, duplicate_keys_kept_once_literal_wins)
{
	struct custode_policy *p = policy_of(NET("{\"egress\":["
						 "{\"cidr\":\"203.0.113.10/32\",\"ports\":[443,443]},"
						 "{\"cidr\":\"203.0.113.10\",\"ports\":[443]}]}"));
	struct custode_allow a[2];
	struct custode_net_ruleset rs;
	size_t n443 = 0;

	a[0] = allow_ok("203.0.113.10:443");
	a[1] = allow_ok("[::ffff:203.0.113.10]:443");
	compile_ok(p, a, 2, RS, &rs);
	for (size_t i = 0; i < rs.n; i++)
		n443 += rs.keys[i].port == 443;
	cr_expect_eq(rs.n, 1, "%zu keys for one (proto, port, prefix)", rs.n);
	cr_expect_eq(n443, rs.n);
	for (size_t i = 0; i < rs.n; i++)
		cr_expect_eq(rs.vals[i].flags, CUSTODE_NET_RULE_LITERAL, "key %zu lost the literal flag", i);
	custode_net_ruleset_free(&rs);
	custode_policy_free(p);
}

/* ---- the per-run limit ---- */

/* n_rules distinct /32 rules of 1024 ports each (1..1024), as a policy document */
static struct custode_policy *big_policy(size_t n_rules)
{
	struct sb b = {0};
	struct custode_policy *p;

	sb_printf(&b, "{" HEAD ",\"content\":{\"network\":{\"egress\":[");
	for (size_t r = 0; r < n_rules; r++) {
		sb_printf(&b, "%s{\"cidr\":\"198.51.%zu.%zu/32\",\"ports\":[", r ? "," : "", r / 256, r % 256);
		for (int port = 1; port <= 1024; port++)
			sb_printf(&b, "%s%d", port > 1 ? "," : "", port);
		sb_printf(&b, "]}");
	}
	sb_printf(&b, "]}}}");
	p = policy_of(b.s);
	free(b.s);
	return p;
}

static void expect_too_large(const struct custode_policy *p, const struct custode_allow *a, size_t n)
{
	struct custode_net_ruleset rs, keep;
	struct custode_refusal why = {0};
	int err;

	memset(&rs, 0x5c, sizeof(rs));
	memcpy(&keep, &rs, sizeof(rs));
	err = custode_policy_compile_net(p, a, n, RS, &rs, &why);
	cr_assert_eq(err, -E2BIG, "%d: %s", err, why.detail);
	cr_assert_eq(why.reason, CUSTODE_REASON_POLICY_TOO_LARGE);
	cr_assert(strstr(why.detail, "content.network") != NULL, "detail: %s", why.detail);
	cr_assert(strstr(why.detail, "131072") != NULL, "detail names the limit: %s", why.detail);
	cr_assert_arr_eq(&rs, &keep, sizeof(rs), "output written on refusal");
}

Test(net, key_limit, .timeout = 60)
{
	const size_t per_rule = 1024, at_limit = CUSTODE_MAX_NET_KEYS_PER_RUN / 1024;
	struct custode_policy *p;
	struct custode_net_ruleset rs;
	struct custode_allow a = allow_ok("203.0.113.10:443");

	cr_assert_eq(CUSTODE_MAX_NET_KEYS_PER_RUN % per_rule, 0, "test assumes a multiple of 1024");
	/* exactly the limit: accepted */
	p = big_policy(at_limit);
	cr_assert_eq(p->n_egress, at_limit);
	compile_ok(p, NULL, 0, RS, &rs);
	cr_assert_eq(rs.n, (size_t)CUSTODE_MAX_NET_KEYS_PER_RUN);
	expect_key(&rs, IPPROTO_TCP, 1024, 192, "198.51.0.127", 0);
	custode_net_ruleset_free(&rs);
	/* one --allow more: refused */
	expect_too_large(p, &a, 1);
	custode_policy_free(p);
	/* one rule more: refused */
	p = big_policy(at_limit + 1);
	expect_too_large(p, NULL, 0);
	custode_policy_free(p);
}

/* ---- the LPM model ---- */

/*
 * BPF_MAP_TYPE_LPM_TRIE as the engine uses it: an entry matches a lookup key
 * when its first prefixlen bits of the data after the prefixlen field (MSB
 * first, byte by byte) equal the lookup's; the longest match wins; an update
 * of an existing (prefixlen, prefix) replaces its value (BPF_ANY, in the
 * order custode_engine_add_net installs the keys).
 */
struct lpm_entry {
	struct custode_net_key key;
	uint32_t flags;
};

struct lpm {
	struct lpm_entry *e;
	size_t n, cap;
};

static const uint8_t *key_data(const struct custode_net_key *k)
{
	return (const uint8_t *)k + offsetof(struct custode_net_key, ruleset);
}

static bool bits_equal(const uint8_t *a, const uint8_t *b, uint32_t nbits)
{
	for (uint32_t bit = 0; bit < nbits; bit++) {
		uint8_t m = (uint8_t)(0x80u >> (bit % 8));
		if ((a[bit / 8] & m) != (b[bit / 8] & m))
			return false;
	}
	return true;
}

static void lpm_update(struct lpm *t, const struct custode_net_key *k, uint32_t flags)
{
	cr_assert_geq(k->prefixlen, CUSTODE_NET_KEY_PREFIX_BITS);
	cr_assert_leq(k->prefixlen, CUSTODE_NET_KEY_PREFIX_BITS + 128);
	for (size_t i = 0; i < t->n; i++)
		if (t->e[i].key.prefixlen == k->prefixlen && bits_equal(key_data(&t->e[i].key), key_data(k), k->prefixlen)) {
			t->e[i].flags = flags;
			return;
		}
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		t->e = realloc(t->e, t->cap * sizeof(*t->e));
		cr_assert_not_null(t->e);
	}
	t->e[t->n].key = *k;
	t->e[t->n++].flags = flags;
}

static void lpm_add(struct lpm *t, const struct custode_net_ruleset *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		lpm_update(t, &rs->keys[i], rs->vals[i].flags);
}

/* The engine's lookup (bpf/net.bpf.c egress_decide): full-length key. */
static const struct lpm_entry *lpm_lookup(const struct lpm *t, uint32_t ruleset, uint8_t proto, uint16_t port,
					  const uint8_t addr[16])
{
	struct custode_net_key look;
	const struct lpm_entry *best = NULL;

	memset(&look, 0, sizeof(look));
	look.prefixlen = CUSTODE_NET_KEY_PREFIX_BITS + 128;
	look.ruleset = ruleset;
	look.proto = proto;
	look.port = port;
	memcpy(look.addr, addr, 16);
	for (size_t i = 0; i < t->n; i++)
		if (bits_equal(key_data(&t->e[i].key), key_data(&look), t->e[i].key.prefixlen) &&
		    (!best || t->e[i].key.prefixlen > best->key.prefixlen))
			best = &t->e[i];
	return best;
}

/* The policy, independently of the compiler: a rule covers (addr, port, proto). */
struct model_rule {
	const char *cidr;
	const char *proto; /* NULL: default */
	uint16_t ports[4];
};

static const struct model_rule model_rules[] = {
	{"0.0.0.0/0", NULL, {443}},
	{"203.0.113.0/24", NULL, {80}},
	{"203.0.113.128/25", "udp", {8080, 443}},
	{"198.51.100.7/32", NULL, {22}},
	{"198.51.100.0/24", "tcp", {8443, 22, 80}},
	{"10.0.0.0/8", NULL, {5432}},
	{"192.0.2.0/24", NULL, {25}},
	{"::ffff:192.0.2.0/120", NULL, {25, 587}},
	{"192.0.2.64/26", NULL, {26}},
	{"2001:db8::/32", NULL, {443}},
	{"2001:db8:1::/48", NULL, {80, 8443}},
	{"2001:db8:1:2::/64", "udp", {53, 443}},
	{"2001:db8:1:2::5", NULL, {22}},
	{"2606:4700::/32", "udp", {443}},
	{"fd00::/8", NULL, {5432}},
};

static const char *const model_allows[] = {
	"203.0.113.10:22", "[2001:db8:1::5]:443/udp", "10.1.2.3:80", "198.51.100.7:22", "198.51.100.9:9999/udp",
};

static bool in_prefix(const uint8_t a[16], const uint8_t base[16], unsigned plen)
{
	return bits_equal(a, base, plen);
}

static void cidr_of(const char *cidr, uint8_t base[16], unsigned *plen)
{
	char buf[64];
	char *slash;

	snprintf(buf, sizeof(buf), "%s", cidr);
	slash = strchr(buf, '/');
	if (slash)
		*slash = 0;
	addr_of(buf, base);
	if (strchr(buf, ':'))
		*plen = slash ? (unsigned)atoi(slash + 1) : 128;
	else
		*plen = 96 + (slash ? (unsigned)atoi(slash + 1) : 32);
}

static bool model_covered(const uint8_t addr[16], uint16_t port, uint8_t proto, bool *literal)
{
	bool any = false;

	*literal = false;
	for (size_t i = 0; i < N_OF(model_rules); i++) {
		const struct model_rule *r = &model_rules[i];
		uint8_t rproto = r->proto && !strcmp(r->proto, "udp") ? IPPROTO_UDP : IPPROTO_TCP;
		uint8_t base[16];
		unsigned plen;

		cidr_of(r->cidr, base, &plen);
		if (rproto != proto || !in_prefix(addr, base, plen))
			continue;
		for (size_t j = 0; j < N_OF(r->ports) && r->ports[j]; j++)
			any |= r->ports[j] == port;
	}
	for (size_t i = 0; i < N_OF(model_allows); i++) {
		struct custode_allow a = allow_ok(model_allows[i]);
		if (a.proto == proto && a.port == port && !memcmp(a.addr, addr, 16))
			any = *literal = true;
	}
	return any;
}

static struct custode_policy *model_policy(void)
{
	struct sb b = {0};
	struct custode_policy *p;

	sb_printf(&b, "{" HEAD ",\"content\":{\"network\":{\"egress\":[");
	for (size_t i = 0; i < N_OF(model_rules); i++) {
		const struct model_rule *r = &model_rules[i];
		sb_printf(&b, "%s{\"cidr\":\"%s\",", i ? "," : "", r->cidr);
		if (r->proto)
			sb_printf(&b, "\"proto\":\"%s\",", r->proto);
		sb_printf(&b, "\"ports\":[");
		for (size_t j = 0; j < N_OF(r->ports) && r->ports[j]; j++)
			sb_printf(&b, "%s%u", j ? "," : "", r->ports[j]);
		sb_printf(&b, "]}");
	}
	sb_printf(&b, "]}}}");
	p = policy_of(b.s);
	free(b.s);
	return p;
}

static void model_allows_parsed(struct custode_allow *out)
{
	for (size_t i = 0; i < N_OF(model_allows); i++)
		out[i] = allow_ok(model_allows[i]);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)((rng >> 11) % n);
}

/* A destination near the rules: inside, at the edges of and just outside their prefixes. */
static void random_dest(uint8_t a[16])
{
	static const char *const near[] = {
		"203.0.113.0",   "203.0.113.127", "203.0.113.128", "203.0.113.255", "203.0.112.255", "203.0.114.0",
		"198.51.100.7",  "198.51.100.8",  "198.51.100.6",  "198.51.100.9",  "10.1.2.3",      "10.255.255.255",
		"11.0.0.0",      "192.0.2.63",    "192.0.2.64",    "192.0.2.127",   "192.0.2.128",   "8.8.8.8",
		"2001:db8::",    "2001:db8:1::",  "2001:db8:1::5", "2001:db8:1:2::", "2001:db8:1:2::5",
		"2001:db8:1:3::", "2001:db9::",   "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", "2606:4700::1111",
		"fd00::1",       "fc00::1",       "::ffff:0:203.0.113.10", "::203.0.113.10", "64:ff9b::cb00:710a",
	};
	uint32_t how = rnd(4);

	addr_of(near[rnd(N_OF(near))], a);
	if (how == 1) { /* flip low bits */
		a[15] ^= (uint8_t)rnd(256);
		if (rnd(2))
			a[14] ^= (uint8_t)rnd(256);
	} else if (how == 2) { /* flip one bit anywhere in the address part that matters */
		unsigned bit = is_mapped(a) ? 96 + rnd(32) : rnd(128);
		a[bit / 8] ^= (uint8_t)(0x80u >> (bit % 8));
	} else if (how == 3) { /* anything at all, in either family */
		for (int i = 0; i < 16; i++)
			a[i] = (uint8_t)rnd(256);
		if (rnd(2)) {
			memset(a, 0, 10);
			a[10] = a[11] = 0xff;
		}
	}
}

static const uint16_t model_ports[] = {22, 25, 26, 53, 80, 443, 587, 5432, 8080, 8443, 9999, 1, 65535};

static void check_dest(const struct lpm *t, uint32_t ruleset, const uint8_t a[16], uint16_t port, uint8_t proto,
		       unsigned *hits, unsigned *literals)
{
	bool literal, want = model_covered(a, port, proto, &literal);
	const struct lpm_entry *e = lpm_lookup(t, ruleset, proto, port, a);
	char buf[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, a, buf, sizeof(buf));
	cr_assert_eq(e != NULL, want, "%s port %u proto %u: trie %s, policy %s", buf, port, proto,
		     e ? "matches" : "no match", want ? "covers it" : "does not");
	if (e) {
		cr_assert_eq(e->key.ruleset, ruleset);
		cr_assert_eq(e->key.proto, proto);
		cr_assert_eq(e->key.port, port);
		cr_assert_eq(!!(e->flags & CUSTODE_NET_RULE_LITERAL), literal, "%s port %u proto %u: literal flag %#x",
			     buf, port, proto, e->flags);
		(*hits)++;
		*literals += literal;
	}
}

static void check_named(const struct lpm *t, const char *addr, uint16_t port, uint8_t proto, bool want)
{
	uint8_t a[16];
	bool literal;

	addr_of(addr, a);
	cr_assert_eq(model_covered(a, port, proto, &literal), want, "test bug: model on %s:%u", addr, port);
	cr_assert_eq(lpm_lookup(t, RS, proto, port, a) != NULL, want, "%s port %u proto %u: want %s", addr, port, proto,
		     want ? "a match" : "no match");
}

Test(net, lpm_model_union_semantics)
{
	struct custode_policy *p = model_policy();
	struct custode_allow a[N_OF(model_allows)];
	struct custode_net_ruleset rs;
	struct lpm t = {0};
	unsigned hits = 0, literals = 0, checked = 0;

	model_allows_parsed(a);
	compile_ok(p, a, N_OF(a), RS, &rs);
	lpm_add(&t, &rs);

	/* the named cases */
	check_named(&t, "203.0.113.10", 443, IPPROTO_TCP, true); /* 0.0.0.0/0:443 under 203.0.113.0/24:80 */
	check_named(&t, "203.0.113.10", 80, IPPROTO_TCP, true);
	check_named(&t, "203.0.113.10", 22, IPPROTO_TCP, true);  /* literal */
	check_named(&t, "203.0.113.11", 22, IPPROTO_TCP, false);
	check_named(&t, "203.0.113.10", 8080, IPPROTO_TCP, false);
	check_named(&t, "203.0.113.10", 443, IPPROTO_UDP, false); /* 0.0.0.0/0 is tcp */
	check_named(&t, "203.0.113.200", 8080, IPPROTO_UDP, true);
	check_named(&t, "203.0.113.200", 443, IPPROTO_UDP, true);
	check_named(&t, "203.0.113.200", 8080, IPPROTO_TCP, false);
	check_named(&t, "203.0.113.127", 8080, IPPROTO_UDP, false);
	check_named(&t, "198.51.100.7", 22, IPPROTO_TCP, true);
	check_named(&t, "198.51.100.8", 22, IPPROTO_TCP, true);  /* the /24 grants 22 too */
	check_named(&t, "198.51.100.7", 443, IPPROTO_TCP, true); /* the /32 does not hide the /0 */
	check_named(&t, "198.51.100.7", 8443, IPPROTO_TCP, true); /* nor the /24 */
	check_named(&t, "198.51.101.7", 22, IPPROTO_TCP, false);
	check_named(&t, "192.0.2.70", 26, IPPROTO_TCP, true);
	check_named(&t, "192.0.2.70", 25, IPPROTO_TCP, true);    /* the /24 under the /26 */
	check_named(&t, "192.0.2.70", 587, IPPROTO_TCP, true);
	check_named(&t, "192.0.2.7", 26, IPPROTO_TCP, false);
	check_named(&t, "8.8.8.8", 443, IPPROTO_TCP, true);
	check_named(&t, "8.8.8.8", 53, IPPROTO_UDP, false);
	check_named(&t, "2001:db8:1:2::5", 443, IPPROTO_TCP, true);  /* 2001:db8::/32 */
	check_named(&t, "2001:db8:1:2::5", 80, IPPROTO_TCP, true);   /* 2001:db8:1::/48 */
	check_named(&t, "2001:db8:1:2::5", 22, IPPROTO_TCP, true);   /* the /128 */
	check_named(&t, "2001:db8:1:2::5", 443, IPPROTO_UDP, true);  /* the /64 */
	check_named(&t, "2001:db8:1:2::6", 22, IPPROTO_TCP, false);
	check_named(&t, "2001:db8:1::5", 443, IPPROTO_UDP, true);    /* literal */
	check_named(&t, "2001:db8:2::5", 80, IPPROTO_TCP, false);
	check_named(&t, "2001:db9::1", 443, IPPROTO_TCP, false);
	check_named(&t, "::ffff:203.0.113.10", 443, IPPROTO_TCP, true);
	check_named(&t, "::203.0.113.10", 443, IPPROTO_TCP, false);  /* not the IPv4 address */

	/* exhaustive over the named neighbourhoods, then random destinations */
	for (int i = 0; i < 600; i++) {
		uint8_t d[16];
		random_dest(d);
		for (size_t j = 0; j < N_OF(model_ports); j++) {
			check_dest(&t, RS, d, model_ports[j], IPPROTO_TCP, &hits, &literals);
			check_dest(&t, RS, d, model_ports[j], IPPROTO_UDP, &hits, &literals);
			checked += 2;
		}
		check_dest(&t, RS, d, (uint16_t)(1 + rnd(65535)), rnd(2) ? IPPROTO_TCP : IPPROTO_UDP, &hits, &literals);
		checked++;
	}
	/* every literal itself */
	for (size_t i = 0; i < N_OF(a); i++)
		check_dest(&t, RS, a[i].addr, a[i].port, a[i].proto, &hits, &literals);

	cr_assert_gt(checked, 10000);
	cr_assert_gt(hits, 500, "only %u of %u lookups matched", hits, checked);
	cr_assert_gt(checked - hits, 1000);
	cr_assert_geq(literals, N_OF(a));
	free(t.e);
	custode_net_ruleset_free(&rs);
	custode_policy_free(p);
}

Test(net, lpm_model_rulesets_do_not_see_each_other)
{
	struct custode_policy *p = model_policy(), *q = policy_of(NET("{\"egress\":[{\"cidr\":\"10.0.0.0/8\",\"ports\":[1]}]}"));
	struct custode_allow a[N_OF(model_allows)];
	struct custode_net_ruleset r1, r2;
	struct lpm t = {0};
	uint8_t d[16];

	model_allows_parsed(a);
	compile_ok(p, a, N_OF(a), RS, &r1);
	compile_ok(q, NULL, 0, RS ^ 0x100, &r2); /* differs in one bit of another byte */
	lpm_add(&t, &r1);
	lpm_add(&t, &r2);
	addr_of("203.0.113.10", d);
	cr_assert_not_null(lpm_lookup(&t, RS, IPPROTO_TCP, 443, d));
	cr_assert_null(lpm_lookup(&t, RS ^ 0x100, IPPROTO_TCP, 443, d));
	cr_assert_null(lpm_lookup(&t, RS + 1, IPPROTO_TCP, 443, d));
	addr_of("10.9.9.9", d);
	cr_assert_not_null(lpm_lookup(&t, RS ^ 0x100, IPPROTO_TCP, 1, d));
	cr_assert_null(lpm_lookup(&t, RS, IPPROTO_TCP, 1, d));
	cr_assert_not_null(lpm_lookup(&t, RS, IPPROTO_TCP, 5432, d));
	cr_assert_null(lpm_lookup(&t, RS ^ 0x100, IPPROTO_TCP, 5432, d));
	/* proto and port are exact: neighbours in the key bits do not match */
	addr_of("8.8.8.8", d);
	cr_assert_null(lpm_lookup(&t, RS, IPPROTO_TCP, 442, d));
	cr_assert_null(lpm_lookup(&t, RS, IPPROTO_TCP, 444, d));
	cr_assert_null(lpm_lookup(&t, RS, IPPROTO_TCP, 443 | 0x8000, d));
	cr_assert_null(lpm_lookup(&t, RS, IPPROTO_TCP + 1, 443, d));
	free(t.e);
	custode_net_ruleset_free(&r1);
	custode_net_ruleset_free(&r2);
	custode_policy_free(p);
	custode_policy_free(q);
}
