// SPDX-License-Identifier: Apache-2.0
/* `custode attach --unit`: the unit name, systemctl's answer, the cgroup path (attach/unit.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <criterion/criterion.h>

#include "attach/unit.h"
#include "util/reasons.h"

static const char *reason(const struct custode_refusal *why)
{
	return custode_reason_name(why->reason);
}

Test(attach_unit, name_gets_service_suffix_when_untyped)
{
	struct custode_refusal why = {0};
	char out[CUSTODE_UNIT_NAME_MAX + 1];

	cr_assert_eq(custode_unit_name("nginx", out, sizeof(out), &why), 0, "%s", why.detail);
	cr_expect_str_eq(out, "nginx.service");
	cr_assert_eq(custode_unit_name("foo.service", out, sizeof(out), &why), 0);
	cr_expect_str_eq(out, "foo.service");
	cr_assert_eq(custode_unit_name("getty@tty1.service", out, sizeof(out), &why), 0);
	cr_expect_str_eq(out, "getty@tty1.service");
	cr_assert_eq(custode_unit_name("session-3.scope", out, sizeof(out), &why), 0);
	cr_expect_str_eq(out, "session-3.scope");
	/* a dot that is not a type: still a service */
	cr_assert_eq(custode_unit_name("my.app", out, sizeof(out), &why), 0);
	cr_expect_str_eq(out, "my.app.service");
	cr_assert_eq(custode_unit_name("sys-devices-x\\x2dy.device", out, sizeof(out), &why), 0);
}

Test(attach_unit, name_refusals_are_usage)
{
	static const char *const bad[] = {"", "-p", "--all", ".service", "foo bar", "foo*", "a/b.service",
					  "x;reboot", "ng?nx", "\xc3\xa9.service"};
	char out[CUSTODE_UNIT_NAME_MAX + 1], lng[CUSTODE_UNIT_NAME_MAX + 2];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct custode_refusal why = {0};

		strcpy(out, "untouched");
		cr_expect_lt(custode_unit_name(bad[i], out, sizeof(out), &why), 0, "'%s' accepted", bad[i]);
		cr_expect_str_eq(reason(&why), "run.usage", "'%s': %s", bad[i], why.detail);
		cr_expect_str_eq(out, "untouched", "out-param written for '%s'", bad[i]);
	}
	/* systemd's limit counts the suffix that is added */
	memset(lng, 'a', sizeof(lng) - 1);
	lng[CUSTODE_UNIT_NAME_MAX - strlen(".service")] = 0;
	{
		struct custode_refusal why = {0};

		cr_expect_eq(custode_unit_name(lng, out, sizeof(out), &why), 0, "%s", why.detail);
		cr_expect_eq(strlen(out), CUSTODE_UNIT_NAME_MAX);
		lng[CUSTODE_UNIT_NAME_MAX - strlen(".service")] = 'a';
		lng[CUSTODE_UNIT_NAME_MAX - strlen(".service") + 1] = 0;
		cr_expect_lt(custode_unit_name(lng, out, sizeof(out), &why), 0);
		cr_expect_str_eq(reason(&why), "run.usage");
	}
}

Test(attach_unit, props_parse_systemctl_show)
{
	struct custode_unit_props p;
	struct custode_refusal why = {0};

	cr_assert_eq(custode_unit_props_parse("LoadState=loaded\nActiveState=activating\n"
					      "ControlGroup=/system.slice/custode-victim.service\n",
					      &p, &why),
		     0, "%s", why.detail);
	cr_expect_str_eq(p.load_state, "loaded");
	cr_expect_str_eq(p.active_state, "activating");
	cr_expect_str_eq(p.control_group, "/system.slice/custode-victim.service");
	/* any order, other keys ignored, no final newline; an inactive unit's empty ControlGroup */
	cr_assert_eq(custode_unit_props_parse("ControlGroup=\nId=x.service\nActiveState=inactive\nLoadState=loaded", &p,
					      &why),
		     0, "%s", why.detail);
	cr_expect_str_eq(p.control_group, "");
	cr_expect_str_eq(p.active_state, "inactive");
	/* a key prefix is not the key */
	cr_expect_lt(custode_unit_props_parse("LoadStateX=loaded\nActiveState=active\nControlGroup=/a\n", &p, &why), 0);
	cr_expect_str_eq(reason(&why), "run.setup_failed");
	cr_expect_lt(custode_unit_props_parse("", &p, &why), 0);
	cr_expect_not_null(strstr(why.detail, "LoadState"), "%s", why.detail);
}

Test(attach_unit, props_parse_refuses_overlong_values)
{
	struct custode_unit_props p;
	struct custode_refusal why = {0};
	size_t n = sizeof(p.control_group) + 64;
	char *text = malloc(n + 64);

	cr_assert_not_null(text);
	strcpy(text, "LoadState=loaded\nActiveState=active\nControlGroup=/");
	memset(text + strlen(text), 'a', sizeof(p.control_group));
	strcpy(text + strlen("LoadState=loaded\nActiveState=active\nControlGroup=/") + sizeof(p.control_group), "\n");
	cr_expect_lt(custode_unit_props_parse(text, &p, &why), 0);
	cr_expect_not_null(strstr(why.detail, "ControlGroup"), "%s", why.detail);
	free(text);
}

