// SPDX-License-Identifier: Apache-2.0
/* File helpers: atomic writes, bounded reads, mkdir -p, rm -rf without following links. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <criterion/criterion.h>

#include "util/fsutil.h"

static char base[64];

static void mk_base(void)
{
	strcpy(base, "/tmp/custode-unit-XXXXXX");
	cr_assert_not_null(mkdtemp(base), "mkdtemp: %s", strerror(errno));
}

static void rm_base(void)
{
	char cmd[128];

	/* independent of the code under test */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (base[0] && system(cmd) != 0)
		fprintf(stderr, "cleanup of %s failed\n", base);
}

TestSuite(fsutil, .init = mk_base, .fini = rm_base);

static void at(char *out, size_t len, const char *rel)
{
	snprintf(out, len, "%s/%s", base, rel);
}

static void put(const char *rel, const char *content)
{
	char p[PATH_MAX];
	FILE *f;

	at(p, sizeof(p), rel);
	f = fopen(p, "w");
	cr_assert_not_null(f, "%s: %s", p, strerror(errno));
	fputs(content, f);
	fclose(f);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = malloc(1 << 20);
	size_t n;

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	n = fread(buf, 1, (1 << 20) - 1, f);
	fclose(f);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* Directory entries of base/rel other than "." and "..", names containing `needle`. */
static int count_entries(const char *rel, const char *needle)
{
	char p[PATH_MAX];
	DIR *d;
	struct dirent *de;
	int n = 0;

	at(p, sizeof(p), rel);
	d = opendir(p);
	cr_assert_not_null(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && (!needle || strstr(de->d_name, needle)))
			n++;
	closedir(d);
	return n;
}

/* ---- custode_write_file_atomic ---- */

Test(fsutil, write_atomic_content_and_mode)
{
	char p[PATH_MAX], *got;
	struct stat st;
	size_t len;

	at(p, sizeof(p), "state.json");
	cr_assert_eq(custode_write_file_atomic(p, "{\"a\":1}\n", 8, 0640), 0);
	got = slurp(p, &len);
	cr_assert_eq(len, 8);
	cr_assert_str_eq(got, "{\"a\":1}\n");
	free(got);
	cr_assert_eq(stat(p, &st), 0);
	cr_assert(S_ISREG(st.st_mode));
	cr_assert_eq(st.st_mode & 07777, 0640, "mode %o", st.st_mode & 07777);
	cr_assert_eq(count_entries(".", NULL), 1, "temp file left behind");
}

Test(fsutil, write_atomic_mode_is_exact)
{
	char p[PATH_MAX];
	struct stat st;
	mode_t old = umask(077);

	/* the mode asked for, not filtered by the umask (it is a state file's contract) */
	at(p, sizeof(p), "f");
	cr_assert_eq(custode_write_file_atomic(p, "x", 1, 0644), 0);
	umask(old);
	cr_assert_eq(stat(p, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0644, "mode %o", st.st_mode & 07777);
}

Test(fsutil, write_atomic_binary_and_empty)
{
	char p[PATH_MAX], *got;
	size_t len;
	static const char bin[] = {'a', 0, 'b', '\n', 0};

	at(p, sizeof(p), "bin");
	cr_assert_eq(custode_write_file_atomic(p, bin, sizeof(bin), 0600), 0);
	got = slurp(p, &len);
	cr_assert_eq(len, sizeof(bin));
	cr_assert_arr_eq(got, bin, sizeof(bin));
	free(got);

	at(p, sizeof(p), "empty");
	cr_assert_eq(custode_write_file_atomic(p, "", 0, 0600), 0);
	got = slurp(p, &len);
	cr_assert_eq(len, 0);
	free(got);
}

Test(fsutil, write_atomic_replaces_existing)
{
	char p[PATH_MAX], *got;
	struct stat before, after;

	put("f", "old content that is longer than the new one\n");
	at(p, sizeof(p), "f");
	cr_assert_eq(stat(p, &before), 0);
	cr_assert_eq(custode_write_file_atomic(p, "new\n", 4, 0600), 0);
	got = slurp(p, NULL);
	cr_assert_str_eq(got, "new\n");
	free(got);
	/* replaced by rename, not rewritten in place */
	cr_assert_eq(stat(p, &after), 0);
	cr_assert_neq(before.st_ino, after.st_ino);
	cr_assert_eq(count_entries(".", NULL), 1, "temp file left behind");
}

Test(fsutil, write_atomic_large)
{
	size_t n = 300000;
	char p[PATH_MAX], *data = malloc(n), *got;
	size_t len;

	for (size_t i = 0; i < n; i++)
		data[i] = (char)('a' + i % 23);
	at(p, sizeof(p), "big");
	cr_assert_eq(custode_write_file_atomic(p, data, n, 0600), 0);
	got = slurp(p, &len);
	cr_assert_eq(len, n);
	cr_assert_arr_eq(got, data, n);
	free(got);
	free(data);
}

Test(fsutil, write_atomic_missing_directory)
{
	char p[PATH_MAX];

	at(p, sizeof(p), "no/such/dir/f");
	cr_assert_eq(custode_write_file_atomic(p, "x", 1, 0600), -ENOENT);
	cr_assert_eq(count_entries(".", NULL), 0);
}

Test(fsutil, write_atomic_onto_a_directory_fails_cleanly)
{
	char p[PATH_MAX];

	at(p, sizeof(p), "d");
	cr_assert_eq(mkdir(p, 0700), 0);
	cr_assert_lt(custode_write_file_atomic(p, "x", 1, 0600), 0);
	cr_assert_eq(count_entries(".", NULL), 1, "temp file left behind");
	cr_assert_eq(count_entries(".", ".tmp."), 0, "temp file left behind");
}

Test(fsutil, write_atomic_over_a_symlink_replaces_the_link)
{
	char p[PATH_MAX], target[PATH_MAX], *got;
	struct stat st;

	put("target", "secret\n");
	at(target, sizeof(target), "target");
	at(p, sizeof(p), "link");
	cr_assert_eq(symlink(target, p), 0);
	cr_assert_eq(custode_write_file_atomic(p, "new\n", 4, 0600), 0);
	/* rename() replaces the link itself: the target is untouched */
	got = slurp(target, NULL);
	cr_assert_str_eq(got, "secret\n");
	free(got);
	cr_assert_eq(lstat(p, &st), 0);
	cr_assert(S_ISREG(st.st_mode));
}

/* ---- custode_read_file ---- */

Test(fsutil, read_content)
{
	char p[PATH_MAX], *out = NULL;
	size_t len = 0;

	put("r", "hello\nworld\n");
	at(p, sizeof(p), "r");
	cr_assert_eq(custode_read_file(p, 1024, &out, &len), 0);
	cr_assert_eq(len, 12);
	cr_assert_str_eq(out, "hello\nworld\n");
	cr_assert_eq(out[len], 0);
	free(out);
	/* the length is optional */
	cr_assert_eq(custode_read_file(p, 1024, &out, NULL), 0);
	cr_assert_str_eq(out, "hello\nworld\n");
	free(out);
}

Test(fsutil, read_larger_than_first_buffer)
{
	size_t n = 100000;
	char p[PATH_MAX], *data = malloc(n), *out = NULL;
	size_t len = 0;

	for (size_t i = 0; i < n; i++)
		data[i] = (char)('0' + i % 10);
	at(p, sizeof(p), "big");
	cr_assert_eq(custode_write_file_atomic(p, data, n, 0600), 0);
	cr_assert_eq(custode_read_file(p, 1 << 20, &out, &len), 0);
	cr_assert_eq(len, n);
	cr_assert_arr_eq(out, data, n);
	cr_assert_eq(out[n], 0);
	free(out);
	free(data);
}

Test(fsutil, read_over_max_refused_out_untouched)
{
	char p[PATH_MAX], *out = (char *)0x1;
	size_t len = 77;

	put("r", "0123456789abcdef");
	at(p, sizeof(p), "r");
	cr_assert_eq(custode_read_file(p, 15, &out, &len), -EFBIG);
	cr_assert_eq(out, (char *)0x1);
	cr_assert_eq(len, 77);
	cr_assert_eq(custode_read_file(p, 0, &out, &len), -EFBIG);
	cr_assert_eq(out, (char *)0x1);
}

Test(fsutil, read_over_max_large_refused)
{
	size_t n = 20000;
	char p[PATH_MAX], *data = calloc(1, n), *out = (char *)0x1;
	size_t len = 77;

	at(p, sizeof(p), "big");
	cr_assert_eq(custode_write_file_atomic(p, data, n, 0600), 0);
	cr_assert_eq(custode_read_file(p, 8192, &out, &len), -EFBIG);
	cr_assert_eq(custode_read_file(p, n - 1, &out, &len), -EFBIG);
	cr_assert_eq(out, (char *)0x1);
	cr_assert_eq(len, 77);
	free(data);
}

Test(fsutil, read_exactly_max_small)
{
	char p[PATH_MAX], *out = NULL;
	size_t len = 0;

	put("r", "0123456789abcdef");
	at(p, sizeof(p), "r");
	cr_assert_eq(custode_read_file(p, 16, &out, &len), 0);
	cr_assert_eq(len, 16);
	cr_assert_str_eq(out, "0123456789abcdef");
	free(out);
}

/*
 * BUG (fsutil.c custode_read_file, the `len == cap && cap >= max` test):
 * once the buffer has grown to max bytes and is full, the file is refused
 * with -EFBIG without checking for EOF. So for any max >= 4096 a file of
 * exactly max bytes is refused, although the contract is "at most max bytes;
 * -EFBIG if larger" (and a file of max bytes is accepted when max < 4096).
 */
Test(fsutil, read_exactly_max_large)
{
	static const size_t sizes[] = {4096, 8192, 10000};

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i], len = 0;
		char p[PATH_MAX], *data = malloc(n), *out = NULL;
		int err;

		memset(data, 'q', n);
		at(p, sizeof(p), "exact");
		cr_assert_eq(custode_write_file_atomic(p, data, n, 0600), 0);
		err = custode_read_file(p, n, &out, &len);
		free(data);
		if (err == 0)
			free(out);
		cr_assert_eq(err, 0, "a file of exactly max = %zu bytes refused (%d)", n, err);
		cr_assert_eq(len, n);
	}
}

