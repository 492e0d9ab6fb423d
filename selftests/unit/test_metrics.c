// SPDX-License-Identifier: Apache-2.0
/*
 * Metrics (userspace/metrics/metrics.c): the Prometheus text exposition
 * format 0.0.4 — HELP and TYPE before each family's samples, label values
 * and HELP text escaped, samples merged and sorted, numbers as the format
 * reads them — every rendered line checked against the format's grammar;
 * the textfile for node_exporter replaced atomically (temp + rename); the
 * bundle hook.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <criterion/criterion.h>

#include "metrics/metrics.h"
#include "util/fsutil.h"

/* ---- label escaping ---- */

Test(metrics, escape)
{
	char out[128];

	custode_prom_escape("plain value-1.2_/x", out, sizeof(out));
	cr_expect_str_eq(out, "plain value-1.2_/x");
	custode_prom_escape("a\\b", out, sizeof(out));
	cr_expect_str_eq(out, "a\\\\b");
	custode_prom_escape("say \"hi\"", out, sizeof(out));
	cr_expect_str_eq(out, "say \\\"hi\\\"");
	custode_prom_escape("two\nlines", out, sizeof(out));
	cr_expect_str_eq(out, "two\\nlines");
	custode_prom_escape("\\\"\n", out, sizeof(out));
	cr_expect_str_eq(out, "\\\\\\\"\\n");
	custode_prom_escape("", out, sizeof(out));
	cr_expect_str_eq(out, "");
	custode_prom_escape("tab\tand é", out, sizeof(out));
	cr_expect_str_eq(out, "tab\tand é", "other characters are kept as they are");
}

Test(metrics, escape_truncates_whole_escapes)
{
	char out[8];

	memset(out, 'x', sizeof(out));
	custode_prom_escape("\"\"\"\"\"\"\"\"", out, 6);
	cr_expect_str_eq(out, "\\\"\\\"", "never half an escape");
	cr_expect_eq(out[6], 'x', "nothing past len");
	custode_prom_escape("abcdefgh", out, 4);
	cr_expect_eq(strlen(out), 1, "truncated within len: %s", out);
	/* a value ending in a backslash cut before its escape: no lone backslash that would eat the quote */
	custode_prom_escape("abc\\", out, 6);
	cr_expect(strlen(out) == 0 || out[strlen(out) - 1] != '\\' || (strlen(out) >= 2 && out[strlen(out) - 2] == '\\'),
		  "%s", out);
}

/* ---- the exposition format ---- */

static struct custode_prom *sample_set(void)
{
	struct custode_prom *p = custode_prom_new();

	cr_assert_not_null(p);
	custode_prom_family(p, "custode_denials_total", "counter", "Denials, by policy and reason.");
	custode_prom_family(p, "custode_runs_active", "gauge", "Registered runs.");
	custode_prom_add(p, "custode_denials_total", 3, "policy", "web", "reason", "net.loopback", NULL);
	custode_prom_add(p, "custode_denials_total", 2, "policy", "build", "reason", "file.read.denied", NULL);
	custode_prom_add(p, "custode_denials_total", 4, "policy", "web", "reason", "net.loopback", NULL);
	custode_prom_add(p, "custode_runs_active", 1, NULL);
	return p;
}

Test(metrics, render_exact)
{
	struct custode_prom *p = sample_set();
	char *t = custode_prom_render(p);

	cr_assert_not_null(t);
	cr_expect_str_eq(t, "# HELP custode_denials_total Denials, by policy and reason.\n"
			    "# TYPE custode_denials_total counter\n"
			    "custode_denials_total{policy=\"build\",reason=\"file.read.denied\"} 2\n"
			    "custode_denials_total{policy=\"web\",reason=\"net.loopback\"} 7\n"
			    "# HELP custode_runs_active Registered runs.\n"
			    "# TYPE custode_runs_active gauge\n"
			    "custode_runs_active 1\n");
	free(t);
	custode_prom_free(p);
}

