// SPDX-License-Identifier: Apache-2.0
/*
 * Escape matrix, case 8: mount --bind, unshare -m, chroot, pivot_root,
 * fsopen/fsmount/move_mount — and open_tree(OPEN_TREE_CLONE).
 *
 * Two layers refuse these in a run: the launcher's seccomp filter (issue 4:
 * mount family, setns, unshare/clone with namespace flags) and, below it,
 * the engine's LSM hooks (sb_mount, sb_umount, sb_pivotroot, move_mount,
 * path_chroot: file.mount.denied in every run, whatever its policy). The
 * filter runs first, so inside a real run it hides the hooks; the
 * engine-only checks (esc_join: a nobody process moved into the run's cgroup
 * without the filter) prove the hooks by themselves.
 *
 * Controls: nobody outside any run does each of these in an unprivileged
 * user + mount namespace (kernel.unprivileged_userns_clone=1 in the guest).
 * Without a user namespace nobody lacks CAP_SYS_ADMIN, so the kernel refuses
 * first — except mount(2), whose LSM hook runs before the capability check.
 */
#include <sys/stat.h>

#include "test_escape_common.c"

/* A refusal inside a real run: EPERM from the seccomp filter ("userns:EPERM" or the call's EPERM) or the hook. */
static void refused_in_run(const struct ktest_result *r, const char *what)
{
	char label[256];

	snprintf(label, sizeof(label), "%s: refused in a run", what);
	ASSERT_TRUE(r->code == 1 && strstr(r->out, "EPERM") != NULL, label);
	if (strstr(r->out, "userns:EPERM"))
		ktest_log("%s: the user namespace was refused by the launcher's seccomp filter", what);
}

