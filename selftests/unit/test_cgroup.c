// SPDX-License-Identifier: Apache-2.0
/* cgroup v2 discovery from mountinfo, custode's root, and levels. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "cgroup/cgroup.h"

#define ROOTFS "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro\n"
#define PROC "23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
#define SYSFS "24 22 0:20 / /sys rw,nosuid,nodev,noexec,relatime shared:2 - sysfs sysfs rw\n"
#define V2_SYS "30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 " \
	       "rw,nsdelegate,memory_recursiveprot\n"
#define TMPFS_SYS "30 24 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:4 - tmpfs tmpfs ro,mode=755\n"
#define V2_UNIFIED "31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:5 - cgroup2 " \
		   "cgroup2 rw,nsdelegate\n"
#define V1_MEMORY "32 30 0:28 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:6 - cgroup cgroup " \
		  "rw,memory\n"
#define V1_SYSTEMD "33 30 0:29 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:7 - cgroup " \
		   "cgroup rw,xattr,name=systemd\n"

static void mount_ok(const char *mountinfo, const char *want)
{
	char out[PATH_MAX];
	int err;

	memset(out, 'z', sizeof(out));
	err = custode_cgroup2_mount_parse(mountinfo, out, sizeof(out));
	cr_assert_eq(err, 0, "parse gave %d", err);
	cr_assert_str_eq(out, want);
}

Test(cgroup_mount, pure_v2)
{
	mount_ok(ROOTFS PROC SYSFS V2_SYS, "/sys/fs/cgroup");
}

Test(cgroup_mount, hybrid)
{
	mount_ok(ROOTFS SYSFS TMPFS_SYS V2_UNIFIED V1_MEMORY V1_SYSTEMD, "/sys/fs/cgroup/unified");
	mount_ok(ROOTFS SYSFS TMPFS_SYS V1_MEMORY V1_SYSTEMD V2_UNIFIED, "/sys/fs/cgroup/unified");
}

Test(cgroup_mount, both_prefers_sys_fs_cgroup)
{
	mount_ok(ROOTFS V2_UNIFIED V2_SYS, "/sys/fs/cgroup");
	mount_ok(ROOTFS V2_SYS V2_UNIFIED, "/sys/fs/cgroup");
	mount_ok("40 1 0:50 / /mnt/cg rw - cgroup2 none rw\n" V2_SYS "41 1 0:51 / /srv/cg rw - cgroup2 none rw\n",
		 "/sys/fs/cgroup");
}

Test(cgroup_mount, only_elsewhere)
{
	mount_ok(ROOTFS "40 22 0:50 / /run/mycg rw,relatime - cgroup2 none rw\n", "/run/mycg");
}

Test(cgroup_mount, none)
{
	char out[64] = "untouched";

	cr_assert_eq(custode_cgroup2_mount_parse(ROOTFS PROC SYSFS TMPFS_SYS V1_MEMORY V1_SYSTEMD, out, sizeof(out)),
		     -ENOENT);
	cr_assert_str_eq(out, "untouched");
	cr_assert_eq(custode_cgroup2_mount_parse("", out, sizeof(out)), -ENOENT);
	cr_assert_eq(custode_cgroup2_mount_parse("\n\n", out, sizeof(out)), -ENOENT);
	cr_assert_eq(custode_cgroup2_mount_parse("garbage without separator cgroup2\n", out, sizeof(out)), -ENOENT);
	cr_assert_str_eq(out, "untouched");
}

Test(cgroup_mount, v1_named_cgroup2_source_is_not_v2)
{
	/* fstype is cgroup, the source happens to be called "cgroup2" */
	char out[64] = "untouched";

	cr_assert_eq(custode_cgroup2_mount_parse("30 24 0:26 / /sys/fs/cgroup rw - cgroup cgroup2 rw,memory\n", out,
						 sizeof(out)),
		     -ENOENT);
}

