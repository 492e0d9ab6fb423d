// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <jansson.h>

#include "util/exit.h"
#include "custode/resolver.h"
#include "engine/hostaddrs.h"
#include "daemon/bundles.h"
#include "daemon/control.h"
#include "daemon/daemon.h"
#include "daemon/loop.h"
#include "daemon/service.h"
#include "daemon/stream.h"
#include "dns/resolver.h"
#include "dns/wire.h"
#include "engine/engine.h"
#include "events/events.h"
#include "policy/net.h"
#include "state/runstate.h"
#include "util/fsutil.h"
#include "util/reasons.h"
#include "util/sockaddr.h"
#include "util/time.h"

static volatile sig_atomic_t stop;

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

struct logger {
	bool verbose;
};

/* A JSON string of a name, or of its bytes in hex when it is not UTF-8 (never lost). */
static json_t *name_json(const char *name)
{
	json_t *v = json_string(name);
	char *hex;

	if (v)
		return v;
	hex = malloc(strlen(name) * 2 + 5);
	if (!hex)
		return json_string("");
	strcpy(hex, "hex:");
	for (size_t i = 0; name[i]; i++)
		sprintf(hex + 4 + 2 * i, "%02x", (unsigned char)name[i]);
	v = json_string(hex);
	free(hex);
	return v;
}

/*
 * A resolver denial (or filtered answer) as a stream record, type "dns"
 * (docs/events.md): operators see DNS refusals next to the kernel's.
 */
static void stream_decision(const struct custode_resolver_decision *d)
{
	struct timespec ts;
	char hex[17], when[64], a[64];
	int reason = d->reason ? d->reason : CUSTODE_REASON_DNS_ANSWER_PRIVATE;
	json_t *o, *addrs = json_array();

	clock_gettime(CLOCK_REALTIME, &ts);
	custode_time_format_ns((int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec, 6, when, sizeof(when));
	custode_run_id_format(d->run_id, hex);
	for (size_t i = 0; i < d->n_addrs; i++)
		json_array_append_new(addrs, json_string(custode_addr_format(d->addrs[i], a, sizeof(a))));
	o = json_pack("{s:i, s:s, s:s, s:s, s:s, s:{}, s:s, s:b, s:{s:o, s:s, s:s, s:s, s:i, s:o, s:I}}", "version",
		      CUSTODE_EVENT_VERSION, "type", "dns", "source", "resolver", "time", when, "run_id", hex, "policy",
		      "reason", custode_reason_name(reason) ? custode_reason_name(reason) : "unknown", "enforced",
		      d->enforced, "dns", "name", name_json(d->name), "qtype", d->type ? d->type : "",
		      "proto", d->proto ? d->proto : "", "decision",
		      d->reason && d->reason != CUSTODE_REASON_DNS_ANSWER_PRIVATE ? "denied" : "filtered", "rcode",
		      (int)d->rcode, "addrs", addrs, "dropped", (json_int_t)d->dropped);
	if (o && d->detail)
		json_object_set_new(json_object_get(o, "dns"), "detail", json_string(d->detail));
	custode_stream_inject(o);
}

static void log_decision(void *ctx, const struct custode_resolver_decision *d)
{
	struct logger *lg = ctx;
	char hex[17], when[32], a[64], *text;
	json_t *o, *addrs;
	struct timespec ts;

	if (d->reason || d->dropped)
		stream_decision(d);
	if (!lg->verbose && !d->reason && !d->dropped)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	custode_time_format(ts.tv_sec, when, sizeof(when));
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

/* systemd's notification protocol (sd_notify(3)), without libsystemd: one datagram. */
static void sd_notify(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	socklen_t len;
	int fd;

	if (!path || (path[0] != '/' && path[0] != '@') || strlen(path) >= sizeof(sa.sun_path))
		return;
	strcpy(sa.sun_path, path);
	if (path[0] == '@')
		sa.sun_path[0] = 0; /* abstract */
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path));
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	(void)!sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa, len);
	close(fd);
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

static struct custode_engine E;

struct custode_engine *custode_daemon_engine(void)
{
	return &E;
}

/* The resolver keeps its own loop, in a thread; it tells the main loop when it stops. */
static struct {
	struct custode_resolver *r;
	pthread_t thread;
	bool started;
	volatile sig_atomic_t stop;
	int done_fd;
	int err;
} RT = {.done_fd = -1};

static void *resolver_thread(void *arg)
{
	uint64_t one = 1;

	(void)arg;
	RT.err = custode_resolver_serve(RT.r, &RT.stop);
	(void)!write(RT.done_fd, &one, sizeof(one));
	return NULL;
}

