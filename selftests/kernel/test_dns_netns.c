// SPDX-License-Identifier: Apache-2.0
/*
 * DNS for attached containers: a run in a network namespace of its own (a
 * container's, with a veth into the test's namespace, where the daemon, its
 * upstream and a second "direct" upstream live) resolves through the host's
 * one resolver, which listens inside that namespace too (docs/resolver.md,
 * "Runs in other network namespaces"). Controls: before attach, the same
 * queries reach the direct upstream and the same connects succeed.
 *
 *   near (the test's):  custode daemon, dnsd on 127.0.0.1:5300 (its upstream),
 *                       dnsd on 10.77.0.1:53 (the container's resolv.conf), kdn0
 *   container:          10.77.0.2 on a veth, default route via near (which
 *                       forwards to far, ktest_netns's "internet")
 *   far:                203.0.113.10-15 listening on 8080
 */
#include <sched.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/socket.h>

#include "test_dns_fixture.h"
#include "test_daemon_fixture.h"

#define CNAME "10.77.0.1"

/* A container: a process in a network (and mount) namespace of its own, in cgroup cg, running dprobe on request. */
struct box {
	struct ktest_proc p;
	char cg[PATH_MAX];
};

/*
 * The box's process: its own network and mount namespaces (resolv.conf, if
 * given, bind-mounted over /etc/resolv.conf), loopback up, then into cgroup
 * cg; then one request per line: "sh CMD" (system), "squat" (bind UDP port
 * 54 and keep it) or dprobe's arguments; answers: the output, then "END".
 */
static void box_main(const char *cg, const char *resolv, int in, int out)
{
	char line[1024], procs[PATH_MAX + 16], pid[32];
	FILE *fin;
	int fd;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (unshare(CLONE_NEWNET | CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		_exit(90);
	if (resolv) {
		if (access("/etc/resolv.conf", F_OK) < 0 && (fd = open("/etc/resolv.conf", O_CREAT | O_WRONLY, 0644)) >= 0)
			close(fd); /* the guest may have none: a mount point for ours */
		if (mount(resolv, "/etc/resolv.conf", NULL, MS_BIND, NULL) < 0)
			_exit(91);
	}
	if (system("ip link set lo up") != 0)
		_exit(92);
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	fd = open(procs, O_WRONLY);
	if (fd < 0 || write(fd, pid, strlen(pid)) < 0)
		_exit(93);
	close(fd);
	fin = fdopen(in, "r");
	dprintf(out, "ready %d\n", (int)getpid());
	while (fin && fgets(line, sizeof(line), fin)) {
		char *argv[32], *save = NULL, *tok;
		int n = 0, pp[2], st;
		pid_t c;

		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "sh ", 3)) {
			dprintf(out, "rc %d\nEND\n", system(line + 3));
			continue;
		}
		if (!strcmp(line, "squat")) { /* hold UDP 0.0.0.0:54 in this namespace (the resolver's port) */
			struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(54)};
			int s = socket(AF_INET, SOCK_DGRAM, 0);

			dprintf(out, "%s\nEND\n", s >= 0 && bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? "ok" : strerror(errno));
			continue;
		}
		argv[n++] = (char *)ktest_helper("dprobe");
		for (tok = strtok_r(line, " ", &save); tok && n < 31; tok = strtok_r(NULL, " ", &save))
			argv[n++] = tok;
		argv[n] = NULL;
		if (pipe(pp) < 0) {
			dprintf(out, "pipe failed\nEND\n");
			continue;
		}
		c = fork();
		if (c == 0) {
			dup2(pp[1], 1);
			close(pp[0]);
			execv(argv[0], argv);
			_exit(127);
		}
		close(pp[1]);
		for (ssize_t k; (k = read(pp[0], line, sizeof(line))) > 0;)
			(void)!write(out, line, (size_t)k);
		close(pp[0]);
		waitpid(c, &st, 0);
		dprintf(out, "END\n");
	}
	_exit(0);
}

