// SPDX-License-Identifier: Apache-2.0
/*
 * Listening (issue 13, class 6): a run whose policy says "listen": false (the
 * built-in profiles) serves nothing. bind() to a chosen port is refused by
 * the cgroup bind hooks, and listen() whatever the port — after bind(0), or
 * with no bind at all (the kernel's autobind) — by socket_listen; both
 * net.bind.denied. So a peer in the far namespace never gets a connection to
 * the run accepted. A policy with "listen": true serves as usual. Peer
 * filtering ("inbound") is test_inbound_peers.c's.
 *
 * The fixture (ktest_netns): runs live in the near namespace (198.51.100.1,
 * 2001:db8:1::1); peers connect from far (203.0.113.10, 2001:db8::10).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "procutil.h"

#define NOLISTEN POLICY("nolisten", "{\"network\":{\"egress\":[],\"listen\":false}}")
#define NOLISTEN_GRANTS                                                                                      \
	POLICY("nolisten-grants", "{\"network\":{\"egress\":[{\"cidr\":\"203.0.113.0/24\",\"ports\":[8080]}," \
				  "{\"cidr\":\"2001:db8::/64\",\"ports\":[8080]}],\"listen\":false}}")
#define LISTEN POLICY("listen", "{\"network\":{\"egress\":[],\"listen\":true}}")

struct ifix {
	struct ktest_dirs d;
	char nolisten[512], grants[512], listen[512];
};

static bool setup(struct ifix *f)
{
	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&f->d), "dirs") || !ASSERT_TRUE(ktest_netns(), "network namespaces"))
		return false;
	snprintf(f->nolisten, sizeof(f->nolisten), "%s", pu_policy(f->d.root, "nolisten", NOLISTEN));
	snprintf(f->grants, sizeof(f->grants), "%s", pu_policy(f->d.root, "nolisten-grants", NOLISTEN_GRANTS));
	snprintf(f->listen, sizeof(f->listen), "%s", pu_policy(f->d.root, "listen", LISTEN));
	return ASSERT_TRUE(f->nolisten[0] && f->grants[0] && f->listen[0], "policies");
}

static const char *np(void)
{
	return ktest_helper("netprobe");
}

static void chomp(char *s)
{
	s[strcspn(s, "\n")] = 0;
}

static const char *outside(struct ktest_result *r, const char *const *args)
{
	const char *argv[24];
	int n = 0;

	argv[n++] = np();
	for (; *args && n < 23; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	ktest_run((char *const *)argv, -1, 60000, r);
	chomp(r->out);
	return r->out;
}

/* custode run RUNARGS -- netprobe ARGS */
static const char *in_run(struct ktest_result *r, const char *const *run_args, const char *const *args)
{
	const char *cmd[24];
	int n = 0;

	cmd[n++] = np();
	for (; *args && n < 23; args++)
		cmd[n++] = *args;
	cmd[n] = NULL;
	ktest_run(pu_argv(run_args, cmd), -1, 120000, r);
	chomp(r->out);
	return r->out;
}

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

/* netprobe echo from the far namespace (or near) to ADDR PORT */
static const char *peer(struct ktest_result *r, bool far, const char *addr, const char *port)
{
	if (far && !ktest_far_enter())
		return "no far namespace";
	outside(r, ARGS("echo", addr, port));
	if (far)
		ktest_far_leave();
	return r->out;
}

/* A "netprobe serve" (in a run when run_args): its first line, "listening PORT" or an errno. */
static bool server(struct ktest_proc *p, const char *const *run_args, const char *addr, const char *port, char *first,
		   size_t len)
{
	const char *cmd[] = {np(), "serve", addr, port, NULL};
	char *const *argv = run_args ? pu_argv(run_args, cmd) : (char *const *)cmd;

	first[0] = 0;
	if (ktest_spawn(argv, -1, p) != 0)
		return false;
	return ktest_read_line(p->out, first, len, 60000);
}

static int server_stop(struct ktest_proc *p)
{
	int code;

	ktest_close_stdin(p);
	code = ktest_wait(p, 30000);
	ktest_proc_close(p);
	return code;
}

struct lcase {
	const char *what;
	const char *args[6];
	const char *hook; /* the event's hook, NULL when the run may do it */
};

