/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the resolver's kernel tests (test_dns_*.c). Each test runs in a
 * network namespace of its own (ktest_netns: no route out, so a broken
 * redirect can't send a packet off the machine) with:
 *   - dnsd, the hostile test upstream, on 127.0.0.1:5300 (its queries logged);
 *   - `custode daemon --upstream 127.0.0.1:5300`, stderr to a file;
 *   - extra test addresses 203.0.113.11-15 on lo (the listeners on 0.0.0.0:8080
 *     and 8081 answer there too).
 * Runs use a policy file naming hosts; dprobe is the client inside them.
 */
#ifndef TEST_DNS_FIXTURE_H
#define TEST_DNS_FIXTURE_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <bpf/bpf.h>

#include "cgroup/cgroup.h"
#include "custode/abi.h"
#include "ktest.h"
#include "test_bg.h"

struct dnsfix {
	struct ktest_dirs d;
	int dnsd, daemon;
	char dnsd_log[320], daemon_log[320], dnsd_out[320];
};

#define DARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NO_ARGS ((const char *const[]){NULL})

static inline int dns_count(const char *path, const char *needle)
{
	const char *s = kt_slurp(path);
	int n = 0;

	for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* custode daemon --upstream 127.0.0.1:5300 [extra...]; waits for "ready" (a daemon still stopping: retried). */
static inline bool dns_start_daemon(struct dnsfix *f, const char *const *extra)
{
	char *argv[32];
	int n = 0;

	argv[n++] = (char *)ktest_custode();
	argv[n++] = "daemon";
	argv[n++] = "--upstream";
	argv[n++] = "127.0.0.1:5300";
	for (; extra && *extra && n < 30; extra++)
		argv[n++] = (char *)*extra;
	argv[n] = NULL;
	for (int attempt = 0; attempt < 20; attempt++) {
		if (truncate(f->daemon_log, 0) < 0 && errno != ENOENT)
			ktest_log("truncate %s: %s", f->daemon_log, strerror(errno));
		f->daemon = kt_bg(argv, NULL, f->daemon_log);
		if (kt_wait_for(f->daemon_log, "resolver: ready", f->daemon, 60000))
			return true;
		kt_stop(&f->daemon, SIGKILL);
		if (!strstr(kt_slurp(f->daemon_log), "daemon.running"))
			break;
		usleep(500000); /* the last test's daemon is still shutting down */
	}
	ktest_log("custode daemon did not start: %s", kt_slurp(f->daemon_log));
	return false;
}

static inline bool dns_setup_no_daemon(struct dnsfix *f)
{
	char *dnsd[] = {(char *)ktest_helper("dnsd"), "--port", "5300", "--log", f->dnsd_log, NULL};
	static const char *const addrs[] = {"203.0.113.11", "203.0.113.12", "203.0.113.13", "203.0.113.14",
					    "203.0.113.15"};

	memset(f, 0, sizeof(*f));
	ktest_need_cgroup_bpf();
	if (!ASSERT_TRUE(ktest_make_dirs(&f->d), "dirs") || !ASSERT_TRUE(ktest_netns(), "network namespace"))
		return false;
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++)
		if (!ASSERT_TRUE(ktest_far_addr(addrs[i]), addrs[i]))
			return false;
	snprintf(f->dnsd_log, sizeof(f->dnsd_log), "%s/dnsd.log", f->d.root);
	snprintf(f->dnsd_out, sizeof(f->dnsd_out), "%s/dnsd.out", f->d.root);
	snprintf(f->daemon_log, sizeof(f->daemon_log), "%s/daemon.log", f->d.root);
	dnsd[4] = f->dnsd_log;
	f->dnsd = kt_bg(dnsd, f->dnsd_out, f->dnsd_out);
	return ASSERT_TRUE(kt_wait_for(f->dnsd_out, "ready", f->dnsd, 10000), "dnsd ready");
}

static inline bool dns_setup(struct dnsfix *f, const char *const *daemon_args)
{
	return dns_setup_no_daemon(f) && ASSERT_TRUE(dns_start_daemon(f, daemon_args), "custode daemon ready");
}

static inline void dns_teardown(struct dnsfix *f)
{
	kt_stop(&f->daemon, SIGTERM);
	kt_stop(&f->dnsd, SIGKILL);
}

/* A policy document with a network section: egress rules and private grants as JSON array bodies. */
static inline const char *dns_policy(struct dnsfix *f, const char *name, const char *egress, const char *private_)
{
	static char path[8][512];
	static int next;
	char doc[8192];
	char *p = path[next++ % 8];
	const char *w;

	snprintf(doc, sizeof(doc),
		 "{\"schema\":\"custode.policy/v1\",\"name\":\"test/%s\",\"version\":1,\"content\":{\"network\":{"
		 "\"egress\":[%s]%s%s%s}}}",
		 name, egress, private_ ? ",\"private\":[" : "", private_ ? private_ : "", private_ ? "]" : "");
	w = ktest_policy_file(f->d.root, name, doc);
	snprintf(p, 512, "%s", w ? w : "");
	return p;
}

/* custode run --policy POLICY [run_args...] -- dprobe ARGS... */
static inline int dns_run(struct ktest_result *r, const char *policy, const char *const *run_args,
			  const char *const *probe)
{
	char *argv[64];
	int n = 0;

	argv[n++] = (char *)ktest_custode();
	argv[n++] = "run";
	argv[n++] = "--policy";
	argv[n++] = (char *)policy;
	for (; run_args && *run_args && n < 30; run_args++)
		argv[n++] = (char *)*run_args;
	argv[n++] = "--";
	argv[n++] = (char *)ktest_helper("dprobe");
	for (; *probe && n < 62; probe++)
		argv[n++] = (char *)*probe;
	argv[n] = NULL;
	return ktest_run(argv, -1, 600000, r);
}

/* dprobe outside any run (root, the test's namespace). */
static inline const char *dns_outside(struct ktest_result *r, const char *const *probe)
{
	char *argv[32];
	int n = 0;

	argv[n++] = (char *)ktest_helper("dprobe");
	for (; *probe && n < 31; probe++)
		argv[n++] = (char *)*probe;
	argv[n] = NULL;
	ktest_run(argv, -1, 30000, r);
	return r->out;
}

/*
 * Pins the resolver reported writing for queries of `name` and `type` (its
 * decision log; the daemon must run with --verbose for answered queries);
 * -1 if no decision for them was logged.
 */
static inline int dns_logged_pins(struct dnsfix *f, const char *name, const char *type)
{
	char want_name[300], want_type[32];
	const char *log = kt_slurp(f->daemon_log);
	int total = -1;

	snprintf(want_name, sizeof(want_name), "\"name\":\"%s\"", name);
	snprintf(want_type, sizeof(want_type), "\"type\":\"%s\"", type);
	for (const char *line = log; line && *line;) {
		const char *eol = strchr(line, '\n'), *p;
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		char buf[4096];

		snprintf(buf, sizeof(buf), "%.*s", (int)(len < sizeof(buf) ? len : sizeof(buf) - 1), line);
		if (strstr(buf, want_name) && strstr(buf, want_type) && (p = strstr(buf, "\"pins\":")))
			total = (total < 0 ? 0 : total) + atoi(p + 7);
		line = eol ? eol + 1 : NULL;
	}
	return total;
}

/*
 * Pins the engine holds for a run cgroup (live or expired); -1 when the map
 * can't be opened: with the process class loaded, custode's maps are
 * reserved to the custode binary (bpf/proc.bpf.c), and the tests fall back
 * on the resolver's own report.
 */
static inline int dns_count_pins(__u64 cgid)
{
	struct custode_pin_key key, next;
	void *prev = NULL;
	int fd = bpf_obj_get(CUSTODE_PIN_MAPS "/custode_pins"), n = 0;

	if (fd < 0)
		return -1;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		n += key.run_cgid == cgid;
	}
	close(fd);
	return n;
}

