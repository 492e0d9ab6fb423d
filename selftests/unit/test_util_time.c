// SPDX-License-Identifier: Apache-2.0
/*
 * util/time: the one RFC 3339 UTC parser and formatter, and durations
 * ("90s", "15m"): fractions as each caller allows them, dates that do not
 * exist, the int64 nanosecond range, round trips, malformed input.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <criterion/criterion.h>

#include "util/time.h"

#define NS 1000000000LL
/* 2026-01-01T00:00:00Z */
#define WALL_2026 1767225600LL
#define UNTOUCHED 0x5a5a5a5a

Test(util_time, parse_whole_seconds)
{
	static const struct {
		const char *s;
		int64_t sec;
	} c[] = {
		{"1970-01-01T00:00:00Z", 0},
		{"2026-01-01T00:00:00Z", WALL_2026},
		{"2026-01-01T10:00:00Z", WALL_2026 + 36000},
		{"2024-02-29T23:59:59Z", 1709251199},
		{"2000-02-29T00:00:00Z", 951782400},   /* divisible by 400: a leap year */
		{"1969-12-31T23:59:59Z", -1},          /* a real time, not an error value */
		{"1900-01-01T00:00:00Z", -2208988800}, /* before 1970 */
		{"9999-12-31T23:59:59Z", 253402300799},
	};
	int64_t sec, frac;

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		frac = UNTOUCHED;
		cr_assert_eq(custode_time_parse(c[i].s, 0, &sec, &frac), 0, "%s", c[i].s);
		cr_expect_eq(sec, c[i].sec, "%s: %lld", c[i].s, (long long)sec);
		cr_expect_eq(frac, 0, "%s", c[i].s);
	}
}

Test(util_time, parse_fraction_as_allowed)
{
	int64_t sec, frac;

	cr_expect_eq(custode_time_parse("2026-01-01T00:00:00.5Z", 0, &sec, &frac), -EINVAL, "no fraction allowed");
	cr_assert_eq(custode_time_parse("2026-01-01T00:00:00.5Z", 1, &sec, &frac), 0);
	cr_expect_eq(sec, WALL_2026);
	cr_expect_eq(frac, 500000000);
	cr_expect_eq(custode_time_parse("2026-01-01T00:00:00.55Z", 1, &sec, &frac), -EINVAL, "two digits, one allowed");
	cr_assert_eq(custode_time_parse("2026-01-01T00:00:00.123456789Z", 9, &sec, &frac), 0);
	cr_expect_eq(frac, 123456789);
	/* policies take any length: the digits past the ninth are dropped, not rounded */
	cr_assert_eq(custode_time_parse("2026-01-01T00:00:00.1234567899999Z", CUSTODE_TIME_FRAC_ANY, &sec, &frac), 0);
	cr_expect_eq(sec, WALL_2026);
	cr_expect_eq(frac, 123456789);
	cr_assert_eq(custode_time_parse("2026-01-01T00:00:00Z", CUSTODE_TIME_FRAC_ANY, &sec, NULL), 0, "frac_ns may be NULL");
}

Test(util_time, parse_malformed_refused)
{
	static const char *const bad[] = {
		"",
		"2026",
		"2026-01-01",
		"2026-01-01T00:00:00",       /* no zone */
		"2026-01-01T00:00:00+00:00", /* Z only */
		"2026-01-01T00:00:00-01:00",
		"2026-01-01t00:00:00Z",
		"2026-01-01T00:00:00z",
		"2026-01-01 00:00:00Z",
		"2026/01/01T00:00:00Z",
		"2026-1-01T00:00:00Z",
		"2026-01-01T0:00:00Z",
		"202a-01-01T00:00:00Z",
		"-026-01-01T00:00:00Z",
		"+2026-01-01T00:00:00Z",
		" 2026-01-01T00:00:00Z",
		"2026-01-01T00:00:00Z ",
		"2026-01-01T00:00:00ZZ",
		"2026-01-01T00:00:00.Z", /* a dot without digits */
		"2026-01-01T00:00:00.12a4Z",
		"2026-01-01T00:00:00.-1Z",
		"2026-01-01T00:00:00,5Z",
		"2026-01-01T00:00:00.5",
		"2026-02-30T00:00:00Z", /* no such day */
		"2026-04-31T00:00:00Z",
		"2025-02-29T00:00:00Z", /* not a leap year */
		"1900-02-29T00:00:00Z", /* divisible by 100, not by 400 */
		"2026-13-01T00:00:00Z",
		"2026-00-10T00:00:00Z",
		"2026-01-00T00:00:00Z",
		"2026-01-32T00:00:00Z",
		"2026-01-01T24:00:00Z",
		"2026-01-01T23:60:00Z",
		"2026-01-01T23:59:60Z", /* leap seconds are not represented */
		"2026-01-01T23:59:61Z",
	};
	int64_t sec, frac;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sec = frac = UNTOUCHED;
		cr_expect_eq(custode_time_parse(bad[i], CUSTODE_TIME_FRAC_ANY, &sec, &frac), -EINVAL, "\"%s\" accepted",
			     bad[i]);
		cr_expect_eq(sec, UNTOUCHED, "\"%s\": output written on failure", bad[i]);
		cr_expect_eq(frac, UNTOUCHED, "\"%s\": output written on failure", bad[i]);
	}
	cr_expect_eq(custode_time_parse(NULL, 0, &sec, &frac), -EINVAL);
}

