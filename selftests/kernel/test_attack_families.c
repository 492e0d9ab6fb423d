// SPDX-License-Identifier: Apache-2.0
/*
 * Attached root and socket families (issue 13, docs/bypass-catalogue.md
 * "Attached root"). A launched run's seccomp filter allows unix, inet,
 * inet6 and rtnetlink sockets only; a root process moved into a run's
 * cgroup has no such filter and every capability, so packet sockets (raw
 * frames on every interface), the other netlink families (audit, uevents,
 * sock_diag: every socket of the host, netfilter, xfrm...), AF_ALG, AF_KEY,
 * vsock, XDP, CAN and whatever else the kernel offers were all open to it.
 * The process class's socket_create refuses every other family for every
 * run (net.socket.denied, with the family and protocol in the event).
 * Each family is shown working for root outside any run first (families
 * this kernel lacks, EAFNOSUPPORT and the like, are logged and not counted;
 * AF_PACKET and a netlink family other than route must work). Probe:
 * helpers/netprobe.c ("socket FAM TYPE PROTO").
 */
#include <unistd.h>

#include "procutil.h"

#define NET_ONLY POLICY("families-net", "{\"network\":{\"egress\":[]}}")

static const char *outside(const char *fam, const char *type, const char *proto)
{
	static struct ktest_result r;
	char *argv[] = {(char *)ktest_helper("netprobe"), "socket", (char *)fam, (char *)type, (char *)proto, NULL};

	ktest_run(argv, -1, 30000, &r);
	r.out[strcspn(r.out, "\n")] = 0;
	return r.out;
}

static json_t *socket_event(json_t *arr, int family, int protocol)
{
	size_t i;
	json_t *e;

	json_array_foreach(arr, i, e) {
		json_t *t = json_object_get(e, "task");

		if (!strcmp(json_string_value(json_object_get(e, "hook")) ?: "", "socket_create") &&
		    !strcmp(json_string_value(json_object_get(e, "reason")) ?: "", "net.socket.denied") &&
		    json_integer_value(json_object_get(t, "family")) == family &&
		    json_integer_value(json_object_get(t, "protocol")) == protocol)
			return e;
	}
	return NULL;
}