static bool box_start(struct box *b, const char *cg, const char *resolv)
{
	int in[2], out[2];
	char line[128];

	snprintf(b->cg, sizeof(b->cg), "%s", cg);
	b->p.in = b->p.out = b->p.err = -1;
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		return false;
	b->p.pid = fork();
	if (b->p.pid < 0)
		return false;
	if (b->p.pid == 0) {
		int i0 = dup(in[0]), o1 = dup(out[1]); /* without O_CLOEXEC: dprobe children need neither, box_main both */

		box_main(cg, resolv, i0, o1);
	}
	close(in[0]);
	close(out[1]);
	b->p.in = in[1];
	b->p.out = out[0];
	b->p.err = -1;
	return ktest_read_line(b->p.out, line, sizeof(line), 20000) && !strncmp(line, "ready ", 6);
}

/* One request; its output (static buffer, lines joined by '\n'). */
static const char *box_ask(struct box *b, const char *fmt, ...)
{
	static char res[4096];
	char cmd[1024], line[512];
	size_t used = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd) - 1, fmt, ap);
	va_end(ap);
	strcat(cmd, "\n");
	res[0] = 0;
	if (write(b->p.in, cmd, strlen(cmd)) != (ssize_t)strlen(cmd))
		return res;
	while (ktest_read_line(b->p.out, line, sizeof(line), 60000) && strcmp(line, "END"))
		used += (size_t)snprintf(res + used, used < sizeof(res) ? sizeof(res) - used : 0, "%s\n", line);
	return res;
}

static void box_end(struct box *b)
{
	if (b->p.pid > 0)
		df_probe_end(&b->p);
	if (b->cg[0])
		df_cg_remove(b->cg);
}

/* A signed policy: read and exec where dprobe and its libraries live, /etc readable, ok.test on port 8080. */
static bool sign_policy(struct dnsfix *f, char *bundle, size_t len)
{
	struct dfix g;
	char doc[2048], helpers[PATH_MAX];

	memset(&g, 0, sizeof(g));
	g.d = f->d;
	snprintf(helpers, sizeof(helpers), "%s", ktest_helper("dprobe"));
	*strrchr(helpers, '/') = 0;
	snprintf(bundle, len, "%s/dnsns.dsse.json", f->d.root);
	snprintf(doc, sizeof(doc),
		 "{\"schema\":\"custode.policy/v1\",\"name\":\"test/dnsns-%d\",\"version\":1,\"content\":{\"filesystem\":["
		 "{\"path\":\"/usr\",\"allow\":[\"read\",\"exec\"]},{\"path\":\"/bin\",\"allow\":[\"read\",\"exec\"]},"
		 "{\"path\":\"/lib\",\"allow\":[\"read\",\"exec\"]},{\"path\":\"/lib64\",\"allow\":[\"read\",\"exec\"]},"
		 "{\"path\":\"%s\",\"allow\":[\"read\",\"exec\"]},{\"path\":\"/etc\",\"allow\":[\"read\"]}],"
		 "\"network\":{\"egress\":[{\"host\":\"ok.test\",\"ports\":[8080]}]}}}",
		 (int)getpid(), helpers);
	return df_keygen(&g, "key") && df_sign(&g, "key", doc, bundle);
}

/* The daemon with its resolver, trusting the test's key (bundles in ROOT/bundles). */
static bool start_daemon(struct dnsfix *f)
{
	static char dir[400], pub[400];
	const char *extra[] = {"--bundles", dir, "--trust", pub, "--bundle-state", f->d.root, NULL};

	snprintf(dir, sizeof(dir), "%s/bundles", f->d.root);
	snprintf(pub, sizeof(pub), "%s/key.pub", f->d.root);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return false;
	return dns_start_daemon(f, extra);
}

static json_t *attach_bundle(const char *cg, const char *bundle, const char *ws)
{
	return df_call(json_pack("{s:s, s:s, s:s, s:s}", "cmd", "attach", "cgroup", cg, "bundle", bundle, "workspace", ws));
}

