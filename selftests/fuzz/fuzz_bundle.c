// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target over the bundle parsers (selftests/fuzz/run-bundle-fuzz).
 * Each input is used three ways:
 *   1. as an envelope: custode_bundle_verify against a key nothing here signs
 *      with (size, depth, JSON, base64, the signature check: nothing may
 *      verify) and custode_bundle_inspect (the unverified payload pipeline:
 *      policy schema, JCS digest, window);
 *   2. as a payload signed here with a trusted key, so that every stage after
 *      the signature (type, schema, digest, window, the policy parser) sees
 *      fuzzed bytes that carry a valid signature;
 *   3. as JSON for the RFC 8785 canonicalizer, whose output must parse back
 *      and canonicalize to itself. It is re-read with every number as a
 *      double, as JCS reads numbers: the real 3870329030790611610.3
 *      canonicalizes to "3870329030790611500", which jansson would otherwise
 *      read back as an integer beyond 2^53, which custode refuses (jcs.h).
 * Crashes, sanitizer reports and the assertions below are findings.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "bundle/base64.h"
#include "bundle/bundle.h"
#include "bundle/dsse.h"
#include "bundle/jcs.h"
#include "bundle/sign.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* RFC 8032 TEST 1 key pair: signs and verifies in as_signed_payload */
static const char priv_pem[] = "-----BEGIN PRIVATE KEY-----\n"
			       "MC4CAQAwBQYDK2VwBCIEIJ1hsZ3v/VpguoRK9JLsLMREScVpezJpGXA7rAMcrn9g\n"
			       "-----END PRIVATE KEY-----\n";
static const char pub_pem[] = "-----BEGIN PUBLIC KEY-----\n"
			      "MCowBQYDK2VwAyEA11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=\n"
			      "-----END PUBLIC KEY-----\n";
/* RFC 8032 TEST 2 public key: trusted by as_envelope, whose private key is not here */
static const char other_pub_pem[] = "-----BEGIN PUBLIC KEY-----\n"
				    "MCowBQYDK2VwAyEAPUAXw+hDiVqStwqnTRt+vJyYLM8uxJaMwM1V8Sr0Zgw=\n"
				    "-----END PUBLIC KEY-----\n";
#define NOW 1893456000 /* 2030-01-01 */

static struct custode_trust *trust, *other;
static struct custode_signing_key *key;

static void init(void)
{
	struct custode_refusal why;

	if (trust)
		return;
	if (custode_trust_new(&trust) || custode_trust_add_pem(trust, pub_pem, strlen(pub_pem), "k1", &why) != 1 ||
	    custode_trust_new(&other) ||
	    custode_trust_add_pem(other, other_pub_pem, strlen(other_pub_pem), "k2", &why) != 1 ||
	    custode_signing_key_load_pem(priv_pem, strlen(priv_pem), "k1", &key, &why))
		abort();
}

static void as_envelope(const uint8_t *data, size_t size)
{
	struct custode_bundle_report *r = NULL;
	struct custode_policy *p = NULL;
	struct custode_bundle_info info;
	struct custode_refusal why;

	if (custode_bundle_verify(data, size, other, NOW, &p, &info, &why) == 0) {
		/* only a signature by the trusted key gets here, and nobody here holds it */
		fprintf(stderr, "fuzz: an unsigned input verified\n");
		abort();
	}
	if (p)
		abort(); /* out-param written on failure */
	if (custode_bundle_inspect(data, size, NOW, &r, &why) == 0)
		custode_bundle_report_free(r);
}

static void as_signed_payload(const uint8_t *data, size_t size)
{
	const char *type = CUSTODE_BUNDLE_PAYLOAD_TYPE;
	struct custode_bundle_sig sig = {0};
	struct custode_policy *p = NULL;
	struct custode_bundle_info info;
	struct custode_refusal why;
	unsigned char *pae = NULL;
	size_t pae_len, env_len;
	char *env = NULL;

	if (size > (1u << 20))
		return;
	if (custode_dsse_pae(type, strlen(type), data, size, &pae, &pae_len) ||
	    custode_signing_key_sign(key, pae, pae_len, &sig, &why) ||
	    custode_dsse_envelope_encode(type, data, size, &sig, 1, &env, &env_len, &why))
		goto out;
	if (custode_bundle_verify(env, env_len, trust, NOW, &p, &info, &why) == 0) {
		/* accepted: the digest it reports must be the one the document states */
		if (!p || !p->content_digest || strcmp(p->content_digest, info.digest))
			abort();
		custode_policy_free(p);
	}
out:
	custode_bundle_sig_clear(&sig);
	free(pae);
	free(env);
}

static void as_json(const uint8_t *data, size_t size)
{
	char *c1 = NULL, *c2 = NULL;
	size_t l1, l2;
	json_t *v, *back;

	if (custode_json_depth((const char *)data, size, CUSTODE_BUNDLE_MAX_DEPTH) > CUSTODE_BUNDLE_MAX_DEPTH)
		return;
	v = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL);
	if (!v)
		return;
	if (custode_jcs(v, &c1, &l1, NULL, 0) == 0) {
		back = json_loadb(c1, l1, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL, NULL);
		/* canonical output is JSON, and a fixed point */
		if (!back || custode_jcs(back, &c2, &l2, NULL, 0) || l1 != l2 || memcmp(c1, c2, l1))
			abort();
		json_decref(back);
	}
	free(c1);
	free(c2);
	json_decref(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	init();
	as_envelope(data, size);
	as_signed_payload(data, size);
	as_json(data, size);
	return 0;
}
