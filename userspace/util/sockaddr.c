// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "util/sockaddr.h"

/* Copy the n bytes at s into host (NUL-terminated), refusing what cannot be an address. */
static int take_host(char *host, size_t size, const char *s, size_t n)
{
	if (n >= size)
		return -EINVAL;
	memcpy(host, s, n);
	host[n] = 0;
	return 0;
}

int custode_sockaddr_parse(const char *s, uint16_t default_port, struct sockaddr_storage *out, socklen_t *len)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *port_s = NULL, *colon;
	struct sockaddr_storage ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	long port = default_port;

	if (!s)
		return -EINVAL;
	memset(&ss, 0, sizeof(ss));
	colon = strchr(s, ':');
	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || (close[1] && close[1] != ':') || take_host(host, sizeof(host), s + 1, (size_t)(close - s - 1)))
			return -EINVAL;
		if (close[1])
			port_s = close + 2;
	} else if (colon && colon == strrchr(s, ':')) {
		if (take_host(host, sizeof(host), s, (size_t)(colon - s)))
			return -EINVAL;
		port_s = colon + 1;
	} else if (take_host(host, sizeof(host), s, strlen(s))) { /* "1.2.3.4" or a bare IPv6 address */
		return -EINVAL;
	}
	if (port_s) {
		char *end;

		if (*port_s < '0' || *port_s > '9')
			return -EINVAL;
		errno = 0;
		port = strtol(port_s, &end, 10);
		if (errno || *end || port < 1 || port > 65535)
			return -EINVAL;
	}
	if (port == 0)
		return -EINVAL; /* no default: the port is required */
	if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		*len = sizeof(*s4);
	} else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*s6);
	} else {
		return -EINVAL;
	}
	*out = ss;
	return 0;
}

uint16_t custode_sockaddr_port(const struct sockaddr_storage *sa)
{
	if (sa->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}

const char *custode_sockaddr_format(const struct sockaddr_storage *sa, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (sa->ss_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, custode_sockaddr_port(sa));
	} else {
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, custode_sockaddr_port(sa));
	}
	return buf;
}
