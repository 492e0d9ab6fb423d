// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
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
#include "cgroup/cgroup.h"
#include "engine/hostaddrs.h"
#include "daemon/bundles.h"
#include "daemon/control.h"
#include "daemon/daemon.h"
#include "daemon/loop.h"
#include "daemon/options.h"
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
#include "util/usage.h"

/* The resolver hooks' ctx: what they log, and the stream its decisions go to. */
struct logger {
	bool verbose;
	struct custode_stream *stream;
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
static void stream_decision(struct custode_stream *s, const struct custode_resolver_decision *d)
{
	struct timespec ts;
	char hex[17], when[64], a[64];
	int reason = d->reason ? d->reason : CUSTODE_REASON_DNS_ANSWER_PRIVATE;
	json_t *o, *addrs = json_array();

	clock_gettime(CLOCK_REALTIME, &ts);
	custode_time_show((int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec, when, sizeof(when));
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
	custode_stream_inject(s, o);
}

static void log_decision(void *ctx, const struct custode_resolver_decision *d)
{
	struct logger *lg = ctx;
	char hex[17], when[32], a[64], *text;
	json_t *o, *addrs;
	struct timespec ts;

	if (d->reason || d->dropped)
		stream_decision(lg->stream, d);
	if (!lg->verbose && !d->reason && !d->dropped)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	custode_time_show((int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec, when, sizeof(when));
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

/* The resolver keeps its own loop, in a thread; it tells the main loop when it stops. */
struct resolver_thread {
	struct custode_resolver *r;
	pthread_t thread;
	bool started;
	volatile sig_atomic_t stop;
	int done_fd;
	int err;
};

/* The daemon: what it opened (daemon_close undoes it, in reverse) and what stops it. */
struct daemon {
	struct daemon_opts o;
	struct logger lg;
	struct custode_engine engine;
	struct custode_trust *src_trust; /* the daemon's own: `attach --policy NAME`, re-verifying attached runs */
	int lock, sfd;
	const char *control_path;
	volatile sig_atomic_t stop; /* SIGINT or SIGTERM came */
	bool service_up;
	struct custode_loop *loop;
	struct custode_stream *stream;
	struct custode_service *service;
	struct custode_control_server *control;
	struct custode_bundle_watch *watch;
	volatile int watch_stop;
	struct resolver_thread rt;
};

static void *resolver_thread(void *arg)
{
	struct resolver_thread *rt = arg;
	uint64_t one = 1;

	rt->err = custode_resolver_serve(rt->r, &rt->stop);
	(void)!write(rt->done_fd, &one, sizeof(one));
	return NULL;
}

static int resolver_done(void *arg, uint32_t revents)
{
	struct resolver_thread *rt = arg;

	(void)revents;
	if (rt->stop)
		return 0;
	fprintf(stderr, "custode daemon: resolver: stopped: %s\n", strerror(rt->err ? -rt->err : EPIPE));
	return rt->err ? rt->err : -EPIPE;
}

static int hostaddrs_event(void *arg, uint32_t revents)
{
	struct custode_refusal hw = {0};

	(void)revents;
	if (custode_hostaddrs_refresh_fd((int)(intptr_t)arg, &hw))
		fprintf(stderr, "custode daemon: host addresses: %s: %s\n", custode_reason_name(hw.reason), hw.detail);
	return 0;
}

static void hostaddrs_watch_added(void *ctx, int fd)
{
	struct custode_loop *loop = ctx;

	if (custode_loop_add(loop, fd, EPOLLIN, hostaddrs_event, (void *)(intptr_t)fd) < 0)
		fprintf(stderr, "custode daemon: host addresses: can't watch fd %d\n", fd);
}

static int on_signalfd(void *arg, uint32_t revents)
{
	struct signalfd_siginfo si;
	struct daemon *d = arg;

	(void)revents;
	while (read(d->sfd, &si, sizeof(si)) == sizeof(si))
		if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM)
			d->stop = 1;
	return 0;
}

/* ---- start ---- */

/* The host, the daemon lock, the engine, and the daemon's own trust. */
static int daemon_open_engine(struct daemon *d, struct custode_refusal *why)
{
	int err;

	if ((err = custode_host_prepare(&d->engine, why)))
		return err;
	if ((d->lock = take_lock(why)) < 0)
		return d->lock;
	if ((err = custode_engine_open(&d->engine, CUSTODE_CLASS_EGRESS, CUSTODE_ENGINE_LOAD, why)))
		return err;
	/* the daemon's own trust, for `attach --policy NAME` and re-verifying attached runs */
	if (d->o.n_trust) {
		if (custode_daemon_trust_load(&d->o, &d->src_trust, why))
			return -EINVAL;
		d->o.svc.src.trust = d->src_trust;
		d->o.svc.src.bundles_dir = d->o.bundles_dir;
		d->o.svc.src.state_dir = d->o.bundle_state;
	}
	return 0;
}

/* The event loop, with SIGINT and SIGTERM through it. */
static int daemon_open_loop(struct daemon *d, struct custode_refusal *why)
{
	const char *env = getenv("CUSTODE_CONTROL_SOCKET");
	sigset_t mask, oldmask;
	int err;

	d->control_path = env && *env ? env : CUSTODE_CONTROL_SOCKET;
	/* signals arrive through the loop; threads started from here on inherit the mask */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, &oldmask);
	signal(SIGPIPE, SIG_IGN);
	d->sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if ((err = custode_loop_init(&d->loop)) || d->sfd < 0)
		return custode_refuse(why, err ? -err : errno, CUSTODE_REASON_RUN_SETUP_FAILED, "event loop: %s",
				      strerror(err ? -err : errno));
	custode_loop_add(d->loop, d->sfd, EPOLLIN, on_signalfd, d);
	return 0;
}

/* The stream first: records from here on are consumed; then adoption and the service, then the socket. */
static int daemon_open_service(struct daemon *d, struct custode_refusal *why)
{
	int err;

	if ((err = custode_stream_open(d->loop, &d->o.so, &d->stream, why)))
		return err;
	d->lg.stream = d->stream;
	if (custode_service_new(d->loop, &d->engine, d->stream, &d->o.svc, &d->service) < 0)
		return custode_refuse(why, ENOMEM, CUSTODE_REASON_RUN_SETUP_FAILED, "out of memory");
	custode_service_adopt(d->service);
	if ((err = custode_service_start(d->service, why)))
		return err;
	d->service_up = true;
	if ((err = custode_control_listen(d->loop, d->control_path, d->stream, custode_service_handle, d->service,
					  &d->control, why)))
		return err;
	custode_service_set_control(d->service, d->control);
	return 0;
}

/* --bundles DIR: the watcher, in a thread of its own, with a trust of its own. */
static int daemon_open_bundles(struct daemon *d, struct custode_refusal *why)
{
	struct custode_trust *trust = NULL;
	int err;

	err = custode_daemon_trust_load(&d->o, &trust, why);
	if (!err)
		err = custode_bundle_watch_open(d->o.bundles_dir, d->o.bundle_state, trust, &d->watch, why);
	else
		custode_trust_free(trust);
	if (!err && (err = custode_bundle_watch_start(d->watch, &d->watch_stop)))
		custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "bundle watcher: %s", strerror(-err));
	if (err) {
		custode_bundle_watch_close(d->watch);
		d->watch = NULL;
		return err;
	}
	fprintf(stderr, "custode daemon: bundles: watching %s (%zu trusted key%s, threshold %u)\n", d->o.bundles_dir,
		d->o.n_trust, d->o.n_trust == 1 ? "" : "s", d->o.threshold);
	return 0;
}

/* This namespace's own addresses, kept current for the runs in it (net.host_address). */
static void daemon_watch_hostaddrs(struct daemon *d)
{
	struct custode_refusal hw = {0};

	custode_hostaddrs_on_new(hostaddrs_watch_added, d->loop);
	if (custode_hostaddrs_watch_pid(0, &hw))
		fprintf(stderr, "custode daemon: host addresses: %s: %s (runs started here watch them themselves)\n",
			custode_reason_name(hw.reason), hw.detail);
}

static int resolver_serve_netns(void *ctx, int pid, __u64 run_cgid, struct custode_refusal *why)
{
	return custode_resolver_serve_netns(ctx, pid, run_cgid, 5000, why);
}

/* The resolver, in its thread; its decisions go to the stream through the logger. */
static int daemon_start_resolver(struct daemon *d, struct custode_refusal *why)
{
	struct custode_resolver_hooks hooks = {.decision = log_decision, .notice = log_notice, .ctx = &d->lg};
	const struct custode_resolver_config *cfg = &d->o.cfg;
	struct resolver_thread *rt = &d->rt;
	char up[256] = "", one[80];
	int err;

	if ((err = custode_resolver_open(cfg, &hooks, &rt->r, why)))
		return err;
	rt->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (rt->done_fd < 0 || custode_loop_add(d->loop, rt->done_fd, EPOLLIN, resolver_done, rt) < 0 ||
	    pthread_create(&rt->thread, NULL, resolver_thread, rt) != 0)
		return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "resolver thread: %s",
				      strerror(errno));
	rt->started = true;
	/* attached runs in network namespaces of their own: listened in too (a restart re-serves them), before "ready" */
	custode_service_set_resolver(d->service, resolver_serve_netns, rt->r);
	for (size_t i = 0; i < cfg->n_upstream; i++) {
		strncat(up, i ? ", " : "", sizeof(up) - strlen(up) - 1);
		strncat(up, custode_sockaddr_format(&cfg->upstream[i], one, sizeof(one)), sizeof(up) - strlen(up) - 1);
	}
	fprintf(stderr,
		"custode daemon: resolver: ready on 127.0.0.0/8 port %d (udp, tcp; loopback device); upstream %s; "
		"pins clamp(TTL, %u, %u) + %u s, quota %u per run; CNAME targets %s; pid %d\n",
		CUSTODE_RESOLVER_PORT, up, cfg->ttl_min, cfg->ttl_max, cfg->grace, cfg->pin_quota,
		cfg->cname_strict ? "must be granted" : "trusted", (int)getpid());
	return 0;
}

