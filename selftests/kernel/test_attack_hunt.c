// SPDX-License-Identifier: Apache-2.0
/*
 * Ways out of a run that a hunt beyond the examples found (issue 13
 * classes: host IPC, attached root), each with a control that works outside
 * any run, then refused inside with its reason:
 * - a host daemon's abstract unix socket (unix.abstract.denied, every live
 *   run whatever its policy);
 * - the kernel's knobs (core_pattern, sysrq-trigger, sysfs) from attached
 *   root in a run without a file section (file.kernel.denied);
 * - /proc/PID files of host processes that act on them (oom_score_adj,
 *   coredump_filter, clear_refs: file.proc.denied);
 * - fanotify permission events and mount-wide marks from attached root
 *   (host processes' opens held and refused by the run: process.kernel.denied);
 * - attached root reconfiguring the host's network (CAP_NET_ADMIN refused
 *   to every live run: process.kernel.denied).
 */
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <dirent.h>

#include "ipcutil.h"

#define PROC_NONE POLICY("hunt-proc", "{\"process\":{}}")

/* Every event of process tgid (0: all), logged */
static void log_events(int tgid)
{
	json_t *ev = ktest_events(), *e;
	size_t i;

	json_array_foreach(ev, i, e) {
		if (tgid && json_integer_value(json_object_get(e, "tgid")) != tgid)
			continue;
		ktest_log("  event: hook %s reason %s", json_string_value(json_object_get(e, "hook")),
			  json_string_value(json_object_get(e, "reason")));
	}
	json_decref(ev);
}

/* huntprobe ARGS as uid (-1 root), outside any run: first line */
static const char *hp_host(struct ktest_result *r, int uid, const char *const *args)
{
	const char *cmd[24];
	int n = 0;

	cmd[n++] = ktest_helper("huntprobe");
	for (; *args && n < 23; args++)
		cmd[n++] = *args;
	cmd[n] = NULL;
	ktest_run((char *const *)cmd, uid, 60000, r);
	return ip_out(r);
}

static const char *hp_run(struct ktest_result *r, const char *const *run_args, const char *const *args)
{
	const char *cmd[24];
	int n = 0;

	cmd[n++] = ktest_helper("huntprobe");
	for (; *args && n < 23; args++)
		cmd[n++] = *args;
	cmd[n] = NULL;
	ktest_run(pu_argv(run_args, cmd), -1, 120000, r);
	return ip_out(r);
}

/* "huntprobe serve" as uid, moved into run_pid's run (ip_ask/ip_serve_end work on it) */
static bool hp_serve_in(struct ip_srv *s, int uid, int run_pid)
{
	return ip_serve_probe(s, "huntprobe", uid) && ip_attach(s, run_pid);
}

/*
 * An abstract unix socket of a host daemon (same uid). The file class
 * refuses abstract sockets not made in the run (unix.abstract.denied), but
 * only for runs with a file section: a run with only a process section (the
 * host IPC class) or net-only reaches it.
 */
