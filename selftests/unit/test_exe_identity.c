// SPDX-License-Identifier: Apache-2.0
/*
 * custode_exe_identity_parse (userspace/engine/self.c): the executable's
 * kernel identity from an fdinfo text (mnt_id, ino) and a mountinfo text
 * (MAJOR:MINOR of that mount). Exact field and mount matching, the s_dev
 * encoding limits, and hostile or truncated input: a wrong identity would
 * attribute a path to the wrong executable.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "engine/self.h"

static const char mountinfo[] = "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n"
				"27 22 0:31 /@ /usr rw shared:2 - btrfs /dev/sda2 rw\n"
				"2 22 8:1 / /boot rw - vfat /dev/sda1 rw\n"
				"270 22 0:99 / /mnt/with\\040space rw - tmpfs tmpfs rw\n";

static int parse(const char *fdinfo, const char *mi, __u64 *dev, __u64 *ino)
{
	*dev = 0xdead;
	*ino = 0xbeef;
	return custode_exe_identity_parse(fdinfo, mi, dev, ino);
}

Test(exe_identity_parse, picks_the_exact_mount)
{
	__u64 dev, ino;

	cr_assert_eq(parse("pos:\t0\nflags:\t0100000\nmnt_id:\t27\nino:\t247728\n", mountinfo, &dev, &ino), 0);
	cr_expect_eq(dev, 31);
	cr_expect_eq(ino, 247728);
	/* 2 is a prefix of 22, 27 and 270: the whole number decides */
	cr_assert_eq(parse("mnt_id:\t2\nino:\t5\n", mountinfo, &dev, &ino), 0);
	cr_expect_eq(dev, (8ULL << 20) | 1);
	cr_assert_eq(parse("mnt_id:\t270\nino:\t6\n", mountinfo, &dev, &ino), 0);
	cr_expect_eq(dev, 99);
	cr_assert_eq(parse("mnt_id:\t22\nino:\t7\n", mountinfo, &dev, &ino), 0);
	cr_expect_eq(dev, (259ULL << 20) | 2);
	/* fields in any order, the last line without a newline */
	cr_assert_eq(parse("ino:\t8\nmnt_id:\t27", mountinfo, &dev, &ino), 0);
	cr_expect_eq(ino, 8);
	cr_expect_eq(dev, 31);
}

Test(exe_identity_parse, field_names_match_whole)
{
	__u64 dev, ino;

	/* "mnt_idx" and "inotify ..." lines are not mnt_id and ino */
	cr_assert_eq(parse("mnt_idx:\t22\nmnt_id:\t27\ninotify wd:1 ino:99\nino:\t3\n", mountinfo, &dev, &ino), 0);
	cr_expect_eq(dev, 31);
	cr_expect_eq(ino, 3);
	/* a name in the middle of a line is not a field */
	cr_expect_eq(parse("flags:\tmnt_id:27\nino:\t3\n", mountinfo, &dev, &ino), -ENOENT);
	cr_expect_eq(parse("x mnt_id:\t27\nino:\t3\n", mountinfo, &dev, &ino), -ENOENT);
}

Test(exe_identity_parse, missing_fields_and_mounts)
{
	__u64 dev, ino;

	cr_expect_eq(parse("", mountinfo, &dev, &ino), -ENOENT);
	cr_expect_eq(parse("pos:\t0\nino:\t1\n", mountinfo, &dev, &ino), -ENOENT, "no mnt_id");
	cr_expect_eq(parse("mnt_id:\t27\n", mountinfo, &dev, &ino), -ENOENT, "no ino");
	cr_expect_eq(parse("mnt_id:\t99\nino:\t1\n", mountinfo, &dev, &ino), -ENOENT, "unknown mount");
	cr_expect_eq(parse("mnt_id:\t27\nino:\t1\n", "", &dev, &ino), -ENOENT, "empty mountinfo");
	cr_expect_eq(dev, 0xdead, "nothing written on failure");
	cr_expect_eq(ino, 0xbeef, "nothing written on failure");
}

Test(exe_identity_parse, malformed_numbers_refused)
{
	static const char *const bad[] = {
		"mnt_id:\tabc\nino:\t1\n",
		"mnt_id:\t\nino:\t1\n",
		"mnt_id:\t27\nino:\tx\n",
		"mnt_id:\t99999999999999999999999\nino:\t1\n", /* beyond 64 bits */
		"mnt_id:\t27\nino:\t99999999999999999999999\n",
	};
	__u64 dev, ino;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(parse(bad[i], mountinfo, &dev, &ino), -EINVAL, "%s", bad[i]);
		cr_expect_eq(dev, 0xdead);
	}
}

/*
 * BUG (self.c, fdinfo_field): strtoull skips any white space — newlines
 * included — and takes a sign, so "mnt_id:\n27" read the next line's
 * number, "mnt_id:\t-1" became 2^64-1, and "mnt_id:\t27abc" was 27. A field
 * is the number on its own line, and nothing else.
 */