Test(metrics, families_in_declaration_order_declared_once)
{
	struct custode_prom *p = custode_prom_new();
	char *t;

	custode_prom_family(p, "z_total", "counter", "z");
	custode_prom_family(p, "a", "gauge", "a");
	custode_prom_family(p, "z_total", "gauge", "declared again"); /* ignored: the first declaration stands */
	custode_prom_add(p, "a", 1, NULL);
	custode_prom_add(p, "z_total", 2, NULL);
	custode_prom_add(p, "undeclared", 5, NULL);
	t = custode_prom_render(p);
	cr_assert_not_null(t);
	cr_expect_str_eq(t, "# HELP z_total z\n# TYPE z_total counter\nz_total 2\n# HELP a a\n# TYPE a gauge\na 1\n");
	cr_expect_null(strstr(t, "undeclared"), "a sample without a family is not rendered");
	free(t);
	custode_prom_free(p);
}

/*
 * BUG (metrics.c, custode_prom_render): a family without samples (the
 * bundle families before any bundle) was sorted with qsort(NULL, 0, ...),
 * undefined behaviour that UBSan (build-asan: no recovery) stops the daemon on.
 */
Test(metrics, empty)
{
	struct custode_prom *p = custode_prom_new();
	char *t = custode_prom_render(p);

	cr_assert_not_null(t);
	cr_expect_str_eq(t, "");
	free(t);
	t = custode_prom_render(NULL);
	cr_assert_not_null(t);
	cr_expect_str_eq(t, "");
	free(t);
	/* a family without samples still says what it is */
	custode_prom_family(p, "custode_x_total", "counter", "x");
	t = custode_prom_render(p);
	cr_expect_str_eq(t, "# HELP custode_x_total x\n# TYPE custode_x_total counter\n");
	free(t);
	custode_prom_free(p);
	custode_prom_free(NULL);
	custode_prom_family(NULL, "a", "gauge", "a");
	custode_prom_add(NULL, "a", 1, NULL);
}

Test(metrics, label_values_escaped_in_output)
{
	struct custode_prom *p = custode_prom_new();
	char *t;

	custode_prom_family(p, "m", "gauge", "m");
	custode_prom_add(p, "m", 1, "policy", "we\"ird\\na\nme", NULL);
	custode_prom_add(p, "m", 2, "policy", NULL, NULL); /* a NULL value is the empty string */
	t = custode_prom_render(p);
	cr_assert_not_null(t);
	cr_expect_str_eq(t, "# HELP m m\n# TYPE m gauge\nm{policy=\"\"} 2\nm{policy=\"we\\\"ird\\\\na\\nme\"} 1\n");
	free(t);
	custode_prom_free(p);
}

Test(metrics, samples_sorted_and_merged_by_labels)
{
	struct custode_prom *p = custode_prom_new();
	static const char *const cpu[] = {"3", "0", "2", "1", "0", "3"};
	char *t;

	custode_prom_family(p, "custode_events_dropped_total", "counter", "d");
	for (size_t i = 0; i < sizeof(cpu) / sizeof(cpu[0]); i++)
		custode_prom_add(p, "custode_events_dropped_total", (double)(i + 1), "cpu", cpu[i], NULL);
	t = custode_prom_render(p);
	cr_assert_not_null(t);
	cr_expect_str_eq(t, "# HELP custode_events_dropped_total d\n# TYPE custode_events_dropped_total counter\n"
			    "custode_events_dropped_total{cpu=\"0\"} 7\n"
			    "custode_events_dropped_total{cpu=\"1\"} 4\n"
			    "custode_events_dropped_total{cpu=\"2\"} 3\n"
			    "custode_events_dropped_total{cpu=\"3\"} 7\n");
	free(t);
	custode_prom_free(p);
}

