// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "util/exit.h"
#include "custode/resolver.h"
#include "daemon/control.h"
#include "daemon/daemon.h"
#include "daemon/options.h"
#include "dns/wire.h"
#include "util/fsutil.h"
#include "util/sockaddr.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: custode daemon [--no-resolver | --upstream ADDR[:PORT]]... [resolver options]\n"
		"                      [--bundles DIR --trust KEY...] [--stream json|text|none]\n"
		"                      [--events-file PATH [--events-file-max BYTES] [--events-file-keep N]]\n"
		"                      [--history N] [--throttle BURST/SECONDS | --no-throttle]\n"
		"                      [--metrics-listen ADDR:PORT] [--metrics-file PATH]\n"
		"\n"
		"Run the host's custode daemon in the foreground (one per host; docs/operations.md).\n"
		"It adopts the pinned engine and every run it holds (reaping runs whose cgroup is\n"
		"gone, reporting attached runs whose policy no longer verifies), consumes the\n"
		"engine's denial records (stdout, --events-file, `custode events`), serves the\n"
		"control socket " CUSTODE_CONTROL_SOCKET " (root only: `custode attach`,\n"
		"`detach`, `runs`), metrics, the resolver and bundle watching. Killing it leaves\n"
		"every run confined; the next start takes them over.\n"
		"\n"
		"Stream and metrics:\n"
		"  --stream json|text|none  stdout: one JSON record per line (default), one\n"
		"                          human line, or nothing. Never blocks: a slow reader\n"
		"                          loses lines, counted (custode_stream_sink_dropped_total)\n"
		"  --events-file PATH      also append JSON records to PATH, rotated past\n"
		"  --events-file-max BYTES   (default 64M; K, M, G suffixes) into PATH.1 ...\n"
		"  --events-file-keep N      PATH.N (default 5)\n"
		"  --history N             records kept for `custode events` (default 10000)\n"
		"  --throttle BURST/SECONDS  in-kernel throttling: at most BURST records per run\n"
		"                          and reason per SECONDS (default 100/10), then one\n"
		"                          throttle record per window; counters stay exact\n"
		"  --no-throttle           record every denial\n"
		"  --metrics-listen ADDR:PORT  Prometheus text on http://ADDR:PORT/metrics\n"
		"  --metrics-file PATH     and/or rewritten every 15 s (node_exporter textfile)\n"
		"\n"
		"Resolver (docs/resolver.md):\n"
		"  --no-resolver           don't run it (runs with host entries are then refused)\n"
		"  --upstream ADDR[:PORT]  upstream resolver (repeatable, at most %d; IPv6 as\n"
		"                          [ADDR]:PORT); default: the nameservers of /etc/resolv.conf\n"
		"  --ttl-min SEC           pins live at least this long (default 30) ...\n"
		"  --ttl-max SEC           ... and at most this long (default 3600) ...\n"
		"  --pin-grace SEC         ... plus this grace (default 30); the TTL a run is told\n"
		"                          never exceeds what the pin has left\n"
		"  --pin-quota N           pins per run (default 4096); a full quota fails that\n"
		"                          run's lookups closed (dns.pins_full)\n"
		"  --deny refused|nxdomain how denied names are answered (default refused)\n"
		"  --cname-targets trusted|granted\n"
		"                          trusted (default): a CNAME chain from a granted name is\n"
		"                          followed; granted: every target must be granted too\n"
		"  --upstream-timeout MS   per upstream attempt (default 2000; 5000 per query)\n"
		"  --verbose               log every decision, answers included\n"
		"\n"
		"Bundles:\n"
		"  --bundles DIR           watch DIR for signed policy bundles and apply each new\n"
		"                          version to the live runs started from that policy's\n"
		"                          bundle, atomically (docs/bundles.md); with --trust.\n"
		"                          `custode attach --policy NAME` takes policies from DIR\n"
		"  --trust KEY             a trusted public key (repeatable)\n"
		"  --threshold N           signatures by N distinct trusted keys (default 1)\n"
		"  --bundle-state DIR      version floors (default /var/lib/custode/bundles)\n"
		"  --help                  this text\n"
		"\n"
		"Readiness: \"custode daemon: ready\" on stderr, and READY=1 to $NOTIFY_SOCKET\n"
		"(systemd Type=notify). Exit: 0 stopped by SIGINT/SIGTERM; 1 a fatal error\n"
		"(the event loop failed, or the resolver found the engine replaced under it);\n"
		"125 refused (daemon.running, privilege.required, the engine or a listener\n"
		"could not be set up: the reason code is on stderr); 2 usage.\n",
		CUSTODE_RESOLVER_MAX_UPSTREAMS);
}

