// SPDX-License-Identifier: Apache-2.0
/*
 * Escape matrix, case 9: executing what the policy doesn't make executable.
 * The exec class is asked by every kernel path that turns a file into code:
 * the exec open (file_open with __FMODE_EXEC) and bprm_check_security for
 * execve/execveat/fexecve and each interpreter of a #! chain; mmap_file with
 * PROT_EXEC (ld.so mapping a binary it was handed, dlopen); file_mprotect
 * adding PROT_EXEC later. A memfd is "/memfd:NAME (deleted)": no rule grants
 * it.
 *
 * Not covered, by design: an allowed interpreter reading a readable script
 * (`sh ./script.sh`) is a read; a program copying bytes into anonymous
 * memory and jumping there is not a file exec (seccomp/W^X territory).
 */
#include "test_escape_common.c"

#define LDSO "/lib64/ld-linux-x86-64.so.2"

KTEST(escape_09_exec_paths)
{
	static struct ktest_result r;
	struct esc_fix f;
	char ep[400], script[400], mine[400], sh_ctl[1024], sh_run[1024];
	const char *const ro[] = {"--profile", "read", NULL}, *const rw[] = {"--profile", "workspace-write", NULL};
	const char *eprobe = ktest_helper("eprobe"), *memfd = "/memfd:eprobe (deleted)";

	ktest_need_lsm();
	if (!ASSERT_TRUE(esc_fixture(&f), "fixture"))
		return;
	snprintf(ep, sizeof(ep), "%s/ep", f.d.ws);
	snprintf(script, sizeof(script), "%s/script.sh", f.d.ws);
	if (!ASSERT_TRUE(esc_copy_exec(ep) && ktest_write_file(script, "#!/bin/sh\necho script-ran\n", 0755) &&
			 esc_sh("chmod 755 %s", script),
			 "a binary and a script in the workspace"))
		return;
	ktest_events();

	/* a binary copied into the (read-only, non-executable) workspace */
	esc_control(ESC_NOBODY, STEPS("exec", ep, "hello"), "ok\n", "exec of the copy");
	esc_run(&r, ro, f.d.ws, STEPS("exec", ep, "hello"));
	esc_denied(&r, "EACCES\n", NULL, "file.exec.denied", ep, "exec of a workspace binary");

	/* exec from memfd_create */
	esc_control(ESC_NOBODY, STEPS("memfd-exec", eprobe, "ep", "hello"), "ok\n", "fexecve of a memfd");
	esc_run(&r, ro, f.d.ws, STEPS("memfd-exec", eprobe, "ep", "hello"));
	esc_denied(&r, "EACCES\n", NULL, "file.exec.denied", memfd, "fexecve of a memfd");
	esc_control(ESC_NOBODY, STEPS("memfd-mmap-exec", eprobe), "ok\n", "PROT_EXEC mapping of a memfd");
	esc_run(&r, ro, f.d.ws, STEPS("memfd-mmap-exec", eprobe));
	esc_denied(&r, "EACCES\n", "mmap_file", "file.exec.denied", memfd, "PROT_EXEC mapping of a memfd");

	/* through the dynamic loader: ld.so is allowed, its mapping of the binary is not */
	esc_control(ESC_NOBODY, STEPS("exec", LDSO, ep, "hello"), "ok\n", "ld.so ./binary");
	esc_run(&r, ro, f.d.ws, STEPS("exec", LDSO, ep, "hello"));
	ASSERT_TRUE(r.code != 0, "ld.so ./binary fails");
	esc_denied(&r, "", "mmap_file", "file.exec.denied", ep, "ld.so ./binary");

	/* a script with a shebang to an allowed interpreter, at a denied path */
	esc_control(ESC_NOBODY, STEPS("exec", script), "script-ran\n", "exec of the script");
	esc_run(&r, ro, f.d.ws, STEPS("exec", script));
	esc_denied(&r, "EACCES\n", NULL, "file.exec.denied", script, "exec of a #! script in the workspace");
	/* documented limit: the interpreter reading the script is a read */
	esc_run(&r, ro, f.d.ws, STEPS("exec", "/bin/sh", script));
	esc_clean(&r, "script-ran\n", "sh ./script.sh is a read of the script");

	/* PROT_EXEC mappings and mprotect of workspace files */
	esc_control(ESC_NOBODY, STEPS("mmap-exec", ep), "ok\n", "mmap PROT_EXEC");
	esc_run(&r, ro, f.d.ws, STEPS("mmap-exec", ep));
	esc_denied(&r, "EACCES\n", "mmap_file", "file.exec.denied", ep, "mmap PROT_EXEC of a workspace file");
	esc_control(ESC_NOBODY, STEPS("mprotect-exec", f.d.ws_file), "ok\n", "mprotect PROT_EXEC");
	esc_run(&r, ro, f.d.ws, STEPS("mprotect-exec", f.d.ws_file));
	esc_denied(&r, "EACCES\n", "file_mprotect", "file.exec.denied", f.d.ws_file, "mprotect PROT_EXEC of a file mapping");

	/* workspace-write: the run copies a binary in itself, into the workspace and into its tmp */
	snprintf(mine, sizeof(mine), "%s/mine", f.d.ws);
	snprintf(sh_ctl, sizeof(sh_ctl), "cd %s && cp %s ./mine && chmod 755 mine && ./mine hello && rm mine", f.d.ws, eprobe);
	{
		char *argv[] = {"/bin/sh", "-c", sh_ctl, NULL};
		ktest_run(argv, ESC_NOBODY, 60000, &r);
		ASSERT_STREQ(r.out, "ok\n", "control: nobody copies and runs a binary");
	}
	snprintf(sh_run, sizeof(sh_run), "cp %s ./mine && chmod 755 mine && ./mine hello", eprobe);
	esc_run_sh(&r, rw, f.d.ws, sh_run);
	ASSERT_EQ(r.code, 126, "sh: cannot execute");
	esc_denied(&r, "", NULL, "file.exec.denied", mine, "exec of a binary the run wrote to the workspace");
	snprintf(sh_run, sizeof(sh_run), "cp %s \"$TMPDIR/mine\" && chmod 755 \"$TMPDIR/mine\" && \"$TMPDIR/mine\" hello",
		 eprobe);
	esc_run_sh(&r, rw, f.d.ws, sh_run);
	ASSERT_EQ(r.code, 126, "sh: cannot execute from tmp");
	esc_denied(&r, "", NULL, "file.exec.denied", NULL, "exec of a binary the run wrote to its tmp");
}
