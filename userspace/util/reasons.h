/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CUSTODE_UTIL_REASONS_H
#define CUSTODE_UTIL_REASONS_H

#include <stdarg.h>
#include "custode/reasons.h"

/* Stable name of a reason code ("file.read.denied"), or NULL if unknown. */
const char *custode_reason_name(int reason);
/* Description of a reason code, or NULL if unknown. */
const char *custode_reason_desc(int reason);
/* Reason code for a stable name, or -1 if unknown. */
int custode_reason_from_name(const char *name);

/* One code of include/custode/reasons.h. */
struct custode_reason_info {
	int code;
	const char *name;
	const char *desc;
};

/* Every code, in the order of include/custode/reasons.h (engine's, then userspace's); *n of them. */
const struct custode_reason_info *custode_reason_list(size_t *n);

/*
 * Why an operation was refused: a stable reason code and the specific cause.
 * Library code fills one in and returns a negative errno; the CLI prints it.
 */
struct custode_refusal {
	int reason;
	char detail[512];
};

/* Fill *why (if non-NULL) and return -err (err > 0), for `return custode_refuse(...)`. */
int custode_refuse(struct custode_refusal *why, int err, int reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
