/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Wall-clock times as RFC 3339 UTC text and durations ("90s", "15m"): the
 * one parser and formatter for policies (notBefore/notAfter), bundles and
 * their state files, event records and `events --since`, receipts, every
 * command's output (custode_time_show*) and the daemon's logs. Pure
 * functions; custode_mono_ms() alone reads a clock.
 */
#ifndef CUSTODE_UTIL_TIME_H
#define CUSTODE_UTIL_TIME_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/* Room for the longest text custode_time_format*() writes ("YYYY-MM-DDTHH:MM:SS.123456789Z"). */
#define CUSTODE_TIME_LEN 32
/* custode_time_parse(): a fraction of any length (digits past the ninth are dropped). */
#define CUSTODE_TIME_FRAC_ANY UINT_MAX

/*
 * "YYYY-MM-DDTHH:MM:SS[.F]Z": UTC ("Z" only, no offsets), a date that exists
 * (no 2026-02-30), no leap second. F is one or more digits, at most
 * max_frac_digits of them (0: no fraction allowed). *sec gets the seconds
 * since the epoch, *frac_ns (if not NULL) the fraction in nanoseconds.
 * 0, or -EINVAL with the outputs untouched.
 */
int custode_time_parse(const char *s, unsigned max_frac_digits, int64_t *sec, int64_t *frac_ns);
/*
 * The same with a fraction of at most 9 digits, as nanoseconds since the
 * epoch: -ERANGE for a date an int64_t of nanoseconds cannot hold (outside
 * 1677-09-22 .. 2262-04-10).
 */
int custode_time_parse_ns(const char *s, int64_t *wall_ns);

/* "YYYY-MM-DDTHH:MM:SSZ" into buf; "@SEC" for a time the calendar functions cannot represent. Returns buf. */
const char *custode_time_format(int64_t sec, char *buf, size_t len);
/*
 * "YYYY-MM-DDTHH:MM:SS.FZ" with frac_digits (1..9) digits of fraction,
 * truncated, not rounded; before 1970 the second is floored so the fraction
 * stays positive. Returns buf.
 */
const char *custode_time_format_ns(int64_t wall_ns, unsigned frac_digits, char *buf, size_t len);

/*
 * The one form of every timestamp custode shows a user (docs/output.md):
 * RFC 3339 UTC with exactly CUSTODE_TIME_SHOW_DIGITS fraction digits,
 * truncated — "2026-12-03T18:25:22.854112Z" — whatever the source's
 * precision. Events, receipts, `runs`, `engine status`, `bundle inspect` and
 * `bundle verify` all print through these two. Return buf.
 */
#define CUSTODE_TIME_SHOW_DIGITS 6
const char *custode_time_show(int64_t wall_ns, char *buf, size_t len);
/* The same for a time known to the second (a policy's notBefore, a run's start): ".000000". */
const char *custode_time_show_sec(int64_t sec, char *buf, size_t len);

/*
 * "90s", "15m", "12h", "30d", "2w": a positive integer and one unit, at most
 * 10 years, into seconds. -EINVAL for anything else, -ERANGE past 10 years.
 */
int custode_duration_parse(const char *s, int64_t *seconds);

/* CLOCK_MONOTONIC in milliseconds: the clock of every deadline (waits, polls, timeouts). */
long long custode_mono_ms(void);

#endif
