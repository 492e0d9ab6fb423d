// SPDX-License-Identifier: Apache-2.0
/*
 * Escape matrix, case 15: a hook preempted in the middle of its decision.
 * The engine resolves a path into a per-CPU buffer and looks it up in the
 * rules; BPF-LSM programs run with migration disabled but stay preemptible
 * (PREEMPT_LAZY kernels such as 7.x by default, any kernel booted with
 * preempt=full). If the open of a denied file is preempted between the two,
 * and another process of a run decides a path on the same CPU meanwhile, the
 * lookup would read the other one's path — an allowed one — and the
 * denied file would open (or the other one's allowed file be refused).
 *
 * The attack: three processes of the run share CPU 0; two create, open and
 * unlink files with long names in the workspace in a loop, the third opens
 * a denied file again and again. The kernel is switched to full preemption
 * for the test (PREEMPT_DYNAMIC: every kernel of the matrix), so that a tick
 * preempts a hook wherever it is. The engine's answer: each invocation
 * claims a buffer of its CPU for itself (engine status scratch_claims counts
 * the claims of each, so the test sees that the second was needed).
 */
#include <stdlib.h>

#include "test_escape_common.c"

#define PREEMPT_CTL "/sys/kernel/debug/sched/preempt"
#define RACE_OPENS "60000"
#define RACE_MKDIRS "20000"

struct race_out {
	long opens, leaked, eacces, other, ops, spurious;
};

static bool parse_out(const char *out, struct race_out *c)
{
	memset(c, 0, sizeof(*c));
	return sscanf(out, "ok opens=%ld leaked=%ld eacces=%ld other=%ld ops=%ld spurious=%ld", &c->opens, &c->leaked,
		      &c->eacces, &c->other, &c->ops, &c->spurious) == 6;
}

/* The current preemption mode ("(full)" in "none voluntary (full) lazy") into mode[]. */
static bool preempt_mode(char *mode, size_t n)
{
	char buf[256], *open, *close;
	FILE *f = fopen(PREEMPT_CTL, "r");

	if (!f && errno == ENOENT) {
		mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
		f = fopen(PREEMPT_CTL, "r");
	}
	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return false;
	}
	fclose(f);
	open = strchr(buf, '(');
	close = open ? strchr(open, ')') : NULL;
	if (!close || (size_t)(close - open) >= n)
		return false;
	memcpy(mode, open + 1, (size_t)(close - open - 1));
	mode[close - open - 1] = 0;
	return true;
}

static bool set_preempt(const char *mode)
{
	FILE *f = fopen(PREEMPT_CTL, "w");
	bool ok;

	if (!f)
		return false;
	ok = fputs(mode, f) >= 0;
	return fclose(f) == 0 && ok;
}

struct scratch_counts {
	long long later_claims, steals, lost; /* later: claims of the slots past the first */
};

/* engine status's scratch counts; all 0 when no engine is loaded yet */
static bool scratch_counts(struct scratch_counts *sc)
{
	json_t *st = ktest_engine_status(), *s = json_object_get(st, "scratch"), *c;
	bool shown;
	size_t i;

	memset(sc, 0, sizeof(*sc));
	if (!st || !json_is_object(s)) {
		json_decref(st);
		return true;
	}
	json_array_foreach(json_object_get(s, "claims"), i, c)
		if (i > 0)
			sc->later_claims += json_integer_value(c);
	sc->steals = json_integer_value(json_object_get(s, "steals"));
	sc->lost = json_integer_value(json_object_get(s, "lost"));
	shown = json_array_size(json_object_get(s, "claims")) == 4;
	json_decref(st);
	return shown;
}

/*
 * The race in a workspace-write run: cpurace TARGET WS COUNT [MODE]; nothing
 * denied succeeds, nothing allowed is refused, and engine status shows hooks
 * that found the first buffer held by a preempted one (the race happened),
 * none taken over and none refused for it.
 */
static void race_in_run(struct esc_fix *f, const char *what, const char *target, const char *count, const char *mode)
{
	struct scratch_counts before, after;
	static struct ktest_result r;
	struct race_out c;

	scratch_counts(&before);
	esc_run(&r, STEPS("--profile", "workspace-write"), f->d.ws, STEPS("cpurace", target, f->d.ws, count, mode));
	ASSERT_EQ(r.code, 0, "race in a run");
	if (ASSERT_TRUE(parse_out(r.out, &c), "race output")) {
		ktest_log("%s in the run: %s", what, r.out);
		ASSERT_EQ(c.leaked, 0, "no denied operation succeeded");
		ASSERT_EQ(c.eacces, c.opens, "every one was refused");
		ASSERT_TRUE(c.ops > 100, "the children's loops ran");
		ASSERT_EQ(c.spurious, 0, "none of the children's own files was refused");
		ASSERT_EQ(c.other, 0, "no other error");
	}
	if (ASSERT_TRUE(scratch_counts(&after), "engine status shows the path buffers")) {
		ktest_log("path buffers (%s): %lld claims past the first slot, %lld steals, %lld refused", what,
			  after.later_claims - before.later_claims, after.steals - before.steals, after.lost - before.lost);
		/* the race happened: a hook found the first buffer held by one preempted on its CPU */
		ASSERT_TRUE(after.later_claims > before.later_claims, "hooks were preempted holding a buffer");
		/* three processes never hold all four buffers of a CPU */
		ASSERT_EQ(after.steals - before.steals, 0, "no buffer taken over");
		ASSERT_EQ(after.lost - before.lost, 0, "no hook refused for a lost buffer");
	}
}

KTEST(escape_15_preempted_decision)
{
	static struct ktest_result r;
	struct esc_fix f, ctl;
	struct race_out c;
	char was[32], now[32], made[400];

	ktest_need_lsm();
	if (!ASSERT_TRUE(esc_fixture(&f) && esc_fixture(&ctl), "fixtures"))
		return;
	if (!ASSERT_TRUE(preempt_mode(was, sizeof(was)), "the kernel's preemption mode (" PREEMPT_CTL ")") ||
	    !ASSERT_TRUE(set_preempt("full") && preempt_mode(now, sizeof(now)) && !strcmp(now, "full"),
			 "full preemption"))
		return;
	ktest_log("preemption: %s -> full", was);

	/* control: the same processes outside any run read the file */
	esc_host(&r, ESC_NOBODY, STEPS("cpurace", ctl.secret, ctl.d.ws, "2000"));
	if (ASSERT_TRUE(parse_out(r.out, &c), "control output")) {
		ktest_log("control: %s", r.out);
		ASSERT_EQ(c.leaked, c.opens, "control: without custode every open of the file succeeds");
		ASSERT_TRUE(c.ops > 0, "control: the children ran");
	}

	race_in_run(&f, "open", f.secret, RACE_OPENS, NULL);

	/* the same with mkdir of a denied directory: the walked path_* hooks (their walk state is in the buffer too) */
	snprintf(made, sizeof(made), "%s/made", ctl.open);
	esc_host(&r, ESC_NOBODY, STEPS("cpurace", made, ctl.d.ws, "500", "mkdir"));
	if (ASSERT_TRUE(parse_out(r.out, &c), "mkdir control output")) {
		ktest_log("mkdir control: %s", r.out);
		ASSERT_EQ(c.leaked, c.opens, "control: without custode every mkdir succeeds");
	}
	snprintf(made, sizeof(made), "%s/made", f.open);
	race_in_run(&f, "mkdir", made, RACE_MKDIRS, "mkdir");
	ASSERT_TRUE(set_preempt(was), "the preemption mode restored");
}
