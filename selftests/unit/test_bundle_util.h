/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the test_bundle_*.c files (defined in test_bundle_util.c). */
#ifndef CUSTODE_TEST_BUNDLE_UTIL_H
#define CUSTODE_TEST_BUNDLE_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "bundle/bundle.h"
#include "bundle/sign.h"

/* 2030-01-01T00:00:00Z: inside the 2026..2036 window the test documents carry. */
#define T_NOW 1893456000LL
#define T_TYPE CUSTODE_BUNDLE_PAYLOAD_TYPE

/* A trust set of the given PEM public keys (NULL-terminated); asserts on failure. */
struct custode_trust *t_trust(const char *pem, ...);

/*
 * A policy document named `name` at `version`, window 2026-01-01..2036-01-01,
 * content `content` (JSON object text), contentDigest correct unless
 * digest_override is non-NULL. malloc'd.
 */
char *t_doc(const char *name, uint64_t version, const char *content, const char *digest_override);

/* Envelope of payload/type signed by each private PEM (NULL-terminated). malloc'd. */
char *t_envelope(const char *type, const void *payload, size_t len, const char *priv_pem, ...);

/* Envelope of doc (a policy document) as a bundle, signed by priv_pem. malloc'd. */
char *t_bundle(const char *doc, const char *priv_pem);

/* Verify env (NUL-terminated) against trust at T_NOW; returns the error and fills why. */
int t_verify(const char *env, const struct custode_trust *trust, struct custode_refusal *why);

/* Assert env is refused with `reason` (and detail containing `word` if non-NULL). */
void t_refused(const char *env, const struct custode_trust *trust, int reason, const char *word);

/* Replace the first occurrence of `from` in s by `to` (same or other length). malloc'd; asserts it occurs. */
char *t_replace(const char *s, const char *from, const char *to);

/* Decode an envelope's payload, let edit() change it, re-encode it (signatures untouched). malloc'd. */
char *t_edit_payload(const char *env, void (*edit)(unsigned char *payload, size_t len));

/* A fresh private temporary directory (mode 0700); t_rmdir removes it. */
char *t_tmpdir(void);
void t_rmdir(char *dir);

#endif
