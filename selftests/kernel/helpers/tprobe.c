// SPDX-License-Identifier: Apache-2.0
/*
 * tprobe: tries one operation and prints its outcome ("ok" or the errno
 * name), for kernel tests that run it inside a custode run.
 *
 *   tprobe open PATH MODE          MODE: r w rw a t (O_RDONLY|O_TRUNC) c (O_CREAT|O_WRONLY)
 *   tprobe wait-open PATH MODE     print "ready PID", read a line, open, print the
 *                                  outcome, then block until stdin closes or a kill
 *   tprobe exec PATH [ARG...]      execv, print the errno on failure
 *   tprobe connect ADDR PORT [tcp|udp] [v6only|dualstack]
 *   tprobe sendto ADDR PORT        unconnected UDP datagram
 *   tprobe sendmmsg ADDR PORT      two datagrams through sendmmsg
 *   tprobe fastopen ADDR PORT      TCP sendto(MSG_FASTOPEN)
 *   tprobe bind ADDR PORT [tcp|udp]
 *   tprobe socket DOMAIN TYPE PROTO   numbers, as socket(2) takes them
 *   tprobe recvfd-connect ADDR PORT   receive a socket over stdin (SCM_RIGHTS), connect it
 *   tprobe wait OP ...             print "ready PID", read a line, do OP, block until stdin closes
 *   tprobe repl                    print "ready PID", then run one "open PATH MODE" or
 *                                  "connect ADDR PORT tcp|udp" per input line
 *   tprobe spin SECONDS PATH...    open each PATH (read) in a tight loop (SECONDS 0: until stdin closes); print "PATH ok N denied M" each
 * ADDR is an IPv4 or IPv6 literal; IPv6 sockets are used for IPv6 literals.
 * Exit: 0 ok, 1 the operation failed, 2 usage.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

static const char *errname(int e)
{
	switch (e) {
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EEXIST: return "EEXIST";
	case EISDIR: return "EISDIR";
	case ENOTDIR: return "ENOTDIR";
	case ENAMETOOLONG: return "ENAMETOOLONG";
	case ELOOP: return "ELOOP";
	case EROFS: return "EROFS";
	case EXDEV: return "EXDEV";
	case ENOEXEC: return "ENOEXEC";
	case ECONNREFUSED: return "ECONNREFUSED";
	case ENETUNREACH: return "ENETUNREACH";
	case EHOSTUNREACH: return "EHOSTUNREACH";
	case EAFNOSUPPORT: return "EAFNOSUPPORT";
	case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
	case EINVAL: return "EINVAL";
	case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
	case EINPROGRESS: return "EINPROGRESS";
	case ESOCKTNOSUPPORT: return "ESOCKTNOSUPPORT";
	case EADDRINUSE: return "EADDRINUSE";
	default: return "E?";
	}
}

static int flags_of(const char *m)
{
	if (!strcmp(m, "r")) return O_RDONLY;
	if (!strcmp(m, "w")) return O_WRONLY;
	if (!strcmp(m, "rw")) return O_RDWR;
	if (!strcmp(m, "a")) return O_WRONLY | O_APPEND;
	if (!strcmp(m, "t")) return O_RDONLY | O_TRUNC;
	if (!strcmp(m, "c")) return O_WRONLY | O_CREAT;
	return -1;
}

static int do_open(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC, 0644);

	if (fd < 0) {
		printf("%s\n", errname(errno));
		return 1;
	}
	close(fd);
	printf("ok\n");
	return 0;
}

static int result(int r)
{
	if (r < 0) {
		printf("%s\n", errname(errno));
		return 1;
	}
	printf("ok\n");
	return 0;
}

/* Fill a sockaddr for ADDR PORT; returns the family or -1. */
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

static int net_op(int argc, char **argv)
{
	struct sockaddr_storage ss;
	socklen_t len;
	const char *op = argv[1];
	int family, fd, type = SOCK_STREAM;
	char msg[] = "x";

	if (!strcmp(op, "socket"))
		return result(socket(atoi(argv[2]), atoi(argv[3]), atoi(argv[4])));
	family = mkaddr(argv[2], argv[3], &ss, &len);
	if (family < 0)
		return 2;
	if (!strcmp(op, "recvfd-connect")) {
		char buf[1], cbuf[CMSG_SPACE(sizeof(int))];
		struct iovec iov = {.iov_base = buf, .iov_len = 1};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
		struct cmsghdr *c;

		if (recvmsg(0, &mh, 0) < 0 || !(c = CMSG_FIRSTHDR(&mh)) || c->cmsg_type != SCM_RIGHTS)
			return 2;
		memcpy(&fd, CMSG_DATA(c), sizeof(fd));
		return result(connect(fd, (struct sockaddr *)&ss, len));
	}
	if (!strcmp(op, "sendto") || !strcmp(op, "sendmmsg") || (argc > 4 && !strcmp(argv[4], "udp")))
		type = SOCK_DGRAM;
	fd = socket(family, type, 0);
	if (fd < 0)
		return result(-1);
	if (family == AF_INET6 && argc > 5) {
		int on = !strcmp(argv[5], "v6only");
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
	}
	if (!strcmp(op, "connect"))
		return result(connect(fd, (struct sockaddr *)&ss, len));
	if (!strcmp(op, "bind"))
		return result(bind(fd, (struct sockaddr *)&ss, len));
	if (!strcmp(op, "sendto"))
		return result((int)sendto(fd, msg, 1, 0, (struct sockaddr *)&ss, len));
	if (!strcmp(op, "fastopen")) {
		ssize_t n = sendto(fd, msg, 1, MSG_FASTOPEN, (struct sockaddr *)&ss, len);
		/* without a cookie the kernel falls back to a normal connect: EINPROGRESS-free, returns 1 or an error */
		return result(n < 0 ? -1 : 0);
	}
	if (!strcmp(op, "sendmmsg")) {
		struct iovec iov = {.iov_base = msg, .iov_len = 1};
		struct mmsghdr mm[2];
		for (int i = 0; i < 2; i++) {
			memset(&mm[i], 0, sizeof(mm[i]));
			mm[i].msg_hdr.msg_name = &ss;
			mm[i].msg_hdr.msg_namelen = len;
			mm[i].msg_hdr.msg_iov = &iov;
			mm[i].msg_hdr.msg_iovlen = 1;
		}
		return result(sendmmsg(fd, mm, 2, 0) < 0 ? -1 : 0);
	}
	return 2;
}