Test(metrics, number_formats)
{
	struct custode_prom *p = custode_prom_new();
	char *t;

	custode_prom_family(p, "v", "gauge", "v");
	custode_prom_add(p, "v", 0, "k", "zero", NULL);
	custode_prom_add(p, "v", -42, "k", "neg", NULL);
	custode_prom_add(p, "v", 1767225600, "k", "time", NULL);
	custode_prom_add(p, "v", 9007199254740991.0, "k", "max_exact", NULL);
	custode_prom_add(p, "v", 18446744073709551615.0, "k", "u64", NULL);
	custode_prom_add(p, "v", 0.25, "k", "frac", NULL);
	custode_prom_add(p, "v", NAN, "k", "nan", NULL);
	t = custode_prom_render(p);
	cr_assert_not_null(t);
	cr_expect(strstr(t, "v{k=\"zero\"} 0\n"), "%s", t);
	cr_expect(strstr(t, "v{k=\"neg\"} -42\n"), "%s", t);
	cr_expect(strstr(t, "v{k=\"time\"} 1767225600\n"), "integers are written whole: %s", t);
	cr_expect(strstr(t, "v{k=\"max_exact\"} 9007199254740991\n"), "%s", t);
	cr_expect(strstr(t, "v{k=\"u64\"} 1.8446744073709552e+19\n"), "%s", t);
	cr_expect(strstr(t, "v{k=\"frac\"} 0.25\n"), "%s", t);
	cr_expect(strstr(t, "v{k=\"nan\"} NaN\n"), "%s", t);
	free(t);
	custode_prom_free(p);
}

/*
 * BUG (metrics.c, custode_prom_render): HELP text was written as given; the
 * format requires \ and newline in it escaped as \\ and \n — a newline in a
 * help text started a line that is no valid line of the format.
 */
Test(metrics, help_text_escaped)
{
	struct custode_prom *p = custode_prom_new();
	char *t;

	custode_prom_family(p, "m", "gauge", "a \\ backslash,\na newline and \"quotes\"");
	custode_prom_add(p, "m", 1, NULL);
	t = custode_prom_render(p);
	cr_assert_not_null(t);
	cr_expect_str_eq(t, "# HELP m a \\\\ backslash,\\na newline and \"quotes\"\n# TYPE m gauge\nm 1\n");
	free(t);
	custode_prom_free(p);
}

/* Every line of t is a line of the exposition format; each family's samples come right after its TYPE. */
static void expect_exposition(const char *t)
{
	regex_t help, type, sample;
	char family[256] = "", *copy = strdup(t), *save = NULL;
	int lines = 0;

	cr_assert_not_null(copy);
	cr_assert_eq(regcomp(&help, "^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) ([^\\\n]|\\\\[\\\\n])*$", REG_EXTENDED), 0);
	cr_assert_eq(regcomp(&type, "^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$",
			     REG_EXTENDED),
		     0);
	cr_assert_eq(regcomp(&sample,
			     "^([a-zA-Z_:][a-zA-Z0-9_:]*)"
			     "(\\{[a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\n]|\\\\[\\\\\"n])*\""
			     "(,[a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\n]|\\\\[\\\\\"n])*\")*\\})? "
			     "(NaN|[+-]Inf|-?[0-9]+(\\.[0-9]+)?(e[+-][0-9]+)?)$",
			     REG_EXTENDED),
		     0);
	cr_expect(t[0] == 0 || t[strlen(t) - 1] == '\n', "the text ends with a newline");
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		regmatch_t m[2];

		lines++;
		if (!regexec(&help, line, 2, m, 0)) {
			snprintf(family, sizeof(family), "%.*s", (int)(m[1].rm_eo - m[1].rm_so), line + m[1].rm_so);
		} else if (!regexec(&type, line, 2, m, 0)) {
			cr_expect(!strncmp(line + m[1].rm_so, family, strlen(family)) &&
				      (size_t)(m[1].rm_eo - m[1].rm_so) == strlen(family),
				  "TYPE right after its HELP: %s", line);
			if (strstr(line, " counter"))
				cr_expect(strlen(family) > 6 && !strcmp(family + strlen(family) - 6, "_total"),
					  "a counter's name ends in _total: %s", family);
		} else if (!regexec(&sample, line, 2, m, 0)) {
			cr_expect((size_t)(m[1].rm_eo - m[1].rm_so) == strlen(family) && !strncmp(line, family, strlen(family)),
				  "sample of the family declared just before (%s): %s", family, line);
		} else {
			cr_expect(0, "not a line of the exposition format: \"%s\"", line);
		}
	}
	cr_expect_gt(lines, 0);
	regfree(&help);
	regfree(&type);
	regfree(&sample);
	free(copy);
}

