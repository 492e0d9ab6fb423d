// SPDX-License-Identifier: Apache-2.0
/*
 * The control socket: root only. A non-root peer is kept out twice — by the
 * modes (/run/custode is 0700, the socket 0600) and, should it get past them
 * (CAP_DAC_OVERRIDE), by its SO_PEERCRED uid. Protocol errors are answered,
 * not fatal.
 */
#include <linux/capability.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>

#include "test_daemon_fixture.h"

/*
 * In a child: move into cgroup cg (if not NULL, as root), become uid `uid`,
 * keeping CAP_DAC_OVERRIDE if dac; connect, send `line`, read the answer
 * into a pipe.
 */
static bool send_as(const char *cg, int uid, bool dac, const char *line, char *answer, size_t len)
{
	int pfd[2];
	pid_t pid;
	ssize_t n;

	if (pipe(pfd) < 0)
		return false;
	pid = fork();
	if (pid == 0) {
		struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
		struct __user_cap_data_struct data[2];
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		char buf[4096];
		int s, k = 0;
		ssize_t r;

		close(pfd[0]);
		if (cg) {
			char procs[PATH_MAX + 16], me[32];
			int fd;

			snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
			snprintf(me, sizeof(me), "%d", (int)getpid());
			fd = open(procs, O_WRONLY);
			if (fd < 0 || write(fd, me, strlen(me)) < 0)
				_exit(5);
			close(fd);
		}
		if (uid) {
			prctl(PR_SET_KEEPCAPS, 1);
			if (setgroups(0, NULL) || setgid((gid_t)uid) || setuid((uid_t)uid))
				_exit(3);
			memset(data, 0, sizeof(data));
			if (dac) {
				data[0].effective = data[0].permitted = 1u << CAP_DAC_OVERRIDE;
				if (syscall(SYS_capset, &hdr, data) < 0)
					_exit(4);
			}
		}
		strcpy(sa.sun_path, CUSTODE_CONTROL_SOCKET);
		s = socket(AF_UNIX, SOCK_STREAM, 0);
		if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			k = snprintf(buf, sizeof(buf), "connect: %s", strerror(errno));
			(void)!write(pfd[1], buf, (size_t)k);
			_exit(0);
		}
		signal(SIGPIPE, SIG_IGN);
		(void)!write(s, line, strlen(line));
		shutdown(s, SHUT_WR); /* the daemon answers what it got, then closes */
		while ((r = read(s, buf + k, sizeof(buf) - 1 - (size_t)k)) > 0)
			k += (int)r; /* until the daemon closes */
		(void)!write(pfd[1], buf, (size_t)k);
		_exit(0);
	}
	close(pfd[1]);
	n = read(pfd[0], answer, len - 1);
	answer[n > 0 ? n : 0] = 0;
	close(pfd[0]);
	waitpid(pid, NULL, 0);
	return n > 0;
}

static bool peer_as(int uid, bool dac, const char *line, char *answer, size_t len)
{
	return send_as(NULL, uid, dac, line, answer, len);
}

