// SPDX-License-Identifier: Apache-2.0
/*
 * udpbench ITERATIONS [GOFILE]: the cost of the egress hooks on UDP, timed by
 * this thread's CPU clock (CLOCK_THREAD_CPUTIME_ID: time the kernel spent on
 * this thread's calls, not wall time another process on a busy machine
 * stretches).
 *
 * Four figures, each the mean ns of thread CPU per call over ITERATIONS
 * calls, cycling through DESTS distinct destinations so each call really
 * consults the tables (no cache of one answer):
 *   cidr_connect  connect() of a UDP socket to 11.a.b.c:443, each inside a
 *                 different /24 of the bench policy's 10,000 CIDR rules
 *   cidr_sendto   sendto() on an unconnected UDP socket, same destinations
 *   pin_connect   connect() to 2a00:cafe::/32 addresses pinned by
 *                 `pinfill PID COUNT udp` (every 97th of its
 *                 first 97 * DESTS pins)
 *   pin_sendto    sendto(), same destinations
 * The addresses must route (tools/bench/connect-bench routes them to a
 * veth, where packets are dropped): a refused or unroutable call is an
 * error, so a figure never silently times a failure.
 *
 * With GOFILE, print "ready PID" and wait until GOFILE exists first (so a
 * harness can fill the pin map for this run).
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "pinaddr.h"

#define DESTS 256

static double cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

struct dests {
	struct sockaddr_storage a[DESTS];
	socklen_t len;
	int family;
};

static void cidr_dests(struct dests *d)
{
	d->family = AF_INET;
	d->len = sizeof(struct sockaddr_in);
	for (int i = 0; i < DESTS; i++) {
		struct sockaddr_in *s = (struct sockaddr_in *)&d->a[i];
		/* rule r covers 11+r/65536 . (r/256)%256 . r%256 .0/24: spread over the 10,000 */
		int r = (i * 39) % 10000;

		memset(s, 0, sizeof(*s));
		s->sin_family = AF_INET;
		s->sin_port = htons(443);
		s->sin_addr.s_addr = htonl((unsigned)(11 + r / 65536) << 24 | (unsigned)((r / 256) % 256) << 16 |
					   (unsigned)(r % 256) << 8 | (unsigned)(1 + i % 250));
	}
}

static void pin_dests(struct dests *d)
{
	d->family = AF_INET6;
	d->len = sizeof(struct sockaddr_in6);
	for (int i = 0; i < DESTS; i++) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)&d->a[i];

		memset(s, 0, sizeof(*s));
		s->sin6_family = AF_INET6;
		s->sin6_port = htons(443);
		bench_pin_addr((long)i * 97, s->sin6_addr.s6_addr);
	}
}

static int time_calls(const struct dests *d, long n, bool send, double *out)
{
	int fd = socket(d->family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	double t0, t1;
	char b = 0;

	if (fd < 0) {
		perror("udpbench: socket");
		return -1;
	}
	for (int warm = 1; warm >= 0; warm--) {
		long iters = warm ? n / 10 + 1 : n;

		t0 = cpu_ns();
		for (long i = 0; i < iters; i++) {
			const struct sockaddr *a = (const struct sockaddr *)&d->a[i % DESTS];
			int rc = send ? (int)sendto(fd, &b, 1, 0, a, d->len) : connect(fd, a, d->len);

			if (rc < 0) {
				char txt[INET6_ADDRSTRLEN] = "?";
				const void *ip = d->family == AF_INET ? (const void *)&((const struct sockaddr_in *)a)->sin_addr
								      : (const void *)&((const struct sockaddr_in6 *)a)->sin6_addr;

				inet_ntop(d->family, ip, txt, sizeof(txt));
				fprintf(stderr, "udpbench: %s %s: %s\n", send ? "sendto" : "connect", txt, strerror(errno));
				close(fd);
				return -1;
			}
		}
		t1 = cpu_ns();
	}
	close(fd);
	*out = (t1 - t0) / (double)n;
	return 0;
}

int main(int argc, char **argv)
{
	static struct dests cidr, pin;
	double r[4];
	long n;

	if (argc < 2 || (n = atol(argv[1])) <= 0) {
		fprintf(stderr, "usage: udpbench ITERATIONS [GOFILE]\n");
		return 2;
	}
	cidr_dests(&cidr);
	pin_dests(&pin);
	if (argc > 2) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		while (access(argv[2], F_OK) != 0)
			usleep(10000);
	}
	if (time_calls(&cidr, n, false, &r[0]) < 0 || time_calls(&cidr, n, true, &r[1]) < 0 ||
	    time_calls(&pin, n, false, &r[2]) < 0 || time_calls(&pin, n, true, &r[3]) < 0)
		return 1;
	printf("%.1f %.1f %.1f %.1f\n", r[0], r[1], r[2], r[3]);
	return 0;
}