static void take_run(json_t *resp, char *rid, const char **served)
{
	const json_t *run = json_object_get(resp, "run");
	const json_t *dns = json_object_get(run, "dns");

	snprintf(rid, 17, "%s", json_string_value(json_object_get(run, "run_id")) ?: "");
	*served = !dns ? "none" : json_is_true(json_object_get(dns, "served")) ? "served" : "unserved";
}

/* Ask until the answer holds `want` (the namespace's first query may wake the resolver): the first answer. */
static const char *ask_until(struct box *b, const char *want, char *first, size_t flen, const char *fmt, const char *arg)
{
	const char *out = "";

	for (int i = 0; i < 100; i++) {
		out = box_ask(b, fmt, arg);
		if (i == 0)
			snprintf(first, flen, "%s", out);
		if (strstr(out, want))
			return out;
		usleep(100000); /* the retry a client does, 100 ms apart (the condition is the answer) */
	}
	return out;
}

KTEST(dns_netns_attached_container)
{
	static struct ktest_result r;
	struct dnsfix f;
	struct box b = {0};
	char cg[PATH_MAX], bundle[400], resolv[400], direct_log[400], direct_out[400], rid[17] = "", cmd[200];
	const char *served = "", *out, *pol;
	int direct = 0, host_before;
	json_t *resp;

	ktest_need_lsm();
	if (!dns_setup_no_daemon(&f))
		return;
	if (!ASSERT_TRUE(sign_policy(&f, bundle, sizeof(bundle)), "a signed policy granting ok.test") ||
	    !ASSERT_TRUE(start_daemon(&f), "daemon with the resolver"))
		goto out;
	snprintf(resolv, sizeof(resolv), "%s/resolv.conf", f.d.root);
	if (!ASSERT_TRUE(ktest_write_file(resolv, "nameserver " CNAME "\noptions attempts:2 timeout:2\n", 0644),
			 "resolv.conf"))
		goto out;
	{
		char mount[PATH_MAX];

		if (!ASSERT_EQ(custode_cgroup2_mount(mount, sizeof(mount)), 0, "cgroup2"))
			goto out;
		snprintf(cg, sizeof(cg), "%s/ktest-dnsns-%d", mount, (int)getpid());
	}
	if (!ASSERT_TRUE(df_cg_make(cg), "the container's cgroup") || !ASSERT_TRUE(box_start(&b, cg, resolv), "container"))
		goto out;

	/* the container's network: a veth into near, routed through near to far and back */
	snprintf(cmd, sizeof(cmd), "ip link add kdn0 type veth && ip link set veth0 netns %d", b.p.pid);
	if (!ASSERT_EQ(system(cmd), 0, "veth into the container") ||
	    !ASSERT_EQ(system("ip addr add " CNAME "/24 dev kdn0 && ip link set kdn0 up && "
			      "echo 1 > /proc/sys/net/ipv4/ip_forward"),
		       0, "near side") ||
	    !ASSERT_TRUE(ktest_far_sh("ip route add 10.77.0.0/24 via 198.51.100.1 dev ktv1"), "far's route back") ||
	    !ASSERT_STREQ(box_ask(&b, "sh ip link set veth0 name eth0 && ip addr add 10.77.0.2/24 dev eth0 && "
				      "ip link set eth0 up && ip route add default via " CNAME),
			  "rc 0\n", "container side"))
		goto out;
	/* the upstream the container's resolv.conf names, reached directly while it is not a run */
	snprintf(direct_log, sizeof(direct_log), "%s/direct.log", f.d.root);
	snprintf(direct_out, sizeof(direct_out), "%s/direct.out", f.d.root);
	{
		char *argv[] = {(char *)ktest_helper("dnsd"), "--addr", CNAME, "--port", "53", "--log", direct_log, NULL};

		direct = kt_bg(argv, direct_out, direct_out);
		if (!ASSERT_TRUE(kt_wait_for(direct_out, "ready", direct, 10000), "direct upstream ready"))
			goto out;
	}
	{
		char first[512];

		out = ask_until(&b, "ok", first, sizeof(first), "connect %s 8080", "203.0.113.11");
		if (!ASSERT_STREQ(out, "ok\n", "control: the container reaches far (an address no one resolved)"))
			goto out;
	}

	/* control: not a run yet, so DNS goes where the container sends it */
	ASSERT_STREQ(box_ask(&b, "gai-connect ok.test 8080"), "ok 203.0.113.10:8080\n", "control: lookup and connect");
	out = box_ask(&b, "query " CNAME " 53 udp other.test A");
	ASSERT_CONTAINS(out, "A 203.0.113.12", "control: a name the policy will deny is answered");
	ASSERT_EQ(dns_count(direct_log, "other.test"), 1, "control: by the container's own upstream");
	host_before = dns_count(f.dnsd_log, "ok.test");

	resp = attach_bundle(cg, bundle, f.d.ws);
	if (!ASSERT_TRUE(resp != NULL, "attach"))
		goto out;
	take_run(resp, rid, &served);
	json_decref(resp);
	ASSERT_STREQ(served, "served", "attach: the resolver listens in the container's namespace");

	/* the allowed name, through the container's resolv.conf, then the connect to the answer */
	ASSERT_STREQ(box_ask(&b, "gai-connect ok.test 8080"), "ok 203.0.113.10:8080\n", "attached: lookup, then connect");
	ASSERT_EQ(dns_count(f.dnsd_log, "ok.test") > host_before, 1, "asked by the host's resolver");
	ASSERT_EQ(dns_count(direct_log, "ok.test"), 1, "not by the container's own upstream (only the control did)");
	out = box_ask(&b, "query " CNAME " 53 udp ok.test A");
	ASSERT_CONTAINS(out, "from " CNAME ":53\n", "the reply comes from the server the container asked");
	ASSERT_CONTAINS(out, "A 203.0.113.10", "answered");
	/* a denied name: refused, never upstream */
	out = box_ask(&b, "query " CNAME " 53 udp other.test A");
	ASSERT_CONTAINS(out, "rcode REFUSED", "a name the policy does not grant");
	ASSERT_EQ(dns_count(direct_log, "other.test"), 1, "the denied name reached no upstream (direct)");
	ASSERT_EQ(dns_count(f.dnsd_log, "other.test"), 0, "the denied name reached no upstream (host's)");
	/* an address nobody resolved for this run */
	ASSERT_STREQ(box_ask(&b, "connect 203.0.113.11 8080"), "EPERM\n", "an unpinned literal address");
	/* TCP DNS too, to a hard-coded server */
	out = box_ask(&b, "query 8.8.8.8 53 tcp ok.test A");
	ASSERT_CONTAINS(out, "A 203.0.113.10", "TCP to 8.8.8.8: answered by the resolver");

	/* no regression: a launched run in the resolver's own namespace */
	pol = dns_policy(&f, "ok", "{\"host\":\"ok.test\",\"ports\":[8080]}", NULL);
	dns_run(&r, pol, NULL, DARGS("gai-connect", "ok.test", "8080"));
	ASSERT_STREQ(r.out, "ok 203.0.113.10:8080\n", "a run in the resolver's own namespace");

	/* a restarted daemon serves the container again, from its first query on */
	kt_stop(&f.daemon, SIGTERM);
	ASSERT_CONTAINS(box_ask(&b, "query " CNAME " 53 udp ok.test A"), "EPERM", "no daemon: DNS denied");
	if (!ASSERT_TRUE(start_daemon(&f), "daemon again"))
		goto out;
	ASSERT_CONTAINS(kt_slurp(f.daemon_log), "adopted 1 registered run", "the attached run adopted");
	out = box_ask(&b, "query " CNAME " 53 udp ok.test A");
	ASSERT_CONTAINS(out, "A 203.0.113.10", "after the restart: served at once");
	ASSERT_STREQ(box_ask(&b, "connect 203.0.113.11 8080"), "EPERM\n", "after the restart: still no unpinned address");
out:
	if (rid[0])
		json_decref(df_call(json_pack("{s:s, s:s}", "cmd", "detach", "run_id", rid)));
	box_end(&b);
	kt_stop(&direct, SIGKILL);
	dns_teardown(&f);
}

