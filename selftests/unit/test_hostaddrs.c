// SPDX-License-Identifier: Apache-2.0
/*
 * The host-address table's reader (userspace/engine/hostaddrs.c): the
 * datagrams of an RTM_GETADDR dump and the messages in them, built here byte
 * by byte. The local address (IFA_LOCAL, else IFA_ADDRESS, as getifaddrs),
 * IPv4 mapped; other families, other message types and attributes of the
 * wrong size give nothing; a message too short for its header is an error;
 * an attribute running past the message is not read. A datagram: messages of
 * another request or port skipped, the end (NLMSG_DONE, with or without an
 * error), error replies, an interrupted dump, trailing bytes, an unaligned
 * last message. Run under ASan too: nothing is read past what was built.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <criterion/criterion.h>

#include "engine/hostaddrs.h"

struct msg {
	union {
		struct nlmsghdr nh;
		char bytes[512];
	} u;
};

static struct ifaddrmsg *start(struct msg *m, uint16_t type, uint8_t family, uint32_t ifindex)
{
	struct ifaddrmsg *ifa;

	memset(m, 0, sizeof(*m));
	m->u.nh.nlmsg_type = type;
	m->u.nh.nlmsg_len = NLMSG_LENGTH(sizeof(*ifa));
	ifa = NLMSG_DATA(&m->u.nh);
	ifa->ifa_family = family;
	ifa->ifa_index = ifindex;
	return ifa;
}

static void attr(struct msg *m, uint16_t type, const void *data, uint16_t len)
{
	struct rtattr *rta = (struct rtattr *)(m->u.bytes + NLMSG_ALIGN(m->u.nh.nlmsg_len));

	rta->rta_type = type;
	rta->rta_len = RTA_LENGTH(len);
	memcpy(RTA_DATA(rta), data, len);
	m->u.nh.nlmsg_len = NLMSG_ALIGN(m->u.nh.nlmsg_len) + RTA_ALIGN(rta->rta_len);
}

static const uint8_t v4_local[4] = {192, 0, 2, 7}, v4_peer[4] = {192, 0, 2, 1};
static const uint8_t v6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};

Test(hostaddrs, ipv4_local_is_mapped_and_wins_over_the_peer)
{
	static const uint8_t want[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 7};
	struct msg m;
	uint8_t a[16];
	uint32_t ifindex = 0;

	start(&m, RTM_NEWADDR, AF_INET, 3);
	attr(&m, IFA_ADDRESS, v4_peer, 4); /* point-to-point: the peer */
	attr(&m, IFA_LOCAL, v4_local, 4);
	attr(&m, IFA_LABEL, "ppp0", 5);
	cr_assert_eq(custode_ifaddr_parse(&m.u.nh, a, &ifindex), 1);
	cr_assert_arr_eq(a, want, 16);
	cr_assert_eq(ifindex, 3);
}

Test(hostaddrs, ipv6_address_without_local)
{
	struct msg m;
	uint8_t a[16];
	uint32_t ifindex = 0;

	start(&m, RTM_NEWADDR, AF_INET6, 2);
	attr(&m, IFA_ADDRESS, v6, 16);
	cr_assert_eq(custode_ifaddr_parse(&m.u.nh, a, &ifindex), 1);
	cr_assert_arr_eq(a, v6, 16);
	cr_assert_eq(ifindex, 2);
}

Test(hostaddrs, nothing_from_other_messages_families_and_sizes)
{
	struct msg m;
	uint8_t a[16];
	uint32_t ifindex = 0;

	start(&m, RTM_DELADDR, AF_INET6, 2);
	attr(&m, IFA_ADDRESS, v6, 16);
	cr_assert_eq(custode_ifaddr_parse(&m.u.nh, a, &ifindex), 0, "not an RTM_NEWADDR");
	start(&m, RTM_NEWADDR, AF_PACKET, 2);
	attr(&m, IFA_ADDRESS, v6, 6);
	cr_assert_eq(custode_ifaddr_parse(&m.u.nh, a, &ifindex), 0, "another family");
	start(&m, RTM_NEWADDR, AF_INET, 2);
	attr(&m, IFA_LOCAL, v6, 16);
	cr_assert_eq(custode_ifaddr_parse(&m.u.nh, a, &ifindex), 0, "an IPv4 address of 16 bytes");
	start(&m, RTM_NEWADDR, AF_INET6, 2);
	attr(&m, IFA_ADDRESS, v4_local, 4);
	cr_assert_eq(custode_ifaddr_parse(&m.u.nh, a, &ifindex), 0, "an IPv6 address of 4 bytes");
	start(&m, RTM_NEWADDR, AF_INET6, 2);
	attr(&m, IFA_LABEL, "eth0", 5);
	cr_assert_eq(custode_ifaddr_parse(&m.u.nh, a, &ifindex), 0, "no address at all");
	cr_assert_eq(ifindex, 0, "nothing written");
}

