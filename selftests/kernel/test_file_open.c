// SPDX-License-Identifier: Apache-2.0
/* lsm/file_open under the built-in `read` profile: each case with its control outside any run. */
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>

#include "ktest.h"

/* custode run --profile read --workspace WS [--audit] -- tprobe open PATH MODE */
static int probe_in_run(const char *ws, bool audit, const char *path, const char *mode, struct ktest_result *r)
{
	char *argv[16];
	int i = 0;

	argv[i++] = (char *)ktest_custode();
	argv[i++] = "run";
	argv[i++] = "--profile";
	argv[i++] = "read";
	argv[i++] = "--workspace";
	argv[i++] = (char *)ws;
	if (audit)
		argv[i++] = "--audit";
	argv[i++] = "--";
	argv[i++] = (char *)ktest_tprobe();
	argv[i++] = "open";
	argv[i++] = (char *)path;
	argv[i++] = (char *)mode;
	argv[i] = NULL;
	return ktest_run(argv, -1, 60000, r);
}

static int probe_outside(const char *path, const char *mode, struct ktest_result *r)
{
	char *argv[] = {(char *)ktest_tprobe(), "open", (char *)path, (char *)mode, NULL};
	return ktest_run(argv, -1, 10000, r);
}

KTEST(file_read_outside_workspace_denied)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	json_t *events, *ev;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "fixture"))
		return;
	/* control: the same read outside any run works */
	probe_outside(d.outside, "r", &r);
	ASSERT_STREQ(r.out, "ok\n", "control read outside a run");

	ktest_events(); /* drain older records */
	probe_in_run(d.ws, false, d.outside, "r", &r);
	ASSERT_EQ(r.code, 1, "tprobe exit in run");
	ASSERT_STREQ(r.out, "EACCES\n", "read outside the workspace in a run");
	ASSERT_CONTAINS(r.err, "file.read.denied=1", "denial summary on stderr");

	events = ktest_events();
	ev = ktest_find_event(events, "file_open", "file.read.denied", d.outside);
	if (ASSERT_TRUE(ev != NULL, "a JSON denial event names the path and the hook")) {
		ASSERT_TRUE(json_is_true(json_object_get(ev, "enforced")), "event enforced");
		ASSERT_STREQ(json_string_value(json_array_get(json_object_get(ev, "access"), 0)), "read", "event access");
		ASSERT_STREQ(json_string_value(json_object_get(ev, "comm")), "custode-tprobe", "event comm");
		ASSERT_EQ(json_string_length(json_object_get(ev, "run_id")), 16, "run id");
		ASSERT_TRUE(json_integer_value(json_object_get(json_object_get(ev, "file"), "ino")) > 0, "inode");
	}
	json_decref(events);
}

KTEST(file_read_in_workspace_allowed)
{
	static struct ktest_result r;
	struct ktest_dirs d;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "fixture"))
		return;
	probe_in_run(d.ws, false, d.ws_file, "r", &r);
	ASSERT_EQ(r.code, 0, "exit");
	ASSERT_STREQ(r.out, "ok\n", "read in the workspace");
	ASSERT_TRUE(strstr(r.err, "denial") == NULL, "no denial summary");
}

KTEST(file_write_workspace_denied_in_read_profile)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	json_t *events;
	const char *modes[] = {"w", "rw", "a", "t"};

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "fixture"))
		return;
	for (int i = 0; i < 4; i++) {
		probe_outside(d.ws_file, modes[i], &r);
		ASSERT_STREQ(r.out, "ok\n", modes[i]); /* control */
		probe_in_run(d.ws, false, d.ws_file, modes[i], &r);
		ASSERT_STREQ(r.out, "EACCES\n", modes[i]);
	}
	events = ktest_events();
	ASSERT_TRUE(ktest_find_event(events, "file_open", "file.write.denied", d.ws_file) != NULL, "write event");
	json_decref(events);
}

KTEST(file_system_dirs_readable_secrets_denied)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	json_t *events;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "fixture"))
		return;
	probe_in_run(d.ws, false, "/etc/passwd", "r", &r);
	ASSERT_STREQ(r.out, "ok\n", "/etc/passwd readable");
	probe_in_run(d.ws, false, "/etc/passwd", "w", &r);
	ASSERT_STREQ(r.out, "EACCES\n", "/etc/passwd not writable");
	probe_outside("/etc/shadow", "r", &r);
	ASSERT_STREQ(r.out, "ok\n", "control: root reads /etc/shadow outside a run");
	probe_in_run(d.ws, false, "/etc/shadow", "r", &r);
	ASSERT_STREQ(r.out, "EACCES\n", "/etc/shadow denied");
	/* a secret readable by everyone as far as file modes go: only the policy stands in the way */
	mkdir("/etc/ssh", 0755);
	ASSERT_TRUE(ktest_write_file("/etc/ssh/custode_test_host_key", "secret\n", 0644), "world-readable secret");
	chmod("/etc/ssh/custode_test_host_key", 0644);
	probe_outside("/etc/ssh/custode_test_host_key", "r", &r);
	ASSERT_STREQ(r.out, "ok\n", "control: readable outside a run");
	probe_in_run(d.ws, false, "/etc/ssh/custode_test_host_key", "r", &r);
	ASSERT_STREQ(r.out, "EACCES\n", "/etc/ssh denied by policy");
	probe_in_run(d.ws, false, "/dev/null", "rw", &r);
	ASSERT_STREQ(r.out, "ok\n", "/dev/null usable");
	events = ktest_events();
	ASSERT_TRUE(ktest_find_event(events, "file_open", "file.read.denied", "/etc/ssh/custode_test_host_key") != NULL,
		    "policy denial event");
	json_decref(events);
	unlink("/etc/ssh/custode_test_host_key");
}