Test(fsutil, read_empty_file)
{
	char p[PATH_MAX], *out = NULL;
	size_t len = 77;

	put("empty", "");
	at(p, sizeof(p), "empty");
	cr_assert_eq(custode_read_file(p, 1024, &out, &len), 0);
	cr_assert_not_null(out);
	cr_assert_eq(len, 0);
	cr_assert_str_eq(out, "");
	free(out);
}

Test(fsutil, read_missing)
{
	char p[PATH_MAX], *out = (char *)0x1;
	size_t len = 77;

	at(p, sizeof(p), "missing");
	cr_assert_eq(custode_read_file(p, 1024, &out, &len), -ENOENT);
	cr_assert_eq(out, (char *)0x1);
	cr_assert_eq(len, 77);
}

Test(fsutil, read_directory_fails)
{
	char *out = (char *)0x1;

	cr_assert_eq(custode_read_file(base, 1024, &out, NULL), -EISDIR);
	cr_assert_eq(out, (char *)0x1);
}

Test(fsutil, read_procfs)
{
	/* procfs files report size 0: the read must not trust st_size */
	char *out = NULL;
	size_t len = 0;

	cr_assert_eq(custode_read_file("/proc/self/mountinfo", 16u << 20, &out, &len), 0);
	cr_assert_gt(len, 0);
	cr_assert_eq(strlen(out), len);
	free(out);
}