KTEST(escape_08_mount_family)
{
	static struct ktest_result r;
	struct esc_fix f;
	struct esc_hold h;
	char a[400], b[400], n[400], nr[420], old[440];
	json_t *events;
	const char *const rw[] = {"--profile", "workspace-write", NULL};

	ktest_need_lsm();
	if (!ASSERT_TRUE(esc_fixture(&f), "fixture"))
		return;
	snprintf(a, sizeof(a), "%s/a", f.open);
	snprintf(b, sizeof(b), "%s/b", f.open);
	snprintf(n, sizeof(n), "%s/new", f.open);
	snprintf(nr, sizeof(nr), "%s/nr", n);
	snprintf(old, sizeof(old), "%s/old", nr);
	if (!ASSERT_TRUE(mkdir(a, 0777) == 0 && mkdir(b, 0777) == 0 && mkdir(n, 0777) == 0 && chmod(a, 0777) == 0 &&
			 chmod(b, 0777) == 0 && chmod(n, 0777) == 0,
			 "directories"))
		return;

	/* controls: in a user + mount namespace nobody may do all of it */
	esc_control(ESC_NOBODY, STEPS("userns", "+", "mount-bind", a, b), "ok\n", "bind mount");
	esc_control(ESC_NOBODY, STEPS("userns", "+", "mount-tmpfs", a, "+", "umount", a), "ok\nok\n", "mount + umount");
	esc_control(ESC_NOBODY, STEPS("userns", "+", "chroot", a), "ok\n", "chroot");
	/*
	 * pivot_root needs a current root that is a mount with a parent (the
	 * guest's is the initramfs rootfs, which has none): chroot into a
	 * tmpfs first, then pivot to a second tmpfs mounted below it.
	 */
	esc_control(ESC_NOBODY,
		    STEPS("userns", "+", "mount-tmpfs", n, "+", "mkdir", nr, "+", "mount-tmpfs", nr, "+", "mkdir", old, "+",
			  "chroot", n, "+", "pivot-root", "/nr", "/nr/old"),
		    "ok\nok\nok\nok\nok\nok\n", "pivot_root");
	esc_control(ESC_NOBODY, STEPS("userns", "+", "fsmount-attach", a), "ok\n", "fsopen/fsmount/move_mount");
	esc_control(ESC_NOBODY, STEPS("userns", "+", "unshare-mnt"), "ok\n", "unshare -m in the user namespace");
	/* and without one the kernel refuses nobody (no CAP_SYS_ADMIN): no control is possible there */
	esc_control(ESC_NOBODY, STEPS("unshare-mnt"), "EPERM\n", "unshare -m without a user namespace");

	/* in a real run: all refused, by whichever layer comes first */
	ktest_events();
	esc_run(&r, rw, f.d.ws, STEPS("mount-bind", a, b));
	refused_in_run(&r, "mount --bind");
	esc_run(&r, rw, f.d.ws, STEPS("userns", "+", "mount-bind", a, b));
	refused_in_run(&r, "unshare -Urm + mount --bind");
	esc_run(&r, rw, f.d.ws, STEPS("userns", "+", "chroot", a));
	refused_in_run(&r, "chroot");
	esc_run(&r, rw, f.d.ws,
		STEPS("userns", "+", "mount-tmpfs", n, "+", "mkdir", nr, "+", "mount-tmpfs", nr, "+", "mkdir", old, "+",
		      "chroot", n, "+", "pivot-root", "/nr", "/nr/old"));
	refused_in_run(&r, "pivot_root");
	esc_run(&r, rw, f.d.ws, STEPS("userns", "+", "fsmount-attach", a));
	refused_in_run(&r, "fsmount");
	esc_run(&r, rw, f.d.ws, STEPS("unshare-mnt"));
	refused_in_run(&r, "unshare -m");
	events = ktest_events();
	json_decref(events);

	/* the engine alone */
	if (!ASSERT_TRUE(esc_hold(&h, rw, f.d.ws), "holder run"))
		return;
	/* mount(2)'s hook runs before the capability check: refused with an event even without a namespace */
	esc_join(&h, &r, ESC_NOBODY, STEPS("wait", "+", "mount-bind", a, b));
	esc_engine_denied(&r, "EPERM\n", "sb_mount", "file.mount.denied", NULL, "mount --bind");
	esc_join(&h, &r, ESC_NOBODY, STEPS("wait", "+", "userns", "+", "mount-bind", a, b));
	esc_engine_denied(&r, "EPERM\n", "sb_mount", "file.mount.denied", NULL, "unshare -Urm + mount --bind");
	esc_join(&h, &r, ESC_NOBODY, STEPS("wait", "+", "userns", "+", "mount-tmpfs", a));
	esc_engine_denied(&r, "EPERM\n", "sb_mount", "file.mount.denied", NULL, "mount -t tmpfs");
	/* chroot's hook is path_chroot, recorded with the pivot_root hook id */
	esc_join(&h, &r, ESC_NOBODY, STEPS("wait", "+", "userns", "+", "chroot", a));
	esc_engine_denied(&r, "EPERM\n", "path_chroot", "file.mount.denied", NULL, "chroot");
	/* the mounts and the chroot are made before the process enters the run: only pivot_root is left to refuse */
	esc_join(&h, &r, ESC_NOBODY,
		 STEPS("userns", "+", "mount-tmpfs", n, "+", "mkdir", nr, "+", "mount-tmpfs", nr, "+", "mkdir", old, "+",
		       "chroot", n, "+", "wait", "+", "pivot-root", "/nr", "/nr/old"));
	esc_engine_denied(&r, "ok\nok\nok\nok\nok\nEPERM\n", "sb_pivotroot", "file.mount.denied", NULL, "pivot_root");
	/* likewise a mount made before entering the run may not be unmounted in it */
	esc_join(&h, &r, ESC_NOBODY, STEPS("userns", "+", "mount-tmpfs", a, "+", "wait", "+", "umount", a));
	esc_engine_denied(&r, "ok\nEPERM\n", "sb_umount", "file.mount.denied", NULL, "umount");
	/* fsopen, fsconfig and fsmount have no LSM hook; attaching the new mount does */
	esc_join(&h, &r, ESC_NOBODY, STEPS("wait", "+", "userns", "+", "fsmount-attach", a));
	esc_engine_denied(&r, "EPERM\n", "move_mount", "file.mount.denied", NULL, "fsmount + move_mount");
	esc_release(&h);
}