Test(exe_identity_parse, field_value_is_the_number_on_its_line)
{
	const char *mi = "27 22 0:31 / /usr rw - ext4 /dev/sda2 rw\n"
			 "18446744073709551615 22 0:77 / /x rw - ext4 /dev/sdb rw\n";
	__u64 dev, ino;

	cr_expect_lt(parse("mnt_id:\n27\nino:\t5\n", mi, &dev, &ino), 0, "value on the next line");
	cr_expect_lt(parse("mnt_id:\t-1\nino:\t5\n", mi, &dev, &ino), 0, "a negative mount id");
	cr_expect_lt(parse("mnt_id:\t27abc\nino:\t5\n", mi, &dev, &ino), 0, "trailing garbage");
	cr_expect_lt(parse("mnt_id:\t27\nino:\t+5\n", mi, &dev, &ino), 0, "a signed inode");
	cr_expect_eq(dev, 0xdead);
	/* what the kernel writes: a tab (or spaces) and digits */
	cr_assert_eq(parse("mnt_id:\t27\nino:  5\n", mi, &dev, &ino), 0);
	cr_expect_eq(ino, 5);
}

/*
 * BUG (self.c, mountinfo scan): sscanf's white space matches newlines, so a
 * truncated line "27" took its parent and MAJOR:MINOR from the next line,
 * giving mount 27 the device of another mount. Each line stands alone.
 */
Test(exe_identity_parse, mountinfo_fields_do_not_cross_lines)
{
	__u64 dev, ino;

	cr_expect_eq(parse("mnt_id:\t27\nino:\t5\n", "27\n5 0:99 / / rw - ext4 x rw\n", &dev, &ino), -ENOENT);
	cr_expect_eq(parse("mnt_id:\t27\nino:\t5\n", "27 22\n0:99 / / rw - ext4 x rw\n", &dev, &ino), -ENOENT);
	cr_expect_eq(parse("mnt_id:\t27\nino:\t5\n", "27 22 0:\n99 / / rw - ext4 x rw\n", &dev, &ino), -ENOENT);
	cr_expect_eq(dev, 0xdead);
	/* a broken line does not hide a good one after it */
	cr_assert_eq(parse("mnt_id:\t27\nino:\t5\n", "27 22\n27 22 0:41 / / rw - ext4 x rw\n", &dev, &ino), 0);
	cr_expect_eq(dev, 41);
}

Test(exe_identity_parse, device_number_limits)
{
	__u64 dev, ino;

	/* the kernel's dev_t: 12 bits of major, 20 of minor */
	cr_assert_eq(parse("mnt_id:\t1\nino:\t1\n", "1 0 4095:1048575 / / rw - x x rw\n", &dev, &ino), 0);
	cr_expect_eq(dev, (4095ULL << 20) | 1048575);
	cr_expect_eq(parse("mnt_id:\t1\nino:\t1\n", "1 0 4096:0 / / rw - x x rw\n", &dev, &ino), -ERANGE);
	cr_expect_eq(parse("mnt_id:\t1\nino:\t1\n", "1 0 0:1048576 / / rw - x x rw\n", &dev, &ino), -ERANGE);
	cr_expect_neq(parse("mnt_id:\t1\nino:\t1\n", "1 0 -1:0 / / rw - x x rw\n", &dev, &ino), 0);
	cr_expect_eq(dev, 0xdead);
}

Test(exe_identity_parse, hostile_mountinfo)
{
	static const char *const junk[] = {
		"\n\n\n",
		"garbage\n",
		"27 22 0:31",                 /* ends after MAJOR:MINOR: still a complete identity */
		"27 22 a:b / / rw\n",
		"27 22 0-31 / / rw\n",
		"27 22 :31 / / rw\n",
		"27 x 0:31 / / rw\n",
		" 27 22 0:31 / / rw\n",
	};
	__u64 dev, ino;

	cr_expect_eq(parse("mnt_id:\t27\nino:\t5\n", junk[2], &dev, &ino), 0);
	cr_expect_eq(dev, 31);
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		if (i == 2)
			continue;
		cr_expect_neq(parse("mnt_id:\t27\nino:\t5\n", junk[i], &dev, &ino), 0, "%s", junk[i]);
	}
	/* a long line (a mount point of 64 KiB) before the one we want */
	{
		size_t n = 70000;
		char *big = malloc(n + 128);

		cr_assert_not_null(big);
		memcpy(big, "5 1 0:1 / /", 11);
		memset(big + 11, 'a', n);
		strcpy(big + 11 + n, " rw - x x rw\n27 22 0:31 / / rw - x x rw\n");
		cr_assert_eq(parse("mnt_id:\t27\nino:\t5\n", big, &dev, &ino), 0);
		cr_expect_eq(dev, 31);
		free(big);
	}
}

/* ---- custode_proc_exe (userspace/events/enrich.c): the identity through /proc/PID/exe ---- */

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include "events/events.h"
#include "util/fsutil.h"

