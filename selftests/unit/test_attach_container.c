// SPDX-License-Identifier: Apache-2.0
/* `custode attach --container`: the argument, the runtimes' cgroup names, podman's list, the pick (attach/container.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <criterion/criterion.h>

#include "attach/container.h"
#include "util/reasons.h"

#define ID_A "4f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"
#define ID_B "4f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f1"
#define ID_C "c0ffee00000000000000000000000000000000000000000000000000000000aa"

static const char *reason(const struct custode_refusal *why)
{
	return custode_reason_name(why->reason);
}

Test(attach_container, arg_names_and_ids)
{
	static const char *const good[] = {"web", "a", "my_app.v2-1", "Web01", ID_A, "4f1e", "0"};
	static const char *const bad[] = {"", "-rm", ".x", "_x", "a/b", "a b", "x;reboot", "web*", "\xc3\xa9t\xc3\xa9"};
	char lng[CUSTODE_CONTAINER_NAME_MAX + 2];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct custode_refusal why = {0};
		bool hex = false;

		cr_expect_eq(custode_container_arg(good[i], &hex, &why), 0, "'%s': %s", good[i], why.detail);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct custode_refusal why = {0};

		cr_expect_lt(custode_container_arg(bad[i], NULL, &why), 0, "'%s' accepted", bad[i]);
		cr_expect_str_eq(reason(&why), "run.usage", "'%s': %s", bad[i], why.detail);
	}
	memset(lng, 'a', sizeof(lng) - 1);
	lng[sizeof(lng) - 1] = 0;
	{
		struct custode_refusal why = {0};

		cr_expect_lt(custode_container_arg(lng, NULL, &why), 0);
		cr_expect_str_eq(reason(&why), "run.usage");
		lng[CUSTODE_CONTAINER_NAME_MAX] = 0;
		cr_expect_eq(custode_container_arg(lng, NULL, &why), 0, "%s", why.detail);
	}
}

Test(attach_container, arg_hex_is_an_id_prefix)
{
	bool hex = true;

	cr_assert_eq(custode_container_arg("web", &hex, NULL), 0);
	cr_expect_not(hex);
	cr_assert_eq(custode_container_arg("4f1e", &hex, NULL), 0);
	cr_expect(hex);
	cr_assert_eq(custode_container_arg(ID_A, &hex, NULL), 0);
	cr_expect(hex);
	/* ids are lowercase; 65 hex digits are no id */
	cr_assert_eq(custode_container_arg("4F1E", &hex, NULL), 0);
	cr_expect_not(hex);
	cr_assert_eq(custode_container_arg(ID_A "0", &hex, NULL), 0);
	cr_expect_not(hex);
}

Test(attach_container, scope_names_of_the_runtimes)
{
	char id[CUSTODE_CONTAINER_ID_LEN + 1] = "";

	cr_expect_str_eq(custode_container_scope_id("libpod-" ID_A ".scope", id), "podman");
	cr_expect_str_eq(id, ID_A);
	cr_expect_str_eq(custode_container_scope_id("libpod-" ID_B, id), "podman"); /* cgroupfs manager */
	cr_expect_str_eq(id, ID_B);
	cr_expect_str_eq(custode_container_scope_id("cri-containerd-" ID_C ".scope", id), "containerd");
	cr_expect_str_eq(id, ID_C);
	cr_expect_str_eq(custode_container_scope_id("crio-" ID_A ".scope", NULL), "cri-o");
	cr_expect_str_eq(custode_container_scope_id("docker-" ID_A ".scope", NULL), "docker");
}

Test(attach_container, scope_names_that_are_not_containers)
{
	static const char *const no[] = {
		"libpod-conmon-" ID_A ".scope", /* podman's monitor */
		"crio-conmon-" ID_A ".scope",	/* CRI-O's monitor */
		"libpod-" ID_A ".slice",
		"libpod-" ID_A ".scope.bak",
		"libpod-4f1e2d3c.scope", /* short id */
		"libpod-" ID_A "0.scope",
		"libpod-4F1E2D3C4B5A69788796A5B4C3D2E1F00F1E2D3C4B5A69788796A5B4C3D2E1F0.scope",
		"docker-" ID_A,
		"podman-" ID_A ".scope",
		"libpod-" ID_A "/..",
		"system.slice",
		"",
	};
	char id[CUSTODE_CONTAINER_ID_LEN + 1] = "untouched";

	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		cr_expect_null(custode_container_scope_id(no[i], id), "'%s' taken", no[i]);
	cr_expect_str_eq(id, "untouched");
}

static const char ps_json[] = "[\n"
			      " {\"AutoRemove\": false, \"Id\": \"" ID_A "\", \"Names\": [\"web\"], \"State\": \"running\", "
			      "\"Pid\": 4242, \"Image\": \"localhost/busybox:latest\"},\n"
			      " {\"Id\": \"" ID_B "\", \"Names\": [\"db\"], \"State\": \"exited\", \"Pid\": 0},\n"
			      " {\"Id\": \"" ID_C "\", \"Names\": [\"4f1e\"], \"State\": \"running\", \"Pid\": 77}\n"
			      "]\n";

