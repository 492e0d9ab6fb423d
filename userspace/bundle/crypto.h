/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OpenSSL's libcrypto, opened when a command first needs it (a bundle, a key,
 * a digest of a policy file) instead of at every start of the binary: loading
 * and relocating libcrypto.so.3 was most of what `custode run --profile`
 * paid before main() (docs/benchmarks.md, start-up). The built-in profiles'
 * digests are made at build time, so such a run never opens it.
 *
 * Include this after the OpenSSL headers: the functions bundle/ calls are
 * renamed to wrappers that open the library on first use and, when it can't
 * be opened, fail the way the OpenSSL function reports failure (NULL, 0 or
 * -1), so every caller's error path runs; custode_crypto_error() says why.
 * The package depends on libssl3 as before (CMakeLists.txt).
 */
#ifndef CUSTODE_BUNDLE_CRYPTO_H
#define CUSTODE_BUNDLE_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

/* The soname opened; Debian's libssl3 ships it. */
#define CUSTODE_LIBCRYPTO "libcrypto.so.3"

/*
 * F(ret, name, params, args, failure): a function wrapped as
 * custode_ossl_<name>, returning `failure` when the library can't be opened.
 * V(name, params, args): the same for a function returning nothing.
 */
#define CUSTODE_CRYPTO_FUNCS(F, V)                                                                                  \
	F(long, BIO_ctrl, (BIO * b, int cmd, long larg, void *parg), (b, cmd, larg, parg), 0)                      \
	F(int, BIO_free, (BIO * a), (a), 0)                                                                         \
	F(BIO *, BIO_new, (const BIO_METHOD *t), (t), NULL)                                                        \
	F(BIO *, BIO_new_mem_buf, (const void *buf, int len), (buf, len), NULL)                                     \
	F(const BIO_METHOD *, BIO_s_mem, (void), (), NULL)                                                         \
	V(CRYPTO_free, (void *p, const char *file, int line), (p, file, line))                                      \
	V(ERR_clear_error, (void), ())                                                                              \
	V(ERR_error_string_n, (unsigned long e, char *buf, size_t len), (e, buf, len))                              \
	F(unsigned long, ERR_peek_last_error, (void), (), 0)                                                        \
	F(int, EVP_Digest,                                                                                          \
	  (const void *data, size_t count, unsigned char *md, unsigned int *size, const EVP_MD *type, ENGINE *impl), \
	  (data, count, md, size, type, impl), 0)                                                                   \
	F(int, EVP_DigestSign,                                                                                      \
	  (EVP_MD_CTX * ctx, unsigned char *sig, size_t *siglen, const unsigned char *tbs, size_t tbslen),         \
	  (ctx, sig, siglen, tbs, tbslen), 0)                                                                       \
	F(int, EVP_DigestSignInit, (EVP_MD_CTX * ctx, EVP_PKEY_CTX **pctx, const EVP_MD *type, ENGINE *e, EVP_PKEY *k), \
	  (ctx, pctx, type, e, k), 0)                                                                               \
	F(int, EVP_DigestVerify,                                                                                    \
	  (EVP_MD_CTX * ctx, const unsigned char *sig, size_t siglen, const unsigned char *tbs, size_t tbslen),    \
	  (ctx, sig, siglen, tbs, tbslen), 0)                                                                       \
	F(int, EVP_DigestVerifyInit,                                                                                \
	  (EVP_MD_CTX * ctx, EVP_PKEY_CTX **pctx, const EVP_MD *type, ENGINE *e, EVP_PKEY *k),                     \
	  (ctx, pctx, type, e, k), 0)                                                                               \
	V(EVP_MD_CTX_free, (EVP_MD_CTX * ctx), (ctx))                                                               \
	F(EVP_MD_CTX *, EVP_MD_CTX_new, (void), (), NULL)                                                          \
	V(EVP_PKEY_free, (EVP_PKEY * k), (k))                                                                       \
	F(int, EVP_PKEY_get_base_id, (const EVP_PKEY *k), (k), 0)                                                   \
	F(int, EVP_PKEY_get_group_name, (const EVP_PKEY *k, char *name, size_t size, size_t *len),                 \
	  (k, name, size, len), 0)                                                                                  \
	F(const EVP_MD *, EVP_sha256, (void), (), NULL)                                                            \
	F(const char *, OBJ_nid2sn, (int n), (n), NULL)                                                            \
	F(EVP_PKEY *, PEM_read_bio_PUBKEY, (BIO * b, EVP_PKEY **x, pem_password_cb *cb, void *u), (b, x, cb, u),    \
	  NULL)                                                                                                     \
	F(EVP_PKEY *, PEM_read_bio_PrivateKey, (BIO * b, EVP_PKEY **x, pem_password_cb *cb, void *u),              \
	  (b, x, cb, u), NULL)                                                                                      \
	F(int, PEM_write_bio_PUBKEY, (BIO * b, const EVP_PKEY *x), (b, x), 0)                                       \
	F(int, PEM_write_bio_PrivateKey,                                                                            \
	  (BIO * b, const EVP_PKEY *x, const EVP_CIPHER *enc, const unsigned char *kstr, int klen,                 \
	   pem_password_cb *cb, void *u),                                                                           \
	  (b, x, enc, kstr, klen, cb, u), 0)                                                                        \
	F(int, i2d_PUBKEY, (const EVP_PKEY *a, unsigned char **pp), (a, pp), -1)

