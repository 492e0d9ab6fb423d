// SPDX-License-Identifier: Apache-2.0
/*
 * netprobe: one network operation per invocation, printing "ok" or the errno
 * name (like tprobe), for the route-option, inbound and socket-family tests
 * (issue 13, classes 5, 6 and 8).
 *
 *   netprobe [wait] OP ARGS...
 *     wait: prepare OP (its socket or io_uring ring is made now, as a process
 *     that had it before being moved into a run would), print "ready PID",
 *     read a line, then do OP and print its outcome.
 *
 * Sockets and families (numbers, as socket(2) takes them):
 *   socket FAM TYPE PROTO | socketpair FAM TYPE PROTO
 *   uring-socket FAM TYPE PROTO [inline|async|sqpoll]   IORING_OP_SOCKET
 *   rtnl-dump          NETLINK_ROUTE RTM_GETADDR dump: "ok" when an address comes back
 *   getifaddrs         glibc's getifaddrs (rtnetlink underneath)
 * Route options (HOP: the intermediate hop the option names; DST PORT: where
 * the datagram is addressed, "-" to only set the option):
 *   sockopt KIND HOP [DST PORT]      set a socket option, then (DST) send one datagram
 *                                    (TCP kinds: a non-blocking connect, EINPROGRESS = ok)
 *     KIND: ip-lsrr ip-ssrr ip-ts ip-nop ip-empty ip-retopts ip-tos ip-ttl ip-recvopts
 *           tcp-lsrr tcp-nodelay v6-ip-lsrr (SOL_IP on an IPv6 socket)
 *           ip6-rthdr0 ip6-rthdr2 ip6-rthdr4 ip6-2292rthdr ip6-pktoptions ip6-pktoptions-2292
 *           ip6-pktoptions-big (8 KiB of cmsgs, the routing header last) ip6-tclass ip6-hops
 *           ip6-recvrthdr tcp6-rthdr2 so-rcvbuf so-rcvbuf-big (optlen 8 KiB)
 *   sendmsg KIND HOP DST PORT MODE   one message with control messages
 *     KIND: retopts-lsrr retopts-ssrr retopts-ts ipopts-lsrr rthdr2 2292rthdr tos ttl tclass
 *           hoplimit pktinfo none manyN (N harmless ones) manyN-route (N-1 harmless, then a route)
 *     MODE: sendto (unconnected UDP) connected (UDP connect, then no name) fastopen
 *           (TCP sendmsg MSG_FASTOPEN) mmsg (sendmmsg, two messages)
 *   flowlabel HOP DST PORT [sndflow|cmsg|connected]
 *                      IPV6_FLOWLABEL_MGR: a flow label whose options carry a routing
 *                      header to HOP, then a datagram to DST with that label
 *   uring-setsockopt-lsrr HOP        IORING_OP_URING_CMD SOCKET_URING_OP_SETSOCKOPT IP_OPTIONS
 *   compat-setsockopt-lsrr HOP       the i386 setsockopt (int $0x80) of IP_OPTIONS LSRR
 *   compat-sendmsg-retopts HOP DST PORT   the i386 sendmsg with an IP_RETOPTS LSRR cmsg
 * Listening:
 *   bind ADDR PORT [tcp|udp] [reuseport]
 *   listen ADDR PORT   bind (PORT "-": none, the kernel's autobind) then listen
 *   uring-listen ADDR PORT           IORING_OP_BIND then IORING_OP_LISTEN
 *   serve ADDR PORT    bind, listen, print "listening PORT"; then for each connection read
 *                      a line, send it back and print "served PEER", until stdin EOF
 *   echo ADDR PORT     connect, send "ping", read it back: ok, timeout or the errno
 * Exit: 0 ok, 1 the operation failed, 2 usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/in6.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef IPV6_2292PKTOPTIONS
#define IPV6_2292PKTOPTIONS 6
#endif
#ifndef IPV6_2292RTHDR
#define IPV6_2292RTHDR 5
#endif
#ifndef IPV6_RTHDR
#define IPV6_RTHDR 57
#endif
#ifndef IPV6_RECVRTHDR
#define IPV6_RECVRTHDR 56
#endif
#ifndef IPV6_TCLASS
#define IPV6_TCLASS 67
#endif
#ifndef IPV6_HOPLIMIT
#define IPV6_HOPLIMIT 52
#endif
#ifndef IPV6_FLOWINFO
#define IPV6_FLOWINFO 11
#endif
#ifndef IPV6_FLOWLABEL_MGR
#define IPV6_FLOWLABEL_MGR 32
#endif
#ifndef IPV6_FLOWINFO_SEND
#define IPV6_FLOWINFO_SEND 33
#endif
#ifndef MSG_FASTOPEN
#define MSG_FASTOPEN 0x20000000
#endif

static const char *errname(int e)
{
	static char buf[16];

	switch (e) {
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case EINVAL: return "EINVAL";
	case ENOENT: return "ENOENT";
	case EFAULT: return "EFAULT";
	case EBADF: return "EBADF";
	case EAGAIN: return "EAGAIN";
	case ENOMEM: return "ENOMEM";
	case ENOSYS: return "ENOSYS";
	case ERANGE: return "ERANGE";
	case EEXIST: return "EEXIST";
	case EAFNOSUPPORT: return "EAFNOSUPPORT";
	case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
	case ESOCKTNOSUPPORT: return "ESOCKTNOSUPPORT";
	case EPROTOTYPE: return "EPROTOTYPE";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENOPROTOOPT: return "ENOPROTOOPT";
	case ECONNREFUSED: return "ECONNREFUSED";
	case ECONNRESET: return "ECONNRESET";
	case ENETUNREACH: return "ENETUNREACH";
	case EHOSTUNREACH: return "EHOSTUNREACH";
	case EADDRINUSE: return "EADDRINUSE";
	case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
	case EINPROGRESS: return "EINPROGRESS";
	case EALREADY: return "EALREADY";
	case ENOBUFS: return "ENOBUFS";
	case EMSGSIZE: return "EMSGSIZE";
	case ETIMEDOUT: return "ETIMEDOUT";
	case EDESTADDRREQ: return "EDESTADDRREQ";
	case EISCONN: return "EISCONN";
	case ENOTCONN: return "ENOTCONN";
	case ENOTSOCK: return "ENOTSOCK";
	default: snprintf(buf, sizeof(buf), "E%d", e); return buf;
	}
}

static int outcome(int r)
{
	if (r < 0) {
		printf("%s\n", errname(errno));
		return 1;
	}
	printf("ok\n");
	return 0;
}

static int fail(int e)
{
	printf("%s\n", errname(e));
	return 1;
}

/* ---- addresses ---- */

