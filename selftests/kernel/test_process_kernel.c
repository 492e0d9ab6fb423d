// SPDX-License-Identifier: Apache-2.0
/*
 * Kernel attack surface from a run: keyrings (new keys, the inherited session
 * keyring), perf_event_open, userfaultfd, io_uring, module loading and module
 * autoloading. An ordinary run meets the seccomp filter first; the LSM is
 * shown on its own with a root process (every capability, no seccomp) moved
 * into a run with a process policy. Control: the same root process outside.
 */
#include "procutil.h"

#define PROC_NONE POLICY("proc-none", "{\"process\":{}}")

static const struct {
	const char *op;
	const char *control; /* root, outside any run */
	const char *in_run;  /* root, moved into the run; NULL: any error */
	const char *reason;
} ops[] = {
	{"add-key", "ok", "EPERM", "process.keyring.denied"},
	/* the user keyrings are created on first use (key_alloc), which fails first: ENOKEY */
	{"session-keyring", "ok", NULL, "process.keyring.denied"},
	{"perf", "ok", "EPERM", "process.perf.denied"},
	{"userfaultfd", "ok", "EPERM", "process.kernel.denied"},
	{"io-uring", "ok", "EPERM", "process.kernel.denied"},
	{"init-module", "ENOEXEC", "EPERM", "process.kernel.denied"},
	/* a family the kernel would autoload: socket_create refuses it first (every run, issue 13) */
	{"module-request", "EAFNOSUPPORT", "EPERM", "net.socket.denied"},
	/* autoloading fails either way here (no modprobe in the guest): the counter shows the hook */
	{"module-autoload", "ENOENT", "ENOENT", "process.kernel.denied"},
};

KTEST(process_kernel_surface_denied)
{
	static struct ktest_result r;
	struct ktest_proc t;
	struct ktest_dirs d;
	const char *pol;
	char receipt[400];
	unsigned long addr;
	int pid = 0;
	json_t *rc;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	pol = pu_policy(d.root, "none", PROC_NONE);
	snprintf(receipt, sizeof(receipt), "%s/receipt.json", d.root);

	/* an ordinary run: each is refused (seccomp, or seccomp and the LSM) */
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (!strcmp(ops[i].op, "module-request") || !strcmp(ops[i].op, "module-autoload"))
			continue;
		pu_run_probe(&r, ARGS("--policy", pol), ARGS(ops[i].op));
		ASSERT_STREQ(r.out, "EPERM\n", ops[i].op);
	}

	char *argv[] = {(char *)ktest_custode(), "run", "--policy", (char *)pol, "--receipt", receipt, "--",
			(char *)ktest_helper("pprobe"), "target", NULL};
	if (!ASSERT_TRUE(pu_target(argv, -1, &t, &pid, &addr), "a run to move into"))
		return;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		char what[128];

		pu_probe(&r, -1, ARGS(ops[i].op));
		r.out[strcspn(r.out, "\n")] = 0;
		snprintf(what, sizeof(what), "control (root, host): %s", ops[i].op);
		ASSERT_STREQ(r.out, ops[i].control, what);
		snprintf(what, sizeof(what), "root in the run: %s", ops[i].op);
		if (ops[i].in_run)
			ASSERT_STREQ(pu_moved_in(ktest_helper("pprobe"), pid, ARGS(ops[i].op)), ops[i].in_run, what);
		else
			ASSERT_TRUE(strcmp(pu_moved_in(ktest_helper("pprobe"), pid, ARGS(ops[i].op)), "ok") != 0, what);
	}
	ASSERT_EQ(pu_stop(&t), 0, "run ends");
	rc = pu_load_json(receipt);
	ASSERT_EQ(pu_denials(rc, "process.keyring.denied") >= 2, 1, "keyrings counted");
	ASSERT_EQ(pu_denials(rc, "process.perf.denied"), 1, "perf counted");
	ASSERT_EQ(pu_denials(rc, "process.kernel.denied") >= 4, 1, "userfaultfd, io_uring, init_module, module autoload");
	json_decref(rc);
}
