// SPDX-License-Identifier: Apache-2.0
/*
 * Escape matrix, case 10: .git/hooks and .git/config in a workspace-write
 * run. The profile leaves them read-only inside a writable workspace; every
 * hook that changes a name or a file enforces it: file_open (write, append,
 * O_TRUNC), path_mknod/mkdir/symlink (create), path_unlink/rmdir (delete),
 * path_link (create at the new name), path_rename (delete at the source,
 * create at the destination; directories may not be renamed onto or off the
 * paths above a narrowing rule, so .git and .git/hooks can't be swapped
 * out), path_truncate/chmod/chown and utimes/xattrs (write).
 */
#include <stdlib.h>

#include "test_escape_common.c"

/* <ws>/.git as git makes it, owned by the run's user, and <ws>/evil, an executable script */
static bool make_git(const char *ws)
{
	return esc_sh("cd %s && mkdir -p .git/hooks/empty.d .git/objects/info .git/refs/heads && echo 'ref: refs/heads/main' > .git/HEAD"
		      " && printf '[core]\\n\\tbare = false\\n' > .git/config"
		      " && printf '#!/bin/sh\\necho the user hook\\n' > .git/hooks/pre-commit && chmod 777 .git/hooks/pre-commit"
		      " && chmod 666 .git/config && printf '#!/bin/sh\\necho evil\\n' > evil && chmod 777 evil"
		      " && chown -R %d:%d .git evil",
		      ws, ESC_NOBODY, ESC_NOBODY);
}

struct git_attack {
	const char *what;
	const char *steps[8]; /* with "W/" standing for the workspace */
	const char *hook, *reason, *path; /* path: "W/..." or NULL */
};

static const struct git_attack attacks[] = {
	{"write the hook", {"open", "W/.git/hooks/pre-commit", "w"}, "file_open", "file.write.denied", "W/.git/hooks/pre-commit"},
	{"append to the hook", {"open", "W/.git/hooks/pre-commit", "a"}, "file_open", "file.write.denied", "W/.git/hooks/pre-commit"},
	{"O_TRUNC the hook", {"open", "W/.git/hooks/pre-commit", "t"}, "file_open", "file.write.denied", "W/.git/hooks/pre-commit"},
	{"write the config", {"open", "W/.git/config", "w"}, "file_open", "file.write.denied", "W/.git/config"},
	{"create a hook", {"open", "W/.git/hooks/post-checkout", "x"}, "path_mknod", "file.create.denied", "W/.git/hooks/post-checkout"},
	{"mkfifo in hooks", {"mkfifo", "W/.git/hooks/pre-push"}, "path_mknod", "file.create.denied", "W/.git/hooks/pre-push"},
	{"mkdir in hooks", {"mkdir", "W/.git/hooks/sub"}, "path_mkdir", "file.create.denied", "W/.git/hooks/sub"},
	{"symlink a hook", {"symlink", "W/evil", "W/.git/hooks/pre-push"}, "path_symlink", "file.create.denied", "W/.git/hooks/pre-push"},
	{"hard link a hook", {"link", "W/evil", "W/.git/hooks/pre-push"}, "path_link", "file.create.denied", "W/.git/hooks/pre-push"},
	{"delete the hook", {"unlink", "W/.git/hooks/pre-commit"}, "path_unlink", "file.delete.denied", "W/.git/hooks/pre-commit"},
	{"rename over the hook", {"rename", "W/evil", "W/.git/hooks/pre-commit"}, "path_rename", "file.create.denied", "W/.git/hooks/pre-commit"},
	{"exchange with the hook", {"exchange", "W/evil", "W/.git/hooks/pre-commit"}, "path_rename", "file.create.denied", "W/.git/hooks/pre-commit"},
	{"rename over the config", {"rename", "W/evil", "W/.git/config"}, "path_rename", "file.create.denied", "W/.git/config"},
	{"rename the config away", {"rename", "W/.git/config", "W/config.old"}, "path_rename", "file.delete.denied", "W/.git/config"},
	{"chmod the hook", {"chmod", "W/.git/hooks/pre-commit", "755"}, "path_chmod", "file.write.denied", "W/.git/hooks/pre-commit"},
	{"chown the hook", {"chown-self", "W/.git/hooks/pre-commit"}, "path_chown", "file.write.denied", "W/.git/hooks/pre-commit"},
	{"truncate the hook", {"truncate", "W/.git/hooks/pre-commit"}, "path_truncate", "file.write.denied", "W/.git/hooks/pre-commit"},
	/* .git/config: the path rule (read only) refuses; its identity would too */
	{"truncate the config", {"truncate", "W/.git/config"}, "path_truncate", "file.write.denied", "W/.git/config"},
	{"chmod the config", {"chmod", "W/.git/config", "600"}, "path_chmod", "file.write.denied", "W/.git/config"},
	{"utimes on the hook", {"utimes", "W/.git/hooks/pre-commit"}, "inode_setattr", "file.write.denied", NULL},
	{"setxattr on the hook", {"setxattr", "W/.git/hooks/pre-commit", "user.custode"}, "inode_setxattr", "file.write.denied", NULL},
	{"rename hooks away", {"rename", "W/.git/hooks", "W/hooks.old"}, "path_rename", "file.delete.denied", "W/.git/hooks"},
	{"rmdir in hooks", {"rmdir", "W/.git/hooks/empty.d"}, "path_rmdir", "file.delete.denied", "W/.git/hooks/empty.d"},
	{"rename .git away", {"rename", "W/.git", "W/git.old"}, "path_rename", "file.delete.denied", "W/.git"},
};

