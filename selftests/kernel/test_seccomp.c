// SPDX-License-Identifier: Apache-2.0
/*
 * The launcher's seccomp denylist in a real run: each denied call's errno
 * (EPERM; ENOSYS for clone3), namespaces, foreign ABIs killed, and an
 * ordinary toolchain still working in every profile. The control is the same
 * probe outside any run, as the same user. (selftests/unit/test_seccomp.c
 * checks the filter alone, as root, where no capability check interferes.)
 */
#include "procutil.h"

#define PROC_LIMITS POLICY("proc-limits", "{\"process\":{},\"limits\":{\"pids\":256,\"memoryBytes\":268435456}}")

/* "NAME RESULT" → RESULT for name, in a `pprobe syscalls` output */
static const char *result_of(const char *out, const char *name, char *buf, size_t len)
{
	char pat[128];
	const char *p;

	snprintf(pat, sizeof(pat), "%s ", name);
	buf[0] = 0;
	for (p = out; (p = strstr(p, pat)); p++)
		if (p == out || p[-1] == '\n') {
			sscanf(p + strlen(pat), "%63s", buf);
			break;
		}
	(void)len;
	return buf;
}

KTEST(seccomp_denied_calls_errnos)
{
	static struct ktest_result ctl, run;
	char a[64], b[64], line[256];
	int distinct = 0, total = 0;

	ktest_need_cgroup_bpf();
	pu_probe(&ctl, NOBODY, ARGS("syscalls"));
	/* net-only: no LSM class needed, so the filter alone is what stands here */
	pu_run_probe(&run, ARGS("--profile", "net-only"), ARGS("syscalls"));
	ASSERT_EQ(run.code, 0, "probe ran");
	for (char *save = NULL, *l = strtok_r(ctl.out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char name[128];
		const char *want;

		if (sscanf(l, "%127[^ ]", name) != 1)
			continue;
		total++;
		want = strncmp(name, "clone3", 6) ? "EPERM" : "ENOSYS";
		result_of(run.out, name, b, sizeof(b));
		snprintf(line, sizeof(line), "in a run: %s (outside: %s)", name, result_of(l, name, a, sizeof(a)));
		ASSERT_STREQ(b, want, line);
		if (strcmp(a, b))
			distinct++;
		else
			ktest_log("%s: %s outside too (unprivileged); the unit test shows the filter's own answer", name, a);
	}
	ASSERT_TRUE(total >= 45, "every listed call probed");
	ASSERT_TRUE(distinct >= total / 2, "most calls answer differently outside the run");
}

KTEST(seccomp_namespaces_and_clone3)
{
	static struct ktest_result r;

	ktest_need_cgroup_bpf();
	pu_probe(&r, NOBODY, ARGS("unshare", "user"));
	ASSERT_STREQ(r.out, "ok\n", "control: an unprivileged user namespace");
	pu_probe(&r, NOBODY, ARGS("clone-ns", "user"));
	ASSERT_STREQ(r.out, "ok\n", "control: clone(CLONE_NEWUSER)");

	pu_run_probe(&r, ARGS("--profile", "net-only"), ARGS("unshare", "user"));
	ASSERT_STREQ(r.out, "EPERM\n", "run: unshare(CLONE_NEWUSER)");
	pu_run_probe(&r, ARGS("--profile", "net-only"), ARGS("clone-ns", "user"));
	ASSERT_STREQ(r.out, "EPERM\n", "run: clone(CLONE_NEWUSER)");
	pu_run_probe(&r, ARGS("--profile", "net-only"), ARGS("clone-ns", "net"));
	ASSERT_STREQ(r.out, "EPERM\n", "run: clone(CLONE_NEWNET)");
	pu_run_probe(&r, ARGS("--profile", "net-only"), ARGS("unshare", "time"));
	ASSERT_STREQ(r.out, "EPERM\n", "run: unshare(CLONE_NEWTIME)");
	pu_run_probe(&r, ARGS("--profile", "net-only"), ARGS("clone3"));
	ASSERT_STREQ(r.out, "ENOSYS\n", "run: clone3 is ENOSYS, so libc falls back to clone");
	/* what is not a namespace still works */
	pu_run_probe(&r, ARGS("--profile", "net-only"), ARGS("clone-ns", "files"));
	ASSERT_STREQ(r.out, "ok\n", "run: clone(CLONE_FILES)");
	pu_run_probe(&r, ARGS("--profile", "net-only"), ARGS("unshare", "files"));
	ASSERT_STREQ(r.out, "ok\n", "run: unshare(CLONE_FILES)");
	pu_run_probe(&r, ARGS("--profile", "net-only"), ARGS("fork"));
	ASSERT_STREQ(r.out, "ok\n", "run: fork");
}

KTEST(seccomp_foreign_abi_killed)
{
	static struct ktest_result r;

	ktest_need_cgroup_bpf();
	pu_probe(&r, NOBODY, ARGS("i386"));
	/* Some hosts' kernels have no IA-32 emulation: int 0x80 faults with no filter at
	 * all. Debian's kernels (the guest, where a skip fails) all have it. */
	if (r.code == 128 + SIGSEGV && !ktest_in_guest())
		ktest_skip("int 0x80 faults on this kernel (no IA-32 emulation)");
	ASSERT_STREQ(r.out, "ok\n", "control: getpid through int 0x80");
	pu_run_probe(&r, ARGS("--profile", "net-only"), ARGS("i386"));
	ASSERT_EQ(r.code, 128 + SIGSYS, "run: the i386 ABI kills the process");
	ASSERT_STREQ(r.out, "", "run: nothing printed after the call");

	pu_probe(&r, NOBODY, ARGS("x32"));
	ASSERT_TRUE(r.code == 0 || r.code == 1, "control: an x32 call returns (ENOSYS where x32 is off)");
	pu_run_probe(&r, ARGS("--profile", "net-only"), ARGS("x32"));
	ASSERT_EQ(r.code, 128 + SIGSYS, "run: the x32 ABI kills the process");
}

/*
 * A normal toolchain keeps working in every built-in profile (and under a
 * process+limits policy): sh, pipes, subshells, background jobs, coreutils
 * (busybox in the guest), python3 if present. Profiles with file rules need
 * BPF-LSM: natively only net-only runs.
 */
KTEST(seccomp_toolchain_works)
{
	static struct ktest_result r, prof;
	struct ktest_dirs d;
	const char *pol;
	const char *script = "set -e; echo hello | cat | wc -c; ls /usr >/dev/null; sleep 0.1 & wait; "
			     "x=$(echo sub); test \"$x\" = sub; id -u; printf 'a\\nb\\n' | sort -r | head -n1; "
			     "echo ok-$(date +%Y | wc -c)";
	const char *expect = "6\n65534\nb\nok-5\n";
	char *list[] = {(char *)ktest_custode(), "profiles", "--json", NULL};
	json_t *rows, *o;
	size_t i;
	int n = 0;

	ktest_need_cgroup_bpf();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	pol = pu_policy(d.root, "proc-limits", PROC_LIMITS);
	ASSERT_EQ(ktest_run(list, -1, 30000, &prof), 0, "custode profiles");
	rows = json_loads(prof.out, 0, NULL); /* one document, an array (docs/output.md) */
	ASSERT_TRUE(json_is_array(rows), "profiles --json: one JSON array");
	json_array_foreach(rows, i, o) {
		const char *name = json_string_value(json_object_get(o, "name"));
		char what[128];

		if (!name || (json_integer_value(json_object_get(o, "rules")) > 0 && !ktest_in_guest()))
			continue;
		ktest_run(pu_argv(ARGS("--profile", name, "--workspace", d.ws), ARGS("/bin/sh", "-c", script)), -1, 120000, &r);
		snprintf(what, sizeof(what), "profile %s: exit (stderr: %.200s)", name, r.err);
		ASSERT_EQ(r.code, 0, what);
		snprintf(what, sizeof(what), "profile %s: output", name);
		ASSERT_STREQ(r.out, expect, what);
		n++;
	}
	json_decref(rows);
	ASSERT_TRUE(n >= (ktest_in_guest() ? 4 : 1), "every profile that can run here was run");
	if (ktest_in_guest()) {
		ktest_run(pu_argv(ARGS("--policy", pol), ARGS("/bin/sh", "-c", script)), -1, 120000, &r);
		ASSERT_EQ(r.code, 0, "process+limits: exit");
		ASSERT_STREQ(r.out, expect, "process+limits: output");
	}
	if (access("/usr/bin/python3", X_OK) == 0) {
		ktest_run(pu_argv(ARGS("--profile", "net-only"),
				  ARGS("/usr/bin/python3", "-c",
				       "import subprocess, threading, tempfile, os; t = threading.Thread(target=print, args=('thread',)); "
				       "t.start(); t.join(); print(subprocess.run(['true']).returncode); "
				       "f = tempfile.NamedTemporaryFile(); print(os.path.dirname(f.name) == os.environ['TMPDIR'])")),
			  -1, 120000, &r);
		ASSERT_EQ(r.code, 0, "python3: exit");
		ASSERT_STREQ(r.out, "thread\n0\nTrue\n", "python3: threads, subprocess, tempfile");
	} else {
		ktest_log("no python3 here (the guest has busybox only): python3 not exercised");
	}
}
