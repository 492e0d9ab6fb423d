// SPDX-License-Identifier: Apache-2.0
/*
 * The host-address table's reader (userspace/engine/hostaddrs.c): one
 * RTM_GETADDR dump message at a time, built here byte by byte. The local
 * address (IFA_LOCAL, else IFA_ADDRESS, as getifaddrs), IPv4 mapped; other
 * families, other message types and attributes of the wrong size give
 * nothing; a message too short for its header is an error; an attribute
 * running past the message is not read.
 */
#include <errno.h>
#include <stdint.h>
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