Test(attach_container, podman_ps_json)
{
	struct custode_container *l = NULL;
	struct custode_refusal why = {0};
	size_t n = 0;

	cr_assert_eq(custode_container_list_parse(ps_json, &l, &n, &why), 0, "%s", why.detail);
	cr_assert_eq(n, 3);
	cr_expect_str_eq(l[0].id, ID_A);
	cr_expect_str_eq(l[0].name, "web");
	cr_expect_str_eq(l[0].state, "running");
	cr_expect_eq(l[0].pid, 4242);
	cr_expect_str_eq(l[1].state, "exited");
	cr_expect_eq(l[1].pid, 0);
	free(l);
	/* no containers: podman prints [] */
	cr_assert_eq(custode_container_list_parse("[]\n", &l, &n, &why), 0, "%s", why.detail);
	cr_expect_eq(n, 0);
	free(l);
}

Test(attach_container, podman_ps_json_refusals)
{
	static const char *const bad[] = {
		"",
		"null",
		"{\"Id\": \"" ID_A "\"}",
		"[{\"Names\": [\"x\"]}]",
		"[{\"Id\": \"4f1e\"}]",
		"[{\"Id\": \"" ID_A "\", \"Pid\": \"12\"}]",
		"[{\"Id\": \"" ID_A "\"}, {\"Id\": \"../../etc\"}]",
		"Error: no such command",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct custode_container *l = (void *)1;
		struct custode_refusal why = {0};
		size_t n = 99;

		cr_expect_lt(custode_container_list_parse(bad[i], &l, &n, &why), 0, "'%s' accepted", bad[i]);
		cr_expect_str_eq(reason(&why), "run.setup_failed", "'%s': %s", bad[i], why.detail);
		cr_expect_eq(n, 99, "'%s': n written", bad[i]);
	}
}

Test(attach_container, pick_by_id_name_prefix)
{
	struct custode_container *l = NULL;
	struct custode_refusal why = {0};
	size_t n = 0, i = 99;

	cr_assert_eq(custode_container_list_parse(ps_json, &l, &n, &why), 0, "%s", why.detail);
	cr_expect_eq(custode_container_pick(l, n, ID_B, &i, &why), 0, "%s", why.detail);
	cr_expect_eq(i, 1);
	cr_expect_eq(custode_container_pick(l, n, "web", &i, &why), 0, "%s", why.detail);
	cr_expect_eq(i, 0);
	cr_expect_eq(custode_container_pick(l, n, "c0ffee", &i, &why), 0, "%s", why.detail);
	cr_expect_eq(i, 2);
	/* a name wins over an id prefix (podman's order): "4f1e" is C's name and A's and B's prefix */
	cr_expect_eq(custode_container_pick(l, n, "4f1e", &i, &why), 0, "%s", why.detail);
	cr_expect_eq(i, 2);
	/* a full id wins over all */
	cr_expect_eq(custode_container_pick(l, n, ID_A, &i, &why), 0, "%s", why.detail);
	cr_expect_eq(i, 0);
	/* the prefix differs only in the last digit */
	cr_expect_eq(custode_container_pick(l, n, ID_A, &i, &why), 0);
	i = 99;
	cr_expect_lt(custode_container_pick(l, n, "4f1e2d", &i, &why), 0);
	cr_expect_str_eq(reason(&why), "container.ambiguous", "%s", why.detail);
	cr_expect_eq(i, 99);
	cr_expect_lt(custode_container_pick(l, n, "nosuch", &i, &why), 0);
	cr_expect_str_eq(reason(&why), "container.unknown", "%s", why.detail);
	cr_expect_lt(custode_container_pick(l, n, "Web", &i, &why), 0, "names are case-sensitive");
	cr_expect_str_eq(reason(&why), "container.unknown");
	cr_expect_lt(custode_container_pick(l, 0, "web", &i, &why), 0);
	cr_expect_str_eq(reason(&why), "container.unknown");
	free(l);
}

Test(attach_container, cgroup_of_the_process)
{
	struct custode_refusal why = {0};
	char out[4096];

	cr_assert_eq(custode_container_cgroup_of("/sys/fs/cgroup/machine.slice/libpod-" ID_A ".scope", ID_A, out,
						 sizeof(out), &why),
		     0, "%s", why.detail);
	cr_expect_str_eq(out, "/sys/fs/cgroup/machine.slice/libpod-" ID_A ".scope");
	/* a process in a child of its scope (podman --systemd, crun's init sub-cgroup): the scope */
	cr_assert_eq(custode_container_cgroup_of("/sys/fs/cgroup/machine.slice/libpod-" ID_A ".scope/container/x", ID_A,
						 out, sizeof(out), &why),
		     0, "%s", why.detail);
	cr_expect_str_eq(out, "/sys/fs/cgroup/machine.slice/libpod-" ID_A ".scope");
	cr_assert_eq(custode_container_cgroup_of("/sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice/"
						 "kubepods-besteffort-pod1.slice/cri-containerd-" ID_C ".scope",
						 ID_C, out, sizeof(out), &why),
		     0, "%s", why.detail);
	cr_expect_str_eq(out, "/sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/"
			      "cri-containerd-" ID_C ".scope");
}

