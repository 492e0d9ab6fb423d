// SPDX-License-Identifier: Apache-2.0
/*
 * Bundle verification end to end (no state): vectors signed by Node, and
 * every refusal the issue lists, each with its reason code.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <criterion/criterion.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "bundle/base64.h"
#include "bundle/keys.h"
#include "test_bundle_util.h"
#include "vectors/dsse_vectors.h"

#define CONTENT "{\"mode\":\"enforce\",\"filesystem\":[{\"path\":\"/usr\",\"allow\":[\"read\",\"exec\"]}]}"
#define R(x) CUSTODE_REASON_BUNDLE_##x

static struct custode_trust *k1;

static void setup(void)
{
	k1 = t_trust(rfc8032_key1_pub, NULL);
}

static void teardown(void)
{
	custode_trust_free(k1);
}

TestSuite(bundle_verify, .init = setup, .fini = teardown);

/* Node signed it, `canonicalize` computed its contentDigest: custode agrees on every byte. */
Test(bundle_verify, node_vector_ed25519)
{
	struct custode_bundle_info info;
	struct custode_policy *p = NULL;
	struct custode_refusal why = {0};
	unsigned char md[32];
	char want[72];

	cr_assert_eq(custode_bundle_verify(vec_policy_ed25519, strlen(vec_policy_ed25519), k1, T_NOW, &p, &info, &why), 0,
		     "%s: %s", custode_reason_name(why.reason), why.detail);
	cr_assert_str_eq(info.name, "vectors/ed25519");
	cr_assert_eq(info.version, 3);
	cr_assert_str_eq(info.digest, vector_policy_digest);
	cr_assert_eq(info.not_before, 1767225600);  /* 2026-01-01 */
	cr_assert_eq(info.not_after, 2082758400);   /* 2036-01-01 */
	cr_assert_eq(info.verified_at, T_NOW);
	cr_assert_eq(info.n_signers, 1);
	cr_assert_str_eq(info.signers[0].key_id, k1->keys[0].id);
	cr_assert_str_eq(info.signers[0].keyid_hint, "rfc8032-test1");
	EVP_Digest(vector_policy, strlen(vector_policy), md, NULL, EVP_sha256(), NULL);
	strcpy(want, "sha256:");
	for (int i = 0; i < 32; i++)
		sprintf(want + 7 + 2 * i, "%02x", md[i]);
	cr_assert_str_eq(info.payload_sha256, want);
	/* the policy is the signed document */
	cr_assert_str_eq(p->name, "vectors/ed25519");
	cr_assert_eq(p->n_fs, 2);
	cr_assert_str_eq(p->fs[1].path, "${workspace}");
	cr_assert_eq(p->limits.cpu_millis, 1500);
	custode_policy_free(p);
}

Test(bundle_verify, node_vector_p256_and_threshold)
{
	struct custode_trust *p256 = t_trust(dsse_spec_p256_pub, NULL);
	struct custode_trust *two = t_trust(rfc8032_key1_pub, rfc8032_key3_pub, NULL);
	struct custode_refusal why;

	cr_assert_eq(t_verify(vec_policy_p256, p256, &why), 0, "%s", why.detail);
	t_refused(vec_policy_p256, k1, R(SIGNATURE), NULL);
	cr_assert_eq(custode_trust_set_threshold(two, 2, &why), 0);
	cr_assert_eq(t_verify(vec_policy_two_keys, two, &why), 0, "%s", why.detail);
	t_refused(vec_policy_ed25519, two, R(SIGNATURE), "1 of the required 2");
	custode_trust_free(p256);
	custode_trust_free(two);
}

Test(bundle_verify, round_trip)
{
	char *doc = t_doc("t/round", 9, CONTENT, NULL);
	char *env = t_bundle(doc, rfc8032_key1_priv);
	struct custode_bundle_info info;
	struct custode_policy *p = NULL;
	struct custode_refusal why;

	cr_assert_eq(custode_bundle_verify(env, strlen(env), k1, T_NOW, &p, &info, &why), 0, "%s", why.detail);
	cr_assert_eq(info.version, 9);
	cr_assert_eq(p->n_fs, 1);
	/* out-params are optional */
	cr_assert_eq(custode_bundle_verify(env, strlen(env), k1, T_NOW, NULL, NULL, &why), 0);
	custode_policy_free(p);
	free(env);
	free(doc);
}