/* Each works outside; in a "listen": false run, each is refused (net.bind.denied) unless hook is NULL. */
static const struct lcase cases[] = {
	{"TCP bind 0.0.0.0:9100", {"bind", "0.0.0.0", "9100", "tcp"}, "bind4"},
	{"TCP bind [::]:9100", {"bind", "::", "9100", "tcp"}, "bind6"},
	{"TCP bind the host's own 198.51.100.1:9100", {"bind", "198.51.100.1", "9100", "tcp"}, "bind4"},
	{"TCP bind [::ffff:0.0.0.0]:9100 (v4-mapped)", {"bind", "::ffff:0.0.0.0", "9100", "tcp"}, "bind6"},
	{"UDP bind 0.0.0.0:9100", {"bind", "0.0.0.0", "9100", "udp"}, "bind4"},
	{"UDP bind [::]:9100", {"bind", "::", "9100", "udp"}, "bind6"},
	{"listen after bind 0.0.0.0:0", {"listen", "0.0.0.0", "0"}, "socket_listen"},
	{"listen after bind [::]:0", {"listen", "::", "0"}, "socket_listen"},
	{"listen without bind (autobind), IPv4", {"listen", "0.0.0.0", "-"}, "socket_listen"},
	{"listen without bind (autobind), IPv6", {"listen", "::", "-"}, "socket_listen"},
	{"listen on a chosen port", {"listen", "::", "9101"}, "bind6"},
	/* clients bind to port 0: fine */
	{"TCP bind 0.0.0.0:0 (ephemeral)", {"bind", "0.0.0.0", "0", "tcp"}, NULL},
	{"UDP bind [::]:0 (ephemeral)", {"bind", "::", "0", "udp"}, NULL},
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

KTEST(inbound_listen_false_launched)
{
	static struct ktest_result r;
	static const char *const profiles[] = {"net-only", "read", "workspace-write"};
	struct ifix f;
	json_t *ev;

	if (!setup(&f))
		return;
	for (size_t i = 0; i < NCASES; i++) {
		char what[160];

		snprintf(what, sizeof(what), "control: %s", cases[i].what);
		ASSERT_STREQ(outside(&r, cases[i].args), "ok", what);
	}
	ktest_events();
	for (size_t i = 0; i < NCASES; i++) {
		char what[160];

		snprintf(what, sizeof(what), "listen:false: %s", cases[i].what);
		in_run(&r, ARGS("--policy", f.nolisten), cases[i].args);
		ASSERT_STREQ(r.out, cases[i].hook ? "EPERM" : "ok", what);
		if (cases[i].hook)
			ASSERT_CONTAINS(r.err, "net.bind.denied", what);
		/* a policy that grants egress but may not listen: the same */
		snprintf(what, sizeof(what), "listen:false with grants: %s", cases[i].what);
		in_run(&r, ARGS("--policy", f.grants), cases[i].args);
		ASSERT_STREQ(r.out, cases[i].hook ? "EPERM" : "ok", what);
	}
	ev = ktest_events();
	ASSERT_TRUE(ktest_find_event(ev, "bind4", "net.bind.denied", NULL) != NULL, "event: bind4 net.bind.denied");
	ASSERT_TRUE(ktest_find_event(ev, "bind6", "net.bind.denied", NULL) != NULL, "event: bind6 net.bind.denied");
	ASSERT_TRUE(ktest_find_event(ev, "socket_listen", "net.bind.denied", NULL) != NULL,
		    "event: socket_listen net.bind.denied");
	json_decref(ev);

	/* the built-in profiles say "listen": false */
	for (size_t p = 0; p < sizeof(profiles) / sizeof(profiles[0]); p++) {
		char what[160];

		for (size_t i = 0; i < NCASES; i++) {
			snprintf(what, sizeof(what), "--profile %s: %s", profiles[p], cases[i].what);
			in_run(&r, ARGS("--profile", profiles[p], "--workspace", f.d.ws), cases[i].args);
			ASSERT_STREQ(r.out, cases[i].hook ? "EPERM" : "ok", what);
		}
	}
	/* listening on a unix socket is no inet listener: fine */
	in_run(&r, ARGS("--policy", f.nolisten), ARGS("socket", "1", "1", "0"));
	ASSERT_STREQ(r.out, "ok", "listen:false: a unix socket");
}

/* A peer in far never gets a connection to a run that may not listen accepted. */
KTEST(inbound_listen_false_peer_cannot_connect)
{
	static struct ktest_result r;
	struct ifix f;
	struct ktest_proc s;
	char first[128];

	if (!setup(&f))
		return;
	/* control: outside any run, far reaches a server in near and exchanges data */
	if (!ASSERT_TRUE(server(&s, NULL, "::", "9110", first, sizeof(first)), "control server"))
		return;
	ASSERT_STREQ(first, "listening 9110", "control: listening");
	ASSERT_STREQ(peer(&r, true, "198.51.100.1", "9110"), "ok", "control: far connects over IPv4 and is answered");
	ASSERT_STREQ(peer(&r, true, "2001:db8:1::1", "9110"), "ok", "control: far connects over IPv6");
	server_stop(&s);

	for (int v6 = 0; v6 < 2; v6++) {
		const char *any = v6 ? "::" : "0.0.0.0";
		const char *modes[] = {"9111", "0", "-"};

		for (size_t m = 0; m < 3; m++) {
			char what[160];

			if (!ASSERT_TRUE(server(&s, ARGS("--policy", f.nolisten), any, modes[m], first, sizeof(first)),
					 "server in a listen:false run"))
				continue;
			snprintf(what, sizeof(what), "listen:false: serve %s port %s", any, modes[m]);
			ASSERT_STREQ(first, "EPERM", what);
			server_stop(&s);
		}
		/* the chosen port never listened: far's connection is refused by the kernel, not accepted */
		ASSERT_STREQ(peer(&r, true, v6 ? "2001:db8:1::1" : "198.51.100.1", "9111"), "ECONNREFUSED",
			     v6 ? "far over IPv6: nothing listens" : "far over IPv4: nothing listens");
	}
	/* the built-in profile */
	if (ASSERT_TRUE(server(&s, ARGS("--profile", "net-only"), "::", "9112", first, sizeof(first)), "net-only server")) {
		ASSERT_STREQ(first, "EPERM", "--profile net-only: serve");
		server_stop(&s);
	}
	ASSERT_STREQ(peer(&r, true, "198.51.100.1", "9112"), "ECONNREFUSED", "net-only: nothing listens");
}

/* Ordinary workload: a policy with "listen": true runs a server that peers use. */
KTEST(inbound_listen_true_serves)
{
	static struct ktest_result r;
	struct ifix f;
	struct ktest_proc s;
	char first[128], line[256];

	if (!setup(&f))
		return;
	if (!ASSERT_TRUE(server(&s, ARGS("--policy", f.listen), "::", "9120", first, sizeof(first)), "server in a run"))
		return;
	ASSERT_STREQ(first, "listening 9120", "listen:true: listening on a chosen port");
	ASSERT_STREQ(peer(&r, true, "198.51.100.1", "9120"), "ok", "far connects over IPv4 and is answered");
	ASSERT_TRUE(ktest_read_line(s.out, line, sizeof(line), 30000), "served line");
	ASSERT_STREQ(line, "served 203.0.113.10", "the run served far");
	ASSERT_STREQ(peer(&r, true, "2001:db8:1::1", "9120"), "ok", "far connects over IPv6");
	ASSERT_TRUE(ktest_read_line(s.out, line, sizeof(line), 30000), "served line");
	ASSERT_STREQ(line, "served 2001:db8::10", "the run served far over IPv6");
	ASSERT_STREQ(peer(&r, false, "127.0.0.1", "9120"), "ok", "a local client");
	ASSERT_EQ(server_stop(&s), 0, "the run ends");

	/* an ephemeral listener and autobind too */
	if (ASSERT_TRUE(server(&s, ARGS("--policy", f.listen), "0.0.0.0", "0", first, sizeof(first)), "bind(0) server")) {
		int port = 0;
		char ps[16];

		ASSERT_EQ(sscanf(first, "listening %d", &port), 1, "listen:true: listening after bind(0)");
		snprintf(ps, sizeof(ps), "%d", port);
		ASSERT_STREQ(peer(&r, true, "198.51.100.1", ps), "ok", "far reaches the ephemeral listener");
		server_stop(&s);
	}
	if (ASSERT_TRUE(server(&s, ARGS("--policy", f.listen), "::", "-", first, sizeof(first)), "autobind server")) {
		int port = 0;
		char ps[16];

		ASSERT_EQ(sscanf(first, "listening %d", &port), 1, "listen:true: listening after autobind");
		snprintf(ps, sizeof(ps), "%d", port);
		ASSERT_STREQ(peer(&r, true, "2001:db8:1::1", ps), "ok", "far reaches the autobound listener");
		server_stop(&s);
	}
	for (size_t i = 0; i < NCASES; i++) {
		char what[160];

		snprintf(what, sizeof(what), "listen:true: %s", cases[i].what);
		ASSERT_STREQ(in_run(&r, ARGS("--policy", f.listen), cases[i].args), "ok", what);
	}
}

/*
 * SO_REUSEPORT: a process joining the port of a host service's listener
 * (same uid) takes a share of its connections. Binding a chosen port is
 * refused first, for an attached root too.
 */
KTEST(inbound_reuseport_steal)
{
	static struct ktest_result r;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(9130)};
	struct ifix f;
	struct ktest_proc t;
	unsigned long addr;
	int pid = 0, on = 1, l;

	if (!setup(&f))
		return;
	/* the host's service: root, listening on 9130 with SO_REUSEPORT */
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (!ASSERT_TRUE(l >= 0 && setsockopt(l, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) == 0 &&
				 bind(l, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(l, 16) == 0,
			 "host service on 9130"))
		return;
	/* control: another root process outside joins the port */
	ASSERT_STREQ(outside(&r, ARGS("bind", "0.0.0.0", "9130", "tcp", "reuseport")), "ok", "control: reuseport bind");
	char *argv[] = {(char *)ktest_custode(), "run", "--policy", f.nolisten, "--", (char *)ktest_helper("pprobe"),
			"target", NULL};
	if (!ASSERT_TRUE(pu_target(argv, -1, &t, &pid, &addr), "a run to move into"))
		return;
	ASSERT_STREQ(moved_in(pid, ARGS("bind", "0.0.0.0", "9130", "tcp", "reuseport")), "EPERM",
		     "attached root: reuseport bind to the host's port");
	ASSERT_STREQ(moved_in(pid, ARGS("bind", "0.0.0.0", "9130", "udp", "reuseport")), "EPERM",
		     "attached root: UDP reuseport bind");
	pu_stop(&t);
	/* launched (the run's uid is not the service's: the kernel would say EADDRINUSE; custode refuses first) */
	in_run(&r, ARGS("--policy", f.nolisten), ARGS("bind", "0.0.0.0", "9130", "tcp", "reuseport"));
	ASSERT_STREQ(r.out, "EPERM", "listen:false: reuseport bind to the host's port");
	ASSERT_CONTAINS(r.err, "net.bind.denied", "reason");
	close(l);
}

/* An attached root process (every capability, no seccomp filter) in a run that may not listen. */
KTEST(inbound_listen_false_attached_root)
{
	static struct ktest_result r;
	struct ifix f;
	struct ktest_proc t;
	char receipt[400], uring[64];
	unsigned long addr;
	int pid = 0, denied = 0;
	json_t *rc;

	if (!setup(&f))
		return;
	snprintf(receipt, sizeof(receipt), "%s/receipt.json", f.d.root);
	outside(&r, ARGS("uring-listen", "::", "0"));
	snprintf(uring, sizeof(uring), "%s", r.out);
	ktest_log("io_uring bind+listen outside a run: %s", uring);
	ASSERT_TRUE(!strcmp(uring, "ok") || !strcmp(uring, "bind EINVAL"),
		    "control: io_uring bind and listen work, or this kernel has no such operations");
	ASSERT_STREQ(outside(&r, ARGS("bind", "0.0.0.0", "80", "tcp")), "ok", "control: root binds port 80");

	char *argv[] = {(char *)ktest_custode(), "run", "--policy", f.nolisten, "--receipt", receipt, "--",
			(char *)ktest_helper("pprobe"), "target", NULL};
	if (!ASSERT_TRUE(pu_target(argv, -1, &t, &pid, &addr), "a run to move into"))
		return;
	for (size_t i = 0; i < NCASES; i++) {
		char what[160];

		snprintf(what, sizeof(what), "attached root: %s", cases[i].what);
		ASSERT_STREQ(moved_in(pid, cases[i].args), cases[i].hook ? "EPERM" : "ok", what);
		denied += cases[i].hook != NULL;
	}
	ASSERT_STREQ(moved_in(pid, ARGS("bind", "0.0.0.0", "80", "tcp")), "EPERM", "attached root: port 80");
	denied++;
	if (!strcmp(uring, "ok")) {
		/* a ring made before the move: IORING_OP_BIND to port 0, then IORING_OP_LISTEN */
		ASSERT_STREQ(moved_in(pid, ARGS("uring-listen", "::", "0")), "listen EPERM",
			     "attached root: io_uring listen");
		ASSERT_STREQ(moved_in(pid, ARGS("uring-listen", "::", "9140")), "bind EPERM",
			     "attached root: io_uring bind to a chosen port");
		denied += 2;
	} else {
		ASSERT_TRUE(strcmp(moved_in(pid, ARGS("uring-listen", "::", "0")), "ok") != 0, "attached root: io_uring");
	}
	/* a serve attempt, and far finds nothing listening */
	ASSERT_STREQ(moved_in(pid, ARGS("serve", "::", "9141")), "EPERM", "attached root: serve");
	denied++;
	ASSERT_STREQ(peer(&r, true, "198.51.100.1", "9141"), "ECONNREFUSED", "far: nothing listens");
	ASSERT_EQ(pu_stop(&t), 0, "run ends");
	rc = pu_load_json(receipt);
	ASSERT_EQ(pu_denials(rc, "net.bind.denied"), denied, "each counted in the receipt");
	json_decref(rc);
}
