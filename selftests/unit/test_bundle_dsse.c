// SPDX-License-Identifier: Apache-2.0
/*
 * DSSE layer: PAE, the spec's P-256 vector, Ed25519 vectors made by Node from
 * the RFC 8032 test keys (vectors/dsse_vectors.h), thresholds, key handling
 * and envelope parsing refusals.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "bundle/base64.h"
#include "bundle/dsse.h"
#include "bundle/keys.h"
#include "test_bundle_util.h"
#include "vectors/dsse_vectors.h"

#define HELLO_TYPE "http://example.com/HelloWorld"

static void pae_is(const char *type, size_t tlen, const char *body, size_t blen, const char *want, size_t want_len)
{
	unsigned char *out;
	size_t len;

	cr_assert_eq(custode_dsse_pae(type, tlen, body, blen, &out, &len), 0);
	cr_assert_eq(len, want_len, "PAE length %zu, want %zu", len, want_len);
	cr_assert(memcmp(out, want, len) == 0, "PAE \"%.*s\", want \"%s\"", (int)len, out, want);
	free(out);
}

Test(bundle_dsse, pae)
{
	/* protocol.md test vector */
	pae_is(HELLO_TYPE, 29, "hello world", 11, "DSSEv1 29 http://example.com/HelloWorld 11 hello world", 54);
	pae_is("", 0, "", 0, "DSSEv1 0  0 ", 12);
	/* lengths are bytes: "ä" is 2 bytes in UTF-8, 1 character */
	pae_is("\xc3\xa4", 2, "x", 1, "DSSEv1 2 \xc3\xa4 1 x", 15);
	/* body bytes verbatim, NUL included */
	pae_is("t", 1, "a\0b", 3, "DSSEv1 1 t 3 a\0b", 16);
}

/* Parse and verify at the DSSE layer; returns the error. */
static int dsse_verify(const char *env, struct custode_trust *t, struct custode_dsse **out, size_t *n_signers,
		       struct custode_bundle_signer *signers, struct custode_refusal *why)
{
	struct custode_dsse *e = NULL;
	struct custode_bundle_signer local[CUSTODE_BUNDLE_MAX_KEYS];
	size_t n = 0;
	int err;

	memset(why, 0, sizeof(*why));
	err = custode_dsse_parse(env, strlen(env), &e, why);
	if (err)
		return err;
	err = custode_dsse_verify(e, t, signers ? signers : local, &n, why);
	if (n_signers)
		*n_signers = n;
	if (out && !err)
		*out = e;
	else
		custode_dsse_free(e);
	return err;
}

static void dsse_ok(const char *env, struct custode_trust *t, const char *type, const void *payload, size_t len)
{
	struct custode_refusal why;
	struct custode_dsse *e = NULL;

	cr_assert_eq(dsse_verify(env, t, &e, NULL, NULL, &why), 0, "%s: %s", custode_reason_name(why.reason), why.detail);
	cr_assert_eq(e->payload_type_len, strlen(type));
	cr_assert_str_eq(e->payload_type, type);
	cr_assert_eq(e->payload_len, len);
	cr_assert(len == 0 || memcmp(e->payload, payload, len) == 0);
	custode_dsse_free(e);
}

static void dsse_refused(const char *env, struct custode_trust *t, int reason)
{
	struct custode_refusal why;
	int err = dsse_verify(env, t, NULL, NULL, NULL, &why);

	cr_assert_lt(err, 0, "accepted");
	cr_assert_eq(why.reason, reason, "%s (%s)", custode_reason_name(why.reason), why.detail);
}

/* ---- the DSSE spec's ECDSA P-256 vector ---- */

/* DER ECDSA-Sig-Value from raw r||s (32 bytes each). */
static size_t der_from_raw(const unsigned char *rs, unsigned char *out)
{
	unsigned char ints[2][34];
	size_t lens[2], o = 0;

	for (int i = 0; i < 2; i++) {
		const unsigned char *v = rs + 32 * i;
		size_t skip = 0, n = 0;
		while (skip < 31 && v[skip] == 0)
			skip++;
		if (v[skip] & 0x80)
			ints[i][n++] = 0;
		memcpy(ints[i] + n, v + skip, 32 - skip);
		lens[i] = n + 32 - skip;
	}
	out[o++] = 0x30;
	out[o++] = (unsigned char)(2 + lens[0] + 2 + lens[1]);
	for (int i = 0; i < 2; i++) {
		out[o++] = 0x02;
		out[o++] = (unsigned char)lens[i];
		memcpy(out + o, ints[i], lens[i]);
		o += lens[i];
	}
	return o;
}