/* ---- refusals, one per kind ---- */

Test(bundle_verify, forged_signature)
{
	json_t *j = json_loads(vec_policy_ed25519, 0, NULL);
	json_t *sig = json_object_get(json_array_get(json_object_get(j, "signatures"), 0), "sig");
	unsigned char *raw;
	size_t len;
	char *b64, *env;

	cr_assert_eq(custode_b64_decode(json_string_value(sig), json_string_length(sig), &raw, &len, NULL, NULL), 0);
	raw[len / 2] ^= 0x04;
	b64 = custode_b64_encode(raw, len, false);
	json_string_set(sig, b64);
	env = json_dumps(j, 0);
	t_refused(env, k1, R(SIGNATURE), NULL);
	free(env);
	free(b64);
	free(raw);
	json_decref(j);
}

Test(bundle_verify, wrong_key)
{
	struct custode_trust *k2 = t_trust(rfc8032_key2_pub, NULL);
	t_refused(vec_policy_ed25519, k2, R(SIGNATURE), "0 of the required 1");
	custode_trust_free(k2);
}

/* The envelope's payloadType changed after signing: the signature covers it (PAE). */
Test(bundle_verify, swapped_payload_type)
{
	char *env = t_replace(vec_policy_ed25519, "application/vnd.custode.policy+json", "application/vnd.in-toto+json");
	t_refused(env, k1, R(SIGNATURE), NULL);
	free(env);
}

/* A trusted key signed something else: a valid signature, the wrong type. */
Test(bundle_verify, other_payload_type_signed)
{
	char *doc = t_doc("t/type", 1, CONTENT, NULL);
	char *env = t_envelope("application/vnd.in-toto+json", doc, strlen(doc), rfc8032_key1_priv, NULL);
	char *env2 = t_envelope("application/vnd.custode.policy+json ", doc, strlen(doc), rfc8032_key1_priv, NULL);

	t_refused(env, k1, R(TYPE), "application/vnd.in-toto+json");
	t_refused(env2, k1, R(TYPE), NULL);
	free(env);
	free(env2);
	free(doc);
}

static void flip_last_digit(unsigned char *p, size_t len)
{
	/* "version":3 -> 4, or any digit near the end */
	for (size_t i = len; i-- > 0;)
		if (p[i] >= '0' && p[i] <= '8') {
			p[i]++;
			return;
		}
}

Test(bundle_verify, altered_payload_byte)
{
	char *env = t_edit_payload(vec_policy_ed25519, flip_last_digit);
	t_refused(env, k1, R(SIGNATURE), NULL);
	free(env);
}

/* Signed, but the content is not what contentDigest says. */
Test(bundle_verify, altered_content_vs_digest)
{
	char *good = t_doc("t/digest", 1, CONTENT, NULL);
	char *doc = t_replace(good, "\"exec\"", "\"write\"");   /* content changed, digest kept */
	char *env = t_bundle(doc, rfc8032_key1_priv);
	char *stripped = NULL, *env2;

	t_refused(env, k1, R(DIGEST), "does not match");
	/* missing contentDigest */
	{
		json_t *j = json_loads(good, 0, NULL);
		json_object_del(j, "contentDigest");
		stripped = json_dumps(j, JSON_COMPACT);
		json_decref(j);
	}
	env2 = t_bundle(stripped, rfc8032_key1_priv);
	t_refused(env2, k1, R(DIGEST), "missing");
	free(env);
	free(env2);
	free(stripped);
	free(doc);
	free(good);
}

