// SPDX-License-Identifier: Apache-2.0
/*
 * Escape matrix, case 5: rename. lsm/path_rename asks delete at the source
 * and create (plus delete, if something is replaced) at the destination; a
 * RENAME_EXCHANGE asks both at both ends. So a denied file can't be moved
 * into the workspace (where its new name would be readable and writable) and
 * a workspace file can't be moved over a denied path.
 */
#include <sys/stat.h>

#include "test_escape_common.c"

/* <open>/sdir/inner: a directory outside every rule that nobody may change by DAC */
static bool make_sdir(struct esc_fix *f, char *sdir, size_t n)
{
	char inner[700];

	snprintf(sdir, n, "%s/sdir", f->open);
	snprintf(inner, sizeof(inner), "%s/inner", sdir);
	return mkdir(sdir, 0777) == 0 && chmod(sdir, 0777) == 0 && ktest_write_file(inner, "INNER\n", 0666);
}

KTEST(escape_05_rename)
{
	static struct ktest_result r;
	struct esc_fix f, c[5];
	char stolen[512], sdir[600], wsdir[512], newname[512], cs[5][700];
	const char *const rw[] = {"--profile", "workspace-write", NULL};

	ktest_need_lsm();
	if (!ASSERT_TRUE(esc_fixture(&f) && make_sdir(&f, sdir, sizeof(sdir)), "fixture"))
		return;
	for (int i = 0; i < 5; i++)
		if (!ASSERT_TRUE(esc_fixture(&c[i]) && make_sdir(&c[i], cs[i], sizeof(cs[i])), "control fixture"))
			return;
	snprintf(stolen, sizeof(stolen), "%s/stolen", f.d.ws);
	snprintf(wsdir, sizeof(wsdir), "%s/sdir", f.d.ws);
	snprintf(newname, sizeof(newname), "%s/planted", f.open);
	ktest_events();

	/* a denied file into the workspace: delete at the source */
	esc_run(&r, rw, f.d.ws, STEPS("rename", f.secret, stolen));
	esc_denied(&r, "EACCES\n", "path_rename", "file.delete.denied", f.secret, "denied file renamed into the workspace");
	snprintf(stolen, sizeof(stolen), "%s/stolen", c[0].d.ws);
	esc_control(ESC_NOBODY, STEPS("rename", c[0].secret, stolen), "ok\n", "rename into the workspace");

	/* a denied directory into the workspace */
	esc_run(&r, rw, f.d.ws, STEPS("rename", sdir, wsdir));
	esc_denied(&r, "EACCES\n", "path_rename", "file.delete.denied", sdir, "denied directory renamed into the workspace");
	snprintf(wsdir, sizeof(wsdir), "%s/sdir", c[1].d.ws);
	esc_control(ESC_NOBODY, STEPS("rename", cs[1], wsdir), "ok\n", "directory into the workspace");

	/* a workspace file over a denied path: create (and delete) at the destination */
	esc_run(&r, rw, f.d.ws, STEPS("rename", f.d.ws_file, f.secret));
	esc_denied(&r, "EACCES\n", "path_rename", "file.create.denied", f.secret, "workspace file over a denied file");
	esc_control(ESC_NOBODY, STEPS("rename", c[2].d.ws_file, c[2].secret), "ok\n", "workspace file over the secret");

	/* a workspace file to a new name in a denied directory */
	esc_run(&r, rw, f.d.ws, STEPS("rename", f.d.ws_file, newname));
	esc_denied(&r, "EACCES\n", "path_rename", "file.create.denied", newname, "workspace file into a denied directory");
	snprintf(newname, sizeof(newname), "%s/planted", c[3].open);
	esc_control(ESC_NOBODY, STEPS("rename", c[3].d.ws_file, newname), "ok\n", "workspace file into a denied directory");

	/* RENAME_EXCHANGE: both ends at once */
	esc_run(&r, rw, f.d.ws, STEPS("exchange", f.d.ws_file, f.secret));
	esc_denied(&r, "EACCES\n", "path_rename", "file.create.denied", f.secret, "exchange with a denied file");
	esc_control(ESC_NOBODY, STEPS("exchange", c[4].d.ws_file, c[4].secret), "ok\n", "exchange");

	/* nothing moved */
	{
		static struct ktest_result ok;
		esc_host(&ok, -1, STEPS("cat", f.secret, "+", "cat", f.d.ws_file));
		ASSERT_STREQ(ok.out, "ok SECRET\nok in the workspace\n", "both files where they were");
	}
}