KTEST(hunt_abstract_unix_host_listener)
{
	static struct ktest_result r;
	char *argv[] = {(char *)ktest_helper("huntprobe"), "abstract-serve", NULL, NULL};
	char name[64], line[160];
	struct ktest_proc srv;
	struct ktest_dirs d;
	const char *pol, *got;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	pol = pu_policy(d.root, "proc", PROC_NONE);
	ip_warm(pol);
	snprintf(name, sizeof(name), "hunt-daemon-%d", (int)getpid());
	argv[2] = name;
	if (!ASSERT_EQ(ktest_spawn(argv, NOBODY, &srv), 0, "host daemon") ||
	    !ASSERT_TRUE(ktest_read_line(srv.out, line, sizeof(line), 30000) && !strncmp(line, "ready", 5), "ready"))
		return;
	ASSERT_STREQ(hp_host(&r, NOBODY, ARGS("abstract-send", name, "control")), "ok", "control: connect outside");
	ASSERT_TRUE(ktest_read_line(srv.out, line, sizeof(line), 10000) && !strcmp(line, "got control"), "control: received");

	got = hp_run(&r, ARGS("--profile", "read", "--workspace", d.ws), ARGS("abstract-send", name, "from-read"));
	ktest_log("read profile: %s (%s)", got, strstr(r.err, "unix.abstract.denied") ? "unix.abstract.denied" : r.err);
	ASSERT_TRUE(strcmp(got, "ok") != 0, "read profile: refused");

	got = hp_run(&r, ARGS("--profile", "net-only"), ARGS("abstract-send", name, "from-net-only"));
	ktest_log("net-only: %s", got);
	if (!strcmp(got, "ok") && ktest_read_line(srv.out, line, sizeof(line), 10000))
		ktest_log("host daemon: %s", line);
	ASSERT_TRUE(strcmp(got, "ok") != 0, "net-only: a host daemon's abstract socket refused");
	ASSERT_CONTAINS(r.err, "unix.abstract.denied=", "net-only: counted as unix.abstract.denied");

	got = hp_run(&r, ARGS("--policy", pol), ARGS("abstract-send", name, "from-process-policy"));
	ktest_log("{process:{}}: %s", got);
	if (!strcmp(got, "ok") && ktest_read_line(srv.out, line, sizeof(line), 10000))
		ktest_log("host daemon: %s", line);
	ASSERT_TRUE(strcmp(got, "ok") != 0, "process policy: a host daemon's abstract socket refused");
	ASSERT_CONTAINS(r.err, "unix.abstract.denied=", "process policy: counted as unix.abstract.denied");
	ktest_close_stdin(&srv);
	ktest_wait(&srv, 10000);
	ktest_proc_close(&srv);
}

/*
 * Root attached to a run with an egress policy keeps CAP_NET_ADMIN, and
 * NETLINK_ROUTE stays allowed: it can reconfigure the host's network. A
 * "local" route for a granted (ordinary) address makes connections to it
 * land on the host's own listeners: the host-address class only knows
 * addresses (RTM_NEWADDR), and 127.0.0.1 stays denied.
 */
KTEST(hunt_attached_root_local_route)
{
	static struct ktest_result r;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(8085)};
	struct ip_target run = {0};
	struct ip_srv root = {0};
	struct ktest_dirs d;
	const char *pol, *got;
	int l, on = 1;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs") || !ASSERT_TRUE(ktest_netns(), "network namespaces"))
		return;
	pol = pu_policy(d.root, "net",
			POLICY("hunt-net", "{\"network\":{\"egress\":[{\"cidr\":\"203.0.113.0/24\",\"ports\":[8085]}]},"
					   "\"process\":{}}"));
	ip_warm(pol);
	/* a local service of the host (near namespace) on every address, port 8085; far has none there */
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	if (!ASSERT_TRUE(l >= 0 && bind(l, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(l, 64) == 0, "local service"))
		return;
	/* control: root outside */
	ASSERT_STREQ(hp_host(&r, -1, ARGS("connect", "127.0.0.1", "8085")), "ok", "control: the local service");
	got = hp_host(&r, -1, ARGS("connect", "203.0.113.77", "8085"));
	ASSERT_TRUE(strcmp(got, "ok") != 0, "control: 203.0.113.77 is no one");
	ASSERT_STREQ(hp_host(&r, -1, ARGS("sh", "ip", "route", "add", "local", "203.0.113.77/32", "dev", "lo")), "ok",
		     "control: a local route");
	ASSERT_STREQ(hp_host(&r, -1, ARGS("connect", "203.0.113.77", "8085")), "ok", "control: it reaches the local service");
	hp_host(&r, -1, ARGS("sh", "ip", "route", "del", "local", "203.0.113.77/32", "dev", "lo"));

	/* launched: loopback denied, the route can't be added */
	got = hp_run(&r, ARGS("--policy", pol), ARGS("connect", "127.0.0.1", "8085"));
	ktest_log("launched: 127.0.0.1:8085 -> %s", got);
	ASSERT_STREQ(got, "EPERM", "launched: loopback refused");
	got = hp_run(&r, ARGS("--policy", pol), ARGS("sh", "ip", "route", "add", "local", "203.0.113.77/32", "dev", "lo"));
	ktest_log("launched: ip route add local -> %s", got);
	ASSERT_TRUE(strcmp(got, "ok") != 0, "launched: no route change");

	if (!ASSERT_TRUE(ip_run_target(&run, ARGS("--policy", pol), ARGS("target")), "a run") ||
	    !ASSERT_TRUE(hp_serve_in(&root, -1, run.pid), "root attached"))
		goto out;
	got = ip_ask(&root, "connect 127.0.0.1 8085");
	ktest_log("attached root: 127.0.0.1:8085 -> %s", got);
	ASSERT_STREQ(got, "EPERM", "attached root: loopback refused");
	ktest_events();
	got = ip_ask(&root, "sh ip route add local 203.0.113.77/32 dev lo");
	ktest_log("attached root: ip route add local -> %s", got);
	ASSERT_TRUE(strcmp(got, "ok") != 0, "attached root: route change refused");
	{
		json_t *ev = ktest_events();

		ASSERT_TRUE(ktest_find_event(ev, "capable", "process.kernel.denied", NULL) != NULL,
			    "event: capable process.kernel.denied (CAP_NET_ADMIN)");
		json_decref(ev);
	}
	got = ip_ask(&root, "connect 203.0.113.77 8085");
	ktest_log("attached root: 203.0.113.77:8085 (granted) -> %s", got);
	ASSERT_TRUE(strcmp(got, "ok") != 0, "attached root: the host's local service not reached");
	log_events(0);
	got = hp_run(&r, ARGS("--policy", pol), ARGS("connect", "203.0.113.77", "8085"));
	ktest_log("launched, after the attached root's route: 203.0.113.77:8085 -> %s", got);
out:
	hp_host(&r, -1, ARGS("sh", "ip", "route", "del", "local", "203.0.113.77/32", "dev", "lo"));
	ip_serve_end(&root);
	ip_target_stop(&run);
	close(l);
}

