// SPDX-License-Identifier: Apache-2.0
/*
 * Refusals carry the reason that names their cause (issue 16): an unsafe
 * --policy file is policy.file_unsafe, not policy.invalid; the daemon's
 * flags that name something it cannot use are daemon.usage, not run.usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <criterion/criterion.h>

#include "bundle/source.h"
#include "daemon/bundles.h"
#include "daemon/service_impl.h"
#include "util/reasons.h"

Test(reasons_filed, group_writable_policy_file_is_file_unsafe)
{
	static const char doc[] = "{}\n";
	char path[] = "/tmp/custode-policy-XXXXXX";
	struct custode_resolved_policy r = {0};
	struct custode_refusal why = {0};
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, doc, sizeof(doc) - 1), (ssize_t)sizeof(doc) - 1);
	close(fd);
	cr_assert_eq(chmod(path, 0664), 0);
	cr_expect_lt(custode_source_file(path, &r, &why), 0);
	cr_expect_str_eq(custode_reason_name(why.reason), "policy.file_unsafe", "%s", why.detail);
	cr_expect_not_null(strstr(why.detail, "--policy"), "%s", why.detail);
	unlink(path);
}

Test(reasons_filed, metrics_listen_garbage_is_daemon_usage)
{
	struct custode_refusal why = {0};

	/* the address is parsed before the service is looked at */
	cr_expect_lt(service_http_listen(NULL, "garbage", &why), 0);
	cr_expect_str_eq(custode_reason_name(why.reason), "daemon.usage", "%s", why.detail);
}

Test(reasons_filed, bundles_not_a_directory_is_daemon_usage)
{
	struct custode_bundle_watch *w = NULL;
	struct custode_refusal why = {0};

	cr_expect_lt(custode_bundle_watch_open("/etc/passwd", "/nonexistent", NULL, &w, &why), 0);
	cr_expect_null(w);
	cr_expect_str_eq(custode_reason_name(why.reason), "daemon.usage", "%s", why.detail);
}
