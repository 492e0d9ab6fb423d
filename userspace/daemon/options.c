// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "bundle/bundle.h"
#include "custode/resolver.h"
#include "daemon/control.h"
#include "daemon/daemon.h"
#include "daemon/options.h"
#include "dns/wire.h"
#include "util/fsutil.h"
#include "util/sockaddr.h"
#include "util/usage.h"

void custode_daemon_usage(FILE *f)
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
		"could not be set up: the reason code is on stderr); 2 usage (daemon.usage:\n"
		"every flag is checked before anything is opened: addresses parsed, --events-file\n"
		"opened, a file made and removed next to --events-file and --metrics-file,\n"
		"--bundles read, the --trust keys loaded, --bundle-state created).\n",
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

/* A daemon usage error: -EINVAL with *why (daemon.usage). */
#define BAD(why, ...) custode_refuse(why, EINVAL, CUSTODE_REASON_DAEMON_USAGE, __VA_ARGS__)

static int parse_u32(const char *opt, const char *s, uint32_t min, uint32_t max, uint32_t *out,
		     struct custode_refusal *why)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || s[0] < '0' || s[0] > '9' || v < min || v > max)
		return BAD(why, "%s: '%s' must be a number in %u..%u", opt, s, min, max);
	*out = (uint32_t)v;
	return 0;
}

