// SPDX-License-Identifier: Apache-2.0
#include <stdio.h>
#include <string.h>

#include "util/reasons.h"

static const struct custode_reason_info reasons[] = {
#define CUSTODE_X_ENTRY(sym, num, name, desc) {num, name, desc},
	CUSTODE_KERNEL_REASONS(CUSTODE_X_ENTRY) CUSTODE_USER_REASONS(CUSTODE_X_ENTRY)
#undef CUSTODE_X_ENTRY
};

static const struct custode_reason_info *find(int code)
{
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (reasons[i].code == code)
			return &reasons[i];
	return NULL;
}

const char *custode_reason_name(int reason)
{
	const struct custode_reason_info *e = find(reason);
	return e ? e->name : NULL;
}

const char *custode_reason_desc(int reason)
{
	const struct custode_reason_info *e = find(reason);
	return e ? e->desc : NULL;
}

const struct custode_reason_info *custode_reason_list(size_t *n)
{
	*n = sizeof(reasons) / sizeof(reasons[0]);
	return reasons;
}

int custode_reason_from_name(const char *name)
{
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (strcmp(reasons[i].name, name) == 0)
			return reasons[i].code;
	return -1;
}

int custode_refuse(struct custode_refusal *why, int err, int reason, const char *fmt, ...)
{
	va_list ap;

	if (why) {
		why->reason = reason;
		va_start(ap, fmt);
		vsnprintf(why->detail, sizeof(why->detail), fmt, ap);
		va_end(ap);
	}
	return err > 0 ? -err : (err < 0 ? err : -1);
}
