// SPDX-License-Identifier: Apache-2.0
/* Producing bundles: prepare (what sign changes), keygen, the external signer. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <criterion/criterion.h>
#include <jansson.h>

#include "bundle/dsse.h"
#include "bundle/keys.h"
#include "policy/profiles.h"
#include "test_bundle_util.h"
#include "util/fsutil.h"
#include "vectors/dsse_vectors.h"

#define R(x) CUSTODE_REASON_BUNDLE_##x

static char *dir;

static void setup(void)
{
	dir = t_tmpdir();
}

static void teardown(void)
{
	t_rmdir(dir);
}

TestSuite(bundle_sign, .init = setup, .fini = teardown);

static char *prepare_ok(const char *doc, int64_t version, int64_t nb, int64_t valid_for, struct custode_bundle_info *info)
{
	struct custode_refusal why = {0};
	char *payload = NULL;
	size_t len = 0;

	cr_assert_eq(custode_bundle_prepare(doc, strlen(doc), version, nb, valid_for, T_NOW, &payload, &len, info, &why), 0,
		     "%s: %s", custode_reason_name(why.reason), why.detail);
	cr_assert_eq(strlen(payload), len);
	return payload;
}

/* Sign payload with key 1 and verify it at T_NOW against key 1. */
static void signs_and_verifies(const char *payload)
{
	struct custode_trust *t = t_trust(rfc8032_key1_pub, NULL);
	char *env = t_envelope(T_TYPE, payload, strlen(payload), rfc8032_key1_priv, NULL);
	struct custode_refusal why;

	cr_assert_eq(t_verify(env, t, &why), 0, "%s: %s", custode_reason_name(why.reason), why.detail);
	free(env);
	custode_trust_free(t);
}

/* The built-in profiles sign as they are: only the digest, version and window are set. */
Test(bundle_sign, builtin_profiles_sign_unchanged)
{
	for (const struct custode_builtin_profile *bp = custode_builtin_profiles; bp->name; bp++) {
		char *text = strndup(bp->text, bp->len), *payload;
		json_t *orig = json_loads(text, 0, NULL), *signed_doc;
		struct custode_bundle_info info;

		cr_assert_not_null(orig);
		payload = prepare_ok(text, -1, -1, 30 * 86400, &info);
		signed_doc = json_loads(payload, 0, NULL);
		cr_assert_not_null(signed_doc);
		/* what sign added */
		cr_assert_str_eq(json_string_value(json_object_get(signed_doc, "contentDigest")), info.digest);
		cr_assert_eq(info.not_before, T_NOW);
		cr_assert_eq(info.not_after, T_NOW + 30 * 86400);
		cr_assert_eq(json_integer_value(json_object_get(signed_doc, "version")),
			     json_integer_value(json_object_get(orig, "version")));
		/* ... and nothing else */
		json_object_del(signed_doc, "contentDigest");
		json_object_del(signed_doc, "notBefore");
		json_object_del(signed_doc, "notAfter");
		json_object_del(orig, "contentDigest");
		json_object_del(orig, "notBefore");
		json_object_del(orig, "notAfter");
		cr_assert(json_equal(orig, signed_doc), "profile %s changed beyond digest and window", bp->name);
		signs_and_verifies(payload);
		json_decref(orig);
		json_decref(signed_doc);
		free(payload);
		free(text);
	}
}

Test(bundle_sign, payload_is_canonical)
{
	const char *doc = "{ \"version\": 1, \"name\": \"t/c\", \"schema\": \"custode.policy/v1\",\n"
			  "  \"content\": { \"limits\": {\"cpu\": 0.50, \"pids\": 1E1} , \"mode\": \"audit\" } }";
	struct custode_bundle_info info;
	char *payload = prepare_ok(doc, -1, -1, 3600, &info);
	char want[600];

	snprintf(want, sizeof(want),
		 "{\"content\":{\"limits\":{\"cpu\":0.5,\"pids\":10},\"mode\":\"audit\"},\"contentDigest\":\"%s\","
		 "\"name\":\"t/c\",\"notAfter\":\"2030-01-01T01:00:00Z\",\"notBefore\":\"2030-01-01T00:00:00Z\","
		 "\"schema\":\"custode.policy/v1\",\"version\":1}",
		 info.digest);
	cr_assert_str_eq(payload, want);
	free(payload);
}

