// SPDX-License-Identifier: Apache-2.0
/*
 * The DNS wire module (userspace/dns/wire.c): the strict parser on well-formed
 * and hostile messages (compression loops, forward and header pointers, bad
 * label types, over-long names, bad rdlength, qdcount 0 and 2, stray and
 * duplicate OPT records, trailing bytes, record floods), host-name text
 * forms, and the builders, checked by parsing what they write.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "dns/wire.h"
#include "test_dns_build.h"

static struct tmsg m;
static struct custode_dns_msg d;

static int parse(void)
{
	return custode_dns_parse(m.b, m.n, &d);
}

Test(dns_wire, query_parses)
{
	t_header(&m, 0xbeef, 0x0100, 1, 0, 0, 1);
	t_question(&m, "Www.Example.COM", 1);
	t_opt(&m, 4096, 0);
	cr_assert_eq(parse(), 0);
	cr_assert_eq(d.id, 0xbeef);
	cr_assert_eq(d.flags, 0x0100);
	cr_assert(d.qname.host);
	cr_assert_str_eq(d.qname.text, "www.example.com");
	cr_assert_eq(d.qname.labels, 3);
	cr_assert_eq(d.qname.wire_len, 17);
	cr_assert_eq(d.qtype, 1);
	cr_assert_eq(d.qclass, 1);
	cr_assert_eq(d.question_end, 12 + 17 + 4);
	cr_assert(d.edns);
	cr_assert_eq(d.edns_udp, 4096);
	cr_assert_eq(d.edns_version, 0);
	cr_assert_eq(d.n_an, 0);
}

Test(dns_wire, answer_with_pointer_and_cname)
{
	t_header(&m, 1, 0x8180, 1, 3, 0, 0);
	t_question(&m, "a.test", 1);
	t_cname(&m, NULL, "b.test", 60);
	/* owner: pointer to the CNAME's rdata ("b.test" at the offset the CNAME's target starts) */
	{
		size_t target = 12 + 8 + 4 + 2 + 2 + 2 + 4 + 2;
		t_u16(&m, 0xc000 | (unsigned)target);
		t_u16(&m, 1);
		t_u16(&m, 1);
		t_u32(&m, 30);
		t_u16(&m, 4);
		t_put(&m, "\xcb\x00\x71\x0a", 4);
	}
	t_aaaa(&m, "b.test", "2001:db8::1", 20);
	cr_assert_eq(parse(), 0);
	cr_assert_eq(d.n_an, 3);
	cr_assert_eq(d.an[0].type, 5);
	cr_assert_str_eq(d.an[0].owner.text, "a.test");
	cr_assert_str_eq(d.an[0].rd.target.text, "b.test");
	cr_assert_str_eq(d.an[1].owner.text, "b.test");
	cr_assert_eq(d.an[1].rd.addr[10], 0xff);
	cr_assert_eq(d.an[1].rd.addr[12], 203);
	cr_assert_eq(d.an[1].rd.addr[15], 10);
	cr_assert_eq(d.an[2].type, 28);
	cr_assert_eq(d.an[2].rd.addr[0], 0x20);
	cr_assert_eq(custode_dns_rcode(&d), 0);
}

Test(dns_wire, compression_loop_refused)
{
	size_t here;

	t_header(&m, 1, 0x8180, 1, 1, 0, 0);
	t_question(&m, "a.test", 1);
	here = m.n;
	t_u16(&m, 0xc000 | (unsigned)here); /* points at itself */
	t_u16(&m, 1);
	t_u16(&m, 1);
	t_u32(&m, 1);
	t_u16(&m, 4);
	t_put(&m, "\x01\x02\x03\x04", 4);
	cr_assert_eq(parse(), -EBADMSG);
}

Test(dns_wire, two_pointer_loop_refused)
{
	size_t a;

	/* a label, then a pointer back to that label: reading it again would loop */
	t_header(&m, 1, 0x8180, 1, 1, 0, 0);
	t_question(&m, "a.test", 1);
	a = m.n;
	t_u8(&m, 1);
	t_u8(&m, 'x');
	t_u16(&m, 0xc000 | (unsigned)a);
	t_u16(&m, 1);
	t_u16(&m, 1);
	t_u32(&m, 1);
	t_u16(&m, 4);
	t_put(&m, "\x01\x02\x03\x04", 4);
	cr_assert_eq(parse(), -EBADMSG);
}