KTEST(attack_families_attached_root)
{
	static const struct {
		const char *name, *fam, *type, *proto;
		bool must; /* the guest's kernels have it: the control must work */
	} fams[] = {
		{"AF_PACKET raw", "17", "3", "768", true}, /* htons(ETH_P_ALL) */
		{"AF_PACKET dgram", "17", "2", "0", true},
		{"AF_PACKET SOCK_PACKET", "17", "10", "768", false},
		{"NETLINK_AUDIT", "16", "3", "9", true},
		{"NETLINK_KOBJECT_UEVENT", "16", "2", "15", true},
		{"NETLINK_SOCK_DIAG", "16", "3", "4", true},
		{"NETLINK_GENERIC", "16", "3", "16", true},
		{"NETLINK_NETFILTER", "16", "3", "12", false},
		{"NETLINK_XFRM", "16", "3", "6", false},
		{"NETLINK_FIB_LOOKUP", "16", "3", "10", false},
		{"NETLINK_CONNECTOR", "16", "3", "11", false},
		{"NETLINK_SELINUX", "16", "3", "7", false},
		{"AF_ALG", "38", "5", "0", false},
		{"AF_KEY", "15", "3", "2", false}, /* PF_KEY_V2 */
		{"AF_VSOCK stream", "40", "1", "0", false},
		{"AF_VSOCK dgram", "40", "2", "0", false},
		{"AF_XDP", "44", "3", "0", false},
		{"AF_CAN raw", "29", "3", "1", false},
		{"AF_CAN bcm", "29", "2", "2", false},
		{"AF_TIPC", "30", "4", "0", false},
		{"AF_RDS", "21", "5", "0", false},
		{"AF_BLUETOOTH", "31", "3", "1", false}, /* HCI */
		{"AF_LLC", "26", "2", "0", false},
		{"AF_PPPOX", "24", "1", "0", false},
		{"AF_SMC", "43", "1", "0", false},
		{"AF_QIPCRTR", "42", "2", "0", false},
		{"AF_X25", "9", "5", "0", false},
		{"AF_APPLETALK", "5", "2", "0", false},
		{"AF_ATMPVC", "8", "2", "0", false},
		{"AF_PHONET", "35", "2", "0", false},
		{"AF_IEEE802154", "36", "3", "0", false},
		{"AF_MCTP", "45", "2", "0", false},
		{"AF_NFC", "39", "5", "1", false},
		{"AF_RXRPC", "33", "2", "2", false},
		{"AF_KCM", "41", "2", "0", false},
		{"AF_AX25", "3", "2", "0", false},
		{"AF_NETROM", "6", "5", "0", false},
		{"AF_ROSE", "11", "5", "0", false},
		{"AF_IUCV", "32", "1", "0", false},
		{"AF_CAIF", "37", "5", "0", false},
		{"AF_IB", "27", "1", "0", false},
	};
	/* what a workload needs keeps working, for the attached root too */
	static const struct {
		const char *name, *fam, *type, *proto;
	} ordinary[] = {
		{"AF_INET stream", "2", "1", "0"},  {"AF_INET dgram", "2", "2", "0"},    {"AF_INET6 stream", "10", "1", "0"},
		{"AF_INET6 dgram", "10", "2", "0"}, {"AF_UNIX stream", "1", "1", "0"},   {"AF_UNIX dgram", "1", "2", "0"},
		{"AF_UNIX seqpacket", "1", "5", "0"}, {"NETLINK_ROUTE", "16", "3", "0"},
	};
	static struct ktest_result r;
	struct ktest_dirs d;
	struct ktest_proc t;
	unsigned long addr;
	const char *pol, *out;
	int pid = 0, tested = 0, absent = 0;
	json_t *ev;
	char what[160], names[1024] = "";

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	pol = pu_policy(d.root, "net", NET_ONLY);
	if (!ASSERT_TRUE(pu_run_target(pol, &t, &pid, &addr), "a run to move into"))
		return;
	for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
		out = outside(fams[i].fam, fams[i].type, fams[i].proto);
		if (strcmp(out, "ok")) {
			snprintf(what, sizeof(what), "control: %s as root outside any run", fams[i].name);
			if (fams[i].must) {
				ASSERT_STREQ(out, "ok", what);
			} else {
				ktest_log("%s: %s outside any run: not on this kernel, not counted", fams[i].name, out);
				absent++;
			}
			continue;
		}
		tested++;
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", tested > 1 ? ", " : "", fams[i].name);
		ktest_events();
		snprintf(what, sizeof(what), "%s from a root process attached to a run", fams[i].name);
		ASSERT_STREQ(pu_moved_in(ktest_helper("netprobe"), pid, ARGS("socket", fams[i].fam, fams[i].type, fams[i].proto)),
			     "EPERM", what);
		ev = ktest_events();
		snprintf(what, sizeof(what), "event: socket_create net.socket.denied for %s", fams[i].name);
		ASSERT_TRUE(socket_event(ev, atoi(fams[i].fam), atoi(fams[i].proto)) != NULL, what);
		json_decref(ev);
	}
	ktest_log("%d families refused in the run after a working control (%s), %d not on this kernel", tested, names,
		  absent);
	ASSERT_TRUE(tested >= 6, "enough families had a working control");
	for (size_t i = 0; i < sizeof(ordinary) / sizeof(ordinary[0]); i++) {
		snprintf(what, sizeof(what), "ordinary: %s from a root process attached to a run", ordinary[i].name);
		ASSERT_STREQ(pu_moved_in(ktest_helper("netprobe"), pid,
					 ARGS("socket", ordinary[i].fam, ordinary[i].type, ordinary[i].proto)),
			     "ok", what);
	}
	ASSERT_STREQ(pu_moved_in(ktest_helper("netprobe"), pid, ARGS("rtnl-dump")), "ok",
		     "ordinary: an rtnetlink address dump attached to a run");
	ASSERT_EQ(pu_stop(&t), 0, "the run ends");

	/* the same in a launched run (the seccomp filter and the hook both refuse): still EPERM, ordinary still ok */
	ktest_run(pu_argv(ARGS("--policy", pol), ARGS(ktest_helper("netprobe"), "socket", "17", "3", "768")), -1, 120000, &r);
	ASSERT_STREQ(r.out, "EPERM\n", "AF_PACKET in a launched run");
	ktest_run(pu_argv(ARGS("--policy", pol), ARGS(ktest_helper("netprobe"), "socket", "16", "3", "9")), -1, 120000, &r);
	ASSERT_STREQ(r.out, "EPERM\n", "NETLINK_AUDIT in a launched run");
	ktest_run(pu_argv(ARGS("--policy", pol), ARGS(ktest_helper("netprobe"), "rtnl-dump")), -1, 120000, &r);
	ASSERT_STREQ(r.out, "ok\n", "rtnetlink in a launched run");
}