static int mkaddr(const char *addr, const char *port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((unsigned short)atoi(port));
		*len = sizeof(*s4);
		return AF_INET;
	}
	if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((unsigned short)atoi(port));
		*len = sizeof(*s6);
		return AF_INET6;
	}
	return -1;
}

static uint32_t v4(const char *a)
{
	struct in_addr in = {0};

	inet_pton(AF_INET, a, &in);
	return in.s_addr;
}

static struct in6_addr v6(const char *a)
{
	struct in6_addr in = IN6ADDR_ANY_INIT;

	inet_pton(AF_INET6, a, &in);
	return in;
}

/* ---- option bodies ---- */

/* IPv4 source route through hop (NOP, then LSRR/SSRR with one address): 8 bytes */
static size_t ip_srr(unsigned char *b, unsigned char type, const char *hop)
{
	uint32_t a = v4(hop);

	b[0] = IPOPT_NOP;
	b[1] = type;
	b[2] = 7;
	b[3] = 4;
	memcpy(b + 4, &a, 4);
	return 8;
}

/* A timestamp option with room for one stamp: 8 bytes */
static size_t ip_ts(unsigned char *b)
{
	memset(b, 0, 8);
	b[0] = IPOPT_TS;
	b[1] = 8;
	b[2] = 5;
	b[3] = IPOPT_TS_TSONLY;
	return 8;
}

/* An IPv6 routing header of type 0 or 2 naming hop (one segment left): 24 bytes */
static size_t rthdr(unsigned char *b, int type, const char *hop)
{
	struct in6_addr a = v6(hop);

	memset(b, 0, 24);
	b[1] = 2;    /* hdrlen: (24 / 8) - 1 */
	b[2] = (unsigned char)type;
	b[3] = 1;    /* segments left */
	memcpy(b + 8, &a, 16);
	return 24;
}

/* A segment routing header (type 4): segments[1] = hop (first), segments[0] = final: 40 bytes */
static size_t srh(unsigned char *b, const char *hop, const char *final)
{
	struct in6_addr h = v6(hop), f = v6(final[0] == '-' ? "2001:db8::10" : final);

	memset(b, 0, 40);
	b[1] = 4;    /* hdrlen: (40 / 8) - 1 */
	b[2] = 4;    /* type */
	b[3] = 1;    /* segments left */
	b[4] = 1;    /* last entry */
	memcpy(b + 8, &f, 16);
	memcpy(b + 24, &h, 16);
	return 40;
}

static struct cmsghdr *put_cmsg(unsigned char *buf, size_t *off, int level, int type, const void *data, size_t len)
{
	struct cmsghdr *c = (struct cmsghdr *)(buf + *off);

	c->cmsg_level = level;
	c->cmsg_type = type;
	c->cmsg_len = CMSG_LEN(len);
	memcpy(CMSG_DATA(c), data, len);
	*off += CMSG_SPACE(len);
	return c;
}

/* ---- sending ---- */