/*
 * The run's pins once the daemon has cleaned up after it: a launcher's
 * teardown leaves them to the resolver's next gc (every 5 s), so wait for
 * the count to reach 0, up to a minute (scaled by ktest_slack). The last
 * count (0: gone), or -1 where custode's maps are reserved to custode.
 */
static inline int dns_pins_after_teardown(__u64 cgid)
{
	struct timespec ts = {.tv_nsec = 50 * 1000000};
	int n, waited = 0, limit = ktest_slack(60000);

	while ((n = dns_count_pins(cgid)) > 0 && waited < limit) {
		nanosleep(&ts, NULL);
		waited += 50;
	}
	return n;
}

/*
 * Start `custode run --policy P -- dprobe hold ARGS...`, wait for "held PID";
 * p is the launcher, out holds the operation's output, *cgid the run's cgroup.
 */
static inline bool dns_hold(struct ktest_proc *p, const char *policy, const char *const *probe, char *out,
			    size_t outlen, __u64 *cgid)
{
	char *argv[48], line[512], cg[512];
	size_t used = 0;
	int n = 0, pid = 0;

	argv[n++] = (char *)ktest_custode();
	argv[n++] = "run";
	argv[n++] = "--policy";
	argv[n++] = (char *)policy;
	argv[n++] = "--";
	argv[n++] = (char *)ktest_helper("dprobe");
	argv[n++] = "hold";
	for (; *probe && n < 46; probe++)
		argv[n++] = (char *)*probe;
	argv[n] = NULL;
	out[0] = 0;
	if (ktest_spawn(argv, -1, p) < 0)
		return false;
	while (ktest_read_line(p->out, line, sizeof(line), 60000)) {
		if (sscanf(line, "held %d", &pid) == 1)
			break;
		used += (size_t)snprintf(out + used, used < outlen ? outlen - used : 0, "%s\n", line);
	}
	if (!pid || !ktest_proc_cgroup(pid, cg, sizeof(cg)))
		return false;
	return custode_cgroup_id(cg, cgid) == 0;
}

static inline void dns_release(struct ktest_proc *p)
{
	ktest_close_stdin(p);
	ktest_wait(p, 30000);
	ktest_proc_close(p);
}

#endif