int custode_daemon_parse_upstream(const char *s, struct sockaddr_storage *out, socklen_t *len)
{
	struct sockaddr_storage ss;
	socklen_t l;

	if (custode_sockaddr_parse(s, 53, &ss, &l) < 0)
		return -EINVAL;
	/* the resolver's own port on loopback would ask itself */
	if (custode_sockaddr_port(&ss) == CUSTODE_RESOLVER_PORT &&
	    ((ss.ss_family == AF_INET && (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127) ||
	     (ss.ss_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&ss)->sin6_addr))))
		return -EINVAL;
	*out = ss;
	*len = l;
	return 0;
}

size_t custode_daemon_resolv_conf(const char *text, struct sockaddr_storage *out, socklen_t *lens, size_t max)
{
	size_t n = 0;
	const char *line = text;

	while (line && *line && n < max) {
		const char *eol = strchr(line, '\n');
		size_t l = eol ? (size_t)(eol - line) : strlen(line);
		char buf[256], word[64], addr[128];

		if (l < sizeof(buf)) {
			memcpy(buf, line, l);
			buf[l] = 0;
			if (sscanf(buf, " %63s %127s", word, addr) == 2 && !strcmp(word, "nameserver")) {
				char *pct = strchr(addr, '%'); /* fe80::1%eth0: scope ids are not kept */
				if (pct)
					*pct = 0;
				if (!strchr(addr, ':') || inet_pton(AF_INET6, addr, &(struct in6_addr){0}) != 1) {
					if (custode_daemon_parse_upstream(addr, &out[n], &lens[n]) == 0)
						n++;
				} else {
					char br[140];
					snprintf(br, sizeof(br), "[%s]", addr);
					if (custode_daemon_parse_upstream(br, &out[n], &lens[n]) == 0)
						n++;
				}
			}
		}
		line = eol ? eol + 1 : NULL;
	}
	return n;
}

