// SPDX-License-Identifier: Apache-2.0
/* The run's environment: the policy's allowlist or the default set, and what custode sets itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "policy/policy.h"
#include "run/env.h"

static char *launcher_env[] = {
	"PATH=/usr/sbin:/usr/bin", "HOME=/root", "SSH_AUTH_SOCK=/tmp/agent.sock", "AWS_SECRET_ACCESS_KEY=hunter2",
	"LANG=C.UTF-8", "LC_TIME=en_GB.UTF-8", "TERM=xterm", "LD_PRELOAD=/evil.so", "SUDO_USER=alice", "TMPDIR=/var/tmp",
	"USER=root", "TZ=UTC", "FOO=bar", "FOO=second", "NOEQUALS", "=empty", NULL,
};

static struct custode_policy *policy(const char *content)
{
	char doc[1024];
	struct custode_policy *p = NULL;
	struct custode_refusal why;

	snprintf(doc, sizeof(doc), "{\"schema\":\"custode.policy/v1\",\"name\":\"t\",\"version\":1,\"content\":%s}", content);
	cr_assert_eq(custode_policy_parse(doc, strlen(doc), &p, &why), 0, "%s", why.detail);
	return p;
}

Test(run_env, default_set_drops_secrets)
{
	struct custode_policy *p = policy("{}");
	struct custode_run_env e;

	cr_assert_eq(custode_run_env_build(launcher_env, p, "nobody", "/tmp/custode-1", &e), 0);
	cr_expect_str_eq(custode_run_env_get(&e, "PATH"), "/usr/sbin:/usr/bin");
	cr_expect_str_eq(custode_run_env_get(&e, "LANG"), "C.UTF-8");
	cr_expect_str_eq(custode_run_env_get(&e, "LC_TIME"), "en_GB.UTF-8");
	cr_expect_str_eq(custode_run_env_get(&e, "TERM"), "xterm");
	cr_expect_str_eq(custode_run_env_get(&e, "TZ"), "UTC");
	cr_expect_str_eq(custode_run_env_get(&e, "TMPDIR"), "/tmp/custode-1", "TMPDIR is the run's, never the caller's");
	cr_expect_str_eq(custode_run_env_get(&e, "HOME"), "/tmp/custode-1", "no host HOME");
	cr_expect_str_eq(custode_run_env_get(&e, "USER"), "nobody");
	cr_expect_str_eq(custode_run_env_get(&e, "LOGNAME"), "nobody");
	cr_expect_null(custode_run_env_get(&e, "SSH_AUTH_SOCK"));
	cr_expect_null(custode_run_env_get(&e, "AWS_SECRET_ACCESS_KEY"));
	cr_expect_null(custode_run_env_get(&e, "LD_PRELOAD"));
	cr_expect_null(custode_run_env_get(&e, "SUDO_USER"));
	cr_expect_null(custode_run_env_get(&e, "FOO"));
	cr_expect_eq(e.n, 9, "exactly PATH LANG LC_TIME TERM TZ + TMPDIR HOME USER LOGNAME, nothing else (got %zu)", e.n);
	custode_run_env_free(&e);
	custode_policy_free(p);
}

Test(run_env, policy_allowlist_only)
{
	struct custode_policy *p = policy("{\"env\":[\"FOO\",\"HOME\",\"TMPDIR\",\"MISSING\"]}");
	struct custode_run_env e;

	cr_assert_eq(custode_run_env_build(launcher_env, p, "alice", "/tmp/custode-2", &e), 0);
	cr_expect_str_eq(custode_run_env_get(&e, "FOO"), "bar", "first occurrence wins");
	cr_expect_str_eq(custode_run_env_get(&e, "HOME"), "/root", "HOME listed: the caller's");
	cr_expect_str_eq(custode_run_env_get(&e, "TMPDIR"), "/tmp/custode-2", "TMPDIR stays custode's");
	cr_expect_str_eq(custode_run_env_get(&e, "PATH"), "/usr/local/bin:/usr/bin:/bin", "PATH not listed: a default");
	cr_expect_null(custode_run_env_get(&e, "LANG"), "not listed");
	cr_expect_null(custode_run_env_get(&e, "MISSING"));
	cr_expect_eq(e.n_kept, 2);
	cr_expect_str_eq(e.kept[0], "HOME");
	cr_expect_str_eq(e.kept[1], "FOO");
	custode_run_env_free(&e);
	custode_policy_free(p);
}

Test(run_env, empty_launcher_environment)
{
	struct custode_policy *p = policy("{}");
	struct custode_run_env e;
	char *none[] = {NULL};

	cr_assert_eq(custode_run_env_build(none, p, "nobody", "/tmp/x", &e), 0);
	cr_expect_eq(e.n, 5);
	cr_expect_null(e.envp[5]);
	custode_run_env_free(&e);
	custode_policy_free(p);
}
