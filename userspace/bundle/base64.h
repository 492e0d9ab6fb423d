/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Base64 (RFC 4648) for DSSE envelopes. Decoding is strict: one alphabet per
 * string (standard "+/" or URL-safe "-_"), the padding RFC 4648 section 3.2
 * requires (length a multiple of 4, '=' only at the end), zero trailing bits
 * (section 3.5), no whitespace. Anything else is refused, so one byte string
 * has exactly one accepted encoding per alphabet.
 */
#ifndef CUSTODE_BUNDLE_BASE64_H
#define CUSTODE_BUNDLE_BASE64_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Decode in[0..len). On success *out (malloc'd, NUL-terminated for
 * convenience, may hold NULs) and *out_len are set; on failure they are
 * untouched, -EINVAL is returned and *what (if non-NULL) names the defect
 * with its byte offset written to *where. -ENOMEM on allocation failure.
 */
int custode_b64_decode(const char *in, size_t len, uint8_t **out, size_t *out_len, const char **what, size_t *where);

/* Encode, padded, standard or URL-safe alphabet. NULL on allocation failure or overflow. */
char *custode_b64_encode(const void *in, size_t len, bool url_safe);

#endif