static const char spec_envelope[] =
	"{\"payload\": \"aGVsbG8gd29ybGQ=\",\n \"payloadType\": \"http://example.com/HelloWorld\",\n"
	" \"signatures\": [{\"sig\": "
	"\"A3JqsQGtVsJ2O2xqrI5IcnXip5GToJ3F+FnZ+O88SjtR6rDAajabZKciJTfUiHqJPcIAriEGAHTVeCUjW2JIZA==\"}]}";

Test(bundle_dsse, spec_p256_vector)
{
	struct custode_trust *t = t_trust(dsse_spec_p256_pub, NULL);
	unsigned char *raw, der[80];
	size_t raw_len, der_len;
	char *b64, *env;
	const char *sig_b64 = "A3JqsQGtVsJ2O2xqrI5IcnXip5GToJ3F+FnZ+O88SjtR6rDAajabZKciJTfUiHqJPcIAriEGAHTVeCUjW2JIZA==";

	/* As published: raw r||s (Cryptodome). custode's P-256 signatures are DER: refused. */
	dsse_refused(spec_envelope, t, CUSTODE_REASON_BUNDLE_SIGNATURE);

	/* The same signature in DER verifies. */
	cr_assert_eq(custode_b64_decode(sig_b64, strlen(sig_b64), &raw, &raw_len, NULL, NULL), 0);
	cr_assert_eq(raw_len, 64);
	der_len = der_from_raw(raw, der);
	b64 = custode_b64_encode(der, der_len, false);
	env = t_replace(spec_envelope, sig_b64, b64);
	dsse_ok(env, t, HELLO_TYPE, "hello world", 11);

	/* ... and only for the spec's key, payload and type. */
	{
		struct custode_trust *other = t_trust(rfc8032_key1_pub, NULL);
		char *e2 = t_replace(env, "aGVsbG8gd29ybGQ=", "aGVsbG8gd29ybGQh"); /* "hello world!" */
		char *e3 = t_replace(env, "HelloWorld", "HelloWorle");
		dsse_refused(env, other, CUSTODE_REASON_BUNDLE_SIGNATURE);
		dsse_refused(e2, t, CUSTODE_REASON_BUNDLE_SIGNATURE);
		dsse_refused(e3, t, CUSTODE_REASON_BUNDLE_SIGNATURE);
		custode_trust_free(other);
		free(e2);
		free(e3);
	}
	free(raw);
	free(b64);
	free(env);
	custode_trust_free(t);
}

/* ---- RFC 8032 keys ---- */

static void hex(const char *h, unsigned char *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sscanf(h + 2 * i, "%2hhx", &out[i]);
}

/* The keys in the vectors are the RFC's: its own test signatures verify with them. */
Test(bundle_dsse, rfc8032_keys_and_signatures)
{
	static const struct {
		const char *pub, *msg, *sig;
	} tv[] = {
		{rfc8032_key1_pub, "",
		 "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"},
		{rfc8032_key2_pub, "72",
		 "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"},
		{rfc8032_key3_pub, "af82",
		 "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"},
	};
	for (size_t i = 0; i < 3; i++) {
		struct custode_trust *t = t_trust(tv[i].pub, NULL);
		unsigned char msg[2], sig[64];
		size_t mlen = strlen(tv[i].msg) / 2;

		hex(tv[i].msg, msg, mlen);
		hex(tv[i].sig, sig, 64);
		cr_assert_eq(t->keys[0].alg, CUSTODE_KEY_ED25519);
		cr_assert_eq(custode_key_verify(&t->keys[0], msg, mlen, sig, 64), 1, "TEST %zu", i + 1);
		sig[10] ^= 1;
		cr_assert_eq(custode_key_verify(&t->keys[0], msg, mlen, sig, 64), 0, "TEST %zu forged", i + 1);
		cr_assert_eq(custode_key_verify(&t->keys[0], msg, mlen, sig, 63), 0);
		custode_trust_free(t);
	}
}

