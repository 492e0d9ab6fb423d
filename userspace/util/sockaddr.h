/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Socket addresses written as text: "ADDR:PORT", "[V6]:PORT", and where a
 * default port is given also "ADDR", "[V6]" and a bare IPv6 address. The one
 * parser behind `daemon --upstream`, resolv.conf nameservers and
 * `daemon --metrics-listen`; what a port means (53 for DNS, the resolver's
 * own port refused) is the caller's business.
 */
#ifndef CUSTODE_UTIL_SOCKADDR_H
#define CUSTODE_UTIL_SOCKADDR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Room for the longest custode_sockaddr_format() text ("[v6]:65535"). */
#define CUSTODE_SOCKADDR_LEN 56

/*
 * Parse s (numeric IPv4 or IPv6 only: no names, no scope ids) into *out and
 * *len. Port 1..65535 in decimal; default_port 0 means the port must be
 * given. 0, or -EINVAL with the outputs untouched.
 */
int custode_sockaddr_parse(const char *s, uint16_t default_port, struct sockaddr_storage *out, socklen_t *len);
/* The port of an AF_INET or AF_INET6 address, host order (0 for another family). */
uint16_t custode_sockaddr_port(const struct sockaddr_storage *sa);
/* "1.2.3.4:53" or "[2001:db8::1]:53" into buf. Returns buf. */
const char *custode_sockaddr_format(const struct sockaddr_storage *sa, char *buf, size_t len);

#endif
