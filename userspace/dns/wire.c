// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dns/wire.h"

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static bool host_char(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

static char lower(uint8_t c)
{
	return (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
}

/*
 * Read the name at *off. A compression pointer must point at or after the
 * header and strictly before the start of the segment that holds it: every
 * jump goes further back, so the walk ends. *off ends after the name as it
 * sits at *off (after the first pointer, if any).
 */
static int read_name(const uint8_t *msg, size_t len, size_t *off, struct custode_dns_name *out)
{
	size_t pos = *off, seg = *off, text = 0;
	bool jumped = false;
	unsigned wire = 0;

	out->host = true;
	out->labels = 0;
	for (int steps = 0; steps < 256; steps++) {
		uint8_t c;

		if (pos >= len)
			return -EBADMSG;
		c = msg[pos];
		if ((c & 0xc0) == 0xc0) {
			size_t ptr;

			if (pos + 1 >= len)
				return -EBADMSG;
			ptr = (size_t)(c & 0x3f) << 8 | msg[pos + 1];
			if (ptr < CUSTODE_DNS_HEADER || ptr >= seg)
				return -EBADMSG;
			if (!jumped)
				*off = pos + 2;
			jumped = true;
			pos = seg = ptr;
			continue;
		}
		if (c & 0xc0)
			return -EBADMSG; /* 01 (extended) and 10 label types */
		wire += 1u + c;
		if (wire > CUSTODE_DNS_MAX_WIRE_NAME)
			return -EBADMSG;
		if (c == 0) {
			if (!jumped)
				*off = pos + 1;
			out->wire_len = (uint8_t)wire;
			if (!out->host)
				text = 0;
			out->text[text] = 0;
			return 0;
		}
		if (pos + 1 + c > len)
			return -EBADMSG;
		if (out->host) {
			if (text)
				out->text[text++] = '.';
			for (size_t i = 0; i < c; i++) {
				uint8_t b = msg[pos + 1 + i];
				if (!host_char(b)) {
					out->host = false;
					break;
				}
				out->text[text++] = lower(b);
			}
		}
		out->labels++;
		pos += 1u + c;
	}
	return -EBADMSG;
}

/* A record's header and rdata bounds; decodes A, AAAA and CNAME into rr if given. */
static int read_rr(const uint8_t *msg, size_t len, size_t *off, struct custode_dns_rr *rr, bool *is_opt,
		   struct custode_dns_msg *m)
{
	struct custode_dns_rr tmp;
	struct custode_dns_rr *r = rr ? rr : &tmp;
	size_t rd;
	int err;

	if ((err = read_name(msg, len, off, &r->owner)))
		return err;
	if (*off + 10 > len)
		return -EBADMSG;
	r->type = get16(msg + *off);
	r->class = get16(msg + *off + 2);
	r->ttl = get32(msg + *off + 4);
	r->rdlen = get16(msg + *off + 8);
	*off += 10;
	rd = *off;
	if (rd + r->rdlen > len)
		return -EBADMSG;
	*off += r->rdlen;
	*is_opt = r->type == CUSTODE_DNS_T_OPT;
	if (*is_opt) {
		size_t o = rd;

		if (r->owner.wire_len != 1 || !m)
			return -EBADMSG; /* the root name, in the additional section only */
		/* options: code, length, data; each must fit */
		while (o < rd + r->rdlen) {
			if (o + 4 > rd + r->rdlen || o + 4 + get16(msg + o + 2) > rd + r->rdlen)
				return -EBADMSG;
			o += 4u + get16(msg + o + 2);
		}
		if (m->edns)
			return -EBADMSG; /* two OPT records */
		m->edns = true;
		m->edns_udp = r->class;
		m->edns_ext_rcode = (uint8_t)(r->ttl >> 24);
		m->edns_version = (uint8_t)(r->ttl >> 16);
		return 0;
	}
	if (r->class != CUSTODE_DNS_C_IN)
		return 0; /* kept, never used: only IN records are vetted */
	switch (r->type) {
	case CUSTODE_DNS_T_A:
		if (r->rdlen != 4)
			return -EBADMSG;
		memset(r->rd.addr, 0, 10);
		r->rd.addr[10] = r->rd.addr[11] = 0xff;
		memcpy(r->rd.addr + 12, msg + rd, 4);
		break;
	case CUSTODE_DNS_T_AAAA:
		if (r->rdlen != 16)
			return -EBADMSG;
		memcpy(r->rd.addr, msg + rd, 16);
		break;
	case CUSTODE_DNS_T_CNAME: {
		size_t t = rd;

		/* the target may point back into the message, but must end where the rdata ends */
		if ((err = read_name(msg, rd + r->rdlen, &t, &r->rd.target)))
			return err;
		if (t != rd + r->rdlen)
			return -EBADMSG;
		break;
	}
	default:
		break;
	}
	return 0;
}

int custode_dns_parse(const uint8_t *buf, size_t len, struct custode_dns_msg *m)
{
	size_t off = CUSTODE_DNS_HEADER, total;
	int err;

	if (len < CUSTODE_DNS_HEADER || len > 65535)
		return -EBADMSG;
	m->id = get16(buf);
	m->flags = get16(buf + 2);
	m->qdcount = get16(buf + 4);
	m->ancount = get16(buf + 6);
	m->nscount = get16(buf + 8);
	m->arcount = get16(buf + 10);
	m->n_an = 0;
	m->edns = false;
	m->edns_udp = 0;
	m->edns_version = m->edns_ext_rcode = 0;
	if (m->qdcount != 1)
		return -EBADMSG;
	total = (size_t)m->ancount + m->nscount + m->arcount;
	if (m->ancount > CUSTODE_DNS_MAX_ANSWERS || total > CUSTODE_DNS_MAX_RECORDS)
		return -E2BIG;
	if ((err = read_name(buf, len, &off, &m->qname)))
		return err;
	if (off + 4 > len)
		return -EBADMSG;
	m->qtype = get16(buf + off);
	m->qclass = get16(buf + off + 2);
	off += 4;
	m->question_end = off;
	for (size_t i = 0; i < total; i++) {
		bool is_opt = false;
		bool answer = i < m->ancount, additional = i >= (size_t)m->ancount + m->nscount;

		err = read_rr(buf, len, &off, answer ? &m->an[m->n_an] : NULL, &is_opt, additional ? m : NULL);
		if (err)
			return err;
		if (answer) {
			if (is_opt)
				return -EBADMSG;
			m->n_an++;
		}
	}
	return off == len ? 0 : -EBADMSG;
}

int custode_dns_name_from_text(const char *s, struct custode_dns_name *out)
{
	size_t len = strlen(s), label = 0, text = 0;
	struct custode_dns_name n;

	if (len && s[len - 1] == '.')
		len--;
	if (len == 0 || len > CUSTODE_DNS_MAX_TEXT_NAME)
		return -EINVAL;
	n.labels = 0;
	for (size_t i = 0; i < len; i++) {
		uint8_t c = (uint8_t)s[i];

		if (c == '.') {
			if (label == 0)
				return -EINVAL;
			n.labels++;
			label = 0;
			n.text[text++] = '.';
			continue;
		}
		if (!host_char(c) || ++label > 63)
			return -EINVAL;
		n.text[text++] = lower(c);
	}
	if (label == 0)
		return -EINVAL;
	n.labels++;
	n.text[text] = 0;
	n.host = true;
	n.wire_len = (uint8_t)(len + 2); /* a length byte per label replaces each dot, plus the first and the root */
	*out = n;
	return 0;
}

bool custode_dns_name_eq(const struct custode_dns_name *a, const struct custode_dns_name *b)
{
	return a->host && b->host && !strcmp(a->text, b->text);
}

struct wbuf {
	uint8_t *p;
	size_t len, cap;
	bool full;
};

static void put(struct wbuf *w, const void *data, size_t n)
{
	if (w->full || n > w->cap - w->len) {
		w->full = true;
		return;
	}
	memcpy(w->p + w->len, data, n);
	w->len += n;
}

static void put16(struct wbuf *w, unsigned v)
{
	uint8_t b[2] = {(uint8_t)(v >> 8), (uint8_t)v};
	put(w, b, 2);
}

static void put32(struct wbuf *w, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
	put(w, b, 4);
}

/* A host name from its text form, uncompressed. */
static int put_name(struct wbuf *w, const struct custode_dns_name *n)
{
	const char *s = n->text;

	if (!n->host)
		return -EINVAL;
	while (*s) {
		const char *dot = strchr(s, '.');
		size_t l = dot ? (size_t)(dot - s) : strlen(s);
		uint8_t lb = (uint8_t)l;

		if (l == 0 || l > 63)
			return -EINVAL;
		put(w, &lb, 1);
		put(w, s, l);
		s += l + (dot ? 1 : 0);
	}
	put(w, "", 1);
	return 0;
}

static void put_ptr(struct wbuf *w, size_t off)
{
	put16(w, 0xc000u | (unsigned)off);
}

static void put_opt(struct wbuf *w, unsigned ext_rcode)
{
	put(w, "", 1);
	put16(w, CUSTODE_DNS_T_OPT);
	put16(w, CUSTODE_DNS_EDNS_UDP);
	put32(w, (uint32_t)(ext_rcode & 0xff) << 24); /* version 0, no DO */
	put16(w, 0);
}

int custode_dns_build_query(uint8_t *out, size_t cap, uint16_t id, const struct custode_dns_name *name, uint16_t type)
{
	struct wbuf w = {.p = out, .cap = cap};

	put16(&w, id);
	put16(&w, CUSTODE_DNS_F_RD);
	put16(&w, 1);
	put16(&w, 0);
	put16(&w, 0);
	put16(&w, 1);
	if (put_name(&w, name))
		return -EINVAL;
	put16(&w, type);
	put16(&w, CUSTODE_DNS_C_IN);
	put_opt(&w, 0);
	return w.full ? -ENOSPC : (int)w.len;
}

static void put_header(struct wbuf *w, const struct custode_dns_reply *r, bool tc, unsigned an)
{
	unsigned flags = CUSTODE_DNS_F_QR | CUSTODE_DNS_F_RA | (r->rd ? CUSTODE_DNS_F_RD : 0) |
			 (tc ? CUSTODE_DNS_F_TC : 0) | (r->rcode & CUSTODE_DNS_F_RCODE);

	put16(w, r->id);
	put16(w, flags);
	put16(w, 1);
	put16(w, an);
	put16(w, 0);
	put16(w, r->edns ? 1 : 0);
}

int custode_dns_build_reply(uint8_t *out, size_t cap, const struct custode_dns_reply *r)
{
	struct wbuf w = {.p = out, .cap = cap};
	size_t owner = CUSTODE_DNS_HEADER, limit = r->max_len < cap ? r->max_len : cap;
	size_t n_cname = r->n_chain ? r->n_chain - 1 : 0;
	uint16_t atype = r->qtype == CUSTODE_DNS_T_AAAA ? CUSTODE_DNS_T_AAAA : CUSTODE_DNS_T_A;

	if ((r->rcode > 15 && !r->edns) || r->rcode > 0xfff || !r->question || r->question_len < 5 ||
	    n_cname + r->n_addrs > 0xffff || (r->n_addrs && r->qtype != CUSTODE_DNS_T_A && r->qtype != CUSTODE_DNS_T_AAAA))
		return -EINVAL;
	for (size_t i = 0; i < r->n_addrs && atype == CUSTODE_DNS_T_A; i++) {
		static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
		if (memcmp(r->addrs[i], mapped, 12))
			return -EINVAL; /* an A record holds IPv4 only */
	}
	w.cap = limit;
	put_header(&w, r, false, (unsigned)(n_cname + r->n_addrs));
	put(&w, r->question, r->question_len);
	for (size_t i = 0; i < n_cname; i++) {
		size_t rdlen_at, start;

		put_ptr(&w, owner);
		put16(&w, CUSTODE_DNS_T_CNAME);
		put16(&w, CUSTODE_DNS_C_IN);
		put32(&w, r->ttl);
		rdlen_at = w.len;
		put16(&w, 0);
		start = w.len;
		if (put_name(&w, &r->chain[i + 1]))
			return -EINVAL;
		if (w.full)
			break;
		if (start > 0x3fff)
			return -EINVAL; /* beyond a pointer's reach: no sane reply is this large */
		out[rdlen_at] = (uint8_t)((w.len - start) >> 8);
		out[rdlen_at + 1] = (uint8_t)(w.len - start);
		owner = start;
	}
	for (size_t i = 0; i < r->n_addrs && !w.full; i++) {
		put_ptr(&w, owner);
		put16(&w, atype);
		put16(&w, CUSTODE_DNS_C_IN);
		put32(&w, r->ttl);
		put16(&w, atype == CUSTODE_DNS_T_A ? 4 : 16);
		put(&w, atype == CUSTODE_DNS_T_A ? r->addrs[i] + 12 : r->addrs[i], atype == CUSTODE_DNS_T_A ? 4 : 16);
	}
	if (r->edns)
		put_opt(&w, r->rcode >> 4);
	if (!w.full)
		return (int)w.len;
	/* too large for the client: TC, the question, no records */
	w.len = 0;
	w.full = false;
	put_header(&w, r, true, 0);
	put(&w, r->question, r->question_len);
	if (r->edns)
		put_opt(&w, r->rcode >> 4);
	return w.full ? -ENOSPC : (int)w.len;
}

const char *custode_dns_type_name(uint16_t type, char *buf, size_t len)
{
	static const struct {
		uint16_t t;
		const char *n;
	} names[] = {{1, "A"},	    {2, "NS"},	  {5, "CNAME"},	 {6, "SOA"},   {12, "PTR"},   {15, "MX"},
		     {16, "TXT"},   {28, "AAAA"}, {33, "SRV"},	 {41, "OPT"},  {64, "SVCB"},  {65, "HTTPS"},
		     {251, "IXFR"}, {252, "AXFR"}, {255, "ANY"}};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].t == type) {
			snprintf(buf, len, "%s", names[i].n);
			return buf;
		}
	snprintf(buf, len, "TYPE%u", type);
	return buf;
}
