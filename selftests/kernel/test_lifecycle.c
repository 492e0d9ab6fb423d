// SPDX-License-Identifier: Apache-2.0
/*
 * A run's lifecycle: nothing survives cancellation (double-forked, setsid,
 * SIGTERM-ignoring descendants), every hook denies from the moment of
 * cancellation (exec and fork after it), SIGINT/SIGTERM to the launcher, the
 * environment cleared to the allowlist, inherited fds closed, the private tmp.
 */
#include <fcntl.h>
#include <time.h>

#include "procutil.h"

#define PROC_NONE POLICY("proc-none", "{\"process\":{}}")

static const char *env_bin(void)
{
	return access("/usr/bin/env", X_OK) == 0 ? "/usr/bin/env" : "/bin/env";
}

/* pids printed one a line into out[] */
static int pids_of(const char *text, int *out, int max)
{
	int n = 0;

	for (const char *p = text; p && *p && n < max; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		int v;
		if (sscanf(p, "%d", &v) == 1 && v > 1)
			out[n++] = v;
	}
	return n;
}

KTEST(lifecycle_timeout_kills_every_descendant)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	char receipt[400];
	int pids[16], n;
	json_t *rc;
	/* a double fork that ignores SIGTERM, a setsid daemon, a SIGTERM/HUP/INT-ignoring loop, then the main sleep */
	const char *script = "(trap '' TERM; sh -c 'trap \"\" TERM; echo $$; exec sleep 1000' &); "
			     "setsid sh -c 'echo $$; exec sleep 1000' & "
			     "sh -c 'trap \"\" TERM HUP INT; echo $$; while :; do sleep 1; done' & "
			     "sleep 1000";

	ktest_need_cgroup_bpf();
	ASSERT_TRUE(ktest_make_dirs(&d), "dirs");
	snprintf(receipt, sizeof(receipt), "%s/receipt.json", d.root);
	ktest_run(pu_argv(ARGS("--profile", "net-only", "--timeout", "3", "--receipt", receipt), ARGS("/bin/sh", "-c", script)),
		  -1, 120000, &r);
	ASSERT_EQ(r.code, 124, "timeout");
	n = pids_of(r.out, pids, 16);
	ASSERT_EQ(n, 3, "three descendants reported their pids");
	for (int i = 0; i < n; i++) {
		char what[64];
		snprintf(what, sizeof(what), "descendant %d is gone", pids[i]);
		ASSERT_TRUE(!ktest_pid_alive(pids[i]), what);
	}
	rc = pu_load_json(receipt);
	ASSERT_TRUE(json_is_true(json_object_get(rc, "cleaned_up")), "cgroup emptied and removed");
	ASSERT_STREQ(json_string_value(json_object_get(json_object_get(rc, "exit"), "cancelled")), "timeout", "cancelled");
	ASSERT_TRUE(access(json_string_value(json_object_get(rc, "cgroup")) ?: "/", F_OK) != 0, "the run's cgroup is gone");
	json_decref(rc);
	ASSERT_EQ(pu_run_cgroups(), 0, "no run cgroup left");
}

/*
 * Between the cancelled flag and cgroup.kill (widened to 3 s by the test
 * knob) the run is still alive: every exec and fork it tries is denied.
 */
