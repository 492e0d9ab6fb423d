/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The address classifier, one implementation for the BPF engine and for
 * userspace (the resolver, the policy compiler, tests). Addresses are in the
 * 16-byte form: IPv6, or IPv4 as ::ffff:a.b.c.d. Embedded IPv4 addresses
 * (IPv4-mapped, IPv4-compatible, SIIT, NAT64 64:ff9b::/96 and every RFC 6052
 * layout inside 64:ff9b:1::/48, 6to4, Teredo server and client) are unwrapped
 * and checked too: an address is as special as the worst thing it embeds.
 * docs/egress.md lists the ranges.
 */
#ifndef CUSTODE_ADDR_H
#define CUSTODE_ADDR_H

#include "custode/types.h"
#include "custode/reasons.h"

#ifdef __bpf__
#define CUSTODE_ADDR_INLINE static __always_inline
#else
#define CUSTODE_ADDR_INLINE static inline
#endif

enum custode_addr_class {
	CUSTODE_ADDR_ORDINARY = 0,
	CUSTODE_ADDR_UNSPECIFIED = 1, /* 0.0.0.0/8, :: */
	CUSTODE_ADDR_LOOPBACK = 2,    /* 127/8, ::1 */
	CUSTODE_ADDR_PRIVATE = 3,     /* RFC 1918, CGNAT 100.64/10, ULA fc00::/7, site-local fec0::/10, 192.0.0/24 */
	CUSTODE_ADDR_LINK_LOCAL = 4,  /* 169.254/16, fe80::/10 */
	CUSTODE_ADDR_MULTICAST = 5,   /* 224/4, ff00::/8 */
	CUSTODE_ADDR_BROADCAST = 6,   /* 255.255.255.255 */
	CUSTODE_ADDR_RESERVED = 7,    /* 240/4, benchmarking 198.18/15 and 2001:2::/48, discard 100::/64 */
	CUSTODE_ADDR_METADATA = 8,    /* 169.254.169.254, fd00:ec2::254, 168.63.129.16, 100.100.100.200 */
	CUSTODE_ADDR_HOST = 9,        /* one of the host's own addresses (not from the address: map custode_host_addrs) */
};

/* Class of an IPv4 address given as its four bytes in network order. */
CUSTODE_ADDR_INLINE int custode_addr_class4(__u8 a, __u8 b, __u8 c, __u8 d)
{
	if ((a == 169 && b == 254 && c == 169 && d == 254) || (a == 168 && b == 63 && c == 129 && d == 16) ||
	    (a == 100 && b == 100 && c == 100 && d == 200))
		return CUSTODE_ADDR_METADATA;
	if (a == 0)
		return CUSTODE_ADDR_UNSPECIFIED;
	if (a == 127)
		return CUSTODE_ADDR_LOOPBACK;
	if (a == 10 || (a == 172 && (b & 0xf0) == 16) || (a == 192 && b == 168) || (a == 100 && (b & 0xc0) == 64) ||
	    (a == 192 && b == 0 && c == 0))
		return CUSTODE_ADDR_PRIVATE;
	if (a == 169 && b == 254)
		return CUSTODE_ADDR_LINK_LOCAL;
	if (a == 255 && b == 255 && c == 255 && d == 255)
		return CUSTODE_ADDR_BROADCAST;
	if ((a & 0xf0) == 224)
		return CUSTODE_ADDR_MULTICAST;
	if ((a & 0xf0) == 240 || (a == 198 && (b & 0xfe) == 18))
		return CUSTODE_ADDR_RESERVED;
	return CUSTODE_ADDR_ORDINARY;
}

/* Class of the IPv4 address at a[i..i+3] (bytes of a 16-byte address). */
#define CUSTODE_ADDR_V4_AT(p, i0, i1, i2, i3) custode_addr_class4((p)[i0], (p)[i1], (p)[i2], (p)[i3])