/* An option taking one of two words: *second says whether s is the second. */
static int parse_either(const char *opt, const char *s, const char *first, const char *second, bool *is_second,
			struct custode_refusal *why)
{
	if (strcmp(s, first) && strcmp(s, second))
		return BAD(why, "%s %s: %s or %s", opt, s, first, second);
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

/* The resolver's options (and --no-resolver): 0, -EINVAL (*why), or 1 when c is none of them. */
static int parse_resolver_opt(struct daemon_opts *o, int c, const char *arg, struct custode_refusal *why)
{
	struct custode_resolver_config *cfg = &o->cfg;
	uint32_t ms = 0;
	bool nxdomain = false;
	int err;

	switch (c) {
	case 'u':
		if (cfg->n_upstream == CUSTODE_RESOLVER_MAX_UPSTREAMS)
			return BAD(why, "at most %d --upstream", CUSTODE_RESOLVER_MAX_UPSTREAMS);
		if (custode_daemon_parse_upstream(arg, &cfg->upstream[cfg->n_upstream],
						  &cfg->upstream_len[cfg->n_upstream]) < 0)
			return BAD(why, "--upstream %s: expected ADDR[:PORT] or [IPV6]:PORT", arg);
		cfg->n_upstream++;
		return 0;
	case 'm':
		return parse_u32("--ttl-min", arg, 0, 86400, &cfg->ttl_min, why);
	case 'M':
		return parse_u32("--ttl-max", arg, 1, 7 * 86400, &cfg->ttl_max, why);
	case 'g':
		return parse_u32("--pin-grace", arg, 0, 3600, &cfg->grace, why);
	case 'q':
		return parse_u32("--pin-quota", arg, 1, CUSTODE_MAX_PINS, &cfg->pin_quota, why);
	case 'd':
		if ((err = parse_either("--deny", arg, "refused", "nxdomain", &nxdomain, why)))
			return err;
		cfg->deny_rcode = nxdomain ? CUSTODE_DNS_NXDOMAIN : CUSTODE_DNS_REFUSED;
		return 0;
	case 'c':
		return parse_either("--cname-targets", arg, "trusted", "granted", &cfg->cname_strict, why);
	case 't':
		if ((err = parse_u32("--upstream-timeout", arg, 50, 30000, &ms, why)))
			return err;
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
	return 1;
}

/* The stream's and the metrics' options: 0, -EINVAL (*why), or 1 when c is none of them. */
static int parse_stream_opt(struct daemon_opts *o, int c, const char *arg, struct custode_refusal *why)
{
	uint32_t v32 = 0;
	int err;

	switch (c) {
	case 'o':
		if (strcmp(arg, "json") && strcmp(arg, "text") && strcmp(arg, "none"))
			return BAD(why, "--stream %s: json, text or none", arg);
		o->so.stdout_format = arg;
		return 0;
	case 'f':
		o->so.file = arg;
		return 0;
	case 'x':
		if (parse_size(arg, &o->so.file_max_bytes) < 0)
			return BAD(why, "--events-file-max %s: a size of at least 4096 bytes (K, M, G)", arg);
		return 0;
	case 'k':
		if ((err = parse_u32("--events-file-keep", arg, 0, 1000, &v32, why)))
			return err;
		o->so.file_keep = v32;
		return 0;
	case 'H':
		if ((err = parse_u32("--history", arg, 0, 1000000, &v32, why)))
			return err;
		o->so.history = v32;
		return 0;
	case 'r': {
		unsigned burst, secs;
		char extra;

		if (sscanf(arg, "%u/%u%c", &burst, &secs, &extra) != 2 || !burst || !secs || secs > 3600 ||
		    burst > 1000000)
			return BAD(why, "--throttle %s: BURST/SECONDS (1..1000000 / 1..3600), e.g. 100/10", arg);
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
	return 1;
}

/* The bundles' options: 0, -EINVAL (*why), or 1 when c is none of them. */
static int parse_bundle_opt(struct daemon_opts *o, int c, const char *arg, struct custode_refusal *why)
{
	switch (c) {
	case 'B':
		o->bundles_dir = arg;
		return 0;
	case 'T':
		if (o->n_trust == sizeof(o->trust_files) / sizeof(o->trust_files[0]))
			return BAD(why, "at most %zu --trust", sizeof(o->trust_files) / sizeof(o->trust_files[0]));
		o->trust_files[o->n_trust++] = arg;
		return 0;
	case 'N':
		return parse_u32("--threshold", arg, 1, 32, &o->threshold, why);
	case 'S':
		o->bundle_state = arg;
		return 0;
	}
	return 1;
}

/* The flags into *o, each value checked alone: 0, 1 for --help, or -EINVAL (*why). */
static int parse_flags(int argc, char **argv, struct daemon_opts *o, struct custode_refusal *why)
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

	custode_getopt_start();
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 'h')
			return 1;
		if (c == '?') {
			/* getopt's own words, GNU style: no reason code of ours */
			custode_usage_bad_option_text(argv, why->detail, sizeof(why->detail));
			why->reason = CUSTODE_REASON_NONE;
			return -EINVAL;
		}
		if ((r = parse_resolver_opt(o, c, optarg, why)) > 0 && (r = parse_stream_opt(o, c, optarg, why)) > 0)
			r = parse_bundle_opt(o, c, optarg, why);
		if (r)
			return r < 0 ? r : BAD(why, "option -%c not handled", c);
	}
	if (optind < argc)
		return BAD(why, "unexpected argument '%s'", argv[optind]);
	return 0;
}

/* What the flags say together. */
static int check_combination(const struct daemon_opts *o, struct custode_refusal *why)
{
	if (o->cfg.ttl_min > o->cfg.ttl_max)
		return BAD(why, "--ttl-min %u is above --ttl-max %u", o->cfg.ttl_min, o->cfg.ttl_max);
	if (!!o->bundles_dir != !!o->n_trust)
		return BAD(why, "--bundles needs --trust KEY (and --trust needs --bundles)");
	if (o->no_resolver && o->cfg.n_upstream)
		return BAD(why, "--no-resolver and --upstream exclude each other");
	return 0;
}

/*
 * The daemon can write files next to path: a temporary file made and removed
 * there, as the atomic textfile write and the events file's rotation do.
 */
static int check_dir_writable(const char *opt, const char *path, struct custode_refusal *why)
{
	char tmp[PATH_MAX];
	int fd;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= (int)sizeof(tmp))
		return BAD(why, "%s %s: %s", opt, path, strerror(ENAMETOOLONG));
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return BAD(why, "%s %s: %s", opt, path, strerror(errno));
	close(fd);
	unlink(tmp);
	return 0;
}

/* --events-file: opened (created) as the stream opens it, and its directory writable for rotation. */
static int check_events_file(const char *path, struct custode_refusal *why)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);

	if (fd < 0)
		return BAD(why, "--events-file %s: %s", path, strerror(errno));
	close(fd);
	return check_dir_writable("--events-file", path, why);
}