/*
 * Two containers at once: one attached with its process running (served at
 * attach), one attached empty whose process arrives later in a namespace of
 * its own (its first DNS is denied and wakes the resolver; the retry is
 * served); before that, it cannot squat the resolver's port there (control:
 * the first binds it before attach). Detaching the second closes the
 * resolver's sockets there; the first keeps its DNS.
 */
KTEST(dns_netns_woken_and_closed)
{
	struct dnsfix f;
	struct box a = {0}, b = {0};
	char mount[PATH_MAX], cga[PATH_MAX], cgb[PATH_MAX], bundle[400], rida[17] = "", ridb[17] = "", first[512];
	const char *served = "", *out;
	json_t *resp;

	ktest_need_lsm();
	if (!dns_setup_no_daemon(&f))
		return;
	if (!ASSERT_TRUE(sign_policy(&f, bundle, sizeof(bundle)), "a signed policy granting ok.test") ||
	    !ASSERT_TRUE(start_daemon(&f), "daemon with the resolver") ||
	    !ASSERT_EQ(custode_cgroup2_mount(mount, sizeof(mount)), 0, "cgroup2"))
		goto out;
	snprintf(cga, sizeof(cga), "%s/ktest-dnsns-a-%d", mount, (int)getpid());
	snprintf(cgb, sizeof(cgb), "%s/ktest-dnsns-b-%d", mount, (int)getpid());
	if (!ASSERT_TRUE(df_cg_make(cga) && df_cg_make(cgb), "cgroups") || !ASSERT_TRUE(box_start(&a, cga, NULL), "container a"))
		goto out;
	/* control: not a run, a may take the resolver's port in its namespace (root there) */
	ASSERT_STREQ(box_ask(&a, "bind 54 udp"), "ok\n", "control: unattached, a binds port 54");
	/* control: not a run, a's DNS to 127.0.0.53 finds nothing in its namespace */
	out = box_ask(&a, "query 127.0.0.53 53 udp ok.test A");
	ASSERT_TRUE(!strstr(out, "A 203.0.113.10"), "control: no answer in a's namespace before attach");

	resp = attach_bundle(cga, bundle, f.d.ws);
	if (!ASSERT_TRUE(resp != NULL, "attach a"))
		goto out;
	take_run(resp, rida, &served);
	json_decref(resp);
	ASSERT_STREQ(served, "served", "a: served at attach");
	resp = attach_bundle(cgb, bundle, f.d.ws);
	if (!ASSERT_TRUE(resp != NULL, "attach b (empty)"))
		goto out;
	take_run(resp, ridb, &served);
	json_decref(resp);
	ASSERT_STREQ(served, "unserved", "b: no process yet, so not served yet (and the answer says so)");

	out = box_ask(&a, "query 127.0.0.53 53 udp ok.test A");
	ASSERT_CONTAINS(out, "A 203.0.113.10", "a: answered by the host's resolver");

	/* b's process arrives in a namespace of its own: its first query wakes the resolver */
	if (!ASSERT_TRUE(box_start(&b, cgb, NULL), "container b"))
		goto out;
	/* before the resolver listens there, b can't squat its port (it would answer its neighbours' queries) */
	ASSERT_STREQ(box_ask(&b, "bind 54 udp"), "EPERM\n", "b: a run may not bind port 54");
	ASSERT_STREQ(box_ask(&b, "bind 54 tcp"), "EPERM\n", "b: nor over TCP");
	out = ask_until(&b, "A 203.0.113.10", first, sizeof(first), "query 127.0.0.53 53 udp %s A", "ok.test");
	ASSERT_STREQ(first, "EPERM\n", "b: the first query is denied (fail closed) and wakes the resolver");
	ASSERT_CONTAINS(out, "A 203.0.113.10", "b: a retry is served");
	ASSERT_CONTAINS(box_ask(&b, "query 127.0.0.53 53 udp other.test A"), "rcode REFUSED", "b: vetting applies");
	ASSERT_CONTAINS(box_ask(&a, "query 127.0.0.53 53 udp ok.test A"), "A 203.0.113.10", "a: still served");
	ASSERT_EQ(dns_count(f.daemon_log, "listening in network namespace"), 2, "two namespaces served");

	/* detach b: the resolver stops listening there; a keeps its DNS */
	json_decref(df_call(json_pack("{s:s, s:s}", "cmd", "detach", "run_id", ridb)));
	ridb[0] = 0;
	ASSERT_TRUE(kt_wait_for(f.daemon_log, "no run left in network namespace", f.daemon, 30000),
		    "b's listeners closed once its run is gone");
	ASSERT_CONTAINS(box_ask(&a, "query 127.0.0.53 53 udp ok.test A"), "A 203.0.113.10", "a: served after b left");
out:
	if (rida[0])
		json_decref(df_call(json_pack("{s:s, s:s}", "cmd", "detach", "run_id", rida)));
	if (ridb[0])
		json_decref(df_call(json_pack("{s:s, s:s}", "cmd", "detach", "run_id", ridb)));
	box_end(&a);
	box_end(&b);
	dns_teardown(&f);
}