Test(util_time, parse_ns_range)
{
	int64_t ns = UNTOUCHED;

	cr_assert_eq(custode_time_parse_ns("2026-01-01T00:00:00.000000001Z", &ns), 0);
	cr_expect_eq(ns, WALL_2026 * NS + 1);
	cr_expect_eq(custode_time_parse_ns("2026-01-01T00:00:00.1234567890Z", &ns), -EINVAL, "ten digits");
	cr_assert_eq(custode_time_parse_ns("1677-09-22T00:00:00Z", &ns), 0);
	cr_expect_lt(ns, 0);
	cr_assert_eq(custode_time_parse_ns("2262-04-10T00:00:00.999999999Z", &ns), 0);
	cr_expect_gt(ns, 0);
	ns = UNTOUCHED;
	cr_expect_eq(custode_time_parse_ns("2263-01-01T00:00:00Z", &ns), -ERANGE);
	cr_expect_eq(custode_time_parse_ns("1600-01-01T00:00:00Z", &ns), -ERANGE);
	cr_expect_eq(custode_time_parse_ns("9999-12-31T23:59:59Z", &ns), -ERANGE);
	cr_expect_eq(custode_time_parse_ns("2026-02-30T00:00:00Z", &ns), -EINVAL);
	cr_expect_eq(ns, UNTOUCHED, "output written on failure");
}

Test(util_time, format_seconds)
{
	char buf[CUSTODE_TIME_LEN];

	cr_expect_str_eq(custode_time_format(0, buf, sizeof(buf)), "1970-01-01T00:00:00Z");
	cr_expect_str_eq(custode_time_format(WALL_2026 + 36000 + 61, buf, sizeof(buf)), "2026-01-01T10:01:01Z");
	cr_expect_str_eq(custode_time_format(-1, buf, sizeof(buf)), "1969-12-31T23:59:59Z");
	cr_expect_str_eq(custode_time_format(INT64_MAX, buf, sizeof(buf)), "@9223372036854775807",
			 "beyond the calendar: the number, not garbage");
}

Test(util_time, format_fraction)
{
	char buf[CUSTODE_TIME_LEN];
	int64_t t = WALL_2026 * NS + 123456789;

	cr_expect_str_eq(custode_time_format_ns(t, 3, buf, sizeof(buf)), "2026-01-01T00:00:00.123Z");
	cr_expect_str_eq(custode_time_format_ns(t, 6, buf, sizeof(buf)), "2026-01-01T00:00:00.123456Z");
	cr_expect_str_eq(custode_time_format_ns(t, 9, buf, sizeof(buf)), "2026-01-01T00:00:00.123456789Z");
	cr_expect_str_eq(custode_time_format_ns(WALL_2026 * NS + 999999999, 3, buf, sizeof(buf)),
			 "2026-01-01T00:00:00.999Z", "truncated, not rounded into the next second");
	cr_expect_str_eq(custode_time_format_ns(WALL_2026 * NS + 5, 6, buf, sizeof(buf)), "2026-01-01T00:00:00.000000Z");
	cr_expect_str_eq(custode_time_format_ns(-1, 6, buf, sizeof(buf)), "1969-12-31T23:59:59.999999Z",
			 "before 1970 the fraction stays positive");
	cr_expect_str_eq(custode_time_format_ns(INT64_MIN, 9, buf, sizeof(buf)), "1677-09-21T00:12:43.145224192Z");
	cr_expect_str_eq(custode_time_format_ns(INT64_MAX, 9, buf, sizeof(buf)), "2262-04-11T23:47:16.854775807Z");
}

