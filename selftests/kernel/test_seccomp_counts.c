// SPDX-License-Identifier: Apache-2.0
/*
 * Issue 16: a run blocked 6 operations and its summary said 5 denials. The
 * sixth, socket(AF_PACKET), was refused by the launcher's seccomp filter,
 * which no counter sees (docs/process.md, "Seccomp denylist"): the summary
 * line and the receipt must say so rather than look complete.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ktest.h"

KTEST(seccomp_refusals_said_not_counted)
{
	static struct ktest_result r;
	struct ktest_dirs d;
	char path[400], script[600];
	json_t *o, *den;

	ktest_need_cgroup_bpf();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs") || !ASSERT_TRUE(ktest_netns(), "netns"))
		return;
	snprintf(path, sizeof(path), "%s/receipt.json", d.root);
	/* one engine denial (egress), one seccomp refusal: AF_PACKET (17), SOCK_RAW (3), htons(ETH_P_ALL) (768) */
	snprintf(script, sizeof(script), "%s connect 203.0.113.10 8081; %s socket 17 3 768", ktest_tprobe(),
		 ktest_tprobe());
	char *argv[] = {(char *)ktest_custode(), "run", "--profile", "net-only", "--allow", "203.0.113.10:8080",
			"--receipt", path, "--", "/bin/sh", "-c", script, NULL};
	ktest_run(argv, -1, 60000, &r);
	ASSERT_STREQ(r.out, "EPERM\nEPERM\n", "both operations refused");
	ASSERT_CONTAINS(r.err, "1 denial: net.egress.denied=1 (seccomp filter refusals are not counted)",
			"the summary counts the engine's denial and says the filter's refusal is not counted");
	o = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
	if (!ASSERT_TRUE(o != NULL, "receipt written"))
		return;
	den = json_object_get(o, "denials");
	ASSERT_EQ(json_integer_value(json_object_get(den, "total")), 1, "the engine's denial only");
	ASSERT_TRUE(json_is_false(json_object_get(den, "seccomp_refusals_counted")),
		    "the receipt says seccomp filter refusals are not counted");
	json_decref(o);
}