Test(bundle_verify, duplicate_keys)
{
	char *env = t_replace(vec_policy_ed25519, "\"payloadType\":", "\"payloadType\":\"x\",\"payloadType\":");
	char *doc = t_doc("t/dup", 1, CONTENT, NULL);
	char *dup = t_replace(doc, "\"version\":1", "\"version\":1,\"version\":2");
	char *denv = t_bundle(dup, rfc8032_key1_priv);
	char *dup2 = t_replace(doc, "\"mode\":\"enforce\"", "\"mode\":\"enforce\",\"mode\":\"audit\"");
	char *denv2 = t_bundle(dup2, rfc8032_key1_priv);

	t_refused(env, k1, R(MALFORMED), "duplicate");   /* in the envelope */
	t_refused(denv, k1, R(SCHEMA), "duplicate");     /* in the signed payload */
	t_refused(denv2, k1, R(SCHEMA), "duplicate");    /* nested in content */
	free(env);
	free(doc);
	free(dup);
	free(denv);
	free(dup2);
	free(denv2);
}

Test(bundle_verify, unknown_schema_version)
{
	char *doc = t_doc("t/schema", 1, CONTENT, NULL);
	char *v2 = t_replace(doc, "custode.policy/v1", "custode.policy/v2");
	char *env = t_bundle(v2, rfc8032_key1_priv);

	t_refused(env, k1, R(SCHEMA), "custode.policy/v2");
	free(env);
	free(v2);
	free(doc);
}

Test(bundle_verify, unknown_field)
{
	char *doc = t_doc("t/unknown", 1, CONTENT, NULL);
	char *top = t_replace(doc, "\"version\":1", "\"version\":1,\"owner\":\"x\"");
	char *env = t_bundle(top, rfc8032_key1_priv);
	char *deep = t_doc("t/unknown", 1, "{\"filesystem\":[{\"path\":\"/usr\",\"allow\":[],\"recursive\":true}]}", NULL);
	char *env2 = t_bundle(deep, rfc8032_key1_priv);

	t_refused(env, k1, R(SCHEMA), "owner: unknown field");
	t_refused(env2, k1, R(SCHEMA), "content.filesystem[0].recursive: unknown field");
	free(env);
	free(env2);
	free(top);
	free(deep);
	free(doc);
}

Test(bundle_verify, schema_errors_keep_the_field_path)
{
	char *doc = t_doc("t/path", 1, "{\"filesystem\":[{\"path\":\"/usr\",\"allow\":[\"wirte\"]}]}", NULL);
	char *env = t_bundle(doc, rfc8032_key1_priv);
	char *notjson = t_envelope(T_TYPE, "{\"schema\":", 10, rfc8032_key1_priv, NULL);
	char *arr = t_envelope(T_TYPE, "[]", 2, rfc8032_key1_priv, NULL);

	t_refused(env, k1, R(SCHEMA), "content.filesystem[0].allow[0]: unknown access class \"wirte\"");
	t_refused(notjson, k1, R(SCHEMA), NULL);
	t_refused(arr, k1, R(SCHEMA), NULL);
	free(env);
	free(doc);
	free(notjson);
	free(arr);
}

Test(bundle_verify, window_required)
{
	char *doc = t_doc("t/window", 1, CONTENT, NULL);
	char *a = t_replace(doc, "\"notBefore\":\"2026-01-01T00:00:00Z\",", "");
	char *b = t_replace(a, "\"notAfter\":\"2036-01-01T00:00:00Z\",", "");
	char *env = t_bundle(b, rfc8032_key1_priv);

	t_refused(env, k1, R(SCHEMA), "validity window");
	free(env);
	free(b);
	free(a);
	free(doc);
}

static int verify_at(const char *env, const struct custode_trust *t, int64_t now, struct custode_refusal *why)
{
	memset(why, 0, sizeof(*why));
	return custode_bundle_verify(env, strlen(env), t, now, NULL, NULL, why);
}