/* One datagram (UDP) or a non-blocking connect (TCP) to DST PORT. */
static int send_to(int fd, int type, const char *dst, const char *port)
{
	struct sockaddr_storage ss;
	socklen_t len;

	if (mkaddr(dst, port, &ss, &len) < 0)
		return fail(EINVAL);
	if (type == SOCK_STREAM) {
		fcntl(fd, F_SETFL, O_NONBLOCK);
		if (connect(fd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS)
			return fail(errno);
		printf("ok\n");
		return 0;
	}
	return outcome((int)sendto(fd, "x", 1, 0, (struct sockaddr *)&ss, len));
}

/* ---- sockopt ---- */

struct sockopt_kind {
	const char *name;
	int family, type, level, optname;
};

static const struct sockopt_kind sockopts[] = {
	{"ip-lsrr", AF_INET, SOCK_DGRAM, IPPROTO_IP, IP_OPTIONS},
	{"ip-ssrr", AF_INET, SOCK_DGRAM, IPPROTO_IP, IP_OPTIONS},
	{"ip-ts", AF_INET, SOCK_DGRAM, IPPROTO_IP, IP_OPTIONS},
	{"ip-nop", AF_INET, SOCK_DGRAM, IPPROTO_IP, IP_OPTIONS},
	{"ip-empty", AF_INET, SOCK_DGRAM, IPPROTO_IP, IP_OPTIONS},
	{"ip-retopts", AF_INET, SOCK_DGRAM, IPPROTO_IP, IP_RETOPTS},
	{"ip-tos", AF_INET, SOCK_DGRAM, IPPROTO_IP, IP_TOS},
	{"ip-ttl", AF_INET, SOCK_DGRAM, IPPROTO_IP, IP_TTL},
	{"ip-recvopts", AF_INET, SOCK_DGRAM, IPPROTO_IP, IP_RECVOPTS},
	{"tcp-lsrr", AF_INET, SOCK_STREAM, IPPROTO_IP, IP_OPTIONS},
	{"tcp-nodelay", AF_INET, SOCK_STREAM, IPPROTO_TCP, TCP_NODELAY},
	{"v6-ip-lsrr", AF_INET6, SOCK_DGRAM, IPPROTO_IP, IP_OPTIONS},
	{"ip6-rthdr0", AF_INET6, SOCK_DGRAM, IPPROTO_IPV6, IPV6_RTHDR},
	{"ip6-rthdr2", AF_INET6, SOCK_DGRAM, IPPROTO_IPV6, IPV6_RTHDR},
	{"ip6-rthdr4", AF_INET6, SOCK_DGRAM, IPPROTO_IPV6, IPV6_RTHDR},
	{"ip6-2292rthdr", AF_INET6, SOCK_DGRAM, IPPROTO_IPV6, IPV6_2292RTHDR},
	{"ip6-pktoptions", AF_INET6, SOCK_DGRAM, IPPROTO_IPV6, IPV6_2292PKTOPTIONS},
	{"ip6-pktoptions-2292", AF_INET6, SOCK_DGRAM, IPPROTO_IPV6, IPV6_2292PKTOPTIONS},
	{"ip6-pktoptions-big", AF_INET6, SOCK_DGRAM, IPPROTO_IPV6, IPV6_2292PKTOPTIONS},
	{"ip6-tclass", AF_INET6, SOCK_DGRAM, IPPROTO_IPV6, IPV6_TCLASS},
	{"ip6-hops", AF_INET6, SOCK_DGRAM, IPPROTO_IPV6, IPV6_UNICAST_HOPS},
	{"ip6-recvrthdr", AF_INET6, SOCK_DGRAM, IPPROTO_IPV6, IPV6_RECVRTHDR},
	{"tcp6-rthdr2", AF_INET6, SOCK_STREAM, IPPROTO_IPV6, IPV6_RTHDR},
	{"so-rcvbuf", AF_INET, SOCK_DGRAM, SOL_SOCKET, SO_RCVBUF},
	{"so-rcvbuf-big", AF_INET, SOCK_DGRAM, SOL_SOCKET, SO_RCVBUF},
};

#define BIG 8192

/* The option value of kind k into b (BIG bytes); returns its length. */
static size_t sockopt_value(const char *k, const char *hop, const char *dst, unsigned char *b)
{
	size_t off = 0;
	int one = 1, v = 0x20;

	memset(b, 0, BIG);
	if (!strcmp(k, "ip-lsrr") || !strcmp(k, "tcp-lsrr") || !strcmp(k, "v6-ip-lsrr"))
		return ip_srr(b, IPOPT_LSRR, hop);
	if (!strcmp(k, "ip-ssrr"))
		return ip_srr(b, IPOPT_SSRR, hop);
	if (!strcmp(k, "ip-ts"))
		return ip_ts(b);
	if (!strcmp(k, "ip-nop")) {
		memset(b, IPOPT_NOP, 4);
		return 4;
	}
	if (!strcmp(k, "ip-empty"))
		return 0;
	if (!strcmp(k, "ip6-rthdr0"))
		return rthdr(b, 0, hop);
	if (!strcmp(k, "ip6-rthdr2") || !strcmp(k, "tcp6-rthdr2"))
		return rthdr(b, 2, hop);
	if (!strcmp(k, "ip6-rthdr4"))
		return srh(b, hop, dst);
	if (!strcmp(k, "ip6-pktoptions") || !strcmp(k, "ip6-pktoptions-2292")) {
		unsigned char rt[24];

		rthdr(rt, 2, hop);
		put_cmsg(b, &off, IPPROTO_IPV6, !strcmp(k, "ip6-pktoptions") ? IPV6_RTHDR : IPV6_2292RTHDR, rt, sizeof(rt));
		return off;
	}
	if (!strcmp(k, "ip6-pktoptions-big")) {
		unsigned char rt[24];

		rthdr(rt, 2, hop);
		while (off + CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(rt)) <= BIG)
			put_cmsg(b, &off, IPPROTO_IPV6, IPV6_TCLASS, &v, sizeof(v));
		put_cmsg(b, &off, IPPROTO_IPV6, IPV6_RTHDR, rt, sizeof(rt));
		return off;
	}
	if (!strcmp(k, "so-rcvbuf-big")) {
		v = 65536;
		memcpy(b, &v, sizeof(v));
		return BIG;
	}
	if (!strcmp(k, "ip-tos") || !strcmp(k, "ip6-tclass") || !strcmp(k, "so-rcvbuf")) {
		v = !strcmp(k, "so-rcvbuf") ? 65536 : 0x20;
		memcpy(b, &v, sizeof(v));
		return sizeof(v);
	}
	if (!strcmp(k, "ip-ttl") || !strcmp(k, "ip6-hops")) {
		v = 33;
		memcpy(b, &v, sizeof(v));
		return sizeof(v);
	}
	memcpy(b, &one, sizeof(one)); /* booleans: ip-retopts ip-recvopts ip6-2292rthdr ip6-recvrthdr tcp-nodelay */
	return sizeof(one);
}

static const struct sockopt_kind *sockopt_of(const char *k)
{
	for (size_t i = 0; i < sizeof(sockopts) / sizeof(sockopts[0]); i++)
		if (!strcmp(sockopts[i].name, k))
			return &sockopts[i];
	return NULL;
}

/* ---- sendmsg ---- */

