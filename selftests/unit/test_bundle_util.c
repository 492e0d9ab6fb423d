// SPDX-License-Identifier: Apache-2.0
/* Helpers for the test_bundle_*.c files: trust sets, documents and envelopes made on the fly. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>
#include <jansson.h>

#include "bundle/base64.h"
#include "bundle/dsse.h"
#include "bundle/jcs.h"
#include "test_bundle_util.h"
#include "util/fsutil.h"

struct custode_trust *t_trust(const char *pem, ...)
{
	struct custode_refusal why = {0};
	struct custode_trust *t = NULL;
	va_list ap;

	cr_assert_eq(custode_trust_new(&t), 0);
	va_start(ap, pem);
	for (const char *p = pem; p; p = va_arg(ap, const char *))
		cr_assert_geq(custode_trust_add_pem(t, p, strlen(p), "test key", &why), 0, "trust: %s", why.detail);
	va_end(ap);
	return t;
}

char *t_doc(const char *name, uint64_t version, const char *content, const char *digest_override)
{
	char digest[CUSTODE_DIGEST_LEN], err[200];
	json_t *c = json_loads(content, JSON_REJECT_DUPLICATES, NULL);
	char *out = NULL;

	cr_assert_not_null(c, "test content is not JSON: %s", content);
	cr_assert_eq(custode_jcs_sha256(c, digest, err, sizeof(err)), 0, "%s", err);
	json_decref(c);
	cr_assert_gt(asprintf(&out,
			      "{\"schema\":\"custode.policy/v1\",\"name\":\"%s\",\"version\":%llu,"
			      "\"notBefore\":\"2026-01-01T00:00:00Z\",\"notAfter\":\"2036-01-01T00:00:00Z\","
			      "\"contentDigest\":\"%s\",\"content\":%s}",
			      name, (unsigned long long)version, digest_override ? digest_override : digest, content),
		     0);
	return out;
}

static char *envelope_va(const char *type, const void *payload, size_t len, const char *first, va_list ap)
{
	struct custode_bundle_sig sigs[8];
	struct custode_refusal why = {0};
	unsigned char *pae;
	size_t pae_len, n = 0, out_len;
	char *out;

	memset(sigs, 0, sizeof(sigs));
	cr_assert_eq(custode_dsse_pae(type, strlen(type), payload, len, &pae, &pae_len), 0);
	for (const char *pem = first; pem; pem = va_arg(ap, const char *)) {
		struct custode_signing_key *k = NULL;
		cr_assert_lt(n, 8);
		cr_assert_eq(custode_signing_key_load_pem(pem, strlen(pem), "test", &k, &why), 0, "%s", why.detail);
		cr_assert_eq(custode_signing_key_sign(k, pae, pae_len, &sigs[n], &why), 0, "%s", why.detail);
		n++;
		custode_signing_key_free(k);
	}
	cr_assert_eq(custode_dsse_envelope_encode(type, payload, len, sigs, n, &out, &out_len, &why), 0, "%s",
		     why.detail);
	for (size_t i = 0; i < n; i++)
		custode_bundle_sig_clear(&sigs[i]);
	free(pae);
	return out;
}

char *t_envelope(const char *type, const void *payload, size_t len, const char *priv_pem, ...)
{
	va_list ap;
	char *out;

	va_start(ap, priv_pem);
	out = envelope_va(type, payload, len, priv_pem, ap);
	va_end(ap);
	return out;
}

char *t_bundle(const char *doc, const char *priv_pem)
{
	return t_envelope(T_TYPE, doc, strlen(doc), priv_pem, NULL);
}

int t_verify(const char *env, const struct custode_trust *trust, struct custode_refusal *why)
{
	struct custode_policy *p = NULL;
	int err;

	memset(why, 0, sizeof(*why));
	err = custode_bundle_verify(env, strlen(env), trust, T_NOW, &p, NULL, why);
	if (err)
		cr_assert_null(p, "policy returned on failure");
	else
		cr_assert_not_null(p);
	custode_policy_free(p);
	return err;
}

void t_refused(const char *env, const struct custode_trust *trust, int reason, const char *word)
{
	struct custode_refusal why;
	int err = t_verify(env, trust, &why);

	cr_assert_lt(err, 0, "accepted, expected %s", custode_reason_name(reason));
	cr_assert_eq(why.reason, reason, "reason %s (%s), expected %s", custode_reason_name(why.reason), why.detail,
		     custode_reason_name(reason));
	if (word)
		cr_assert_not_null(strstr(why.detail, word), "detail \"%s\" lacks \"%s\"", why.detail, word);
}

char *t_replace(const char *s, const char *from, const char *to)
{
	const char *at = strstr(s, from);
	char *out;

	cr_assert_not_null(at, "\"%s\" not found", from);
	cr_assert_gt(asprintf(&out, "%.*s%s%s", (int)(at - s), s, to, at + strlen(from)), 0);
	return out;
}

char *t_edit_payload(const char *env, void (*edit)(unsigned char *payload, size_t len))
{
	json_t *doc = json_loads(env, 0, NULL);
	unsigned char *payload;
	size_t len;
	char *b64, *out;

	cr_assert_not_null(doc);
	cr_assert_eq(custode_b64_decode(json_string_value(json_object_get(doc, "payload")),
					strlen(json_string_value(json_object_get(doc, "payload"))), &payload, &len, NULL,
					NULL),
		     0);
	edit(payload, len);
	b64 = custode_b64_encode(payload, len, false);
	json_object_set_new(doc, "payload", json_string(b64));
	out = json_dumps(doc, JSON_COMPACT);
	free(b64);
	free(payload);
	json_decref(doc);
	return out;
}

char *t_tmpdir(void)
{
	char *dir = strdup("/tmp/custode-test-bundle-XXXXXX");

	cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	return dir;
}

void t_rmdir(char *dir)
{
	if (dir)
		custode_rm_rf(dir);
	free(dir);
}