Test(dns_wire, forward_and_header_pointers_refused)
{
	size_t here;

	t_header(&m, 1, 0x8180, 1, 1, 0, 0);
	t_question(&m, "a.test", 1);
	here = m.n;
	t_u16(&m, 0xc000 | (unsigned)(here + 12)); /* forward, into its own rdata */
	t_u16(&m, 1);
	t_u16(&m, 1);
	t_u32(&m, 1);
	t_u16(&m, 4);
	t_put(&m, "\x01x\x00\x00", 4);
	cr_assert_eq(parse(), -EBADMSG);

	t_header(&m, 1, 0x8180, 1, 1, 0, 0);
	t_question(&m, "a.test", 1);
	t_u16(&m, 0xc002); /* into the header */
	t_u16(&m, 1);
	t_u16(&m, 1);
	t_u32(&m, 1);
	t_u16(&m, 4);
	t_put(&m, "\x01\x02\x03\x04", 4);
	cr_assert_eq(parse(), -EBADMSG);

	/* a question can't be compressed at all: nothing before it to point at */
	t_header(&m, 1, 0x0100, 1, 0, 0, 0);
	t_u16(&m, 0xc00c);
	t_u16(&m, 1);
	t_u16(&m, 1);
	cr_assert_eq(parse(), -EBADMSG);
}

Test(dns_wire, label_types_and_lengths)
{
	char big[80];

	/* 0x40 and 0x80 label types */
	t_header(&m, 1, 0x0100, 1, 0, 0, 0);
	t_u8(&m, 0x41);
	t_put(&m, "a", 1);
	t_u8(&m, 0);
	t_u16(&m, 1);
	t_u16(&m, 1);
	cr_assert_eq(parse(), -EBADMSG);
	m.b[12] = 0x81;
	cr_assert_eq(parse(), -EBADMSG);

	/* 63 is the longest label; 64 is a label type, not a length */
	memset(big, 'a', 63);
	big[63] = 0;
	t_header(&m, 1, 0x0100, 1, 0, 0, 0);
	t_question(&m, big, 1);
	cr_assert_eq(parse(), 0);
	cr_assert_eq(strlen(d.qname.text), 63);

	/* a name of 255 bytes is the longest; 256 is refused */
	t_header(&m, 1, 0x0100, 1, 0, 0, 0);
	for (int i = 0; i < 3; i++) {
		t_u8(&m, 63);
		t_put(&m, big, 63);
	}
	t_u8(&m, 61);
	t_put(&m, big, 61);
	t_u8(&m, 0);
	t_u16(&m, 1);
	t_u16(&m, 1);
	cr_assert_eq(parse(), 0);
	cr_assert_eq(d.qname.wire_len, 255);
	cr_assert_eq(strlen(d.qname.text), 253);
	m.b[12 + 3 * 64] = 62;
	memmove(m.b + 12 + 3 * 64 + 1 + 62, m.b + 12 + 3 * 64 + 1 + 61, 5);
	m.b[12 + 3 * 64 + 1 + 61] = 'a';
	m.n++;
	cr_assert_eq(parse(), -EBADMSG);
}

Test(dns_wire, question_counts)
{
	t_header(&m, 1, 0x8180, 0, 1, 0, 0);
	t_a(&m, "a.test", "203.0.113.10", 1);
	cr_assert_eq(parse(), -EBADMSG, "qdcount 0");

	t_header(&m, 1, 0x8180, 2, 0, 0, 0);
	t_question(&m, "a.test", 1);
	t_question(&m, "b.test", 1);
	cr_assert_eq(parse(), -EBADMSG, "qdcount 2");

	t_header(&m, 1, 0x0100, 1, 0, 0, 0);
	t_name(&m, "a.test");
	t_u16(&m, 1); /* class missing */
	cr_assert_eq(parse(), -EBADMSG, "truncated question");

	t_header(&m, 1, 0x0100, 1, 1, 0, 0);
	t_question(&m, "a.test", 1);
	cr_assert_eq(parse(), -EBADMSG, "ancount beyond the message");

	cr_assert_eq(custode_dns_parse(m.b, 11, &d), -EBADMSG, "short header");
	cr_assert_eq(custode_dns_parse(m.b, 0, &d), -EBADMSG, "empty");
}

