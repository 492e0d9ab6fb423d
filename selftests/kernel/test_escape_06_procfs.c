// SPDX-License-Identifier: Apache-2.0
/*
 * Escape matrix, case 6: procfs magic links. Following /proc/self/root,
 * /proc/self/cwd, /proc/PID/fd/N or /proc/PID/root lands on a real file, and
 * file_open decides on that file; procfs entries of processes outside the
 * run are denied in themselves (file.proc.denied), and reopening an fd
 * through /proc/self/fd is a new open, decided with the new mode.
 */
#include <stdlib.h>

#include "test_escape_common.c"

KTEST(escape_06_proc_magic_links)
{
	static struct ktest_result r;
	struct ktest_proc holder;
	struct esc_fix f;
	char path[1024], line[128], piddir[64], fdlink[96], environ_path[96], rootlink[700];
	const char *const ro[] = {"--profile", "read", NULL};
	int pid = 0, fd = -1;

	ktest_need_lsm();
	if (!ASSERT_TRUE(esc_fixture(&f), "fixture"))
		return;
	ktest_events();

	/* /proc/self/root/<denied> */
	snprintf(path, sizeof(path), "/proc/self/root%s", f.secret);
	esc_control(ESC_NOBODY, STEPS("cat", path), "ok SECRET\n", path);
	esc_run(&r, ro, f.d.ws, STEPS("cat", path));
	esc_denied(&r, "EACCES\n", "file_open", "file.read.denied", f.secret, "/proc/self/root");

	/* chdir games: an O_PATH fd of a denied directory, fchdir, then relative and /proc/self/cwd opens */
	esc_control(ESC_NOBODY, STEPS("fchdir-open", f.open, "/proc/self/cwd/secret", "r"), "ok\n", "fchdir + cwd");
	esc_run(&r, ro, f.d.ws, STEPS("fchdir-open", f.open, "secret", "r"));
	esc_denied(&r, "EACCES\n", "file_open", "file.read.denied", f.secret, "fchdir into a denied directory");
	esc_run(&r, ro, f.d.ws, STEPS("fchdir-open", f.open, "/proc/self/cwd/secret", "r"));
	esc_denied(&r, "EACCES\n", "file_open", "file.read.denied", f.secret, "/proc/self/cwd after fchdir");
	esc_run(&r, ro, f.d.ws, STEPS("chdir-open", f.d.ws, "/proc/self/cwd/../open/secret", "r"));
	esc_denied(&r, "EACCES\n", "file_open", "file.read.denied", f.secret, "/proc/self/cwd/..");

	/* /proc/self/fd re-open with a wider mode: of an O_PATH fd (no data access at all), and of a read-only fd */
	esc_control(ESC_NOBODY, STEPS("reopen", f.secret, "p", "r"), "ok\n", "O_PATH reopened for reading");
	esc_run(&r, ro, f.d.ws, STEPS("reopen", f.secret, "p", "r"));
	esc_denied(&r, "EACCES\n", "file_open", "file.read.denied", f.secret, "O_PATH fd reopened for reading");
	esc_control(ESC_NOBODY, STEPS("reopen", f.d.ws_file, "r", "rw"), "ok\n", "read-only fd reopened read-write");
	esc_run(&r, ro, f.d.ws, STEPS("reopen", f.d.ws_file, "r", "rw"));
	esc_denied(&r, "EACCES\n", "file_open", "file.write.denied", f.d.ws_file, "read-only fd reopened read-write");

	/*
	 * Another process's fd, opened outside the run: a nobody process holds the
	 * secret open, so the kernel's own checks (same uid) let the run at its
	 * /proc entries; custode denies the file behind the link, and the entries
	 * themselves.
	 */
	{
		char *argv[] = {(char *)ktest_helper("eprobe"), "hold", f.secret, NULL};
		if (!ASSERT_EQ(ktest_spawn(argv, ESC_NOBODY, &holder), 0, "holder") ||
		    !ASSERT_TRUE(ktest_read_line(holder.out, line, sizeof(line), 20000) &&
					 sscanf(line, "ready %d %d", &pid, &fd) == 2,
				 "holder ready"))
			return;
	}
	snprintf(piddir, sizeof(piddir), "/proc/%d", pid);
	snprintf(fdlink, sizeof(fdlink), "/proc/%d/fd/%d", pid, fd);
	snprintf(environ_path, sizeof(environ_path), "/proc/%d/environ", pid);
	snprintf(rootlink, sizeof(rootlink), "/proc/%d/root%s", pid, f.secret);

	esc_control(ESC_NOBODY, STEPS("cat", fdlink), "ok SECRET\n", fdlink);
	esc_run(&r, ro, f.d.ws, STEPS("cat", fdlink));
	/* the built-in profiles contain processes: following another process's magic link is a ptrace access */
	esc_denied(&r, "EACCES\n", "ptrace_access_check", "process.ptrace.denied", NULL, "another process's fd");

	esc_control(ESC_NOBODY, STEPS("cat", rootlink), "ok SECRET\n", rootlink);
	esc_run(&r, ro, f.d.ws, STEPS("cat", rootlink));
	esc_denied(&r, "EACCES\n", "ptrace_access_check", "process.ptrace.denied", NULL, "another process's root");

	snprintf(path, sizeof(path), "%s/fd", piddir);
	esc_control(ESC_NOBODY, STEPS("open", path, "d"), "ok\n", "list another process's fds");
	esc_run(&r, ro, f.d.ws, STEPS("open", path, "d"));
	esc_denied(&r, "EACCES\n", "file_open", "file.proc.denied", path, "list another process's fds");

	esc_control(ESC_NOBODY, STEPS("open", environ_path, "r"), "ok\n", environ_path);
	esc_run(&r, ro, f.d.ws, STEPS("open", environ_path, "r"));
	esc_denied(&r, "EACCES\n", "file_open", "file.proc.denied", environ_path, "another process's environ");

	/* the run's own entries and the system-wide files stay readable */
	esc_run(&r, ro, f.d.ws,
		STEPS("open", "/proc/self/status", "r", "+", "open", "/proc/self/environ", "r", "+", "open", "/proc/cpuinfo",
		      "r", "+", "open", "/proc/meminfo", "r", "+", "open", "/proc/self/fd", "d"));
	esc_clean(&r, "ok\nok\nok\nok\nok\n", "own /proc entries");

	ktest_close_stdin(&holder);
	ktest_wait(&holder, 10000);
	ktest_proc_close(&holder);
}

