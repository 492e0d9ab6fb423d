// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/time.h"

#define NS_PER_SEC 1000000000LL

/* The n digits at s as a number, or -1 if one of them is not a digit. */
static int digits(const char *s, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

static bool leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/*
 * Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (Howard
 * Hinnant's days_from_civil). Computed rather than left to strptime/timegm:
 * those take 2026-02-30 and normalise it into March, and depend on TZ.
 */
static int64_t days_from_civil(int y, int m, int d)
{
	int64_t era;
	int yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (int)(y - era * 400);
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

int custode_time_parse(const char *s, unsigned max_frac_digits, int64_t *sec, int64_t *frac_ns)
{
	static const char shape[] = "....-..-..T..:..:..";
	static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int year, mon, day, hour, min, secs;
	int64_t frac = 0;
	const char *p;

	if (!s || strnlen(s, sizeof(shape)) < sizeof(shape) - 1)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(shape) - 1; i++)
		if (shape[i] != '.' && s[i] != shape[i])
			return -EINVAL;
	year = digits(s, 4);
	mon = digits(s + 5, 2);
	day = digits(s + 8, 2);
	hour = digits(s + 11, 2);
	min = digits(s + 14, 2);
	secs = digits(s + 17, 2);
	if (year < 0 || mon < 1 || mon > 12 || day < 1 || hour < 0 || hour > 23 || min < 0 || min > 59 || secs < 0 ||
	    secs > 59 || day > mdays[mon - 1] + (mon == 2 && leap(year)))
		return -EINVAL;
	p = s + sizeof(shape) - 1;
	if (*p == '.') {
		unsigned n = 0;

		for (p++; *p >= '0' && *p <= '9'; p++, n++)
			if (n < 9)
				frac = frac * 10 + (*p - '0');
		if (n == 0 || n > max_frac_digits)
			return -EINVAL;
		for (; n < 9; n++)
			frac *= 10;
	}
	if (strcmp(p, "Z") != 0)
		return -EINVAL;
	*sec = days_from_civil(year, mon, day) * 86400 + hour * 3600 + min * 60 + secs;
	if (frac_ns)
		*frac_ns = frac;
	return 0;
}

int custode_time_parse_ns(const char *s, int64_t *wall_ns)
{
	int64_t sec, frac;

	if (custode_time_parse(s, 9, &sec, &frac) < 0)
		return -EINVAL;
	/* nanoseconds in an int64_t: 1677-09-21 .. 2262-04-11 */
	if (sec < INT64_MIN / NS_PER_SEC + 1 || sec > INT64_MAX / NS_PER_SEC - 1)
		return -ERANGE;
	*wall_ns = sec * NS_PER_SEC + frac;
	return 0;
}

/* sec and frac_digits of frac_ns (0: none) as RFC 3339 UTC. */
static const char *format(int64_t sec, int64_t frac_ns, unsigned frac_digits, char *buf, size_t len)
{
	time_t t = (time_t)sec;
	struct tm tm;

	if (!gmtime_r(&t, &tm)) {
		snprintf(buf, len, "@%lld", (long long)sec);
		return buf;
	}
	if (!frac_digits) {
		snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
			 tm.tm_hour, tm.tm_min, tm.tm_sec);
		return buf;
	}
	for (unsigned i = frac_digits; i < 9; i++)
		frac_ns /= 10;
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%0*lldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min, tm.tm_sec, (int)frac_digits, (long long)frac_ns);
	return buf;
}

const char *custode_time_format(int64_t sec, char *buf, size_t len)
{
	return format(sec, 0, 0, buf, len);
}

const char *custode_time_format_ns(int64_t wall_ns, unsigned frac_digits, char *buf, size_t len)
{
	int64_t sec = wall_ns / NS_PER_SEC, frac = wall_ns % NS_PER_SEC;

	if (frac < 0) { /* before 1970: floor, so the fraction stays positive */
		frac += NS_PER_SEC;
		sec--;
	}
	if (frac_digits < 1)
		frac_digits = 1;
	if (frac_digits > 9)
		frac_digits = 9;
	return format(sec, frac, frac_digits, buf, len);
}

const char *custode_time_show(int64_t wall_ns, char *buf, size_t len)
{
	return custode_time_format_ns(wall_ns, CUSTODE_TIME_SHOW_DIGITS, buf, len);
}

const char *custode_time_show_sec(int64_t sec, char *buf, size_t len)
{
	/* not through nanoseconds: a second count past 2262 would overflow them */
	return format(sec, 0, CUSTODE_TIME_SHOW_DIGITS, buf, len);
}

int custode_duration_parse(const char *s, int64_t *seconds)
{
	static const struct {
		char unit;
		int64_t secs;
	} units[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}, {'w', 7 * 86400}};
	const int64_t max = 10LL * 366 * 86400;
	char *end;
	long long n;

	if (!s || s[0] < '0' || s[0] > '9')
		return -EINVAL;
	errno = 0;
	n = strtoll(s, &end, 10);
	if (errno || n <= 0 || end[0] == 0 || end[1] != 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (end[0] != units[i].unit)
			continue;
		if (n > max / units[i].secs)
			return -ERANGE;
		*seconds = n * units[i].secs;
		return 0;
	}
	return -EINVAL;
}

long long custode_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}