Test(bundle_dsse, ed25519_single_signature)
{
	struct custode_trust *t = t_trust(rfc8032_key1_pub, NULL);
	struct custode_bundle_signer signers[CUSTODE_BUNDLE_MAX_KEYS];
	struct custode_refusal why;
	size_t n = 0;

	dsse_ok(vec_ed25519_single, t, HELLO_TYPE, "hello world", 11);
	cr_assert_eq(dsse_verify(vec_ed25519_single, t, NULL, &n, signers, &why), 0);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(signers[0].keyid_hint, "rfc8032-test1");
	cr_assert_str_eq(signers[0].key_id, t->keys[0].id);
	custode_trust_free(t);
}

Test(bundle_dsse, ed25519_wrong_key)
{
	struct custode_trust *t = t_trust(rfc8032_key2_pub, NULL);
	dsse_refused(vec_ed25519_single, t, CUSTODE_REASON_BUNDLE_SIGNATURE);
	custode_trust_free(t);
}

Test(bundle_dsse, ed25519_urlsafe_and_standard)
{
	static const unsigned char binary[] = {0xfb, 0xff, 0xbf, 0xfe, 0x3e, 0x3f, 0x00, 0x01};
	struct custode_trust *t = t_trust(rfc8032_key1_pub, NULL);

	cr_assert_not_null(strchr(vec_ed25519_urlsafe, '_'), "the vector does not exercise the URL-safe alphabet");
	cr_assert_not_null(strchr(vec_ed25519_std_binary, '/'));
	dsse_ok(vec_ed25519_urlsafe, t, HELLO_TYPE, binary, sizeof(binary));
	dsse_ok(vec_ed25519_std_binary, t, HELLO_TYPE, binary, sizeof(binary));
	custode_trust_free(t);
}

Test(bundle_dsse, ed25519_empty_payload_and_type)
{
	struct custode_trust *t = t_trust(rfc8032_key1_pub, NULL);
	dsse_ok(vec_ed25519_empty_payload, t, HELLO_TYPE, "", 0);
	dsse_ok(vec_ed25519_empty_type, t, "", "hello world", 11);
	custode_trust_free(t);
}

/* An envelope may omit empty fields (envelope.md): an absent payload is the empty payload. */
Test(bundle_dsse, omitted_empty_payload)
{
	struct custode_trust *t = t_trust(rfc8032_key1_pub, NULL);
	char *env = t_replace(vec_ed25519_empty_payload, "\"payload\":\"\",", "");

	dsse_ok(env, t, HELLO_TYPE, "", 0);
	free(env);
	custode_trust_free(t);
}

Test(bundle_dsse, ed25519_non_ascii_type)
{
	const char *type = "application/vnd.ex\xc3\xa4mple+json; \xe6\x97\xa5\xe6\x9c\xac";
	struct custode_trust *t = t_trust(rfc8032_key1_pub, NULL);
	struct custode_signing_key *k = NULL;
	struct custode_bundle_sig sig = {0};
	struct custode_refusal why;
	char pae[200], *b64, *env;
	size_t chars = 0;
	int n;

	dsse_ok(vec_ed25519_nonascii_type, t, type, "hello world", 11);

	/* Control: a signature over a PAE that counts characters, not bytes (the classic bug), is refused. */
	for (const unsigned char *p = (const unsigned char *)type; *p; p++)
		chars += (*p & 0xc0) != 0x80;
	cr_assert_neq(chars, strlen(type));
	n = snprintf(pae, sizeof(pae), "DSSEv1 %zu %s 11 hello world", chars, type);
	cr_assert_eq(custode_signing_key_load_pem(rfc8032_key1_priv, strlen(rfc8032_key1_priv), "k1", &k, &why), 0);
	cr_assert_eq(custode_signing_key_sign(k, pae, (size_t)n, &sig, &why), 0);
	b64 = custode_b64_encode(sig.sig, sig.sig_len, false);
	cr_assert_gt(asprintf(&env, "{\"payload\":\"aGVsbG8gd29ybGQ=\",\"payloadType\":\"%s\",\"signatures\":[{\"sig\":\"%s\"}]}",
			      type, b64),
		     0);
	dsse_refused(env, t, CUSTODE_REASON_BUNDLE_SIGNATURE);
	free(env);
	free(b64);
	custode_bundle_sig_clear(&sig);
	custode_signing_key_free(k);
	custode_trust_free(t);
}

