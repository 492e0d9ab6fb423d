// SPDX-License-Identifier: Apache-2.0
/*
 * Escape matrix, case 1: `..` out of the workspace, absolute paths, `//` and
 * `/./`. The engine decides on the path the kernel resolved (bpf_d_path of
 * the opened file, or the dentry walk for the path_* hooks), never on the
 * string the caller passed, so every spelling of a denied file is the same
 * denied file — and every spelling of an allowed one stays allowed.
 */
#include "test_escape_common.c"

KTEST(escape_01_dotdot_traversal)
{
	static struct ktest_result r;
	struct esc_fix f;
	char spell[5][1024], odd_ws[1024], create[512];
	const char *const ro[] = {"--profile", "read", NULL}, *const rw[] = {"--profile", "workspace-write", NULL};

	ktest_need_lsm();
	if (!ASSERT_TRUE(esc_fixture(&f), "fixture"))
		return;
	snprintf(spell[0], sizeof(spell[0]), "%s/../open/secret", f.d.ws);
	snprintf(spell[1], sizeof(spell[1]), "%s", f.secret);
	snprintf(spell[2], sizeof(spell[2]), "/%s//open/./secret", f.d.root); /* "//tmp/ktest-…//open/./secret" */
	snprintf(spell[3], sizeof(spell[3]), "%s/./../open/../open/secret", f.d.ws);
	snprintf(spell[4], sizeof(spell[4]), "../open/secret"); /* relative to the run's cwd, the workspace */
	ktest_events();
	for (int i = 0; i < 5; i++) {
		/* control: nobody reads the file by this spelling outside a run (cwd: the workspace, as in the run) */
		const char *cd = i == 4 ? "chdir-open" : NULL;
		if (cd)
			esc_control(ESC_NOBODY, STEPS("chdir-open", f.d.ws, spell[i], "r"), "ok\n", spell[i]);
		else
			esc_control(ESC_NOBODY, STEPS("cat", spell[i]), "ok SECRET\n", spell[i]);
		esc_run(&r, ro, f.d.ws, STEPS("cat", spell[i]));
		esc_denied(&r, "EACCES\n", "file_open", "file.read.denied", f.secret, spell[i]);
	}

	/* an allowed file by a roundabout spelling is still allowed: resolution, not string matching */
	snprintf(odd_ws, sizeof(odd_ws), "/%s/open/..//ws/./f", f.d.root);
	esc_run(&r, ro, f.d.ws, STEPS("cat", odd_ws));
	esc_clean(&r, "ok in the workspace\n", "workspace file by a roundabout path");

	/* writes and creation through `..` in workspace-write: path_* hooks resolve by the dentry walk */
	esc_control(ESC_NOBODY, STEPS("open", spell[0], "w"), "ok\n", "write through ..");
	esc_run(&r, rw, f.d.ws, STEPS("open", spell[0], "w"));
	esc_denied(&r, "EACCES\n", "file_open", "file.write.denied", f.secret, "write through ..");
	snprintf(create, sizeof(create), "%s/../open/.//new", f.d.ws);
	esc_run(&r, rw, f.d.ws, STEPS("open", create, "x"));
	snprintf(odd_ws, sizeof(odd_ws), "%s/new", f.open);
	esc_denied(&r, "EACCES\n", "path_mknod", "file.create.denied", odd_ws, "create through ..");
	ASSERT_TRUE(access(odd_ws, F_OK) != 0, "nothing was created");
	esc_control(ESC_NOBODY, STEPS("open", create, "x"), "ok\n", "create through ..");
}