CUSTODE_ADDR_INLINE int custode_addr_worse(int cur, int next)
{
	return cur != CUSTODE_ADDR_ORDINARY ? cur : next;
}

/*
 * How telling a class is as the reason for a denial, when one address has
 * several readings: metadata first, 0.0.0.0/8 (often an artefact of zero
 * bytes) last.
 */
CUSTODE_ADDR_INLINE int custode_addr_rank(int cls)
{
	switch (cls) {
	case CUSTODE_ADDR_METADATA:
		return 8;
	case CUSTODE_ADDR_LOOPBACK:
		return 7;
	case CUSTODE_ADDR_LINK_LOCAL:
		return 6;
	case CUSTODE_ADDR_PRIVATE:
		return 5;
	case CUSTODE_ADDR_MULTICAST:
		return 4;
	case CUSTODE_ADDR_BROADCAST:
		return 3;
	case CUSTODE_ADDR_RESERVED:
		return 2;
	case CUSTODE_ADDR_UNSPECIFIED:
		return 1;
	}
	return 0;
}

/* Of two readings of one address, the one to report (any special one beats ordinary). */
CUSTODE_ADDR_INLINE int custode_addr_worse_ranked(int cur, int next)
{
	return custode_addr_rank(next) > custode_addr_rank(cur) ? next : cur;
}

/* Class of a 16-byte address, embedded IPv4 addresses included. */
CUSTODE_ADDR_INLINE int custode_addr_classify(const __u8 *p)
{
	int zero8 = !(p[0] | p[1] | p[2] | p[3] | p[4] | p[5] | p[6] | p[7]);
	int cls;

	/* ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible), ::ffff:0:a.b.c.d (SIIT) */
	if (zero8 && !(p[8] | p[9])) {
		if ((p[10] == 0xff && p[11] == 0xff) || (!p[10] && !p[11])) {
			if (!p[10] && !(p[12] | p[13] | p[14])) {
				if (p[15] == 0)
					return CUSTODE_ADDR_UNSPECIFIED; /* :: */
				if (p[15] == 1)
					return CUSTODE_ADDR_LOOPBACK;    /* ::1 */
			}
			return CUSTODE_ADDR_V4_AT(p, 12, 13, 14, 15);
		}
	}
	if (zero8 && p[8] == 0xff && p[9] == 0xff && !p[10] && !p[11])
		return CUSTODE_ADDR_V4_AT(p, 12, 13, 14, 15);
	/* NAT64 well-known prefix 64:ff9b::/96 */
	if (p[0] == 0x00 && p[1] == 0x64 && p[2] == 0xff && p[3] == 0x9b) {
		if (!(p[4] | p[5] | p[6] | p[7] | p[8] | p[9] | p[10] | p[11]))
			return CUSTODE_ADDR_V4_AT(p, 12, 13, 14, 15);
		/*
		 * 64:ff9b:1::/48, local-use NAT64: the translator's prefix length
		 * (48, 56, 64 or 96) decides where the IPv4 sits (RFC 6052 2.2), and
		 * custode can't know it. Every layout the address allows (u-octet and
		 * suffix zero) is decoded and the worst class wins, 0.0.0.0/8
		 * included: the address is ordinary only if no reading of it is
		 * special. Destinations that lose to this ambiguity are granted as
		 * literals (network.private, --allow).
		 */
		if (p[4] == 0x00 && p[5] == 0x01) {
			if (p[8])
				return CUSTODE_ADDR_RESERVED; /* the u-octet is zero in every layout */
			/* the most telling special reading names the reason (custode_addr_rank) */
			cls = CUSTODE_ADDR_V4_AT(p, 12, 13, 14, 15); /* /96: always possible */
			if (!(p[13] | p[14] | p[15]))
				cls = custode_addr_worse_ranked(cls, CUSTODE_ADDR_V4_AT(p, 9, 10, 11, 12)); /* /64 */
			if (!(p[12] | p[13] | p[14] | p[15]))
				cls = custode_addr_worse_ranked(cls, CUSTODE_ADDR_V4_AT(p, 7, 9, 10, 11)); /* /56 */
			if (!(p[11] | p[12] | p[13] | p[14] | p[15]))
				cls = custode_addr_worse_ranked(cls, CUSTODE_ADDR_V4_AT(p, 6, 7, 9, 10)); /* /48 */
			return cls;
		}
	}
	/* 6to4 2002:V4::/48 */
	if (p[0] == 0x20 && p[1] == 0x02)
		return CUSTODE_ADDR_V4_AT(p, 2, 3, 4, 5);
	/* Teredo 2001:0::/32: server at bytes 4..7, client obfuscated (inverted) at 12..15 */
	if (p[0] == 0x20 && p[1] == 0x01 && p[2] == 0x00 && p[3] == 0x00) {
		cls = CUSTODE_ADDR_V4_AT(p, 4, 5, 6, 7);
		return custode_addr_worse(cls, custode_addr_class4(p[12] ^ 0xff, p[13] ^ 0xff, p[14] ^ 0xff, p[15] ^ 0xff));
	}
	/* fd00:ec2::254, the EC2 IPv6 metadata service */
	if (p[0] == 0xfd && p[1] == 0x00 && p[2] == 0x0e && p[3] == 0xc2 &&
	    !(p[4] | p[5] | p[6] | p[7] | p[8] | p[9] | p[10] | p[11] | p[12] | p[13]) && p[14] == 0x02 && p[15] == 0x54)
		return CUSTODE_ADDR_METADATA;
	if ((p[0] & 0xfe) == 0xfc)
		return CUSTODE_ADDR_PRIVATE; /* ULA fc00::/7 */
	if (p[0] == 0xfe && (p[1] & 0xc0) == 0x80)
		return CUSTODE_ADDR_LINK_LOCAL; /* fe80::/10 */
	if (p[0] == 0xfe && (p[1] & 0xc0) == 0xc0)
		return CUSTODE_ADDR_PRIVATE; /* site-local fec0::/10 (deprecated) */
	if (p[0] == 0xff)
		return CUSTODE_ADDR_MULTICAST;
	if (p[0] == 0x01 && p[1] == 0x00 && !(p[2] | p[3] | p[4] | p[5] | p[6] | p[7]))
		return CUSTODE_ADDR_RESERVED; /* discard-only 100::/64 */
	if (p[0] == 0x20 && p[1] == 0x01 && p[2] == 0x00 && p[3] == 0x02 && p[4] == 0x00 && p[5] == 0x00)
		return CUSTODE_ADDR_RESERVED; /* benchmarking 2001:2::/48 */
	return CUSTODE_ADDR_ORDINARY;
}

