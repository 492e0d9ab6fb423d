// SPDX-License-Identifier: Apache-2.0
/*
 * dprobe: DNS client operations for the resolver's kernel tests, run inside
 * custode runs. Prints one outcome per line; exit 0 when the operation did
 * what it asked (an answer, a connection), 1 otherwise, 2 usage.
 *
 *   dprobe gai NAME [inet|inet6|any]     getaddrinfo (glibc, /etc/resolv.conf):
 *                                        one address per line, or EAI_<code>
 *   dprobe res NAME                      res_query(NAME, IN, A): addresses, or "res_query failed"
 *   dprobe gai-connect NAME PORT         getaddrinfo (IPv4) then connect: "ok ADDR" or the errno
 *   dprobe loop NAME PORT N [inet|inet6] N times: getaddrinfo + connect + close;
 *                                        "done N denied D lookup_failed L other O"
 *                                        (O: connects refused by the network, not custode); NAME may hold
 *                                        one %ld, replaced by the iteration number
 *   dprobe query SERVER PORT udp|tcp NAME TYPE [unconnected] [v6]
 *                                        one query by hand; prints "from ADDR:PORT" (the
 *                                        reply's source, or the TCP peer), "rcode NAME",
 *                                        then each record: "A 1.2.3.4 ttl N", "CNAME x"...
 *   dprobe raw SERVER PORT udp|tcp HEX   send raw bytes: "rcode NAME" of the reply,
 *                                        "noreply", or "short N"
 *   dprobe connect ADDR PORT [tcp|udp]   "ok" or the errno name
 *   dprobe bind PORT udp|tcp             bind 0.0.0.0:PORT: "ok" or the errno name
 *   dprobe hold OP ARGS...               do OP, print "held PID", wait for stdin to close
 * TYPE: A, AAAA, HTTPS, MX, TXT, ANY or a number.
 */
#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <resolv.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

static const char *errname(int e)
{
	switch (e) {
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case ECONNREFUSED: return "ECONNREFUSED";
	case ENETUNREACH: return "ENETUNREACH";
	case EHOSTUNREACH: return "EHOSTUNREACH";
	case ETIMEDOUT: return "ETIMEDOUT";
	case EAGAIN: return "EAGAIN";
	case EINVAL: return "EINVAL";
	case EAFNOSUPPORT: return "EAFNOSUPPORT";
	case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
	case EADDRINUSE: return "EADDRINUSE";
	default: return "E?";
	}
}

static const char *rcode_name(unsigned r)
{
	static const char *const n[] = {"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED"};
	return r < 6 ? n[r] : r == 16 ? "BADVERS" : "RCODE?";
}

static unsigned type_of(const char *s)
{
	if (!strcmp(s, "A")) return 1;
	if (!strcmp(s, "AAAA")) return 28;
	if (!strcmp(s, "HTTPS")) return 65;
	if (!strcmp(s, "MX")) return 15;
	if (!strcmp(s, "TXT")) return 16;
	if (!strcmp(s, "ANY")) return 255;
	if (!strcmp(s, "CNAME")) return 5;
	return (unsigned)atoi(s);
}

/* A sockaddr for a literal; v6: an AF_INET6 socket (IPv4 as ::ffff:a.b.c.d). */
static int sockaddr_of(const char *addr, int port, bool v6, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct in_addr a4;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, addr, &a4) == 1 && !v6) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		s4->sin_addr = a4;
		*len = sizeof(*s4);
		return AF_INET;
	}
	s6->sin6_family = AF_INET6;
	s6->sin6_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, addr, &a4) == 1) {
		s6->sin6_addr.s6_addr[10] = s6->sin6_addr.s6_addr[11] = 0xff;
		memcpy(&s6->sin6_addr.s6_addr[12], &a4, 4);
	} else if (inet_pton(AF_INET6, addr, &s6->sin6_addr) != 1) {
		return -1;
	}
	*len = sizeof(*s6);
	return AF_INET6;
}

static const char *format_sa(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)ss;
		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, ntohs(s4->sin_port));
	} else {
		const struct sockaddr_in6 *s6 = (const void *)ss;
		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, ntohs(s6->sin6_port));
	}
	return buf;
}

static size_t build_query(uint8_t *b, const char *name, unsigned type)
{
	size_t n = 12;
	const char *s = name;

	memset(b, 0, 12);
	b[0] = 0x12;
	b[1] = 0x34;
	b[2] = 0x01; /* RD */
	b[5] = 1;
	while (*s) {
		const char *dot = strchr(s, '.');
		size_t l = dot ? (size_t)(dot - s) : strlen(s);
		if (l == 0)
			break;
		b[n++] = (uint8_t)l; /* over-long labels are sent as they are: the resolver must refuse them */
		memcpy(b + n, s, l);
		n += l;
		s += l + (dot ? 1 : 0);
	}
	b[n++] = 0;
	b[n++] = (uint8_t)(type >> 8);
	b[n++] = (uint8_t)type;
	b[n++] = 0;
	b[n++] = 1;
	return n;
}