Test(dns_wire, rdata_lengths)
{
	t_header(&m, 1, 0x8180, 1, 1, 0, 0);
	t_question(&m, "a.test", 1);
	t_rr_head(&m, NULL, 1, 1, 5);
	t_put(&m, "\x01\x02\x03\x04\x05", 5);
	cr_assert_eq(parse(), -EBADMSG, "A with rdlength 5");

	t_header(&m, 1, 0x8180, 1, 1, 0, 0);
	t_question(&m, "a.test", 28);
	t_rr_head(&m, NULL, 28, 1, 4);
	t_put(&m, "\x01\x02\x03\x04", 4);
	cr_assert_eq(parse(), -EBADMSG, "AAAA with rdlength 4");

	t_header(&m, 1, 0x8180, 1, 1, 0, 0);
	t_question(&m, "a.test", 1);
	t_rr_head(&m, NULL, 1, 1, 400);
	t_put(&m, "\x01\x02\x03\x04", 4);
	cr_assert_eq(parse(), -EBADMSG, "rdata past the end");

	/* a CNAME whose name ends before its rdata does */
	t_header(&m, 1, 0x8180, 1, 1, 0, 0);
	t_question(&m, "a.test", 1);
	t_rr_head(&m, NULL, 5, 1, 9);
	t_name(&m, "b.test");
	t_u8(&m, 0);
	cr_assert_eq(parse(), -EBADMSG, "CNAME rdata longer than its name");

	/* a CNAME whose name runs past its rdata */
	t_header(&m, 1, 0x8180, 1, 1, 0, 0);
	t_question(&m, "a.test", 1);
	t_rr_head(&m, NULL, 5, 1, 4);
	t_name(&m, "b.test");
	cr_assert_eq(parse(), -EBADMSG, "CNAME name past its rdata");

	/* unknown types are skipped by rdlength */
	t_header(&m, 1, 0x8180, 1, 1, 0, 0);
	t_question(&m, "a.test", 65);
	t_rr_head(&m, NULL, 65, 1, 3);
	t_put(&m, "\x00\x01\x00", 3);
	cr_assert_eq(parse(), 0);
	cr_assert_eq(d.an[0].type, 65);
	cr_assert_eq(d.an[0].rdlen, 3);
}

Test(dns_wire, opt_rules)
{
	t_header(&m, 1, 0x8180, 1, 1, 0, 0);
	t_question(&m, "a.test", 1);
	t_opt(&m, 512, 0);
	cr_assert_eq(parse(), -EBADMSG, "OPT in the answer section");

	t_header(&m, 1, 0x0100, 1, 0, 0, 2);
	t_question(&m, "a.test", 1);
	t_opt(&m, 512, 0);
	t_opt(&m, 512, 0);
	cr_assert_eq(parse(), -EBADMSG, "two OPT records");

	t_header(&m, 1, 0x0100, 1, 0, 0, 1);
	t_question(&m, "a.test", 1);
	t_name(&m, "x");
	t_u16(&m, 41);
	t_u16(&m, 512);
	t_u32(&m, 0);
	t_u16(&m, 0);
	cr_assert_eq(parse(), -EBADMSG, "OPT not owned by the root");

	t_header(&m, 1, 0x0100, 1, 0, 0, 1);
	t_question(&m, "a.test", 1);
	t_u8(&m, 0);
	t_u16(&m, 41);
	t_u16(&m, 1232);
	t_u32(&m, 0x01010000); /* ext rcode 1, version 1 */
	t_u16(&m, 6);
	t_u16(&m, 10); /* COOKIE */
	t_u16(&m, 8);  /* claims 8 bytes, has 2 */
	t_u16(&m, 0);
	cr_assert_eq(parse(), -EBADMSG, "an option longer than the OPT");
	m.b[m.n - 4] = 0;
	m.b[m.n - 3] = 2;
	cr_assert_eq(parse(), 0);
	cr_assert_eq(d.edns_version, 1);
	cr_assert_eq(d.edns_ext_rcode, 1);
	cr_assert_eq(custode_dns_rcode(&d), 16);
}

Test(dns_wire, trailing_bytes_and_floods)
{
	t_header(&m, 1, 0x0100, 1, 0, 0, 0);
	t_question(&m, "a.test", 1);
	t_u8(&m, 0);
	cr_assert_eq(parse(), -EBADMSG, "a byte after the last record");

	t_header(&m, 1, 0x8180, 1, 129, 0, 0);
	t_question(&m, "a.test", 1);
	for (int i = 0; i < 129; i++)
		t_a(&m, NULL, "203.0.113.10", 1);
	cr_assert_eq(parse(), -E2BIG, "more answers than kept");

	t_header(&m, 1, 0x8180, 1, 128, 0, 0);
	t_question(&m, "a.test", 1);
	for (int i = 0; i < 128; i++)
		t_a(&m, NULL, "203.0.113.10", 1);
	cr_assert_eq(parse(), 0);
	cr_assert_eq(d.n_an, 128);

	t_header(&m, 1, 0x8180, 1, 0, 0, 1025);
	cr_assert_eq(custode_dns_parse(m.b, 12, &d), -E2BIG, "record counts beyond the limit");
}

