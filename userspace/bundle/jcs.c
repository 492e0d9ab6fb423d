// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle/crypto.h"
#include "bundle/jcs.h"

struct sbuf {
	char *p;
	size_t len, cap;
	int err;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->err)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *np;
		while (cap < b->len + n + 1) {
			if (cap > SIZE_MAX / 2) {
				b->err = -ENOMEM;
				return;
			}
			cap *= 2;
		}
		np = realloc(b->p, cap);
		if (!np) {
			b->err = -ENOMEM;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static void sb_str(struct sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

/* ---- numbers: ECMAScript Number::toString ---- */

/* Decimal significand digits and exponent of a "%.*e" rendering: value = 0.d1d2..dk * 10^n. */
struct decimal {
	char d[24];
	int k; /* digits */
	int n; /* position of the decimal point */
};

static void from_e_format(const char *s, struct decimal *dec)
{
	const char *e = strchr(s, 'e');

	dec->k = 0;
	for (const char *c = s; c < e; c++)
		if (*c >= '0' && *c <= '9')
			dec->d[dec->k++] = *c;
	dec->d[dec->k] = 0;
	dec->n = atoi(e + 1) + 1;
}

static double decimal_value(const struct decimal *dec)
{
	char buf[48];

	snprintf(buf, sizeof(buf), "0.%se%d", dec->d, dec->n);
	return strtod(buf, NULL);
}

/* The next k-digit decimal above (up) or below dec, on the k-digit grid at that magnitude. */
static void decimal_step(struct decimal *dec, bool up)
{
	int i = dec->k - 1;

	if (up) {
		while (i >= 0 && dec->d[i] == '9')
			dec->d[i--] = '0';
		if (i >= 0) {
			dec->d[i]++;
		} else { /* 99..9 + 1 = 100..0 at the next power of ten */
			dec->d[0] = '1';
			dec->n++;
		}
		return;
	}
	while (i >= 0 && dec->d[i] == '0')
		dec->d[i--] = '9';
	dec->d[i]--; /* the first digit is never 0, so i >= 0 here */
	if (dec->d[0] == '0') {
		/* 10..0 - 1: below a power of ten the k-digit grid is ten times finer: 99..9 */
		memset(dec->d, '9', (size_t)dec->k);
		dec->n--;
	}
}

int custode_jcs_format_number(double d, char *buf, size_t len)
{
	struct decimal dec = {0};
	char tmp[48], out[48];
	size_t o = 0;
	double a;
	bool neg;

	if (!isfinite(d))
		return -EINVAL;
	if (d == 0) { /* +0 and -0 both print "0" */
		if (len < 2)
			return -ENOSPC;
		strcpy(buf, "0");
		return 0;
	}
	neg = d < 0;
	a = fabs(d);
	/*
	 * The shortest digit string k that reads back as a. For each length the
	 * correctly rounded candidate (glibc printf rounds exactly) is the
	 * closest k-digit decimal; when it does not read back, the neighbour on
	 * the other side of a still can, because the rounding interval of a
	 * power of two is narrower below than above it.
	 */
	for (int k = 1; k <= 17; k++) {
		double back;

		snprintf(tmp, sizeof(tmp), "%.*e", k - 1, a);
		from_e_format(tmp, &dec);
		back = decimal_value(&dec);
		if (back == a)
			break;
		decimal_step(&dec, back < a);
		if (decimal_value(&dec) == a)
			break;
		if (k == 17) { /* unreachable: 17 digits always round-trip */
			snprintf(tmp, sizeof(tmp), "%.16e", a);
			from_e_format(tmp, &dec);
		}
	}
	while (dec.k > 1 && dec.d[dec.k - 1] == '0')
		dec.d[--dec.k] = 0;

	if (neg)
		out[o++] = '-';
	if (dec.k <= dec.n && dec.n <= 21) {
		memcpy(out + o, dec.d, (size_t)dec.k);
		o += (size_t)dec.k;
		for (int i = dec.k; i < dec.n; i++)
			out[o++] = '0';
	} else if (0 < dec.n && dec.n <= 21) {
		memcpy(out + o, dec.d, (size_t)dec.n);
		o += (size_t)dec.n;
		out[o++] = '.';
		memcpy(out + o, dec.d + dec.n, (size_t)(dec.k - dec.n));
		o += (size_t)(dec.k - dec.n);
	} else if (-6 < dec.n && dec.n <= 0) {
		out[o++] = '0';
		out[o++] = '.';
		for (int i = 0; i < -dec.n; i++)
			out[o++] = '0';
		memcpy(out + o, dec.d, (size_t)dec.k);
		o += (size_t)dec.k;
	} else {
		int e = dec.n - 1;
		out[o++] = dec.d[0];
		if (dec.k > 1) {
			out[o++] = '.';
			memcpy(out + o, dec.d + 1, (size_t)(dec.k - 1));
			o += (size_t)(dec.k - 1);
		}
		o += (size_t)snprintf(out + o, sizeof(out) - o, "e%c%d", e < 0 ? '-' : '+', e < 0 ? -e : e);
	}
	out[o] = 0;
	if (o + 1 > len)
		return -ENOSPC;
	memcpy(buf, out, o + 1);
	return 0;
}

/* ---- strings ---- */

static void put_string(struct sbuf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t run = 0;

	sb_add(b, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[7];
		const char *e = NULL;

		switch (c) {
		case '"': e = "\\\""; break;
		case '\\': e = "\\\\"; break;
		case '\b': e = "\\b"; break;
		case '\f': e = "\\f"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\t': e = "\\t"; break;
		default:
			if (c < 0x20) {
				snprintf(esc, sizeof(esc), "\\u00%c%c", hex[c >> 4], hex[c & 15]);
				e = esc;
			}
		}
		if (!e)
			continue;
		sb_add(b, s + run, i - run);
		sb_str(b, e);
		run = i + 1;
	}
	sb_add(b, s + run, n - run);
	sb_add(b, "\"", 1);
}

/* ---- object keys in UTF-16 code unit order ---- */

struct u16it {
	const unsigned char *p, *end;
	unsigned pending; /* low surrogate still to emit, or 0 */
};

/* Next UTF-16 code unit of a UTF-8 string, or -1 at its end. Input is valid UTF-8 (jansson checks). */
static long u16_next(struct u16it *it)
{
	unsigned long cp;
	unsigned c;
	int extra;

	if (it->pending) {
		long u = it->pending;
		it->pending = 0;
		return u;
	}
	if (it->p >= it->end)
		return -1;
	c = *it->p++;
	if (c < 0x80)
		return c;
	extra = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : 1;
	cp = c & (0x3fu >> extra);
	for (int i = 0; i < extra && it->p < it->end; i++)
		cp = cp << 6 | (*it->p++ & 0x3fu);
	if (cp < 0x10000)
		return (long)cp;
	cp -= 0x10000;
	it->pending = (unsigned)(0xdc00 | (cp & 0x3ff));
	return (long)(0xd800 | (cp >> 10));
}

static int utf16_cmp(const void *pa, const void *pb)
{
	const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
	struct u16it x = {(const unsigned char *)a, (const unsigned char *)a + strlen(a), 0};
	struct u16it y = {(const unsigned char *)b, (const unsigned char *)b + strlen(b), 0};

	for (;;) {
		long u = u16_next(&x), v = u16_next(&y);
		if (u != v)
			return u < v ? -1 : 1;
		if (u < 0)
			return 0;
	}
}

/* ---- values ---- */

struct jcs_ctx {
	struct sbuf b;
	char *err;
	size_t errlen;
};

static int jcs_fail(struct jcs_ctx *c, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int jcs_fail(struct jcs_ctx *c, int err, const char *fmt, ...)
{
	va_list ap;

	if (c->err && c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err, c->errlen, fmt, ap);
		va_end(ap);
	}
	return err;
}

static int put_value(struct jcs_ctx *c, const json_t *v, unsigned depth)
{
	char num[48];
	int err;

	if (depth > CUSTODE_JCS_MAX_DEPTH)
		return jcs_fail(c, -ELOOP, "nested deeper than %d", CUSTODE_JCS_MAX_DEPTH);
	switch (json_typeof(v)) {
	case JSON_NULL:
		sb_str(&c->b, "null");
		return 0;
	case JSON_TRUE:
		sb_str(&c->b, "true");
		return 0;
	case JSON_FALSE:
		sb_str(&c->b, "false");
		return 0;
	case JSON_INTEGER: {
		json_int_t i = json_integer_value(v);
		if (i > CUSTODE_JCS_MAX_INT || i < -CUSTODE_JCS_MAX_INT)
			return jcs_fail(c, -ERANGE,
					"integer %lld is outside +-2^53, which RFC 8785 (I-JSON) numbers represent exactly",
					(long long)i);
		snprintf(num, sizeof(num), "%lld", (long long)i);
		sb_str(&c->b, num);
		return 0;
	}
	case JSON_REAL:
		if ((err = custode_jcs_format_number(json_real_value(v), num, sizeof(num))))
			return jcs_fail(c, err, "number is not finite");
		sb_str(&c->b, num);
		return 0;
	case JSON_STRING:
		put_string(&c->b, json_string_value(v), json_string_length(v));
		return 0;
	case JSON_ARRAY: {
		size_t i;
		json_t *e;

		sb_add(&c->b, "[", 1);
		json_array_foreach((json_t *)v, i, e) {
			if (i)
				sb_add(&c->b, ",", 1);
			if ((err = put_value(c, e, depth + 1)))
				return err;
		}
		sb_add(&c->b, "]", 1);
		return 0;
	}
	case JSON_OBJECT: {
		size_t n = json_object_size(v), i = 0;
		const char **keys;
		const char *key;
		json_t *e;

		keys = calloc(n ? n : 1, sizeof(*keys));
		if (!keys)
			return -ENOMEM;
		json_object_foreach((json_t *)v, key, e)
			keys[i++] = key;
		qsort(keys, n, sizeof(*keys), utf16_cmp);
		sb_add(&c->b, "{", 1);
		for (i = 0; i < n; i++) {
			if (i)
				sb_add(&c->b, ",", 1);
			put_string(&c->b, keys[i], strlen(keys[i]));
			sb_add(&c->b, ":", 1);
			if ((err = put_value(c, json_object_get(v, keys[i]), depth + 1))) {
				free(keys);
				return err;
			}
		}
		free(keys);
		sb_add(&c->b, "}", 1);
		return 0;
	}
	}
	return jcs_fail(c, -EINVAL, "not a JSON value");
}

int custode_jcs(const json_t *v, char **out, size_t *len, char *err, size_t errlen)
{
	struct jcs_ctx c = {.err = err, .errlen = errlen};
	int r;

	if (!v)
		return jcs_fail(&c, -EINVAL, "no value");
	r = put_value(&c, v, 0);
	if (!r && c.b.err)
		r = jcs_fail(&c, c.b.err, "out of memory");
	if (!r && !c.b.p) /* unreachable: every value prints something */
		r = jcs_fail(&c, -EINVAL, "empty");
	if (r) {
		free(c.b.p);
		return r;
	}
	*out = c.b.p;
	*len = c.b.len;
	return 0;
}

int custode_jcs_sha256(const json_t *v, char digest[72], char *err, size_t errlen)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char *text;
	size_t len;
	int r;

	if ((r = custode_jcs(v, &text, &len, err, errlen)))
		return r;
	if (!EVP_Digest(text, len, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32) {
		free(text);
		if (err && errlen)
			snprintf(err, errlen, "sha256 failed%s%s", *custode_crypto_error() ? ": " : "",
				 custode_crypto_error());
		return -EIO;
	}
	free(text);
	memcpy(digest, "sha256:", 7);
	for (unsigned i = 0; i < 32; i++)
		snprintf(digest + 7 + 2 * i, 3, "%02x", md[i]);
	return 0;
}

unsigned custode_json_depth(const char *s, size_t len, unsigned max)
{
	unsigned depth = 0, deepest = 0;
	bool in_string = false;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (in_string) {
			if (c == '\\')
				i++; /* the escaped character, whatever it is, cannot end the string */
			else if (c == '"')
				in_string = false;
			continue;
		}
		if (c == '"') {
			in_string = true;
		} else if (c == '[' || c == '{') {
			if (++depth > deepest) {
				deepest = depth;
				if (deepest > max)
					return max + 1;
			}
		} else if ((c == ']' || c == '}') && depth) {
			depth--;
		}
	}
	return deepest;
}
