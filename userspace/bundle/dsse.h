/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DSSE v1 (github.com/secure-systems-lab/dsse): the JSON envelope and the
 * pre-authentication encoding. Only the signature layer: what the payload
 * means is bundle.c's business.
 */
#ifndef CUSTODE_BUNDLE_DSSE_H
#define CUSTODE_BUNDLE_DSSE_H

#include <stddef.h>

#include "bundle/bundle.h"

struct custode_dsse_sig {
	char *keyid;          /* "" when absent */
	unsigned char *sig;   /* decoded */
	size_t sig_len;
};

struct custode_dsse {
	char *payload_type;   /* UTF-8 as in the envelope (no NULs: jansson refuses them) */
	size_t payload_type_len;
	unsigned char *payload; /* decoded; these exact bytes are verified and then parsed */
	size_t payload_len;
	struct custode_dsse_sig *sigs;
	size_t n_sigs;
};

/*
 * Parse an envelope: size (bundle.too_large past CUSTODE_BUNDLE_MAX_BYTES),
 * nesting depth (bundle.too_large past CUSTODE_BUNDLE_MAX_DEPTH, scanned
 * before parsing), then strict JSON (duplicate keys refused) and fields:
 * payload and payloadType strings (absent = empty, as the envelope spec lets
 * empty fields be omitted), signatures an array of 0..MAX objects with a
 * "sig" string and an optional "keyid" string. Unknown fields are ignored.
 * Every base64 string is decoded strictly. Failures are bundle.malformed.
 */
int custode_dsse_parse(const void *data, size_t len, struct custode_dsse **out, struct custode_refusal *why);
void custode_dsse_free(struct custode_dsse *e);

/* PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, lengths in bytes. */
int custode_dsse_pae(const void *type, size_t type_len, const void *body, size_t body_len, unsigned char **out,
		     size_t *out_len);

/*
 * Count the distinct trusted keys that signed PAE(type, payload): each
 * signature is tried against every trusted key not yet counted (the keyid is
 * a hint, never trusted, so it only decides nothing). Fills signers[] (room
 * for CUSTODE_BUNDLE_MAX_KEYS) and returns 0 when at least trust->threshold
 * keys signed, else bundle.signature.
 */
int custode_dsse_verify(const struct custode_dsse *e, const struct custode_trust *trust,
			struct custode_bundle_signer *signers, size_t *n_signers, struct custode_refusal *why);

#endif