Test(dns_wire, non_host_names)
{
	t_header(&m, 1, 0x0100, 1, 0, 0, 0);
	t_u8(&m, 3);
	t_put(&m, "a.b", 3); /* a dot inside a label */
	t_u8(&m, 4);
	t_put(&m, "test", 4);
	t_u8(&m, 0);
	t_u16(&m, 1);
	t_u16(&m, 1);
	cr_assert_eq(parse(), 0);
	cr_assert_not(d.qname.host);
	cr_assert_str_eq(d.qname.text, "");
	m.b[14] = 0;
	cr_assert_eq(parse(), 0);
	cr_assert_not(d.qname.host, "a NUL byte");
	m.b[14] = 0xc3;
	cr_assert_eq(parse(), 0);
	cr_assert_not(d.qname.host, "non-ASCII");
	m.b[14] = '_';
	cr_assert_eq(parse(), 0);
	cr_assert(d.qname.host, "underscore is a host character (SRV-style labels)");
	cr_assert_str_eq(d.qname.text, "a_b.test");

	/* the root */
	t_header(&m, 1, 0x0100, 1, 0, 0, 0);
	t_question(&m, "", 1);
	cr_assert_eq(parse(), 0);
	cr_assert_eq(d.qname.wire_len, 1);
	cr_assert_str_eq(d.qname.text, "");
}

Test(dns_wire, name_from_text)
{
	struct custode_dns_name n, n2;
	char s[300];

	cr_assert_eq(custode_dns_name_from_text("PyPI.org.", &n), 0);
	cr_assert_str_eq(n.text, "pypi.org");
	cr_assert_eq(n.wire_len, 10);
	cr_assert_eq(n.labels, 2);
	cr_assert_eq(custode_dns_name_from_text("pypi.org", &n2), 0);
	cr_assert(custode_dns_name_eq(&n, &n2));
	cr_assert_eq(custode_dns_name_from_text("", &n), -EINVAL);
	cr_assert_eq(custode_dns_name_from_text(".", &n), -EINVAL);
	cr_assert_eq(custode_dns_name_from_text("a..b", &n), -EINVAL);
	cr_assert_eq(custode_dns_name_from_text(".a", &n), -EINVAL);
	cr_assert_eq(custode_dns_name_from_text("a b", &n), -EINVAL);
	cr_assert_eq(custode_dns_name_from_text("a.b..", &n), -EINVAL);
	cr_assert_eq(custode_dns_name_from_text("*.b", &n), -EINVAL);
	memset(s, 'a', 64);
	s[64] = 0;
	cr_assert_eq(custode_dns_name_from_text(s, &n), -EINVAL, "64-byte label");
	s[63] = 0;
	cr_assert_eq(custode_dns_name_from_text(s, &n), 0);
	/* 253 bytes: ok; 254: refused */
	memset(s, 'a', 253);
	s[63] = s[127] = s[191] = '.';
	s[253] = 0;
	cr_assert_eq(custode_dns_name_from_text(s, &n), 0);
	cr_assert_eq(n.wire_len, 255);
	s[253] = 'a';
	s[254] = 0;
	cr_assert_eq(custode_dns_name_from_text(s, &n), -EINVAL);
}

Test(dns_wire, build_query_roundtrip)
{
	struct custode_dns_name n;
	int len;

	cr_assert_eq(custode_dns_name_from_text("ok.test", &n), 0);
	len = custode_dns_build_query(m.b, sizeof(m.b), 0x4242, &n, 28);
	cr_assert_gt(len, 0);
	cr_assert_eq(custode_dns_parse(m.b, (size_t)len, &d), 0);
	cr_assert_eq(d.id, 0x4242);
	cr_assert_eq(d.flags, CUSTODE_DNS_F_RD);
	cr_assert_str_eq(d.qname.text, "ok.test");
	cr_assert_eq(d.qtype, 28);
	cr_assert(d.edns);
	cr_assert_eq(d.edns_udp, CUSTODE_DNS_EDNS_UDP);
	cr_assert_eq(custode_dns_build_query(m.b, 20, 1, &n, 1), -ENOSPC);
}

static struct custode_dns_name nm(const char *s)
{
	struct custode_dns_name n;

	cr_assert_eq(custode_dns_name_from_text(s, &n), 0, "%s", s);
	return n;
}

