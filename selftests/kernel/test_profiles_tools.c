// SPDX-License-Identifier: Apache-2.0
/*
 * Ordinary tools work unmodified in every built-in profile: the shell and
 * the everyday commands read the workspace, the system and their own /proc
 * entries, write their tmp, and — in workspace-write and external — edit,
 * create and delete in the workspace, including what git writes in .git.
 * Not one denial may come of it: a spurious denial fails the test (with the
 * events printed, path and hook), it is never loosened here.
 *
 * The commands are whatever the host has (busybox in the guest, coreutils
 * elsewhere); each line names itself when it fails, and the script goes on,
 * so one run lists every failure.
 *
 * Found (docs/bypass-catalogue.md): in workspace-write and external, `mv` of
 * any directory inside the workspace is refused (path_rename,
 * file.delete.denied): the workspace rule carries PROTECTS_BELOW (it
 * encloses the narrowing .git/hooks rule) and rename_end applies that flag to
 * every path the rule matches, not only to the protected chain itself.
 */
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>

#include "ktest.h"

#define NOBODY 65534

/* t CMD...: run it quietly, or say which failed (and go on, so one run reports every failure) */
#define T "t() { \"$@\" >/dev/null 2>&1 || echo \"FAILED: $*\"; }; "

static const char read_script[] = T
	"t true; t ls -la .; t ls /usr/bin; t cat f; t grep -q workspace f; t sed -n 1p f; t awk 'NR==1{print $1}' f;"
	" t find . -name f; t wc -l f; t sort f; t head -n 1 f; t tail -n 1 f; t cut -c1-3 f; t tr a-z A-Z < f;"
	" t md5sum f; t sha256sum f; t stat f; t test -r f; t date; t date -u +%Y; t env; t id; t uname -a; t pwd;"
	" t basename \"$PWD\"; t dirname \"$PWD\"; t readlink -f f; t which sh; t printf '%s\\n' x; t seq 3; t expr 1 + 1;"
	" t cat /etc/passwd /etc/group /etc/hostname; t cat /proc/cpuinfo /proc/meminfo /proc/stat /proc/uptime;"
	" t cat /proc/self/status /proc/self/stat /proc/self/cmdline /proc/self/environ /proc/self/maps;"
	" t ls /proc/self/fd; t head -c 16 /dev/urandom; t head -c 16 /dev/zero; t sh -c 'echo x > /dev/null'; t nproc;"
	" t sh -c 'echo hi | cat | wc -c';"
	/* the run's tmp: every class */
	" t cp f \"$TMPDIR/g\"; t mv \"$TMPDIR/g\" \"$TMPDIR/h\"; t sh -c 'echo more >> \"$TMPDIR/h\"';"
	" t sed -i s/in/out/ \"$TMPDIR/h\"; t touch \"$TMPDIR/h\"; t chmod 600 \"$TMPDIR/h\"; t ln -s h \"$TMPDIR/l\";"
	" t cat \"$TMPDIR/l\"; t mkdir -p \"$TMPDIR/x/y\"; t tar -cf \"$TMPDIR/a.tar\" .; t tar -tf \"$TMPDIR/a.tar\";"
	" t tar -xf \"$TMPDIR/a.tar\" -C \"$TMPDIR/x/y\"; t gzip -k \"$TMPDIR/h\"; t gunzip -c \"$TMPDIR/h.gz\";"
	" t mkdir \"$TMPDIR/dd\"; t mv \"$TMPDIR/dd\" \"$TMPDIR/de\"; t rmdir \"$TMPDIR/de\"; t mkfifo \"$TMPDIR/fifo\"; t rm -r \"$TMPDIR/x\" \"$TMPDIR/h\" \"$TMPDIR/h.gz\" \"$TMPDIR/l\" \"$TMPDIR/a.tar\" \"$TMPDIR/fifo\";"
	" echo done";

static const char write_script[] = T
	"t sh -c 'echo edit >> f'; t sed -i s/workspace/ws/ f; t mkdir -p a/b/c; t cp f a/b/c/g; t cp -r a a2; t mv a2 a3;"
	" t rm -rf a3; t touch a/b/c/g; t touch -d '2020-01-01 00:00' a/b/c/g; t chmod 755 a/b/c/g; t cp -p f a/p;"
	" t ln -s f flink; t cat flink; t ln f fhard; t mkfifo fifo; t tar -cf t.tar a; t mkdir x; t tar -xf t.tar -C x;"
	" t find . -type f; t sort -o sorted f; t truncate -s 0 sorted;"
	" t rm -r x t.tar fifo flink fhard sorted; t mkdir -p e/f; t rmdir e/f e;"
	/* what git does in .git */
	" t cat .git/HEAD .git/config .git/hooks/pre-commit; t ls -R .git; t mkdir -p .git/objects/ab .git/logs/refs/heads;"
	" t sh -c 'echo blob > .git/objects/tmp_obj_1'; t ln .git/objects/tmp_obj_1 .git/objects/ab/cdef; t rm .git/objects/tmp_obj_1;"
	" t chmod 444 .git/objects/ab/cdef; t sh -c 'echo 0123 > .git/refs/heads/main.lock';"
	" t mv .git/refs/heads/main.lock .git/refs/heads/main; t sh -c 'echo idx > .git/index.lock';"
	" t mv .git/index.lock .git/index; t sh -c 'echo log >> .git/logs/HEAD'; t sh -c 'echo log >> .git/logs/refs/heads/main';"
	" t sh -c 'echo ref > .git/ORIG_HEAD'; t rm .git/ORIG_HEAD; t touch .git/index; t cat .git/index;"
	" echo done";

