// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target over custode's DNS module (selftests/fuzz/run-dns-fuzz):
 * userspace/dns/wire.c (parse, build), vet.c and names.c. Each input is used
 * four ways:
 *   1. as a query from a run: parsed; if it parses, the replies the resolver
 *      would build for it (refused, and answered with two addresses) must
 *      parse back with the client's question echoed byte for byte;
 *   2. as an upstream answer to its own question: vetted (trusted and strict
 *      CNAME modes, nothing special granted); the reply built from what
 *      survives must parse back and hold only the chain and ordinary
 *      addresses of the asked type, never more than the limits allow;
 *   3. as the text of a names file, matched against a name taken from the
 *      input;
 *   4. as a host name in text form, which must round-trip through a query.
 * Crashes, sanitizer reports and the abort()s below are findings.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "custode/addr.h"
#include "dns/names.h"
#include "dns/vet.h"
#include "dns/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct custode_dns_msg msg, back;
static uint8_t out[65536 + 16];

#define CHECK(cond)                                                                         \
	do {                                                                                \
		if (!(cond)) {                                                              \
			fprintf(stderr, "fuzz_dns: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                            \
		}                                                                           \
	} while (0)

static void check_reply(const uint8_t *question, size_t qlen, int len, size_t max_len, size_t want_an)
{
	CHECK(len > 0);
	CHECK((size_t)len <= max_len);
	CHECK(custode_dns_parse(out, (size_t)len, &back) == 0);
	CHECK(back.question_end - CUSTODE_DNS_HEADER == qlen);
	CHECK(!memcmp(out + CUSTODE_DNS_HEADER, question, qlen));
	CHECK(back.nscount == 0);
	if (!(back.flags & CUSTODE_DNS_F_TC))
		CHECK(back.n_an == want_an);
	else
		CHECK(back.n_an == 0);
}

static void as_query(const uint8_t *data, size_t size)
{
	static const uint8_t two[2][16] = {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 203, 0, 113, 10},
					   {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10}};
	struct custode_dns_reply r = {0};
	int len;

	if (custode_dns_parse(data, size, &msg))
		return;
	CHECK(msg.question_end > CUSTODE_DNS_HEADER && msg.question_end <= size);
	CHECK(msg.n_an == msg.ancount);
	CHECK(msg.qname.wire_len >= 1);
	if (msg.qname.host)
		CHECK(strlen(msg.qname.text) <= CUSTODE_DNS_MAX_TEXT_NAME);
	r.id = msg.id;
	r.rcode = CUSTODE_DNS_REFUSED;
	r.question = data + CUSTODE_DNS_HEADER;
	r.question_len = msg.question_end - CUSTODE_DNS_HEADER;
	r.qtype = msg.qtype;
	r.edns = msg.edns;
	r.max_len = CUSTODE_DNS_UDP_MIN;
	len = custode_dns_build_reply(out, sizeof(out), &r);
	check_reply(r.question, r.question_len, len, r.max_len, 0);
	if (msg.qname.host && (msg.qtype == CUSTODE_DNS_T_A || msg.qtype == CUSTODE_DNS_T_AAAA)) {
		r.rcode = CUSTODE_DNS_NOERROR;
		r.chain = &msg.qname;
		r.n_chain = 1;
		r.addrs = msg.qtype == CUSTODE_DNS_T_A ? two : two + 1;
		r.n_addrs = 1;
		r.max_len = 65535;
		len = custode_dns_build_reply(out, sizeof(out), &r);
		check_reply(r.question, r.question_len, len, r.max_len, 1);
	}
}

static bool odd_names(void *ctx, const struct custode_dns_name *n)
{
	(void)ctx;
	return n->text[0] && (strlen(n->text) & 1);
}

static void as_answer(const uint8_t *data, size_t size, bool strict)
{
	struct custode_dns_vet_opts o = {.cname_strict = strict, .name_ok = odd_names};
	static struct custode_dns_vetted v;
	struct custode_dns_reply r = {0};
	uint8_t question[CUSTODE_DNS_MAX_WIRE_NAME + 4];
	struct custode_dns_name qname;
	size_t qlen;
	int len;

	if (custode_dns_parse(data, size, &msg) || !msg.qname.host || !msg.qname.text[0])
		return;
	qname = msg.qname;
	custode_dns_vet(&qname, msg.qtype, &msg, &o, &v);
	CHECK(v.n_chain >= 1 && v.n_chain <= CUSTODE_DNS_MAX_CHAIN + 1);
	CHECK(v.n_addrs <= CUSTODE_DNS_MAX_ADDRS);
	CHECK(custode_dns_name_eq(&v.chain[0], &qname));
	for (size_t i = 0; i < v.n_addrs; i++)
		CHECK(custode_addr_classify(v.addrs[i]) == CUSTODE_ADDR_ORDINARY);
	for (size_t i = 0; i < v.n_chain; i++)
		CHECK(v.chain[i].host);
	if (v.n_addrs)
		CHECK(v.reason == 0 && v.rcode == CUSTODE_DNS_NOERROR &&
		      (msg.qtype == CUSTODE_DNS_T_A || msg.qtype == CUSTODE_DNS_T_AAAA));
	if (v.reason)
		CHECK(v.n_addrs == 0);
	/* the reply the resolver would send: built from the vetted data, as the client asked */
	len = custode_dns_build_query(question, sizeof(question), 1, &qname, msg.qtype);
	CHECK(len > 0);
	qlen = qname.wire_len + 4u;
	memmove(question, question + CUSTODE_DNS_HEADER, qlen);
	r.id = msg.id;
	r.rcode = v.reason ? CUSTODE_DNS_REFUSED : v.rcode;
	r.question = question;
	r.question_len = qlen;
	r.qtype = msg.qtype;
	r.chain = v.chain;
	r.n_chain = v.reason || v.rcode ? 0 : v.n_chain;
	r.addrs = (const uint8_t(*)[16])v.addrs;
	r.n_addrs = v.reason || v.rcode ? 0 : v.n_addrs;
	r.ttl = v.ttl;
	r.edns = true;
	r.max_len = (msg.id & 1) ? 65535 : CUSTODE_DNS_UDP_MIN;
	len = custode_dns_build_reply(out, sizeof(out), &r);
	check_reply(question, qlen, len, r.max_len, r.n_chain ? r.n_chain - 1 + r.n_addrs : r.n_addrs);
	for (size_t i = 0; i < back.n_an; i++) {
		const struct custode_dns_rr *rr = &back.an[i];
		CHECK(rr->type == CUSTODE_DNS_T_CNAME || rr->type == msg.qtype);
		if (rr->type != CUSTODE_DNS_T_CNAME)
			CHECK(custode_addr_classify(rr->rd.addr) == CUSTODE_ADDR_ORDINARY);
	}
}

static void as_names(const uint8_t *data, size_t size)
{
	struct custode_dns_names n;
	struct custode_dns_name dn;
	struct custode_dns_port ports[64];
	char text[300];
	size_t cut = size > 64 ? 64 : size, k;

	if (custode_dns_names_parse((const char *)data, size, &n) == 0) {
		memcpy(text, data, cut);
		text[cut] = 0;
		if (custode_dns_name_from_text(text, &dn) == 0) {
			k = custode_dns_names_match(&n, &dn, ports, 64);
			CHECK(k <= 64);
			for (size_t i = 1; i < k; i++)
				CHECK(ports[i - 1].proto < ports[i].proto ||
				      (ports[i - 1].proto == ports[i].proto && ports[i - 1].port < ports[i].port));
		}
		custode_dns_names_free(&n);
	}
}

static void as_text(const uint8_t *data, size_t size)
{
	struct custode_dns_name a;
	char text[300];
	uint8_t q[600];
	int len;

	if (size >= sizeof(text))
		return;
	memcpy(text, data, size);
	text[size] = 0;
	if (custode_dns_name_from_text(text, &a))
		return;
	CHECK(a.host && strlen(a.text) <= CUSTODE_DNS_MAX_TEXT_NAME);
	len = custode_dns_build_query(q, sizeof(q), 7, &a, CUSTODE_DNS_T_A);
	CHECK(len > 0);
	CHECK(custode_dns_parse(q, (size_t)len, &back) == 0);
	CHECK(custode_dns_name_eq(&back.qname, &a));
	CHECK(back.qname.wire_len == a.wire_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	as_query(data, size);
	as_answer(data, size, false);
	as_answer(data, size, true);
	as_names(data, size);
	as_text(data, size);
	return 0;
}
