// SPDX-License-Identifier: Apache-2.0
/*
 * Route options (issue 13, class 5): options that change where a packet goes
 * after the egress hooks approved its destination. An IPv4 source route
 * (IP_OPTIONS with LSRR/SSRR, the IP_RETOPTS control message) or an IPv6
 * routing header (IPV6_RTHDR, IPV6_2292RTHDR, IPV6_2292PKTOPTIONS, the
 * control messages) sends a datagram addressed to a granted 203.0.113.10 /
 * 2001:db8::10 to the first hop the option names: here 10.77.0.1 and
 * fd00::99, addresses of the far namespace that no rule grants. custode
 * refuses these options in runs with a network section
 * (net.route_option.denied: cgroup/setsockopt, socket_setsockopt,
 * socket_sendmsg; bpf/lib/route.bpf.h).
 *
 * The controls show each option working outside any run, and a packet
 * capture in the far namespace shows where the packet really went: to the
 * hop, carrying the route. Inside, a marker datagram sent to the hop after
 * the refused attempt shows that nothing went there first.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <poll.h>
#include <sys/socket.h>

#include "procutil.h"

#define HOP4 "10.77.0.1"
#define HOP6 "fd00::99"
#define DST4 "203.0.113.10"
#define DST6 "2001:db8::10"

#define GRANTS                                                                                              \
	"{\"cidr\":\"203.0.113.10/32\",\"ports\":[8080,9999]},{\"cidr\":\"2001:db8::10/128\",\"ports\":[8080,9999]}," \
	"{\"cidr\":\"203.0.113.10/32\",\"ports\":[9999],\"proto\":\"udp\"},"                                 \
	"{\"cidr\":\"2001:db8::10/128\",\"ports\":[9999],\"proto\":\"udp\"}"
#define ROUTE_POLICY POLICY("route", "{\"network\":{\"egress\":[" GRANTS "]}}")

struct rfix {
	struct ktest_dirs d;
	char policy[512];
	int cap; /* packet socket on the far side of the link */
};

static bool setup(struct rfix *f)
{
	struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL)};

	ktest_need_lsm();
	f->cap = -1;
	if (!ASSERT_TRUE(ktest_make_dirs(&f->d), "dirs") || !ASSERT_TRUE(ktest_netns(), "network namespaces"))
		return false;
	snprintf(f->policy, sizeof(f->policy), "%s", pu_policy(f->d.root, "route", ROUTE_POLICY));
	/* the hops: far's addresses, routed from near over the link (nothing grants them) */
	if (!ASSERT_TRUE(ktest_far_addr(HOP4) && ktest_far_addr(HOP6), "hop addresses in far") ||
	    !ASSERT_EQ(system("ip route add " HOP4 "/32 dev ktv0 && ip -6 route add " HOP6 "/128 dev ktv0"), 0,
		       "routes to the hops"))
		return false;
	if (!ASSERT_TRUE(ktest_far_enter(), "far"))
		return false;
	f->cap = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, htons(ETH_P_ALL));
	sll.sll_ifindex = (int)if_nametoindex("ktv1");
	if (f->cap >= 0 && bind(f->cap, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		close(f->cap);
		f->cap = -1;
	}
	ktest_far_leave();
	return ASSERT_TRUE(f->cap >= 0, "capture on far's side of the link") && ASSERT_TRUE(f->policy[0], "policy");
}

/*
 * A packet to hop seen on far's link: 1 carrying a source route / routing
 * header, 2 a plain one (the marker), 0 none within ms.
 */
static int cap_next(struct rfix *f, const char *hop, int ms)
{
	unsigned char want[16], buf[2048];
	bool six = strchr(hop, ':') != NULL;

	inet_pton(six ? AF_INET6 : AF_INET, hop, want);
	for (int waited = 0; waited <= ms;) {
		struct pollfd p = {.fd = f->cap, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, 100) == 0) {
			waited += 100;
			continue;
		}
		n = recv(f->cap, buf, sizeof(buf), 0);
		if (n < 20)
			continue;
		if (!six && (buf[0] >> 4) == 4 && !memcmp(buf + 16, want, 4)) {
			int ihl = (buf[0] & 15) * 4;

			for (int i = 20; i < ihl && i < n;) {
				if (buf[i] == 0x83 || buf[i] == 0x89) /* LSRR, SSRR */
					return 1;
				if (buf[i] == 0) /* end of options */
					break;
				i += buf[i] == 1 ? 1 : (i + 1 < n && buf[i + 1] >= 2 ? buf[i + 1] : ihl);
			}
			return 2;
		}
		if (six && n >= 40 && (buf[0] >> 4) == 6 && !memcmp(buf + 24, want, 16))
			return buf[6] == 43 ? 1 : 2; /* next header: routing */
	}
	return 0;
}

