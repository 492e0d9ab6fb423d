// SPDX-License-Identifier: Apache-2.0
/* Built-in profiles: each parses and compiles; the `read` profile grants what it says. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <criterion/criterion.h>

#include "custode/abi.h"
#include "policy/compile.h"
#include "policy/policy.h"
#include "policy/profiles.h"

#define R CUSTODE_ACCESS_READ
#define W CUSTODE_ACCESS_WRITE
#define C CUSTODE_ACCESS_CREATE
#define D CUSTODE_ACCESS_DELETE
#define X CUSTODE_ACCESS_EXEC

static const struct custode_bindings binds = {.workspace = "/home/u/ws", .tmp = "/tmp/custode-x"};

static size_t n_profiles(void)
{
	size_t n = 0;

	while (custode_builtin_profiles[n].name)
		n++;
	return n;
}

Test(profiles, table_is_terminated_and_not_empty)
{
	size_t n = n_profiles();

	cr_assert_geq(n, 1);
	cr_assert_null(custode_builtin_profiles[n].text);
	cr_assert_eq(custode_builtin_profiles[n].len, 0);
}

Test(profiles, names_are_unique)
{
	size_t n = n_profiles();

	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			cr_assert(strcmp(custode_builtin_profiles[i].name, custode_builtin_profiles[j].name) != 0);
}

Test(profiles, text_is_the_whole_nul_terminated_file)
{
	for (size_t i = 0; i < n_profiles(); i++) {
		const struct custode_builtin_profile *p = &custode_builtin_profiles[i];

		cr_assert_not_null(p->text, "%s", p->name);
		cr_assert_gt(p->len, 0, "%s", p->name);
		cr_assert_eq(strlen(p->text), p->len, "%s: embedded NUL or wrong length", p->name);
		cr_assert_eq(p->text[0], '{', "%s", p->name);
	}
}

Test(profiles, every_profile_parses_and_compiles)
{
	for (size_t i = 0; i < n_profiles(); i++) {
		const struct custode_builtin_profile *bp = &custode_builtin_profiles[i];
		struct custode_policy *p = NULL;
		struct custode_refusal why = {0};
		struct custode_fs_ruleset rs = {0};
		char want_name[160];
		int err;

		err = custode_policy_parse(bp->text, bp->len, &p, &why);
		cr_assert_eq(err, 0, "profile %s: %s", bp->name, why.detail);
		/* the document calls itself builtin/<file name> */
		snprintf(want_name, sizeof(want_name), "builtin/%s", bp->name);
		cr_assert_str_eq(p->name, want_name);
		/* built-ins need no signature, hence no expiry */
		cr_assert_not(p->has_validity, "profile %s", bp->name);
		err = custode_policy_compile_fs(p, &binds, 1, &rs, &why);
		cr_assert_eq(err, 0, "profile %s: %s", bp->name, why.detail);
		if (p->has_filesystem)
			cr_assert_gt(rs.n, 0, "profile %s", bp->name);
		custode_fs_ruleset_free(&rs);
		custode_policy_free(p);
	}
}

Test(profiles, find)
{
	const struct custode_builtin_profile *p = custode_profile_find("read");

	cr_assert_not_null(p);
	cr_assert_str_eq(p->name, "read");
	cr_assert_null(custode_profile_find("nope"));
	cr_assert_null(custode_profile_find(""));
	cr_assert_null(custode_profile_find("rea"));
	cr_assert_null(custode_profile_find("read.json"));
	cr_assert_null(custode_profile_find("builtin/read"));
	for (size_t i = 0; i < n_profiles(); i++)
		cr_assert_eq(custode_profile_find(custode_builtin_profiles[i].name), &custode_builtin_profiles[i]);
}

/* ---- the read profile ---- */

static struct custode_policy *read_policy;
static struct custode_fs_ruleset read_rules;

static void read_setup(void)
{
	const struct custode_builtin_profile *bp = custode_profile_find("read");
	struct custode_refusal why = {0};

	cr_assert_not_null(bp);
	cr_assert_eq(custode_policy_parse(bp->text, bp->len, &read_policy, &why), 0, "%s", why.detail);
	cr_assert_eq(custode_policy_compile_fs(read_policy, &binds, 1, &read_rules, &why), 0, "%s", why.detail);
}