/* Control messages of kind k for a socket of family fam into b; returns the length, or -1. */
static long cmsgs(const char *k, int fam, const char *hop, unsigned char *b, size_t size)
{
	unsigned char o[40];
	size_t off = 0, n;
	int v = 0x20, many = 0;
	const char *route = NULL;

	memset(b, 0, size);
	if (!strcmp(k, "none"))
		return 0;
	if (!strncmp(k, "many", 4)) {
		char *end;

		many = (int)strtol(k + 4, &end, 10);
		if (!strcmp(end, "-route")) {
			route = fam == AF_INET6 && strchr(hop, ':') ? "rthdr2" : "retopts-lsrr";
			many--;
		} else if (*end) {
			return -1;
		}
		for (int i = 0; i < many; i++) {
			if (off + CMSG_SPACE(sizeof(int)) > size)
				return -1;
			if (fam == AF_INET6)
				put_cmsg(b, &off, IPPROTO_IPV6, IPV6_TCLASS, &v, sizeof(v));
			else
				put_cmsg(b, &off, IPPROTO_IP, IP_TOS, &v, sizeof(v));
		}
		if (!route)
			return (long)off;
		k = route;
	}
	if (!strcmp(k, "retopts-lsrr") || !strcmp(k, "ipopts-lsrr")) {
		n = ip_srr(o, IPOPT_LSRR, hop);
		put_cmsg(b, &off, IPPROTO_IP, !strcmp(k, "retopts-lsrr") ? IP_RETOPTS : IP_OPTIONS, o, n);
	} else if (!strcmp(k, "retopts-ssrr")) {
		n = ip_srr(o, IPOPT_SSRR, hop);
		put_cmsg(b, &off, IPPROTO_IP, IP_RETOPTS, o, n);
	} else if (!strcmp(k, "retopts-ts")) {
		n = ip_ts(o);
		put_cmsg(b, &off, IPPROTO_IP, IP_RETOPTS, o, n);
	} else if (!strcmp(k, "rthdr2") || !strcmp(k, "2292rthdr")) {
		n = rthdr(o, 2, hop);
		put_cmsg(b, &off, IPPROTO_IPV6, !strcmp(k, "rthdr2") ? IPV6_RTHDR : IPV6_2292RTHDR, o, n);
	} else if (!strcmp(k, "tos")) {
		put_cmsg(b, &off, IPPROTO_IP, IP_TOS, &v, sizeof(v));
	} else if (!strcmp(k, "ttl")) {
		v = 33;
		put_cmsg(b, &off, IPPROTO_IP, IP_TTL, &v, sizeof(v));
	} else if (!strcmp(k, "tclass")) {
		put_cmsg(b, &off, IPPROTO_IPV6, IPV6_TCLASS, &v, sizeof(v));
	} else if (!strcmp(k, "hoplimit")) {
		v = 33;
		put_cmsg(b, &off, IPPROTO_IPV6, IPV6_HOPLIMIT, &v, sizeof(v));
	} else if (!strcmp(k, "pktinfo")) {
		if (fam == AF_INET6) {
			struct in6_pktinfo pi;

			memset(&pi, 0, sizeof(pi));
			put_cmsg(b, &off, IPPROTO_IPV6, IPV6_PKTINFO, &pi, sizeof(pi));
		} else {
			struct in_pktinfo pi;

			memset(&pi, 0, sizeof(pi));
			put_cmsg(b, &off, IPPROTO_IP, IP_PKTINFO, &pi, sizeof(pi));
		}
	} else {
		return -1;
	}
	return (long)off;
}

struct prepared {
	int fd;
	int type;
	const struct sockopt_kind *opt;
};