/* The first line of a file ("" if unreadable) */
static const char *first_line(const char *path)
{
	static char buf[512];
	FILE *f = fopen(path, "r");

	buf[0] = 0;
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = 0;
	return buf;
}

/* Wait (hang detector: 60 s, stretched) until path has a first line */
static const char *wait_line(const char *path)
{
	for (int i = 0; i < ktest_slack(60000) / 50; i++) {
		if (*first_line(path))
			return first_line(path);
		usleep(50000);
	}
	return "";
}

static void restore_core_pattern(const char *saved)
{
	FILE *f = fopen("/proc/sys/kernel/core_pattern", "w");

	if (f) {
		fputs(saved, f);
		fclose(f);
	}
}

/*
 * The kernel's knobs, from root attached to a run with no file section
 * (only a process policy). Control: root outside makes core_pattern a pipe
 * to a program of its own, and a crash runs it as root in the root cgroup,
 * outside every run. Inside: core_pattern, sysrq-trigger and a sysfs
 * attribute are not writable (file.kernel.denied, with its event); reading
 * them still works.
 */
KTEST(hunt_kernel_knobs_attached_root)
{
	static struct ktest_result r;
	static char saved[512], ctl[256], inrun[256];
	struct ip_target run = {0};
	struct ip_srv root = {0};
	struct ktest_dirs d;
	const char *pol, *got;
	json_t *ev;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	snprintf(saved, sizeof(saved), "%s", first_line("/proc/sys/kernel/core_pattern"));
	snprintf(ctl, sizeof(ctl), "%s/core-control", d.root);
	snprintf(inrun, sizeof(inrun), "%s/core-in-run", d.root);
	pol = pu_policy(d.root, "proc", PROC_NONE);
	ip_warm(pol);

	/* control: the escape works outside any run */
	ASSERT_STREQ(hp_host(&r, -1, ARGS("corepat", ctl)), "ok", "control: core_pattern set");
	got = hp_host(&r, -1, ARGS("crash"));
	ktest_log("control: crash -> %s", got);
	got = wait_line(ctl);
	ktest_log("control: core helper wrote \"%s\"", got);
	ASSERT_TRUE(!strncmp(got, "uid=0 ", 6), "control: the kernel ran root's program");
	restore_core_pattern(saved);
	ASSERT_STREQ(hp_host(&r, -1, ARGS("openw", "/sys/class/net/lo/mtu", "65536")), "ok", "control: a sysfs attribute");

	if (!ASSERT_TRUE(ip_run_target(&run, ARGS("--policy", pol), ARGS("target")), "a run") ||
	    !ASSERT_TRUE(hp_serve_in(&root, -1, run.pid), "root attached"))
		goto out;
	ktest_events();
	got = ip_ask(&root, "corepat %s", inrun);
	ktest_log("attached root: core_pattern -> %s", got);
	ASSERT_STREQ(got, "EACCES", "attached root: core_pattern refused");
	ASSERT_STREQ(first_line("/proc/sys/kernel/core_pattern"), saved, "core_pattern unchanged");
	got = ip_ask(&root, "openw /proc/sysrq-trigger x");
	ASSERT_STREQ(got, "EACCES", "attached root: sysrq-trigger refused");
	got = ip_ask(&root, "openw /sys/class/net/lo/mtu 65536");
	ASSERT_STREQ(got, "EACCES", "attached root: a sysfs attribute refused");
	ev = ktest_events();
	ASSERT_TRUE(ktest_find_event(ev, "file_open", "file.kernel.denied", "/proc/sys/kernel/core_pattern") != NULL,
		    "event: file_open file.kernel.denied /proc/sys/kernel/core_pattern");
	ASSERT_TRUE(ktest_find_event(ev, "file_open", "file.kernel.denied", "/proc/sysrq-trigger") != NULL,
		    "event: sysrq-trigger");
	json_decref(ev);
	/* reading stays */
	got = ip_ask(&root, "openr /proc/sys/kernel/core_pattern");
	ASSERT_TRUE(!strncmp(got, "ok ", 3), "attached root: core_pattern still readable");
	got = ip_ask(&root, "crash");
	ktest_log("attached root: crash -> %s", got);
	ASSERT_TRUE(access(inrun, F_OK) != 0, "no program of the run's ran");
out:
	restore_core_pattern(saved);
	ip_serve_end(&root);
	ip_target_stop(&run);
}