Test(util_time, format_parse_round_trip)
{
	static const int64_t secs[] = {0, -1, 951782400, WALL_2026, 1709251199, 253402300799};
	static const int64_t ns[] = {0, 1, -1, WALL_2026 * NS + 123456789, INT64_MAX, INT64_MIN};
	char buf[CUSTODE_TIME_LEN];
	int64_t v;

	for (size_t i = 0; i < sizeof(secs) / sizeof(secs[0]); i++) {
		custode_time_format(secs[i], buf, sizeof(buf));
		cr_assert_eq(custode_time_parse(buf, 0, &v, NULL), 0, "%s", buf);
		cr_expect_eq(v, secs[i], "%s", buf);
	}
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		custode_time_format_ns(ns[i], 9, buf, sizeof(buf));
		if (ns[i] == INT64_MAX || ns[i] == INT64_MIN) {
			/* the last whole second at each end is refused, so sec * 1e9 + frac cannot overflow */
			cr_expect_eq(custode_time_parse_ns(buf, &v), -ERANGE, "%s", buf);
			continue;
		}
		cr_assert_eq(custode_time_parse_ns(buf, &v), 0, "%s", buf);
		cr_expect_eq(v, ns[i], "%s", buf);
	}
}

Test(util_time, duration)
{
	static const struct {
		const char *s;
		int64_t sec;
	} c[] = {
		{"1s", 1},        {"90s", 90},          {"15m", 900},           {"12h", 43200},
		{"30d", 2592000}, {"2w", 1209600},      {"007s", 7},            {"3660d", 3660 * 86400LL},
		{"522w", 522 * 7 * 86400LL},
	};
	int64_t v;

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		cr_assert_eq(custode_duration_parse(c[i].s, &v), 0, "%s", c[i].s);
		cr_expect_eq(v, c[i].sec, "%s", c[i].s);
	}
}

Test(util_time, duration_malformed_refused)
{
	static const char *const bad[] = {"",    "s",    "0s",   "-1s",  "+1s", " 1s", "1s ", "1",  "1 s", "1ss",
					  "1ms", "1S",   "1y",   "1.5h", "0x1s", "1e3s", "h1",  "1sm", "99999999999999999999s"};
	int64_t v = UNTOUCHED;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(custode_duration_parse(bad[i], &v), -EINVAL, "\"%s\" accepted", bad[i]);
	cr_expect_eq(custode_duration_parse(NULL, &v), -EINVAL);
	/* at most 10 years (3660 days) */
	cr_expect_eq(custode_duration_parse("3661d", &v), -ERANGE);
	cr_expect_eq(custode_duration_parse("316224001s", &v), -ERANGE);
	cr_expect_eq(custode_duration_parse("9223372036854775807w", &v), -ERANGE);
	cr_expect_eq(v, UNTOUCHED, "output written on failure");
}

/* What every output prints (docs/output.md): six digits, always, from nanoseconds or whole seconds. */
Test(util_time, show_one_form)
{
	char buf[CUSTODE_TIME_LEN];
	int64_t sec;

	cr_expect_str_eq(custode_time_show(WALL_2026 * NS + 123456789, buf, sizeof(buf)), "2026-01-01T00:00:00.123456Z");
	cr_expect_str_eq(custode_time_show(WALL_2026 * NS, buf, sizeof(buf)), "2026-01-01T00:00:00.000000Z");
	cr_expect_str_eq(custode_time_show(-1, buf, sizeof(buf)), "1969-12-31T23:59:59.999999Z");
	cr_expect_str_eq(custode_time_show_sec(WALL_2026 + 36000 + 61, buf, sizeof(buf)), "2026-01-01T10:01:01.000000Z");
	cr_expect_str_eq(custode_time_show_sec(0, buf, sizeof(buf)), "1970-01-01T00:00:00.000000Z");
	cr_expect_str_eq(custode_time_show_sec(253402300799, buf, sizeof(buf)), "9999-12-31T23:59:59.000000Z",
			 "seconds past 2262: no overflow through nanoseconds");
	cr_expect_str_eq(custode_time_show_sec(INT64_MAX, buf, sizeof(buf)), "@9223372036854775807");
	/* the same length whatever the source, and the parser takes it back */
	cr_expect_eq(strlen(custode_time_show_sec(1709251199, buf, sizeof(buf))), 27);
	cr_assert_eq(custode_time_parse(buf, CUSTODE_TIME_SHOW_DIGITS, &sec, NULL), 0, "%s", buf);
	cr_expect_eq(sec, 1709251199);
}