KTEST(file_tmp_writable)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	char *argv[] = {(char *)ktest_custode(), "run", "--workspace", d.ws, "--", "/bin/sh", "-c",
			"echo hi > \"$TMPDIR/x\" && cat \"$TMPDIR/x\" && echo \"$TMPDIR\"", NULL};

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "fixture"))
		return;
	argv[3] = d.ws;
	ktest_run(argv, -1, 60000, &r);
	ASSERT_EQ(r.code, 0, "exit");
	ASSERT_CONTAINS(r.out, "hi\n/tmp/custode-", "tmp written and read back");
	/* the private tmp is removed at the end of the run */
	{
		char tmp[256] = "";
		sscanf(strstr(r.out, "/tmp/custode-") ? strstr(r.out, "/tmp/custode-") : "", "%255s", tmp);
		ASSERT_TRUE(tmp[0] && access(tmp, F_OK) != 0, "per-run tmp removed");
	}
}

KTEST(file_exec_from_workspace_denied)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	char copy[512], cmd[1024];
	json_t *events;
	char *argv[] = {(char *)ktest_custode(), "run", "--workspace", NULL, "--", copy, "open", "/etc/passwd", "r", NULL};

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "fixture"))
		return;
	snprintf(copy, sizeof(copy), "%s/tprobe-copy", d.ws);
	snprintf(cmd, sizeof(cmd), "cp %s %s && chmod 755 %s", ktest_tprobe(), copy, copy);
	if (!ASSERT_EQ(system(cmd), 0, "copy tprobe into the workspace"))
		return;
	argv[3] = d.ws;
	/* control: executable outside a run */
	{
		char *ctl[] = {copy, "open", "/etc/passwd", "r", NULL};
		ktest_run(ctl, -1, 10000, &r);
		ASSERT_EQ(r.code, 0, "control exec");
	}
	ktest_run(argv, -1, 60000, &r);
	ASSERT_EQ(r.code, 126, "cannot execute: 126 as env(1)");
	ASSERT_CONTAINS(r.err, "Permission denied", "exec error named");
	events = ktest_events();
	ASSERT_TRUE(ktest_find_event(events, "file_open", "file.exec.denied", copy) != NULL, "exec event");
	json_decref(events);
}

KTEST(file_audit_mode_reports_without_denying)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	json_t *events, *ev;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "fixture"))
		return;
	ktest_events();
	probe_in_run(d.ws, true, d.outside, "r", &r);
	ASSERT_STREQ(r.out, "ok\n", "audit: read allowed");
	ASSERT_CONTAINS(r.err, "audit", "summary says audit");
	events = ktest_events();
	ev = ktest_find_event(events, "file_open", "file.read.denied", d.outside);
	if (ASSERT_TRUE(ev != NULL, "audit event"))
		ASSERT_TRUE(json_is_false(json_object_get(ev, "enforced")), "enforced=false");
	json_decref(events);
}

KTEST(file_outside_runs_never_denied)
{
	static struct ktest_result r;
	struct ktest_proc p;
	struct ktest_dirs d;
	char line[128];
	char *argv[] = {(char *)ktest_custode(), "run", "--", (char *)ktest_tprobe(), "wait-open", "/etc/shadow", "r", NULL};

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "fixture"))
		return;
	/* a run is active while processes outside it open what the run may not */
	if (!ASSERT_EQ(ktest_spawn(argv, -1, &p), 0, "spawn run"))
		return;
	if (ASSERT_TRUE(ktest_read_line(p.out, line, sizeof(line), 60000), "run ready")) {
		probe_outside("/etc/shadow", "r", &r);
		ASSERT_STREQ(r.out, "ok\n", "host process reads /etc/shadow");
		probe_outside(d.outside, "w", &r);
		ASSERT_STREQ(r.out, "ok\n", "host process writes outside");
		ASSERT_TRUE(write(p.in, "go\n", 3) == 3, "go");
		ASSERT_TRUE(ktest_read_line(p.out, line, sizeof(line), 20000), "result");
		ASSERT_STREQ(line, "EACCES", "the run is denied meanwhile");
	}
	ktest_close_stdin(&p);
	ASSERT_EQ(ktest_wait(&p, 30000), 1, "run exit");
	ktest_proc_close(&p);
}
