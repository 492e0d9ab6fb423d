// SPDX-License-Identifier: Apache-2.0
/* Limits: the policy's "required", cpu.max, controller lists, and applying to a directory standing in for a cgroup. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <stdbool.h>
#include <criterion/criterion.h>

#include "engine/self.h"
#include "policy/policy.h"
#include "run/limits.h"
#include "util/fsutil.h"

static int parse(const char *limits, struct custode_policy **p, struct custode_refusal *why)
{
	char doc[1024];

	snprintf(doc, sizeof(doc),
		 "{\"schema\":\"custode.policy/v1\",\"name\":\"t\",\"version\":1,\"content\":{\"limits\":%s}}", limits);
	return custode_policy_parse(doc, strlen(doc), p, why);
}

Test(limits_policy, required_names)
{
	struct custode_policy *p = NULL;
	struct custode_refusal why;

	cr_assert_eq(parse("{\"memoryBytes\":67108864,\"pids\":64,\"required\":[\"memoryBytes\",\"pids\"]}", &p, &why), 0,
		     "%s", why.detail);
	cr_expect_eq(p->limits.required, CUSTODE_LIMIT_MEMORY | CUSTODE_LIMIT_PIDS);
	custode_policy_free(p);
	cr_assert_eq(parse("{\"cpu\":0.5}", &p, &why), 0);
	cr_expect_eq(p->limits.required, 0u, "nothing required by default");
	custode_policy_free(p);
}

Test(limits_policy, required_refusals)
{
	static const char *const bad[] = {
		"{\"pids\":5,\"required\":\"pids\"}",
		"{\"pids\":5,\"required\":[\"pids\",\"pids\"]}",
		"{\"pids\":5,\"required\":[\"memoryBytes\"]}",
		"{\"pids\":5,\"required\":[\"swap\"]}",
		"{\"pids\":5,\"required\":[5]}",
		"{\"required\":[\"required\"]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct custode_policy *p = NULL;
		struct custode_refusal why = {0};

		cr_expect_neq(parse(bad[i], &p, &why), 0, "%s accepted", bad[i]);
		cr_expect_eq(why.reason, CUSTODE_REASON_POLICY_INVALID, "%s", bad[i]);
		cr_expect(strstr(why.detail, "content.limits.required") != NULL, "%s: %s", bad[i], why.detail);
		cr_expect_null(p);
	}
}

Test(limits, cpu_max)
{
	char buf[48];

	custode_cpu_max_format(1000, buf, sizeof(buf));
	cr_expect_str_eq(buf, "100000 100000");
	custode_cpu_max_format(500, buf, sizeof(buf));
	cr_expect_str_eq(buf, "50000 100000");
	custode_cpu_max_format(2500, buf, sizeof(buf));
	cr_expect_str_eq(buf, "250000 100000");
	custode_cpu_max_format(10, buf, sizeof(buf));
	cr_expect_str_eq(buf, "1000 100000", "the kernel's minimum quota");
}

Test(limits, controllers_whole_words)
{
	cr_expect(custode_controllers_have("cpuset cpu io memory pids\n", "cpu"));
	cr_expect(custode_controllers_have("cpuset cpu io memory pids", "pids"));
	cr_expect_not(custode_controllers_have("cpuset io memory", "cpu"));
	cr_expect_not(custode_controllers_have("", "memory"));
	cr_expect_not(custode_controllers_have("hugetlb", "memory"));
	cr_expect_not(custode_controllers_have("memoryx pids", "memory"));
}

static bool ktest_touch(const char *path, const char *content)
{
	FILE *f = fopen(path, "w");
	bool ok = f && fputs(content, f) >= 0;

	if (f)
		ok = fclose(f) == 0 && ok;
	return ok;
}

/* A directory with cgroup.controllers stands in for the run's cgroup. */
static char *fake_cgroup(const char *controllers)
{
	static char dir[64];
	char path[128];

	snprintf(dir, sizeof(dir), "/tmp/custode-ut-cg-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	/* the interface files a cgroup has for its controllers (custode writes, never creates) */
	snprintf(path, sizeof(path), "%s/cgroup.controllers", dir);
	cr_assert(ktest_touch(path, controllers));
	if (strstr(controllers, "memory")) {
		snprintf(path, sizeof(path), "%s/memory.max", dir);
		cr_assert(ktest_touch(path, ""));
	}
	if (strstr(controllers, "pids")) {
		snprintf(path, sizeof(path), "%s/pids.max", dir);
		cr_assert(ktest_touch(path, ""));
	}
	if (strstr(controllers, "cpu")) {
		snprintf(path, sizeof(path), "%s/cpu.max", dir);
		cr_assert(ktest_touch(path, ""));
	}
	return dir;
}

static char *read_back(const char *dir, const char *file)
{
	char path[128], *text = NULL;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (custode_read_file(path, 4096, &text, NULL))
		return NULL;
	return text;
}

Test(limits, apply_writes_and_reports)
{
	struct custode_policy *p = NULL;
	struct custode_limits_applied a;
	struct custode_refusal why = {0};
	char *dir = fake_cgroup("cpu io pids\n"), *v;

	cr_assert_eq(parse("{\"memoryBytes\":67108864,\"pids\":64,\"cpu\":0.25}", &p, &why), 0);
	cr_assert_eq(custode_limits_apply(dir, p, false, &a, &why), 0, "%s", why.detail);
	cr_expect(a.pids.enforced && a.cpu.enforced);
	cr_expect_not(a.memory.enforced, "no memory controller");
	cr_expect_str_eq(a.memory.why_not, "no controller");
	cr_expect_not(a.swap_limited);
	v = read_back(dir, "pids.max");
	cr_expect_str_eq(v, "64");
	free(v);
	v = read_back(dir, "cpu.max");
	cr_expect_str_eq(v, "25000 100000");
	free(v);
	cr_expect_null(read_back(dir, "memory.max"));
	custode_policy_free(p);
	custode_rm_rf(dir);
}

Test(limits, required_without_controller_is_refused)
{
	struct custode_policy *p = NULL;
	struct custode_limits_applied a;
	struct custode_refusal why = {0};
	char *dir = fake_cgroup("cpu pids\n");

	cr_assert_eq(parse("{\"memoryBytes\":67108864,\"required\":[\"memoryBytes\"]}", &p, &why), 0);
	cr_expect_neq(custode_limits_apply(dir, p, false, &a, &why), 0);
	cr_expect_eq(why.reason, CUSTODE_REASON_LIMIT_UNAVAILABLE);
	cr_expect(strstr(why.detail, "memoryBytes") != NULL, "%s", why.detail);
	custode_policy_free(p);
	custode_rm_rf(dir);
}

Test(limits, no_limits_section_sets_nothing)
{
	struct custode_policy *p = NULL;
	struct custode_limits_applied a;
	struct custode_refusal why = {0};
	const char *doc = "{\"schema\":\"custode.policy/v1\",\"name\":\"t\",\"version\":1,\"content\":{}}";

	cr_assert_eq(custode_policy_parse(doc, strlen(doc), &p, &why), 0);
	cr_expect_not(custode_limit_is_set(p, p->limits.memory_bytes));
	cr_expect_eq(custode_limits_apply("/nonexistent", p, false, &a, &why), 0, "nothing to write, nothing read");
	cr_expect_not(a.memory.requested || a.pids.requested || a.cpu.requested);
	custode_policy_free(p);
}

Test(exe_identity, from_fdinfo_and_mountinfo)
{
	const char *fdinfo = "pos:\t0\nflags:\t0100000\nmnt_id:\t27\nino:\t247728\n";
	const char *mountinfo = "22 1 259:2 / / rw - ext4 /dev/nvme0n1p2 rw\n"
				"27 22 0:31 /@ /usr rw - btrfs /dev/sda2 rw\n";
	__u64 dev = 0, ino = 0;

	cr_assert_eq(custode_exe_identity_parse(fdinfo, mountinfo, &dev, &ino), 0);
	cr_expect_eq(ino, 247728);
	cr_expect_eq(dev, (0ULL << 20) | 31, "kernel s_dev of mount 27 (0:31), not a stat(2) device");
	cr_expect_neq(custode_exe_identity_parse("mnt_id:\t99\nino:\t1\n", mountinfo, &dev, &ino), 0, "unknown mount");
	cr_expect_neq(custode_exe_identity_parse("pos:\t0\n", mountinfo, &dev, &ino), 0, "no mnt_id");
	cr_expect_eq(custode_exe_identity_parse("mnt_id:\t22\nino:\t5\n", mountinfo, &dev, &ino), 0);
	cr_expect_eq(dev, (259ULL << 20) | 2);
}

Test(exe_identity, of_this_process)
{
	__u64 dev = 0, ino = 0;
	struct stat st;

	cr_assert_eq(custode_self_exe_identity(&dev, &ino), 0);
	cr_assert_eq(stat("/proc/self/exe", &st), 0);
	cr_expect_eq(ino, st.st_ino, "the same inode as stat sees on an ordinary file system");
	cr_expect_neq(dev, 0);
}
