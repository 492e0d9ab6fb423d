// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bundle/timeutil.h"

const char *custode_time_format(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, len, "@%lld", (long long)t);
	return buf;
}

int custode_time_parse(const char *s, int64_t *out)
{
	struct tm tm = {0};
	const char *end;

	if (strlen(s) != 20)
		return -EINVAL;
	for (int i = 0; i < 20; i++) {
		bool digit = i != 4 && i != 7 && i != 10 && i != 13 && i != 16 && i != 19;
		if (digit ? !isdigit((unsigned char)s[i]) : s[i] != "....-..-..T..:..:..Z"[i])
			return -EINVAL;
	}
	end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!end || *end)
		return -EINVAL;
	/* strptime accepts Feb 31; timegm would roll it over: refuse instead. */
	{
		struct tm check = tm;
		time_t t = timegm(&check);
		if (check.tm_mday != tm.tm_mday || check.tm_mon != tm.tm_mon || tm.tm_sec > 59)
			return -EINVAL;
		*out = (int64_t)t;
	}
	return 0;
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

	if (!isdigit((unsigned char)s[0]))
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
