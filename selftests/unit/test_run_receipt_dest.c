// SPDX-License-Identifier: Apache-2.0
/*
 * --receipt destinations are checked (and opened when they are no file to
 * replace) before the command starts: a directory, an unwritable directory,
 * an unopened or read-only /dev/fd/N refuse the run (issue 16).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <criterion/criterion.h>
#include <jansson.h>

#include "run/receipt.h"
#include "util/fsutil.h"

static char dir[64];

static void make_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/custode-ut-receipt-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
	custode_rm_rf(dir);
}

static void dest_refused(const char *path, const char *in_detail)
{
	struct custode_receipt_dest d;
	struct custode_refusal why = {0};

	cr_assert_lt(custode_receipt_open(path, &d, &why), 0, "%s accepted", path);
	cr_assert_eq(why.reason, CUSTODE_REASON_RUN_USAGE, "%s: reason %d", path, why.reason);
	cr_assert_not_null(strstr(why.detail, in_detail), "%s: \"%s\" lacks \"%s\"", path, why.detail, in_detail);
}

static void write_small(const struct custode_receipt_dest *d)
{
	json_t *j = json_pack("{s:i}", "receipt_version", 1);

	cr_assert_eq(custode_receipt_write(d, j), 0);
	json_decref(j);
}

TestSuite(receipt_dest, .init = make_dir, .fini = remove_dir);

Test(receipt_dest, a_directory_is_refused)
{
	char path[128];

	dest_refused(dir, "is a directory");
	snprintf(path, sizeof(path), "%s/new/", dir);
	dest_refused(path, "directory");
}

Test(receipt_dest, a_missing_or_unwritable_directory_is_refused)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/missing/receipt.json", dir);
	dest_refused(path, "No such file");
	snprintf(path, sizeof(path), "%s/file", dir);
	cr_assert_eq(custode_write_file_atomic(path, "x", 1, 0644), 0);
	snprintf(path, sizeof(path), "%s/file/receipt.json", dir);
	dest_refused(path, "ot a directory");
}

Test(receipt_dest, an_unopened_or_read_only_fd_is_refused)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	char path[64];

	cr_assert_geq(fd, 0);
	snprintf(path, sizeof(path), "/dev/fd/%d", fd);
	dest_refused(path, "not open for writing");
	close(fd); /* the lowest free fd: certainly not open now */
	dest_refused(path, "is not open");
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	dest_refused(path, "is not open");
}

Test(receipt_dest, an_open_fd_receives_the_receipt)
{
	struct custode_receipt_dest d;
	struct custode_refusal why = {0};
	char path[64], buf[256] = {0};
	int p[2];

	cr_assert_eq(pipe(p), 0);
	snprintf(path, sizeof(path), "/dev/fd/%d", p[1]);
	cr_assert_eq(custode_receipt_open(path, &d, &why), 0, "%s", why.detail);
	close(p[1]); /* the destination holds its own copy */
	write_small(&d);
	custode_receipt_close(&d);
	cr_assert_gt(read(p[0], buf, sizeof(buf) - 1), 0);
	cr_assert_not_null(strstr(buf, "\"receipt_version\": 1"), "%s", buf);
	close(p[0]);
}

Test(receipt_dest, a_new_file_is_written_at_the_end)
{
	struct custode_receipt_dest d;
	struct custode_refusal why = {0};
	char path[128], *text = NULL;
	struct stat st;

	snprintf(path, sizeof(path), "%s/receipt.json", dir);
	cr_assert_eq(custode_receipt_open(path, &d, &why), 0, "%s", why.detail);
	cr_assert_eq(d.fd, -1, "a file is replaced atomically, not opened");
	cr_assert_neq(stat(path, &st), 0, "nothing written before the end");
	write_small(&d);
	cr_assert_eq(custode_read_file(path, 4096, &text, NULL), 0);
	cr_assert_not_null(strstr(text, "\"receipt_version\": 1"));
	free(text);
}

Test(receipt_dest, a_device_is_written_in_place)
{
	struct custode_receipt_dest d;
	struct custode_refusal why = {0};
	struct stat st;

	cr_assert_eq(custode_receipt_open("/dev/null", &d, &why), 0, "%s", why.detail);
	cr_assert_geq(d.fd, 0);
	write_small(&d);
	custode_receipt_close(&d);
	cr_assert_eq(stat("/dev/null", &st), 0);
	cr_assert(S_ISCHR(st.st_mode), "/dev/null is still a device");
	cr_assert_eq(custode_receipt_open("-", &d, &why), 0);
}
