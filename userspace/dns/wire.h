/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DNS messages on the wire (RFC 1035, 6891): a strict parser and the two
 * builders the resolver needs. Every length, count, label and compression
 * pointer is checked; anything odd is -EBADMSG, never guessed at. No I/O,
 * no logging, no allocation (the caller owns the message). Fuzzed by
 * selftests/fuzz/fuzz_dns.c. docs/resolver.md.
 */
#ifndef CUSTODE_DNS_WIRE_H
#define CUSTODE_DNS_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CUSTODE_DNS_HEADER 12
#define CUSTODE_DNS_MAX_WIRE_NAME 255  /* uncompressed wire form, root label included */
#define CUSTODE_DNS_MAX_TEXT_NAME 253  /* "a.b.c", no trailing dot */
#define CUSTODE_DNS_MAX_ANSWERS 128    /* answer records kept; more is -E2BIG */
#define CUSTODE_DNS_MAX_RECORDS 1024   /* records in all sections; more is -E2BIG */
#define CUSTODE_DNS_UDP_MIN 512
#define CUSTODE_DNS_EDNS_UDP 1232      /* what custode advertises (DNS flag day 2020) */

enum custode_dns_type {
	CUSTODE_DNS_T_A = 1,
	CUSTODE_DNS_T_NS = 2,
	CUSTODE_DNS_T_CNAME = 5,
	CUSTODE_DNS_T_SOA = 6,
	CUSTODE_DNS_T_PTR = 12,
	CUSTODE_DNS_T_MX = 15,
	CUSTODE_DNS_T_TXT = 16,
	CUSTODE_DNS_T_AAAA = 28,
	CUSTODE_DNS_T_SRV = 33,
	CUSTODE_DNS_T_OPT = 41,
	CUSTODE_DNS_T_SVCB = 64,
	CUSTODE_DNS_T_HTTPS = 65,
	CUSTODE_DNS_T_IXFR = 251,
	CUSTODE_DNS_T_AXFR = 252,
	CUSTODE_DNS_T_ANY = 255,
};
#define CUSTODE_DNS_C_IN 1

enum custode_dns_rcode {
	CUSTODE_DNS_NOERROR = 0,
	CUSTODE_DNS_FORMERR = 1,
	CUSTODE_DNS_SERVFAIL = 2,
	CUSTODE_DNS_NXDOMAIN = 3,
	CUSTODE_DNS_NOTIMP = 4,
	CUSTODE_DNS_REFUSED = 5,
	CUSTODE_DNS_BADVERS = 16, /* extended: needs an OPT record */
};

/* Header flag bits (the 16 bits after the ID). */
#define CUSTODE_DNS_F_QR 0x8000u
#define CUSTODE_DNS_F_OPCODE 0x7800u
#define CUSTODE_DNS_F_AA 0x0400u
#define CUSTODE_DNS_F_TC 0x0200u
#define CUSTODE_DNS_F_RD 0x0100u
#define CUSTODE_DNS_F_RA 0x0080u
#define CUSTODE_DNS_F_RCODE 0x000fu

/*
 * A domain name, decompressed. `host` says every label is made of
 * [A-Za-z0-9_-] only; then `text` is its lowercase dotted form ("" for the
 * root) and names compare by text. A name that is not `host` has text ""
 * and never equals anything: it can't be matched against a policy, and
 * can't be part of an answer custode re-encodes.
 */
struct custode_dns_name {
	bool host;
	uint8_t wire_len; /* uncompressed length, root label included (1..255) */
	uint8_t labels;
	char text[CUSTODE_DNS_MAX_TEXT_NAME + 1];
};

struct custode_dns_rr {
	struct custode_dns_name owner;
	uint16_t type;
	uint16_t class;
	uint32_t ttl; /* as sent; values above 2^31-1 mean 0 (RFC 2181 8), see custode_dns_ttl */
	uint16_t rdlen;
	union {
		uint8_t addr[16];               /* A (as ::ffff:a.b.c.d) and AAAA */
		struct custode_dns_name target; /* CNAME */
	} rd;
};

