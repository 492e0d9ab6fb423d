// SPDX-License-Identifier: Apache-2.0
/*
 * custode_bundle_verify_file (userspace/bundle/bundle.c): a bundle read from
 * a path. The daemon reads the recorded paths of attached runs' bundles again
 * from its event loop, so the read never waits for anyone (a FIFO put at the
 * path), refuses anything but a regular file, and still follows symbolic
 * links (Kubernetes ConfigMap volumes present every file as one).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <criterion/criterion.h>

#include "bundle/keys.h"
#include "test_bundle_util.h"
#include "vectors/dsse_vectors.h"

#define R(x) CUSTODE_REASON_BUNDLE_##x

static struct custode_trust *k1;
static char *dir;

static void setup(void)
{
	k1 = t_trust(rfc8032_key1_pub, NULL);
	dir = t_tmpdir();
}

static void teardown(void)
{
	custode_trust_free(k1);
	t_rmdir(dir);
}

TestSuite(bundle_file, .init = setup, .fini = teardown);

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	cr_assert_eq(fputs(text, f) >= 0, 1);
	cr_assert_eq(fclose(f), 0);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

Test(bundle_file, regular_file_verifies)
{
	char path[512];
	struct custode_bundle_info info;
	struct custode_refusal why = {0};

	snprintf(path, sizeof(path), "%s/bundle.json", dir);
	put(path, vec_policy_ed25519);
	cr_assert_eq(custode_bundle_verify_file(path, k1, T_NOW, NULL, &info, &why), 0, "%s", why.detail);
	cr_expect_str_eq(info.name, "vectors/ed25519");
}

/*
 * BUG (bundle.c, read_bundle_file): the file was opened with a blocking
 * open. A FIFO put at a recorded bundle path made that open wait for a
 * writer, and the daemon's event loop (which lists runs and verifies their
 * bundles again) with it. Refused at once now, with the reason of an
 * unreadable bundle. (Without the fix this test runs into its timeout.)
 */
Test(bundle_file, fifo_refused_without_waiting, .timeout = 10)
{
	char path[512];
	struct custode_refusal why = {0};
	double t0;

	snprintf(path, sizeof(path), "%s/bundle.json", dir);
	cr_assert_eq(mkfifo(path, 0600), 0);
	t0 = now_s();
	cr_assert_lt(custode_bundle_verify_file(path, k1, T_NOW, NULL, NULL, &why), 0);
	cr_expect_lt(now_s() - t0, 2.0, "returned at once");
	cr_expect_eq(why.reason, R(MALFORMED), "%s", why.detail);
	cr_expect_not_null(strstr(why.detail, "not a regular file"), "%s", why.detail);
	/* and through a symbolic link to it */
	{
		char link[512];

		snprintf(link, sizeof(link), "%s/link.json", dir);
		cr_assert_eq(symlink(path, link), 0);
		memset(&why, 0, sizeof(why));
		cr_assert_lt(custode_bundle_verify_file(link, k1, T_NOW, NULL, NULL, &why), 0);
		cr_expect_eq(why.reason, R(MALFORMED), "%s", why.detail);
	}
}

Test(bundle_file, other_non_regular_files_refused)
{
	struct custode_refusal why = {0};

	cr_assert_lt(custode_bundle_verify_file(dir, k1, T_NOW, NULL, NULL, &why), 0, "a directory");
	cr_expect_eq(why.reason, R(MALFORMED), "%s", why.detail);
	memset(&why, 0, sizeof(why));
	cr_assert_lt(custode_bundle_verify_file("/dev/null", k1, T_NOW, NULL, NULL, &why), 0, "a device");
	cr_expect_eq(why.reason, R(MALFORMED), "%s", why.detail);
	memset(&why, 0, sizeof(why));
	cr_assert_lt(custode_bundle_verify_file("/nonexistent/bundle.json", k1, T_NOW, NULL, NULL, &why), 0);
	cr_expect_eq(why.reason, R(MALFORMED), "%s", why.detail);
}

/*
 * A Kubernetes ConfigMap volume: DIR/NAME -> ..data/NAME, ..data -> the
 * current ..TIMESTAMP directory. Symbolic links stay followed (no
 * O_NOFOLLOW): the bundle verifies through them, and after the volume is
 * updated (..data swapped) the new bundle is what is read.
 */
Test(bundle_file, configmap_symlinks_followed)
{
	char ts1[512], ts2[512], data[512], tmp[512], file[512], path[512];
	struct custode_bundle_info info;
	struct custode_refusal why = {0};

	snprintf(ts1, sizeof(ts1), "%s/..2026_01_01_00_00_00.1", dir);
	snprintf(ts2, sizeof(ts2), "%s/..2026_01_02_00_00_00.2", dir);
	cr_assert_eq(mkdir(ts1, 0755), 0);
	cr_assert_eq(mkdir(ts2, 0755), 0);
	snprintf(file, sizeof(file), "%s/bundle.json", ts1);
	put(file, vec_policy_ed25519);
	snprintf(file, sizeof(file), "%s/bundle.json", ts2);
	put(file, "{\"not\":\"a bundle\"}");
	snprintf(data, sizeof(data), "%s/..data", dir);
	cr_assert_eq(symlink("..2026_01_01_00_00_00.1", data), 0);
	snprintf(path, sizeof(path), "%s/bundle.json", dir);
	cr_assert_eq(symlink("..data/bundle.json", path), 0);

	cr_assert_eq(custode_bundle_verify_file(path, k1, T_NOW, NULL, &info, &why), 0, "%s: %s",
		     custode_reason_name(why.reason), why.detail);
	cr_expect_str_eq(info.name, "vectors/ed25519");

	/* the kubelet's update: a new ..data link renamed over the old one */
	snprintf(tmp, sizeof(tmp), "%s/..data_tmp", dir);
	cr_assert_eq(symlink("..2026_01_02_00_00_00.2", tmp), 0);
	cr_assert_eq(rename(tmp, data), 0);
	memset(&why, 0, sizeof(why));
	cr_assert_lt(custode_bundle_verify_file(path, k1, T_NOW, NULL, NULL, &why), 0, "the new file is read");
	cr_expect_neq(why.reason, 0);
}
