// SPDX-License-Identifier: Apache-2.0
/*
 * dnsbench: DNS load over one connected UDP socket (as glibc's stub does),
 * for tools/bench/dns-bench.
 *
 *   dnsbench SERVER PORT N WINDOW
 * sends N A queries for q<i>.bench.test, keeping WINDOW in flight, and
 * prints "qps Q p50_us A p99_us B lost L". A query unanswered for a second
 * is counted lost (UDP) and the window moves on. WINDOW 1 measures latency.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static size_t query(uint8_t *b, uint16_t id, long i)
{
	char label[32];
	size_t n = 12, l;

	memset(b, 0, 12);
	b[0] = (uint8_t)(id >> 8);
	b[1] = (uint8_t)id;
	b[2] = 0x01;
	b[5] = 1;
	l = (size_t)snprintf(label, sizeof(label), "q%ld", i);
	b[n++] = (uint8_t)l;
	memcpy(b + n, label, l);
	n += l;
	memcpy(b + n, "\x05" "bench" "\x04" "test" "\x00\x00\x01\x00\x01", 16);
	return n + 16;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	long n, window, sent = 0, done = 0, lost = 0, ok = 0;
	uint64_t *lat, *sent_at, t0;
	uint8_t q[512], r[4096];
	int fd;

	if (argc != 5) {
		fprintf(stderr, "usage: dnsbench SERVER PORT N WINDOW\n");
		return 2;
	}
	inet_pton(AF_INET, argv[1], &sa.sin_addr);
	sa.sin_port = htons((uint16_t)atoi(argv[2]));
	n = atol(argv[3]);
	window = atol(argv[4]);
	if (n <= 0 || n > 65536 * 16 || window <= 0 || window > 4096)
		return 2;
	lat = calloc((size_t)n, sizeof(*lat));
	sent_at = calloc(65536, sizeof(*sent_at));
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (!lat || !sent_at || fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("dnsbench");
		return 1;
	}
	t0 = now_ns();
	while (done < n) {
		struct pollfd p = {.fd = fd, .events = POLLIN};

		while (sent < n && sent - done < window) {
			size_t len = query(q, (uint16_t)sent, sent);
			sent_at[(uint16_t)sent] = now_ns();
			if (send(fd, q, len, 0) < 0 && errno != EAGAIN) {
				perror("dnsbench: send");
				return 1;
			}
			sent++;
		}
		if (poll(&p, 1, 1000) <= 0) {
			/* a second without progress: what is in flight is lost */
			lost += sent - done;
			done = sent;
			memset(sent_at, 0, 65536 * sizeof(*sent_at));
			continue;
		}
		for (;;) {
			ssize_t got = recv(fd, r, sizeof(r), MSG_DONTWAIT);
			uint16_t id;

			if (got < 12)
				break;
			id = (uint16_t)(r[0] << 8 | r[1]);
			if (!sent_at[id])
				continue;
			lat[ok++] = now_ns() - sent_at[id];
			sent_at[id] = 0;
			done++;
		}
	}
	{
		double secs = (double)(now_ns() - t0) / 1e9;
		qsort(lat, (size_t)ok, sizeof(*lat), cmp_u64);
		printf("qps %.0f p50_us %.1f p99_us %.1f lost %ld\n", (double)ok / secs,
		       ok ? (double)lat[ok / 2] / 1e3 : 0.0, ok ? (double)lat[(size_t)((double)ok * 0.99)] / 1e3 : 0.0, lost);
	}
	return 0;
}