struct rotation {
	char token[512];
	int round;
};

/* The host rotates the token: a new file renamed over it (the old inode lives on while someone holds it). */
static void rotate(int pid, void *arg)
{
	struct rotation *rt = arg;
	char tmp[600], content[64];

	(void)pid;
	rt->round++;
	snprintf(tmp, sizeof(tmp), "%s.new", rt->token);
	snprintf(content, sizeof(content), "TOKEN-%d\n", rt->round);
	if (!ktest_write_file(tmp, content, 0644) || chmod(tmp, 0644) < 0 || rename(tmp, rt->token) < 0)
		ktest_log("rotate %s: failed", rt->token);
}

/*
 * BYPASS (narrow): a file rule is an exact path, "D\0" in the trie, and
 * d_path names an unlinked file "D (deleted)", which that entry doesn't
 * match — the enclosing rule decides. Identity covers the inode the rule
 * named when the policy was loaded, not one written during the run. So: a
 * secret written during the run (a credential rotated by a helper, a
 * password change rewriting /etc/shadow) is opened O_PATH by the run (no
 * file_open: no data); when the host replaces it again, the run reopens the
 * old inode through /proc/self/fd as "…/token (deleted)", allowed by the
 * readable directory around it, and reads the previous secret. In the
 * built-in profiles the file rules under readable directories are /etc/shadow,
 * /etc/gshadow (and their "-" backups), /etc/sudoers, /etc/security/opasswd,
 * /etc/krb5.keytab, /etc/ppp/{chap,pap}-secrets, and ${workspace}/.git/config
 * (read-only in a writable workspace). Fix: decide an unlinked file
 * (d_unlinked, or the suffix) by its path without " (deleted)", or deny it
 * unless the enclosing rule grants the access to the whole directory.
 */
KTEST(escape_06_reopen_deleted_file)
{
	static struct ktest_result r;
	struct esc_fix f;
	struct rotation rt = {0};
	char pub[400], extra[1024];
	const char *policy;

	ktest_need_lsm();
	if (!ASSERT_TRUE(esc_fixture(&f), "fixture"))
		return;
	snprintf(pub, sizeof(pub), "%s/pub", f.d.root);
	snprintf(rt.token, sizeof(rt.token), "%s/token", pub);
	if (!ASSERT_TRUE(mkdir(pub, 0755) == 0 && ktest_write_file(rt.token, "TOKEN-0\n", 0644) && chmod(rt.token, 0644) == 0,
			 "a readable directory with a secret file in it"))
		return;
	snprintf(extra, sizeof(extra), ",{\"path\":\"%s\",\"allow\":[\"read\"]},{\"path\":\"%s\",\"allow\":[]}", pub, rt.token);
	policy = esc_policy(f.d.root, "escape-06", "[\"read\"]", extra);

	/* control: the same sequence outside a run reads the old token */
	{
		char *argv[] = {(char *)ktest_helper("eprobe"), "wait", "+", "hold-path", rt.token, "+", "wait", "+",
				"reopen-held", "r", NULL};
		esc_paused(argv, ESC_NOBODY, &r, rotate, &rt);
		ASSERT_STREQ(r.out, "ok\nok TOKEN-1\n", "control: the replaced token through /proc/self/fd");
	}
	ktest_events();
	esc_run(&r, STEPS("--policy", policy), f.d.ws, STEPS("cat", rt.token));
	esc_denied(&r, "EACCES\n", "file_open", "file.read.denied", rt.token, "the token by its path");
	esc_run_paused(&r, STEPS("--policy", policy), f.d.ws,
		       STEPS("wait", "+", "hold-path", rt.token, "+", "wait", "+", "reopen-held", "r"), rotate, &rt);
	ktest_log("in the run: %s", r.out);
	esc_denied(&r, "ok\nEACCES\n", "file_open", "file.read.denied", NULL,
		   "BYPASS: a replaced secret reopened as \"(deleted)\"");
}