/* Replace a leading "W/" by ws + "/". */
static const char *at(const char *ws, const char *s, char *buf, size_t n)
{
	if (!s || strncmp(s, "W/", 2))
		return s;
	snprintf(buf, n, "%s/%s", ws, s + 2);
	return buf;
}

static void steps_at(const char *ws, const struct git_attack *a, const char **out, char bufs[8][600])
{
	int i;

	for (i = 0; i < 7 && a->steps[i]; i++)
		out[i] = at(ws, a->steps[i], bufs[i], sizeof(bufs[i]));
	out[i] = NULL;
}

KTEST(escape_10_git_hooks_config)
{
	static struct ktest_result r;
	struct esc_fix f;
	const char *const rw[] = {"--profile", "workspace-write", NULL};
	char bufs[8][600], pbuf[600];
	const char *steps[8];

	ktest_need_lsm();
	if (!ASSERT_TRUE(esc_fixture(&f) && make_git(f.d.ws), "fixture"))
		return;
	ktest_events();
	for (size_t i = 0; i < sizeof(attacks) / sizeof(attacks[0]); i++) {
		const struct git_attack *a = &attacks[i];
		struct esc_fix c;

		/* control: on a fresh twin, nobody outside a run does it */
		if (!ASSERT_TRUE(esc_fixture(&c) && make_git(c.d.ws), "control fixture"))
			return;
		steps_at(c.d.ws, a, steps, bufs);
		esc_host(&r, ESC_NOBODY, steps);
		if (!strcmp(a->steps[0], "setxattr") && !strcmp(r.out, "EOPNOTSUPP\n"))
			ktest_log("control %s: EOPNOTSUPP — the VFS and the LSMs let it through, the file system has no user xattrs",
				  a->what);
		else if (!ASSERT_STREQ(r.out, "ok\n", a->what))
			ktest_log("  control stderr: %.300s", r.err);

		steps_at(f.d.ws, a, steps, bufs);
		esc_run(&r, rw, f.d.ws, steps);
		esc_denied(&r, "EACCES\n", a->hook, a->reason, at(f.d.ws, a->path, pbuf, sizeof(pbuf)), a->what);
	}
	/* nothing changed */
	{
		char hook[600], cfg[600];
		snprintf(hook, sizeof(hook), "%s/.git/hooks/pre-commit", f.d.ws);
		snprintf(cfg, sizeof(cfg), "%s/.git/config", f.d.ws);
		esc_host(&r, -1, STEPS("cat", hook, "+", "cat", cfg));
		ASSERT_STREQ(r.out, "ok #!/bin/sh\nok [core]\n", "hook and config untouched");
	}
	/* what git itself writes stays writable: objects, refs (lock + rename), the index */
	esc_run_sh(&r, rw, f.d.ws,
		   "mkdir -p .git/objects/ab && echo blob > .git/objects/tmp_obj && ln .git/objects/tmp_obj .git/objects/ab/cd"
		   " && rm .git/objects/tmp_obj && echo 0123 > .git/refs/heads/main.lock"
		   " && mv .git/refs/heads/main.lock .git/refs/heads/main && echo idx > .git/index.lock"
		   " && mv .git/index.lock .git/index && echo done");
	esc_clean(&r, "done\n", "git's own writes in .git");
}

/*
 * BYPASS (profile): .git is writable but for hooks/ and config, and git
 * reads $GIT_DIR/commondir — in any repository, not only in linked
 * worktrees — and then takes hooks/ and config from the directory it names
 * (git 2.39, checked by hand: with .git/commondir = "../evil", `git commit`
 * runs evil/hooks/pre-commit). So a workspace-write run can redirect the
 * user's next git command to hooks and config it wrote. The same holds for
 * .git/modules/<name>/{hooks,config} of submodules, and for
 * .git/worktrees/<name>/config.worktree. The profile, not the engine, is
 * short: .git should be read-only except what git writes (objects, refs,
 * logs, index, HEAD, packed-refs, FETCH_HEAD/ORIG_HEAD, *.lock), or at
 * least deny creating commondir, modules/ and worktrees/.
 */
KTEST(escape_10_git_commondir_redirect)
{
	static struct ktest_result r;
	struct esc_fix f, c;
	char commondir[600];
	const char *const rw[] = {"--profile", "workspace-write", NULL};

	ktest_need_lsm();
	if (!ASSERT_TRUE(esc_fixture(&f) && make_git(f.d.ws) && esc_fixture(&c) && make_git(c.d.ws), "fixtures"))
		return;
	snprintf(commondir, sizeof(commondir), "%s/.git/commondir", c.d.ws);
	esc_control(ESC_NOBODY, STEPS("open", commondir, "x"), "ok\n", "create .git/commondir");
	ktest_events();
	snprintf(commondir, sizeof(commondir), "%s/.git/commondir", f.d.ws);
	esc_run(&r, rw, f.d.ws, STEPS("open", commondir, "x"));
	esc_denied(&r, "EACCES\n", "path_mknod", "file.create.denied", commondir,
		   "BYPASS: .git/commondir redirects hooks and config");
}