static int sendmsg_act(struct prepared *p, char **a)
{
	static unsigned char control[4096];
	const char *kind = a[0], *hop = a[1], *dst = a[2], *port = a[3], *mode = a[4];
	struct sockaddr_storage ss;
	socklen_t len;
	struct iovec iov = {.iov_base = "x", .iov_len = 1};
	struct msghdr m;
	long clen;
	int fam = mkaddr(dst, port, &ss, &len);

	clen = cmsgs(kind, fam, hop, control, sizeof(control));
	if (fam < 0 || clen < 0)
		return fail(EINVAL);
	memset(&m, 0, sizeof(m));
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = clen ? control : NULL;
	m.msg_controllen = (size_t)clen;
	m.msg_name = &ss;
	m.msg_namelen = len;
	if (!strcmp(mode, "connected")) {
		if (connect(p->fd, (struct sockaddr *)&ss, len) < 0)
			return fail(errno);
		m.msg_name = NULL;
		m.msg_namelen = 0;
		return outcome((int)sendmsg(p->fd, &m, 0));
	}
	if (!strcmp(mode, "fastopen")) {
		struct timeval tv = {.tv_sec = 10};

		setsockopt(p->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		return outcome((int)sendmsg(p->fd, &m, MSG_FASTOPEN));
	}
	if (!strcmp(mode, "mmsg")) {
		struct mmsghdr mm[2];
		int r;

		memset(mm, 0, sizeof(mm));
		mm[0].msg_hdr = m;
		mm[1].msg_hdr = m;
		r = sendmmsg(p->fd, mm, 2, 0);
		if (r < 0)
			return fail(errno);
		if (r != 2)
			return printf("sent %d\n", r), 1;
		printf("ok\n");
		return 0;
	}
	return outcome((int)sendmsg(p->fd, &m, 0));
}

/* ---- flow labels with options ---- */

struct flr {
	struct in6_addr dst;
	uint32_t label;
	uint8_t action, share;
	uint16_t flags, expires, linger;
	uint32_t pad;
};

/* one label per process: an exclusive label lingers a few seconds after its socket is gone */
#define LABEL (0x10000u | ((unsigned)getpid() & 0xffffu))

static int flowlabel_act(struct prepared *p, char **a)
{
	static unsigned char buf[256];
	const char *hop = a[0], *dst = a[1], *port = a[2], *how = a[3] ? a[3] : "sndflow";
	struct flr *f = (struct flr *)buf;
	unsigned char rt[24];
	size_t off = CMSG_ALIGN(sizeof(*f)), start = off;
	struct sockaddr_storage ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;
	int one = 1;

	if (mkaddr(dst, port, &ss, &len) != AF_INET6)
		return fail(EINVAL);
	memset(buf, 0, sizeof(buf));
	f->dst = s6->sin6_addr;
	f->label = htonl(LABEL);
	f->action = 0; /* IPV6_FL_A_GET */
	f->share = 1;  /* IPV6_FL_S_EXCL */
	f->flags = 1;  /* IPV6_FL_F_CREATE */
	f->linger = 1;
	rthdr(rt, 2, hop);
	{
		size_t o = 0;

		put_cmsg(buf + start, &o, IPPROTO_IPV6, IPV6_RTHDR, rt, sizeof(rt));
		off += o;
	}
	if (setsockopt(p->fd, IPPROTO_IPV6, IPV6_FLOWLABEL_MGR, buf, (socklen_t)off) < 0)
		return fail(errno);
	if (!strcmp(how, "cmsg")) {
		static unsigned char control[64];
		uint32_t fi = htonl(LABEL);
		struct iovec iov = {.iov_base = "x", .iov_len = 1};
		struct msghdr m = {.msg_name = &ss, .msg_namelen = len, .msg_iov = &iov, .msg_iovlen = 1};
		size_t o = 0;

		put_cmsg(control, &o, IPPROTO_IPV6, IPV6_FLOWINFO, &fi, sizeof(fi));
		m.msg_control = control;
		m.msg_controllen = o;
		return outcome((int)sendmsg(p->fd, &m, 0));
	}
	if (setsockopt(p->fd, IPPROTO_IPV6, IPV6_FLOWINFO_SEND, &one, sizeof(one)) < 0)
		return fail(errno);
	s6->sin6_flowinfo = htonl(LABEL);
	if (!strcmp(how, "connected")) {
		if (connect(p->fd, (struct sockaddr *)&ss, len) < 0)
			return fail(errno);
		return outcome((int)send(p->fd, "x", 1, 0));
	}
	return outcome((int)sendto(p->fd, "x", 1, 0, (struct sockaddr *)&ss, len));
}

/* ---- i386 system calls from this 64-bit process (int $0x80: the compat entry) ---- */

static long int80(long nr, long a, long b, long c, long d, long e)
{
	long r;

	__asm__ volatile("int $0x80"
			 : "=a"(r)
			 : "0"(nr), "b"(a), "c"(b), "d"(c), "S"(d), "D"(e)
			 : "memory", "r8", "r9", "r10", "r11", "cc");
	return r;
}

#define I386_SETSOCKOPT 366
#define I386_SENDMSG 370

/* Memory below 4 GiB, where 32-bit pointers reach. */
static unsigned char *low_page(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static int compat_result(long r)
{
	if (r < 0 && r > -4096)
		return fail((int)-r);
	printf("ok\n");
	return 0;
}

static int compat_setsockopt_act(struct prepared *p, char **a)
{
	unsigned char *low = low_page();
	size_t n;

	if (!low)
		return fail(errno);
	n = ip_srr(low, IPOPT_LSRR, a[0]);
	return compat_result(int80(I386_SETSOCKOPT, p->fd, IPPROTO_IP, IP_OPTIONS, (long)(uintptr_t)low, (long)n));
}

struct compat_msghdr {
	uint32_t name, namelen, iov, iovlen, control, controllen, flags;
};

static int compat_sendmsg_act(struct prepared *p, char **a)
{
	unsigned char *low = low_page(), o[8];
	struct compat_msghdr *m;
	uint32_t *iov, *c;
	struct sockaddr_storage ss;
	socklen_t len;

	if (!low)
		return fail(errno);
	if (mkaddr(a[1], a[2], &ss, &len) != AF_INET)
		return fail(EINVAL);
	memcpy(low + 256, &ss, len);
	low[512] = 'x';
	iov = (uint32_t *)(low + 64);
	iov[0] = (uint32_t)(uintptr_t)(low + 512);
	iov[1] = 1;
	/* a compat cmsghdr: 32-bit length, level, type; data 4-aligned */
	c = (uint32_t *)(low + 1024);
	ip_srr(o, IPOPT_LSRR, a[0]);
	c[0] = 12 + 8;
	c[1] = IPPROTO_IP;
	c[2] = IP_RETOPTS;
	memcpy(c + 3, o, 8);
	m = (struct compat_msghdr *)low;
	m->name = (uint32_t)(uintptr_t)(low + 256);
	m->namelen = len;
	m->iov = (uint32_t)(uintptr_t)iov;
	m->iovlen = 1;
	m->control = (uint32_t)(uintptr_t)c;
	m->controllen = 20;
	m->flags = 0;
	return compat_result(int80(I386_SENDMSG, p->fd, (long)(uintptr_t)m, 0, 0, 0));
}

/* ---- io_uring, raw ---- */

#define U_OP_SOCKET 45
#define U_OP_URING_CMD 46
#define U_OP_BIND 56
#define U_OP_LISTEN 57
#define U_SETUP_SQPOLL (1U << 1)
#define U_ENTER_GETEVENTS 1U
#define U_ENTER_SQ_WAKEUP 2U
#define U_SQE_ASYNC (1U << 4)
#define U_SOCKET_OP_SETSOCKOPT 3

struct u_sqe {
	uint8_t opcode, flags;
	uint16_t ioprio;
	int32_t fd;
	uint64_t off;   /* cmd_op in its low 32 bits */
	uint64_t addr;  /* level, optname */
	uint32_t len;
	uint32_t op_flags;
	uint64_t user_data;
	uint16_t buf_index, personality;
	uint32_t file_index; /* optlen, addr_len */
	uint64_t addr3;      /* optval */
	uint64_t pad2;
};

struct u_params {
	uint32_t sq_entries, cq_entries, flags, sq_thread_cpu, sq_thread_idle, features, wq_fd, resv[3];
	struct { uint32_t head, tail, ring_mask, ring_entries, flags, dropped, array, resv1; uint64_t user_addr; } sq;
	struct { uint32_t head, tail, ring_mask, ring_entries, overflow, cqes, flags, resv1; uint64_t user_addr; } cq;
};

struct ring {
	int fd;
	unsigned flags;
	unsigned char *sq, *cq;
	struct u_sqe *sqes;
	struct u_params p;
};

static struct ring ring = {.fd = -1};

static int ring_setup(const char *how)
{
	struct u_params *p = &ring.p;
	size_t sqsz, cqsz;

	memset(p, 0, sizeof(*p));
	if (how && !strcmp(how, "sqpoll")) {
		p->flags = U_SETUP_SQPOLL;
		p->sq_thread_idle = 60000;
	}
	ring.flags = p->flags;
	ring.fd = (int)syscall(__NR_io_uring_setup, 4, p);
	if (ring.fd < 0)
		return -errno;
	sqsz = p->sq.array + p->sq_entries * sizeof(uint32_t);
	cqsz = p->cq.cqes + p->cq_entries * 16;
	ring.sq = mmap(NULL, sqsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring.fd, 0);
	ring.cq = mmap(NULL, cqsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring.fd, 0x8000000ULL);
	ring.sqes = mmap(NULL, p->sq_entries * sizeof(struct u_sqe), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
			 ring.fd, 0x10000000ULL);
	if (ring.sq == MAP_FAILED || ring.cq == MAP_FAILED || ring.sqes == MAP_FAILED)
		return -errno;
	return 0;
}

/* Submit one sqe and wait for its completion: its res. */
static int ring_do(const struct u_sqe *e)
{
	struct u_params *p = &ring.p;
	volatile uint32_t *stail = (uint32_t *)(ring.sq + p->sq.tail), *smask = (uint32_t *)(ring.sq + p->sq.ring_mask);
	uint32_t *arr = (uint32_t *)(ring.sq + p->sq.array);
	volatile uint32_t *chead = (uint32_t *)(ring.cq + p->cq.head), *ctail = (uint32_t *)(ring.cq + p->cq.tail);
	volatile uint32_t *cmask = (uint32_t *)(ring.cq + p->cq.ring_mask);
	uint32_t t = *stail, idx = t & *smask;

	ring.sqes[idx] = *e;
	arr[idx] = idx;
	__atomic_store_n(stail, t + 1, __ATOMIC_RELEASE);
	for (int tries = 0; tries < 1000; tries++) {
		unsigned fl = U_ENTER_GETEVENTS | ((ring.flags & U_SETUP_SQPOLL) ? U_ENTER_SQ_WAKEUP : 0);
		long r = syscall(__NR_io_uring_enter, ring.fd, (ring.flags & U_SETUP_SQPOLL) ? 0 : 1, 1, fl, NULL, 0);

		if (r < 0 && errno != EINTR && errno != EAGAIN && errno != EBUSY)
			return -errno;
		if (__atomic_load_n(ctail, __ATOMIC_ACQUIRE) != *chead) {
			uint32_t h = *chead;
			int32_t res = *(int32_t *)(ring.cq + p->cq.cqes + (h & *cmask) * 16 + 8);

			__atomic_store_n(chead, h + 1, __ATOMIC_RELEASE);
			return res;
		}
		if (ring.flags & U_SETUP_SQPOLL)
			usleep(10000);
	}
	return -ETIMEDOUT;
}

static int uring_socket_act(char **a)
{
	struct u_sqe e;
	int r;

	memset(&e, 0, sizeof(e));
	e.opcode = U_OP_SOCKET;
	e.fd = (int)strtol(a[0], NULL, 0);
	e.off = (uint64_t)strtol(a[1], NULL, 0);
	e.len = (uint32_t)strtol(a[2], NULL, 0);
	if (a[3] && !strcmp(a[3], "async"))
		e.flags = U_SQE_ASYNC;
	r = ring_do(&e);
	if (r < 0)
		return fail(-r);
	printf("ok\n");
	return 0;
}

static int uring_setsockopt_act(char **a)
{
	static unsigned char val[8];
	struct u_sqe e;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r;

	if (fd < 0)
		return fail(errno);
	ip_srr(val, IPOPT_LSRR, a[0]);
	memset(&e, 0, sizeof(e));
	e.opcode = U_OP_URING_CMD;
	e.fd = fd;
	e.off = U_SOCKET_OP_SETSOCKOPT;
	e.addr = (uint64_t)IPPROTO_IP | ((uint64_t)IP_OPTIONS << 32);
	e.file_index = 8;
	e.addr3 = (uint64_t)(uintptr_t)val;
	r = ring_do(&e);
	if (r < 0)
		return fail(-r);
	printf("ok\n");
	return 0;
}

static int uring_listen_act(char **a)
{
	struct sockaddr_storage ss;
	socklen_t len;
	struct u_sqe e;
	int fam = mkaddr(a[0], a[1], &ss, &len), fd, r;

	if (fam < 0)
		return fail(EINVAL);
	fd = socket(fam, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail(errno);
	memset(&e, 0, sizeof(e));
	e.opcode = U_OP_BIND;
	e.fd = fd;
	e.addr = (uint64_t)(uintptr_t)&ss;
	e.off = len; /* addr2: the address length */
	r = ring_do(&e);
	if (r < 0)
		return printf("bind %s\n", errname(-r)), 1;
	memset(&e, 0, sizeof(e));
	e.opcode = U_OP_LISTEN;
	e.fd = fd;
	e.len = 16;
	r = ring_do(&e);
	if (r < 0)
		return printf("listen %s\n", errname(-r)), 1;
	printf("ok\n");
	return 0;
}

/* ---- netlink ---- */

static int rtnl_dump(void)
{
	struct {
		struct nlmsghdr n;
		struct ifaddrmsg a;
	} req;
	static char buf[32768];
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE), addrs = 0;

	if (fd < 0)
		return fail(errno);
	memset(&req, 0, sizeof(req));
	req.n.nlmsg_len = sizeof(req);
	req.n.nlmsg_type = RTM_GETADDR;
	req.n.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.n.nlmsg_seq = 1;
	req.a.ifa_family = AF_UNSPEC;
	if (send(fd, &req, sizeof(req), 0) < 0)
		return fail(errno);
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n < 0)
			return fail(errno);
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE) {
				if (!addrs)
					return printf("no addresses\n"), 1;
				printf("ok\n");
				return 0;
			}
			if (h->nlmsg_type == NLMSG_ERROR)
				return fail(-((struct nlmsgerr *)NLMSG_DATA(h))->error);
			addrs += h->nlmsg_type == RTM_NEWADDR;
		}
	}
}