/*
 * BUG (metrics.c, custode_prom_render): infinities were printed with %.17g as
 * "inf"/"-inf", which the exposition format does not read (it spells them
 * +Inf and -Inf): one such sample failed the whole scrape.
 */
Test(metrics, infinities_spelled_as_the_format_reads_them)
{
	struct custode_prom *p = custode_prom_new();
	char *t;

	custode_prom_family(p, "v", "gauge", "v");
	custode_prom_add(p, "v", INFINITY, "k", "pos", NULL);
	custode_prom_add(p, "v", -INFINITY, "k", "neg", NULL);
	custode_prom_add(p, "v", -NAN, "k", "nan", NULL);
	custode_prom_add(p, "v", 1e308, "k", "big", NULL);
	custode_prom_add(p, "v", 1e308, "k", "big", NULL); /* merged: the sum overflows to +Inf */
	t = custode_prom_render(p);
	cr_assert_not_null(t);
	cr_expect(strstr(t, "v{k=\"pos\"} +Inf\n"), "%s", t);
	cr_expect(strstr(t, "v{k=\"neg\"} -Inf\n"), "%s", t);
	cr_expect(strstr(t, "v{k=\"nan\"} NaN\n"), "a negative NaN is NaN: %s", t);
	cr_expect(strstr(t, "v{k=\"big\"} +Inf\n"), "%s", t);
	cr_expect_null(strstr(t, "inf"), "no printf spelling: %s", t);
	expect_exposition(t);
	free(t);
	custode_prom_free(p);
}

Test(metrics, every_line_is_exposition_format)
{
	struct custode_prom *p = sample_set();
	char *t;

	custode_prom_family(p, "custode_policy_bundle_not_after_seconds", "gauge", "notAfter (unix \\ seconds)\nof it.");
	custode_prom_add(p, "custode_policy_bundle_not_after_seconds", 1767225600, "policy", "a\"b\\c\nd", NULL);
	custode_prom_add(p, "custode_policy_bundle_not_after_seconds", 0.5, "policy", "", NULL);
	custode_prom_family(p, "custode_stream_sink_dropped_total", "counter", "Lines a sink lost.");
	custode_prom_add(p, "custode_stream_sink_dropped_total", 0, "sink", "stdout", NULL);
	custode_prom_add(p, "custode_stream_sink_dropped_total", 12, "sink", "file", NULL);
	t = custode_prom_render(p);
	cr_assert_not_null(t);
	expect_exposition(t);
	free(t);
	custode_prom_free(p);
}

/*
 * BUG (metrics.c, custode_prom_add): labels longer than the 4 KiB buffer were
 * cut anywhere and left without their closing brace — a line Prometheus
 * cannot parse, which fails the whole scrape. Such a sample is left out.
 */
Test(metrics, many_labels_stay_well_formed)
{
	struct custode_prom *p = custode_prom_new();
	char big[2000], *t;

	memset(big, '"', sizeof(big) - 1); /* every character needs an escape */
	big[sizeof(big) - 1] = 0;
	custode_prom_family(p, "m", "gauge", "m");
	custode_prom_add(p, "m", 1, "a", big, "b", big, "c", big, "d", big, "e", big, NULL);
	custode_prom_add(p, "m", 2, "a", big, NULL);
	t = custode_prom_render(p);
	cr_assert_not_null(t);
	expect_exposition(t);
	cr_expect(strstr(t, "\nm{a=\"\\\"\\\"") != NULL, "the sample that fits is there: %.200s", t);
	free(t);
	custode_prom_free(p);
}

