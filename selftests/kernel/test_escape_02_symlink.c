// SPDX-License-Identifier: Apache-2.0
/*
 * Escape matrix, case 2: a symlink in the workspace (intermediate or final,
 * absolute or relative, chained) pointing at a denied file or directory.
 * The kernel follows the links; the engine sees the file they led to.
 */
#include "test_escape_common.c"

KTEST(escape_02_intermediate_symlink)
{
	static struct ktest_result r;
	struct esc_fix f;
	char link[4][512], path[4][600], mine[512], through[600], created[600];
	const char *const ro[] = {"--profile", "read", NULL}, *const rw[] = {"--profile", "workspace-write", NULL};

	ktest_need_lsm();
	if (!ASSERT_TRUE(esc_fixture(&f), "fixture"))
		return;
	/* made outside the run (a checked-out repository may contain any symlink) */
	snprintf(link[0], sizeof(link[0]), "%s/dirlink", f.d.ws);   /* -> <root>/open (absolute) */
	snprintf(link[1], sizeof(link[1]), "%s/rellink", f.d.ws);   /* -> ../open (relative) */
	snprintf(link[2], sizeof(link[2]), "%s/chain", f.d.ws);     /* -> dirlink (a link to a link) */
	snprintf(link[3], sizeof(link[3]), "%s/filelink", f.d.ws);  /* -> <root>/open/secret (final component) */
	if (!ASSERT_TRUE(symlink(f.open, link[0]) == 0 && symlink("../open", link[1]) == 0 &&
			 symlink("dirlink", link[2]) == 0 && symlink(f.secret, link[3]) == 0,
			 "symlinks"))
		return;
	for (int i = 0; i < 3; i++)
		snprintf(path[i], sizeof(path[i]), "%s/secret", link[i]);
	snprintf(path[3], sizeof(path[3]), "%s", link[3]);
	ktest_events();
	for (int i = 0; i < 4; i++) {
		esc_control(ESC_NOBODY, STEPS("cat", path[i]), "ok SECRET\n", path[i]);
		esc_run(&r, ro, f.d.ws, STEPS("cat", path[i]));
		esc_denied(&r, "EACCES\n", "file_open", "file.read.denied", f.secret, path[i]);
	}

	/* in workspace-write the run may make its own symlink; writing or creating through it still lands outside */
	snprintf(mine, sizeof(mine), "%s/mine", f.d.ws);
	snprintf(through, sizeof(through), "%s/secret", mine);
	esc_run(&r, rw, f.d.ws, STEPS("symlink", f.open, mine, "+", "open", through, "w"));
	esc_denied(&r, "ok\nEACCES\n", "file_open", "file.write.denied", f.secret, "write through a run-made symlink");
	snprintf(through, sizeof(through), "%s/planted", mine);
	snprintf(created, sizeof(created), "%s/planted", f.open);
	esc_run(&r, rw, f.d.ws, STEPS("open", through, "x"));
	esc_denied(&r, "EACCES\n", "path_mknod", "file.create.denied", created, "create through a symlinked directory");
	ASSERT_TRUE(access(created, F_OK) != 0, "nothing was planted");
	esc_control(ESC_NOBODY, STEPS("open", through, "x"), "ok\n", "create through a symlinked directory");
}