static int parse_u32(const char *opt, const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || s[0] < '0' || s[0] > '9' || v < min || v > max) {
		fprintf(stderr, "custode: daemon: %s: '%s' must be a number in %u..%u\n", opt, s, min, max);
		return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

/* An option taking one of two words: *second says whether s is the second. */
static int parse_either(const char *opt, const char *s, const char *first, const char *second, bool *is_second)
{
	if (strcmp(s, first) && strcmp(s, second)) {
		fprintf(stderr, "custode: daemon: %s: %s or %s\n", opt, first, second);
		return -1;
	}
	*is_second = !strcmp(s, second);
	return 0;
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-')
		return -1;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	else if (*end == 'G' || *end == 'g')
		v <<= 30, end++;
	if (*end || v < 4096)
		return -1;
	*out = v;
	return 0;
}

/* The resolver's options (and --no-resolver): 0, EXIT_USAGE (said on stderr), or -1 when c is none of them. */
static int parse_resolver_opt(struct daemon_opts *o, int c, const char *arg)
{
	struct custode_resolver_config *cfg = &o->cfg;
	uint32_t ms;

	switch (c) {
	case 'u':
		if (cfg->n_upstream == CUSTODE_RESOLVER_MAX_UPSTREAMS) {
			fprintf(stderr, "custode: daemon: at most %d --upstream\n", CUSTODE_RESOLVER_MAX_UPSTREAMS);
			return EXIT_USAGE;
		}
		if (custode_daemon_parse_upstream(arg, &cfg->upstream[cfg->n_upstream],
						  &cfg->upstream_len[cfg->n_upstream]) < 0) {
			fprintf(stderr, "custode: daemon: --upstream %s: expected ADDR[:PORT] or [IPV6]:PORT\n", arg);
			return EXIT_USAGE;
		}
		cfg->n_upstream++;
		return 0;
	case 'm':
		return parse_u32("--ttl-min", arg, 0, 86400, &cfg->ttl_min) ? EXIT_USAGE : 0;
	case 'M':
		return parse_u32("--ttl-max", arg, 1, 7 * 86400, &cfg->ttl_max) ? EXIT_USAGE : 0;
	case 'g':
		return parse_u32("--pin-grace", arg, 0, 3600, &cfg->grace) ? EXIT_USAGE : 0;
	case 'q':
		return parse_u32("--pin-quota", arg, 1, CUSTODE_MAX_PINS, &cfg->pin_quota) ? EXIT_USAGE : 0;
	case 'd': {
		bool nxdomain;

		if (parse_either("--deny", arg, "refused", "nxdomain", &nxdomain))
			return EXIT_USAGE;
		cfg->deny_rcode = nxdomain ? CUSTODE_DNS_NXDOMAIN : CUSTODE_DNS_REFUSED;
		return 0;
	}
	case 'c':
		return parse_either("--cname-targets", arg, "trusted", "granted", &cfg->cname_strict) ? EXIT_USAGE : 0;
	case 't':
		if (parse_u32("--upstream-timeout", arg, 50, 30000, &ms))
			return EXIT_USAGE;
		cfg->attempt_ms = ms;
		cfg->total_ms = ms * 5 / 2 > 5000 ? ms * 5 / 2 : 5000;
		if (cfg->total_ms < ms)
			cfg->total_ms = ms;
		return 0;
	case 'v':
		o->verbose = true;
		return 0;
	case 'R':
		o->no_resolver = true;
		return 0;
	}
	return -1;
}

/* The stream's and the metrics' options: 0, EXIT_USAGE (said on stderr), or -1 when c is none of them. */
static int parse_stream_opt(struct daemon_opts *o, int c, const char *arg)
{
	uint32_t v32;

	switch (c) {
	case 'o':
		if (strcmp(arg, "json") && strcmp(arg, "text") && strcmp(arg, "none")) {
			fprintf(stderr, "custode: daemon: --stream: json, text or none\n");
			return EXIT_USAGE;
		}
		o->so.stdout_format = arg;
		return 0;
	case 'f':
		o->so.file = arg;
		return 0;
	case 'x':
		if (parse_size(arg, &o->so.file_max_bytes) < 0) {
			fprintf(stderr, "custode: daemon: --events-file-max: a size of at least 4096 bytes (K, M, G)\n");
			return EXIT_USAGE;
		}
		return 0;
	case 'k':
		if (parse_u32("--events-file-keep", arg, 0, 1000, &v32))
			return EXIT_USAGE;
		o->so.file_keep = v32;
		return 0;
	case 'H':
		if (parse_u32("--history", arg, 0, 1000000, &v32))
			return EXIT_USAGE;
		o->so.history = v32;
		return 0;
	case 'r': {
		unsigned burst, secs;
		char extra;

		if (sscanf(arg, "%u/%u%c", &burst, &secs, &extra) != 2 || !burst || !secs || secs > 3600 ||
		    burst > 1000000) {
			fprintf(stderr, "custode: daemon: --throttle: BURST/SECONDS, e.g. 100/10\n");
			return EXIT_USAGE;
		}
		o->so.throttle_burst = burst;
		o->so.throttle_window_ms = secs * 1000ull;
		return 0;
	}
	case 'n':
		o->so.no_throttle = true;
		return 0;
	case 'l':
		o->svc.metrics_listen = arg;
		return 0;
	case 'F':
		o->svc.metrics_file = arg;
		return 0;
	}
	return -1;
}

/* The bundles' options: 0, EXIT_USAGE (said on stderr), or -1 when c is none of them. */
static int parse_bundle_opt(struct daemon_opts *o, int c, const char *arg)
{
	switch (c) {
	case 'B':
		o->bundles_dir = arg;
		return 0;
	case 'T':
		if (o->n_trust == 32) {
			fprintf(stderr, "custode: daemon: at most 32 --trust\n");
			return EXIT_USAGE;
		}
		o->trust_files[o->n_trust++] = arg;
		return 0;
	case 'N':
		return parse_u32("--threshold", arg, 1, 32, &o->threshold) ? EXIT_USAGE : 0;
	case 'S':
		o->bundle_state = arg;
		return 0;
	}
	return -1;
}

bool custode_daemon_parse_options(int argc, char **argv, struct daemon_opts *o, int *code)
{
	static const struct option opts[] = {{"upstream", required_argument, NULL, 'u'},
					     {"ttl-min", required_argument, NULL, 'm'},
					     {"ttl-max", required_argument, NULL, 'M'},
					     {"pin-grace", required_argument, NULL, 'g'},
					     {"pin-quota", required_argument, NULL, 'q'},
					     {"deny", required_argument, NULL, 'd'},
					     {"cname-targets", required_argument, NULL, 'c'},
					     {"upstream-timeout", required_argument, NULL, 't'},
					     {"verbose", no_argument, NULL, 'v'},
					     {"bundles", required_argument, NULL, 'B'},
					     {"trust", required_argument, NULL, 'T'},
					     {"threshold", required_argument, NULL, 'N'},
					     {"bundle-state", required_argument, NULL, 'S'},
					     {"no-resolver", no_argument, NULL, 'R'},
					     {"stream", required_argument, NULL, 'o'},
					     {"events-file", required_argument, NULL, 'f'},
					     {"events-file-max", required_argument, NULL, 'x'},
					     {"events-file-keep", required_argument, NULL, 'k'},
					     {"history", required_argument, NULL, 'H'},
					     {"throttle", required_argument, NULL, 'r'},
					     {"no-throttle", no_argument, NULL, 'n'},
					     {"metrics-listen", required_argument, NULL, 'l'},
					     {"metrics-file", required_argument, NULL, 'F'},
					     {"help", no_argument, NULL, 'h'},
					     {0}};
	int c, r;

	custode_resolver_defaults(&o->cfg);
	o->threshold = 1;
	o->so.history = 10000;
	o->so.file_keep = 5;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			*code = 0;
			return true;
		}
		if ((r = parse_resolver_opt(o, c, optarg)) < 0 && (r = parse_stream_opt(o, c, optarg)) < 0 &&
		    (r = parse_bundle_opt(o, c, optarg)) < 0) {
			usage(stderr);
			r = EXIT_USAGE;
		}
		if (r) {
			*code = r;
			return true;
		}
	}
	return false;
}

