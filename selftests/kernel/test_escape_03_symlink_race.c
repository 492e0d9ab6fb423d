// SPDX-License-Identifier: Apache-2.0
/*
 * Escape matrix, case 3: a symlink swapped between an allowed and a denied
 * target in a tight loop while the run opens it. The engine decides in
 * file_open, on the file the kernel actually opened (bpf_d_path of
 * file->f_path, and its inode), after every lookup is over: there is no
 * check-then-use window for the swap to fall into. Both the swapper and the
 * opener run inside the run, as an attacker would.
 */
#include <stdlib.h>

#include "test_escape_common.c"

#define RACE_SECONDS "5"

struct race_counts {
	long opens, allowed, denied, eacces, enoent, other, swaps;
};

static bool parse_race(const char *out, struct race_counts *c)
{
	memset(c, 0, sizeof(*c));
	return sscanf(out, "ok opens=%ld allowed=%ld denied=%ld eacces=%ld enoent=%ld other=%ld swaps=%ld", &c->opens,
		      &c->allowed, &c->denied, &c->eacces, &c->enoent, &c->other, &c->swaps) == 7;
}

KTEST(escape_03_symlink_swap_race)
{
	static struct ktest_result r;
	struct esc_fix f, ctl;
	struct race_counts c;
	char link[512], clink[512];
	json_t *events;

	ktest_need_lsm();
	if (!ASSERT_TRUE(esc_fixture(&f) && esc_fixture(&ctl), "fixtures"))
		return;
	snprintf(link, sizeof(link), "%s/link", f.d.ws);
	snprintf(clink, sizeof(clink), "%s/link", ctl.d.ws);

	/* control: the same race by nobody outside any run does reach the denied target */
	esc_host(&r, ESC_NOBODY, STEPS("race", clink, ctl.d.ws_file, ctl.secret, RACE_SECONDS));
	if (ASSERT_TRUE(parse_race(r.out, &c), "control race output")) {
		ktest_log("control: %s", r.out);
		ASSERT_TRUE(c.denied > 0, "control: without custode the swap reaches the denied file");
		ASSERT_TRUE(c.allowed > 0, "control: and the allowed one");
	}

	ktest_events();
	esc_run(&r, STEPS("--profile", "workspace-write"), f.d.ws,
		STEPS("race", link, f.d.ws_file, f.secret, RACE_SECONDS));
	ASSERT_EQ(r.code, 0, "race in a run");
	if (ASSERT_TRUE(parse_race(r.out, &c), "race output")) {
		ktest_log("in the run: %s", r.out);
		ASSERT_EQ(c.denied, 0, "not one open of the denied target succeeded");
		ASSERT_TRUE(c.allowed > 0, "opens of the allowed target succeeded (the loop ran)");
		ASSERT_TRUE(c.eacces > 0, "opens that resolved to the denied target were refused");
		ASSERT_TRUE(c.swaps > 100, "the link was swapped many times");
		ASSERT_EQ(c.other, 0, "no open reached anything else");
	}
	ASSERT_CONTAINS(r.err, "file.read.denied", "denial summary");
	events = ktest_events();
	esc_has_event(events, "file_open", "file.read.denied", f.secret, "race");
	json_decref(events);
}