/* The reason code for denying an address of this class (0 for ordinary). */
CUSTODE_ADDR_INLINE int custode_addr_reason(int cls)
{
	switch (cls) {
	case CUSTODE_ADDR_UNSPECIFIED:
		return CUSTODE_REASON_NET_UNSPECIFIED;
	case CUSTODE_ADDR_LOOPBACK:
		return CUSTODE_REASON_NET_LOOPBACK;
	case CUSTODE_ADDR_PRIVATE:
		return CUSTODE_REASON_NET_PRIVATE_ADDRESS;
	case CUSTODE_ADDR_LINK_LOCAL:
		return CUSTODE_REASON_NET_LINK_LOCAL;
	case CUSTODE_ADDR_MULTICAST:
		return CUSTODE_REASON_NET_MULTICAST;
	case CUSTODE_ADDR_BROADCAST:
		return CUSTODE_REASON_NET_BROADCAST;
	case CUSTODE_ADDR_RESERVED:
		return CUSTODE_REASON_NET_RESERVED;
	case CUSTODE_ADDR_METADATA:
		return CUSTODE_REASON_NET_METADATA;
	case CUSTODE_ADDR_HOST:
		return CUSTODE_REASON_NET_HOST_ADDRESS;
	}
	return 0;
}

#endif
