// SPDX-License-Identifier: Apache-2.0
/*
 * Escape matrix, case 13: very long and very deep paths. A path the engine
 * can't resolve in full is denied with its own reason, never decided on a
 * truncated prefix: bpf_d_path (file_open, exec, mmap) fails past PATH_MAX
 * (path.too_long); the engine's own walk (path_* hooks, mprotect, unix
 * sockets) stops past 64 components or 4096 bytes (path.too_long). Within
 * the limits the path is resolved in full and matched like any other.
 *
 * The trees are built with mkdirat/openat chains: no single string passed to
 * the kernel is longer than a component.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "test_escape_common.c"

/* dir/<LEN×'d'>/…(n times)/f, a 0666 file, all owned by nobody */
static bool deep_tree(const char *dir, int n, int len)
{
	char name[256];
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC), ffd;

	memset(name, 'd', (size_t)len);
	name[len] = 0;
	for (int i = 0; fd >= 0 && i < n; i++) {
		int next;

		if (mkdirat(fd, name, 0777) < 0)
			return false;
		next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (next >= 0 && fchown(next, ESC_NOBODY, ESC_NOBODY) < 0)
			return false;
		close(fd);
		fd = next;
	}
	if (fd < 0)
		return false;
	ffd = openat(fd, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
	close(fd);
	if (ffd < 0)
		return false;
	if (write(ffd, "deep\n", 5) != 5 || fchmod(ffd, 0666) < 0 || fchown(ffd, ESC_NOBODY, ESC_NOBODY) < 0)
		return false;
	close(ffd);
	return true;
}

/* An event of reason on hook whose path is marked incomplete (no truncated path reported as if whole). */
static void too_long_event(const char *hook, const char *what)
{
	json_t *events = ktest_events(), *ev = esc_event(events, hook, "path.too_long", NULL);
	char label[256];

	snprintf(label, sizeof(label), "%s: %s/path.too_long event", what, hook);
	if (ASSERT_TRUE(ev != NULL, label)) {
		snprintf(label, sizeof(label), "%s: path_complete=false", what);
		ASSERT_TRUE(json_is_false(json_object_get(json_object_get(ev, "file"), "path_complete")), label);
		snprintf(label, sizeof(label), "%s: enforced", what);
		ASSERT_TRUE(json_is_true(json_object_get(ev, "enforced")), label);
	} else {
		size_t i;
		json_t *e;
		json_array_foreach(events, i, e) {
			char *d = json_dumps(e, JSON_COMPACT);
			ktest_log("  event: %.400s", d ? d : "?");
			free(d);
		}
	}
	json_decref(events);
}