static int do_getifaddrs(void)
{
	struct ifaddrs *ifa;
	int n = 0;

	if (getifaddrs(&ifa) < 0)
		return fail(errno);
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
		n += i->ifa_addr != NULL;
	freeifaddrs(ifa);
	if (!n)
		return printf("no addresses\n"), 1;
	printf("ok\n");
	return 0;
}

/* ---- listening ---- */

static int bind_op(char **a)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fam = mkaddr(a[0], a[1], &ss, &len), fd, on = 1;
	bool udp = a[2] && !strcmp(a[2], "udp"), reuse = a[2] && a[3] && !strcmp(a[3], "reuseport");

	if (fam < 0)
		return fail(EINVAL);
	fd = socket(fam, (udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail(errno);
	if (reuse)
		setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on));
	return outcome(bind(fd, (struct sockaddr *)&ss, len));
}

/* bind (unless port "-") and listen; returns the socket or -1 (errno set) */
static int listener(const char *addr, const char *port, int *bound)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fam = mkaddr(addr, strcmp(port, "-") ? port : "0", &ss, &len), fd, on = 1, off = 0;

	if (fam < 0) {
		errno = EINVAL;
		return -1;
	}
	fd = socket(fam, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	if (fam == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
	if (strcmp(port, "-") && bind(fd, (struct sockaddr *)&ss, len) < 0)
		return -1;
	if (listen(fd, 16) < 0)
		return -1;
	len = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &len);
	*bound = ntohs(fam == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port : ((struct sockaddr_in6 *)&ss)->sin6_port);
	return fd;
}

