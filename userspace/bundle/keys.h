/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Keys for bundles: Ed25519 and ECDSA P-256/SHA-256 through OpenSSL 3 EVP.
 * The algorithm is a property of the key, never of the envelope: an Ed25519
 * key verifies Ed25519 signatures of the message, a P-256 key verifies DER
 * ECDSA signatures over SHA-256 of the message, and nothing else.
 */
#ifndef CUSTODE_BUNDLE_KEYS_H
#define CUSTODE_BUNDLE_KEYS_H

#include <stddef.h>
#include <openssl/evp.h>

#include "bundle/bundle.h"
#include "bundle/sign.h"

struct custode_key {
	EVP_PKEY *pkey;
	int alg;                        /* enum custode_key_alg */
	char id[CUSTODE_KEY_ID_LEN];    /* hex sha256 of the DER SubjectPublicKeyInfo */
	char *label;                    /* file name, for messages */
};

struct custode_trust {
	struct custode_key keys[CUSTODE_BUNDLE_MAX_KEYS];
	size_t n;
	unsigned threshold;
	unsigned skew;
};

/* 1: sig is a valid signature of msg by k; 0: it is not (any malformation included). */
int custode_key_verify(const struct custode_key *k, const void *msg, size_t len, const void *sig, size_t sig_len);

/* "ed25519" / "ecdsa-p256-sha256" (enum custode_key_alg in sign.h) */
const char *custode_key_alg_name(int alg);

#endif
