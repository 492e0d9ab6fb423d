// SPDX-License-Identifier: Apache-2.0
/*
 * dnsd: the test upstream for custode's resolver. A UDP and TCP DNS server on
 * loopback (inside a test's network namespace) serving canned answers under
 * .test, many of them hostile: rebinding to special addresses, CNAME chains
 * and loops, junk in the additional section, HTTPS records with hints,
 * malformed messages, truncation, mismatched questions. It builds its wire
 * format by hand (not with custode's module, which it tests).
 *
 *   dnsd [--addr A] [--port N] [--log FILE]
 * prints "ready" once listening; with --log, one line per query received:
 * "<udp|tcp> <name> <type>". Names: see zone() below; anything else NXDOMAIN.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define T_A 1
#define T_NS 2
#define T_CNAME 5
#define T_AAAA 28
#define T_OPT 41
#define T_HTTPS 65

struct msg {
	uint8_t b[65536];
	size_t n;
	uint16_t an, ns, ar;
};

static FILE *logf_;
static unsigned flip_count;

static void put(struct msg *m, const void *d, size_t n)
{
	if (m->n + n <= sizeof(m->b)) {
		memcpy(m->b + m->n, d, n);
		m->n += n;
	}
}

static void put8(struct msg *m, unsigned v)
{
	uint8_t b = (uint8_t)v;
	put(m, &b, 1);
}

static void put16(struct msg *m, unsigned v)
{
	put8(m, v >> 8);
	put8(m, v);
}

static void put32(struct msg *m, uint32_t v)
{
	put16(m, v >> 16);
	put16(m, v & 0xffff);
}

static void put_name(struct msg *m, const char *s)
{
	while (*s) {
		const char *dot = strchr(s, '.');
		size_t l = dot ? (size_t)(dot - s) : strlen(s);
		put8(m, (unsigned)l);
		put(m, s, l);
		s += l + (dot ? 1 : 0);
	}
	put8(m, 0);
}

/* owner: NULL for a pointer to the question's name */
static void rr_head(struct msg *m, const char *owner, unsigned type, uint32_t ttl)
{
	if (owner)
		put_name(m, owner);
	else
		put16(m, 0xc00c);
	put16(m, type);
	put16(m, 1);
	put32(m, ttl);
}

static void rr_a(struct msg *m, const char *owner, const char *addr, uint32_t ttl)
{
	struct in_addr a;

	inet_pton(AF_INET, addr, &a);
	rr_head(m, owner, T_A, ttl);
	put16(m, 4);
	put(m, &a, 4);
	m->an++;
}

static void rr_aaaa(struct msg *m, const char *owner, const char *addr, uint32_t ttl)
{
	struct in6_addr a;

	inet_pton(AF_INET6, addr, &a);
	rr_head(m, owner, T_AAAA, ttl);
	put16(m, 16);
	put(m, &a, 16);
	m->an++;
}

static void rr_cname(struct msg *m, const char *owner, const char *target, uint32_t ttl)
{
	size_t at;

	rr_head(m, owner, T_CNAME, ttl);
	at = m->n;
	put16(m, 0);
	put_name(m, target);
	m->b[at] = (uint8_t)((m->n - at - 2) >> 8);
	m->b[at + 1] = (uint8_t)(m->n - at - 2);
	m->an++;
}

/* Header: id, flags (QR|RA|RD + rcode), counts patched at the end. */
static void header(struct msg *m, uint16_t id, unsigned flags)
{
	m->n = 0;
	m->an = m->ns = m->ar = 0;
	put16(m, id);
	put16(m, flags);
	put16(m, 1);
	put16(m, 0);
	put16(m, 0);
	put16(m, 0);
}

static void finish_counts(struct msg *m)
{
	m->b[6] = (uint8_t)(m->an >> 8);
	m->b[7] = (uint8_t)m->an;
	m->b[8] = (uint8_t)(m->ns >> 8);
	m->b[9] = (uint8_t)m->ns;
	m->b[10] = (uint8_t)(m->ar >> 8);
	m->b[11] = (uint8_t)m->ar;
}

