// SPDX-License-Identifier: Apache-2.0
/*
 * connbench ITERATIONS PORT [GOFILE]: connect() to a TCP listener on
 * 127.0.0.1:PORT that this process owns, accept, close both (the client with
 * an RST, so no TIME_WAIT accumulates across runs); print the mean
 * ns per connect+accept+close. With GOFILE, print "ready PID" and wait until
 * GOFILE exists first (so a harness can fill maps for this run).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int once(int lfd, const struct sockaddr_in *a)
{
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), s;
	/* close with RST: no TIME_WAIT pile-up, whose port search would dominate the figure */
	struct linger lg = {.l_onoff = 1, .l_linger = 0};

	if (c < 0 || setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) < 0 ||
	    connect(c, (const struct sockaddr *)a, sizeof(*a)) < 0) {
		perror("connect");
		return -1;
	}
	s = accept(lfd, NULL, NULL);
	if (s < 0) {
		perror("accept");
		return -1;
	}
	close(c);
	close(s);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	long n;
	int lfd, on = 1;
	double t0, t1;

	if (argc < 3 || (n = atol(argv[1])) <= 0) {
		fprintf(stderr, "usage: connbench ITERATIONS PORT [GOFILE]\n");
		return 2;
	}
	a.sin_port = htons((unsigned short)atoi(argv[2]));
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 1024) < 0) {
		perror("listen");
		return 1;
	}
	if (argc > 3) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		while (access(argv[3], F_OK) != 0)
			usleep(10000);
	}
	for (long i = 0; i < n / 10; i++)
		if (once(lfd, &a) < 0)
			return 1;
	t0 = now_ns();
	for (long i = 0; i < n; i++)
		if (once(lfd, &a) < 0)
			return 1;
	t1 = now_ns();
	printf("%.1f\n", (t1 - t0) / n);
	return 0;
}
