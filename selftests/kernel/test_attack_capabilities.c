// SPDX-License-Identifier: Apache-2.0
/*
 * Attached root (issue 13, class 8 beyond socket families): a root process
 * moved into a run keeps its capabilities and has no seccomp filter, so the
 * calls a launched run's filter refuses (reboot, kexec, settimeofday, iopl,
 * ioperm, acct, open_by_handle_at) and the kernel addresses CAP_SYSLOG shows
 * were open to it whatever the run's policy. The process class's `capable`
 * program refuses those capabilities to every live run
 * (process.kernel.denied), and keyrings, perf and module loading are refused
 * to every attached run. Each probe is harmless when allowed (bad magic,
 * bad flags, the current timezone, undone at once).
 */
#include <unistd.h>

#include "test_daemon_fixture.h"
#include "procutil.h"

/* a run whose policy says nothing about processes or files */
#define NET_ONLY POLICY("cap-net", "{\"network\":{\"egress\":[]}}")

static const char *cap_outside(const char *const *op)
{
	static struct ktest_result r;
	char *argv[16];
	int n = 0;

	argv[n++] = (char *)ktest_helper("capprobe");
	for (; *op && n < 15; op++)
		argv[n++] = (char *)*op;
	argv[n] = NULL;
	ktest_run(argv, -1, 30000, &r);
	r.out[strcspn(r.out, "\n")] = 0;
	return r.out;
}

KTEST(attack_attached_root_capabilities_denied)
{
	static const struct {
		const char *op, *outside; /* what root gets outside any run: the capability passed */
		int cap;                  /* the capability the event names, -1: refused without a record */
	} ops[] = {
		{"reboot", "EINVAL", 22}, {"kexec", "EINVAL", 22}, {"settz", "ok", 25}, {"iopl", "ok", 17},
		{"ioperm", "ok", 17},     {"acct", "EFAULT", 20},
	};
	struct ktest_dirs d;
	struct ktest_proc t;
	unsigned long addr;
	const char *pol;
	int pid = 0;
	json_t *ev;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	pol = pu_policy(d.root, "net", NET_ONLY);
	if (!ASSERT_TRUE(pu_run_target(pol, &t, &pid, &addr), "a run to move into"))
		return;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		char what[128];

		snprintf(what, sizeof(what), "control: %s as root outside any run", ops[i].op);
		ASSERT_STREQ(cap_outside(ARGS(ops[i].op)), ops[i].outside, what);
		ktest_events();
		snprintf(what, sizeof(what), "%s as root attached to a run", ops[i].op);
		ASSERT_STREQ(pu_moved_in(ktest_helper("capprobe"), pid, ARGS(ops[i].op)), "EPERM", what);
		ev = ktest_events();
		{
			json_t *e = NULL, *x;
			size_t k;

			json_array_foreach(ev, k, x)
			{
				if (!strcmp(json_string_value(json_object_get(x, "hook")) ?: "", "capable") &&
				    !strcmp(json_string_value(json_object_get(x, "reason")) ?: "", "process.kernel.denied")) {
					e = x;
					break;
				}
			}
			if (ASSERT_TRUE(e != NULL, what))
				ASSERT_EQ(json_integer_value(json_object_get(json_object_get(e, "task"), "capability")),
					  ops[i].cap, "the capability named");
		}
		json_decref(ev);
	}
	/* open_by_handle_at: any file by inode number, past every path rule */
	if (ASSERT_TRUE(ktest_write_file(d.ws_file, "secret\n", 0600), "a file"))
	{
		ASSERT_STREQ(cap_outside(ARGS("handle", d.ws_file)), "ok", "control: open_by_handle_at outside");
		ASSERT_STREQ(pu_moved_in(ktest_helper("capprobe"), pid, ARGS("handle", d.ws_file)), "EPERM", "open_by_handle_at attached");
	}
	/* kernel addresses: shown to root outside (when kptr_restrict lets CAP_SYSLOG see them), hidden inside */
	if (!strcmp(cap_outside(ARGS("kallsyms")), "addr"))
		ASSERT_STREQ(pu_moved_in(ktest_helper("capprobe"), pid, ARGS("kallsyms")), "zero", "/proc/kallsyms attached");
	ASSERT_EQ(pu_stop(&t), 0, "the run ends");
}

/*
 * Keyrings, perf and module loading for an attached run without a process
 * section (`custode attach --profile net-only`): no seccomp filter there, so
 * the process class refuses them.
 */
KTEST(attack_attached_root_kernel_surface_without_process_policy)
{
	static const char *const ops[] = {"add-key", "perf", "init-module"};
	static struct ktest_result r;
	struct dfix f;
	char cg[PATH_MAX], rid[17] = "", line[128];
	json_t *resp;

	ktest_need_lsm();
	if (!df_setup(&f) || !ASSERT_TRUE(df_daemon_start(&f, NULL), "daemon"))
		return;
	snprintf(cg, sizeof(cg), "%s/ktest-capattach-%d", f.cgmount, (int)getpid());
	if (!ASSERT_TRUE(df_cg_make(cg), "cgroup"))
		goto out;
	resp = df_call(json_pack("{s:s, s:s, s:s}", "cmd", "attach", "cgroup", cg, "profile", "net-only"));
	if (!ASSERT_TRUE(resp != NULL, "attach net-only"))
		goto out;
	snprintf(rid, sizeof(rid), "%s",
		 json_string_value(json_object_get(json_object_get(resp, "run"), "run_id")) ?: "");
	json_decref(resp);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		char *argv[] = {(char *)ktest_helper("pprobe"), (char *)ops[i], NULL};
		struct ktest_proc p;

		pu_probe(&r, -1, ARGS(ops[i]));
		ASSERT_TRUE(strcmp(r.out, "EPERM\n") != 0, "control: root outside any run is not refused");
		line[0] = 0;
		if (!ASSERT_EQ(df_spawn_in(cg, -1, argv, &p), 0, "spawn in the attached cgroup"))
			continue;
		ktest_read_line(p.out, line, sizeof(line), 30000);
		close(p.in);
		p.in = -1;
		ktest_wait(&p, 30000);
		ktest_proc_close(&p);
		ASSERT_STREQ(line, "EPERM", ops[i]);
	}
out:
	if (rid[0])
		df_call(json_pack("{s:s, s:s}", "cmd", "detach", "run_id", rid));
	df_cg_remove(cg);
	kt_stop(&f.pid, SIGTERM);
}
