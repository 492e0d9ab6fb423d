/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small kernel-test framework in the style of the kernel's
 * selftests/bpf/test_progs.h: assertions return bool, so a test reads
 *   if (!ASSERT_EQ(code, 0, "exit")) return;
 * Each test runs in its own process. A test that needs something the host
 * lacks calls ktest_skip(); under --require-all (the guest) a skip fails.
 */
#ifndef CUSTODE_KTEST_H
#define CUSTODE_KTEST_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>

typedef void (*ktest_fn)(void);
/* native_only: the test is about hosts unlike the guest (e.g. locked down); the guest does not list it. */
void ktest_register(const char *name, ktest_fn fn, bool native_only);

#define KTEST_(name, native)                                                    \
	static void test_##name(void);                                          \
	__attribute__((constructor)) static void register_##name(void)         \
	{                                                                       \
		ktest_register(#name, test_##name, native);                     \
	}                                                                       \
	static void test_##name(void)
#define KTEST(name) KTEST_(name, false)
#define KTEST_NATIVE(name) KTEST_(name, true)

void ktest_fail_at(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
__attribute__((noreturn)) void ktest_skip(const char *why);
void ktest_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define ASSERT_TRUE(cond, what)                                                          \
	({                                                                               \
		bool ok_ = (cond);                                                       \
		if (!ok_)                                                                \
			ktest_fail_at(__FILE__, __LINE__, "%s: expected true: %s", what, #cond); \
		ok_;                                                                     \
	})
#define ASSERT_EQ(a, b, what)                                                                      \
	({                                                                                         \
		long long a_ = (long long)(a), b_ = (long long)(b);                                \
		if (a_ != b_)                                                                      \
			ktest_fail_at(__FILE__, __LINE__, "%s: %s == %lld, expected %lld", what, #a, a_, b_); \
		a_ == b_;                                                                          \
	})
#define ASSERT_STREQ(a, b, what)                                                                     \
	({                                                                                           \
		const char *a_ = (a), *b_ = (b);                                                     \
		bool ok_ = a_ && b_ && strcmp(a_, b_) == 0;                                          \
		if (!ok_)                                                                            \
			ktest_fail_at(__FILE__, __LINE__, "%s: \"%s\", expected \"%s\"", what,        \
				      a_ ? a_ : "(null)", b_ ? b_ : "(null)");                       \
		ok_;                                                                                 \
	})
#define ASSERT_CONTAINS(hay, needle, what)                                                            \
	({                                                                                            \
		const char *h_ = (hay), *n_ = (needle);                                               \
		bool ok_ = h_ && n_ && strstr(h_, n_);                                                \
		if (!ok_)                                                                             \
			ktest_fail_at(__FILE__, __LINE__, "%s: \"%s\" not found in \"%s\"", what,       \
				      n_ ? n_ : "(null)", h_ ? h_ : "(null)");                        \
		ok_;                                                                                  \
	})

/* ---- environment ---- */
const char *ktest_custode(void); /* path of build/custode */
const char *ktest_tprobe(void);  /* tprobe, installed where the read profile may exec it */
/* Any helper built from selftests/kernel/helpers/NAME.c, installed like tprobe. */
const char *ktest_helper(const char *name);
bool ktest_in_guest(void);
/* Skip unless BPF-LSM programs load here (natively on a locked-down host they don't). */
void ktest_need_lsm(void);

/* ---- processes ---- */
struct ktest_proc {
	int pid;
	int in;  /* write end of the child's stdin, or -1 */
	int out; /* read end of the child's stdout, or -1 */
	int err; /* read end of the child's stderr, or -1 */
};
/* Start argv with piped stdin/stdout/stderr; uid >= 0 drops to that uid/gid first. */
int ktest_spawn(char *const argv[], int uid, struct ktest_proc *p);
/* Read one line from fd (without the newline), waiting up to timeout_ms. */
bool ktest_read_line(int fd, char *buf, size_t len, int timeout_ms);
/* Wait for exit up to timeout_ms; returns the exit code (128+sig if killed), -1 on timeout. */
int ktest_wait(struct ktest_proc *p, int timeout_ms);
void ktest_proc_close(struct ktest_proc *p);
/* Close the child's stdin only (tprobe wait-open exits on EOF). */
void ktest_close_stdin(struct ktest_proc *p);

struct ktest_result {
	int code;
	char out[16384];
	char err[16384];
};
/* A hang detector's timeout stretched for loaded hosts (x4, $CUSTODE_KTEST_SLACK). */
int ktest_slack(int timeout_ms);
/* Run argv to completion (stdin /dev/null) capturing output; timeout → code -1. Every timeout here is
 * a hang detector, stretched x4 ($CUSTODE_KTEST_SLACK) for loaded hosts. */
int ktest_run(char *const argv[], int uid, int timeout_ms, struct ktest_result *r);

/* ---- fixtures ---- */
/* A fresh directory under /tmp for this test: <dir>/ws (workspace, with file "f"), <dir>/outside. */
struct ktest_dirs {
	char root[256];
	char ws[300];
	char ws_file[320];
	char outside[300];
};
bool ktest_make_dirs(struct ktest_dirs *d);
bool ktest_write_file(const char *path, const char *content, int mode);

/* `custode engine status --json`, parsed (the caller's to json_decref); NULL if it fails. */
json_t *ktest_engine_status(void);
/* An integer field of engine status (the engine's maps are custode's alone); -1 if absent or unknown. */
long long ktest_engine_status_int(const char *field);
/* Consume the engine's events (`custode events --json`) into a JSON array. */
json_t *ktest_events(void);
/* First event with this hook, reason and file path (path may be NULL); borrowed from arr. */
json_t *ktest_find_event(json_t *arr, const char *hook, const char *reason, const char *path);

/*
 * Put this test process in a new network namespace ("near", lo up, its own
 * addresses 198.51.100.1 and 2001:db8:1::1 on a veth link) whose routes to
 * 203.0.113.0/24 and 2001:db8::/64 lead over that link to a second
 * namespace ("far") standing for the internet: the test addresses 203.0.113.10 and 2001:db8::10 live there,
 * with TCP listeners on 0.0.0.0 and [::] (v6-only) at ports 8080 and 8081;
 * near has listeners on the same ports too (local services: 127.0.0.1, ::1).
 * The test addresses are not the near namespace's own (custode denies a
 * run's own host addresses, net.host_address). Nothing else is routed
 * (ENETUNREACH).
 */
bool ktest_netns(void);
/* Add an address (no prefix length) to the far namespace. */
bool ktest_far_addr(const char *addr);
/* Run a shell command in the far namespace; true if it exits 0. */
bool ktest_far_sh(const char *cmd);
/* Enter the far namespace (sockets made now live there) and come back. */
bool ktest_far_enter(void);
void ktest_far_leave(void);
/* Skip unless cgroup socket programs load here. */
void ktest_need_cgroup_bpf(void);
/* First event with this hook prefix (NULL: any), reason, net.addr and net.port (0: any). */
json_t *ktest_find_net_event(json_t *arr, const char *reason, const char *addr, int port);
/* Write a policy document to a root-owned 0644 file under dir; returns the path (static buffer). */
const char *ktest_policy_file(const char *dir, const char *name, const char *json);

/* The cgroup v2 path of a process (/proc/PID/cgroup "0::" line joined to the mount). */
bool ktest_proc_cgroup(int pid, char *out, size_t len);
bool ktest_pid_alive(int pid); /* exists and is not a zombie */

#endif
