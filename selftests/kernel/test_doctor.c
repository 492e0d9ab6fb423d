// SPDX-License-Identifier: Apache-2.0
/* custode doctor: all available in the guest (exit 0); on a locked-down host, egress only (exit 3), lockdown named. */
#include <stdlib.h>

#include "engine/probe.h"
#include "ktest.h"

KTEST(doctor_reports_classes_with_evidence)
{
	static struct ktest_result r;
	struct custode_probe_result p;
	char *argv[] = {(char *)ktest_custode(), "doctor", "--json", NULL};
	json_t *o, *classes;

	custode_probe_host(&p);
	/* doctor loads every object for real: minutes on a loaded TCG guest */
	ktest_run(argv, -1, 150000, &r);
	o = json_loads(r.out, 0, NULL);
	if (!ASSERT_TRUE(o != NULL, "doctor --json prints one JSON object"))
		return;
	classes = json_object_get(o, "classes");
	ASSERT_TRUE(json_is_true(json_object_get(json_object_get(classes, "egress"), "available")), "egress available");
	ASSERT_STREQ(json_string_value(json_object_get(json_object_get(o, "checks"), "lockdown") ?
					       json_object_get(json_object_get(json_object_get(o, "checks"), "lockdown"), "evidence") : NULL),
		     p.lockdown, "lockdown evidence is the kernel's level");
	if (ktest_in_guest()) {
		ASSERT_EQ(r.code, 0, "guest: all enforcement available");
		ASSERT_STREQ(json_string_value(json_object_get(o, "status")), "ok", "status");
		ASSERT_TRUE(json_is_true(json_object_get(json_object_get(classes, "file"), "available")), "file");
		ASSERT_TRUE(json_is_true(json_object_get(json_object_get(classes, "process"), "available")), "process");
	} else if (json_is_false(json_object_get(json_object_get(classes, "file"), "available"))) {
		char want[64];
		snprintf(want, sizeof(want), "lockdown=%s", p.lockdown);
		ASSERT_EQ(r.code, 3, "partial");
		ASSERT_STREQ(json_string_value(json_object_get(o, "status")), "partial", "status");
		ASSERT_STREQ(json_string_value(json_object_get(json_object_get(classes, "file"), "reason")),
			     "kernel.lsm_unavailable", "file reason");
		ASSERT_CONTAINS(json_string_value(json_object_get(json_object_get(classes, "file"), "cause")), want,
				"lockdown named as the cause");
		ASSERT_TRUE(json_is_false(json_object_get(json_object_get(classes, "process"), "available")), "process");
	} else {
		ASSERT_EQ(r.code, 0, "a host that loads LSM programs: all available");
	}
	json_decref(o);
}

/* On a host where LSM programs can't load, a profile that needs them is refused, never run unconfined. */
KTEST_NATIVE(run_refused_without_lsm)
{
	static struct ktest_result r;
	struct custode_probe_result p;
	char *argv[] = {(char *)ktest_custode(), "run", "--profile", "read", "--", "/bin/echo", "RAN", NULL};

	custode_probe_lsm(&p);
	if (p.lsm_loads)
		ktest_skip("this host loads LSM programs; the refusal path is for hosts that can't");
	ktest_run(argv, -1, 60000, &r);
	ASSERT_EQ(r.code, 125, "refused");
	ASSERT_CONTAINS(r.err, "kernel.lsm_unavailable", "reason code");
	ASSERT_CONTAINS(r.err, "lockdown=", "doctor's cause");
	ASSERT_TRUE(strstr(r.out, "RAN") == NULL, "the command never ran");
}

KTEST(doctor_usage)
{
	static struct ktest_result r;
	char *help[] = {(char *)ktest_custode(), "doctor", "--help", NULL};
	char *bad[] = {(char *)ktest_custode(), "doctor", "--bogus", NULL};

	ASSERT_EQ(ktest_run(help, -1, 10000, &r), 0, "--help");
	ASSERT_CONTAINS(r.out, "usage: custode doctor", "help text");
	ASSERT_EQ(ktest_run(bad, -1, 10000, &r), 2, "bad option");
}
