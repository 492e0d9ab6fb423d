// SPDX-License-Identifier: Apache-2.0
/*
 * Escape matrix, case 7: openat/openat2 (RESOLVE_* flags), O_PATH and
 * AT_EMPTY_PATH, name_to_handle_at/open_by_handle_at.
 *
 * - openat2's flags only narrow the kernel's own resolution; file_open sees
 *   the file that was opened, whichever way it was found.
 * - O_PATH opens no data and runs no file_open hook: the run may learn that
 *   a path exists and stat it (metadata is not governed: docs/bypass-catalogue.md).
 *   Every way to turn the O_PATH fd into access is a new decision: reopening
 *   it (case 6), linking it (path_link), executing it (execveat: file_open
 *   with exec, then bprm_check_security).
 * - open_by_handle_at needs CAP_DAC_READ_SEARCH in the initial user
 *   namespace, which no run has (and the launcher's seccomp filter denies
 *   the call too). With the capability — root moved into the run's cgroup,
 *   no seccomp — the open still reaches file_open and is denied there.
 */
#include "test_escape_common.c"

KTEST(escape_07_openat2_opath_handles)
{
	static struct ktest_result r;
	struct esc_fix f, ctl;
	struct esc_hold h;
	char alias[512], calias[512], bin[512];
	const char *const ro[] = {"--profile", "read", NULL}, *const rw[] = {"--profile", "workspace-write", NULL};
	const char *flags[] = {"none", "no_symlinks,no_magiclinks", "no_xdev"};

	ktest_need_lsm();
	if (!ASSERT_TRUE(esc_fixture(&f) && esc_fixture(&ctl), "fixtures"))
		return;
	snprintf(bin, sizeof(bin), "%s/ep", f.d.ws);
	if (!ASSERT_TRUE(esc_copy_exec(bin), "a binary in the workspace"))
		return;
	ktest_events();

	/* openat2 from the workspace, `..` out of it, whatever RESOLVE_* flags */
	for (int i = 0; i < 3; i++) {
		esc_control(ESC_NOBODY, STEPS("openat2", f.d.ws, "../open/secret", "r", flags[i]), "ok\n", flags[i]);
		esc_run(&r, ro, f.d.ws, STEPS("openat2", f.d.ws, "../open/secret", "r", flags[i]));
		esc_denied(&r, "EACCES\n", "file_open", "file.read.denied", f.secret, flags[i]);
	}
	esc_control(ESC_NOBODY, STEPS("openat2", f.open, "secret", "r", "beneath"), "ok\n", "RESOLVE_BENEATH");
	esc_run(&r, ro, f.d.ws, STEPS("openat2", f.open, "secret", "r", "beneath"));
	esc_denied(&r, "EACCES\n", "file_open", "file.read.denied", f.secret, "RESOLVE_BENEATH from a denied directory");

	/* O_PATH: allowed, and only metadata (documented limit) */
	esc_run(&r, ro, f.d.ws, STEPS("opath-stat", f.secret));
	esc_clean(&r, "ok\n", "O_PATH + fstatat(AT_EMPTY_PATH) of a denied file: metadata only");

	/* the O_PATH fd linked into the workspace through /proc/self/fd (needs no capability) */
	snprintf(alias, sizeof(alias), "%s/alias", f.d.ws);
	snprintf(calias, sizeof(calias), "%s/alias", ctl.d.ws);
	esc_control(ESC_NOBODY, STEPS("link-proc", ctl.secret, calias), "ok\n", "linkat(/proc/self/fd/N, AT_SYMLINK_FOLLOW)");
	esc_run(&r, rw, f.d.ws, STEPS("link-proc", f.secret, alias));
	esc_denied(&r, "EACCES\n", "path_link", "file.link.denied", f.secret, "O_PATH fd linked into the workspace");
	/*
	 * linkat(fd, "", AT_EMPTY_PATH): up to 6.9 it needs CAP_DAC_READ_SEARCH
	 * (the kernel says ENOENT to nobody, in a run or not); from 6.10 the
	 * opener of the file may do it, so the control makes the alias and the
	 * run must be stopped by custode (path_link).
	 */
	snprintf(alias, sizeof(alias), "%s/alias-empty", f.d.ws);
	snprintf(calias, sizeof(calias), "%s/alias-empty", ctl.d.ws);
	{
		static struct ktest_result c;

		esc_host(&c, ESC_NOBODY, STEPS("link-empty", ctl.secret, calias));
		if (!strcmp(c.out, "ENOENT\n")) {
			esc_run(&r, rw, f.d.ws, STEPS("link-empty", f.secret, alias));
			ASSERT_STREQ(r.out, "ENOENT\n", "AT_EMPTY_PATH link in a run: the kernel refuses first");
			ktest_events();
		} else {
			ASSERT_STREQ(c.out, "ok\n", "control (uid 65534, no run): AT_EMPTY_PATH link by the opener (6.10+)");
			esc_run(&r, rw, f.d.ws, STEPS("link-empty", f.secret, alias));
			esc_denied(&r, "EACCES\n", "path_link", "file.link.denied", f.secret,
				   "AT_EMPTY_PATH link of a denied file into the workspace");
		}
		ASSERT_TRUE(access(alias, F_OK) != 0, "no alias was made");
	}

	/* execveat of an O_PATH fd with AT_EMPTY_PATH: an exec like any other */
	esc_control(ESC_NOBODY, STEPS("execveat-empty", bin, "ep", "hello"), "ok\n", "execveat(AT_EMPTY_PATH)");
	esc_run(&r, ro, f.d.ws, STEPS("execveat-empty", bin, "ep", "hello"));
	esc_denied(&r, "EACCES\n", NULL, "file.exec.denied", bin, "execveat(AT_EMPTY_PATH) of a workspace binary");

	/* file handles */
	esc_control(ESC_NOBODY, STEPS("chdir-open", f.d.ws, ".", "d", "+", "handle-save", f.secret, "+", "handle-open", "r"),
		    "ok\nok\nEPERM\n", "open_by_handle_at without CAP_DAC_READ_SEARCH");
	esc_control(-1, STEPS("chdir-open", f.d.ws, ".", "d", "+", "handle-save", f.secret, "+", "handle-open", "r"),
		    "ok\nok\nok SECRET\n", "open_by_handle_at as root");
	esc_run(&r, ro, f.d.ws, STEPS("handle-save", f.secret, "+", "handle-open", "r"));
	ASSERT_STREQ(r.out, "ok\nEPERM\n", "open_by_handle_at in a run: no capability (and seccomp)");
	ktest_events();
	if (ASSERT_TRUE(esc_hold(&h, ro, f.d.ws), "holder run")) {
		/*
		 * root, with CAP_DAC_READ_SEARCH, in the run's cgroup: only the engine is
		 * left, and it refuses the capability itself to every run (`capable`,
		 * unrecorded for this one: root's ordinary reads fall back on it), so the
		 * handle is never decoded and nothing is opened.
		 */
		esc_join(&h, &r, -1,
			 STEPS("chdir-open", f.d.ws, ".", "d", "+", "handle-save", f.secret, "+", "wait", "+", "handle-open",
			       "r"));
		ASSERT_STREQ(r.out, "ok\nok\nEPERM\n", "open_by_handle_at with the capability: refused by the engine");
		esc_release(&h);
	}
}