KTEST(escape_13_long_paths)
{
	static struct ktest_result r;
	struct esc_fix f;
	char deep_out[400], created[400], created2[400], ctl[400];
	const char *const ro[] = {"--profile", "read", NULL}, *const rw[] = {"--profile", "workspace-write", NULL};

	ktest_need_lsm();
	if (!ASSERT_TRUE(esc_fixture(&f), "fixture"))
		return;
	snprintf(deep_out, sizeof(deep_out), "%s/deep", f.open);
	snprintf(created, sizeof(created), "%s/new", f.d.ws);
	snprintf(created2, sizeof(created2), "%s/new2", f.d.ws);
	snprintf(ctl, sizeof(ctl), "%s/ctl", f.d.ws);
	/* 17 components of 250 bytes: the file's path is over 4096 bytes; 200 components of 1 byte: ~420 bytes */
	if (!ASSERT_TRUE(deep_tree(f.d.ws, 17, 250), "a >4096-byte path in the workspace") ||
	    !ASSERT_TRUE(mkdir(deep_out, 0777) == 0 && deep_tree(deep_out, 200, 1), "200 components outside") ||
	    !ASSERT_TRUE(deep_tree(f.d.ws, 200, 1), "200 components in the workspace"))
		return;
	ktest_events();

	/* > 4096 bytes: denied with path.too_long, though the file is in the workspace */
	esc_control(ESC_NOBODY, STEPS("deep-open", f.d.ws, "17", "250", "r"), "ok\n", "open a >4096-byte path");
	esc_run(&r, ro, f.d.ws, STEPS("deep-open", f.d.ws, "17", "250", "r"));
	ASSERT_STREQ(r.out, "EACCES\n", "open of a >4096-byte path in a run");
	ASSERT_CONTAINS(r.err, "path.too_long", "summary");
	too_long_event("file_open", ">4096 bytes, read");
	esc_run(&r, rw, f.d.ws, STEPS("deep-open", f.d.ws, "17", "250", "w"));
	ASSERT_STREQ(r.out, "EACCES\n", "write to a >4096-byte path in a run");
	too_long_event("file_open", ">4096 bytes, write");
	/* creating such a tree: the mkdir that crosses 4096 bytes is refused by the walk */
	esc_control(ESC_NOBODY, STEPS("mkdir", ctl, "+", "deep-mkdir", ctl, "17", "250"), "ok\nok\n",
		    "create a >4096-byte path");
	esc_run(&r, rw, f.d.ws, STEPS("mkdir", created, "+", "deep-mkdir", created, "17", "250"));
	ASSERT_STREQ(r.out, "ok\nwalk:EACCES\n", "the mkdir past 4096 bytes is refused");
	too_long_event("path_mkdir", ">4096 bytes, mkdir");

	/* 200 components, resolved in full by bpf_d_path: matched like any path */
	esc_control(ESC_NOBODY, STEPS("deep-open", deep_out, "200", "1", "r"), "ok\n", "200 components outside");
	esc_run(&r, ro, f.d.ws, STEPS("deep-open", deep_out, "200", "1", "r"));
	ASSERT_STREQ(r.out, "EACCES\n", "200 components outside the workspace: denied");
	{
		json_t *events = ktest_events(), *ev = esc_event(events, "file_open", "file.read.denied", NULL);
		const char *p = ev ? json_string_value(json_object_get(json_object_get(ev, "file"), "path")) : NULL;

		if (ASSERT_TRUE(p != NULL, "a file.read.denied event with its path")) {
			ASSERT_TRUE(strncmp(p, deep_out, strlen(deep_out)) == 0 && strlen(p) > 400 &&
					    !strcmp(p + strlen(p) - 4, "/d/f"),
				    "the full 200-component path, not a prefix");
		}
		json_decref(events);
	}
	esc_run(&r, ro, f.d.ws, STEPS("deep-open", f.d.ws, "200", "1", "r"));
	esc_clean(&r, "ok\n", "200 components in the workspace: allowed (fully resolved, matched)");
	esc_run(&r, rw, f.d.ws, STEPS("deep-open", f.d.ws, "200", "1", "w"));
	esc_clean(&r, "ok\n", "200 components in the workspace: writable in workspace-write");
	/* the engine's own walk is bounded at 64 components: creation deeper is refused, with its reason (fails: see escape_13_deep_walk_exec) */
	esc_run(&r, rw, f.d.ws, STEPS("mkdir", created2, "+", "deep-mkdir", created2, "200", "1"));
	ASSERT_STREQ(r.out, "ok\nwalk:EACCES\n", "mkdir past 64 components is refused");
	too_long_event("path_mkdir", "200 components, mkdir");
}

/*
 * utimes and xattrs decide by walking identities up from the inode, at most
 * 32 levels (IDENTITY_WALK). Deeper than that the walk ends without finding
 * the workspace and the engine denies with file.write.denied: a fail-closed
 * decision on a truncated walk, reported as if the policy said no. Case 13
 * asks for path.too_long (or an allowed, fully resolved decision): this test
 * fails until the walk's end is reported as such (and `touch` deep in a
 * workspace works or is refused with path.too_long).
 */
KTEST(escape_13_deep_identity_walk)
{
	static struct ktest_result r;
	struct esc_fix f;
	const char *const rw[] = {"--profile", "workspace-write", NULL};

	ktest_need_lsm();
	if (!ASSERT_TRUE(esc_fixture(&f) && deep_tree(f.d.ws, 40, 1), "40 components in the workspace"))
		return;
	esc_control(ESC_NOBODY, STEPS("deep-utimes", f.d.ws, "40", "1"), "ok\n", "utimes 40 levels deep");
	ktest_events();
	esc_run(&r, rw, f.d.ws, STEPS("deep-utimes", f.d.ws, "40", "1"));
	if (strcmp(r.out, "ok\n")) {
		json_t *events = ktest_events();
		ASSERT_TRUE(esc_event(events, "inode_setattr", "path.too_long", NULL) != NULL,
			    "utimes 40 levels deep in the workspace: allowed, or denied with path.too_long");
		if (esc_event(events, "inode_setattr", "file.write.denied", NULL))
			ktest_log("denied as file.write.denied: the identity walk gave up at 32 levels");
		json_decref(events);
	} else {
		esc_clean(&r, "ok\n", "utimes 40 levels deep");
	}
}