Test(cgroup_mount, escaped_spaces)
{
	mount_ok(ROOTFS "40 22 0:50 / /mnt/my\\040cgroup\\040root rw,relatime shared:9 - cgroup2 cgroup2 rw\n",
		 "/mnt/my cgroup root");
	mount_ok(ROOTFS "40 22 0:50 / /mnt/tab\\011and\\134slash rw - cgroup2 cgroup2 rw\n", "/mnt/tab\tand\\slash");
}

Test(cgroup_mount, escaped_separator_in_mount_point)
{
	/* a mount point named "a - cgroup2 b" is escaped and must not be taken for the separator */
	mount_ok(ROOTFS "40 22 0:50 / /mnt/a\\040-\\040cgroup2\\040b rw - ext4 /dev/sdb rw\n" V2_SYS, "/sys/fs/cgroup");
}

Test(cgroup_mount, optional_fields)
{
	mount_ok("30 24 0:26 / /sys/fs/cgroup rw,nosuid shared:4 master:1 propagate_from:2 unbindable - cgroup2 cgroup2 "
		 "rw\n",
		 "/sys/fs/cgroup");
	/* no optional fields at all */
	mount_ok("30 24 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n", "/sys/fs/cgroup");
}

Test(cgroup_mount, last_line_without_newline)
{
	mount_ok(ROOTFS "30 24 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw", "/sys/fs/cgroup");
}

Test(cgroup_mount, container_view)
{
	/* inside a container: root of the mount is a sub-cgroup, the mount point is still the mount point */
	mount_ok("1200 1100 0:26 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw,nsdelegate\n", "/sys/fs/cgroup");
}

Test(cgroup_mount, too_long_for_out)
{
	char out[14];

	memcpy(out, "untouched", 10);
	/* "/sys/fs/cgroup" is 14 bytes: needs 15 */
	cr_assert_eq(custode_cgroup2_mount_parse(V2_SYS, out, sizeof(out)), -ENAMETOOLONG);
	cr_assert_str_eq(out, "untouched");
	cr_assert_eq(custode_cgroup2_mount_parse(V2_SYS, out, 15 - 1), -ENAMETOOLONG);
}

Test(cgroup_mount, exact_fit)
{
	char *out = malloc(15); /* heap: ASan catches an overflow */

	cr_assert_eq(custode_cgroup2_mount_parse(V2_SYS, out, 15), 0);
	cr_assert_str_eq(out, "/sys/fs/cgroup");
	free(out);
}

Test(cgroup_mount, very_long_line_is_skipped)
{
	size_t n = 3 * PATH_MAX;
	char *text = malloc(n + sizeof(V2_SYS) + 64);
	size_t off = 0;

	/* one over-long line (a v2 mount we can't hold) followed by the real one */
	off += (size_t)sprintf(text, "40 22 0:50 / /mnt/");
	memset(text + off, 'a', n);
	off += n;
	off += (size_t)sprintf(text + off, " rw - cgroup2 cgroup2 rw\n");
	strcpy(text + off, V2_SYS);
	mount_ok(text, "/sys/fs/cgroup");
	free(text);
}

/* ---- custode_cgroup_level ---- */

Test(cgroup_level, levels)
{
	cr_assert_eq(custode_cgroup_level("/sys/fs/cgroup", "/sys/fs/cgroup"), 0);
	cr_assert_eq(custode_cgroup_level("/sys/fs/cgroup", "/sys/fs/cgroup/custode"), 1);
	cr_assert_eq(custode_cgroup_level("/sys/fs/cgroup", "/sys/fs/cgroup/custode/"), 1);
	cr_assert_eq(custode_cgroup_level("/sys/fs/cgroup", "/sys/fs/cgroup/custode/run-0123456789abcdef"), 2);
	cr_assert_eq(custode_cgroup_level("/sys/fs/cgroup", "/sys/fs/cgroup/custode//run"), 2);
	cr_assert_eq(custode_cgroup_level("/sys/fs/cgroup",
					  "/sys/fs/cgroup/system.slice/custode.service/runs/run-1/child"),
		     5);
	cr_assert_eq(custode_cgroup_level("/sys/fs/cgroup/unified", "/sys/fs/cgroup/unified/custode"), 1);
}