/* ---- custode_mkdir_p ---- */

Test(fsutil, mkdir_p_nested)
{
	char p[PATH_MAX], q[PATH_MAX];
	struct stat st;
	mode_t old = umask(022);

	at(p, sizeof(p), "a/b/c/d");
	cr_assert_eq(custode_mkdir_p(p, 0750), 0);
	umask(old);
	cr_assert_eq(stat(p, &st), 0);
	cr_assert(S_ISDIR(st.st_mode));
	cr_assert_eq(st.st_mode & 0777, 0750, "mode %o", st.st_mode & 0777);
	at(q, sizeof(q), "a/b");
	cr_assert_eq(stat(q, &st), 0);
	cr_assert(S_ISDIR(st.st_mode));
	cr_assert_eq(st.st_mode & 0777, 0750, "intermediate mode %o", st.st_mode & 0777);
}

Test(fsutil, mkdir_p_existing_is_fine)
{
	char p[PATH_MAX];

	at(p, sizeof(p), "x/y");
	cr_assert_eq(custode_mkdir_p(p, 0700), 0);
	cr_assert_eq(custode_mkdir_p(p, 0700), 0);
	cr_assert_eq(custode_mkdir_p(base, 0700), 0);
	cr_assert_eq(custode_mkdir_p("/", 0700), 0);
}

Test(fsutil, mkdir_p_slashes)
{
	char p[PATH_MAX], q[PATH_MAX];
	struct stat st;

	at(p, sizeof(p), "s//t/");
	cr_assert_eq(custode_mkdir_p(p, 0700), 0);
	at(q, sizeof(q), "s/t");
	cr_assert_eq(stat(q, &st), 0);
	cr_assert(S_ISDIR(st.st_mode));
}

Test(fsutil, mkdir_p_through_a_file_fails)
{
	char p[PATH_MAX];

	put("file", "x");
	at(p, sizeof(p), "file/sub");
	cr_assert_eq(custode_mkdir_p(p, 0700), -ENOTDIR);
}

/*
 * BUG (fsutil.c custode_mkdir_p: the final mkdir's EEXIST is ignored
 * without checking what exists): when the path itself is a regular file
 * (or a symlink to one), mkdir -p succeeds, so the caller goes on believing
 * it has a directory (e.g. the state directory /run/custode/runs). mkdir -p
 * reports "File exists" there.
 */
