// SPDX-License-Identifier: Apache-2.0
/*
 * What `custode engine load` loads on a host (custode_probe_classes over the
 * probes' answers: an egress-only host gets the egress class, not nothing),
 * why it skips a class, and that a failed first load leaves no empty pin
 * directories (engine_rmdir_empty_pins, on a temporary directory).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <criterion/criterion.h>

#include "custode/abi.h"
#include "engine/engine_int.h"
#include "engine/probe.h"
#include "util/reasons.h"

#define ALL (CUSTODE_CLASS_FILE | CUSTODE_CLASS_PROCESS | CUSTODE_CLASS_EGRESS)
#define LOAD (CUSTODE_CLASS_FILE | CUSTODE_CLASS_EGRESS)

Test(engine_load_classes, egress_only_host_loads_egress)
{
	struct custode_probe_result pr = {.lsm_probed = true, .cgroup_probed = true, .cgroup_loads = true};
	struct custode_refusal why = {0};

	snprintf(pr.lsm_cause, sizeof(pr.lsm_cause), "lockdown=integrity: the locked-down kernel refuses LSM programs");
	cr_assert_eq(custode_probe_classes(&pr, LOAD), CUSTODE_CLASS_EGRESS);
	cr_assert_eq(custode_probe_classes(&pr, ALL), CUSTODE_CLASS_EGRESS);
	custode_probe_class_refusal(&pr, CUSTODE_CLASS_FILE, &why);
	cr_assert_eq(why.reason, CUSTODE_REASON_KERNEL_LSM_UNAVAILABLE);
	cr_assert_str_eq(why.detail, pr.lsm_cause);
}

Test(engine_load_classes, full_host_and_no_host)
{
	struct custode_probe_result full = {.lsm_probed = true, .lsm_loads = true, .cgroup_probed = true, .cgroup_loads = true};
	struct custode_probe_result none = {.lsm_probed = true, .cgroup_probed = true};
	struct custode_refusal why = {0};

	cr_assert_eq(custode_probe_classes(&full, LOAD), LOAD);
	cr_assert_eq(custode_probe_classes(&full, ALL), ALL);
	cr_assert_eq(custode_probe_classes(&full, CUSTODE_CLASS_EGRESS), CUSTODE_CLASS_EGRESS, "only what is asked");
	cr_assert_eq(custode_probe_classes(&none, ALL), 0);
	snprintf(none.cgroup_cause, sizeof(none.cgroup_cause), "loading a cgroup/connect4 program failed: EPERM");
	custode_probe_class_refusal(&none, CUSTODE_CLASS_EGRESS, &why);
	cr_assert_eq(why.reason, CUSTODE_REASON_KERNEL_CGROUP_BPF_UNAVAILABLE);
	cr_assert_str_eq(why.detail, none.cgroup_cause);
	/* LSM loads, cgroup BPF not: the LSM classes alone */
	cr_assert_eq(custode_probe_classes(&(struct custode_probe_result){.lsm_loads = true}, ALL),
		     CUSTODE_CLASS_FILE | CUSTODE_CLASS_PROCESS);
}

static void mkdirs(const char *root)
{
	char p[256];

	cr_assert_eq(mkdir(root, 0700), 0);
	snprintf(p, sizeof(p), "%s/links", root);
	cr_assert_eq(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/maps", root);
	cr_assert_eq(mkdir(p, 0700), 0);
}

static bool exists(const char *root, const char *sub)
{
	char p[256];

	snprintf(p, sizeof(p), "%s%s", root, sub);
	return access(p, F_OK) == 0;
}

Test(engine_load_classes, failed_load_leaves_no_empty_pin_dirs)
{
	char base[] = "/tmp/custode-pins.XXXXXX", root[128], file[160];

	cr_assert_not_null(mkdtemp(base));
	snprintf(root, sizeof(root), "%s/custode", base);
	mkdirs(root);
	engine_rmdir_empty_pins(root);
	cr_assert(!exists(root, ""), "empty links/ and maps/ and the root are gone");

	/* a pin left (one the unpin could not remove) is kept, and so is its directory */
	mkdirs(root);
	snprintf(file, sizeof(file), "%s/maps/custode_runs", root);
	cr_assert_eq(close(creat(file, 0600)), 0);
	engine_rmdir_empty_pins(root);
	cr_assert(!exists(root, "/links"));
	cr_assert(exists(root, "/maps/custode_runs"));
	unlink(file);
	engine_rmdir_empty_pins(root);
	cr_assert(!exists(root, ""));
	rmdir(base);
}
