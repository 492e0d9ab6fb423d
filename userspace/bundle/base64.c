// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>

#include "bundle/base64.h"

static const char std_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char url_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

enum { B64_STD = 1, B64_URL = 2 };

/* 6-bit value of c, or -1; *which gets the alphabet(s) c belongs to. */
static int b64_value(unsigned char c, int *which)
{
	*which = B64_STD | B64_URL;
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '/') {
		*which = B64_STD;
		return c == '+' ? 62 : 63;
	}
	if (c == '-' || c == '_') {
		*which = B64_URL;
		return c == '-' ? 62 : 63;
	}
	*which = 0;
	return -1;
}

static int fail(const char **what, size_t *where, const char *msg, size_t off)
{
	if (what)
		*what = msg;
	if (where)
		*where = off;
	return -EINVAL;
}

int custode_b64_decode(const char *in, size_t len, uint8_t **out, size_t *out_len, const char **what, size_t *where)
{
	size_t pad = 0, data_len, n = 0;
	int alphabet = B64_STD | B64_URL;
	uint32_t acc = 0;
	unsigned bits = 0;
	uint8_t *buf;

	if (len % 4)
		return fail(what, where, "length is not a multiple of 4 (truncated, or padding missing)", len);
	if (len && in[len - 1] == '=')
		pad = len >= 2 && in[len - 2] == '=' ? 2 : 1;
	data_len = len - pad;
	/* Check every character before allocating: the common refusal costs nothing. */
	for (size_t i = 0; i < data_len; i++) {
		int which;
		if (b64_value((unsigned char)in[i], &which) < 0)
			return fail(what, where, in[i] == '=' ? "padding before the end" : "character outside the base64 alphabet",
				    i);
		alphabet &= which;
		if (!alphabet)
			return fail(what, where, "standard and URL-safe alphabets mixed", i);
	}
	buf = malloc(data_len / 4 * 3 + 3 + 1);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < data_len; i++) {
		int which;
		acc = (acc << 6) | (uint32_t)b64_value((unsigned char)in[i], &which);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[n++] = (uint8_t)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	/* 2 data chars + "==" leave 4 bits, 3 + "=" leave 2: they must be zero. */
	if (acc != 0) {
		free(buf);
		return fail(what, where, "non-zero trailing bits (not the canonical encoding)", data_len ? data_len - 1 : 0);
	}
	buf[n] = 0;
	*out = buf;
	*out_len = n;
	return 0;
}

char *custode_b64_encode(const void *in, size_t len, bool url_safe)
{
	const char *a = url_safe ? url_alphabet : std_alphabet;
	const uint8_t *p = in;
	size_t out_len, o = 0, i;
	char *out;

	if (len > (SIZE_MAX - 1) / 4 * 3 - 3)
		return NULL;
	out_len = (len + 2) / 3 * 4;
	out = malloc(out_len + 1);
	if (!out)
		return NULL;
	for (i = 0; i + 3 <= len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		out[o++] = a[v >> 18];
		out[o++] = a[(v >> 12) & 63];
		out[o++] = a[(v >> 6) & 63];
		out[o++] = a[v & 63];
	}
	if (len - i == 1) {
		uint32_t v = (uint32_t)p[i] << 16;
		out[o++] = a[v >> 18];
		out[o++] = a[(v >> 12) & 63];
		out[o++] = '=';
		out[o++] = '=';
	} else if (len - i == 2) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
		out[o++] = a[v >> 18];
		out[o++] = a[(v >> 12) & 63];
		out[o++] = a[(v >> 6) & 63];
		out[o++] = '=';
	}
	out[o] = 0;
	return out;
}