static void cap_drain(struct rfix *f)
{
	unsigned char buf[2048];

	while (recv(f->cap, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

static const char *np(void)
{
	return ktest_helper("netprobe");
}

/* netprobe ARGS outside any run */
static const char *outside(struct ktest_result *r, const char *const *args)
{
	const char *argv[24];
	int n = 0;

	argv[n++] = np();
	for (; *args && n < 23; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	ktest_run((char *const *)argv, -1, 60000, r);
	return r->out;
}

/* custode run --policy P -- netprobe ARGS */
static const char *in_run(struct ktest_result *r, const char *policy, const char *const *args)
{
	const char *cmd[24];
	int n = 0;

	cmd[n++] = np();
	for (; *args && n < 23; args++)
		cmd[n++] = *args;
	cmd[n] = NULL;
	ktest_run(pu_argv(ARGS("--policy", policy), cmd), -1, 120000, r);
	return r->out;
}

/* A root netprobe (its socket made first, outside), moved into run_pid's cgroup, then doing ARGS: its line. */
static const char *moved_in(int run_pid, const char *const *args)
{
	static char line[256];
	const char *argv[24];
	struct ktest_proc p;
	int n = 0, pid = 0;

	argv[n++] = np();
	argv[n++] = "wait";
	for (; *args && n < 23; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	line[0] = 0;
	if (ktest_spawn((char *const *)argv, -1, &p) < 0)
		return line;
	if (ktest_read_line(p.out, line, sizeof(line), 30000) && sscanf(line, "ready %d", &pid) == 1 &&
	    ASSERT_TRUE(pu_move_into_cgroup_of(pid, run_pid), "move into the run") &&
	    ASSERT_TRUE(write(p.in, "go\n", 3) == 3, "go")) {
		if (!ktest_read_line(p.out, line, sizeof(line), 30000))
			snprintf(line, sizeof(line), "(no answer)");
	} else if (strncmp(line, "ready", 5) == 0) {
		line[0] = 0;
	}
	ktest_close_stdin(&p);
	ktest_wait(&p, 30000);
	ktest_proc_close(&p);
	return line;
}

/* Outside a run, a plain datagram to hop: the marker that ends a capture. */
static bool marker(struct ktest_result *r, const char *hop)
{
	return !strcmp(outside(r, ARGS("sendmsg", "none", "-", hop, "9999", "sendto")), "ok\n");
}

/* After a refused attempt: did anything carrying a route reach hop before the marker? */
static bool nothing_routed(struct rfix *f, struct ktest_result *r, const char *hop)
{
	int c;

	if (!marker(r, hop))
		return ASSERT_TRUE(false, "marker sent");
	c = cap_next(f, hop, 15000);
	if (c == 1)
		return false; /* a routed packet came first */
	return ASSERT_EQ(c, 2, "the marker arrives");
}

struct rcase {
	const char *what;
	const char *args[8];
	const char *control; /* outside any run (the kernel's own answer) */
	const char *hop;     /* the packet really goes there, outside: checked by the capture */
};

/* Every one is refused in a run with a network section. */
static const struct rcase route_cases[] = {
	{"IP_OPTIONS LSRR (UDP)", {"sockopt", "ip-lsrr", HOP4, DST4, "9999"}, "ok", HOP4},
	{"IP_OPTIONS SSRR (UDP)", {"sockopt", "ip-ssrr", HOP4, DST4, "9999"}, "ok", HOP4},
	{"IP_OPTIONS LSRR (TCP connect)", {"sockopt", "tcp-lsrr", HOP4, DST4, "8080"}, "ok", HOP4},
	{"SOL_IP IP_OPTIONS LSRR on an IPv6 socket (v4-mapped)", {"sockopt", "v6-ip-lsrr", HOP4, "::ffff:" DST4, "9999"},
	 "ok", HOP4},
	/* IP_OPTIONS is refused by name, whatever it holds: a timestamp, nothing */
	{"IP_OPTIONS timestamp", {"sockopt", "ip-ts", "-", DST4, "9999"}, "ok", NULL},
	{"IP_OPTIONS empty", {"sockopt", "ip-empty", "-"}, "ok", NULL},
	{"IP_RETOPTS (socket option)", {"sockopt", "ip-retopts", "-"}, "ok", NULL},
	{"IPV6_RTHDR type 0 (the kernel refuses it: deprecated)", {"sockopt", "ip6-rthdr0", HOP6, DST6, "9999"}, "EINVAL",
	 NULL},
	{"IPV6_RTHDR type 2", {"sockopt", "ip6-rthdr2", HOP6, DST6, "9999"}, "ok", HOP6},
	{"IPV6_RTHDR type 4 (segment routing)", {"sockopt", "ip6-rthdr4", HOP6, DST6, "9999"}, "ok", HOP6},
	{"IPV6_RTHDR type 2 (TCP connect)", {"sockopt", "tcp6-rthdr2", HOP6, DST6, "8080"}, "ok", HOP6},
	{"IPV6_2292RTHDR (socket option)", {"sockopt", "ip6-2292rthdr", "-"}, "ok", NULL},
	{"IPV6_2292PKTOPTIONS holding IPV6_RTHDR", {"sockopt", "ip6-pktoptions", HOP6, DST6, "9999"}, "ok", HOP6},
	{"IPV6_2292PKTOPTIONS holding IPV6_2292RTHDR", {"sockopt", "ip6-pktoptions-2292", HOP6, DST6, "9999"}, "ok", HOP6},
	{"sendto + IP_RETOPTS LSRR", {"sendmsg", "retopts-lsrr", HOP4, DST4, "9999", "sendto"}, "ok", HOP4},
	{"connected UDP + IP_RETOPTS LSRR", {"sendmsg", "retopts-lsrr", HOP4, DST4, "9999", "connected"}, "ok", HOP4},
	{"sendmmsg + IP_RETOPTS LSRR", {"sendmsg", "retopts-lsrr", HOP4, DST4, "9999", "mmsg"}, "ok", HOP4},
	{"sendto + IP_RETOPTS SSRR", {"sendmsg", "retopts-ssrr", HOP4, DST4, "9999", "sendto"}, "ok", HOP4},
	{"IPv6 socket to ::ffff:v4 + IP_RETOPTS LSRR", {"sendmsg", "retopts-lsrr", HOP4, "::ffff:" DST4, "9999", "sendto"},
	 "ok", HOP4},
	{"sendto + IP_RETOPTS timestamp", {"sendmsg", "retopts-ts", "-", DST4, "9999", "sendto"}, "ok", NULL},
	{"sendto + IP_OPTIONS cmsg (the kernel knows none)", {"sendmsg", "ipopts-lsrr", HOP4, DST4, "9999", "sendto"},
	 "EINVAL", NULL},
	{"sendto + IPV6_RTHDR", {"sendmsg", "rthdr2", HOP6, DST6, "9999", "sendto"}, "ok", HOP6},
	{"connected UDP + IPV6_RTHDR", {"sendmsg", "rthdr2", HOP6, DST6, "9999", "connected"}, "ok", HOP6},
	{"sendmmsg + IPV6_RTHDR", {"sendmsg", "rthdr2", HOP6, DST6, "9999", "mmsg"}, "ok", HOP6},
	{"sendto + IPV6_2292RTHDR", {"sendmsg", "2292rthdr", HOP6, DST6, "9999", "sendto"}, "ok", HOP6},
	/* TCP takes no per-message IP options (the kernel skips them), but the message is refused all the same */
	{"TCP fast open + IP_RETOPTS LSRR", {"sendmsg", "retopts-lsrr", HOP4, DST4, "8080", "fastopen"}, "ok", NULL},
	{"TCP fast open + IPV6_RTHDR", {"sendmsg", "rthdr2", HOP6, DST6, "8080", "fastopen"}, "ok", NULL},
	{"15 harmless cmsgs, then IPV6_RTHDR", {"sendmsg", "many16-route", HOP6, DST6, "9999", "sendto"}, "ok", HOP6},
	{"15 harmless cmsgs, then IP_RETOPTS", {"sendmsg", "many16-route", HOP4, DST4, "9999", "sendto"}, "ok", HOP4},
};
#define NCASES (sizeof(route_cases) / sizeof(route_cases[0]))

static void chomp(char *s)
{
	s[strcspn(s, "\n")] = 0;
}

KTEST(route_options_work_outside_a_run)
{
	static struct ktest_result r;
	struct rfix f;

	if (!setup(&f))
		return;
	for (size_t i = 0; i < NCASES; i++) {
		const struct rcase *c = &route_cases[i];
		char what[160];

		cap_drain(&f);
		outside(&r, c->args);
		chomp(r.out);
		snprintf(what, sizeof(what), "control: %s", c->what);
		if (!ASSERT_STREQ(r.out, c->control, what))
			continue;
		if (c->hop) {
			snprintf(what, sizeof(what), "control: %s: the packet heads for %s with the route", c->what, c->hop);
			ASSERT_EQ(cap_next(&f, c->hop, 15000), 1, what);
		}
	}
	/* and a plain datagram to the granted destination goes there, not to a hop */
	cap_drain(&f);
	ASSERT_STREQ(outside(&r, ARGS("sendmsg", "none", "-", HOP4, "9999", "sendto")), "ok\n", "plain datagram");
	ASSERT_EQ(cap_next(&f, HOP4, 15000), 2, "a plain datagram carries no route");
	close(f.cap);
}

KTEST(route_options_denied_in_a_launched_run)
{
	static struct ktest_result r;
	struct rfix f;
	json_t *ev;

	if (!setup(&f))
		return;
	ktest_events();
	for (size_t i = 0; i < NCASES; i++) {
		const struct rcase *c = &route_cases[i];
		char what[160];

		cap_drain(&f);
		in_run(&r, f.policy, c->args);
		chomp(r.out);
		snprintf(what, sizeof(what), "run: %s", c->what);
		ASSERT_STREQ(r.out, "EPERM", what);
		ASSERT_CONTAINS(r.err, "net.route_option.denied", what);
		if (c->hop) {
			snprintf(what, sizeof(what), "run: %s: nothing reached %s", c->what, c->hop);
			ASSERT_TRUE(nothing_routed(&f, &r, c->hop), what);
		}
	}
	ev = ktest_events();
	ASSERT_TRUE(ktest_find_event(ev, "socket_setsockopt", "net.route_option.denied", NULL) != NULL,
		    "event: socket_setsockopt net.route_option.denied");
	ASSERT_TRUE(ktest_find_event(ev, "socket_sendmsg", "net.route_option.denied", NULL) != NULL,
		    "event: socket_sendmsg net.route_option.denied");
	json_decref(ev);
	close(f.cap);
}

/* A root process with every capability and no seccomp filter, its socket made before it was moved in. */
KTEST(route_options_denied_attached_root)
{
	static struct ktest_result r;
	struct rfix f;
	struct ktest_proc t;
	char receipt[400];
	unsigned long addr;
	int pid = 0;
	json_t *rc;

	if (!setup(&f))
		return;
	snprintf(receipt, sizeof(receipt), "%s/receipt.json", f.d.root);
	char *argv[] = {(char *)ktest_custode(), "run", "--policy", f.policy, "--receipt", receipt, "--",
			(char *)ktest_helper("pprobe"), "target", NULL};
	if (!ASSERT_TRUE(pu_target(argv, -1, &t, &pid, &addr), "a run to move into"))
		return;
	for (size_t i = 0; i < NCASES; i++) {
		const struct rcase *c = &route_cases[i];
		char what[160];

		cap_drain(&f);
		snprintf(what, sizeof(what), "attached root: %s", c->what);
		ASSERT_STREQ(moved_in(pid, c->args), "EPERM", what);
		if (c->hop) {
			snprintf(what, sizeof(what), "attached root: %s: nothing reached %s", c->what, c->hop);
			ASSERT_TRUE(nothing_routed(&f, &r, c->hop), what);
		}
	}
	/* ordinary options still work for it */
	ASSERT_STREQ(moved_in(pid, ARGS("sockopt", "ip-tos", "-", DST4, "9999")), "ok", "attached root: IP_TOS");
	ASSERT_STREQ(moved_in(pid, ARGS("sendmsg", "tclass", "-", DST6, "9999", "sendto")), "ok",
		     "attached root: IPV6_TCLASS cmsg");
	ASSERT_EQ(pu_stop(&t), 0, "run ends");
	rc = pu_load_json(receipt);
	ASSERT_EQ(pu_denials(rc, "net.route_option.denied"), (long long)NCASES, "each counted in the receipt");
	json_decref(rc);
	close(f.cap);
}

/* Options that don't move the packet work in a run, and the datagram reaches the granted destination. */
KTEST(route_ordinary_options_work_in_a_run)
{
	static struct ktest_result r;
	static const struct {
		const char *what;
		const char *args[8];
	} ok[] = {
		{"IP_TOS", {"sockopt", "ip-tos", "-", DST4, "9999"}},
		{"IP_TTL", {"sockopt", "ip-ttl", "-", DST4, "9999"}},
		{"IP_RECVOPTS (receiving options)", {"sockopt", "ip-recvopts", "-", DST4, "9999"}},
		{"IPV6_TCLASS", {"sockopt", "ip6-tclass", "-", DST6, "9999"}},
		{"IPV6_UNICAST_HOPS", {"sockopt", "ip6-hops", "-", DST6, "9999"}},
		{"IPV6_RECVRTHDR (receiving routing headers)", {"sockopt", "ip6-recvrthdr", "-", DST6, "9999"}},
		{"SO_RCVBUF", {"sockopt", "so-rcvbuf", "-", DST4, "9999"}},
		{"TCP_NODELAY, then connect", {"sockopt", "tcp-nodelay", "-", DST4, "8080"}},
		{"sendto + IP_TOS cmsg", {"sendmsg", "tos", "-", DST4, "9999", "sendto"}},
		{"sendto + IP_TTL cmsg", {"sendmsg", "ttl", "-", DST4, "9999", "sendto"}},
		{"sendto + IP_PKTINFO cmsg", {"sendmsg", "pktinfo", "-", DST4, "9999", "sendto"}},
		{"connected + IP_TOS cmsg", {"sendmsg", "tos", "-", DST4, "9999", "connected"}},
		{"sendto + IPV6_TCLASS cmsg", {"sendmsg", "tclass", "-", DST6, "9999", "sendto"}},
		{"sendto + IPV6_HOPLIMIT cmsg", {"sendmsg", "hoplimit", "-", DST6, "9999", "sendto"}},
		{"sendto + IPV6_PKTINFO cmsg", {"sendmsg", "pktinfo", "-", DST6, "9999", "sendto"}},
		{"sendmmsg + IPV6_TCLASS cmsg", {"sendmsg", "tclass", "-", DST6, "9999", "mmsg"}},
		{"TCP fast open + IP_TOS cmsg", {"sendmsg", "tos", "-", DST4, "8080", "fastopen"}},
		{"15 control messages", {"sendmsg", "many15", "-", DST4, "9999", "sendto"}},
		{"plain sendto", {"sendmsg", "none", "-", DST6, "9999", "sendto"}},
	};
	struct rfix f;

	if (!setup(&f))
		return;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		char what[160];

		snprintf(what, sizeof(what), "control: %s", ok[i].what);
		outside(&r, ok[i].args);
		chomp(r.out);
		ASSERT_STREQ(r.out, "ok", what);
		snprintf(what, sizeof(what), "run: %s", ok[i].what);
		in_run(&r, f.policy, ok[i].args);
		chomp(r.out);
		if (!ASSERT_STREQ(r.out, "ok", what))
			ktest_log("%s: %s", ok[i].what, r.err);
	}
	/* the egress rules still hold for them: a datagram to the hop itself is not granted */
	in_run(&r, f.policy, ARGS("sendmsg", "none", "-", HOP4, "9999", "sendto"));
	ASSERT_STREQ(r.out, "EPERM\n", "run: the hop is not granted");
	close(f.cap);
}

/*
 * Other ways into setsockopt and sendmsg for an attached root (no seccomp):
 * the i386 entry (int $0x80: the cgroup setsockopt programs are not run for
 * compat calls, socket_setsockopt is), and io_uring's socket commands
 * (SOCKET_URING_OP_SETSOCKOPT, 6.7+) from a ring made before the move.
 * Launched runs: the seccomp filter kills a process making i386 calls.
 */
KTEST(route_compat_and_uring_paths)
{
	static struct ktest_result r;
	struct rfix f;
	struct ktest_proc t;
	unsigned long addr;
	int pid = 0;
	char uring_control[64];

	if (!setup(&f))
		return;
	cap_drain(&f);
	ASSERT_STREQ(outside(&r, ARGS("compat-setsockopt-lsrr", HOP4)), "ok\n", "control: i386 setsockopt IP_OPTIONS");
	cap_drain(&f);
	ASSERT_STREQ(outside(&r, ARGS("compat-sendmsg-retopts", HOP4, DST4, "9999")), "ok\n",
		     "control: i386 sendmsg + IP_RETOPTS LSRR");
	ASSERT_EQ(cap_next(&f, HOP4, 15000), 1, "control: the i386 message heads for the hop");
	outside(&r, ARGS("uring-setsockopt-lsrr", HOP4));
	snprintf(uring_control, sizeof(uring_control), "%s", r.out);
	chomp(uring_control);
	ktest_log("io_uring SOCKET_URING_OP_SETSOCKOPT outside a run: %s", uring_control);
	ASSERT_TRUE(!strcmp(uring_control, "ok") || !strcmp(uring_control, "EINVAL") ||
			    !strcmp(uring_control, "EOPNOTSUPP"),
		    "control: io_uring setsockopt works, or this kernel has no such command");

	char *argv[] = {(char *)ktest_custode(), "run", "--policy", f.policy, "--", (char *)ktest_helper("pprobe"),
			"target", NULL};
	if (!ASSERT_TRUE(pu_target(argv, -1, &t, &pid, &addr), "a run to move into"))
		return;
	ktest_events();
	ASSERT_STREQ(moved_in(pid, ARGS("compat-setsockopt-lsrr", HOP4)), "EPERM", "attached root: i386 setsockopt");
	cap_drain(&f);
	ASSERT_STREQ(moved_in(pid, ARGS("compat-sendmsg-retopts", HOP4, DST4, "9999")), "EPERM",
		     "attached root: i386 sendmsg + IP_RETOPTS");
	ASSERT_TRUE(nothing_routed(&f, &r, HOP4), "attached root: nothing reached the hop");
	if (!strcmp(uring_control, "ok"))
		ASSERT_STREQ(moved_in(pid, ARGS("uring-setsockopt-lsrr", HOP4)), "EPERM",
			     "attached root: io_uring setsockopt from a ring made before");
	else
		ASSERT_TRUE(strcmp(moved_in(pid, ARGS("uring-setsockopt-lsrr", HOP4)), "ok") != 0,
			    "attached root: io_uring setsockopt");
	{
		json_t *ev = ktest_events();

		ASSERT_TRUE(ktest_find_event(ev, "socket_setsockopt", "net.route_option.denied", NULL) != NULL,
			    "event: socket_setsockopt");
		ASSERT_TRUE(ktest_find_event(ev, "socket_sendmsg", "net.route_option.denied", NULL) != NULL,
			    "event: socket_sendmsg");
		json_decref(ev);
	}
	pu_stop(&t);

	/* launched: the i386 entry is a bad architecture to the seccomp filter (the process is killed) */
	in_run(&r, f.policy, ARGS("compat-setsockopt-lsrr", HOP4));
	ASSERT_TRUE(strcmp(r.out, "ok\n") != 0, "run: i386 setsockopt");
	ASSERT_TRUE(r.code != 0, "run: the probe does not succeed");
	close(f.cap);
}