Test(bundle_dsse, threshold_two_distinct_keys)
{
	struct custode_trust *t = t_trust(rfc8032_key1_pub, rfc8032_key2_pub, NULL);
	struct custode_trust *only1 = t_trust(rfc8032_key1_pub, rfc8032_key3_pub, NULL);
	struct custode_refusal why;
	size_t n = 0;

	cr_assert_eq(custode_trust_set_threshold(t, 2, &why), 0);
	cr_assert_eq(dsse_verify(vec_ed25519_two_keys, t, NULL, &n, NULL, &why), 0, "%s", why.detail);
	cr_assert_eq(n, 2);
	/* key3 trusted instead of key2: only one of the two required signed */
	cr_assert_eq(custode_trust_set_threshold(only1, 2, &why), 0);
	dsse_refused(vec_ed25519_two_keys, only1, CUSTODE_REASON_BUNDLE_SIGNATURE);
	custode_trust_free(t);
	custode_trust_free(only1);
}

Test(bundle_dsse, one_key_twice_counts_once)
{
	struct custode_trust *t = t_trust(rfc8032_key1_pub, rfc8032_key2_pub, NULL);
	struct custode_refusal why;
	size_t n = 0;

	cr_assert_eq(dsse_verify(vec_ed25519_one_key_twice, t, NULL, &n, NULL, &why), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(custode_trust_set_threshold(t, 2, &why), 0);
	cr_assert_lt(dsse_verify(vec_ed25519_one_key_twice, t, NULL, &n, NULL, &why), 0);
	cr_assert_eq(why.reason, CUSTODE_REASON_BUNDLE_SIGNATURE);
	cr_assert_not_null(strstr(why.detail, "1 of the required 2"), "%s", why.detail);
	custode_trust_free(t);
}

/* Two trust files with the same public key are one key: a threshold of 2 cannot be met by it. */
Test(bundle_dsse, same_key_in_two_files_counts_once)
{
	struct custode_trust *t = NULL;
	struct custode_refusal why;
	char *reformatted = t_replace(rfc8032_key1_pub, "MCowBQYDK2VwAyEA", "MCowBQYDK2VwAyEA\n"); /* other line breaks */

	cr_assert_eq(custode_trust_new(&t), 0);
	cr_assert_eq(custode_trust_add_pem(t, rfc8032_key1_pub, strlen(rfc8032_key1_pub), "a.pub", &why), 1);
	cr_assert_eq(custode_trust_add_pem(t, reformatted, strlen(reformatted), "b.pub", &why), 0);
	cr_assert_eq(custode_trust_count(t), 1);
	cr_assert_eq(custode_trust_set_threshold(t, 2, &why), 0);
	dsse_refused(vec_ed25519_two_keys, t, CUSTODE_REASON_BUNDLE_SIGNATURE);
	free(reformatted);
	custode_trust_free(t);
}

/* The keyid is a hint: it neither selects a key nor lets an untrusted one in. */
Test(bundle_dsse, keyid_is_only_a_hint)
{
	struct custode_trust *t1 = t_trust(rfc8032_key1_pub, NULL), *t2 = t_trust(rfc8032_key2_pub, NULL);
	char *hint_other = t_replace(vec_ed25519_single, "rfc8032-test1", t2->keys[0].id);
	char *hint_trusted = t_replace(vec_ed25519_single, "rfc8032-test1", t1->keys[0].id);

	dsse_ok(hint_other, t1, HELLO_TYPE, "hello world", 11);  /* names key2, signed by key1: key1 verifies */
	dsse_refused(hint_trusted, t2, CUSTODE_REASON_BUNDLE_SIGNATURE);
	free(hint_other);
	free(hint_trusted);
	custode_trust_free(t1);
	custode_trust_free(t2);
}

/* The algorithm comes from the trusted key: an Ed25519 signature means nothing to a P-256 key. */
Test(bundle_dsse, algorithm_fixed_by_key)
{
	struct custode_trust *p256 = t_trust(dsse_spec_p256_pub, NULL);
	struct custode_trust *ed = t_trust(rfc8032_key1_pub, NULL);
	char *p256_env = t_envelope(HELLO_TYPE, "hello world", 11, dsse_spec_p256_priv, NULL);

	cr_assert_eq(p256->keys[0].alg, CUSTODE_KEY_P256);
	dsse_ok(p256_env, p256, HELLO_TYPE, "hello world", 11);
	dsse_refused(p256_env, ed, CUSTODE_REASON_BUNDLE_SIGNATURE);
	dsse_refused(vec_ed25519_single, p256, CUSTODE_REASON_BUNDLE_SIGNATURE);
	free(p256_env);
	custode_trust_free(p256);
	custode_trust_free(ed);
}

static char *pem_of(EVP_PKEY *k, bool private)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data, *out;
	long n;

	cr_assert(private ? PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL) : PEM_write_bio_PUBKEY(b, k));
	n = BIO_get_mem_data(b, &data);
	out = strndup(data, (size_t)n);
	BIO_free(b);
	return out;
}

