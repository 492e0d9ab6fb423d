// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <jansson.h>

#include "custode/resolver.h"
#include "daemon/daemon.h"
#include "daemon/bundles.h"
#include "dns/resolver.h"
#include "dns/wire.h"
#include "engine/engine.h"
#include "policy/net.h"
#include "run/runstate.h"
#include "util/fsutil.h"
#include "util/reasons.h"

#define EXIT_REFUSED 125

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: custode daemon [--upstream ADDR[:PORT]]... [--ttl-min SEC] [--ttl-max SEC]\n"
		"                      [--pin-grace SEC] [--pin-quota N] [--deny refused|nxdomain]\n"
		"                      [--cname-targets trusted|granted] [--upstream-timeout MS] [--verbose]\n"
		"\n"
		"Run the host's custode daemon in the foreground (one per host). It hosts the\n"
		"resolver: every DNS query of a run whose policy has a network section is\n"
		"redirected to it; it answers names the run's policy grants, resolves them\n"
		"upstream, drops special addresses, pins the rest for that run, then replies\n"
		"(docs/resolver.md). Without it, runs get no DNS and `custode run` refuses\n"
		"policies that name hosts (dns.no_resolver). Logs go to stderr; each resolver\n"
		"decision that denies or drops something is one line with a JSON object.\n"
		"\n"
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
		"  --bundles DIR           watch DIR for signed policy bundles and apply each new\n"
		"                          version to the live runs started from that policy's\n"
		"                          bundle, atomically (docs/bundles.md); with --trust\n"
		"  --trust KEY             a trusted public key (repeatable)\n"
		"  --threshold N           signatures by N distinct trusted keys (default 1)\n"
		"  --bundle-state DIR      version floors (default /var/lib/custode/bundles)\n"
		"  --help                  this text\n"
		"\n"
		"Exit: 0 stopped by SIGINT/SIGTERM; 125 refused (daemon.running, not root, no\n"
		"engine); 2 usage.\n",
		CUSTODE_RESOLVER_MAX_UPSTREAMS);
}

int custode_daemon_parse_upstream(const char *s, struct sockaddr_storage *out, socklen_t *len)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *port_s = NULL;
	struct sockaddr_in *s4 = (struct sockaddr_in *)out;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)out;
	long port = 53;
	size_t hl;

	memset(out, 0, sizeof(*out));
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || (close[1] && close[1] != ':'))
			return -EINVAL;
		hl = (size_t)(close - s - 1);
		if (hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, hl);
		host[hl] = 0;
		if (close[1])
			port_s = close + 2;
	} else if (strchr(s, ':') && strchr(s, ':') == strrchr(s, ':')) {
		const char *colon = strchr(s, ':');
		hl = (size_t)(colon - s);
		if (hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, s, hl);
		host[hl] = 0;
		port_s = colon + 1;
	} else {
		if (strlen(s) >= sizeof(host))
			return -EINVAL;
		snprintf(host, sizeof(host), "%s", s);
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
	/* the resolver's own port on loopback would ask itself */
	if (port == CUSTODE_RESOLVER_PORT &&
	    ((s4->sin_family == AF_INET && (ntohl(s4->sin_addr.s_addr) >> 24) == 127) ||
	     (s6->sin6_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr))))
		return -EINVAL;
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

static const char *sa_format(const struct sockaddr_storage *sa, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, ntohs(s4->sin_port));
	} else {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, ntohs(s6->sin6_port));
	}
	return buf;
}

struct logger {
	bool verbose;
};

static void log_decision(void *ctx, const struct custode_resolver_decision *d)
{
	struct logger *lg = ctx;
	char hex[17], when[32], a[64], *text;
	json_t *o, *addrs;
	struct timespec ts;
	struct tm tm;

	if (!lg->verbose && !d->reason && !d->dropped)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	custode_run_id_format(d->run_id, hex);
	addrs = json_array();
	for (size_t i = 0; i < d->n_addrs; i++)
		json_array_append_new(addrs, json_string(custode_addr_format(d->addrs[i], a, sizeof(a))));
	o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:s, s:o, s:I, s:I, s:I}", "time", when, "run_id", hex,
		      "name", d->name, "type", d->type, "proto", d->proto, "decision",
		      d->reason && d->reason != CUSTODE_REASON_DNS_ANSWER_PRIVATE ? "denied"
		      : d->dropped || d->reason                                ? "filtered"
									      : "answered",
		      "reason", d->reason ? custode_reason_name(d->reason) : "none", "enforced", d->enforced, "rcode",
		      d->rcode == 0   ? "NOERROR"
		      : d->rcode == 1 ? "FORMERR"
		      : d->rcode == 2 ? "SERVFAIL"
		      : d->rcode == 3 ? "NXDOMAIN"
		      : d->rcode == 4 ? "NOTIMP"
		      : d->rcode == 5 ? "REFUSED"
				      : "BADVERS",
		      "addrs", addrs, "dropped", (json_int_t)d->dropped, "pins", (json_int_t)d->pins, "ttl",
		      (json_int_t)d->ttl);
	if (!o)
		return;
	if (d->dropped && !d->reason)
		json_object_set_new(o, "dropped_reason", json_string(custode_reason_name(CUSTODE_REASON_DNS_ANSWER_PRIVATE)));
	if (d->detail)
		json_object_set_new(o, "detail", json_string(d->detail));
	text = json_dumps(o, JSON_COMPACT);
	if (text)
		fprintf(stderr, "custode daemon: resolver: %s\n", text);
	free(text);
	json_decref(o);
}