static int resolver_done(void *arg, uint32_t revents)
{
	(void)arg;
	(void)revents;
	if (RT.stop)
		return 0;
	fprintf(stderr, "custode daemon: resolver: stopped: %s\n", strerror(RT.err ? -RT.err : EPIPE));
	return RT.err ? RT.err : -EPIPE;
}

static int hostaddrs_event(void *arg, uint32_t revents)
{
	struct custode_refusal hw = {0};

	(void)revents;
	if (custode_hostaddrs_refresh_fd((int)(intptr_t)arg, &hw))
		fprintf(stderr, "custode daemon: host addresses: %s: %s\n", custode_reason_name(hw.reason), hw.detail);
	return 0;
}

static void hostaddrs_watch_added(int fd)
{
	if (custode_loop_add(fd, EPOLLIN, hostaddrs_event, (void *)(intptr_t)fd) < 0)
		fprintf(stderr, "custode daemon: host addresses: can't watch fd %d\n", fd);
}

static int on_signalfd(void *arg, uint32_t revents)
{
	struct signalfd_siginfo si;
	int fd = *(int *)arg;

	(void)revents;
	while (read(fd, &si, sizeof(si)) == sizeof(si))
		if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM)
			stop = 1;
	return 0;
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
	const char *bundles_dir = NULL, *bundle_state = NULL, *trust_files[32];
	size_t n_trust = 0;
	uint32_t threshold = 1, v32;
	struct custode_bundle_watch *watch = NULL;
	static volatile int watch_stop;
	struct custode_resolver_config cfg;
	struct custode_refusal why = {0};
	struct logger lg = {0};
	struct custode_resolver_hooks hooks = {.decision = log_decision, .notice = log_notice, .ctx = &lg};
	struct custode_stream_opts so = {.history = 10000, .file_keep = 5};
	struct custode_service_opts svc = {0};
	struct custode_trust *src_trust = NULL;
	sigset_t mask, oldmask;
	uint32_t ms;
	int c, lock = -1, err, sfd = -1, code = 0;
	bool no_resolver = false, loop_up = false, stream_up = false, control_up = false, service_up = false;
	char up[256] = "", one[80];
	const char *control_path = CUSTODE_CONTROL_SOCKET;

	custode_resolver_defaults(&cfg);
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'u':
			if (cfg.n_upstream == CUSTODE_RESOLVER_MAX_UPSTREAMS) {
				fprintf(stderr, "custode: daemon: at most %d --upstream\n", CUSTODE_RESOLVER_MAX_UPSTREAMS);
				return EXIT_USAGE;
			}
			if (custode_daemon_parse_upstream(optarg, &cfg.upstream[cfg.n_upstream],
							  &cfg.upstream_len[cfg.n_upstream]) < 0) {
				fprintf(stderr, "custode: daemon: --upstream %s: expected ADDR[:PORT] or [IPV6]:PORT\n", optarg);
				return EXIT_USAGE;
			}
			cfg.n_upstream++;
			break;
		case 'm':
			if (parse_u32("--ttl-min", optarg, 0, 86400, &cfg.ttl_min))
				return EXIT_USAGE;
			break;
		case 'M':
			if (parse_u32("--ttl-max", optarg, 1, 7 * 86400, &cfg.ttl_max))
				return EXIT_USAGE;
			break;
		case 'g':
			if (parse_u32("--pin-grace", optarg, 0, 3600, &cfg.grace))
				return EXIT_USAGE;
			break;
		case 'q':
			if (parse_u32("--pin-quota", optarg, 1, CUSTODE_MAX_PINS, &cfg.pin_quota))
				return EXIT_USAGE;
			break;
		case 'd':
			if (!strcmp(optarg, "refused"))
				cfg.deny_rcode = CUSTODE_DNS_REFUSED;
			else if (!strcmp(optarg, "nxdomain"))
				cfg.deny_rcode = CUSTODE_DNS_NXDOMAIN;
			else {
				fprintf(stderr, "custode: daemon: --deny: refused or nxdomain\n");
				return EXIT_USAGE;
			}
			break;
		case 'c':
			if (!strcmp(optarg, "trusted"))
				cfg.cname_strict = false;
			else if (!strcmp(optarg, "granted"))
				cfg.cname_strict = true;
			else {
				fprintf(stderr, "custode: daemon: --cname-targets: trusted or granted\n");
				return EXIT_USAGE;
			}
			break;
		case 't':
			if (parse_u32("--upstream-timeout", optarg, 50, 30000, &ms))
				return EXIT_USAGE;
			cfg.attempt_ms = ms;
			cfg.total_ms = ms * 5 / 2 > 5000 ? ms * 5 / 2 : 5000;
			if (cfg.total_ms < ms)
				cfg.total_ms = ms;
			break;
		case 'v':
			lg.verbose = true;
			break;
		case 'B':
			bundles_dir = optarg;
			break;
		case 'T':
			if (n_trust == 32) {
				fprintf(stderr, "custode: daemon: at most 32 --trust\n");
				return EXIT_USAGE;
			}
			trust_files[n_trust++] = optarg;
			break;
		case 'N':
			if (parse_u32("--threshold", optarg, 1, 32, &threshold))
				return EXIT_USAGE;
			break;
		case 'S':
			bundle_state = optarg;
			break;
		case 'R':
			no_resolver = true;
			break;
		case 'o':
			if (strcmp(optarg, "json") && strcmp(optarg, "text") && strcmp(optarg, "none")) {
				fprintf(stderr, "custode: daemon: --stream: json, text or none\n");
				return EXIT_USAGE;
			}
			so.stdout_format = optarg;
			break;
		case 'f':
			so.file = optarg;
			break;
		case 'x':
			if (parse_size(optarg, &so.file_max_bytes) < 0) {
				fprintf(stderr, "custode: daemon: --events-file-max: a size of at least 4096 bytes (K, M, G)\n");
				return EXIT_USAGE;
			}
			break;
		case 'k':
			if (parse_u32("--events-file-keep", optarg, 0, 1000, &v32))
				return EXIT_USAGE;
			so.file_keep = v32;
			break;
		case 'H':
			if (parse_u32("--history", optarg, 0, 1000000, &v32))
				return EXIT_USAGE;
			so.history = v32;
			break;
		case 'r': {
			unsigned burst, secs;
			char extra;

			if (sscanf(optarg, "%u/%u%c", &burst, &secs, &extra) != 2 || !burst || !secs || secs > 3600 ||
			    burst > 1000000) {
				fprintf(stderr, "custode: daemon: --throttle: BURST/SECONDS, e.g. 100/10\n");
				return EXIT_USAGE;
			}
			so.throttle_burst = burst;
			so.throttle_window_ms = secs * 1000ull;
			break;
		}
		case 'n':
			so.no_throttle = true;
			break;
		case 'l':
			svc.metrics_listen = optarg;
			break;
		case 'F':
			svc.metrics_file = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "custode: daemon: unexpected argument '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}
	if (cfg.ttl_min > cfg.ttl_max) {
		fprintf(stderr, "custode: daemon: --ttl-min is above --ttl-max\n");
		return EXIT_USAGE;
	}
	if (!!bundles_dir != !!n_trust) {
		fprintf(stderr, "custode: daemon: --bundles needs --trust KEY (and --trust needs --bundles)\n");
		return EXIT_USAGE;
	}
	if (no_resolver && cfg.n_upstream) {
		fprintf(stderr, "custode: daemon: --no-resolver and --upstream exclude each other\n");
		return EXIT_USAGE;
	}
	if (!no_resolver && !cfg.n_upstream) {
		char *text = NULL;

		if (custode_read_file("/etc/resolv.conf", 1 << 20, &text, NULL) == 0)
			cfg.n_upstream = custode_daemon_resolv_conf(text, cfg.upstream, cfg.upstream_len,
								    CUSTODE_RESOLVER_MAX_UPSTREAMS);
		free(text);
		if (!cfg.n_upstream) {
			fprintf(stderr, "custode: daemon: refused: dns.upstream: no nameserver in /etc/resolv.conf; "
					"give --upstream ADDR[:PORT] (or --no-resolver)\n");
			return EXIT_REFUSED;
		}
	}
	setvbuf(stderr, NULL, _IOLBF, 0);
	svc.started = (int64_t)time(NULL);
	svc.resolver = !no_resolver;
	if ((err = custode_host_prepare(&E, &why)))
		goto refused;
	if ((lock = take_lock(&why)) < 0) {
		err = lock;
		goto refused;
	}
	if ((err = custode_engine_open(&E, CUSTODE_CLASS_EGRESS, CUSTODE_ENGINE_LOAD, &why)))
		goto refused;
	/* the daemon's own trust, for `attach --policy NAME` and re-verifying attached runs */
	if (n_trust) {
		err = custode_trust_new(&src_trust);
		for (size_t i = 0; !err && i < n_trust; i++)
			err = custode_trust_add_file(src_trust, trust_files[i], &why) < 0 ? -1 : 0;
		if (!err)
			err = custode_trust_set_threshold(src_trust, threshold, &why);
		if (err) {
			err = -EINVAL;
			goto refused;
		}
		svc.src.trust = src_trust;
		svc.src.bundles_dir = bundles_dir;
		svc.src.state_dir = bundle_state;
	}
	control_path = getenv("CUSTODE_CONTROL_SOCKET") && *getenv("CUSTODE_CONTROL_SOCKET") ? getenv("CUSTODE_CONTROL_SOCKET")
											      : CUSTODE_CONTROL_SOCKET;
	/* signals arrive through the loop; threads started from here on inherit the mask */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, &oldmask);
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if ((err = custode_loop_init()) || sfd < 0) {
		err = custode_refuse(&why, err ? -err : errno, CUSTODE_REASON_RUN_SETUP_FAILED, "event loop: %s",
				     strerror(err ? -err : errno));
		goto refused;
	}
	loop_up = true;
	custode_loop_add(sfd, EPOLLIN, on_signalfd, &sfd);
	/* the stream first: records from here on are consumed; then adoption, then the socket */
	if ((err = custode_stream_open(&so, &why)))
		goto refused;
	stream_up = true;
	custode_service_adopt(&E, &svc.src);
	if ((err = custode_service_start(&E, &svc, &why)))
		goto refused;
	service_up = true;
	if ((err = custode_control_listen(control_path,
					  custode_service_handle, NULL, &why)))
		goto refused;
	control_up = true;
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
			watch = NULL;
			goto refused;
		}
		fprintf(stderr, "custode daemon: bundles: watching %s (%zu trusted key%s, threshold %u)\n", bundles_dir,
			n_trust, n_trust == 1 ? "" : "s", threshold);
	}
	/* this namespace's own addresses, kept current for the runs in it (net.host_address) */
	custode_hostaddrs_on_new(hostaddrs_watch_added);
	{
		struct custode_refusal hw = {0};

		if (custode_hostaddrs_watch_pid(0, &hw))
			fprintf(stderr, "custode daemon: host addresses: %s: %s (runs started here watch them themselves)\n",
				custode_reason_name(hw.reason), hw.detail);
	}
	if (!no_resolver) {
		if ((err = custode_resolver_open(&cfg, &hooks, &RT.r, &why)))
			goto refused;
		RT.done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (RT.done_fd < 0 || custode_loop_add(RT.done_fd, EPOLLIN, resolver_done, NULL) < 0 ||
		    pthread_create(&RT.thread, NULL, resolver_thread, NULL) != 0) {
			err = custode_refuse(&why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "resolver thread: %s",
					     strerror(errno));
			goto refused;
		}
		RT.started = true;
		for (size_t i = 0; i < cfg.n_upstream; i++) {
			strncat(up, i ? ", " : "", sizeof(up) - strlen(up) - 1);
			strncat(up, custode_sockaddr_format(&cfg.upstream[i], one, sizeof(one)), sizeof(up) - strlen(up) - 1);
		}
		fprintf(stderr,
			"custode daemon: resolver: ready on 127.0.0.0/8 port %d (udp, tcp; loopback device); upstream %s; "
			"pins clamp(TTL, %u, %u) + %u s, quota %u per run; CNAME targets %s; pid %d\n",
			CUSTODE_RESOLVER_PORT, up, cfg.ttl_min, cfg.ttl_max, cfg.grace, cfg.pin_quota,
			cfg.cname_strict ? "must be granted" : "trusted", (int)getpid());
	}
	fprintf(stderr, "custode daemon: ready: control %s; stream %s%s%s; pid %d\n", control_path,
		so.stdout_format ? so.stdout_format : "json", so.file ? " and " : "", so.file ? so.file : "",
		(int)getpid());
	sd_notify("READY=1\nSTATUS=custode daemon: enforcing, control socket up");
	err = custode_loop_run(&stop);
	sd_notify("STOPPING=1");
	if (err) {
		fprintf(stderr, "custode daemon: stopping: %s\n", strerror(-err));
		code = 1;
	}
	goto out;
refused:
	fprintf(stderr, "custode: daemon: refused: %s: %s\n", custode_reason_name(why.reason), why.detail);
	code = EXIT_REFUSED;
out:
	if (RT.started) {
		RT.stop = 1;
		pthread_join(RT.thread, NULL);
	}
	if (RT.r)
		custode_resolver_close(RT.r);
	if (RT.done_fd >= 0)
		close(RT.done_fd);
	if (watch) {
		watch_stop = 1;
		custode_bundle_watch_join(watch);
		custode_bundle_watch_close(watch);
	}
	if (control_up)
		custode_control_shutdown();
	if (service_up)
		custode_service_stop();
	if (stream_up)
		custode_stream_close();
	if (loop_up)
		custode_loop_fini();
	if (sfd >= 0)
		close(sfd);
	custode_trust_free(src_trust);
	custode_engine_close(&E);
	if (lock >= 0)
		close(lock);
	if (!code)
		fprintf(stderr, "custode daemon: stopped\n");
	return code;
}