/* notBefore <= now < notAfter, widened by the skew on both ends. */
Test(bundle_verify, validity_window_and_skew)
{
	const int64_t nb = 1767225600, na = 2082758400;
	char *doc = t_doc("t/time", 1, CONTENT, NULL);
	char *env = t_bundle(doc, rfc8032_key1_priv);
	struct custode_refusal why;

	cr_assert_eq(verify_at(env, k1, nb, &why), 0);
	cr_assert_eq(verify_at(env, k1, nb - 60, &why), 0);
	cr_assert_lt(verify_at(env, k1, nb - 61, &why), 0);
	cr_assert_eq(why.reason, R(NOT_YET_VALID), "%s", why.detail);
	cr_assert_not_null(strstr(why.detail, "2026-01-01T00:00:00.000000Z"), "%s", why.detail);
	cr_assert_eq(verify_at(env, k1, na + 59, &why), 0);
	cr_assert_lt(verify_at(env, k1, na + 60, &why), 0);
	cr_assert_eq(why.reason, R(EXPIRED), "%s", why.detail);
	cr_assert_not_null(strstr(why.detail, "2036-01-01T00:00:00.000000Z"), "%s", why.detail);
	/* skew 0: exactly the window */
	cr_assert_eq(custode_trust_set_skew(k1, 0, &why), 0);
	cr_assert_eq(verify_at(env, k1, nb, &why), 0);
	cr_assert_lt(verify_at(env, k1, nb - 1, &why), 0);
	cr_assert_eq(why.reason, R(NOT_YET_VALID));
	cr_assert_eq(verify_at(env, k1, na - 1, &why), 0);
	cr_assert_lt(verify_at(env, k1, na, &why), 0);
	cr_assert_eq(why.reason, R(EXPIRED));
	/* no overflow at the extremes */
	cr_assert_lt(verify_at(env, k1, INT64_MAX, &why), 0);
	cr_assert_eq(why.reason, R(EXPIRED));
	cr_assert_lt(verify_at(env, k1, INT64_MIN, &why), 0);
	cr_assert_eq(why.reason, R(NOT_YET_VALID));
	free(env);
	free(doc);
}

Test(bundle_verify, expired_and_not_yet_valid_vectors)
{
	struct custode_refusal why;

	cr_assert_lt(verify_at(vec_policy_ed25519, k1, 2082758400 + 3600, &why), 0);
	cr_assert_eq(why.reason, R(EXPIRED));
	cr_assert_lt(verify_at(vec_policy_ed25519, k1, 1767225600 - 3600, &why), 0);
	cr_assert_eq(why.reason, R(NOT_YET_VALID));
}

/* Signature checks come first: a bad signature is reported as such even when everything else is wrong too. */
Test(bundle_verify, order_of_checks)
{
	struct custode_trust *k2 = t_trust(rfc8032_key2_pub, NULL);
	char *doc = t_doc("t/order", 1, CONTENT, "sha256:0000000000000000000000000000000000000000000000000000000000000000");
	char *env = t_envelope("text/plain", doc, strlen(doc), rfc8032_key1_priv, NULL);
	char *env2 = t_bundle(doc, rfc8032_key1_priv);
	struct custode_refusal why;

	t_refused(env, k2, R(SIGNATURE), NULL);
	t_refused(env, k1, R(TYPE), NULL);
	t_refused(env2, k1, R(DIGEST), NULL);
	/* an expired bundle with a bad digest is a digest refusal: the window is checked last */
	cr_assert_lt(verify_at(env2, k1, INT64_MAX, &why), 0);
	cr_assert_eq(why.reason, R(DIGEST));
	free(env);
	free(env2);
	free(doc);
	custode_trust_free(k2);
}

Test(bundle_verify, truncated_base64)
{
	json_t *j = json_loads(vec_policy_ed25519, 0, NULL);
	const char *payload = json_string_value(json_object_get(j, "payload"));
	char *cut = strndup(payload, strlen(payload) - 3);
	char *env;

	json_object_set_new(j, "payload", json_string(cut));
	env = json_dumps(j, 0);
	t_refused(env, k1, R(MALFORMED), "invalid base64");
	free(env);
	free(cut);
	json_decref(j);
}

Test(bundle_verify, input_of_100_mb)
{
	const size_t size = 100u << 20;
	char *big = malloc(size), path[] = "/tmp/custode-test-bundle-big-XXXXXX";
	struct custode_refusal why = {0};
	int fd;

	cr_assert_not_null(big);
	memcpy(big, "{\"payload\":\"", 12);
	cr_assert_lt(custode_bundle_verify(big, size, k1, T_NOW, NULL, NULL, &why), 0);
	cr_assert_eq(why.reason, R(TOO_LARGE), "%s", why.detail);
	free(big);

	/* a 100 MB file is refused from its size, without reading it all */
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (off_t)size), 0);
	close(fd);
	memset(&why, 0, sizeof(why));
	cr_assert_lt(custode_bundle_verify_file(path, k1, T_NOW, NULL, NULL, &why), 0);
	cr_assert_eq(why.reason, R(TOO_LARGE), "%s", why.detail);
	unlink(path);
}