KTEST(daemon_control_refuses_non_root_peer)
{
	struct dfix f;
	char answer[4096];
	struct ktest_result r;
	json_t *resp;

	if (!df_setup(&f) || !ASSERT_TRUE(df_daemon_start(&f, NULL), "daemon"))
		return;
	/* control: root is answered */
	resp = df_call(json_pack("{s:s, s:i}", "cmd", "ping", "id", 7));
	ASSERT_TRUE(resp && json_is_true(json_object_get(resp, "ok")), "root: ping answered");
	ASSERT_EQ(json_integer_value(json_object_get(resp, "id")), 7, "the request id is echoed");
	ASSERT_EQ(json_integer_value(json_object_get(resp, "pid")), f.pid, "the daemon's pid");
	json_decref(resp);
	ASSERT_TRUE(peer_as(0, false, "{\"cmd\":\"ping\"}\n", answer, sizeof(answer)), "root peer");
	ASSERT_CONTAINS(answer, "\"ok\":true", "root: ok");

	/* nobody: the directory's mode keeps it from the socket */
	ASSERT_TRUE(peer_as(NOBODY, false, "{\"cmd\":\"runs\"}\n", answer, sizeof(answer)), "nobody");
	ASSERT_CONTAINS(answer, "Permission denied", "nobody: no access to the socket");
	/* nobody past the modes (CAP_DAC_OVERRIDE): the daemon checks the peer's credentials and says no */
	ASSERT_TRUE(peer_as(NOBODY, true, "{\"cmd\":\"runs\"}\n", answer, sizeof(answer)), "nobody with DAC override");
	ASSERT_CONTAINS(answer, "\"ok\":false", "refused");
	ASSERT_CONTAINS(answer, "\"reason\":\"daemon.peer\"", "reason daemon.peer");
	ASSERT_TRUE(strstr(answer, "\"runs\"") == NULL, "and nothing else");
	ASSERT_CONTAINS(kt_slurp(f.err), "custode daemon: ready", "the daemon is still up");
	ASSERT_TRUE(kill(f.pid, 0) == 0, "daemon alive");

	/* the CLI as nobody: refused, not crashed */
	{
		char *argv[] = {(char *)ktest_custode(), "attach", "--cgroup", f.cgmount, "--profile", "read", NULL};

		ktest_run(argv, NOBODY, 30000, &r);
		ASSERT_EQ(r.code, 125, "attach as nobody: refused");
		ASSERT_CONTAINS(r.err, "privilege.required", "reason");
	}

	/* protocol errors are answered and the connection goes on */
	ASSERT_TRUE(peer_as(0, false, "not json\n{\"nocmd\":1}\n{\"cmd\":\"ping\",\"id\":\"x\"}\n", answer,
			    sizeof(answer)) || true,
		    "protocol");
	ASSERT_CONTAINS(answer, "daemon.protocol", "malformed line answered");
	ASSERT_CONTAINS(answer, "\"id\":\"x\"", "then a valid request is served");
	{
		static char big[CUSTODE_CONTROL_MAX_LINE + 100];

		memset(big, 'x', sizeof(big) - 2);
		big[sizeof(big) - 2] = '\n';
		peer_as(0, false, big, answer, sizeof(answer));
		ASSERT_CONTAINS(answer, "longer than", "an over-long request is refused");
	}
	ASSERT_TRUE(kill(f.pid, 0) == 0, "daemon alive");
	kt_stop(&f.pid, SIGTERM);
	ASSERT_TRUE(access(CUSTODE_CONTROL_SOCKET, F_OK) < 0, "the socket is removed at exit");
}

KTEST(daemon_control_refuses_a_peer_inside_a_run)
{
	struct dfix f;
	char cg[PATH_MAX], other[PATH_MAX + 8], rid[17] = "", line[128], answer[4096];
	json_t *resp, *run;

	ktest_need_lsm();
	cg[0] = 0;
	if (!df_setup(&f) || !ASSERT_TRUE(df_daemon_start(&f, NULL), "daemon"))
		return;
	snprintf(cg, sizeof(cg), "%s/ktest-ctlpeer-%d", f.cgmount, (int)getpid());
	snprintf(other, sizeof(other), "%s-out", cg);
	if (!ASSERT_TRUE(df_cg_make(cg) && df_cg_make(other), "cgroups"))
		goto out;
	/* net-only: no file class, so nothing but the daemon's own check stands between root and the socket */
	resp = df_call(json_pack("{s:s, s:s, s:s}", "cmd", "attach", "cgroup", cg, "profile", "net-only"));
	if (!ASSERT_TRUE(resp != NULL, "attach"))
		goto out;
	snprintf(rid, sizeof(rid), "%s", json_string_value(json_object_get(json_object_get(resp, "run"), "run_id")));
	json_decref(resp);
	snprintf(line, sizeof(line), "{\"cmd\":\"detach\",\"run_id\":\"%s\"}\n", rid);
	/* control: root in a cgroup outside every run is served */
	ASSERT_TRUE(send_as(other, 0, false, "{\"cmd\":\"ping\"}\n", answer, sizeof(answer)), "root outside every run");
	ASSERT_CONTAINS(answer, "\"ok\":true", "served");
	/* root inside the run: refused, and its run stays */
	ASSERT_TRUE(send_as(cg, 0, false, line, answer, sizeof(answer)), "root inside the run");
	ASSERT_CONTAINS(answer, "\"reason\":\"daemon.peer\"", "refused: daemon.peer");
	ASSERT_CONTAINS(answer, rid, "naming the run");
	run = df_run(rid);
	ASSERT_TRUE(run != NULL, "the run is still attached");
	json_decref(run);
	/* the same request from outside works */
	resp = df_call(json_pack("{s:s, s:s}", "cmd", "detach", "run_id", rid));
	if (ASSERT_TRUE(resp != NULL, "detach from outside"))
		rid[0] = 0;
	json_decref(resp);
out:
	if (rid[0])
		json_decref(df_call(json_pack("{s:s, s:s}", "cmd", "detach", "run_id", rid)));
	if (cg[0]) {
		df_cg_remove(cg);
		df_cg_remove(other);
	}
	kt_stop(&f.pid, SIGTERM);
}