/* each must be refused: the profile keeps .git/hooks and .git/config read-only */
static const char git_script[] =
	"r() { if sh -c \"$1\" >/dev/null 2>&1; then echo \"ALLOWED: $1\"; else echo refused; fi; }; "
	"r 'echo x >> .git/hooks/pre-commit'; r 'echo x > .git/config'; r 'echo x > .git/hooks/post-checkout';"
	" r 'chmod 700 .git/hooks/pre-commit'; r 'mv .git/hooks/pre-commit x'; r 'sed -i s/bare/x/ .git/config';"
	" r 'rm .git/config'; r 'ln -s /bin/sh .git/hooks/pre-push'";

static bool setup(const char *ws)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd),
		 "cd %s && mkdir -p .git/hooks .git/objects/info .git/refs/heads && echo 'ref: refs/heads/main' > .git/HEAD"
		 " && printf '[core]\\n\\tbare = false\\n' > .git/config && printf '#!/bin/sh\\nexit 0\\n' > .git/hooks/pre-commit"
		 " && chmod 755 .git/hooks/pre-commit && mkdir -p src && echo 'int main(void){return 0;}' > src/main.c"
		 " && chown -R %d:%d . && chmod 666 f",
		 ws, NOBODY, NOBODY);
	return system(cmd) == 0;
}

static void no_events(const char *what)
{
	json_t *events = ktest_events();
	size_t i;
	json_t *e;

	json_array_foreach(events, i, e) {
		char *s = json_dumps(e, JSON_COMPACT);
		ktest_fail_at(__FILE__, __LINE__, "%s: spurious denial: %s", what, s ? s : "?");
		free(s);
	}
	json_decref(events);
}

static void run_script(const char *profile, const char *ws, const char *script, struct ktest_result *r)
{
	char *argv[] = {(char *)ktest_custode(), "run", "--profile", (char *)profile, "--workspace", (char *)ws, "--",
			"/bin/sh", "-c", (char *)script, NULL};

	ktest_run(argv, -1, 300000, r);
}

static void ordinary(const char *profile, bool writes)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	char what[128];

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d) && setup(d.ws) && chown(d.ws, NOBODY, NOBODY) == 0, "fixture"))
		return;
	ktest_events();
	run_script(profile, d.ws, read_script, &r);
	snprintf(what, sizeof(what), "%s: reading tools", profile);
	ASSERT_EQ(r.code, 0, what);
	ASSERT_STREQ(r.out, "done\n", what);
	ASSERT_TRUE(strstr(r.err, "denial") == NULL, what);
	if (r.code)
		ktest_log("stderr: %.600s", r.err);
	no_events(what);
	if (!writes)
		return;

	run_script(profile, d.ws, write_script, &r);
	snprintf(what, sizeof(what), "%s: editing tools and git's writes", profile);
	ASSERT_EQ(r.code, 0, what);
	ASSERT_STREQ(r.out, "done\n", what);
	ASSERT_TRUE(strstr(r.err, "denial") == NULL, what);
	if (r.code)
		ktest_log("stderr: %.600s", r.err);
	no_events(what);

	run_script(profile, d.ws, git_script, &r);
	snprintf(what, sizeof(what), "%s: .git/hooks and .git/config stay read-only", profile);
	ASSERT_STREQ(r.out, "refused\nrefused\nrefused\nrefused\nrefused\nrefused\nrefused\nrefused\n", what);
	ASSERT_CONTAINS(r.err, "file.write.denied", what);
	ASSERT_CONTAINS(r.err, "file.create.denied", what);
	json_decref(ktest_events());
}

KTEST(profiles_tools_read)
{
	ordinary("read", false);
}

KTEST(profiles_tools_workspace_write)
{
	ordinary("workspace-write", true);
}

KTEST(profiles_tools_external)
{
	ordinary("external", true);
}

/* In the read profile the workspace stays as it was, whatever the tools try. */
KTEST(profiles_tools_read_keeps_workspace)
{
	static struct ktest_result r;
	struct ktest_dirs d;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d) && setup(d.ws) && chown(d.ws, NOBODY, NOBODY) == 0, "fixture"))
		return;
	run_script("read", d.ws,
		   "r() { if sh -c \"$1\" >/dev/null 2>&1; then echo \"ALLOWED: $1\"; else echo refused; fi; }; "
		   "r 'echo x >> f'; r 'touch new'; r 'rm f'; r 'mkdir d'; r 'mv f g'; r 'sed -i s/a/b/ f'; r 'chmod 600 f';"
		   " r 'touch f'",
		   &r);
	ASSERT_STREQ(r.out, "refused\nrefused\nrefused\nrefused\nrefused\nrefused\nrefused\nrefused\n", "read: no changes");
	json_decref(ktest_events());
}