/* ---- run and stop ---- */

/* Ready: the loop until a signal or a failing handler. The exit status: 0, or 1 when the loop failed. */
static int daemon_run(struct daemon *d)
{
	int err;

	fprintf(stderr, "custode daemon: ready: control %s; stream %s%s%s; pid %d\n", d->control_path,
		d->o.so.stdout_format ? d->o.so.stdout_format : "json", d->o.so.file ? " and " : "",
		d->o.so.file ? d->o.so.file : "", (int)getpid());
	sd_notify("READY=1\nSTATUS=custode daemon: enforcing, control socket up");
	err = custode_loop_run(d->loop, &d->stop);
	sd_notify("STOPPING=1");
	if (err) {
		fprintf(stderr, "custode daemon: stopping: %s\n", strerror(-err));
		return 1;
	}
	return 0;
}

/* What the start opened, closed in reverse (a part that failed to start is only freed). */
static void daemon_close(struct daemon *d)
{
	if (d->rt.started) {
		d->rt.stop = 1;
		pthread_join(d->rt.thread, NULL);
	}
	if (d->rt.r)
		custode_resolver_close(d->rt.r);
	if (d->rt.done_fd >= 0)
		close(d->rt.done_fd);
	if (d->watch) {
		d->watch_stop = 1;
		custode_bundle_watch_join(d->watch);
		custode_bundle_watch_close(d->watch);
	}
	if (d->control) {
		custode_service_set_control(d->service, NULL); /* its counters kept for the last textfile */
		custode_control_shutdown(d->control);
	}
	if (d->service_up)
		custode_service_stop(d->service);
	custode_service_free(d->service);
	custode_stream_close(d->stream);
	custode_hostaddrs_on_new(NULL, NULL); /* its ctx, the loop, goes */
	custode_loop_fini(d->loop);
	if (d->sfd >= 0)
		close(d->sfd);
	custode_trust_free(d->src_trust);
	custode_engine_close(&d->engine);
	if (d->lock >= 0)
		close(d->lock);
}