Test(attach_container, cgroup_of_the_process_refusals)
{
	static const char *const bad[] = {
		"/sys/fs/cgroup/machine.slice/libpod-conmon-" ID_A ".scope", /* --cgroups=disabled: conmon's */
		"/sys/fs/cgroup/machine.slice/libpod-" ID_B ".scope",	     /* another container's */
		"/sys/fs/cgroup/system.slice/custode.service",
		"/sys/fs/cgroup",
		"/",
		"",
	};
	char out[4096] = "untouched", small[40];
	struct custode_refusal why = {0};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_lt(custode_container_cgroup_of(bad[i], ID_A, out, sizeof(out), &why), 0, "'%s' taken", bad[i]);
		cr_expect_str_eq(reason(&why), "attach.cgroup", "'%s': %s", bad[i], why.detail);
		cr_expect_str_eq(out, "untouched");
	}
	cr_expect_lt(custode_container_cgroup_of("/sys/fs/cgroup/machine.slice/libpod-" ID_A ".scope", ID_A, small,
						 sizeof(small), &why),
		     0);
	cr_expect_str_eq(reason(&why), "attach.cgroup");
}

/* A fake cgroup tree under a temporary directory: dirs, relative to it. */
static void tree(char *root, size_t len, const char *const *dirs, size_t n)
{
	snprintf(root, len, "/tmp/custode-ctr-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	for (size_t i = 0; i < n; i++) {
		char p[4096], *s;

		snprintf(p, sizeof(p), "%s/%s", root, dirs[i]);
		for (s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
			*s = 0;
			mkdir(p, 0755);
			*s = '/';
		}
		cr_assert_eq(mkdir(p, 0755), 0, "%s", p);
	}
}

static void untree(const char *root)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", root);
	cr_expect_eq(system(cmd), 0);
}

Test(attach_container, scan_finds_the_runtimes_scopes)
{
	static const char *const dirs[] = {
		"system.slice/custode.service",
		"machine.slice/libpod-conmon-" ID_A ".scope",
		"machine.slice/libpod-" ID_A ".scope/container",
		"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/cri-containerd-" ID_C ".scope",
		"system.slice/docker-" ID_B ".scope",
	};
	struct custode_refusal why = {0};
	char root[64], out[4096], want[4096], id[CUSTODE_CONTAINER_ID_LEN + 1];

	tree(root, sizeof(root), dirs, sizeof(dirs) / sizeof(dirs[0]));
	cr_expect_eq(custode_container_scan(root, "c0ff", out, sizeof(out), id, &why), 0, "%s", why.detail);
	snprintf(want, sizeof(want), "%s/%s", root, dirs[3]);
	cr_expect_str_eq(out, want);
	cr_expect_str_eq(id, ID_C);
	cr_expect_eq(custode_container_scan(root, ID_A, out, sizeof(out), id, &why), 0, "%s", why.detail);
	snprintf(want, sizeof(want), "%s/machine.slice/libpod-%s.scope", root, ID_A);
	cr_expect_str_eq(out, want, "the scope, not its child and not conmon's");
	/* A's and B's ids share 63 digits */
	cr_expect_lt(custode_container_scan(root, "4f1e", out, sizeof(out), id, &why), 0);
	cr_expect_str_eq(reason(&why), "container.ambiguous", "%s", why.detail);
	cr_expect_lt(custode_container_scan(root, "dead", out, sizeof(out), id, &why), 0);
	cr_expect_str_eq(reason(&why), "container.unknown", "%s", why.detail);
	untree(root);
}

Test(attach_container, scan_two_scopes_of_one_id_are_ambiguous)
{
	static const char *const dirs[] = {
		"machine.slice/libpod-" ID_A ".scope",
		"other.slice/libpod-" ID_A,
	};
	struct custode_refusal why = {0};
	char root[64], out[4096] = "untouched", id[CUSTODE_CONTAINER_ID_LEN + 1];

	tree(root, sizeof(root), dirs, sizeof(dirs) / sizeof(dirs[0]));
	cr_expect_lt(custode_container_scan(root, ID_A, out, sizeof(out), id, &why), 0);
	cr_expect_str_eq(reason(&why), "container.ambiguous", "%s", why.detail);
	cr_expect_str_eq(out, "untouched");
	untree(root);
}