/*
 * BYPASS (engine + kernel verifier): the dentry walk's depth bound is gone
 * at run time. custode_walk_step stops at `c->n >= CUSTODE_WALK_DEPTH`, but
 * the 6.1 verifier checks a bpf_loop callback once, with the state of the
 * first call (c.n == 0), finds that branch dead and removes it (see
 * `bpftool prog dump xlated` of custode_path_unlink: the load of c->n is
 * followed directly by the store into dents[]; upstream fixed the verifier
 * in 6.7, "verify callbacks as if they are called unknown number of
 * times"). So a walk over 65..~78 components (up to bpf_loop's 80
 * iterations) writes past the 64-entry dents[] ring (into the event buffer
 * of the same per-CPU value), and the build, which masks its index, reads
 * the ring rotated: /tmp/X/ws/n1/…/n62/f is decided as /n62/X/ws/n1/…/n61/f.
 * No path.too_long, a wrong path instead; and the rotated path starts with
 * the deepest names, which the run chooses.
 *
 * The exploit: in its tmp the run writes a function to $TMPDIR/usr/bin/x,
 * moves usr/ under a 62-deep chain of directories (67 components in all),
 * maps the file PROT_READ and mprotects it PROT_EXEC. file_mprotect resolves it with the walk: "/usr/bin/x/d/…/d",
 * inside the /usr rule (read, exec): allowed, and the run executes code it
 * wrote, in the read profile, where nothing writable is executable. Every
 * path_* hook (create, delete, rename, link, chmod, chown, truncate) and
 * unix-socket decision goes through the same walk.
 *
 * Fix: don't carry the bound in callback state the verifier can't see —
 * index dents[] with bpf_loop's own index (or bound `n` with an opaque mask
 * the compiler can't drop) and compare the final count with the limit in
 * the main program, where the verifier tracks it.
 */
KTEST(escape_13_deep_walk_exec)
{
	static struct ktest_result r;
	struct esc_fix f;
	char ctl[400], sh[4096], deep[200] = "";
	const char *const ro[] = {"--profile", "read", NULL};

	ktest_need_lsm();
	if (!ASSERT_TRUE(esc_fixture(&f), "fixture"))
		return;
	for (int i = 0; i < 62; i++)
		strcat(deep, "d/");
	/* control: the bytes run as code when nothing is in the way */
	snprintf(ctl, sizeof(ctl), "%s/code", f.open);
	esc_control(ESC_NOBODY, STEPS("write-code", ctl, "+", "mprotect-call", ctl), "ok\nok 42\n", "call a written function");

	/* in a run, at a shallow path of its tmp: exec denied (the walk resolves it right) */
	ktest_events();
	snprintf(sh, sizeof(sh),
		 "mkdir -p \"$TMPDIR/usr/bin\" && exec \"$0\" write-code \"$TMPDIR/usr/bin/x\" + mprotect-call \"$TMPDIR/usr/bin/x\"");
	{
		const char *cmd[] = {"/bin/sh", "-c", sh, ktest_helper("eprobe"), NULL};
		esc_run_cmd(&r, ro, f.d.ws, cmd);
	}
	esc_denied(&r, "ok\nEACCES\n", "file_mprotect", "file.exec.denied", NULL, "mprotect PROT_EXEC of a tmp file");

	/*
	 * The same file 67 components deep. Creating there would go through the
	 * rotated walk too (and be refused: the rotated path is not in the tmp),
	 * so the run writes the file shallow and renames its directory under a
	 * 62-deep chain: the rename's destination directory is 64 components
	 * deep, within the bound, and resolved right.
	 */
	snprintf(sh, sizeof(sh),
		 "D=\"$TMPDIR/%s\" && mkdir -p \"$D\" \"$TMPDIR/usr/bin\" && \"$0\" write-code \"$TMPDIR/usr/bin/x\""
		 " && mv \"$TMPDIR/usr\" \"$D\" && exec \"$0\" mprotect-call \"${D}usr/bin/x\"",
		 deep);
	{
		const char *cmd[] = {"/bin/sh", "-c", sh, ktest_helper("eprobe"), NULL};
		esc_run_cmd(&r, ro, f.d.ws, cmd);
	}
	ktest_log("67 components deep: %s%s", r.out, r.err);
	ASSERT_TRUE(strstr(r.out, "ok 42") == NULL, "BYPASS: the run executes code it wrote to its tmp (walk rotated to /usr/bin/x/...)");
	{
		json_t *events = ktest_events();
		ASSERT_TRUE(esc_event(events, "file_mprotect", "path.too_long", NULL) != NULL ||
				    esc_event(events, "file_mprotect", "file.exec.denied", NULL) != NULL,
			    "mprotect 67 components deep: denied");
		json_decref(events);
	}
}