/*
 * /proc/PID files of a host process that act on it with no LSM hook of
 * their own: oom_score_adj (raising it makes the process the OOM killer's
 * victim, and its owner may), coredump_filter, clear_refs. (autogroup, its
 * CPU share, is the same kind, but the guest's kernel refuses its writes.) Control: the same uid writes them outside any run. Inside a
 * run with no file section (net-only; root attached to a process-only run):
 * refused (file.proc.denied); the run's own /proc/self files stay writable.
 */
KTEST(hunt_host_proc_writes)
{
	static const char *const files[][2] = {
		{"oom_score_adj", "500"}, {"coredump_filter", "0x33"}, {"clear_refs", "1"}};
	static struct ktest_result r;
	static char path[3][64];
	char *argv[] = {(char *)ktest_helper("huntprobe"), "serve", NULL};
	struct ip_target run = {0};
	struct ip_srv root = {0};
	struct ktest_proc host;
	struct ktest_dirs d;
	char line[64], oom[64];
	const char *pol, *got;
	int hpid = 0;
	json_t *ev;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	pol = pu_policy(d.root, "proc", PROC_NONE);
	ip_warm(pol);
	if (!ASSERT_EQ(ktest_spawn(argv, NOBODY, &host), 0, "a host process") ||
	    !ASSERT_TRUE(ktest_read_line(host.out, line, sizeof(line), 30000) && sscanf(line, "ready %d", &hpid) == 1,
			 "ready"))
		return;
	snprintf(oom, sizeof(oom), "/proc/%d/oom_score_adj", hpid);
	for (int i = 0; i < 3; i++) {
		snprintf(path[i], sizeof(path[i]), "/proc/%d/%s", hpid, files[i][0]);
		ASSERT_STREQ(hp_host(&r, NOBODY, ARGS("openw", path[i], files[i][1])), "ok", files[i][0]);
	}
	ASSERT_STREQ(first_line(oom), "500", "control: the host process's oom_score_adj raised");

	for (int i = 0; i < 3; i++) {
		got = hp_run(&r, ARGS("--profile", "net-only"), ARGS("openw", path[i], "1000"));
		ktest_log("net-only: %s -> %s", files[i][0], got);
		ASSERT_STREQ(got, "EACCES", files[i][0]);
		ASSERT_CONTAINS(r.err, "file.proc.denied=", "net-only: counted as file.proc.denied");
	}
	ASSERT_STREQ(first_line(oom), "500", "net-only: oom_score_adj unchanged");
	ASSERT_STREQ(hp_run(&r, ARGS("--profile", "net-only"), ARGS("openw", "/proc/self/oom_score_adj", "700")), "ok",
		     "net-only: its own oom_score_adj");
	got = hp_run(&r, ARGS("--profile", "net-only"), ARGS("openr", oom));
	ASSERT_TRUE(!strncmp(got, "ok ", 3), "net-only: reading a host process's entry is left to the policy");

	if (!ASSERT_TRUE(ip_run_target(&run, ARGS("--policy", pol), ARGS("target")), "a run") ||
	    !ASSERT_TRUE(hp_serve_in(&root, -1, run.pid), "root attached"))
		goto out;
	ktest_events();
	got = ip_ask(&root, "openw %s 1000", oom);
	ktest_log("attached root: oom_score_adj -> %s", got);
	ASSERT_STREQ(got, "EACCES", "attached root: refused");
	ASSERT_STREQ(first_line(oom), "500", "attached root: oom_score_adj unchanged");
	ev = ktest_events();
	ASSERT_TRUE(ktest_find_event(ev, "file_open", "file.proc.denied", oom) != NULL, "event: file_open file.proc.denied");
	json_decref(ev);
	ASSERT_STREQ(ip_ask(&root, "openw /proc/self/oom_score_adj -100"), "ok", "attached root: its own oom_score_adj");
out:
	ip_serve_end(&root);
	ip_target_stop(&run);
	ktest_close_stdin(&host);
	ktest_wait(&host, 10000);
	ktest_proc_close(&host);
}