KTEST(lifecycle_exec_after_cancellation_denied)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	char receipt[400], delay[] = "CUSTODE_TEST_KILL_DELAY_MS=3000";
	const char *pol;
	json_t *rc, *ev;

	ktest_need_lsm();
	ASSERT_TRUE(ktest_make_dirs(&d), "dirs");
	pol = pu_policy(d.root, "none", PROC_NONE);
	snprintf(receipt, sizeof(receipt), "%s/receipt.json", d.root);

	/* control: the same probe in a live run execs at once */
	pu_run_probe(&r, ARGS("--policy", pol), ARGS("after", "100", "exec", "/bin/true"));
	ASSERT_EQ(r.code, 0, "control: exec in a live run");
	ASSERT_STREQ(r.out, "", "control: no failed exec");

	ktest_events();
	{
		char *argv[] = {(char *)env_bin(), delay, (char *)ktest_custode(), "run", "--policy", (char *)pol, "--timeout",
				"1", "--receipt", receipt, "--", (char *)ktest_helper("pprobe"), "after", "1200", "exec",
				"/bin/true", NULL};
		ktest_run(argv, -1, 120000, &r);
	}
	ASSERT_EQ(r.code, 124, "timeout");
	/* EPERM from this class's exec hook, or EACCES when the file class (loaded by another run) denies the exec open first */
	ASSERT_TRUE(strstr(r.out, "exec EPERM\n") || strstr(r.out, "exec EACCES\n"), "exec after cancellation denied");
	ASSERT_TRUE(strstr(r.out, "exec E") == r.out, "every attempt after cancellation denied");
	ASSERT_TRUE(strstr(r.out, "ok") == NULL, "never succeeded");
	rc = pu_load_json(receipt);
	ASSERT_TRUE(pu_denials(rc, "run.cancelled") >= 1, "counted as run.cancelled");
	ASSERT_TRUE(json_is_true(json_object_get(rc, "cleaned_up")), "then killed and removed");
	json_decref(rc);
	ev = ktest_events();
	ASSERT_TRUE(ktest_find_event(ev, "bprm_check_security", "run.cancelled", NULL) ||
			    ktest_find_event(ev, "file_open", "run.cancelled", NULL),
		    "an exec hook recorded run.cancelled");
	json_decref(ev);

	{
		char *argv[] = {(char *)env_bin(), delay, (char *)ktest_custode(), "run", "--policy", (char *)pol, "--timeout",
				"1", "--", (char *)ktest_helper("pprobe"), "after", "1200", "fork", NULL};
		ktest_run(argv, -1, 120000, &r);
	}
	ASSERT_CONTAINS(r.out, "fork EPERM\n", "fork after cancellation denied");
	ASSERT_TRUE(strstr(r.out, "fork ok") == NULL, "no fork succeeded after cancellation");
	ASSERT_CONTAINS(r.err, "run.cancelled=", "summary");
}

static void signal_cancels(int sig, int want_code)
{
	struct ktest_proc p;
	struct ktest_dirs d;
	char receipt[400], line[64];
	int bg = 0;
	json_t *rc;
	char *argv[] = {(char *)ktest_custode(), "run", "--profile", "net-only", "--receipt", receipt, "--", "/bin/sh", "-c",
			"trap '' TERM INT; sleep 1000 & echo $!; sleep 1000", NULL};

	ASSERT_TRUE(ktest_make_dirs(&d), "dirs");
	snprintf(receipt, sizeof(receipt), "%s/receipt.json", d.root);
	if (!ASSERT_EQ(ktest_spawn(argv, -1, &p), 0, "spawn"))
		return;
	if (ASSERT_TRUE(ktest_read_line(p.out, line, sizeof(line), 60000), "background pid"))
		bg = atoi(line);
	ASSERT_TRUE(bg > 0 && ktest_pid_alive(bg), "background process alive");
	kill(p.pid, sig);
	ASSERT_EQ(ktest_wait(&p, 60000), want_code, "launcher's exit code");
	ktest_proc_close(&p);
	ASSERT_TRUE(!ktest_pid_alive(bg), "background process killed");
	rc = pu_load_json(receipt);
	ASSERT_STREQ(json_string_value(json_object_get(json_object_get(rc, "exit"), "cancelled")), "signal", "cancelled");
	ASSERT_EQ(json_integer_value(json_object_get(json_object_get(rc, "exit"), "code")), want_code, "exit.code");
	ASSERT_TRUE(json_is_true(json_object_get(rc, "cleaned_up")), "cleaned up");
	json_decref(rc);
	ASSERT_EQ(pu_run_cgroups(), 0, "no run cgroup left");
}

KTEST(lifecycle_sigterm_and_sigint_cancel)
{
	ktest_need_cgroup_bpf();
	signal_cancels(SIGTERM, 128 + SIGTERM);
	signal_cancels(SIGINT, 128 + SIGINT);
}