/* The kernel's s_dev (MKDEV: major << 20 | minor) of a stat's st_dev. */
static __u64 kdev(dev_t d)
{
	return (__u64)major(d) << 20 | minor(d);
}

Test(proc_exe, this_process_matches_stat_of_the_binary)
{
	char path[4096];
	struct stat st, self;
	__u64 dev = 0, ino = 0, sdev = 0, sino = 0;

	cr_assert_eq(custode_proc_exe(getpid(), &dev, &ino, path, sizeof(path)), 0);
	cr_assert_eq(stat(path, &st), 0, "%s", path);
	cr_assert_eq(stat("/proc/self/exe", &self), 0);
	cr_expect_eq(ino, (__u64)st.st_ino);
	cr_expect_eq(dev, kdev(st.st_dev), "dev %llx, stat says %llx", (unsigned long long)dev,
		     (unsigned long long)kdev(st.st_dev));
	cr_expect(st.st_dev == self.st_dev && st.st_ino == self.st_ino, "the path names the running binary");
	/* and the daemon's own identity (engine/self.c) agrees */
	cr_assert_eq(custode_self_exe_identity(&sdev, &sino), 0);
	cr_expect(sdev == dev && sino == ino);
	/* a path that does not fit is refused, not cut */
	cr_expect_eq(custode_proc_exe(getpid(), &dev, &ino, path, 2), -ENAMETOOLONG);
	cr_expect_neq(custode_proc_exe(0x7ffffff0, &dev, &ino, path, sizeof(path)), 0, "no such process");
}

/*
 * BUG (enrich.c, custode_proc_exe): /proc/PID/exe was opened O_RDONLY, an
 * open of the executable on its file system. On FUSE (served by a process,
 * perhaps the confined one) or a dead hard NFS mount that open can wait
 * forever, and with it the daemon's one event loop. An O_PATH fd opens
 * nothing: the file system is never asked, and no open event (inotify
 * IN_OPEN, fanotify FAN_OPEN_PERM: a permission event would wait for its
 * listener) is made. The exe here is a copy of a small binary, so nobody
 * else opens it while we watch.
 */
Test(proc_exe, does_not_open_the_executable)
{
	static const char *const tmps[] = {"/tmp", "/var/tmp", "."};
	char dir[256] = "", copy[300], path[4096], got[4096], buf[4096];
	const char *src = access("/bin/sleep", X_OK) == 0 ? "/bin/sleep" : "/usr/bin/sleep";
	__u64 dev = 0, ino = 0;
	struct stat st;
	pid_t child = -1;
	int in, wd;

	for (size_t i = 0; i < sizeof(tmps) / sizeof(tmps[0]) && child < 0; i++) {
		char *text = NULL;
		size_t len = 0;
		int fd, status;

		snprintf(dir, sizeof(dir), "%s/custode-exe-XXXXXX", tmps[i]);
		if (!mkdtemp(dir))
			continue;
		snprintf(copy, sizeof(copy), "%s/sleeper", dir);
		cr_assert_eq(custode_read_file(src, 64u << 20, &text, &len), 0, "%s", src);
		fd = open(copy, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
		cr_assert_geq(fd, 0);
		cr_assert_eq(write(fd, text, len), (ssize_t)len);
		close(fd);
		free(text);
		child = fork();
		cr_assert_geq(child, 0);
		if (child == 0) {
			execl(copy, "sleeper", "30", (char *)NULL);
			_exit(127);
		}
		/* exec'd once /proc/CHILD/exe names the copy (a noexec /tmp: try the next place) */
		snprintf(path, sizeof(path), "/proc/%d/exe", (int)child);
		for (int t = 0; t < 500; t++) {
			ssize_t n = readlink(path, got, sizeof(got) - 1);

			if (n > 0 && (got[n] = 0, !strcmp(got, copy)))
				break;
			if (waitpid(child, &status, WNOHANG) == child) {
				child = -1;
				break;
			}
			usleep(10000);
		}
		if (child < 0) {
			unlink(copy);
			rmdir(dir);
		}
	}
	if (child < 0)
		cr_skip_test("no place to run a copy of %s", src);
	in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	cr_assert_geq(in, 0);
	wd = inotify_add_watch(in, copy, IN_OPEN | IN_ACCESS | IN_CLOSE);
	cr_assert_geq(wd, 0);

	cr_assert_eq(custode_proc_exe((int)child, &dev, &ino, got, sizeof(got)), 0);
	cr_expect_str_eq(got, copy);
	cr_assert_eq(stat(copy, &st), 0);
	cr_expect_eq(ino, (__u64)st.st_ino);
	cr_expect_eq(dev, kdev(st.st_dev));
	errno = 0;
	cr_expect_eq(read(in, buf, sizeof(buf)), -1, "the executable was opened (an inotify event)");
	cr_expect_eq(errno, EAGAIN);

	close(in);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	unlink(copy);
	rmdir(dir);
}