/*
 * BYPASS (engine; held in a full run only by the seccomp filter).
 *
 * open_tree(dir, OPEN_TREE_CLONE) in an unprivileged user + mount namespace
 * makes a detached copy of a directory tree — no LSM hook is called — and
 * files reached through its fd are named by d_path (and by the engine's own
 * walk, which stops at a mount that is its own parent) relative to that
 * copy's root, as if it were "/": <ws>/usr/bin/ep becomes "/usr/bin/ep",
 * <denied dir>/etc/token becomes "/etc/token". The path rules then grant
 * what the policy never meant: exec of a workspace binary (read profile: the
 * workspace is not executable), reads under a denied directory whose layout
 * matches an allowed prefix (…/etc, …/usr, …/opt, …/proc, ~/.local/bin…).
 * The same naming applies to files on lazily unmounted trees and in other
 * mount namespaces (d_path stops at their root too).
 *
 * The engine should refuse paths that don't reach the task's root
 * (path.unresolved): d_path's prepend_path knows (it returns 2 for a
 * detached mount), bpf_d_path does not say; the engine's walk can check that
 * it ended at the task's root mount, and file_open can walk f_path.mnt's
 * parents to the same end.
 */
KTEST(escape_08_detached_mount_alias)
{
	static struct ktest_result r;
	struct esc_fix f;
	struct esc_hold h;
	char usr[400], bin[420], ep[440], priv[400], etc[420], token[440];
	const char *const ro[] = {"--profile", "read", NULL};

	ktest_need_lsm();
	if (!ASSERT_TRUE(esc_fixture(&f), "fixture"))
		return;
	snprintf(usr, sizeof(usr), "%s/usr", f.d.ws);
	snprintf(bin, sizeof(bin), "%s/bin", usr);
	snprintf(ep, sizeof(ep), "%s/ep", bin);
	snprintf(priv, sizeof(priv), "%s/priv", f.open);
	snprintf(etc, sizeof(etc), "%s/etc", priv);
	snprintf(token, sizeof(token), "%s/token", etc);
	if (!ASSERT_TRUE(mkdir(usr, 0755) == 0 && mkdir(bin, 0755) == 0 && esc_copy_exec(ep) && mkdir(priv, 0755) == 0 &&
			 mkdir(etc, 0755) == 0 && ktest_write_file(token, "TOKEN\n", 0644) && chmod(token, 0644) == 0,
			 "fixture files"))
		return;

	/* controls: the detached copy works for nobody outside a run */
	esc_control(ESC_NOBODY, STEPS("userns", "+", "tree-exec", f.d.ws, "usr/bin/ep", "ep", "hello"), "ok\n",
		    "exec through a detached copy");
	esc_control(ESC_NOBODY, STEPS("userns", "+", "tree-cat", priv, "etc/token"), "ok TOKEN\n",
		    "read through a detached copy");

	/* what the policy says about these files */
	ktest_events();
	esc_run(&r, ro, f.d.ws, STEPS("exec", ep, "hello"));
	esc_denied(&r, "EACCES\n", NULL, "file.exec.denied", ep, "direct exec of the workspace binary");
	esc_run(&r, ro, f.d.ws, STEPS("cat", token));
	esc_denied(&r, "EACCES\n", "file_open", "file.read.denied", token, "direct read of the denied token");

	/* a real run: refused (today by the launcher's seccomp filter, before any hook) */
	esc_run(&r, ro, f.d.ws, STEPS("userns", "+", "tree-exec", f.d.ws, "usr/bin/ep", "ep", "hello"));
	ASSERT_TRUE(strstr(r.out, "ok") == NULL, "exec through a detached copy in a run");
	esc_run(&r, ro, f.d.ws, STEPS("userns", "+", "tree-cat", priv, "etc/token"));
	ASSERT_TRUE(strstr(r.out, "ok") == NULL, "read through a detached copy in a run");
	ktest_events();

	/* BYPASS: the engine alone lets both through (no event at all: the paths look allowed) */
	if (!ASSERT_TRUE(esc_hold(&h, ro, f.d.ws), "holder run"))
		return;
	esc_join(&h, &r, ESC_NOBODY, STEPS("wait", "+", "userns", "+", "tree-exec", f.d.ws, "usr/bin/ep", "ep", "hello"));
	ASSERT_TRUE(strstr(r.out, "ok") == NULL, "BYPASS: exec of a workspace binary through a detached copy (engine only)");
	ktest_log("engine only, tree-exec: %s", r.out);
	esc_join(&h, &r, ESC_NOBODY, STEPS("wait", "+", "userns", "+", "tree-cat", priv, "etc/token"));
	ASSERT_TRUE(strstr(r.out, "ok") == NULL, "BYPASS: read below a denied directory through a detached copy (engine only)");
	ktest_log("engine only, tree-cat: %s", r.out);
	esc_release(&h);
	json_decref(ktest_events());
}
