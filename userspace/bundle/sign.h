/* SPDX-License-Identifier: Apache-2.0 */
/* Producing bundles: keys, the payload to sign, signatures, the envelope. */
#ifndef CUSTODE_BUNDLE_SIGN_H
#define CUSTODE_BUNDLE_SIGN_H

#include <stddef.h>
#include <stdint.h>

#include "bundle/bundle.h"

enum custode_key_alg { CUSTODE_KEY_ED25519 = 1, CUSTODE_KEY_P256 = 2 };

/* Longest signature accepted from a key or a signer command (Ed25519: 64, P-256 DER: <= 72). */
#define CUSTODE_BUNDLE_MAX_SIG 4096

/*
 * Generate a key pair: the private key at path (PEM PKCS#8, unencrypted,
 * mode 0600) and the public key at path.pub (PEM SubjectPublicKeyInfo, mode
 * 0644). Both are created with O_EXCL: an existing file is never overwritten
 * (bundle.key). key_id (may be NULL) receives the key's id.
 */
int custode_bundle_keygen(const char *path, enum custode_key_alg alg, char key_id[CUSTODE_KEY_ID_LEN],
			  struct custode_refusal *why);

/* A private key (Ed25519 or P-256, unencrypted PEM) for signing in-process. */
struct custode_signing_key;

int custode_signing_key_load(const char *path, struct custode_signing_key **out, struct custode_refusal *why);
int custode_signing_key_load_pem(const void *pem, size_t len, const char *label, struct custode_signing_key **out,
				 struct custode_refusal *why);
void custode_signing_key_free(struct custode_signing_key *k);
const char *custode_signing_key_id(const struct custode_signing_key *k);

/* One signature for an envelope. */
struct custode_bundle_sig {
	unsigned char *sig; /* raw signature bytes, malloc'd */
	size_t sig_len;
	char *keyid;        /* hint; NULL or "": omitted from the envelope */
};

void custode_bundle_sig_clear(struct custode_bundle_sig *s);

/* Sign msg (the PAE bytes) with k. */
int custode_signing_key_sign(const struct custode_signing_key *k, const void *msg, size_t len,
			     struct custode_bundle_sig *out, struct custode_refusal *why);

/*
 * Sign msg with an external command, run as /bin/sh -c cmd: msg is written to
 * its stdin, and its stdout is the signature as RAW BYTES (not base64; pipe a
 * base64-printing tool through `base64 -d`), 1..CUSTODE_BUNDLE_MAX_SIG bytes.
 * stderr passes through. A non-zero exit, a signal, or empty or oversized
 * output is bundle.signer. custode never sees the private key.
 */
int custode_signer_cmd_sign(const char *cmd, const void *msg, size_t len, struct custode_bundle_sig *out,
			    struct custode_refusal *why);

/*
 * Prepare a policy document for signing. The document is parsed strictly;
 * then, and nothing else: "version" is set when version >= 0; "notBefore" and
 * "notAfter" are set when valid_for > 0 (the window starts at not_before, or
 * at now when not_before < 0, and lasts valid_for seconds); "contentDigest"
 * is set to sha256(JCS(content)). A document that would not verify is
 * refused here (policy.invalid for the document itself, bundle.too_large,
 * bundle.schema), and -ENODATA (bundle.schema) means the document has no
 * validity window and valid_for was 0. *payload
 * (malloc'd) is the JCS serialization of the resulting document: the exact
 * bytes to sign. info (may be NULL) gets name, version, digest, window.
 */
int custode_bundle_prepare(const char *doc, size_t len, int64_t version, int64_t not_before, int64_t valid_for,
			   int64_t now, char **payload, size_t *payload_len, struct custode_bundle_info *info,
			   struct custode_refusal *why);

/*
 * The JSON envelope (standard base64, a trailing newline), malloc'd.
 * bundle.too_large if it would exceed CUSTODE_BUNDLE_MAX_BYTES: custode never
 * produces a bundle its verifier refuses for size.
 */
int custode_dsse_envelope_encode(const char *type, const void *payload, size_t payload_len,
				 const struct custode_bundle_sig *sigs, size_t n_sigs, char **out, size_t *out_len,
				 struct custode_refusal *why);

#endif