Test(bundle_dsse, unsupported_and_bad_keys)
{
	EVP_PKEY *p384 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384");
	EVP_PKEY *x25519 = EVP_PKEY_Q_keygen(NULL, NULL, "X25519");
	char *p384_pem = pem_of(p384, false), *x_pem = pem_of(x25519, false);
	char *two = NULL;
	struct custode_trust *t = NULL;
	struct custode_refusal why;
	static const struct {
		const char *pem, *word;
	} bad[] = {
		{"", "not a PEM"},
		{"hello", "not a PEM"},
		{"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", "unreadable"},
		{rfc8032_key1_priv, "private key"},
		{"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "PUBLIC KEY"},
	};

	cr_assert_eq(custode_trust_new(&t), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&why, 0, sizeof(why));
		cr_assert_lt(custode_trust_add_pem(t, bad[i].pem, strlen(bad[i].pem), "k.pub", &why), 0, "case %zu", i);
		cr_assert_eq(why.reason, CUSTODE_REASON_BUNDLE_KEY);
		cr_assert_not_null(strstr(why.detail, bad[i].word), "case %zu: %s", i, why.detail);
	}
	cr_assert_lt(custode_trust_add_pem(t, p384_pem, strlen(p384_pem), "p384.pub", &why), 0);
	cr_assert_eq(why.reason, CUSTODE_REASON_BUNDLE_KEY);
	cr_assert_not_null(strstr(why.detail, "unsupported"), "%s", why.detail);
	cr_assert_lt(custode_trust_add_pem(t, x_pem, strlen(x_pem), "x.pub", &why), 0);
	cr_assert_eq(why.reason, CUSTODE_REASON_BUNDLE_KEY);
	cr_assert_gt(asprintf(&two, "%s%s", rfc8032_key1_pub, rfc8032_key2_pub), 0);
	cr_assert_lt(custode_trust_add_pem(t, two, strlen(two), "two.pub", &why), 0);
	cr_assert_not_null(strstr(why.detail, "exactly one"), "%s", why.detail);
	cr_assert_eq(custode_trust_count(t), 0);
	cr_assert_lt(custode_trust_add_file(t, "/nonexistent/k.pub", &why), 0);
	cr_assert_eq(why.reason, CUSTODE_REASON_BUNDLE_KEY);
	/* an empty trust set verifies nothing */
	dsse_refused(vec_ed25519_single, t, CUSTODE_REASON_BUNDLE_SIGNATURE);
	cr_assert_lt(custode_trust_set_threshold(t, 0, &why), 0);
	cr_assert_lt(custode_trust_set_threshold(t, 33, &why), 0);
	cr_assert_lt(custode_trust_set_skew(t, 301, &why), 0);
	cr_assert_eq(custode_trust_set_skew(t, 300, &why), 0);
	free(two);
	free(p384_pem);
	free(x_pem);
	EVP_PKEY_free(p384);
	EVP_PKEY_free(x25519);
	custode_trust_free(t);
}

