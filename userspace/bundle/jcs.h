/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RFC 8785 JSON Canonicalization Scheme (JCS), over jansson values, and the
 * byte-level JSON depth scan that runs before any JSON reaches jansson.
 *
 * JCS is defined on I-JSON values: numbers are IEEE 754 doubles, printed as
 * ECMAScript's Number::toString prints them. jansson keeps integers as 64-bit
 * integers, so an integer beyond +-2^53 would canonicalize to a different
 * number than the one the policy parser reads; such values are refused
 * (-ERANGE) rather than given a digest that two different documents share.
 */
#ifndef CUSTODE_BUNDLE_JCS_H
#define CUSTODE_BUNDLE_JCS_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

/* Largest integer magnitude JCS represents exactly (2^53). */
#define CUSTODE_JCS_MAX_INT 9007199254740992LL
/* Nesting depth past which canonicalization refuses (the callers cap lower, before parsing). */
#define CUSTODE_JCS_MAX_DEPTH 512

/*
 * Canonical form of v. On success *out is malloc'd and NUL-terminated, *len
 * its length. Errors: -ERANGE (an integer JCS can't represent; err says
 * which), -EINVAL (NaN or infinity, or a value that is not JSON), -ELOOP
 * (deeper than CUSTODE_JCS_MAX_DEPTH), -ENOMEM. err (may be NULL) receives a
 * message on failure. Out-params untouched on failure.
 */
int custode_jcs(const json_t *v, char **out, size_t *len, char *err, size_t errlen);

/* sha256 of the canonical form, as "sha256:<64 lowercase hex>" into digest[72]. */
int custode_jcs_sha256(const json_t *v, char digest[72], char *err, size_t errlen);

/*
 * ECMAScript Number::toString(d) (ECMA-262, Number::toString with radix 10):
 * the shortest decimal that reads back as d, closest to d on ties of length.
 * -EINVAL for NaN/infinity, -ENOSPC if buf (32 bytes suffice) is too small.
 */
int custode_jcs_format_number(double d, char *buf, size_t len);

/*
 * Deepest nesting of arrays/objects in the JSON text s[0..len), found by a
 * scan that skips string contents (escapes included), without parsing.
 * Stops early and returns max + 1 once max is exceeded. Malformed text gives
 * some number; the parser refuses it afterwards.
 */
unsigned custode_json_depth(const char *s, size_t len, unsigned max);

#endif