static int dispatch(int argc, char **argv);

/* Commands from stdin, one result line each, so a test can interleave outside actions. */
static int repl(void)
{
	char line[4200], path[4096], mode[8];

	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		char addr[64], port[16], proto[8];
		int f;

		if (sscanf(line, "connect %63s %15s %7s", addr, port, proto) == 3) {
			char *av[] = {"tprobe", "connect", addr, port, proto, NULL};

			if (net_op(5, av) == 2)
				printf("usage\n");
			continue;
		}
		if (sscanf(line, "open %4095s %7s", path, mode) != 2 || (f = flags_of(mode)) < 0) {
			printf("usage\n");
			continue;
		}
		do_open(path, f);
	}
	return 0;
}

/* As many opens as it can, for a while: catches windows a request/answer loop would miss. */
static bool stdin_closed(void)
{
	struct pollfd p = {.fd = 0, .events = POLLIN};
	char c;

	return poll(&p, 1, 0) > 0 && read(0, &c, 1) <= 0;
}

static int spin(int seconds, int n, char **paths)
{
	long ok[8] = {0}, denied[8] = {0};
	time_t end;

	if (n > 8)
		return 2;
	printf("ready %d\n", (int)getpid());
	end = time(NULL) + seconds;
	/* SECONDS 0: until stdin closes (the test says when it has seen what it waits for) */
	while (seconds ? time(NULL) < end : !stdin_closed())
		for (int k = 0; k < 1000; k++)
			for (int i = 0; i < n; i++) {
				int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
				if (fd >= 0) {
					ok[i]++;
					close(fd);
				} else {
					denied[i]++;
				}
			}
	for (int i = 0; i < n; i++)
		printf("%s ok %ld denied %ld\n", paths[i], ok[i], denied[i]);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 2 && !strcmp(argv[1], "repl"))
		return repl();
	if (argc >= 4 && !strcmp(argv[1], "spin"))
		return spin(atoi(argv[2]), argc - 3, argv + 3);
	/* tprobe wait OP...: print "ready PID", read a line, do OP, then block until stdin closes */
	if (argc >= 3 && !strcmp(argv[1], "wait")) {
		char line[64];
		int r;

		printf("ready %d\n", (int)getpid());
		if (!fgets(line, sizeof(line), stdin))
			return 2;
		r = dispatch(argc - 1, argv + 1);
		while (fgets(line, sizeof(line), stdin))
			;
		return r;
	}
	return dispatch(argc, argv);
}

static int dispatch(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "open")) {
		int f = flags_of(argv[3]);
		return f < 0 ? 2 : do_open(argv[2], f);
	}
	if (argc >= 4 && !strcmp(argv[1], "wait-open")) {
		char line[64];
		int f = flags_of(argv[3]), r;

		if (f < 0)
			return 2;
		printf("ready %d\n", (int)getpid());
		if (!fgets(line, sizeof(line), stdin))
			return 2;
		r = do_open(argv[2], f);
		while (fgets(line, sizeof(line), stdin))
			;
		return r;
	}
	if (argc >= 3 && !strcmp(argv[1], "exec")) {
		execv(argv[2], argv + 2);
		printf("%s\n", errname(errno));
		return 1;
	}
	if ((argc >= 4 && (!strcmp(argv[1], "connect") || !strcmp(argv[1], "sendto") || !strcmp(argv[1], "sendmmsg") ||
			   !strcmp(argv[1], "fastopen") || !strcmp(argv[1], "bind") || !strcmp(argv[1], "recvfd-connect"))) ||
	    (argc >= 5 && !strcmp(argv[1], "socket")))
		return net_op(argc, argv);
	fprintf(stderr, "usage: tprobe open|wait-open PATH MODE | exec PATH [ARG...] | connect|sendto|sendmmsg|fastopen|bind ADDR PORT | socket D T P\n");
	return 2;
}