Test(bundle_dsse, threshold_above_key_count)
{
	struct custode_trust *t = t_trust(rfc8032_key1_pub, NULL);
	struct custode_refusal why;

	cr_assert_eq(custode_trust_set_threshold(t, 2, &why), 0);
	cr_assert_lt(dsse_verify(vec_ed25519_single, t, NULL, NULL, NULL, &why), 0);
	cr_assert_eq(why.reason, CUSTODE_REASON_BUNDLE_SIGNATURE);
	cr_assert_not_null(strstr(why.detail, "never be met"), "%s", why.detail);
	custode_trust_free(t);
}

/* ---- envelope parsing ---- */

static void parse_refused(const char *env, size_t len, int reason, const char *word)
{
	struct custode_dsse *e = (struct custode_dsse *)(void *)&e;
	struct custode_dsse *sentinel = e;
	struct custode_refusal why = {0};

	cr_assert_lt(custode_dsse_parse(env, len, &e, &why), 0, "accepted: %.200s", env);
	cr_assert_eq(e, sentinel, "out written on failure");
	cr_assert_eq(why.reason, reason, "%s: %s", custode_reason_name(why.reason), why.detail);
	if (word)
		cr_assert_not_null(strstr(why.detail, word), "\"%s\" lacks \"%s\"", why.detail, word);
}

#define PR(s, r, w) parse_refused(s, strlen(s), CUSTODE_REASON_BUNDLE_##r, w)

Test(bundle_dsse, envelope_refusals)
{
	PR("", MALFORMED, "envelope");
	PR("[]", MALFORMED, "JSON object");
	PR("{\"payload\":\"aGk=\",\"payload\":\"aGk=\",\"payloadType\":\"t\",\"signatures\":[]}", MALFORMED, "duplicate");
	PR("{\"payload\":\"aGk=\",\"payloadType\":\"t\",\"signatures\":[{\"sig\":\"AA==\",\"sig\":\"AA==\"}]}", MALFORMED,
	   "duplicate");
	PR("{\"payload\":1,\"payloadType\":\"t\",\"signatures\":[]}", MALFORMED, "payload");
	PR("{\"payload\":\"aGk=\",\"payloadType\":[],\"signatures\":[]}", MALFORMED, "payloadType");
	PR("{\"payload\":\"aGk=\",\"payloadType\":\"t\",\"signatures\":{}}", MALFORMED, "signatures");
	PR("{\"payload\":\"aGk=\",\"payloadType\":\"t\",\"signatures\":[\"AA==\"]}", MALFORMED, "signatures[0]");
	PR("{\"payload\":\"aGk=\",\"payloadType\":\"t\",\"signatures\":[{\"sig\":\"AA==\",\"keyid\":7}]}", MALFORMED, "keyid");
	PR("{\"payload\":\"aGk=\",\"payloadType\":\"t\",\"signatures\":[{\"sig\":\"AA=\"}]}", MALFORMED, "signatures[0].sig");
	/* truncated base64 payload */
	PR("{\"payload\":\"aGVsbG8gd29ybG\",\"payloadType\":\"t\",\"signatures\":[]}", MALFORMED, "payload: invalid base64");
	PR("{\"payload\":\"aGVsbG8gd29ybGQ\",\"payloadType\":\"t\",\"signatures\":[]}", MALFORMED, "payload: invalid base64");
	PR("{\"payload\":\"aGVs bG8=\",\"payloadType\":\"t\",\"signatures\":[]}", MALFORMED, "payload: invalid base64");
	PR("{\"payload\":\"aGk=\",\"payloadType\":\"t\\u0000x\",\"signatures\":[]}", MALFORMED, "envelope");
	PR("{\"payload\":\"aGk=\",\"payloadType\":\"t\",\"signatures\":[]} trailing", MALFORMED, "envelope");
	PR("{\"payload\":\"aGk=\",\"payloadType\":\"\xff\",\"signatures\":[]}", MALFORMED, "envelope");
}