static void read_teardown(void)
{
	custode_fs_ruleset_free(&read_rules);
	custode_policy_free(read_policy);
}

static void expect(const char *path, uint32_t want)
{
	uint32_t got = custode_fs_lookup(&read_rules, path);
	char g[64], w[64];

	cr_assert_eq(got, want, "%s: got [%s], want [%s]", path, custode_access_format(got, g, sizeof(g)),
		     custode_access_format(want, w, sizeof(w)));
}

TestSuite(read_profile, .init = read_setup, .fini = read_teardown);

Test(read_profile, is_enforcing_and_governs_files)
{
	cr_assert_not(read_policy->audit);
	cr_assert(custode_policy_classes(read_policy) & CUSTODE_CLASS_FILE);
	cr_assert(custode_policy_classes(read_policy) & CUSTODE_CLASS_PROCESS, "ptrace and signals contained");
}

Test(read_profile, grants_no_network)
{
	/* a network section, if present, is a deny-all: no egress, no private ranges */
	if (read_policy->has_network) {
		cr_assert_eq(read_policy->n_egress, 0);
		cr_assert_eq(read_policy->n_private, 0);
	}
}

Test(read_profile, system_binaries_read_and_exec)
{
	expect("/usr/bin/cat", R | X);
	expect("/usr/lib/x86_64-linux-gnu/libc.so.6", R | X);
	expect("/bin/sh", R | X);
	expect("/lib64/ld-linux-x86-64.so.2", R | X);
	expect("/usr", R | X);
}

Test(read_profile, etc_read_only)
{
	expect("/etc/passwd", R);
	expect("/etc/hosts", R);
	expect("/etc/ssl/certs/ca-certificates.crt", R);
}

Test(read_profile, secrets_in_etc_denied)
{
	expect("/etc/shadow", 0);
	expect("/etc/shadow-", 0);
	expect("/etc/gshadow", 0);
	expect("/etc/gshadow-", 0);
	expect("/etc/ssh/ssh_host_ed25519_key", 0);
	expect("/etc/ssh", 0);
	expect("/etc/sudoers", 0);
	expect("/etc/sudoers.d/90-cloud-init-users", 0);
	expect("/etc/ssl/private/server.key", 0);
	expect("/etc/krb5.keytab", 0);
	expect("/etc/wireguard/wg0.conf", 0);
	expect("/etc/NetworkManager/system-connections/home.nmconnection", 0);
}

Test(read_profile, workspace_read_only)
{
	expect("/home/u/ws", R);
	expect("/home/u/ws/f", R);
	expect("/home/u/ws/.git/hooks/pre-commit", R);
	/* a sibling of the workspace is not the workspace */
	expect("/home/u/wsx/f", 0);
}

Test(read_profile, run_tmp_read_write_create_delete)
{
	expect("/tmp/custode-x", R | W | C | D);
	expect("/tmp/custode-x/a", R | W | C | D);
	expect("/tmp/custode-x/a/b/c", R | W | C | D);
	/* the rest of /tmp, and other runs' tmp directories, are not granted */
	expect("/tmp/other", 0);
	expect("/tmp/custode-xy/a", 0);
}

Test(read_profile, home_and_host_secrets_denied)
{
	expect("/root/.bash_history", 0);
	expect("/home/u/.ssh/id_ed25519", 0);
	expect("/home/u/.bashrc", 0);
	expect("/var/run/docker.sock", 0);
	expect("/run/docker.sock", 0);
	/*
	 * /proc is readable by rule, and the engine narrows per-process entries
	 * to the run's own processes (proc_foreign in bpf/file.bpf.c, tested in
	 * the guest): the path model alone grants read here.
	 */
	expect("/proc/1/environ", R);
	expect("/sys/kernel/security/lsm", 0);
	expect("/", 0);
}

Test(read_profile, devices)
{
	expect("/dev/null", R | W);
	expect("/dev/zero", R | W);
	expect("/dev/urandom", R);
	expect("/dev/tty", R | W);
	expect("/dev/sda", 0);
	expect("/dev/mem", 0);
	expect("/dev/nullx", 0);
}