static bool wait_readable(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return poll(&p, 1, ms) > 0;
}

static bool read_full(int fd, uint8_t *b, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r;
		if (!wait_readable(fd, 4000))
			return false;
		r = read(fd, b + got, n - got);
		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	return true;
}

/* Send msg to server over proto; the reply into out. Returns its length, 0 no reply, -errno. */
static ssize_t exchange(const char *server, int port, bool tcp, bool unconnected, bool v6, const uint8_t *msg, size_t len,
			uint8_t *out, size_t cap, char *from, size_t fromlen)
{
	struct sockaddr_storage ss, peer;
	socklen_t sl, pl = sizeof(peer);
	int fam = sockaddr_of(server, port, v6, &ss, &sl), fd;
	ssize_t n;

	if (fam < 0)
		return -EINVAL;
	fd = socket(fam, tcp ? SOCK_STREAM : SOCK_DGRAM, 0);
	if (fd < 0)
		return -errno;
	if (tcp || !unconnected) {
		if (connect(fd, (struct sockaddr *)&ss, sl) < 0) {
			int e = errno;
			close(fd);
			return -e;
		}
	}
	if (tcp) {
		uint8_t lb[2] = {(uint8_t)(len >> 8), (uint8_t)len};
		if (getpeername(fd, (struct sockaddr *)&peer, &pl) == 0)
			format_sa(&peer, from, fromlen);
		if (write(fd, lb, 2) != 2 || write(fd, msg, len) != (ssize_t)len) {
			int e = errno;
			close(fd);
			return -e;
		}
		if (!read_full(fd, lb, 2)) {
			close(fd);
			return 0;
		}
		n = lb[0] << 8 | lb[1];
		if ((size_t)n > cap || !read_full(fd, out, (size_t)n)) {
			close(fd);
			return 0;
		}
		close(fd);
		return n;
	}
	if ((unconnected ? sendto(fd, msg, len, 0, (struct sockaddr *)&ss, sl) : send(fd, msg, len, 0)) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	if (!wait_readable(fd, 4000)) {
		close(fd);
		return 0;
	}
	n = recvfrom(fd, out, cap, 0, (struct sockaddr *)&peer, &pl);
	if (n < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	format_sa(&peer, from, fromlen);
	close(fd);
	return n;
}

/* Skip a (possibly compressed) name; returns the offset after it or 0. */
static size_t skip_name(const uint8_t *b, size_t n, size_t off)
{
	while (off < n) {
		if ((b[off] & 0xc0) == 0xc0)
			return off + 2 <= n ? off + 2 : 0;
		if (!b[off])
			return off + 1;
		off += 1u + b[off];
	}
	return 0;
}

/* The rcode, extended by an OPT record's high bits if the reply has one. */
static unsigned full_rcode(const uint8_t *b, size_t n)
{
	unsigned qd = (unsigned)(b[4] << 8 | b[5]), rest = (unsigned)((b[6] << 8 | b[7]) + (b[8] << 8 | b[9])),
		 ar = (unsigned)(b[10] << 8 | b[11]), rcode = b[3] & 0xf;
	size_t off = 12;

	for (unsigned i = 0; i < qd && off; i++)
		off = skip_name(b, n, off) ? skip_name(b, n, off) + 4 : 0;
	for (unsigned i = 0; i < rest + ar && off && off < n; i++) {
		off = skip_name(b, n, off);
		if (!off || off + 10 > n)
			break;
		if (i >= rest && b[off] == 0 && b[off + 1] == 41)
			rcode |= (unsigned)b[off + 4] << 4;
		off += 10u + (unsigned)(b[off + 8] << 8 | b[off + 9]);
	}
	return rcode;
}

static void print_reply(const uint8_t *b, size_t n)
{
	unsigned an, qd;
	size_t off = 12;

	if (n < 12) {
		printf("short %zu\n", n);
		return;
	}
	printf("rcode %s%s\n", rcode_name(full_rcode(b, n)), (b[2] & 0x02) ? " TC" : "");
	qd = (unsigned)(b[4] << 8 | b[5]);
	an = (unsigned)(b[6] << 8 | b[7]);
	for (unsigned i = 0; i < qd && off; i++)
		off = skip_name(b, n, off) ? skip_name(b, n, off) + 4 : 0;
	for (unsigned i = 0; i < an && off && off < n; i++) {
		size_t rd;
		unsigned type, rdlen;
		uint32_t ttl;

		off = skip_name(b, n, off);
		if (!off || off + 10 > n)
			break;
		type = (unsigned)(b[off] << 8 | b[off + 1]);
		ttl = (uint32_t)b[off + 4] << 24 | (uint32_t)b[off + 5] << 16 | (uint32_t)b[off + 6] << 8 | b[off + 7];
		rdlen = (unsigned)(b[off + 8] << 8 | b[off + 9]);
		rd = off + 10;
		if (rd + rdlen > n)
			break;
		if (type == 1 && rdlen == 4) {
			char a[INET_ADDRSTRLEN];
			inet_ntop(AF_INET, b + rd, a, sizeof(a));
			printf("A %s ttl %u\n", a, ttl);
		} else if (type == 28 && rdlen == 16) {
			char a[INET6_ADDRSTRLEN];
			inet_ntop(AF_INET6, b + rd, a, sizeof(a));
			printf("AAAA %s ttl %u\n", a, ttl);
		} else if (type == 5) {
			char name[NS_MAXDNAME];
			if (dn_expand(b, b + n, b + rd, name, sizeof(name)) > 0)
				printf("CNAME %s ttl %u\n", name, ttl);
		} else {
			printf("TYPE%u rdlen %u\n", type, rdlen);
		}
		off = rd + rdlen;
	}
}

static int cmd_query(int argc, char **argv)
{
	uint8_t q[1024], out[65536];
	char from[128] = "?";
	bool tcp, unconnected = false, v6 = false;
	size_t len;
	ssize_t n;

	if (argc < 7)
		return 2;
	tcp = !strcmp(argv[4], "tcp");
	for (int i = 7; i < argc; i++) {
		unconnected |= !strcmp(argv[i], "unconnected");
		v6 |= !strcmp(argv[i], "v6");
	}
	len = build_query(q, argv[5], type_of(argv[6]));
	n = exchange(argv[2], atoi(argv[3]), tcp, unconnected, v6, q, len, out, sizeof(out), from, sizeof(from));
	if (n < 0) {
		printf("%s\n", errname((int)-n));
		return 1;
	}
	if (n == 0) {
		printf("noreply\n");
		return 1;
	}
	printf("from %s\n", from);
	print_reply(out, (size_t)n);
	return 0;
}

static int cmd_raw(int argc, char **argv)
{
	uint8_t q[4096], out[65536];
	char from[128];
	size_t len = 0;
	ssize_t n;
	const char *h;

	if (argc < 6)
		return 2;
	for (h = argv[5]; h[0] && h[1] && len < sizeof(q); h += 2) {
		unsigned v;
		if (sscanf(h, "%2x", &v) != 1)
			return 2;
		q[len++] = (uint8_t)v;
	}
	n = exchange(argv[2], atoi(argv[3]), !strcmp(argv[4], "tcp"), false, false, q, len, out, sizeof(out), from,
		     sizeof(from));
	if (n < 0) {
		printf("%s\n", errname((int)-n));
		return 1;
	}
	if (n == 0) {
		printf("noreply\n");
		return 1;
	}
	print_reply(out, (size_t)n);
	return 0;
}

static int gai(const char *name, int family, bool print, struct sockaddr_storage *first, socklen_t *first_len)
{
	struct addrinfo hints = {.ai_family = family, .ai_socktype = SOCK_STREAM}, *res, *ai;
	int e = getaddrinfo(name, NULL, &hints, &res);

	if (e) {
		if (print)
			printf("EAI_%s\n", e == EAI_NONAME ? "NONAME" : e == EAI_AGAIN ? "AGAIN" : e == EAI_FAIL ? "FAIL"
							   : e == EAI_NODATA ? "NODATA" : e == EAI_SYSTEM ? "SYSTEM" : "OTHER");
		return 1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		char buf[INET6_ADDRSTRLEN];
		if (print && ai->ai_family == AF_INET)
			printf("%s\n", inet_ntop(AF_INET, &((struct sockaddr_in *)ai->ai_addr)->sin_addr, buf, sizeof(buf)));
		else if (print)
			printf("%s\n", inet_ntop(AF_INET6, &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr, buf, sizeof(buf)));
	}
	if (first) {
		memcpy(first, res->ai_addr, res->ai_addrlen);
		*first_len = res->ai_addrlen;
	}
	freeaddrinfo(res);
	return 0;
}

static int do_connect(struct sockaddr_storage *ss, socklen_t len, int type)
{
	int fd = socket(ss->ss_family, type, 0), e = 0;

	if (fd < 0)
		return errno;
	if (connect(fd, (struct sockaddr *)ss, len) < 0)
		e = errno;
	close(fd);
	return e;
}

static int run_op(int argc, char **argv)
{
	const char *op = argv[1];

	if (!strcmp(op, "gai") && argc >= 3) {
		int fam = AF_UNSPEC;
		if (argc >= 4 && !strcmp(argv[3], "inet"))
			fam = AF_INET;
		if (argc >= 4 && !strcmp(argv[3], "inet6"))
			fam = AF_INET6;
		return gai(argv[2], fam, true, NULL, NULL);
	}
	if (!strcmp(op, "res") && argc >= 3) {
		uint8_t ans[4096];
		int n;
		res_init();
		n = res_query(argv[2], C_IN, T_A, ans, sizeof(ans));
		if (n < 0) {
			printf("res_query failed\n");
			return 1;
		}
		print_reply(ans, (size_t)n);
		return 0;
	}
	if (!strcmp(op, "gai-connect") && argc >= 4) {
		struct sockaddr_storage ss;
		socklen_t sl;
		char buf[128];
		int e;
		if (gai(argv[2], AF_INET, false, &ss, &sl)) {
			printf("lookup failed\n");
			return 1;
		}
		((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)atoi(argv[3]));
		e = do_connect(&ss, sl, SOCK_STREAM);
		format_sa(&ss, buf, sizeof(buf));
		if (e) {
			printf("%s %s\n", errname(e), buf);
			return 1;
		}
		printf("ok %s\n", buf);
		return 0;
	}
	if (!strcmp(op, "loop") && argc >= 5) {
		long n = atol(argv[4]), denied = 0, failed = 0, other = 0;
		int fam = argc >= 6 && !strcmp(argv[5], "inet6") ? AF_INET6 : AF_INET;
		uint16_t port = htons((uint16_t)atoi(argv[3]));
		for (long i = 0; i < n; i++) {
			struct sockaddr_storage ss;
			socklen_t sl;
			char name[256];
			int e;
			/* NAME may hold one %ld: a fresh name (and address) per iteration */
			{
				const char *pct = strstr(argv[2], "%ld");
				if (pct)
					snprintf(name, sizeof(name), "%.*s%ld%s", (int)(pct - argv[2]), argv[2], i, pct + 3);
				else
					snprintf(name, sizeof(name), "%s", argv[2]);
			}
			if (gai(name, fam, false, &ss, &sl)) {
				failed++;
				continue;
			}
			if (fam == AF_INET)
				((struct sockaddr_in *)&ss)->sin_port = port;
			else
				((struct sockaddr_in6 *)&ss)->sin6_port = port;
			e = do_connect(&ss, sl, SOCK_STREAM);
			if (e == EPERM)
				denied++;
			else if (e)
				other++; /* ECONNREFUSED, ENETUNREACH: past custode's hook */
		}
		printf("done %ld denied %ld lookup_failed %ld other %ld\n", n, denied, failed, other);
		return denied || failed;
	}
	if (!strcmp(op, "connect") && argc >= 4) {
		struct sockaddr_storage ss;
		socklen_t sl;
		int e;
		if (sockaddr_of(argv[2], atoi(argv[3]), false, &ss, &sl) < 0)
			return 2;
		e = do_connect(&ss, sl, argc >= 5 && !strcmp(argv[4], "udp") ? SOCK_DGRAM : SOCK_STREAM);
		printf("%s\n", e ? errname(e) : "ok");
		return e != 0;
	}
	if (!strcmp(op, "bind") && argc >= 4) {
		/* bind 0.0.0.0:PORT (the resolver's port on loopback, say): "ok" or the errno name */
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
		int fd = socket(AF_INET, !strcmp(argv[3], "tcp") ? SOCK_STREAM : SOCK_DGRAM, 0), e = 0;

		if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			e = errno;
		if (fd >= 0)
			close(fd);
		printf("%s\n", e ? errname(e) : "ok");
		return e != 0;
	}
	if (!strcmp(op, "query"))
		return cmd_query(argc, argv);
	if (!strcmp(op, "raw"))
		return cmd_raw(argc, argv);
	return 2;
}

int main(int argc, char **argv)
{
	int code;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		fprintf(stderr, "usage: see the comment at the top of dprobe.c\n");
		return 2;
	}
	if (!strcmp(argv[1], "hold")) {
		char c;
		code = run_op(argc - 1, argv + 1);
		printf("held %d\n", (int)getpid());
		while (read(0, &c, 1) > 0)
			;
		return code;
	}
	code = run_op(argc, argv);
	if (code == 2)
		fprintf(stderr, "dprobe: usage: see the comment at the top of dprobe.c\n");
	return code;
}