static struct custode_unit_props props(const char *load, const char *active, const char *cg)
{
	struct custode_unit_props p = {0};

	snprintf(p.load_state, sizeof(p.load_state), "%s", load);
	snprintf(p.active_state, sizeof(p.active_state), "%s", active);
	snprintf(p.control_group, sizeof(p.control_group), "%s", cg);
	return p;
}

Test(attach_unit, cgroup_path_below_the_mount)
{
	struct custode_unit_props p = props("loaded", "active", "/system.slice/foo.service");
	struct custode_refusal why = {0};
	char out[4096];

	cr_assert_eq(custode_unit_cgroup_path("/sys/fs/cgroup", "foo.service", &p, out, sizeof(out), &why), 0, "%s",
		     why.detail);
	cr_expect_str_eq(out, "/sys/fs/cgroup/system.slice/foo.service");
	/* a hybrid host's v2 mount */
	cr_assert_eq(custode_unit_cgroup_path("/sys/fs/cgroup/unified", "foo.service", &p, out, sizeof(out), &why), 0);
	cr_expect_str_eq(out, "/sys/fs/cgroup/unified/system.slice/foo.service");
	/* ExecStartPre runs while the unit is activating: its cgroup exists already */
	p = props("loaded", "activating", "/system.slice/foo.service");
	cr_expect_eq(custode_unit_cgroup_path("/sys/fs/cgroup", "foo.service", &p, out, sizeof(out), &why), 0);
}

Test(attach_unit, cgroup_path_refusals)
{
	static const struct {
		const char *load, *active, *cg, *reason;
	} cases[] = {
		{"not-found", "inactive", "", "unit.unknown"},
		{"loaded", "inactive", "", "unit.no_cgroup"},
		{"loaded", "failed", "", "unit.no_cgroup"},
		{"masked", "inactive", "", "unit.no_cgroup"},
		{"loaded", "active", "/", "attach.cgroup"},
		{"loaded", "active", "system.slice/foo.service", "attach.cgroup"},
		{"loaded", "active", "/system.slice/../../etc", "attach.cgroup"},
		{"loaded", "active", "/system.slice/..", "attach.cgroup"},
		{"loaded", "active", "/./system.slice", "attach.cgroup"},
		{"loaded", "active", "/system.slice//foo.service", "attach.cgroup"},
		{"loaded", "active", "/system.slice/", "attach.cgroup"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct custode_unit_props p = props(cases[i].load, cases[i].active, cases[i].cg);
		struct custode_refusal why = {0};
		char out[4096] = "untouched";

		cr_expect_lt(custode_unit_cgroup_path("/sys/fs/cgroup", "foo.service", &p, out, sizeof(out), &why), 0,
			     "'%s' accepted", cases[i].cg);
		cr_expect_str_eq(reason(&why), cases[i].reason, "'%s': %s", cases[i].cg, why.detail);
		cr_expect_str_eq(out, "untouched");
	}
	/* hidden names with dots are names, not . or .. */
	{
		struct custode_unit_props p = props("loaded", "active", "/system.slice/.hidden/..x/...");
		struct custode_refusal why = {0};
		char out[4096], small[24];

		cr_expect_eq(custode_unit_cgroup_path("/sys/fs/cgroup", "foo.service", &p, out, sizeof(out), &why), 0,
			     "%s", why.detail);
		/* too long for out: refused, not truncated */
		cr_expect_lt(custode_unit_cgroup_path("/sys/fs/cgroup", "foo.service", &p, small, sizeof(small), &why), 0);
		cr_expect_str_eq(reason(&why), "attach.cgroup");
	}
}

Test(attach_unit, systemd_host_from_proc1_and_run_systemd)
{
	char root[] = "/tmp/custode-unit-XXXXXX", path[256];
	struct custode_refusal why = {0};
	FILE *f;

	cr_assert_not_null(mkdtemp(root));
	snprintf(path, sizeof(path), "%s/proc", root), mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/proc/1", root), mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/proc/1/comm", root);
	cr_assert_not_null(f = fopen(path, "w"));
	fputs("init\n", f);
	fclose(f);
	cr_expect_lt(custode_unit_systemd_host(root, &why), 0);
	cr_expect_str_eq(reason(&why), "unit.no_systemd");
	cr_expect_not_null(strstr(why.detail, "'init'"), "%s", why.detail);

	cr_assert_not_null(f = fopen(path, "w"));
	fputs("systemd\n", f);
	fclose(f);
	cr_expect_lt(custode_unit_systemd_host(root, &why), 0);
	cr_expect_str_eq(reason(&why), "unit.no_systemd");
	cr_expect_not_null(strstr(why.detail, "/run/systemd/system"), "%s", why.detail);

	snprintf(path, sizeof(path), "%s/run", root), mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/run/systemd", root), mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/run/systemd/system", root), mkdir(path, 0755);
	cr_expect_eq(custode_unit_systemd_host(root, &why), 0, "%s", why.detail);

	/* no /proc/1/comm at all */
	snprintf(path, sizeof(path), "%s/proc/1/comm", root), unlink(path);
	cr_expect_lt(custode_unit_systemd_host(root, &why), 0);
	cr_expect_str_eq(reason(&why), "unit.no_systemd");
	snprintf(path, sizeof(path), "rm -rf '%s'", root);
	cr_expect_eq(system(path), 0);
}