/*
 * fanotify from root attached to a run. Control: outside any run, root's
 * FAN_OPEN_PERM mark holds another process's open and refuses it, and a
 * mount-wide mark sees every open on the mount. Inside: both marks refused
 * (path_notify, process.kernel.denied); inotify (an ordinary file watcher)
 * still works.
 */
KTEST(hunt_fanotify_attached_root)
{
	static struct ktest_result r;
	static char file[256];
	struct ip_target run = {0};
	struct ip_srv root = {0};
	struct ktest_dirs d;
	const char *pol, *got;
	json_t *ev;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	snprintf(file, sizeof(file), "%s/watched", d.root);
	if (!ASSERT_TRUE(ktest_write_file(file, "x", 0644), "a file"))
		return;
	pol = pu_policy(d.root, "proc", PROC_NONE);
	ip_warm(pol);
	ASSERT_STREQ(hp_host(&r, -1, ARGS("fanotify-perm", file)), "ok child-open-refused",
		     "control: a permission mark refuses another process's open");
	ASSERT_STREQ(hp_host(&r, -1, ARGS("fanotify-mount", file)), "ok", "control: a mount-wide mark");

	if (!ASSERT_TRUE(ip_run_target(&run, ARGS("--policy", pol), ARGS("target")), "a run") ||
	    !ASSERT_TRUE(hp_serve_in(&root, -1, run.pid), "root attached"))
		goto out;
	ktest_events();
	got = ip_ask(&root, "fanotify-perm %s", file);
	ktest_log("attached root: fanotify-perm -> %s", got);
	ASSERT_TRUE(!strcmp(got, "EPERM") || !strcmp(got, "EACCES"), "attached root: permission mark refused");
	got = ip_ask(&root, "fanotify-mount %s", file);
	ktest_log("attached root: fanotify-mount -> %s", got);
	ASSERT_TRUE(!strcmp(got, "EPERM") || !strcmp(got, "EACCES"), "attached root: mount-wide mark refused");
	ev = ktest_events();
	ASSERT_TRUE(ktest_find_event(ev, "path_notify", "process.kernel.denied", NULL) != NULL,
		    "event: path_notify process.kernel.denied");
	json_decref(ev);
	ASSERT_STREQ(ip_ask(&root, "inotify %s", file), "ok", "attached root: inotify still works");
out:
	ip_serve_end(&root);
	ip_target_stop(&run);
}