static void log_notice(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "custode daemon: resolver: %s\n", msg);
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

/* One daemon per host: the lock is held for the daemon's life; its pid is in the file. */
static int take_lock(struct custode_refusal *why)
{
	char pid[32] = "";
	int fd;

	if (custode_mkdir_p(CUSTODE_STATE_DIR, 0700) < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "mkdir %s: %s", CUSTODE_STATE_DIR,
				      strerror(errno));
	fd = open(CUSTODE_DAEMON_LOCK, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "%s: %s", CUSTODE_DAEMON_LOCK,
				      strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = 0;
		pid[strcspn(pid, "\n")] = 0;
		close(fd);
		return custode_refuse(why, EBUSY, CUSTODE_REASON_DAEMON_RUNNING, "another custode daemon%s%s is running",
				      pid[0] ? " (pid " : "", pid[0] ? strcat(pid, ")") : "");
	}
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, strlen(pid), 0) < 0) {
		/* informational only */
	}
	return fd;
}

int custode_cmd_daemon(int argc, char **argv)
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
					     {"help", no_argument, NULL, 'h'},
					     {0}};
	const char *bundles_dir = NULL, *bundle_state = NULL, *trust_files[32];
	size_t n_trust = 0;
	uint32_t threshold = 1;
	struct custode_bundle_watch *watch = NULL;
	static volatile int watch_stop;
	struct custode_resolver_config cfg;
	struct custode_refusal why = {0};
	struct custode_engine e;
	struct custode_resolver *r = NULL;
	struct logger lg = {0};
	struct custode_resolver_hooks hooks = {.decision = log_decision, .notice = log_notice, .ctx = &lg};
	struct sigaction sa;
	uint32_t ms;
	int c, lock = -1, err;
	char up[256] = "", one[80];

	custode_resolver_defaults(&cfg);
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'u':
			if (cfg.n_upstream == CUSTODE_RESOLVER_MAX_UPSTREAMS) {
				fprintf(stderr, "custode: daemon: at most %d --upstream\n", CUSTODE_RESOLVER_MAX_UPSTREAMS);
				return 2;
			}
			if (custode_daemon_parse_upstream(optarg, &cfg.upstream[cfg.n_upstream],
							  &cfg.upstream_len[cfg.n_upstream]) < 0) {
				fprintf(stderr, "custode: daemon: --upstream %s: expected ADDR[:PORT] or [IPV6]:PORT\n", optarg);
				return 2;
			}
			cfg.n_upstream++;
			break;
		case 'm':
			if (parse_u32("--ttl-min", optarg, 0, 86400, &cfg.ttl_min))
				return 2;
			break;
		case 'M':
			if (parse_u32("--ttl-max", optarg, 1, 7 * 86400, &cfg.ttl_max))
				return 2;
			break;
		case 'g':
			if (parse_u32("--pin-grace", optarg, 0, 3600, &cfg.grace))
				return 2;
			break;
		case 'q':
			if (parse_u32("--pin-quota", optarg, 1, CUSTODE_MAX_PINS, &cfg.pin_quota))
				return 2;
			break;
		case 'd':
			if (!strcmp(optarg, "refused"))
				cfg.deny_rcode = CUSTODE_DNS_REFUSED;
			else if (!strcmp(optarg, "nxdomain"))
				cfg.deny_rcode = CUSTODE_DNS_NXDOMAIN;
			else {
				fprintf(stderr, "custode: daemon: --deny: refused or nxdomain\n");
				return 2;
			}
			break;
		case 'c':
			if (!strcmp(optarg, "trusted"))
				cfg.cname_strict = false;
			else if (!strcmp(optarg, "granted"))
				cfg.cname_strict = true;
			else {
				fprintf(stderr, "custode: daemon: --cname-targets: trusted or granted\n");
				return 2;
			}
			break;
		case 't':
			if (parse_u32("--upstream-timeout", optarg, 50, 30000, &ms))
				return 2;
			cfg.attempt_ms = ms;
			cfg.total_ms = ms * 5 / 2 > 5000 ? ms * 5 / 2 : 5000;
			if (cfg.total_ms < ms)
				cfg.total_ms = ms;
			break;
		case 'B':
			bundles_dir = optarg;
			break;
		case 'T':
			if (n_trust == 32) {
				fprintf(stderr, "custode: daemon: at most 32 --trust\n");
				return 2;
			}
			trust_files[n_trust++] = optarg;
			break;
		case 'N':
			if (parse_u32("--threshold", optarg, 1, 32, &threshold))
				return 2;
			break;
		case 'S':
			bundle_state = optarg;
			break;
		case 'v':
			lg.verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "custode: daemon: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (cfg.ttl_min > cfg.ttl_max) {
		fprintf(stderr, "custode: daemon: --ttl-min is above --ttl-max\n");
		return 2;
	}
	if (!cfg.n_upstream) {
		char *text = NULL;

		if (custode_read_file("/etc/resolv.conf", 1 << 20, &text, NULL) == 0)
			cfg.n_upstream = custode_daemon_resolv_conf(text, cfg.upstream, cfg.upstream_len,
								    CUSTODE_RESOLVER_MAX_UPSTREAMS);
		free(text);
		if (!cfg.n_upstream) {
			fprintf(stderr, "custode: daemon: refused: dns.upstream: no nameserver in /etc/resolv.conf; "
					"give --upstream ADDR[:PORT]\n");
			return EXIT_REFUSED;
		}
	}
	if (!!bundles_dir != !!n_trust) {
		fprintf(stderr, "custode: daemon: --bundles needs --trust KEY (and --trust needs --bundles)\n");
		return 2;
	}
	setvbuf(stderr, NULL, _IOLBF, 0);
	if ((err = custode_host_prepare(&e, &why)))
		goto refused;
	if ((lock = take_lock(&why)) < 0) {
		err = lock;
		goto refused;
	}
	if ((err = custode_engine_open(&e, CUSTODE_CLASS_EGRESS, CUSTODE_ENGINE_LOAD, &why)))
		goto refused;
	if ((err = custode_resolver_open(&cfg, &hooks, &r, &why))) {
		custode_engine_close(&e);
		goto refused;
	}
	if (bundles_dir) {
		struct custode_trust *trust = NULL;

		err = custode_trust_new(&trust);
		for (size_t i = 0; !err && i < n_trust; i++)
			err = custode_trust_add_file(trust, trust_files[i], &why) < 0 ? -1 : 0;
		if (!err)
			err = custode_trust_set_threshold(trust, threshold, &why);
		if (!err)
			err = custode_bundle_watch_open(bundles_dir, bundle_state, trust, &watch, &why);
		else
			custode_trust_free(trust);
		if (!err && (err = custode_bundle_watch_start(watch, &watch_stop)))
			custode_refuse(&why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "bundle watcher: %s", strerror(-err));
		if (err) {
			custode_bundle_watch_close(watch);
			custode_resolver_close(r);
			custode_engine_close(&e);
			goto refused;
		}
		fprintf(stderr, "custode daemon: bundles: watching %s (%zu trusted key%s, threshold %u)\n", bundles_dir,
			n_trust, n_trust == 1 ? "" : "s", threshold);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: the loop's epoll_wait returns */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	for (size_t i = 0; i < cfg.n_upstream; i++) {
		strncat(up, i ? ", " : "", sizeof(up) - strlen(up) - 1);
		strncat(up, sa_format(&cfg.upstream[i], one, sizeof(one)), sizeof(up) - strlen(up) - 1);
	}
	fprintf(stderr,
		"custode daemon: resolver: ready on 127.0.0.0/8 port %d (udp, tcp; loopback device); upstream %s; "
		"pins clamp(TTL, %u, %u) + %u s, quota %u per run; CNAME targets %s; pid %d\n",
		CUSTODE_RESOLVER_PORT, up, cfg.ttl_min, cfg.ttl_max, cfg.grace, cfg.pin_quota,
		cfg.cname_strict ? "must be granted" : "trusted", (int)getpid());
	err = custode_resolver_serve(r, &stop);
	watch_stop = 1;
	custode_bundle_watch_join(watch);
	custode_bundle_watch_close(watch);
	custode_resolver_close(r);
	custode_engine_close(&e);
	close(lock);
	if (err) {
		fprintf(stderr, "custode daemon: resolver: stopped: %s\n", strerror(-err));
		return 1;
	}
	fprintf(stderr, "custode daemon: stopped\n");
	return 0;
refused:
	if (lock >= 0)
		close(lock);
	fprintf(stderr, "custode: daemon: refused: %s: %s\n", custode_reason_name(why.reason), why.detail);
	return EXIT_REFUSED;
}