/*
 * Before anything reads a cgroup path: the host's view of them (a DaemonSet's
 * container may have a cgroup namespace of its own; with hostPID the daemon
 * enters PID 1's). Refused rather than run with paths it would misread.
 */
static int daemon_host_cgroupns(struct custode_refusal *why)
{
	char mount[PATH_MAX];
	int err;

	if ((err = custode_cgroup2_mount(mount, sizeof(mount))) < 0)
		return 0; /* no cgroup v2: opening the engine says so */
	err = custode_cgroupns_host(mount);
	if (err == -ENXIO)
		return custode_refuse(why, ENXIO, CUSTODE_REASON_DAEMON_CGROUPNS,
				      "the cgroup this process reads as its own does not list it, in PID 1's cgroup "
				      "namespace either: run the daemon in the host's PID namespace (hostPID) or the "
				      "host's cgroup namespace");
	if (err < 0)
		return custode_refuse(why, -err, CUSTODE_REASON_DAEMON_CGROUPNS,
				      "entering PID 1's cgroup namespace: %s (the daemon needs CAP_SYS_ADMIN for it, "
				      "or to be started in the host's cgroup namespace)",
				      strerror(-err));
	return 0;
}

int custode_cmd_daemon(int argc, char **argv)
{
	struct daemon d = {.lock = -1, .sfd = -1, .rt = {.done_fd = -1}};
	struct custode_refusal why = {0};
	int code, err;

	/* every flag before anything is opened: a typo must not cost a restart loop (exit 2 stops the unit) */
	if ((err = custode_daemon_options(argc, argv, &d.o, &why)) > 0) {
		custode_daemon_usage(stdout);
		return 0;
	}
	if (err)
		return custode_usage_refused("daemon", EXIT_USAGE, &why);
	if (custode_daemon_default_upstreams(&d.o, "/etc/resolv.conf", &why)) {
		fprintf(stderr, "custode daemon: refused: %s: %s\n", custode_reason_name(why.reason), why.detail);
		return EXIT_REFUSED;
	}
	d.lg.verbose = d.o.verbose;
	setvbuf(stderr, NULL, _IOLBF, 0);
	if (daemon_host_cgroupns(&why))
		goto refused;
	d.o.svc.started = (int64_t)time(NULL);
	d.o.svc.resolver = !d.o.no_resolver;
	if (daemon_open_engine(&d, &why) || daemon_open_loop(&d, &why) || daemon_open_service(&d, &why) ||
	    (d.o.bundles_dir && daemon_open_bundles(&d, &why)))
		goto refused;
	daemon_watch_hostaddrs(&d);
	if (!d.o.no_resolver && daemon_start_resolver(&d, &why))
		goto refused;
	code = daemon_run(&d);
	goto out;
refused:
	fprintf(stderr, "custode daemon: refused: %s: %s\n", custode_reason_name(why.reason), why.detail);
	code = EXIT_REFUSED;
out:
	daemon_close(&d);
	if (!code)
		fprintf(stderr, "custode daemon: stopped\n");
	return code;
}