Test(bundle_sign, version_and_window_options)
{
	char *doc = t_doc("t/opts", 4, "{}", NULL);
	struct custode_bundle_info info;
	char *p1 = prepare_ok(doc, -1, -1, 0, &info);
	char *p2;

	/* the document's own window and version are kept when no option is given */
	cr_assert_eq(info.version, 4);
	cr_assert_eq(info.not_before, 1767225600);
	cr_assert_eq(info.not_after, 2082758400);
	p2 = prepare_ok(doc, 12, 1900000000, 86400, &info);
	cr_assert_eq(info.version, 12);
	cr_assert_eq(info.not_before, 1900000000);
	cr_assert_eq(info.not_after, 1900000000 + 86400);
	cr_assert_not_null(strstr(p2, "\"notBefore\":\"2030-03-17T17:46:40Z\""), "%s", p2);
	free(p1);
	free(p2);
	free(doc);
}

Test(bundle_sign, refusals)
{
	static const struct {
		const char *doc;
		int reason;
		int err;
		const char *word;
	} cases[] = {
		{"{\"schema\":\"custode.policy/v1\",\"name\":\"t\",\"version\":1,\"content\":{}}", R(SCHEMA), -ENODATA,
		 "--valid-for"},
		{"not json", CUSTODE_REASON_POLICY_INVALID, -EINVAL, "policy:"},
		{"[]", CUSTODE_REASON_POLICY_INVALID, -EINVAL, "object"},
		{"{\"schema\":\"custode.policy/v1\",\"name\":\"t\",\"version\":1}", CUSTODE_REASON_POLICY_INVALID, -EINVAL,
		 "content: missing"},
		{"{\"schema\":\"custode.policy/v1\",\"name\":\"T\",\"version\":1,\"content\":{}}", CUSTODE_REASON_POLICY_INVALID,
		 -EINVAL, "name"},
		{"{\"schema\":\"custode.policy/v1\",\"name\":\"t\",\"name\":\"u\",\"version\":1,\"content\":{}}",
		 CUSTODE_REASON_POLICY_INVALID, -EINVAL, "duplicate"},
		{"{\"schema\":\"custode.policy/v1\",\"name\":\"t\",\"version\":1,\"content\":{\"limits\":{\"memoryBytes\":"
		 "9007199254740993}}}",
		 CUSTODE_REASON_POLICY_INVALID, -ERANGE, "2^53"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct custode_refusal why = {0};
		char *payload = (char *)"untouched";
		size_t len = 0;
		int err = custode_bundle_prepare(cases[i].doc, strlen(cases[i].doc), -1, -1, 0, T_NOW, &payload, &len, NULL,
						 &why);
		cr_assert_eq(err, cases[i].err, "case %zu: %d (%s)", i, err, why.detail);
		cr_assert_eq(why.reason, cases[i].reason, "case %zu: %s", i, custode_reason_name(why.reason));
		cr_assert_not_null(strstr(why.detail, cases[i].word), "case %zu: %s", i, why.detail);
		cr_assert_str_eq(payload, "untouched");
	}
}

/* ---- keys ---- */

static void check_mode(const char *path, mode_t want)
{
	struct stat st;
	cr_assert_eq(stat(path, &st), 0, "%s", path);
	cr_assert_eq(st.st_mode & 07777, want, "%s: mode %o", path, st.st_mode & 07777);
}

static void keygen_round_trip(enum custode_key_alg alg)
{
	char key[512], pub[520], id[CUSTODE_KEY_ID_LEN];
	struct custode_signing_key *k = NULL;
	struct custode_trust *t = NULL;
	struct custode_refusal why = {0};
	mode_t old = umask(0077);
	char *payload, *pem = NULL, *env;
	size_t pem_len;

	snprintf(key, sizeof(key), "%s/k-%d", dir, alg);
	snprintf(pub, sizeof(pub), "%s.pub", key);
	cr_assert_eq(custode_bundle_keygen(key, alg, id, &why), 0, "%s", why.detail);
	umask(old);
	check_mode(key, 0600);
	check_mode(pub, 0644);
	cr_assert_eq(strlen(id), 64);

	cr_assert_eq(custode_signing_key_load(key, &k, &why), 0, "%s", why.detail);
	cr_assert_str_eq(custode_signing_key_id(k), id);
	cr_assert_eq(custode_trust_new(&t), 0);
	cr_assert_eq(custode_trust_add_file(t, pub, &why), 1, "%s", why.detail);
	cr_assert_str_eq(t->keys[0].id, id);
	cr_assert_eq(t->keys[0].alg, (int)alg);
	cr_assert_str_eq(custode_trust_label(t, id), pub);
	{
		char *doc = t_doc("t/keygen", 1, "{}", NULL);
		payload = prepare_ok(doc, -1, -1, 0, NULL);
		free(doc);
	}
	cr_assert_eq(custode_read_file(key, 65536, &pem, &pem_len), 0);
	env = t_envelope(T_TYPE, payload, strlen(payload), pem, NULL);
	cr_assert_eq(t_verify(env, t, &why), 0, "%s", why.detail);
	/* the private key file is not a trust key, the public one not a signing key */
	cr_assert_lt(custode_trust_add_file(t, key, &why), 0);
	cr_assert_eq(why.reason, R(KEY));
	{
		struct custode_signing_key *k2 = NULL;
		cr_assert_lt(custode_signing_key_load(pub, &k2, &why), 0);
		cr_assert_eq(why.reason, R(KEY));
		cr_assert_null(k2);
	}
	/* never overwritten */
	{
		char *before = NULL, *after = NULL;
		cr_assert_eq(custode_read_file(key, 65536, &before, NULL), 0);
		cr_assert_lt(custode_bundle_keygen(key, alg, NULL, &why), 0);
		cr_assert_eq(why.reason, R(KEY));
		cr_assert_not_null(strstr(why.detail, "never overwrites"), "%s", why.detail);
		cr_assert_eq(custode_read_file(key, 65536, &after, NULL), 0);
		cr_assert_str_eq(before, after);
		free(before);
		free(after);
	}
	free(env);
	free(pem);
	free(payload);
	custode_signing_key_free(k);
	custode_trust_free(t);
}

Test(bundle_sign, keygen_ed25519)
{
	keygen_round_trip(CUSTODE_KEY_ED25519);
}

Test(bundle_sign, keygen_p256)
{
	keygen_round_trip(CUSTODE_KEY_P256);
}

Test(bundle_sign, keygen_refuses_existing_pub)
{
	char key[512], pub[520];
	struct custode_refusal why;

	snprintf(key, sizeof(key), "%s/k", dir);
	snprintf(pub, sizeof(pub), "%s/k.pub", dir);
	cr_assert_eq(custode_write_file_atomic(pub, "x", 1, 0644), 0);
	cr_assert_lt(custode_bundle_keygen(key, CUSTODE_KEY_ED25519, NULL, &why), 0);
	cr_assert_eq(why.reason, R(KEY));
	cr_assert_eq(access(key, F_OK), -1, "private key created although the public key exists");
}

Test(bundle_sign, encrypted_private_key_refused)
{
	static const char enc[] = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n";
	struct custode_signing_key *k = NULL;
	struct custode_refusal why;

	cr_assert_lt(custode_signing_key_load_pem(enc, strlen(enc), "enc.pem", &k, &why), 0);
	cr_assert_eq(why.reason, R(KEY));
	cr_assert_not_null(strstr(why.detail, "--signer-cmd"), "%s", why.detail);
}

/* ---- external signer ---- */

static const unsigned char msg[] = "DSSEv1 3 t/x 5 hello";

/* A signer command that checks its input and prints the signature of key 1 (computed here). */
static char *sig_file(void)
{
	struct custode_signing_key *k = NULL;
	struct custode_bundle_sig sig = {0};
	struct custode_refusal why;
	char *path;

	cr_assert_eq(custode_signing_key_load_pem(rfc8032_key1_priv, strlen(rfc8032_key1_priv), "k1", &k, &why), 0);
	cr_assert_eq(custode_signing_key_sign(k, msg, sizeof(msg) - 1, &sig, &why), 0);
	cr_assert_gt(asprintf(&path, "%s/sig.bin", dir), 0);
	cr_assert_eq(custode_write_file_atomic(path, sig.sig, sig.sig_len, 0600), 0);
	custode_bundle_sig_clear(&sig);
	custode_signing_key_free(k);
	return path;
}

Test(bundle_sign, signer_cmd)
{
	struct custode_trust *t = t_trust(rfc8032_key1_pub, NULL);
	struct custode_bundle_sig sig = {0};
	struct custode_refusal why;
	char *sf = sig_file(), *cmd, *in;

	/* the command sees exactly the message on stdin */
	cr_assert_gt(asprintf(&in, "%s/stdin", dir), 0);
	cr_assert_gt(asprintf(&cmd, "cat > '%s' && cat '%s'", in, sf), 0);
	cr_assert_eq(custode_signer_cmd_sign(cmd, msg, sizeof(msg) - 1, &sig, &why), 0, "%s", why.detail);
	cr_assert_eq(sig.sig_len, 64);
	cr_assert_eq(custode_key_verify(&t->keys[0], msg, sizeof(msg) - 1, sig.sig, sig.sig_len), 1);
	{
		char *got = NULL;
		size_t len = 0;
		cr_assert_eq(custode_read_file(in, 4096, &got, &len), 0);
		cr_assert_eq(len, sizeof(msg) - 1);
		cr_assert(memcmp(got, msg, len) == 0);
		free(got);
	}
	custode_bundle_sig_clear(&sig);
	free(cmd);
	free(in);
	free(sf);
	custode_trust_free(t);
}

/* A large message: written while the signer already reads and writes (no pipe deadlock). */
Test(bundle_sign, signer_cmd_large_message)
{
	size_t n = 3u << 20;
	unsigned char *big = malloc(n);
	struct custode_bundle_sig sig = {0};
	struct custode_refusal why;

	memset(big, 'x', n);
	cr_assert_eq(custode_signer_cmd_sign("wc -c", big, n, &sig, &why), 0, "%s", why.detail);
	cr_assert_eq(sig.sig_len, strlen("3145728\n"));
	cr_assert(memcmp(sig.sig, "3145728\n", sig.sig_len) == 0);
	custode_bundle_sig_clear(&sig);
	/* a signer that stops reading: refused, and this process survives the SIGPIPE */
	cr_assert_lt(custode_signer_cmd_sign("head -c 10 >/dev/null; echo sig", big, n, &sig, &why), 0);
	cr_assert_eq(why.reason, R(SIGNER));
	cr_assert_not_null(strstr(why.detail, "after reading"), "%s", why.detail);
	free(big);
}

Test(bundle_sign, signer_cmd_failures)
{
	static const struct {
		const char *cmd, *word;
	} cases[] = {
		{"cat >/dev/null; exit 3", "status 3"},
		{"cat >/dev/null", "no signature"},
		{"cat >/dev/null; kill -9 $$", "signal 9"},
		{"cat >/dev/null; head -c 5000 /dev/zero", "longer than"},
		{"exec 2>/dev/null; /nonexistent/signer", "status 127"},
		{"", "empty"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct custode_bundle_sig sig = {0};
		struct custode_refusal why = {0};

		cr_assert_lt(custode_signer_cmd_sign(cases[i].cmd, msg, sizeof(msg) - 1, &sig, &why), 0, "%s", cases[i].cmd);
		cr_assert_eq(why.reason, R(SIGNER), "%s", cases[i].cmd);
		cr_assert_not_null(strstr(why.detail, cases[i].word), "%s: %s", cases[i].cmd, why.detail);
		cr_assert_null(sig.sig);
	}
}

Test(bundle_sign, envelope_encode_round_trip)
{
	struct custode_bundle_sig sigs[2] = {{(unsigned char *)"\x01\x02", 2, (char *)"kid"},
					     {(unsigned char *)"\xff", 1, NULL}};
	struct custode_refusal why;
	struct custode_dsse *e = NULL;
	char *out;
	size_t len;

	cr_assert_eq(custode_dsse_envelope_encode("t/x", "\xfb\xff", 2, sigs, 2, &out, &len, &why), 0);
	cr_assert_eq(out[len - 1], '\n');
	cr_assert_str_eq(out, "{\"payload\":\"+/8=\",\"payloadType\":\"t/x\",\"signatures\":[{\"keyid\":\"kid\",\"sig\":"
			      "\"AQI=\"},{\"sig\":\"/w==\"}]}\n");
	cr_assert_eq(custode_dsse_parse(out, len, &e, &why), 0);
	cr_assert_eq(e->n_sigs, 2);
	cr_assert_str_eq(e->sigs[1].keyid, "");
	custode_dsse_free(e);
	free(out);
	/* 3.5 MiB of payload is 4.7 MiB of base64: custode does not write what it would refuse to read */
	{
		size_t n = 7u << 19;
		char *big = calloc(1, n);
		cr_assert_lt(custode_dsse_envelope_encode("t", big, n, sigs, 0, &out, &len, &why), 0);
		cr_assert_eq(why.reason, R(TOO_LARGE));
		free(big);
	}
}
