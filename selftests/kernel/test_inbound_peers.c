// SPDX-License-Identifier: Apache-2.0
/*
 * Inbound peers ("network": {"listen": true, "inbound": [CIDR...]}, issue 13):
 * a run that may serve accepts connections from the listed peers only; every
 * other peer's SYN is dropped in inet_conn_request (net.inbound.denied), so
 * no connection ever reaches the run. Peers: the far namespace's 203.0.113.10
 * (listed) and the near namespace's own 198.51.100.1 (not listed).
 */
#include <stdio.h>
#include <string.h>

#include "ktest.h"

#define POLICY(name, inbound)                                                                               \
	"{\"schema\":\"custode.policy/v1\",\"name\":\"test/" name "\",\"version\":1,\"content\":{\"network\":{" \
	"\"egress\":[],\"listen\":true" inbound "}}}"

/* inprobe connect from the near namespace, or from far */
static const char *client(struct ktest_result *r, bool far, const char *addr, const char *port)
{
	char *argv[] = {(char *)ktest_helper("inprobe"), "connect", (char *)addr, (char *)port, "4000", NULL};

	if (far && !ktest_far_enter())
		return "no far namespace";
	ktest_run(argv, -1, 60000, r);
	if (far)
		ktest_far_leave();
	return r->out;
}

/* A server (in a run when policy is set) on port; waits for "listening". */
static bool server(struct ktest_proc *p, const char *policy, const char *port)
{
	char *in_run[] = {(char *)ktest_custode(), "run", "--policy", (char *)policy, "--", (char *)ktest_helper("inprobe"),
			  "serve", (char *)port, NULL};
	char *outside[] = {(char *)ktest_helper("inprobe"), "serve", (char *)port, NULL};
	char line[256] = "";

	if (ktest_spawn(policy ? in_run : outside, -1, p) != 0)
		return false;
	return ktest_read_line(p->out, line, sizeof(line), 60000) && !strcmp(line, "listening");
}

static bool accepted(struct ktest_proc *p, const char *peer)
{
	char line[256] = "", want[128];

	snprintf(want, sizeof(want), "accepted %s", peer);
	return ktest_read_line(p->out, line, sizeof(line), 30000) && !strcmp(line, want);
}

KTEST(inbound_peers_outside_the_list_never_connect)
{
	static struct ktest_result r;
	static char only_far[600], any[600];
	struct ktest_dirs d;
	struct ktest_proc s;
	const char *p;
	json_t *ev, *e;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs") || !ASSERT_TRUE(ktest_netns(), "network namespaces"))
		return;
	p = ktest_policy_file(d.root, "inb1", POLICY("inb1", ",\"inbound\":[\"203.0.113.0/24\",\"2001:db8::/64\"]"));
	snprintf(only_far, sizeof(only_far), "%s", p ? p : "");
	p = ktest_policy_file(d.root, "inb2", POLICY("inb2", ""));
	snprintf(any, sizeof(any), "%s", p ? p : "");

	/* control: a server outside any run accepts both peers */
	if (!ASSERT_TRUE(server(&s, NULL, "8095"), "control server"))
		return;
	ASSERT_STREQ(client(&r, true, "198.51.100.1", "8095"), "ok\n", "control: the far peer connects");
	ASSERT_TRUE(accepted(&s, "203.0.113.10"), "control: accepted from far");
	ASSERT_STREQ(client(&r, false, "198.51.100.1", "8095"), "ok\n", "control: the near peer connects");
	ASSERT_TRUE(accepted(&s, "198.51.100.1"), "control: accepted from near");
	ktest_close_stdin(&s);
	ktest_wait(&s, 30000);
	ktest_proc_close(&s);

	/* in a run listing only the far network */
	ktest_events();
	if (!ASSERT_TRUE(server(&s, only_far, "8096"), "server in a run"))
		return;
	ASSERT_STREQ(client(&r, true, "198.51.100.1", "8096"), "ok\n", "a listed peer connects");
	ASSERT_TRUE(accepted(&s, "203.0.113.10"), "accepted from the listed peer");
	ASSERT_STREQ(client(&r, false, "198.51.100.1", "8096"), "timeout\n", "an unlisted peer's SYN is dropped");
	ASSERT_STREQ(client(&r, false, "127.0.0.1", "8096"), "timeout\n", "loopback is a peer like any other");
	ASSERT_STREQ(client(&r, false, "2001:db8:1::1", "8096"), "timeout\n", "IPv6 too");
	ASSERT_STREQ(client(&r, true, "2001:db8:1::1", "8096"), "ok\n", "a listed IPv6 peer connects");
	ASSERT_TRUE(accepted(&s, "2001:db8::10"), "accepted from the listed IPv6 peer");
	ktest_close_stdin(&s);
	ASSERT_EQ(ktest_wait(&s, 30000), 0, "the run ends");
	ktest_proc_close(&s);
	ev = ktest_events();
	e = ktest_find_net_event(ev, "net.inbound.denied", "198.51.100.1", 8096);
	if (ASSERT_TRUE(e != NULL, "net.inbound.denied event for the near peer"))
		ASSERT_STREQ(json_string_value(json_object_get(e, "hook")), "inet_conn_request", "hook");
	json_decref(ev);

	/* ordinary workload: a run that may listen, with no inbound list, serves anyone */
	if (!ASSERT_TRUE(server(&s, any, "8097"), "server without a list"))
		return;
	ASSERT_STREQ(client(&r, false, "198.51.100.1", "8097"), "ok\n", "no list: the near peer connects");
	ASSERT_TRUE(accepted(&s, "198.51.100.1"), "accepted");
	ktest_close_stdin(&s);
	ktest_wait(&s, 30000);
	ktest_proc_close(&s);
}
