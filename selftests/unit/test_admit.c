// SPDX-License-Identifier: Apache-2.0
/* What may be admitted to a pinned engine (userspace/engine/admit.c): the ABI marker and the file checks. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <criterion/criterion.h>

#include "custode/abi.h"
#include "engine/admit.h"
#include "engine/self.h"

static int parse(const char *text, size_t len, unsigned *abi)
{
	return custode_binary_abi_parse(text, len, abi);
}

#define M CUSTODE_ABI_MARKER

Test(admit_marker, found_with_its_version)
{
	static const char bin[] = "\x7f"
				  "ELF junk\0\0" M "6\nmore junk";
	unsigned abi = 0;

	cr_assert_eq(parse(bin, sizeof(bin) - 1, &abi), 0);
	cr_expect_eq(abi, 6);
}

Test(admit_marker, the_search_pattern_alone_is_not_a_marker)
{
	/* the checking code's own pattern (followed by a NUL) and a marker cut short are skipped */
	static const char pattern_only[] = "abc\0" M "\0xyz";
	static const char cut[] = "abc" M "12";
	static const char no_newline[] = "abc" M "12x\n";
	unsigned abi = 0;

	cr_expect_eq(parse(pattern_only, sizeof(pattern_only) - 1, &abi), -ENOENT);
	cr_expect_eq(parse(cut, sizeof(cut) - 1, &abi), -ENOENT);
	cr_expect_eq(parse(no_newline, sizeof(no_newline) - 1, &abi), -ENOENT);
	cr_expect_eq(parse("", 0, &abi), -ENOENT);
	/* a pattern next to a real marker: the real one counts */
	{
		static const char both[] = "abc\0" M "\0" M "7\n";

		cr_expect_eq(parse(both, sizeof(both) - 1, &abi), 0);
		cr_expect_eq(abi, 7);
	}
}

Test(admit_marker, markers_that_disagree_are_refused)
{
	static const char two[] = M "6\n..." M "7\n";
	static const char same[] = M "6\n..." M "6\n";
	static const char huge[] = M "12345678901\n"; /* more than 9 digits: not a version */
	unsigned abi = 0;

	cr_expect_eq(parse(two, sizeof(two) - 1, &abi), -EINVAL);
	cr_expect_eq(parse(same, sizeof(same) - 1, &abi), 0);
	cr_expect_eq(abi, 6);
	cr_expect_eq(parse(huge, sizeof(huge) - 1, &abi), -ENOENT);
}

Test(admit_marker, this_binary_carries_its_own)
{
	unsigned abi = 0;

	cr_assert_eq(parse(custode_abi_marker, strlen(custode_abi_marker), &abi), 0);
	cr_expect_eq(abi, CUSTODE_ABI_VERSION);
}

/* A file with these contents and this mode, owned by the caller; an fd open for reading. */
static int file_with(const char *dir, const char *name, const void *data, size_t len, mode_t mode)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	if (len)
		cr_assert_eq(write(fd, data, len), (ssize_t)len);
	cr_assert_eq(fchmod(fd, mode), 0);
	return fd;
}

Test(admit_check, refusals_name_their_cause)
{
	char dir[] = "/tmp/custode-admit-XXXXXX", marker[64];
	struct custode_refusal why = {0};
	unsigned abi = 0;
	int fd;

	if (geteuid() != 0)
		cr_skip_test("the checks want root-owned files; run as root");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(marker, sizeof(marker), "junk%s%u\njunk", CUSTODE_ABI_MARKER, (unsigned)CUSTODE_ABI_VERSION);

	fd = file_with(dir, "good", marker, strlen(marker), 0755);
	cr_expect_eq(custode_admit_check(fd, CUSTODE_ABI_VERSION, &abi, &why), 0, "%s", why.detail);
	cr_expect_eq(abi, CUSTODE_ABI_VERSION);
	/* another ABI: its own reason */
	cr_expect_lt(custode_admit_check(fd, CUSTODE_ABI_VERSION + 1, &abi, &why), 0);
	cr_expect_eq(why.reason, CUSTODE_REASON_ENGINE_ABI_DIFFERS);
	close(fd);

	fd = file_with(dir, "groupw", marker, strlen(marker), 0775);
	cr_expect_lt(custode_admit_check(fd, CUSTODE_ABI_VERSION, &abi, &why), 0);
	cr_expect_eq(why.reason, CUSTODE_REASON_ENGINE_ADMIT_REFUSED);
	cr_expect(strstr(why.detail, "writable") != NULL, "%s", why.detail);
	close(fd);

	fd = file_with(dir, "otherw", marker, strlen(marker), 0757);
	cr_expect_lt(custode_admit_check(fd, CUSTODE_ABI_VERSION, &abi, &why), 0);
	cr_expect_eq(why.reason, CUSTODE_REASON_ENGINE_ADMIT_REFUSED);
	close(fd);

	fd = file_with(dir, "notours", marker, strlen(marker), 0755);
	cr_assert_eq(fchown(fd, 65534, 65534), 0);
	cr_expect_lt(custode_admit_check(fd, CUSTODE_ABI_VERSION, &abi, &why), 0);
	cr_expect(strstr(why.detail, "owned by root") != NULL, "%s", why.detail);
	close(fd);

	fd = file_with(dir, "plain", "#!/bin/sh\nexit 0\n", 17, 0755);
	cr_expect_lt(custode_admit_check(fd, CUSTODE_ABI_VERSION, &abi, &why), 0);
	cr_expect_eq(why.reason, CUSTODE_REASON_ENGINE_ADMIT_REFUSED);
	cr_expect(strstr(why.detail, "not a custode binary") != NULL, "%s", why.detail);
	close(fd);

	fd = file_with(dir, "empty", "", 0, 0755);
	cr_expect_lt(custode_admit_check(fd, CUSTODE_ABI_VERSION, &abi, &why), 0);
	close(fd);

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_expect_lt(custode_admit_check(fd, CUSTODE_ABI_VERSION, &abi, &why), 0);
	cr_expect(strstr(why.detail, "not a regular file") != NULL, "%s", why.detail);
	close(fd);

	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", dir);
		cr_expect_eq(system(cmd), 0);
	}
}