static bool is(const char *name, const char *want)
{
	return !strcmp(name, want);
}

static bool ends(const char *name, const char *suffix)
{
	size_t n = strlen(name), s = strlen(suffix);
	return n > s && !strcmp(name + n - s, suffix) && name[n - s - 1] == '.';
}

/*
 * The zone. Returns false to send nothing. `q` is the question as received
 * (name + type + class), echoed verbatim.
 */
static bool zone(struct msg *m, uint16_t id, const uint8_t *q, size_t qlen, const char *name, unsigned type,
		 bool tcp)
{
	const unsigned OK = 0x8180, NX = 0x8183;
	char owner[300];

	header(m, id, OK);
	put(m, q, qlen);
	if (is(name, "ok.test")) {
		if (type == T_A)
			rr_a(m, NULL, "203.0.113.10", 300);
		if (type == T_AAAA)
			rr_aaaa(m, NULL, "2001:db8::10", 300);
	} else if (is(name, "ok2.test")) {
		if (type == T_A)
			rr_a(m, NULL, "203.0.113.11", 300);
	} else if (is(name, "other.test") || is(name, "evil.test")) {
		if (type == T_A)
			rr_a(m, NULL, "203.0.113.12", 300);
	} else if (ends(name, "wild.test")) {
		if (type == T_A)
			rr_a(m, NULL, "203.0.113.10", 300);
	} else if (is(name, "wild.test")) {
		if (type == T_A)
			rr_a(m, NULL, "203.0.113.13", 300);
	} else if (is(name, "short.test")) {
		if (type == T_A)
			rr_a(m, NULL, "203.0.113.11", 1);
	} else if (is(name, "bigttl.test")) {
		if (type == T_A)
			rr_a(m, NULL, "203.0.113.10", 0xffffffffu);
	} else if (is(name, "r127.test")) {
		if (type == T_A)
			rr_a(m, NULL, "127.0.0.2", 300);
	} else if (is(name, "rhost.test")) { /* the near namespace's own addresses (ktest_netns) */
		if (type == T_A)
			rr_a(m, NULL, "198.51.100.1", 300);
		if (type == T_AAAA)
			rr_aaaa(m, NULL, "2001:db8:1::1", 300);
	} else if (is(name, "rhostmix.test")) {
		if (type == T_A) {
			rr_a(m, NULL, "198.51.100.1", 300);
			rr_a(m, NULL, "203.0.113.10", 300);
		}
	} else if (is(name, "r10.test")) {
		if (type == T_A)
			rr_a(m, NULL, "10.0.0.1", 300);
	} else if (is(name, "rmeta.test")) {
		if (type == T_A)
			rr_a(m, NULL, "169.254.169.254", 300);
	} else if (is(name, "rzero.test")) {
		if (type == T_A)
			rr_a(m, NULL, "0.0.0.0", 300);
	} else if (is(name, "rmapped.test")) {
		if (type == T_AAAA)
			rr_aaaa(m, NULL, "::ffff:127.0.0.1", 300);
	} else if (is(name, "rec2.test")) {
		if (type == T_AAAA)
			rr_aaaa(m, NULL, "fd00:ec2::254", 300);
	} else if (is(name, "rnat64.test")) {
		if (type == T_AAAA)
			rr_aaaa(m, NULL, "64:ff9b::a9fe:a9fe", 300);
	} else if (is(name, "private.test")) { /* granted as a literal by some policies */
		if (type == T_A)
			rr_a(m, NULL, "127.0.0.1", 300);
	} else if (is(name, "mixed.test")) {
		if (type == T_A) {
			rr_a(m, NULL, "10.0.0.1", 300);
			rr_a(m, NULL, "203.0.113.10", 300);
			rr_a(m, NULL, "127.0.0.1", 300);
		}
		if (type == T_AAAA) {
			rr_aaaa(m, NULL, "::ffff:10.0.0.1", 300);
			rr_aaaa(m, NULL, "2001:db8::10", 300);
		}
	} else if (is(name, "flip.test")) {
		if (type == T_A)
			rr_a(m, NULL, flip_count++ == 0 ? "203.0.113.11" : "10.0.0.1", 0);
	} else if (is(name, "cname.test")) {
		rr_cname(m, NULL, "target.other.test", 300);
		if (type == T_A)
			rr_a(m, "target.other.test", "203.0.113.11", 300);
	} else if (is(name, "cname-denied.test")) {
		rr_cname(m, NULL, "evil.test", 300);
		if (type == T_A)
			rr_a(m, "evil.test", "203.0.113.12", 300);
	} else if (is(name, "cname-private.test")) {
		rr_cname(m, NULL, "inside.other.test", 300);
		if (type == T_A)
			rr_a(m, "inside.other.test", "10.0.0.1", 300);
	} else if (is(name, "loop.test")) {
		rr_cname(m, NULL, "loop2.test", 300);
		rr_cname(m, "loop2.test", "loop.test", 300);
	} else if (is(name, "chain20.test") || is(name, "chain3.test")) {
		int hops = is(name, "chain20.test") ? 20 : 3;
		char prev[64];
		snprintf(prev, sizeof(prev), "%s", name);
		for (int i = 1; i <= hops; i++) {
			snprintf(owner, sizeof(owner), "c%d.%s", i, name);
			rr_cname(m, i == 1 ? NULL : prev, owner, 300);
			snprintf(prev, sizeof(prev), "%s", owner);
		}
		if (type == T_A)
			rr_a(m, prev, "203.0.113.10", 300);
	} else if (is(name, "additional.test")) {
		if (type == T_A) {
			rr_a(m, NULL, "203.0.113.10", 300);
			/* authority: an NS; additional: glue-like junk for the name and another */
			put_name(m, "test");
			put16(m, T_NS);
			put16(m, 1);
			put32(m, 300);
			put16(m, 9);
			put_name(m, "ns.test");
			m->ns++;
			rr_a(m, NULL, "203.0.113.14", 300);
			rr_a(m, "ok.test", "198.51.100.66", 300);
			m->an -= 2;
			m->ar += 2;
		}
	} else if (is(name, "unrelated.test")) {
		if (type == T_A) {
			rr_a(m, NULL, "203.0.113.10", 300);
			rr_a(m, "other.test", "203.0.113.14", 300);
		}
	} else if (is(name, "https.test")) {
		if (type == T_HTTPS) {
			/* HTTPS 1 . alpn=h2 ipv4hint=10.0.0.1,203.0.113.14 */
			size_t at;
			rr_head(m, NULL, T_HTTPS, 300);
			at = m->n;
			put16(m, 0);
			put16(m, 1);
			put8(m, 0);
			put16(m, 1); /* alpn */
			put16(m, 3);
			put8(m, 2);
			put(m, "h2", 2);
			put16(m, 4); /* ipv4hint */
			put16(m, 8);
			put(m, "\x0a\x00\x00\x01\xcb\x00\x71\x0e", 8);
			m->b[at] = (uint8_t)((m->n - at - 2) >> 8);
			m->b[at + 1] = (uint8_t)(m->n - at - 2);
			m->an++;
		}
		if (type == T_A)
			rr_a(m, NULL, "203.0.113.10", 300);
	} else if (is(name, "many.test")) {
		if (type == T_A)
			for (int i = 0; i < 40; i++) {
				char a[32];
				snprintf(a, sizeof(a), "203.0.113.%d", 100 + i);
				rr_a(m, NULL, a, 300);
			}
	} else if (is(name, "comploop.test")) {
		/* an answer whose owner is a pointer to itself */
		size_t here = m->n;
		put16(m, 0xc000 | (unsigned)here);
		put16(m, T_A);
		put16(m, 1);
		put32(m, 300);
		put16(m, 4);
		put(m, "\xcb\x00\x71\x0a", 4);
		m->an++;
	} else if (is(name, "fwdptr.test")) {
		/* an owner pointing forward, at its own rdata */
		size_t here = m->n;
		put16(m, 0xc000 | (unsigned)(here + 12));
		put16(m, T_A);
		put16(m, 1);
		put32(m, 300);
		put16(m, 4);
		put(m, "\x01x\x00\x00", 4);
		m->an++;
	} else if (is(name, "badrdlen.test")) {
		rr_head(m, NULL, T_A, 300);
		put16(m, 5);
		put(m, "\xcb\x00\x71\x0a\x00", 5);
		m->an++;
	} else if (is(name, "overrun.test")) {
		rr_head(m, NULL, T_A, 300);
		put16(m, 400);
		put(m, "\xcb\x00\x71\x0a", 4);
		m->an++;
	} else if (is(name, "qd0.test")) {
		header(m, id, OK);
		m->b[5] = 0; /* qdcount 0, no question */
		rr_a(m, "qd0.test", "203.0.113.10", 300);
	} else if (is(name, "qd2.test")) {
		put(m, q, qlen);
		m->b[5] = 2;
		rr_a(m, NULL, "203.0.113.10", 300);
	} else if (is(name, "wrongq.test")) {
		header(m, id, OK);
		put_name(m, "ok.test");
		put16(m, T_A);
		put16(m, 1);
		rr_a(m, NULL, "203.0.113.10", 300);
	} else if (is(name, "wrongid.test")) {
		m->b[0] ^= 0x55;
		rr_a(m, NULL, "203.0.113.10", 300);
	} else if (is(name, "garbage.test")) {
		m->n = 7;
		memcpy(m->b, "\x13\x37garbg", 7);
		return true;
	} else if (is(name, "trailing.test")) {
		rr_a(m, NULL, "203.0.113.10", 300);
		finish_counts(m);
		put(m, "junk", 4);
		return true;
	} else if (is(name, "tc.test")) {
		if (!tcp) {
			m->b[2] |= 0x02; /* TC, no records */
		} else if (type == T_A) {
			rr_a(m, NULL, "203.0.113.15", 300);
		}
	} else if (is(name, "servfail.test")) {
		m->b[3] = 0x82;
	} else if (is(name, "silent.test")) {
		return false;
	} else if (ends(name, "seq.test") && !strncmp(name, "n", 1)) {
		/* n<k>.seq.test: a distinct address per k (2001:db8:5::k, 192.0.2.k%256: routed nowhere in the fixture, so a connect fails at once past the hook) */
		long k = atol(name + 1);
		char a[64];
		if (type == T_AAAA) {
			snprintf(a, sizeof(a), "2001:db8:5::%lx", k);
			rr_aaaa(m, NULL, a, 300);
		}
		if (type == T_A) {
			snprintf(a, sizeof(a), "192.0.2.%ld", k % 256);
			rr_a(m, NULL, a, 300);
		}
	} else if (ends(name, "bench.test")) {
		/* q<i>.bench.test (tools/bench/dns-bench): a distinct public address per i, so every answer is a new pin */
		long i = !strncmp(name, "q", 1) ? atol(name + 1) : 0;
		char a[64];

		if (type == T_A) {
			snprintf(a, sizeof(a), "45.%ld.%ld.%ld", (i >> 16) & 255, (i >> 8) & 255, i & 255);
			rr_a(m, NULL, a, 300);
		}
	} else {
		m->b[2] = NX >> 8;
		m->b[3] = NX & 0xff;
	}
	finish_counts(m);
	return true;
}

