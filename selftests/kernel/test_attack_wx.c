// SPDX-License-Identifier: Apache-2.0
/*
 * Opt-in W^X ("process": {"wx": "deny"}, issue 13): no memory that is both
 * executable and writable or anonymous — JIT-style code, decrypted payloads,
 * the double mapping of one memfd. Each way is shown to work in a run
 * without the option (the control) and to fail with it (process.wx.denied,
 * with the hook's event); code loaded from files the ordinary way still
 * runs (every dynamically linked program maps its libraries RX).
 */
#include <stdio.h>
#include <string.h>

#include "ktest.h"

#define WX_POLICY(name, wx)                                                                                    \
	"{\"schema\":\"custode.policy/v1\",\"name\":\"test/" name "\",\"version\":1,\"content\":{\"process\":{" wx \
	"}}}"

static void in_run(struct ktest_result *r, const char *policy, const char *step, const char *file)
{
	char *argv[] = {(char *)ktest_custode(), "run", "--policy", (char *)policy, "--", (char *)ktest_helper("wxprobe"),
			(char *)step, (char *)file, NULL};

	ktest_run(argv, -1, 120000, r);
}

KTEST(wx_deny_refuses_writable_or_anonymous_code)
{
	static struct ktest_result r;
	static const struct {
		const char *step, *file, *hook;
	} cases[] = {
		{"anon-rwx", NULL, "mmap_file"},
		{"anon-rw-then-x", NULL, "file_mprotect"},
		{"anon-rw-then-rwx", NULL, "file_mprotect"},
		{"jit", NULL, "file_mprotect"},
		{"file-wx", "/bin/true", "mmap_file"},
		{"file-cow-then-x", "/bin/true", "file_mprotect"},
		{"memfd-double", NULL, "mmap_file"},
	};
	struct ktest_dirs d;
	const char *allow, *deny;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	static char allow_buf[600], deny_buf[600];

	/* ktest_policy_file's answer is overwritten by the next call: keep copies */
	allow = ktest_policy_file(d.root, "wxallow", WX_POLICY("wxallow", ""));
	snprintf(allow_buf, sizeof(allow_buf), "%s", allow ? allow : "");
	deny = ktest_policy_file(d.root, "wxdeny", WX_POLICY("wxdeny", "\"wx\":\"deny\""));
	snprintf(deny_buf, sizeof(deny_buf), "%s", deny ? deny : "");
	if (!ASSERT_TRUE(allow && deny, "policies"))
		return;
	allow = allow_buf;
	deny = deny_buf;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *ev, *e;

		/* control: a run without the option may (the kernel allows it) */
		in_run(&r, allow, cases[i].step, cases[i].file);
		if (!ASSERT_STREQ(r.out, "ok\n", cases[i].step))
			ktest_log("control's stderr: %s", r.err);
		ktest_events();
		in_run(&r, deny, cases[i].step, cases[i].file);
		ASSERT_TRUE(!strcmp(r.out, "EACCES\n") || !strcmp(r.out, "EPERM\n"), cases[i].step);
		ASSERT_CONTAINS(r.err, "process.wx.denied", cases[i].step);
		ev = ktest_events();
		e = ktest_find_event(ev, cases[i].hook, "process.wx.denied", NULL);
		ASSERT_TRUE(e != NULL, cases[i].hook);
		json_decref(ev);
	}
}

KTEST(wx_deny_keeps_ordinary_code_running)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	const char *deny;
	char *sh[] = {(char *)ktest_custode(), "run", "--policy", NULL, "--", "/bin/sh", "-c",
		      "echo hello | tr a-z A-Z && ls / >/dev/null && echo done", NULL};

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	deny = ktest_policy_file(d.root, "wxdeny2", WX_POLICY("wxdeny2", "\"wx\":\"deny\""));
	if (!ASSERT_TRUE(deny != NULL, "policy"))
		return;
	in_run(&r, deny, "anon-rw", NULL);
	ASSERT_STREQ(r.out, "ok\n", "writable anonymous memory");
	in_run(&r, deny, "file-rx", "/bin/true");
	ASSERT_STREQ(r.out, "ok\n", "a file's code mapped RX");
	sh[3] = (char *)deny;
	ktest_run(sh, -1, 120000, &r);
	ASSERT_EQ(r.code, 0, "dynamically linked programs");
	ASSERT_STREQ(r.out, "HELLO\ndone\n", "their output");
}
