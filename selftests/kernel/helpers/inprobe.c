// SPDX-License-Identifier: Apache-2.0
/*
 * inprobe: a TCP server for the inbound tests.
 *
 *   inprobe serve PORT   listen on [::]:PORT (dual stack); print "listening", then
 *                        "accepted ADDR" per connection (each closed at once) until
 *                        stdin reaches EOF
 *   inprobe connect ADDR PORT MS   connect within MS milliseconds: "ok", "timeout"
 *                        or the errno name (no retries beyond the kernel's SYN ones)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *ename(int e)
{
	switch (e) {
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case ECONNREFUSED: return "ECONNREFUSED";
	case ENETUNREACH: return "ENETUNREACH";
	case EHOSTUNREACH: return "EHOSTUNREACH";
	case ETIMEDOUT: return "ETIMEDOUT";
	default: return strerror(e);
	}
}

static int serve(int port)
{
	struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_port = htons((unsigned short)port),
				  .sin6_addr = IN6ADDR_ANY_INIT};
	int l = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0), off = 0, on = 1;

	if (l < 0)
		return printf("%s\n", ename(errno)), 1;
	setsockopt(l, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(l, 16) < 0) {
		printf("%s\n", ename(errno));
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	for (;;) {
		struct pollfd p[2] = {{.fd = 0, .events = POLLIN}, {.fd = l, .events = POLLIN}};
		char buf[64], a[INET6_ADDRSTRLEN];
		struct sockaddr_in6 peer;
		socklen_t len = sizeof(peer);
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
		inet_ntop(AF_INET6, &peer.sin6_addr, a, sizeof(a));
		printf("accepted %s\n", strncmp(a, "::ffff:", 7) ? a : a + 7);
		fflush(stdout);
		close(c);
	}
}

static int connect_to(const char *addr, int port, int ms)
{
	struct sockaddr_storage ss = {0};
	socklen_t len;
	struct pollfd p;
	int fd, err = 0;
	socklen_t el = sizeof(err);

	if (strchr(addr, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((unsigned short)port);
		inet_pton(AF_INET6, addr, &s6->sin6_addr);
		len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((unsigned short)port);
		inet_pton(AF_INET, addr, &s4->sin_addr);
		len = sizeof(*s4);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return printf("%s\n", ename(errno)), 1;
	if (connect(fd, (struct sockaddr *)&ss, len) == 0)
		return printf("ok\n"), 0;
	if (errno != EINPROGRESS)
		return printf("%s\n", ename(errno)), 1;
	p.fd = fd;
	p.events = POLLOUT;
	if (poll(&p, 1, ms) == 0)
		return printf("timeout\n"), 1;
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
	if (err)
		return printf("%s\n", ename(err)), 1;
	printf("ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "serve"))
		return serve(atoi(argv[2]));
	if (argc == 5 && !strcmp(argv[1], "connect"))
		return connect_to(argv[2], atoi(argv[3]), atoi(argv[4]));
	fprintf(stderr, "usage: inprobe serve PORT | connect ADDR PORT MS\n");
	return 2;
}