#define CUSTODE_CRYPTO_DECLARE_F(ret, name, params, args, failure) ret custode_ossl_##name params;
#define CUSTODE_CRYPTO_DECLARE_V(name, params, args) void custode_ossl_##name params;
CUSTODE_CRYPTO_FUNCS(CUSTODE_CRYPTO_DECLARE_F, CUSTODE_CRYPTO_DECLARE_V)

/* EVP_PKEY_Q_keygen(NULL, NULL, type[, group]): a new key, "ED25519" (group NULL) or "EC" with group "P-256". */
EVP_PKEY *custode_ossl_keygen(const char *type, const char *group);

/* OPENSSL_cleanse without the library: memory is cleared whether or not it opens. */
void custode_ossl_cleanse(void *p, size_t len);

/* Open libcrypto now (once per process); false when it can't be, custode_crypto_error() says why. */
bool custode_crypto_open(void);

/* Why libcrypto could not be opened ("" when it was, or was never tried). */
const char *custode_crypto_error(void);

#ifndef CUSTODE_CRYPTO_IMPL
#define BIO_ctrl custode_ossl_BIO_ctrl
#define BIO_free custode_ossl_BIO_free
#define BIO_new custode_ossl_BIO_new
#define BIO_new_mem_buf custode_ossl_BIO_new_mem_buf
#define BIO_s_mem custode_ossl_BIO_s_mem
#define CRYPTO_free custode_ossl_CRYPTO_free
#define ERR_clear_error custode_ossl_ERR_clear_error
#define ERR_error_string_n custode_ossl_ERR_error_string_n
#define ERR_peek_last_error custode_ossl_ERR_peek_last_error
#define EVP_Digest custode_ossl_EVP_Digest
#define EVP_DigestSign custode_ossl_EVP_DigestSign
#define EVP_DigestSignInit custode_ossl_EVP_DigestSignInit
#define EVP_DigestVerify custode_ossl_EVP_DigestVerify
#define EVP_DigestVerifyInit custode_ossl_EVP_DigestVerifyInit
#define EVP_MD_CTX_free custode_ossl_EVP_MD_CTX_free
#define EVP_MD_CTX_new custode_ossl_EVP_MD_CTX_new
#define EVP_PKEY_free custode_ossl_EVP_PKEY_free
#define EVP_PKEY_get_base_id custode_ossl_EVP_PKEY_get_base_id
#define EVP_PKEY_get_group_name custode_ossl_EVP_PKEY_get_group_name
#define EVP_sha256 custode_ossl_EVP_sha256
#define OBJ_nid2sn custode_ossl_OBJ_nid2sn
#define PEM_read_bio_PUBKEY custode_ossl_PEM_read_bio_PUBKEY
#define PEM_read_bio_PrivateKey custode_ossl_PEM_read_bio_PrivateKey
#define PEM_write_bio_PUBKEY custode_ossl_PEM_write_bio_PUBKEY
#define PEM_write_bio_PrivateKey custode_ossl_PEM_write_bio_PrivateKey
#define i2d_PUBKEY custode_ossl_i2d_PUBKEY
#undef OPENSSL_cleanse
#define OPENSSL_cleanse custode_ossl_cleanse
#endif

#endif