KTEST(lifecycle_environment_cleared)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	const char *pol;
	char *envcmd[] = {(char *)env_bin(), "FOO=secret-foo", "SSH_AUTH_SOCK=/tmp/agent", "LD_PRELOAD=/nonexistent.so",
			  "LANG=C", (char *)ktest_custode(), "run", "--profile", "net-only", "--", (char *)env_bin(), NULL};
	char *envpol[] = {(char *)env_bin(), "FOO=secret-foo", "SSH_AUTH_SOCK=/tmp/agent", "LANG=C",
			  (char *)ktest_custode(), "run", "--policy", NULL, "--", (char *)env_bin(), NULL};

	ktest_need_cgroup_bpf();
	ASSERT_TRUE(ktest_make_dirs(&d), "dirs");
	pol = pu_policy(d.root, "env", POLICY("env", "{\"env\":[\"FOO\"]}"));
	envpol[7] = (char *)pol;

	/* control: the variables reach a child of the launcher's caller */
	{
		char *ctl[] = {(char *)env_bin(), "FOO=secret-foo", "SSH_AUTH_SOCK=/tmp/agent", (char *)env_bin(), NULL};
		ktest_run(ctl, NOBODY, 30000, &r);
		ASSERT_CONTAINS(r.out, "FOO=secret-foo", "control: FOO");
		ASSERT_CONTAINS(r.out, "SSH_AUTH_SOCK=", "control: SSH_AUTH_SOCK");
	}
	ktest_run(envcmd, -1, 60000, &r);
	ASSERT_EQ(r.code, 0, "default set: run");
	ASSERT_TRUE(strstr(r.out, "FOO=") == NULL, "default set: FOO dropped");
	ASSERT_TRUE(strstr(r.out, "SSH_AUTH_SOCK=") == NULL, "default set: SSH_AUTH_SOCK dropped");
	ASSERT_TRUE(strstr(r.out, "LD_PRELOAD=") == NULL, "default set: LD_PRELOAD dropped");
	ASSERT_CONTAINS(r.out, "LANG=C\n", "default set: LANG kept");
	ASSERT_CONTAINS(r.out, "HOME=/tmp/custode-", "HOME is the private tmp");
	ASSERT_CONTAINS(r.out, "TMPDIR=/tmp/custode-", "TMPDIR is the private tmp");
	ASSERT_CONTAINS(r.out, "USER=nobody\n", "USER");

	ktest_run(envpol, -1, 60000, &r);
	ASSERT_EQ(r.code, 0, "policy allowlist: run");
	ASSERT_CONTAINS(r.out, "FOO=secret-foo\n", "policy allowlist: FOO kept");
	ASSERT_TRUE(strstr(r.out, "SSH_AUTH_SOCK=") == NULL, "policy allowlist: SSH_AUTH_SOCK dropped");
	ASSERT_TRUE(strstr(r.out, "LANG=") == NULL, "policy allowlist: LANG (not listed) dropped");
	ASSERT_CONTAINS(r.out, "PATH=/usr/local/bin:/usr/bin:/bin\n", "PATH default");
}

KTEST(lifecycle_fds_closed_and_private_tmp)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	char tmp[256] = "", line[300];
	int fd;

	ktest_need_cgroup_bpf();
	ASSERT_TRUE(ktest_make_dirs(&d), "dirs");
	/* an fd without O_CLOEXEC, as a careless caller would leave one */
	fd = open(d.ws_file, O_RDONLY);
	if (!ASSERT_TRUE(fd >= 0 && dup2(fd, 50) == 50, "leaked fd 50"))
		return;
	pu_probe(&r, NOBODY, ARGS("fds"));
	ASSERT_CONTAINS(r.out, "50", "control: the fd reaches a child");
	pu_run_probe(&r, ARGS("--profile", "net-only"), ARGS("fds"));
	ASSERT_STREQ(r.out, "0 1 2\n", "run: only stdin, stdout, stderr");
	close(50);
	close(fd);

	ktest_run(pu_argv(ARGS("--profile", "net-only"),
			  ARGS("/bin/sh", "-c", "echo $TMPDIR; stat -c '%a %u' $TMPDIR; touch $TMPDIR/x && echo wrote")),
		  -1, 60000, &r);
	sscanf(r.out, "%255s", tmp);
	ASSERT_EQ(strncmp(tmp, "/tmp/custode-", 13), 0, "TMPDIR is the run's");
	snprintf(line, sizeof(line), "%s\n700 65534\nwrote\n", tmp);
	ASSERT_STREQ(r.out, line, "0700, owned by the run's user, writable");
	ASSERT_TRUE(tmp[0] && access(tmp, F_OK) != 0, "removed after the run");
}