/* --metrics-file: rewritten atomically, so a regular file (or none yet) in a writable directory. */
static int check_metrics_file(const char *path, struct custode_refusal *why)
{
	struct stat st;

	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return BAD(why, "--metrics-file %s: not a regular file", path);
	return check_dir_writable("--metrics-file", path, why);
}

/* --bundles DIR readable, the --trust keys readable and valid, the version floors' directory writable. */
static int check_bundles(const struct daemon_opts *o, struct custode_refusal *why)
{
	const char *state = o->bundle_state ? o->bundle_state : CUSTODE_BUNDLE_STATE_DIR;
	struct custode_refusal kw = {0};
	struct custode_trust *trust = NULL;
	DIR *d = opendir(o->bundles_dir);
	int err;

	if (!d)
		return BAD(why, "--bundles %s: %s", o->bundles_dir, strerror(errno));
	closedir(d);
	for (size_t i = 0; i < o->n_trust; i++)
		if (access(o->trust_files[i], R_OK) < 0)
			return BAD(why, "--trust %s: %s", o->trust_files[i], strerror(errno));
	err = custode_daemon_trust_load(o, &trust, &kw);
	custode_trust_free(trust);
	if (err)
		return BAD(why, "--trust: %s: %s", custode_reason_name(kw.reason), kw.detail);
	if (custode_mkdir_p(state, 0700) < 0 || access(state, W_OK | X_OK) < 0)
		return BAD(why, "--bundle-state %s: %s", state, strerror(errno));
	return 0;
}

/* Every value that names something outside the process: addresses, files, directories, keys. */
static int check_destinations(const struct daemon_opts *o, struct custode_refusal *why)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int err;

	if (o->svc.metrics_listen && custode_sockaddr_parse(o->svc.metrics_listen, 0, &ss, &len) < 0)
		return BAD(why,
			   "--metrics-listen %s: needs ADDR:PORT, a numeric IPv4 or [IPv6] address and a port 1-65535 "
			   "(e.g. 127.0.0.1:9464)",
			   o->svc.metrics_listen);
	if (o->svc.metrics_file && (err = check_metrics_file(o->svc.metrics_file, why)))
		return err;
	if (o->so.file && (err = check_events_file(o->so.file, why)))
		return err;
	if (o->bundles_dir && (err = check_bundles(o, why)))
		return err;
	return 0;
}

int custode_daemon_options(int argc, char **argv, struct daemon_opts *o, struct custode_refusal *why)
{
	int err;

	memset(o, 0, sizeof(*o));
	custode_resolver_defaults(&o->cfg);
	o->threshold = 1;
	o->so.history = 10000;
	o->so.file_keep = 5;
	if ((err = parse_flags(argc, argv, o, why)) || (err = check_combination(o, why)))
		return err;
	return check_destinations(o, why);
}

int custode_daemon_trust_load(const struct daemon_opts *o, struct custode_trust **trust, struct custode_refusal *why)
{
	int err = custode_trust_new(trust);

	for (size_t i = 0; !err && i < o->n_trust; i++)
		err = custode_trust_add_file(*trust, o->trust_files[i], why) < 0 ? -1 : 0;
	if (!err)
		err = custode_trust_set_threshold(*trust, o->threshold, why);
	return err;
}

int custode_daemon_default_upstreams(struct daemon_opts *o, const char *resolv_conf, struct custode_refusal *why)
{
	struct custode_resolver_config *cfg = &o->cfg;
	char *text = NULL;

	if (o->no_resolver || cfg->n_upstream)
		return 0;
	if (custode_read_file(resolv_conf, 1 << 20, &text, NULL) == 0)
		cfg->n_upstream = custode_daemon_resolv_conf(text, cfg->upstream, cfg->upstream_len,
							     CUSTODE_RESOLVER_MAX_UPSTREAMS);
	free(text);
	if (!cfg->n_upstream)
		return custode_refuse(why, ENOENT, CUSTODE_REASON_DNS_UPSTREAM,
				      "no nameserver in %s; give --upstream ADDR[:PORT] (or --no-resolver)",
				      resolv_conf);
	return 0;
}
