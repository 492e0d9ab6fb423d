// SPDX-License-Identifier: Apache-2.0
/* Strict base64 for DSSE envelopes: standard or URL-safe, canonical only. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "bundle/base64.h"

static void decodes(const char *in, const void *want, size_t want_len)
{
	uint8_t *out = NULL;
	size_t len = 0;
	const char *what = NULL;

	cr_assert_eq(custode_b64_decode(in, strlen(in), &out, &len, &what, NULL), 0, "\"%s\": %s", in,
		     what ? what : "");
	cr_assert_eq(len, want_len, "\"%s\": %zu bytes, want %zu", in, len, want_len);
	cr_assert(memcmp(out, want, len) == 0, "\"%s\": wrong bytes", in);
	free(out);
}

static void refused(const char *in, const char *word)
{
	uint8_t *out = (uint8_t *)"sentinel";
	size_t len = 12345, where = 0;
	const char *what = NULL;

	cr_assert_eq(custode_b64_decode(in, strlen(in), &out, &len, &what, &where), -EINVAL, "\"%s\" accepted", in);
	cr_assert_str_eq((char *)out, "sentinel", "out written on failure");
	cr_assert_eq(len, 12345);
	cr_assert_not_null(what);
	if (word)
		cr_assert_not_null(strstr(what, word), "\"%s\": \"%s\" lacks \"%s\"", in, what, word);
}

Test(bundle_b64, rfc4648_vectors)
{
	/* RFC 4648 section 10 */
	decodes("", "", 0);
	decodes("Zg==", "f", 1);
	decodes("Zm8=", "fo", 2);
	decodes("Zm9v", "foo", 3);
	decodes("Zm9vYg==", "foob", 4);
	decodes("Zm9vYmE=", "fooba", 5);
	decodes("Zm9vYmFy", "foobar", 6);
}

Test(bundle_b64, both_alphabets)
{
	static const uint8_t bin[] = {0xfb, 0xff, 0xbf, 0xfe};
	decodes("+/+//g==", bin, 4);
	decodes("-_-__g==", bin, 4);
	decodes("AA==", "\0", 1);
}

Test(bundle_b64, refusals)
{
	refused("Zg", "multiple of 4");          /* padding missing */
	refused("Zg=", "multiple of 4");         /* truncated padding */
	refused("Zm9vY", "multiple of 4");       /* truncated */
	refused("Zg===", "multiple of 4");
	refused("Z===", "padding");              /* 3 pad chars */
	refused("Zg==Zg==", "padding");          /* padding in the middle */
	refused("=Zg=", "padding");
	refused("Zm9v\n", "multiple of 4");
	refused("Zm 9", "alphabet");             /* whitespace */
	refused("Zm9v\nYmFy", "multiple of 4");
	refused("Zm9*", "alphabet");
	refused("+/-_", "mixed");                /* both alphabets */
	refused("Zh==", "trailing bits");        /* 'h' leaves non-zero low bits: "Zg==" is the encoding */
	refused("Zm9=", "trailing bits");
	refused("Zm8=Zm8=", "padding");
}

Test(bundle_b64, nul_in_input_refused)
{
	uint8_t *out = NULL;
	size_t len = 0;
	cr_assert_eq(custode_b64_decode("Zm\0v", 4, &out, &len, NULL, NULL), -EINVAL);
}

Test(bundle_b64, encode_round_trip)
{
	uint8_t buf[300];

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 37 + 11);
	for (size_t n = 0; n <= sizeof(buf); n += 7) {
		for (int url = 0; url < 2; url++) {
			char *s = custode_b64_encode(buf, n, url);
			uint8_t *out;
			size_t len;

			cr_assert_not_null(s);
			cr_assert_eq(strlen(s) % 4, 0);
			cr_assert_eq(custode_b64_decode(s, strlen(s), &out, &len, NULL, NULL), 0);
			cr_assert_eq(len, n);
			cr_assert(memcmp(out, buf, n) == 0);
			free(out);
			free(s);
		}
	}
}
