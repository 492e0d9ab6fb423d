// SPDX-License-Identifier: Apache-2.0
/*
 * RFC 8785 canonicalization: the RFC's own examples, ECMAScript number
 * formatting checked against V8 for 5,000 doubles, and 300 random documents
 * checked against the `canonicalize` package (vectors/ made by
 * selftests/interop/gen-vectors.mjs).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>
#include <jansson.h>

#include "bundle/jcs.h"
#include "vectors/es_numbers.h"
#include "vectors/jcs_cases.h"

static char *canon(const char *text)
{
	json_t *v = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	char err[200] = "", *out = NULL;
	size_t len = 0;

	cr_assert_not_null(v, "not JSON: %s", text);
	cr_assert_eq(custode_jcs(v, &out, &len, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(strlen(out), len);
	json_decref(v);
	return out;
}

static void canon_is(const char *text, const char *want)
{
	char *got = canon(text);
	cr_assert_str_eq(got, want, "for %s", text);
	free(got);
}

/* RFC 8785 section 3.2.2 */
Test(bundle_jcs, rfc8785_sample)
{
	canon_is("{\n  \"numbers\": [333333333.33333329, 1E30, 4.50,\n              2e-3, 0.000000000000000000000000001],\n"
		 "  \"string\": \"\\u20ac$\\u000F\\u000aA'\\u0042\\u0022\\u005c\\\\\\\"\\/\",\n"
		 "  \"literals\": [null, true, false]\n}",
		 "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],"
		 "\"string\":\"\xe2\x82\xac$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}");
}

/* RFC 8785 section 3.2.3: property order by UTF-16 code units (the emoji sorts before U+FB33). */
Test(bundle_jcs, rfc8785_sorting)
{
	canon_is("{\"\\u20ac\": \"Euro Sign\", \"\\r\": \"Carriage Return\", \"\\ufb33\": \"Hebrew Letter Dalet With "
		 "Dagesh\", \"1\": \"One\", \"\\ud83d\\ude00\": \"Emoji: Grinning Face\", \"\\u0080\": \"Control\", "
		 "\"\\u00f6\": \"Latin Small Letter O With Diaeresis\"}",
		 "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\xc2\x80\":\"Control\",\"\xc3\xb6\":\"Latin Small Letter O "
		 "With Diaeresis\",\"\xe2\x82\xac\":\"Euro Sign\",\"\xf0\x9f\x98\x80\":\"Emoji: Grinning "
		 "Face\",\"\xef\xac\xb3\":\"Hebrew Letter Dalet With Dagesh\"}");
}

Test(bundle_jcs, nested_and_empty)
{
	canon_is("{ \"b\" : [ 1 , { \"z\":{}, \"a\":[] } ], \"a\" : \"\" }", "{\"a\":\"\",\"b\":[1,{\"a\":[],\"z\":{}}]}");
	canon_is("[]", "[]");
	canon_is("{\"a\":-0.0,\"b\":-0,\"c\":1.0,\"d\":1e2,\"e\":0.1}", "{\"a\":0,\"b\":0,\"c\":1,\"d\":100,\"e\":0.1}");
	/* only the required escapes: DEL, U+2028 and '/' stay literal */
	canon_is("[\"\\u007f\\u2028\\/\\b\\f\\t\\u0001\"]", "[\"\x7f\xe2\x80\xa8/\\b\\f\\t\\u0001\"]");
}

/* Appendix B and 5,000 more: every double prints as V8 prints it. */
Test(bundle_jcs, es_number_tostring)
{
	size_t n = sizeof(es_numbers) / sizeof(es_numbers[0]);

	cr_assert_gt(n, 4000);
	for (size_t i = 0; i < n; i++) {
		double d;
		char buf[40];
		memcpy(&d, &es_numbers[i].bits, sizeof(d));
		cr_assert_eq(custode_jcs_format_number(d, buf, sizeof(buf)), 0);
		cr_assert_str_eq(buf, es_numbers[i].text, "bits %016llx", (unsigned long long)es_numbers[i].bits);
	}
}

Test(bundle_jcs, number_edge_cases)
{
	char buf[40];

	cr_assert_eq(custode_jcs_format_number(1.0 / 0.0, buf, sizeof(buf)), -EINVAL);
	cr_assert_eq(custode_jcs_format_number(0.0 / 0.0, buf, sizeof(buf)), -EINVAL);
	cr_assert_eq(custode_jcs_format_number(-1.7976931348623157e308, buf, 10), -ENOSPC);
	cr_assert_eq(custode_jcs_format_number(0.5, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "0.5");
}

Test(bundle_jcs, random_documents_match_canonicalize)
{
	size_t n = sizeof(jcs_cases) / sizeof(jcs_cases[0]);

	cr_assert_eq(n, 300);
	for (size_t i = 0; i < n; i++)
		canon_is(jcs_cases[i].input, jcs_cases[i].canonical);
}

/* Integers beyond 2^53 would canonicalize to another number: refused, not digested. */
Test(bundle_jcs, big_integers_refused)
{
	json_t *ok = json_loads("[9007199254740992, -9007199254740992]", 0, NULL);
	json_t *big = json_loads("{\"memoryBytes\": 9007199254740993}", 0, NULL);
	char err[200] = "", *out = (char *)"untouched";
	size_t len = 0;

	cr_assert_eq(custode_jcs(ok, &out, &len, err, sizeof(err)), 0);
	cr_assert_str_eq(out, "[9007199254740992,-9007199254740992]");
	free(out);
	out = (char *)"untouched";
	cr_assert_eq(custode_jcs(big, &out, &len, err, sizeof(err)), -ERANGE);
	cr_assert_str_eq(out, "untouched");
	cr_assert_not_null(strstr(err, "9007199254740993"), "%s", err);
	json_decref(ok);
	json_decref(big);
	/* a real is a double already: JCS prints it even where its form looks like a big integer */
	canon_is("[3870329030790611610.3, 1e300]", "[3870329030790611500,1e+300]"); /* as V8 prints them */
}

Test(bundle_jcs, sha256_of_canonical_form)
{
	json_t *v = json_loads("{ \"b\": [true], \"a\": 1.0 }", 0, NULL);
	char d[72];

	cr_assert_eq(custode_jcs_sha256(v, d, NULL, 0), 0);
	/* printf '{"a":1,"b":[true]}' | sha256sum */
	cr_assert_str_eq(d, "sha256:90eddf64b875cb5fa184bb12503cc7309b6ce21b175521a80bd8d83082bae604");
	json_decref(v);
}

Test(bundle_jcs, depth_scan)
{
	char *deep = malloc(20001);

	cr_assert_eq(custode_json_depth("{}", 2, 64), 1);
	cr_assert_eq(custode_json_depth("[[],[[]]]", 9, 64), 3);
	cr_assert_eq(custode_json_depth("\"[[[[\"", 6, 64), 0);                    /* brackets inside a string */
	cr_assert_eq(custode_json_depth("[\"\\\"[[[\"]", 9, 64), 1);               /* an escaped quote does not end it */
	cr_assert_eq(custode_json_depth("[\"\\\\\",[[]]]", 11, 64), 3);           /* an escaped backslash does */
	cr_assert_eq(custode_json_depth("]]]][", 5, 64), 1);                      /* malformed: no underflow */
	for (int i = 0; i < 10000; i++) {
		deep[i] = '[';
		deep[10000 + i] = ']';
	}
	cr_assert_eq(custode_json_depth(deep, 20000, 64), 65);
	cr_assert_eq(custode_json_depth(deep, 20000, 20000), 10000);
	free(deep);
}