struct custode_dns_msg {
	uint16_t id;
	uint16_t flags;
	uint16_t qdcount, ancount, nscount, arcount;
	/* the question (qdcount is always 1 in a parsed message) */
	struct custode_dns_name qname;
	uint16_t qtype, qclass;
	size_t question_end; /* bytes [12, question_end) are the question as sent */
	/* answer section: A, AAAA and CNAME decoded; other types kept with rdlen only */
	struct custode_dns_rr an[CUSTODE_DNS_MAX_ANSWERS];
	size_t n_an;
	/* EDNS (the one OPT record of the additional section) */
	bool edns;
	uint16_t edns_udp;     /* requestor's UDP payload size, as sent */
	uint8_t edns_version;
	uint8_t edns_ext_rcode;
};

/*
 * Parse a whole message: header, exactly one question, every record of every
 * section, nothing after them. Compression pointers must point strictly
 * before the name segment they continue (no loops, no forward references),
 * labels are 1..63 bytes of type 00, names at most 255 bytes, A rdata 4
 * bytes, AAAA 16, a CNAME's rdata exactly its name; at most one OPT, owned by
 * the root, in the additional section. 0, -EBADMSG (malformed) or -E2BIG
 * (more records than custode keeps). *m is scratch on failure.
 */
int custode_dns_parse(const uint8_t *buf, size_t len, struct custode_dns_msg *m);

static inline unsigned custode_dns_rcode(const struct custode_dns_msg *m)
{
	return (unsigned)(m->flags & CUSTODE_DNS_F_RCODE) | (m->edns ? (unsigned)m->edns_ext_rcode << 4 : 0u);
}
static inline unsigned custode_dns_opcode(const struct custode_dns_msg *m)
{
	return (m->flags & CUSTODE_DNS_F_OPCODE) >> 11;
}
static inline uint32_t custode_dns_ttl(uint32_t ttl)
{
	return ttl > 0x7fffffffu ? 0 : ttl;
}

/*
 * A name in text form ("Example.COM", "example.com.") validated as a host
 * name ([A-Za-z0-9_-] labels of 1..63 bytes, at most 253 bytes without the
 * trailing dot; the root "." or "" is refused) into *out, lowercased.
 * 0 or -EINVAL.
 */
int custode_dns_name_from_text(const char *s, struct custode_dns_name *out);
bool custode_dns_name_eq(const struct custode_dns_name *a, const struct custode_dns_name *b);

/* A query for (name, type, IN), RD set, with an OPT record offering CUSTODE_DNS_EDNS_UDP. Length or -ENOSPC. */
int custode_dns_build_query(uint8_t *out, size_t cap, uint16_t id, const struct custode_dns_name *name, uint16_t type);

/*
 * A reply built from vetted data only. The question is copied as the client
 * sent it (question, question_len: the bytes after the header); then a CNAME
 * record for each hop of the chain (chain[i] CNAME chain[i+1]), then one A or
 * AAAA record per address, owned by the last name of the chain. With
 * `edns`, an OPT record offering CUSTODE_DNS_EDNS_UDP (and the high bits of
 * an extended rcode). If the reply would exceed max_len, it is sent with TC
 * and no records (the client retries over TCP). Length or -ENOSPC / -EINVAL.
 */
struct custode_dns_reply {
	uint16_t id;
	bool rd;
	unsigned rcode; /* enum custode_dns_rcode; > 15 needs edns */
	const uint8_t *question;
	size_t question_len;
	uint16_t qtype;
	const struct custode_dns_name *chain; /* chain[0] is the question's name; may be NULL if n_chain == 0 */
	size_t n_chain;
	uint32_t ttl; /* for every record */
	const uint8_t (*addrs)[16];
	size_t n_addrs;
	bool edns;
	size_t max_len;
};
int custode_dns_build_reply(uint8_t *out, size_t cap, const struct custode_dns_reply *r);

/* "A", "AAAA", "TYPE99" into buf. */
const char *custode_dns_type_name(uint16_t type, char *buf, size_t len);

#endif