Test(metrics, many_families_and_samples)
{
	struct custode_prom *p = custode_prom_new();
	char name[64], val[32], *t;

	for (int f = 0; f < 100; f++) {
		snprintf(name, sizeof(name), "custode_f%03d_total", f);
		custode_prom_family(p, name, "counter", "f");
		for (int s = 0; s < 50; s++) {
			snprintf(val, sizeof(val), "%02d", s);
			custode_prom_add(p, name, 1, "s", val, NULL);
			custode_prom_add(p, name, 1, "s", val, NULL);
		}
	}
	t = custode_prom_render(p);
	cr_assert_not_null(t);
	expect_exposition(t);
	cr_expect(strstr(t, "custode_f099_total{s=\"49\"} 2\n"));
	cr_expect(strstr(t, "# TYPE custode_f000_total counter\ncustode_f000_total{s=\"00\"} 2\n"));
	free(t);
	custode_prom_free(p);
}

/* ---- the textfile (node_exporter): temp + rename, as the daemon writes it ---- */

static char *slurp(const char *path)
{
	char *out = NULL;

	cr_assert_eq(custode_read_file(path, 1 << 20, &out, NULL), 0, "%s", path);
	return out;
}

Test(metrics, textfile_replaced_atomically)
{
	char dir[] = "/tmp/custode-metrics-XXXXXX", path[PATH_MAX], *t1, *t2, *got;
	struct custode_prom *p = sample_set();
	struct stat st1, st2;
	int old;
	DIR *d;
	struct dirent *e;
	int entries = 0;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/custode.prom", dir);
	t1 = custode_prom_render(p);
	cr_assert_eq(custode_write_file_atomic(path, t1, strlen(t1), 0644), 0);
	cr_assert_eq(stat(path, &st1), 0);
	cr_expect_eq(st1.st_mode & 07777, 0644, "node_exporter (not root) reads it");
	old = open(path, O_RDONLY);
	cr_assert_geq(old, 0);

	custode_prom_add(p, "custode_runs_active", 1, NULL);
	t2 = custode_prom_render(p);
	cr_assert_str_neq(t1, t2);
	cr_assert_eq(custode_write_file_atomic(path, t2, strlen(t2), 0644), 0);
	cr_assert_eq(stat(path, &st2), 0);
	/* a new file took the name: a reader of the old one still reads all of the old text */
	cr_expect_neq(st1.st_ino, st2.st_ino, "replaced by rename, not rewritten in place");
	{
		char buf[4096];
		ssize_t n = read(old, buf, sizeof(buf) - 1);

		cr_assert_gt(n, 0);
		buf[n] = 0;
		cr_expect_str_eq(buf, t1);
	}
	close(old);
	got = slurp(path);
	cr_expect_str_eq(got, t2);
	expect_exposition(got);
	free(got);
	/* no temporary left behind */
	d = opendir(dir);
	cr_assert_not_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			entries++;
			cr_expect_str_eq(e->d_name, "custode.prom");
		}
	closedir(d);
	cr_expect_eq(entries, 1);
	unlink(path);
	rmdir(dir);
	free(t1);
	free(t2);
	custode_prom_free(p);
}

Test(metrics, textfile_in_missing_directory_fails_cleanly)
{
	const char *t = "# HELP a a\n# TYPE a gauge\na 1\n";

	cr_expect_lt(custode_write_file_atomic("/nonexistent-custode-dir/x.prom", t, strlen(t), 0644), 0);
}

/* ---- the bundle hook ---- */

struct seen {
	int n;
	char policy[8][160];
	uint64_t version[8];
	int64_t nb[8], na[8];
};