Test(cgroup_level, outside_the_mount)
{
	cr_assert_eq(custode_cgroup_level("/sys/fs/cgroup", "/sys/fs/cgroupx"), -EINVAL);
	cr_assert_eq(custode_cgroup_level("/sys/fs/cgroup", "/sys/fs/cgroupx/custode"), -EINVAL);
	cr_assert_eq(custode_cgroup_level("/sys/fs/cgroup", "/sys/fs"), -EINVAL);
	cr_assert_eq(custode_cgroup_level("/sys/fs/cgroup", "/tmp/custode"), -EINVAL);
	cr_assert_eq(custode_cgroup_level("/sys/fs/cgroup", ""), -EINVAL);
}

/* ---- custode_cgroup_root ---- */

Test(cgroup_root, default_is_custode_below_the_mount)
{
	char out[PATH_MAX];

	unsetenv("CUSTODE_CGROUP_ROOT");
	cr_assert_eq(custode_cgroup_root("/sys/fs/cgroup", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/sys/fs/cgroup/custode");
	cr_assert_eq(custode_cgroup_root("/sys/fs/cgroup/unified", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/sys/fs/cgroup/unified/custode");
}

Test(cgroup_root, empty_variable_means_default)
{
	char out[PATH_MAX];

	setenv("CUSTODE_CGROUP_ROOT", "", 1);
	cr_assert_eq(custode_cgroup_root("/sys/fs/cgroup", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/sys/fs/cgroup/custode");
	unsetenv("CUSTODE_CGROUP_ROOT");
}

Test(cgroup_root, from_environment)
{
	char out[PATH_MAX];

	setenv("CUSTODE_CGROUP_ROOT", "/sys/fs/cgroup/system.slice/custode.service", 1);
	cr_assert_eq(custode_cgroup_root("/sys/fs/cgroup", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/sys/fs/cgroup/system.slice/custode.service");
	unsetenv("CUSTODE_CGROUP_ROOT");
}

Test(cgroup_root, environment_outside_the_mount_refused)
{
	static const char *const bad[] = {
		"/tmp/custode",
		"/sys/fs/cgroupx/custode", /* shares the mount's bytes, not its directory */
		"/sys/fs/cgroup",          /* the mount itself is not a subtree of it */
		"/sys/fs",
		"sys/fs/cgroup/custode",
		"/sys/fs/cgroup/../../tmp",
		"/sys/fs/cgroup/a/..",
		"/sys/fs/cgroup/a/../../etc",
	};
	char out[PATH_MAX];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		strcpy(out, "untouched");
		setenv("CUSTODE_CGROUP_ROOT", bad[i], 1);
		cr_assert_eq(custode_cgroup_root("/sys/fs/cgroup", out, sizeof(out)), -EINVAL, "%s accepted", bad[i]);
		cr_assert_str_eq(out, "untouched");
	}
	unsetenv("CUSTODE_CGROUP_ROOT");
}

Test(cgroup_root, too_long)
{
	char out[20];

	unsetenv("CUSTODE_CGROUP_ROOT");
	cr_assert_eq(custode_cgroup_root("/sys/fs/cgroup", out, sizeof(out)), -ENAMETOOLONG);
	setenv("CUSTODE_CGROUP_ROOT", "/sys/fs/cgroup/a-long-delegated-subtree", 1);
	cr_assert_eq(custode_cgroup_root("/sys/fs/cgroup", out, sizeof(out)), -ENAMETOOLONG);
	unsetenv("CUSTODE_CGROUP_ROOT");
}

Test(cgroup, of_pid)
{
	char out[4096], small[4];

	/* this process: its v2 line joined to the mount given */
	if (custode_cgroup_of_pid("/mnt/cg", 0, out, sizeof(out)) == 0)
		cr_assert(!strncmp(out, "/mnt/cg", 7), "%s", out);
	cr_assert_eq(custode_cgroup_of_pid("/mnt/cg", 0, small, sizeof(small)), -ENAMETOOLONG);
	cr_assert_lt(custode_cgroup_of_pid("/mnt/cg", 0x7ffffff0, out, sizeof(out)), 0, "no such process");
}