/*
 * The resolver can't listen in a container's namespace (its port is taken
 * there, before the attach): the attach says so (dns.netns_unserved), the
 * run's DNS stays denied in the kernel — it never reaches the squatter — and
 * the failure is reported. Control: before attach the same query is sent
 * (no EPERM).
 */
KTEST(dns_netns_unserved_fails_closed)
{
	struct dnsfix f;
	struct box a = {0};
	char mount[PATH_MAX], cg[PATH_MAX], bundle[400], rid[17] = "";
	const char *served = "", *out;
	json_t *resp, *dns;

	ktest_need_lsm();
	if (!dns_setup_no_daemon(&f))
		return;
	if (!ASSERT_TRUE(sign_policy(&f, bundle, sizeof(bundle)), "a signed policy granting ok.test") ||
	    !ASSERT_TRUE(start_daemon(&f), "daemon with the resolver") ||
	    !ASSERT_EQ(custode_cgroup2_mount(mount, sizeof(mount)), 0, "cgroup2"))
		goto out;
	snprintf(cg, sizeof(cg), "%s/ktest-dnsns-u-%d", mount, (int)getpid());
	if (!ASSERT_TRUE(df_cg_make(cg), "cgroup") || !ASSERT_TRUE(box_start(&a, cg, NULL), "container"))
		goto out;
	ASSERT_STREQ(box_ask(&a, "squat"), "ok\n", "the container holds port 54 before the attach");
	/* control: unattached, DNS is not custode's: sent, and refused by nobody but the network (no EPERM) */
	out = box_ask(&a, "query 127.0.0.53 53 udp ok.test A");
	ASSERT_TRUE(!strstr(out, "EPERM"), "control: before attach the query is sent");

	resp = attach_bundle(cg, bundle, f.d.ws);
	if (!ASSERT_TRUE(resp != NULL, "attach"))
		goto out;
	take_run(resp, rid, &served);
	dns = json_object_get(json_object_get(resp, "run"), "dns");
	ASSERT_STREQ(served, "unserved", "the attach says the run's DNS is not served");
	ASSERT_STREQ(json_string_value(json_object_get(dns, "reason")) ?: "", "dns.netns_unserved", "reason");
	ASSERT_CONTAINS(json_string_value(json_object_get(dns, "detail")) ?: "", "taken", "detail: the port is taken");
	json_decref(resp);
	ASSERT_STREQ(box_ask(&a, "query 127.0.0.53 53 udp ok.test A"), "EPERM\n", "the run's DNS is denied");
	ASSERT_STREQ(box_ask(&a, "query 127.0.0.1 54 udp ok.test A"), "EPERM\n",
		     "and never reaches the squatter on the resolver's port");
	ASSERT_TRUE(kt_wait_for(f.daemon_log, "dns.netns_unserved", f.daemon, 30000), "the failure is reported");
out:
	if (rid[0])
		json_decref(df_call(json_pack("{s:s, s:s}", "cmd", "detach", "run_id", rid)));
	box_end(&a);
	dns_teardown(&f);
}