Test(hostaddrs, short_message_and_overlong_attribute)
{
	struct msg m;
	struct rtattr *rta;
	uint8_t a[16];
	uint32_t ifindex = 0;

	start(&m, RTM_NEWADDR, AF_INET6, 2);
	m.u.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg)) - 1;
	cr_assert_eq(custode_ifaddr_parse(&m.u.nh, a, &ifindex), -EBADMSG);
	/* an attribute claiming more than the message holds is never read */
	start(&m, RTM_NEWADDR, AF_INET6, 2);
	attr(&m, IFA_ADDRESS, v6, 16);
	rta = IFA_RTA(NLMSG_DATA(&m.u.nh));
	rta->rta_len = RTA_LENGTH(16) + 64;
	cr_assert_eq(custode_ifaddr_parse(&m.u.nh, a, &ifindex), 0);
	/* the message ends inside the attribute's header */
	start(&m, RTM_NEWADDR, AF_INET6, 2);
	attr(&m, IFA_ADDRESS, v6, 16);
	m.u.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg)) + 2;
	cr_assert_eq(custode_ifaddr_parse(&m.u.nh, a, &ifindex), 0);
}

/* A datagram: messages appended one after another at their aligned lengths. */
struct dgram {
	char *buf;
	int n;
};

static void put(struct dgram *d, const struct msg *m, uint32_t seq, uint32_t pid, uint16_t flags)
{
	struct nlmsghdr *nh;

	d->buf = realloc(d->buf, (size_t)d->n + NLMSG_ALIGN(m->u.nh.nlmsg_len));
	cr_assert(d->buf);
	memset(d->buf + d->n, 0, NLMSG_ALIGN(m->u.nh.nlmsg_len));
	memcpy(d->buf + d->n, m->u.bytes, m->u.nh.nlmsg_len);
	nh = (struct nlmsghdr *)(d->buf + d->n);
	nh->nlmsg_seq = seq;
	nh->nlmsg_pid = pid;
	nh->nlmsg_flags |= flags;
	d->n += (int)NLMSG_ALIGN(m->u.nh.nlmsg_len);
}

static void done(struct msg *m, int error, bool with_error)
{
	memset(m, 0, sizeof(*m));
	m->u.nh.nlmsg_type = NLMSG_DONE;
	m->u.nh.nlmsg_len = NLMSG_LENGTH(with_error ? sizeof(int) : 0);
	if (with_error)
		memcpy(NLMSG_DATA(&m->u.nh), &error, sizeof(error));
}

struct got {
	int n, fail_at;
	uint8_t last[16];
};

static int collect(void *ctx, const uint8_t addr[16], uint32_t ifindex)
{
	struct got *g = ctx;

	(void)ifindex;
	if (g->fail_at && g->n + 1 == g->fail_at)
		return -ENOMEM;
	memcpy(g->last, addr, 16);
	g->n++;
	return 0;
}

#define SEQ 7
#define PORT 4242

Test(hostaddrs, chunk_collects_until_done_and_skips_others)
{
	struct dgram d = {0};
	struct msg m;
	struct got g = {0};
	bool intr = false;

	start(&m, RTM_NEWADDR, AF_INET6, 2);
	attr(&m, IFA_ADDRESS, v6, 16);
	put(&d, &m, SEQ, PORT, NLM_F_MULTI);
	put(&d, &m, SEQ + 1, PORT, NLM_F_MULTI); /* another request's */
	put(&d, &m, SEQ, PORT + 1, NLM_F_MULTI); /* another port's */
	start(&m, RTM_NEWADDR, AF_INET, 3);
	attr(&m, IFA_LOCAL, v4_local, 4);
	put(&d, &m, SEQ, PORT, NLM_F_MULTI);
	cr_assert_eq(custode_ifaddr_chunk(d.buf, d.n, SEQ, PORT, &intr, collect, &g), 0, "more follows");
	cr_assert_eq(g.n, 2, "two of this request's addresses, the others skipped");
	done(&m, 0, false);
	put(&d, &m, SEQ, PORT, NLM_F_MULTI);
	g.n = 0;
	cr_assert_eq(custode_ifaddr_chunk(d.buf, d.n, SEQ, PORT, &intr, collect, &g), 1, "the end");
	cr_assert_eq(g.n, 2);
	free(d.buf);
}

Test(hostaddrs, chunk_interrupted_dump_is_read_again)
{
	struct dgram a = {0}, b = {0};
	struct msg m;
	struct got g = {0};
	bool intr = false;

	start(&m, RTM_NEWADDR, AF_INET6, 2);
	attr(&m, IFA_ADDRESS, v6, 16);
	put(&a, &m, SEQ, PORT, NLM_F_MULTI | NLM_F_DUMP_INTR);
	done(&m, 0, false);
	put(&b, &m, SEQ, PORT, NLM_F_MULTI);
	cr_assert_eq(custode_ifaddr_chunk(a.buf, a.n, SEQ, PORT, &intr, collect, &g), 0);
	cr_assert(intr, "the flag is kept for the rest of the dump");
	cr_assert_eq(custode_ifaddr_chunk(b.buf, b.n, SEQ, PORT, &intr, collect, &g), -EAGAIN);
	free(a.buf);
	free(b.buf);
}