Test(fsutil, mkdir_p_onto_a_file_fails)
{
	char p[PATH_MAX];

	put("file", "x");
	at(p, sizeof(p), "file");
	cr_assert_lt(custode_mkdir_p(p, 0700), 0, "mkdir_p reported success on a regular file");
}

Test(fsutil, mkdir_p_empty_refused)
{
	cr_assert_lt(custode_mkdir_p("", 0700), 0);
}

Test(fsutil, mkdir_p_too_long_refused)
{
	char *p = malloc(PATH_MAX + 10);

	memset(p, 'a', PATH_MAX + 9);
	p[0] = '/';
	p[PATH_MAX + 9] = 0;
	cr_assert_eq(custode_mkdir_p(p, 0700), -ENAMETOOLONG);
	free(p);
}

/* ---- custode_rm_rf ---- */

Test(fsutil, rm_rf_tree)
{
	char p[PATH_MAX];

	at(p, sizeof(p), "t/a/b/c");
	cr_assert_eq(custode_mkdir_p(p, 0700), 0);
	put("t/f1", "1");
	put("t/a/f2", "2");
	put("t/a/b/c/f3", "3");
	put("t/a/b/.hidden", "h");
	at(p, sizeof(p), "t/a/empty");
	cr_assert_eq(mkdir(p, 0700), 0);
	at(p, sizeof(p), "t/a/fifo");
	cr_assert_eq(mkfifo(p, 0600), 0);
	at(p, sizeof(p), "t/a/dangling");
	cr_assert_eq(symlink("/nonexistent/custode", p), 0);
	at(p, sizeof(p), "t/d2");
	cr_assert_eq(mkdir(p, 0700), 0);
	put("t/d2/f", "x");

	at(p, sizeof(p), "t");
	cr_assert_eq(custode_rm_rf(p), 0);
	cr_assert_not(exists(p));
	cr_assert_eq(count_entries(".", NULL), 0);
}

Test(fsutil, rm_rf_does_not_follow_symlinks)
{
	char p[PATH_MAX], outside[PATH_MAX], link[PATH_MAX], victim[PATH_MAX];

	/* a directory outside the tree, with content */
	at(outside, sizeof(outside), "outside");
	cr_assert_eq(mkdir(outside, 0700), 0);
	put("outside/keep", "precious");
	at(victim, sizeof(victim), "outside/keep");

	at(p, sizeof(p), "tree/sub");
	cr_assert_eq(custode_mkdir_p(p, 0700), 0);
	at(link, sizeof(link), "tree/sub/to-outside");
	cr_assert_eq(symlink(outside, link), 0);
	at(link, sizeof(link), "tree/to-file");
	cr_assert_eq(symlink(victim, link), 0);

	at(p, sizeof(p), "tree");
	cr_assert_eq(custode_rm_rf(p), 0);
	cr_assert_not(exists(p));
	cr_assert(exists(outside));
	cr_assert(exists(victim));
	cr_assert_eq(count_entries("outside", NULL), 1);
}

Test(fsutil, rm_rf_of_a_symlink_removes_only_the_link)
{
	char outside[PATH_MAX], link[PATH_MAX];

	at(outside, sizeof(outside), "outside");
	cr_assert_eq(mkdir(outside, 0700), 0);
	put("outside/keep", "precious");
	at(link, sizeof(link), "link");
	cr_assert_eq(symlink(outside, link), 0);

	cr_assert_eq(custode_rm_rf(link), 0);
	cr_assert_not(exists(link));
	cr_assert(exists(outside));
	cr_assert_eq(count_entries("outside", NULL), 1);
}

Test(fsutil, rm_rf_file_and_missing)
{
	char p[PATH_MAX];

	put("f", "x");
	at(p, sizeof(p), "f");
	cr_assert_eq(custode_rm_rf(p), 0);
	cr_assert_not(exists(p));
	/* already gone: nothing to do */
	cr_assert_eq(custode_rm_rf(p), 0);
	at(p, sizeof(p), "never/was");
	cr_assert_eq(custode_rm_rf(p), 0);
}

Test(fsutil, rm_rf_deep_tree)
{
	char p[PATH_MAX];
	size_t off;

	/* 100 levels: within the depth limit */
	at(p, sizeof(p), "deep");
	off = strlen(p);
	for (int i = 0; i < 100; i++)
		off += (size_t)snprintf(p + off, sizeof(p) - off, "/d");
	cr_assert_eq(custode_mkdir_p(p, 0700), 0);
	at(p, sizeof(p), "deep");
	cr_assert_eq(custode_rm_rf(p), 0);
	cr_assert_not(exists(p));
}