static int listen_op(char **a)
{
	int port;

	return outcome(listener(a[0], a[1], &port));
}

static int serve(char **a)
{
	int port, l = listener(a[0], a[1], &port);

	if (l < 0)
		return fail(errno);
	printf("listening %d\n", port);
	fflush(stdout);
	for (;;) {
		struct pollfd p[2] = {{.fd = 0, .events = POLLIN}, {.fd = l, .events = POLLIN}};
		struct sockaddr_storage peer;
		socklen_t len = sizeof(peer);
		char buf[256], name[INET6_ADDRSTRLEN] = "?";
		ssize_t n;
		int c;

		if (poll(p, 2, -1) < 0)
			continue;
		if (p[0].revents && read(0, buf, sizeof(buf)) <= 0)
			return 0;
		if (!(p[1].revents & POLLIN))
			continue;
		c = accept4(l, (struct sockaddr *)&peer, &len, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		if (peer.ss_family == AF_INET6) {
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&peer)->sin6_addr, name, sizeof(name));
		} else {
			inet_ntop(AF_INET, &((struct sockaddr_in *)&peer)->sin_addr, name, sizeof(name));
		}
		struct pollfd q = {.fd = c, .events = POLLIN};
		if (poll(&q, 1, 10000) == 1 && (n = read(c, buf, sizeof(buf))) > 0 && write(c, buf, (size_t)n) == n)
			printf("served %s\n", strncmp(name, "::ffff:", 7) ? name : name + 7);
		else
			printf("no data from %s\n", name);
		fflush(stdout);
		close(c);
	}
}

