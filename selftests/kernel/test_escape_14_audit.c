// SPDX-License-Identifier: Apache-2.0
/*
 * Escape matrix, case 14: audit mode (`custode run --audit`). The engine
 * computes the same decisions and reports them as events with
 * "enforced": false, and denies nothing: each attack below, refused in the
 * cases above, succeeds here — and is on record.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include "test_escape_common.c"

KTEST(escape_14_audit_mode)
{
	static struct ktest_result r;
	struct ktest_proc holder;
	struct esc_fix f;
	char dotdot[600], dirlink[400], via[500], alias[400], ep[400], hook[500], environ_path[64], line[128], sabs[64];
	const char *const ro[] = {"--profile", "read", "--audit", NULL};
	const char *const rw[] = {"--profile", "workspace-write", "--audit", NULL};
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int pid = 0, fd = -1, lfd;

	ktest_need_lsm();
	if (!ASSERT_TRUE(esc_fixture(&f), "fixture"))
		return;
	snprintf(dotdot, sizeof(dotdot), "%s/../open/secret", f.d.ws);
	snprintf(dirlink, sizeof(dirlink), "%s/dirlink", f.d.ws);
	snprintf(via, sizeof(via), "%s/secret", dirlink);
	snprintf(alias, sizeof(alias), "%s/alias", f.d.ws);
	snprintf(ep, sizeof(ep), "%s/ep", f.d.ws);
	snprintf(hook, sizeof(hook), "%s/.git/hooks/pre-commit", f.d.ws);
	if (!ASSERT_TRUE(symlink(f.open, dirlink) == 0 && esc_copy_exec(ep) &&
			 esc_sh("mkdir -p %s/.git/hooks && echo '#!/bin/sh' > %s && chmod 777 %s && chown -R %d:%d %s/.git",
				f.d.ws, hook, hook, ESC_NOBODY, ESC_NOBODY, f.d.ws),
			 "fixture files"))
		return;
	ktest_events();

	/* case 1: `..` */
	esc_run(&r, ro, f.d.ws, STEPS("cat", dotdot));
	esc_audited(&r, "ok SECRET\n", "file_open", "file.read.denied", f.secret, "read through ..");
	/* case 2: intermediate symlink */
	esc_run(&r, ro, f.d.ws, STEPS("cat", via));
	esc_audited(&r, "ok SECRET\n", "file_open", "file.read.denied", f.secret, "read through a symlink");
	/* case 4: hard link of a denied file */
	esc_run(&r, rw, f.d.ws, STEPS("link", f.secret, alias));
	esc_audited(&r, "ok\n", "path_link", "file.link.denied", f.secret, "hard link into the workspace");
	/* case 5: a workspace file renamed over a denied file */
	esc_run(&r, rw, f.d.ws, STEPS("rename", f.d.ws_file, f.secret));
	esc_audited(&r, "ok\n", "path_rename", "file.create.denied", f.secret, "rename over a denied file");
	/* case 6: another process's /proc entries */
	{
		char *argv[] = {(char *)ktest_helper("eprobe"), "hold", f.open, NULL};
		if (!ASSERT_EQ(ktest_spawn(argv, ESC_NOBODY, &holder), 0, "holder") ||
		    !ASSERT_TRUE(ktest_read_line(holder.out, line, sizeof(line), 20000) &&
					 sscanf(line, "ready %d %d", &pid, &fd) == 2,
				 "holder ready"))
			return;
	}
	snprintf(environ_path, sizeof(environ_path), "/proc/%d/environ", pid);
	esc_run(&r, ro, f.d.ws, STEPS("open", environ_path, "r"));
	esc_audited(&r, "ok\n", "file_open", "file.proc.denied", environ_path, "another process's environ");
	ktest_close_stdin(&holder);
	ktest_wait(&holder, 10000);
	ktest_proc_close(&holder);
	/* case 9: exec of a workspace binary and of a memfd */
	esc_run(&r, ro, f.d.ws, STEPS("exec", ep, "hello"));
	esc_audited(&r, "ok\n", NULL, "file.exec.denied", ep, "exec of a workspace binary");
	esc_run(&r, ro, f.d.ws, STEPS("memfd-exec", ktest_helper("eprobe"), "ep", "hello"));
	esc_audited(&r, "ok\n", NULL, "file.exec.denied", "/memfd:eprobe (deleted)", "fexecve of a memfd");
	/* case 10: the git hook */
	esc_run(&r, rw, f.d.ws, STEPS("open", hook, "w"));
	esc_audited(&r, "ok\n", "file_open", "file.write.denied", hook, "write to .git/hooks/pre-commit");
	esc_run(&r, rw, f.d.ws, STEPS("chmod", hook, "755"));
	esc_audited(&r, "ok\n", "path_chmod", "file.write.denied", hook, "chmod of .git/hooks/pre-commit");
	/* case 11: an abstract socket outside the run */
	snprintf(sabs, sizeof(sabs), "@custode-ktest-%d-audit", (int)getpid());
	memcpy(sa.sun_path + 1, sabs + 1, strlen(sabs) - 1);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (!ASSERT_TRUE(lfd >= 0 &&
				 bind(lfd, (struct sockaddr *)&sa,
				      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(sabs))) == 0 &&
				 listen(lfd, 8) == 0,
			 "abstract listener"))
		return;
	esc_run(&r, ro, f.d.ws, STEPS("unix-connect", sabs));
	esc_audited(&r, "ok\n", "unix_stream_connect", "unix.abstract.denied", NULL, "connect to an abstract socket");
	close(lfd);
}