Test(hostaddrs, chunk_errors)
{
	struct dgram d = {0};
	struct msg m;
	struct got g = {0};
	struct nlmsgerr e = {.error = -EPERM};
	bool intr = false;

	done(&m, -EINTR, true);
	put(&d, &m, SEQ, PORT, NLM_F_MULTI);
	cr_assert_eq(custode_ifaddr_chunk(d.buf, d.n, SEQ, PORT, &intr, collect, &g), -EINTR, "a dump that failed");
	free(d.buf);
	d = (struct dgram){0};
	memset(&m, 0, sizeof(m));
	m.u.nh.nlmsg_type = NLMSG_ERROR;
	m.u.nh.nlmsg_len = NLMSG_LENGTH(sizeof(e));
	memcpy(NLMSG_DATA(&m.u.nh), &e, sizeof(e));
	put(&d, &m, SEQ, PORT, 0);
	cr_assert_eq(custode_ifaddr_chunk(d.buf, d.n, SEQ, PORT, &intr, collect, &g), -EPERM, "an error reply");
	free(d.buf);
	d = (struct dgram){0};
	e.error = 0;
	memcpy(NLMSG_DATA(&m.u.nh), &e, sizeof(e));
	put(&d, &m, SEQ, PORT, 0);
	cr_assert_eq(custode_ifaddr_chunk(d.buf, d.n, SEQ, PORT, &intr, collect, &g), -EPROTO, "an ack is no answer");
	free(d.buf);
	d = (struct dgram){0};
	m.u.nh.nlmsg_len = NLMSG_LENGTH(2); /* an error too short to hold its code */
	put(&d, &m, SEQ, PORT, 0);
	cr_assert_eq(custode_ifaddr_chunk(d.buf, d.n, SEQ, PORT, &intr, collect, &g), -EPROTO);
	free(d.buf);
	/* the callback's failure stops the read */
	d = (struct dgram){0};
	start(&m, RTM_NEWADDR, AF_INET6, 2);
	attr(&m, IFA_ADDRESS, v6, 16);
	put(&d, &m, SEQ, PORT, NLM_F_MULTI);
	put(&d, &m, SEQ, PORT, NLM_F_MULTI);
	g.fail_at = 2;
	cr_assert_eq(custode_ifaddr_chunk(d.buf, d.n, SEQ, PORT, &intr, collect, &g), -ENOMEM);
	cr_assert_eq(g.n, 1);
	free(d.buf);
}

Test(hostaddrs, chunk_malformed_datagrams)
{
	struct msg m;
	struct got g = {0};
	bool intr = false;
	char *buf;
	int n;

	start(&m, RTM_NEWADDR, AF_INET6, 2);
	attr(&m, IFA_ADDRESS, v6, 16);
	m.u.nh.nlmsg_seq = SEQ;
	m.u.nh.nlmsg_pid = PORT;
	/* trailing bytes after a whole message */
	n = (int)m.u.nh.nlmsg_len + 5;
	buf = calloc(1, (size_t)n);
	memcpy(buf, m.u.bytes, m.u.nh.nlmsg_len);
	cr_assert_eq(custode_ifaddr_chunk(buf, n, SEQ, PORT, &intr, collect, &g), -EBADMSG);
	free(buf);
	/* a message longer than the datagram */
	n = (int)m.u.nh.nlmsg_len - 4;
	buf = malloc((size_t)n);
	memcpy(buf, m.u.bytes, (size_t)n);
	g.n = 0;
	cr_assert_eq(custode_ifaddr_chunk(buf, n, SEQ, PORT, &intr, collect, &g), -EBADMSG);
	cr_assert_eq(g.n, 0, "nothing taken from a cut message");
	free(buf);
	/* an unaligned last message, its last attribute unaligned too: read exactly, nothing past it */
	start(&m, RTM_NEWADDR, AF_INET6, 2);
	attr(&m, IFA_ADDRESS, v6, 16);
	attr(&m, IFA_LABEL, "eth", 4);
	m.u.nh.nlmsg_len -= 3; /* the label's padding is not there */
	m.u.nh.nlmsg_seq = SEQ;
	m.u.nh.nlmsg_pid = PORT;
	n = (int)m.u.nh.nlmsg_len;
	buf = malloc((size_t)n);
	memcpy(buf, m.u.bytes, (size_t)n);
	((struct rtattr *)(buf + n - 5))->rta_len = 5; /* "eth" + NUL would be 8: a label of one byte */
	g.n = 0;
	cr_assert_eq(custode_ifaddr_chunk(buf, n, SEQ, PORT, &intr, collect, &g), 0);
	cr_assert_eq(g.n, 1);
	cr_assert_arr_eq(g.last, v6, 16);
	free(buf);
}