static int echo(char **a)
{
	struct sockaddr_storage ss;
	socklen_t len;
	struct pollfd p;
	char buf[64];
	int fam = mkaddr(a[0], a[1], &ss, &len), fd, err = 0;
	socklen_t el = sizeof(err);
	ssize_t n;

	if (fam < 0)
		return fail(EINVAL);
	fd = socket(fam, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail(errno);
	if (connect(fd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS)
		return fail(errno);
	p.fd = fd;
	p.events = POLLOUT;
	if (poll(&p, 1, 5000) == 0)
		return printf("timeout\n"), 1;
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
	if (err)
		return fail(err);
	if (write(fd, "ping\n", 5) != 5)
		return fail(errno);
	p.events = POLLIN;
	if (poll(&p, 1, 10000) != 1)
		return printf("no answer\n"), 1;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n != 5 || memcmp(buf, "ping\n", 5))
		return printf("bad answer\n"), 1;
	printf("ok\n");
	return 0;
}

/* ---- dispatch ---- */

static int usage(void)
{
	fprintf(stderr, "usage: netprobe [wait] OP ARGS... (see the source)\n");
	return 2;
}

static int nargs(char **a)
{
	int n = 0;

	while (a[n])
		n++;
	return n;
}

/* What exists before "ready": the socket (or ring) an attached process would already hold. */
static int prepare(const char *op, char **a, struct prepared *p)
{
	p->fd = -1;
	p->type = 0;
	p->opt = NULL;
	if (!strcmp(op, "sockopt")) {
		if (nargs(a) < 2 || !(p->opt = sockopt_of(a[0])))
			return -EINVAL;
		p->type = p->opt->type;
		p->fd = socket(p->opt->family, p->opt->type | SOCK_CLOEXEC, 0);
	} else if (!strcmp(op, "sendmsg")) {
		struct sockaddr_storage ss;
		socklen_t len;
		int fam;

		if (nargs(a) < 5 || (fam = mkaddr(a[2], a[3], &ss, &len)) < 0)
			return -EINVAL;
		p->type = !strcmp(a[4], "fastopen") ? SOCK_STREAM : SOCK_DGRAM;
		p->fd = socket(fam, p->type | SOCK_CLOEXEC, 0);
	} else if (!strcmp(op, "flowlabel")) {
		if (nargs(a) < 3)
			return -EINVAL;
		p->type = SOCK_DGRAM;
		p->fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	} else if (!strcmp(op, "compat-setsockopt-lsrr") || !strcmp(op, "compat-sendmsg-retopts")) {
		if (nargs(a) < (!strcmp(op, "compat-setsockopt-lsrr") ? 1 : 3))
			return -EINVAL;
		p->type = SOCK_DGRAM;
		p->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	} else if (!strcmp(op, "uring-socket")) {
		if (nargs(a) < 3)
			return -EINVAL;
		return ring_setup(a[3]);
	} else if (!strcmp(op, "uring-setsockopt-lsrr") || !strcmp(op, "uring-listen")) {
		if (nargs(a) < 1)
			return -EINVAL;
		return ring_setup(NULL);
	} else {
		return 0;
	}
	return p->fd < 0 ? -errno : 0;
}

static int act(const char *op, char **a, struct prepared *p)
{
	int n = nargs(a);

	if (!strcmp(op, "socket") && n == 3)
		return outcome(socket((int)strtol(a[0], NULL, 0), (int)strtol(a[1], NULL, 0), (int)strtol(a[2], NULL, 0)));
	if (!strcmp(op, "socketpair") && n == 3) {
		int sv[2];

		return outcome(socketpair((int)strtol(a[0], NULL, 0), (int)strtol(a[1], NULL, 0), (int)strtol(a[2], NULL, 0),
					  sv));
	}
	if (!strcmp(op, "rtnl-dump"))
		return rtnl_dump();
	if (!strcmp(op, "getifaddrs"))
		return do_getifaddrs();
	if (!strcmp(op, "sockopt")) {
		static unsigned char val[BIG];
		size_t len = sockopt_value(a[0], a[1], n > 2 ? a[2] : "-", val);

		if (setsockopt(p->fd, p->opt->level, p->opt->optname, val, (socklen_t)len) < 0)
			return fail(errno);
		if (p->opt->optname == SO_RCVBUF && p->opt->level == SOL_SOCKET) {
			int got = 0;
			socklen_t gl = sizeof(got);

			/* the kernel doubles the value it was given: did it see the option at all? */
			getsockopt(p->fd, SOL_SOCKET, SO_RCVBUF, &got, &gl);
			if (got != 2 * 65536)
				return printf("not applied (SO_RCVBUF %d)\n", got), 1;
		}
		if (n >= 4 && strcmp(a[2], "-"))
			return send_to(p->fd, p->type, a[2], a[3]);
		printf("ok\n");
		return 0;
	}
	if (!strcmp(op, "sendmsg"))
		return sendmsg_act(p, a);
	if (!strcmp(op, "flowlabel"))
		return flowlabel_act(p, a);
	if (!strcmp(op, "compat-setsockopt-lsrr"))
		return compat_setsockopt_act(p, a);
	if (!strcmp(op, "compat-sendmsg-retopts"))
		return compat_sendmsg_act(p, a);
	if (!strcmp(op, "uring-socket"))
		return uring_socket_act(a);
	if (!strcmp(op, "uring-setsockopt-lsrr"))
		return uring_setsockopt_act(a);
	if (!strcmp(op, "uring-listen") && n >= 2)
		return uring_listen_act(a);
	if (!strcmp(op, "bind") && n >= 2)
		return bind_op(a);
	if (!strcmp(op, "listen") && n >= 2)
		return listen_op(a);
	if (!strcmp(op, "serve") && n >= 2)
		return serve(a);
	if (!strcmp(op, "echo") && n >= 2)
		return echo(a);
	return usage();
}

int main(int argc, char **argv)
{
	struct prepared p;
	bool wait = argc > 1 && !strcmp(argv[1], "wait");
	char **a = argv + 1 + wait, line[64];
	int r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!a[0])
		return usage();
	r = prepare(a[0], a + 1, &p);
	if (r < 0)
		return fail(-r);
	if (wait) {
		printf("ready %d\n", (int)getpid());
		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	return act(a[0], a + 1, &p);
}