Test(dns_wire, build_reply_roundtrip)
{
	static uint8_t out[65536];
	struct custode_dns_name chain[3] = {nm("ok.test"), nm("b.cdn.test"), nm("c.cdn.test")};
	uint8_t addrs[2][16] = {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 203, 0, 113, 10},
				{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 203, 0, 113, 11}};
	struct custode_dns_reply r = {.id = 7, .rd = true, .rcode = 0, .qtype = 1, .chain = chain, .n_chain = 3,
				      .ttl = 42, .addrs = (const uint8_t(*)[16])addrs, .n_addrs = 2, .edns = true,
				      .max_len = 512};
	int len;

	/* the question as the client sent it, case and all */
	t_header(&m, 7, 0x0100, 1, 0, 0, 0);
	t_question(&m, "OK.test", 1);
	r.question = m.b + 12;
	r.question_len = m.n - 12;
	len = custode_dns_build_reply(out, sizeof(out), &r);
	cr_assert_gt(len, 0);
	cr_assert_eq(memcmp(out + 12, m.b + 12, m.n - 12), 0, "question echoed byte for byte");
	cr_assert_eq(custode_dns_parse(out, (size_t)len, &d), 0);
	cr_assert_eq(d.id, 7);
	cr_assert(d.flags & CUSTODE_DNS_F_QR);
	cr_assert(d.flags & CUSTODE_DNS_F_RD);
	cr_assert(d.flags & CUSTODE_DNS_F_RA);
	cr_assert_not(d.flags & CUSTODE_DNS_F_AA);
	cr_assert_eq(d.n_an, 4);
	cr_assert_eq(d.nscount, 0);
	cr_assert_eq(d.arcount, 1);
	cr_assert(d.edns);
	cr_assert_str_eq(d.an[0].owner.text, "ok.test");
	cr_assert_str_eq(d.an[0].rd.target.text, "b.cdn.test");
	cr_assert_str_eq(d.an[1].owner.text, "b.cdn.test");
	cr_assert_str_eq(d.an[1].rd.target.text, "c.cdn.test");
	cr_assert_str_eq(d.an[2].owner.text, "c.cdn.test");
	cr_assert_eq(d.an[2].type, 1);
	cr_assert_eq(d.an[3].rd.addr[15], 11);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(d.an[i].ttl, 42);

	/* too large for the client: TC and no records */
	r.max_len = 60;
	len = custode_dns_build_reply(out, sizeof(out), &r);
	cr_assert_gt(len, 0);
	cr_assert_eq(custode_dns_parse(out, (size_t)len, &d), 0);
	cr_assert(d.flags & CUSTODE_DNS_F_TC);
	cr_assert_eq(d.n_an, 0);

	/* an IPv6 address in an A record is refused; BADVERS needs EDNS */
	r.max_len = 512;
	addrs[1][10] = 0;
	cr_assert_eq(custode_dns_build_reply(out, sizeof(out), &r), -EINVAL);
	r.n_addrs = 0;
	r.rcode = 16;
	r.edns = false;
	cr_assert_eq(custode_dns_build_reply(out, sizeof(out), &r), -EINVAL);
	r.edns = true;
	len = custode_dns_build_reply(out, sizeof(out), &r);
	cr_assert_gt(len, 0);
	cr_assert_eq(custode_dns_parse(out, (size_t)len, &d), 0);
	cr_assert_eq(custode_dns_rcode(&d), 16);
}

Test(dns_wire, build_reply_refusal_has_no_records)
{
	static uint8_t out[512];
	struct custode_dns_reply r = {.id = 9, .rcode = 5, .qtype = 1, .max_len = 512};
	int len;

	t_header(&m, 9, 0x0100, 1, 0, 0, 0);
	t_question(&m, "other.test", 1);
	r.question = m.b + 12;
	r.question_len = m.n - 12;
	len = custode_dns_build_reply(out, sizeof(out), &r);
	cr_assert_eq(len, (int)m.n);
	cr_assert_eq(custode_dns_parse(out, (size_t)len, &d), 0);
	cr_assert_eq(custode_dns_rcode(&d), 5);
	cr_assert_eq(d.ancount + d.nscount + d.arcount, 0);
}

Test(dns_wire, type_names)
{
	char b[16];

	cr_assert_str_eq(custode_dns_type_name(1, b, sizeof(b)), "A");
	cr_assert_str_eq(custode_dns_type_name(65, b, sizeof(b)), "HTTPS");
	cr_assert_str_eq(custode_dns_type_name(99, b, sizeof(b)), "TYPE99");
}