/* The question's name as lowercase text; returns the question's length (name+type+class) or 0. */
static size_t question(const uint8_t *b, size_t n, char *name, size_t cap, unsigned *type)
{
	size_t off = 12, t = 0;

	if (n < 12)
		return 0;
	while (off < n && b[off]) {
		size_t l = b[off];
		if (l > 63 || off + 1 + l > n || t + l + 2 > cap)
			return 0;
		if (t)
			name[t++] = '.';
		for (size_t i = 0; i < l; i++) {
			char c = (char)b[off + 1 + i];
			name[t++] = c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
		}
		off += 1 + l;
	}
	name[t] = 0;
	if (off + 5 > n)
		return 0;
	*type = (unsigned)(b[off + 1] << 8 | b[off + 2]);
	return off + 5 - 12;
}

static size_t answer(struct msg *m, const uint8_t *in, size_t n, bool tcp)
{
	char name[300];
	unsigned type = 0;
	size_t ql = question(in, n, name, sizeof(name), &type);
	uint16_t id;

	if (!ql)
		return 0;
	id = (uint16_t)(in[0] << 8 | in[1]);
	if (logf_) {
		fprintf(logf_, "%s %s %u\n", tcp ? "tcp" : "udp", name, type);
		fflush(logf_);
	}
	if (!zone(m, id, in + 12, ql, name, type, tcp))
		return 0;
	return m->n;
}