int custode_daemon_check_options(int argc, char **argv, struct daemon_opts *o)
{
	struct custode_resolver_config *cfg = &o->cfg;

	if (optind < argc) {
		fprintf(stderr, "custode: daemon: unexpected argument '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}
	if (cfg->ttl_min > cfg->ttl_max) {
		fprintf(stderr, "custode: daemon: --ttl-min is above --ttl-max\n");
		return EXIT_USAGE;
	}
	if (!!o->bundles_dir != !!o->n_trust) {
		fprintf(stderr, "custode: daemon: --bundles needs --trust KEY (and --trust needs --bundles)\n");
		return EXIT_USAGE;
	}
	if (o->no_resolver && cfg->n_upstream) {
		fprintf(stderr, "custode: daemon: --no-resolver and --upstream exclude each other\n");
		return EXIT_USAGE;
	}
	if (!o->no_resolver && !cfg->n_upstream) {
		char *text = NULL;

		if (custode_read_file("/etc/resolv.conf", 1 << 20, &text, NULL) == 0)
			cfg->n_upstream = custode_daemon_resolv_conf(text, cfg->upstream, cfg->upstream_len,
								     CUSTODE_RESOLVER_MAX_UPSTREAMS);
		free(text);
		if (!cfg->n_upstream) {
			fprintf(stderr, "custode: daemon: refused: dns.upstream: no nameserver in /etc/resolv.conf; "
					"give --upstream ADDR[:PORT] (or --no-resolver)\n");
			return EXIT_REFUSED;
		}
	}
	return 0;
}