Test(bundle_dsse, envelope_limits)
{
	char *deep = malloc(40000), *big, *many;
	size_t o = 0;

	/* 10,000-deep JSON: refused by the byte scan, before jansson recurses */
	o += (size_t)sprintf(deep, "{\"payload\":\"\",\"x\":");
	for (int i = 0; i < 10000; i++)
		deep[o++] = '[';
	for (int i = 0; i < 10000; i++)
		deep[o++] = ']';
	deep[o++] = '}';
	parse_refused(deep, o, CUSTODE_REASON_BUNDLE_TOO_LARGE, "deeper than 64");
	/* 64 deep is fine (the object and 63 arrays); 65 is not */
	for (int extra = 0; extra < 2; extra++) {
		struct custode_dsse *e = NULL;
		struct custode_refusal why;
		int n = 63 + extra;

		o = (size_t)sprintf(deep, "{\"x\":");
		for (int i = 0; i < n; i++)
			deep[o++] = '[';
		for (int i = 0; i < n; i++)
			deep[o++] = ']';
		deep[o++] = '}';
		if (!extra) {
			cr_assert_eq(custode_dsse_parse(deep, o, &e, &why), 0, "%s", why.detail);
			custode_dsse_free(e);
		} else {
			parse_refused(deep, o, CUSTODE_REASON_BUNDLE_TOO_LARGE, "deeper");
		}
	}
	free(deep);

	/* size: one byte over the cap is refused before parsing */
	big = malloc(CUSTODE_BUNDLE_MAX_BYTES + 2);
	memset(big, ' ', CUSTODE_BUNDLE_MAX_BYTES + 1);
	memcpy(big, "{}", 2);
	parse_refused(big, CUSTODE_BUNDLE_MAX_BYTES + 1, CUSTODE_REASON_BUNDLE_TOO_LARGE, "more than");
	{
		struct custode_dsse *e = NULL;
		struct custode_refusal why;
		cr_assert_eq(custode_dsse_parse(big, CUSTODE_BUNDLE_MAX_BYTES, &e, &why), 0, "%s", why.detail);
		custode_dsse_free(e);
	}
	free(big);

	/* 33 signatures */
	many = malloc(4096);
	o = (size_t)sprintf(many, "{\"payload\":\"\",\"payloadType\":\"t\",\"signatures\":[");
	for (int i = 0; i < 33; i++)
		o += (size_t)sprintf(many + o, "%s{\"sig\":\"AA==\"}", i ? "," : "");
	o += (size_t)sprintf(many + o, "]}");
	parse_refused(many, o, CUSTODE_REASON_BUNDLE_TOO_LARGE, "signatures");
	free(many);
}

Test(bundle_dsse, unknown_fields_ignored)
{
	struct custode_trust *t = t_trust(rfc8032_key1_pub, NULL);
	char *env = t_replace(vec_ed25519_single, "{\"payload\"",
			      "{\"future\":{\"nested\":[1,2,{\"x\":null}]},\"payload\"");
	char *env2 = t_replace(env, "\"keyid\"", "\"cert\":\"ignored\",\"keyid\"");

	dsse_ok(env2, t, HELLO_TYPE, "hello world", 11);
	free(env);
	free(env2);
	custode_trust_free(t);
}

Test(bundle_dsse, no_signatures)
{
	struct custode_trust *t = t_trust(rfc8032_key1_pub, NULL);
	dsse_refused("{\"payload\":\"aGk=\",\"payloadType\":\"t\",\"signatures\":[]}", t, CUSTODE_REASON_BUNDLE_SIGNATURE);
	dsse_refused("{\"payload\":\"aGk=\",\"payloadType\":\"t\"}", t, CUSTODE_REASON_BUNDLE_SIGNATURE);
	dsse_refused("{\"payload\":\"aGk=\",\"payloadType\":\"t\",\"signatures\":[{}]}", t, CUSTODE_REASON_BUNDLE_SIGNATURE);
	custode_trust_free(t);
}
