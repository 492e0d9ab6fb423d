/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A tiny DNS message writer for the unit tests, written apart from
 * userspace/dns/wire.c so the parser is not checked against itself. Every
 * byte is explicit; names are written uncompressed unless a test writes a
 * pointer by hand.
 */
#ifndef TEST_DNS_BUILD_H
#define TEST_DNS_BUILD_H

#include <arpa/inet.h>
#include <stdint.h>
#include <string.h>

struct tmsg {
	uint8_t b[70000];
	size_t n;
};

static inline void t_put(struct tmsg *m, const void *d, size_t n)
{
	memcpy(m->b + m->n, d, n);
	m->n += n;
}

static inline void t_u8(struct tmsg *m, unsigned v)
{
	m->b[m->n++] = (uint8_t)v;
}

static inline void t_u16(struct tmsg *m, unsigned v)
{
	t_u8(m, v >> 8);
	t_u8(m, v & 0xff);
}

static inline void t_u32(struct tmsg *m, uint32_t v)
{
	t_u16(m, v >> 16);
	t_u16(m, v & 0xffff);
}

/* "a.b.c" uncompressed; "" is the root */
static inline void t_name(struct tmsg *m, const char *s)
{
	while (*s) {
		const char *dot = strchr(s, '.');
		size_t l = dot ? (size_t)(dot - s) : strlen(s);
		t_u8(m, (unsigned)l);
		t_put(m, s, l);
		s += l + (dot ? 1 : 0);
	}
	t_u8(m, 0);
}

static inline void t_header(struct tmsg *m, unsigned id, unsigned flags, unsigned qd, unsigned an, unsigned ns,
			    unsigned ar)
{
	m->n = 0;
	t_u16(m, id);
	t_u16(m, flags);
	t_u16(m, qd);
	t_u16(m, an);
	t_u16(m, ns);
	t_u16(m, ar);
}

static inline void t_question(struct tmsg *m, const char *name, unsigned type)
{
	t_name(m, name);
	t_u16(m, type);
	t_u16(m, 1);
}

static inline void t_rr_head(struct tmsg *m, const char *owner, unsigned type, uint32_t ttl, unsigned rdlen)
{
	if (owner)
		t_name(m, owner);
	else
		t_u16(m, 0xc00c); /* the question's name */
	t_u16(m, type);
	t_u16(m, 1);
	t_u32(m, ttl);
	t_u16(m, rdlen);
}

static inline void t_a(struct tmsg *m, const char *owner, const char *addr, uint32_t ttl)
{
	struct in_addr a;

	inet_pton(AF_INET, addr, &a);
	t_rr_head(m, owner, 1, ttl, 4);
	t_put(m, &a, 4);
}

static inline void t_aaaa(struct tmsg *m, const char *owner, const char *addr, uint32_t ttl)
{
	struct in6_addr a;

	inet_pton(AF_INET6, addr, &a);
	t_rr_head(m, owner, 28, ttl, 16);
	t_put(m, &a, 16);
}

static inline void t_cname(struct tmsg *m, const char *owner, const char *target, uint32_t ttl)
{
	size_t at;

	t_rr_head(m, owner, 5, ttl, 0);
	at = m->n - 2;
	t_name(m, target);
	m->b[at] = (uint8_t)((m->n - at - 2) >> 8);
	m->b[at + 1] = (uint8_t)(m->n - at - 2);
}

static inline void t_opt(struct tmsg *m, unsigned udp, unsigned version)
{
	t_u8(m, 0);
	t_u16(m, 41);
	t_u16(m, udp);
	t_u32(m, (uint32_t)version << 16);
	t_u16(m, 0);
}

#endif
