/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Signed policy bundles (docs/bundles.md): a DSSE v1 envelope whose payload is
 * a custode.policy/v1 document.
 *
 * Verification runs in a fixed order and stops at the first failure, which is
 * a refusal with a stable reason code (include/custode/reasons.h):
 *
 *   size and JSON depth (bundle.too_large) -> envelope (bundle.malformed)
 *   -> signatures by at least `threshold` distinct trusted keys (bundle.signature)
 *   -> payloadType (bundle.type) -> schema of the verified payload bytes
 *   (bundle.schema) -> contentDigest = sha256(JCS(content)) (bundle.digest)
 *   -> notBefore/notAfter against one `now` (bundle.not_yet_valid,
 *   bundle.expired) -> version floor (bundle.rollback, bundle.state).
 *
 * Verification is pure: custode_bundle_verify() reads no state and writes
 * none. Accepting is separate: custode_bundle_accept() checks the version
 * floor and persists the new floor (atomically, fsync'd) before returning 0,
 * so a consumer that applies a policy only after accept returned 0 never runs
 * a policy the floor does not cover, and a crash anywhere before accept
 * returns leaves the previous floor (and so the previous bundle) in force.
 *
 *   daemon:  verify -> accept -> apply   (crash before accept: old floor, old policy)
 *                                        (crash after accept: the same bundle re-verifies
 *                                         and re-accepts: equal version, equal digest)
 *
 * Library code does not print; every function fills a struct custode_refusal
 * and returns a negative errno. Out-params are untouched on failure.
 */
#ifndef CUSTODE_BUNDLE_H
#define CUSTODE_BUNDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"
#include "util/reasons.h"

#define CUSTODE_BUNDLE_PAYLOAD_TYPE "application/vnd.custode.policy+json"
/* Envelope size cap, checked before reading past it and before parsing. */
#define CUSTODE_BUNDLE_MAX_BYTES (4u << 20)
/* JSON nesting cap for the envelope and for the payload, checked before parsing. */
#define CUSTODE_BUNDLE_MAX_DEPTH 64
/* Signatures per envelope, keys per trust set. */
#define CUSTODE_BUNDLE_MAX_SIGNATURES 32
#define CUSTODE_BUNDLE_MAX_KEYS 32
/* Longest keyid hint accepted in an envelope (bytes). */
#define CUSTODE_BUNDLE_MAX_KEYID 256
/* Clock skew allowed on both ends of the validity window, seconds. */
#define CUSTODE_BUNDLE_SKEW_DEFAULT 60
#define CUSTODE_BUNDLE_SKEW_MAX 300
/* Where the version floors live (one small JSON file per policy name). */
#define CUSTODE_BUNDLE_STATE_DIR "/var/lib/custode/bundles"

/* "sha256:" + 64 hex + NUL */
#define CUSTODE_DIGEST_LEN 72
/* Key ids are the lowercase hex sha256 of the key's DER SubjectPublicKeyInfo:
 * `openssl pkey -pubin -in KEY.pub -outform DER | sha256sum`. */
#define CUSTODE_KEY_ID_LEN 65

/* ---- trust: which keys may sign, how many must ---- */

/*
 * A set of trusted public keys (Ed25519 or ECDSA P-256, each fixing its own
 * algorithm), a threshold (default 1) and the allowed clock skew (default
 * CUSTODE_BUNDLE_SKEW_DEFAULT). Keys are distinct by public key: adding the
 * same key twice, from any file, keeps one.
 */
struct custode_trust;

int custode_trust_new(struct custode_trust **out);
void custode_trust_free(struct custode_trust *t);
/*
 * Add a PEM "PUBLIC KEY" (SubjectPublicKeyInfo) from a file, or from memory
 * with a label for messages. Returns 1 if added, 0 if that public key was
 * already trusted, or a negative errno with why = bundle.key (unreadable, not
 * a PEM public key, a private key, an unsupported type or curve, more than
 * CUSTODE_BUNDLE_MAX_KEYS keys).
 */
int custode_trust_add_file(struct custode_trust *t, const char *path, struct custode_refusal *why);
int custode_trust_add_pem(struct custode_trust *t, const void *pem, size_t len, const char *label,
			  struct custode_refusal *why);
/* Signatures by this many distinct trusted keys are required (1..CUSTODE_BUNDLE_MAX_KEYS). */
int custode_trust_set_threshold(struct custode_trust *t, unsigned threshold, struct custode_refusal *why);
/* Clock skew in seconds, 0..CUSTODE_BUNDLE_SKEW_MAX. */
int custode_trust_set_skew(struct custode_trust *t, unsigned seconds, struct custode_refusal *why);
size_t custode_trust_count(const struct custode_trust *t);
/* Label (file name) of the trusted key with this id, or NULL. */
const char *custode_trust_label(const struct custode_trust *t, const char *key_id);

/* ---- verification ---- */

struct custode_bundle_signer {
	char key_id[CUSTODE_KEY_ID_LEN];             /* the trusted key that verified */
	char keyid_hint[CUSTODE_BUNDLE_MAX_KEYID + 1]; /* the envelope's keyid for that signature ("" if none) */
};

struct custode_bundle_info {
	char name[CUSTODE_POLICY_MAX_NAME + 1];
	uint64_t version;
	char digest[CUSTODE_DIGEST_LEN];         /* contentDigest, recomputed and matched */
	char payload_sha256[CUSTODE_DIGEST_LEN]; /* "sha256:..." of the exact signed payload bytes */
	int64_t not_before, not_after;           /* unix seconds */
	int64_t verified_at;                     /* the `now` the window was checked against */
	size_t n_signers;                        /* distinct trusted keys that signed (>= threshold) */
	struct custode_bundle_signer signers[CUSTODE_BUNDLE_MAX_KEYS];
};

/*
 * Verify an envelope held in memory, against trust, at time now (unix
 * seconds, fixed by the caller once per verification). Pure: touches no
 * state. On success *out (may be NULL if not wanted) is the policy parsed
 * from the exact verified payload bytes and *info (may be NULL) describes it.
 */
int custode_bundle_verify(const void *data, size_t len, const struct custode_trust *trust, int64_t now,
			  struct custode_policy **out, struct custode_bundle_info *info, struct custode_refusal *why);

/* Read a bundle file (at most CUSTODE_BUNDLE_MAX_BYTES; bundle.too_large past it) and verify it. */
int custode_bundle_verify_file(const char *path, const struct custode_trust *trust, int64_t now,
			       struct custode_policy **out, struct custode_bundle_info *info,
			       struct custode_refusal *why);

/* ---- version floor ---- */

struct custode_bundle_floor {
	char name[CUSTODE_POLICY_MAX_NAME + 1];
	uint64_t version;
	char digest[CUSTODE_DIGEST_LEN];
	int64_t accepted_at;
};

/*
 * The floor recorded for a policy name in state_dir: 0 and *out filled, 1 if
 * none is recorded (no file, or no state_dir yet), or a refusal with
 * bundle.state when the state file or directory is unreadable, corrupt, or
 * writable by others than its owner (root or the caller). Never resets.
 */
int custode_bundle_floor_get(const char *state_dir, const char *name, struct custode_bundle_floor *out,
			     struct custode_refusal *why);

/*
 * Compare a verified bundle with its floor, read-only: bundle.rollback if
 * info->version is below the floor, or equal with another digest.
 */
int custode_bundle_floor_check(const char *state_dir, const struct custode_bundle_info *info,
			       struct custode_refusal *why);

/*
 * Check the floor and, when info->version is above it (or there is none),
 * persist the new floor: state file written to a temp file, fsync'd, renamed,
 * directory fsync'd, all under an exclusive lock on state_dir, which is
 * created (0700) if missing. Returns 0 once the floor is durable; an equal
 * version with the same digest is accepted without a write. *raised (may be
 * NULL) says whether the floor moved.
 */
int custode_bundle_accept(const char *state_dir, const struct custode_bundle_info *info, bool *raised,
			  struct custode_refusal *why);

/*
 * What `custode run --bundle` and the daemon call: read path, verify against
 * trust at now, then accept into state_dir (NULL: CUSTODE_BUNDLE_STATE_DIR).
 * There is deliberately no way to skip the floor here; a caller that must
 * not touch state uses custode_bundle_verify_file(). On success the caller
 * owns *out (custode_policy_free).
 */
int custode_bundle_load(const char *path, const struct custode_trust *trust, int64_t now, const char *state_dir,
			struct custode_policy **out, struct custode_bundle_info *info, struct custode_refusal *why);

/* ---- inspection, without trusting ---- */

/*
 * Everything an envelope says, decoded but NOT verified: no signature is
 * checked. Each later stage records its own outcome instead of stopping, so
 * a display can show all of them. For `custode bundle inspect` and the fuzzer.
 */
struct custode_bundle_report {
	char *payload_type;
	size_t payload_type_len;
	unsigned char *payload;
	size_t payload_len;
	size_t n_signatures;
	char **keyids;          /* n_signatures hints, "" where absent */
	size_t *sig_lens;       /* decoded signature lengths */

	bool type_ok;
	bool schema_ok;         /* payload is a valid policy document */
	struct custode_refusal schema_why;
	struct custode_policy *policy; /* when schema_ok */
	bool digest_present, digest_ok;
	char digest_computed[CUSTODE_DIGEST_LEN]; /* "" when content could not be canonicalized */
	struct custode_refusal digest_why;
	bool window_present;
	int window_reason;      /* 0 inside [notBefore, notAfter) at now with the default skew, else the reason */
	struct custode_bundle_info info; /* name, version, digest, window and payload hash when known; no signers */
};

/* Decode an envelope. Fails (bundle.too_large, bundle.malformed) only when the envelope itself is unusable. */
int custode_bundle_inspect(const void *data, size_t len, int64_t now, struct custode_bundle_report **out,
			   struct custode_refusal *why);
void custode_bundle_report_free(struct custode_bundle_report *r);

#endif