static void collect(void *ctx, const char *policy, uint64_t version, int64_t not_before, int64_t not_after)
{
	struct seen *s = ctx;

	if (s->n < 8) {
		snprintf(s->policy[s->n], sizeof(s->policy[s->n]), "%s", policy);
		s->version[s->n] = version;
		s->nb[s->n] = not_before;
		s->na[s->n] = not_after;
	}
	s->n++;
}

static int find(const struct seen *s, const char *policy)
{
	for (int i = 0; i < s->n && i < 8; i++)
		if (!strcmp(s->policy[i], policy))
			return i;
	return -1;
}

Test(metrics, bundle_hook)
{
	struct seen s = {0};
	char longname[300];
	int i;

	custode_metrics_set_bundle("web", 3, 100, 200);
	custode_metrics_set_bundle("build", 1, 10, 20);
	custode_metrics_set_bundle("web", 4, 150, 250); /* replaces */
	custode_metrics_set_bundle(NULL, 9, 0, 0);      /* ignored */
	custode_metrics_each_bundle(collect, &s);
	cr_assert_eq(s.n, 2);
	i = find(&s, "web");
	cr_assert_geq(i, 0);
	cr_expect_eq(s.version[i], 4);
	cr_expect_eq(s.nb[i], 150);
	cr_expect_eq(s.na[i], 250);

	custode_metrics_clear_bundle("web");
	custode_metrics_clear_bundle("nosuch");
	memset(&s, 0, sizeof(s));
	custode_metrics_each_bundle(collect, &s);
	cr_assert_eq(s.n, 1);
	cr_expect_str_eq(s.policy[0], "build");

	/* a name longer than a policy name can be: kept to 128 bytes, not overflowing */
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	custode_metrics_set_bundle(longname, 1, 0, 0);
	memset(&s, 0, sizeof(s));
	custode_metrics_each_bundle(collect, &s);
	cr_assert_eq(s.n, 2);
	i = find(&s, "build") == 0 ? 1 : 0;
	cr_expect_eq(strlen(s.policy[i]), 128);
}

/* BUG (metrics.c, custode_metrics_clear_bundle): NULL was compared with strcmp and crashed; set_bundle ignores it. */
Test(metrics, bundle_hook_clear_null_is_a_no_op)
{
	struct seen s = {0};

	custode_metrics_set_bundle("kept", 1, 0, 0);
	custode_metrics_clear_bundle(NULL);
	custode_metrics_each_bundle(collect, &s);
	cr_expect_eq(s.n, 1, "nothing forgotten");
	cr_expect_str_eq(s.policy[0], "kept");
}

Test(metrics, bundle_hook_full)
{
	struct seen s = {0};
	char name[32];

	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		custode_metrics_set_bundle(name, (uint64_t)i, 0, 0);
	}
	custode_metrics_each_bundle(collect, &s);
	cr_expect_eq(s.n, 256, "a bounded table: the rest are not recorded");
	/* room again after a clear */
	custode_metrics_clear_bundle("p0");
	custode_metrics_set_bundle("late", 1, 0, 0);
	memset(&s, 0, sizeof(s));
	custode_metrics_each_bundle(collect, &s);
	cr_expect_eq(s.n, 256);
}

static void *setter(void *arg)
{
	char name[32];
	struct seen s;

	for (int i = 0; i < 2000; i++) {
		snprintf(name, sizeof(name), "t%ld-%d", (long)(intptr_t)arg, i % 16);
		custode_metrics_set_bundle(name, (uint64_t)i, i, i + 1);
		if (i % 3 == 0)
			custode_metrics_clear_bundle(name);
		memset(&s, 0, sizeof(s));
		custode_metrics_each_bundle(collect, &s);
	}
	return NULL;
}

Test(metrics, bundle_hook_concurrent)
{
	pthread_t th[4];
	struct seen s = {0};

	for (intptr_t i = 0; i < 4; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, setter, (void *)i), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	custode_metrics_each_bundle(collect, &s);
	cr_expect_leq(s.n, 64, "at most 16 names per thread");
	cr_expect_gt(s.n, 0);
}