static char *nest(int n)
{
	char *s = malloc((size_t)n * 2 + 64), *p = s;

	p += sprintf(p, "{\"deep\":");
	for (int i = 0; i < n; i++)
		*p++ = '[';
	for (int i = 0; i < n; i++)
		*p++ = ']';
	strcpy(p, "}");
	return s;
}

Test(bundle_verify, json_10000_deep)
{
	char *deep = nest(10000);
	char *env = t_replace(vec_policy_ed25519, "{\"payload\"", deep);
	char *env2 = t_replace(env, "]]}", "]],\"payload\"");
	char *signed_deep = t_envelope(T_TYPE, deep, strlen(deep), rfc8032_key1_priv, NULL);

	t_refused(env2, k1, R(TOO_LARGE), "deeper than 64");        /* in the envelope */
	t_refused(signed_deep, k1, R(TOO_LARGE), "payload");         /* in a validly signed payload */
	free(deep);
	free(env);
	free(env2);
	free(signed_deep);
}

/* Content a JCS digest cannot represent exactly is refused, not digested. */
Test(bundle_verify, integer_beyond_2_53)
{
	const char *content = "{\"limits\":{\"memoryBytes\":9007199254740993}}";
	char *doc, *env;

	cr_assert_gt(asprintf(&doc,
			      "{\"schema\":\"custode.policy/v1\",\"name\":\"t/big\",\"version\":1,"
			      "\"notBefore\":\"2026-01-01T00:00:00Z\",\"notAfter\":\"2036-01-01T00:00:00Z\","
			      "\"contentDigest\":\"sha256:%064d\",\"content\":%s}",
			      0, content),
		     0);
	env = t_bundle(doc, rfc8032_key1_priv);
	t_refused(env, k1, R(SCHEMA), "2^53");
	free(env);
	free(doc);
}

Test(bundle_verify, no_trust)
{
	struct custode_refusal why;
	cr_assert_lt(custode_bundle_verify(vec_policy_ed25519, strlen(vec_policy_ed25519), NULL, T_NOW, NULL, NULL, &why), 0);
	cr_assert_eq(why.reason, R(SIGNATURE));
}

/* ---- inspection ---- */

Test(bundle_verify, inspect_reports_without_trusting)
{
	struct custode_bundle_report *r = NULL;
	struct custode_refusal why;
	char *doc = t_doc("t/inspect", 4, CONTENT, "sha256:1111111111111111111111111111111111111111111111111111111111111111");
	char *env = t_envelope("text/x", doc, strlen(doc), rfc8032_key2_priv, rfc8032_key3_priv, NULL);

	cr_assert_eq(custode_bundle_inspect(vec_policy_ed25519, strlen(vec_policy_ed25519), T_NOW, &r, &why), 0);
	cr_assert(r->type_ok && r->schema_ok && r->digest_present && r->digest_ok && r->window_present);
	cr_assert_eq(r->window_reason, 0);
	cr_assert_str_eq(r->info.name, "vectors/ed25519");
	cr_assert_str_eq(r->digest_computed, vector_policy_digest);
	cr_assert_eq(r->n_signatures, 1);
	cr_assert_str_eq(r->keyids[0], "rfc8032-test1");
	cr_assert_eq(r->sig_lens[0], 64);
	custode_bundle_report_free(r);

	cr_assert_eq(custode_bundle_inspect(env, strlen(env), 2082758400 + 86400, &r, &why), 0);
	cr_assert(!r->type_ok && r->schema_ok && r->digest_present && !r->digest_ok);
	cr_assert_eq(r->window_reason, R(EXPIRED));
	cr_assert_eq(r->n_signatures, 2);
	custode_bundle_report_free(r);

	cr_assert_lt(custode_bundle_inspect("{\"payload\":7}", 13, T_NOW, &r, &why), 0);
	cr_assert_eq(why.reason, R(MALFORMED));
	free(env);
	free(doc);
}
