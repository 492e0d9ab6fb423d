/* SPDX-License-Identifier: Apache-2.0 */
/* Times and durations on the bundle command line and in state files. */
#ifndef CUSTODE_BUNDLE_TIMEUTIL_H
#define CUSTODE_BUNDLE_TIMEUTIL_H

#include <stddef.h>
#include <stdint.h>

/* RFC 3339 UTC, "YYYY-MM-DDTHH:MM:SSZ", into buf (21 bytes suffice). */
const char *custode_time_format(int64_t t, char *buf, size_t len);
/* Parse "YYYY-MM-DDTHH:MM:SSZ" (exactly; no fraction, no offset). -EINVAL otherwise. */
int custode_time_parse(const char *s, int64_t *out);
/* "90s", "15m", "12h", "30d", "2w": a positive integer and one unit; at most 10 years. -EINVAL otherwise. */
int custode_duration_parse(const char *s, int64_t *seconds);

#endif