static int listen_on(const char *addr, int port, int type)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0), one = 1;

	inet_pton(AF_INET, addr, &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || (type == SOCK_STREAM && listen(fd, 64) < 0)) {
		perror("dnsd: bind");
		exit(1);
	}
	return fd;
}

static bool read_full(int fd, uint8_t *b, size_t n)
{
	size_t got = 0;

	while (got < n) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t r;
		if (poll(&p, 1, 3000) <= 0)
			return false;
		r = read(fd, b + got, n - got);
		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	return true;
}

static void serve_tcp(int cfd)
{
	static struct msg m;
	static uint8_t in[65536];

	for (;;) {
		uint8_t lb[2];
		size_t n, out;

		if (!read_full(cfd, lb, 2))
			break;
		n = (size_t)(lb[0] << 8 | lb[1]);
		if (!read_full(cfd, in, n))
			break;
		out = answer(&m, in, n, true);
		if (!out)
			continue;
		lb[0] = (uint8_t)(out >> 8);
		lb[1] = (uint8_t)out;
		if (write(cfd, lb, 2) != 2 || write(cfd, m.b, out) != (ssize_t)out)
			break;
	}
	close(cfd);
}

int main(int argc, char **argv)
{
	const char *addr = "127.0.0.1";
	int port = 5300, u, t;
	static struct msg m;
	static uint8_t in[65536];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--addr") && i + 1 < argc)
			addr = argv[++i];
		else if (!strcmp(argv[i], "--port") && i + 1 < argc)
			port = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--log") && i + 1 < argc) {
			logf_ = fopen(argv[++i], "a");
			if (!logf_) {
				perror("dnsd: --log");
				return 2;
			}
		} else {
			fprintf(stderr, "usage: dnsd [--addr A] [--port N] [--log FILE]\n");
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	u = listen_on(addr, port, SOCK_DGRAM);
	t = listen_on(addr, port, SOCK_STREAM);
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		struct pollfd p[2] = {{.fd = u, .events = POLLIN}, {.fd = t, .events = POLLIN}};

		if (poll(p, 2, -1) <= 0)
			continue;
		if (p[0].revents & POLLIN) {
			struct sockaddr_in from;
			socklen_t fl = sizeof(from);
			ssize_t n = recvfrom(u, in, sizeof(in), 0, (struct sockaddr *)&from, &fl);
			size_t out;

			if (n > 0 && (out = answer(&m, in, (size_t)n, false)))
				sendto(u, m.b, out, 0, (struct sockaddr *)&from, fl);
		}
		if (p[1].revents & POLLIN) {
			int c = accept4(t, NULL, NULL, SOCK_CLOEXEC);
			if (c >= 0) {
				/* serially: the tests send one TCP query at a time */
				serve_tcp(c);
			}
		}
	}
}
