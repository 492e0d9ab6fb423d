// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "bundle/crypto.h"
#include "bundle/keys.h"
#include "bundle/sign.h"
#include "util/fsutil.h"

/* Key files are small; anything larger is not a key. */
#define KEY_FILE_MAX (64u << 10)

#define KEYERR(why, err, ...) custode_refuse(why, err, CUSTODE_REASON_BUNDLE_KEY, __VA_ARGS__)

struct custode_signing_key {
	struct custode_key k;
};

const char *custode_key_alg_name(int alg)
{
	return alg == CUSTODE_KEY_ED25519 ? "ed25519" : alg == CUSTODE_KEY_P256 ? "ecdsa-p256-sha256" : "unknown";
}

/* The last OpenSSL error as text, clearing the queue. */
static const char *ssl_error(void)
{
	static __thread char buf[160];
	unsigned long e = ERR_peek_last_error();

	if (!custode_crypto_open())
		return custode_crypto_error();
	if (!e)
		snprintf(buf, sizeof(buf), "unknown OpenSSL error");
	else
		ERR_error_string_n(e, buf, sizeof(buf));
	ERR_clear_error();
	return buf;
}

/* Algorithm of pkey if it is one custode accepts, else 0. */
static int key_alg(EVP_PKEY *pkey)
{
	char group[64];
	size_t glen = 0;

	if (EVP_PKEY_get_base_id(pkey) == EVP_PKEY_ED25519)
		return CUSTODE_KEY_ED25519;
	if (EVP_PKEY_get_base_id(pkey) == EVP_PKEY_EC &&
	    EVP_PKEY_get_group_name(pkey, group, sizeof(group), &glen) == 1 &&
	    (strcmp(group, "prime256v1") == 0 || strcmp(group, "P-256") == 0))
		return CUSTODE_KEY_P256;
	ERR_clear_error();
	return 0;
}

static int key_fingerprint(EVP_PKEY *pkey, char id[CUSTODE_KEY_ID_LEN])
{
	unsigned char *der = NULL, md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	int n = i2d_PUBKEY(pkey, &der);

	if (n <= 0) {
		ERR_clear_error();
		return -EINVAL;
	}
	if (!EVP_Digest(der, (size_t)n, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32) {
		OPENSSL_free(der);
		ERR_clear_error();
		return -EIO;
	}
	OPENSSL_free(der);
	for (unsigned i = 0; i < 32; i++)
		snprintf(id + 2 * i, 3, "%02x", md[i]);
	return 0;
}

/* How many PEM objects the text holds ("-----BEGIN " lines). */
static int pem_objects(const char *text, size_t len, const char **first_label)
{
	static const char tag[] = "-----BEGIN ";
	int n = 0;

	*first_label = NULL;
	for (const char *p = text; p && (size_t)(p - text) < len;) {
		p = memmem(p, len - (size_t)(p - text), tag, sizeof(tag) - 1);
		if (!p)
			break;
		if (!n)
			*first_label = p + sizeof(tag) - 1;
		n++;
		p += sizeof(tag) - 1;
	}
	return n;
}

static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf, (void)size, (void)rwflag, (void)u;
	return -1;
}

/* Load a public (private=false) or private key from PEM text into k. */
static int key_from_pem(const void *pem, size_t len, const char *label, bool private, struct custode_key *k,
			struct custode_refusal *why)
{
	const char *first;
	int objs, alg;
	EVP_PKEY *pkey;
	BIO *bio;

	if (len > KEY_FILE_MAX)
		return KEYERR(why, EFBIG, "%s: larger than %u bytes, not a key file", label, KEY_FILE_MAX);
	if (memchr(pem, 0, len))
		return KEYERR(why, EINVAL, "%s: not a PEM file (binary content)", label);
	objs = pem_objects(pem, len, &first);
	if (objs == 0)
		return KEYERR(why, EINVAL, "%s: not a PEM file", label);
	if (objs > 1)
		return KEYERR(why, EINVAL, "%s: holds %d PEM objects; a key file holds exactly one", label, objs);
	if (!private && strncmp(first, "PUBLIC KEY-----", 15) != 0) {
		if (!strncmp(first, "PRIVATE KEY-----", 16) || !strncmp(first, "EC PRIVATE KEY-----", 19) ||
		    !strncmp(first, "ENCRYPTED PRIVATE KEY-----", 26))
			return KEYERR(why, EINVAL, "%s: is a private key; trust its public key (the .pub file)", label);
		return KEYERR(why, EINVAL, "%s: not a PEM \"PUBLIC KEY\" (SubjectPublicKeyInfo)", label);
	}
	if (private && !strncmp(first, "PUBLIC KEY-----", 15))
		return KEYERR(why, EINVAL, "%s: is a public key; signing needs the private key", label);
	if (private && strncmp(first, "ENCRYPTED PRIVATE KEY-----", 26) == 0)
		return KEYERR(why, EINVAL, "%s: encrypted private keys are not supported; use --signer-cmd", label);
	if (!custode_crypto_open())
		return KEYERR(why, ELIBACC, "%s: OpenSSL is needed for keys and cannot be opened: %s", label,
			      custode_crypto_error());
	bio = BIO_new_mem_buf(pem, (int)len);
	if (!bio)
		return KEYERR(why, ENOMEM, "%s: out of memory", label);
	pkey = private ? PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL) : PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
	BIO_free(bio);
	if (!pkey)
		return KEYERR(why, EINVAL, "%s: unreadable %s key: %s", label, private ? "private" : "public", ssl_error());
	alg = key_alg(pkey);
	if (!alg) {
		EVP_PKEY_free(pkey);
		return KEYERR(why, ENOTSUP, "%s: unsupported key type %s (custode accepts Ed25519 and ECDSA P-256)", label,
			      OBJ_nid2sn(EVP_PKEY_get_base_id(pkey)) ? OBJ_nid2sn(EVP_PKEY_get_base_id(pkey)) : "?");
	}
	memset(k, 0, sizeof(*k));
	if (key_fingerprint(pkey, k->id) < 0 || !(k->label = strdup(label))) {
		EVP_PKEY_free(pkey);
		return KEYERR(why, ENOMEM, "%s: cannot encode the public key", label);
	}
	k->pkey = pkey;
	k->alg = alg;
	return 0;
}

static void key_clear(struct custode_key *k)
{
	EVP_PKEY_free(k->pkey);
	free(k->label);
	memset(k, 0, sizeof(*k));
}

static int read_key_file(const char *path, char **text, size_t *len, struct custode_refusal *why)
{
	int err = custode_read_file(path, KEY_FILE_MAX, text, len);

	if (err == -EFBIG)
		return KEYERR(why, EFBIG, "%s: larger than %u bytes, not a key file", path, KEY_FILE_MAX);
	if (err)
		return KEYERR(why, -err, "%s: %s", path, strerror(-err));
	return 0;
}

int custode_key_verify(const struct custode_key *k, const void *msg, size_t len, const void *sig, size_t sig_len)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int ok = 0;

	if (!ctx)
		return 0;
	/* Ed25519 is PureEdDSA: no digest may be named; ECDSA P-256 hashes with SHA-256. */
	if (EVP_DigestVerifyInit(ctx, NULL, k->alg == CUSTODE_KEY_ED25519 ? NULL : EVP_sha256(), NULL, k->pkey) == 1)
		ok = EVP_DigestVerify(ctx, sig, sig_len, msg, len) == 1;
	EVP_MD_CTX_free(ctx);
	ERR_clear_error();
	return ok;
}

/* ---- trust ---- */

int custode_trust_new(struct custode_trust **out)
{
	struct custode_trust *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->threshold = 1;
	t->skew = CUSTODE_BUNDLE_SKEW_DEFAULT;
	*out = t;
	return 0;
}

void custode_trust_free(struct custode_trust *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		key_clear(&t->keys[i]);
	free(t);
}

int custode_trust_add_pem(struct custode_trust *t, const void *pem, size_t len, const char *label,
			  struct custode_refusal *why)
{
	struct custode_key k;
	int err;

	if ((err = key_from_pem(pem, len, label ? label : "key", false, &k, why)))
		return err;
	/* Distinct by public key, not by file: the same key under two names counts once. */
	for (size_t i = 0; i < t->n; i++) {
		if (!strcmp(t->keys[i].id, k.id)) {
			key_clear(&k);
			return 0;
		}
	}
	if (t->n >= CUSTODE_BUNDLE_MAX_KEYS) {
		key_clear(&k);
		return KEYERR(why, E2BIG, "%s: more than %d trusted keys", label ? label : "key", CUSTODE_BUNDLE_MAX_KEYS);
	}
	t->keys[t->n++] = k;
	return 1;
}

int custode_trust_add_file(struct custode_trust *t, const char *path, struct custode_refusal *why)
{
	size_t len;
	char *text;
	int err;

	if ((err = read_key_file(path, &text, &len, why)))
		return err;
	err = custode_trust_add_pem(t, text, len, path, why);
	free(text);
	return err;
}

int custode_trust_set_threshold(struct custode_trust *t, unsigned threshold, struct custode_refusal *why)
{
	if (threshold < 1 || threshold > CUSTODE_BUNDLE_MAX_KEYS)
		return custode_refuse(why, EINVAL, CUSTODE_REASON_RUN_USAGE, "threshold %u: must be 1..%d", threshold,
				      CUSTODE_BUNDLE_MAX_KEYS);
	t->threshold = threshold;
	return 0;
}

int custode_trust_set_skew(struct custode_trust *t, unsigned seconds, struct custode_refusal *why)
{
	if (seconds > CUSTODE_BUNDLE_SKEW_MAX)
		return custode_refuse(why, EINVAL, CUSTODE_REASON_RUN_USAGE, "clock skew %u s: at most %d s",
				      seconds, CUSTODE_BUNDLE_SKEW_MAX);
	t->skew = seconds;
	return 0;
}

size_t custode_trust_count(const struct custode_trust *t)
{
	return t ? t->n : 0;
}

const char *custode_trust_label(const struct custode_trust *t, const char *key_id)
{
	for (size_t i = 0; t && i < t->n; i++)
		if (!strcmp(t->keys[i].id, key_id))
			return t->keys[i].label;
	return NULL;
}

/* ---- private keys ---- */

int custode_signing_key_load_pem(const void *pem, size_t len, const char *label, struct custode_signing_key **out,
				 struct custode_refusal *why)
{
	struct custode_signing_key *sk = calloc(1, sizeof(*sk));
	int err;

	if (!sk)
		return KEYERR(why, ENOMEM, "out of memory");
	if ((err = key_from_pem(pem, len, label ? label : "key", true, &sk->k, why))) {
		free(sk);
		return err;
	}
	*out = sk;
	return 0;
}

int custode_signing_key_load(const char *path, struct custode_signing_key **out, struct custode_refusal *why)
{
	size_t len;
	char *text;
	int err;

	if ((err = read_key_file(path, &text, &len, why)))
		return err;
	err = custode_signing_key_load_pem(text, len, path, out, why);
	OPENSSL_cleanse(text, len);
	free(text);
	return err;
}

void custode_signing_key_free(struct custode_signing_key *k)
{
	if (!k)
		return;
	key_clear(&k->k);
	free(k);
}

const char *custode_signing_key_id(const struct custode_signing_key *k)
{
	return k->k.id;
}

void custode_bundle_sig_clear(struct custode_bundle_sig *s)
{
	free(s->sig);
	free(s->keyid);
	memset(s, 0, sizeof(*s));
}

int custode_signing_key_sign(const struct custode_signing_key *sk, const void *msg, size_t len,
			     struct custode_bundle_sig *out, struct custode_refusal *why)
{
	const struct custode_key *k = &sk->k;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char *sig = NULL;
	size_t n = 0;

	if (!ctx)
		return KEYERR(why, ENOMEM, "out of memory");
	if (EVP_DigestSignInit(ctx, NULL, k->alg == CUSTODE_KEY_ED25519 ? NULL : EVP_sha256(), NULL, k->pkey) != 1 ||
	    EVP_DigestSign(ctx, NULL, &n, msg, len) != 1 || n == 0 || n > CUSTODE_BUNDLE_MAX_SIG ||
	    !(sig = malloc(n)) || EVP_DigestSign(ctx, sig, &n, msg, len) != 1) {
		free(sig);
		EVP_MD_CTX_free(ctx);
		return KEYERR(why, EIO, "%s: signing failed: %s", k->label, ssl_error());
	}
	EVP_MD_CTX_free(ctx);
	out->sig = sig;
	out->sig_len = n;
	out->keyid = NULL;
	/* Self-check: a signature that does not verify is never handed out. */
	if (custode_key_verify(k, msg, len, sig, n) != 1) {
		custode_bundle_sig_clear(out);
		return KEYERR(why, EIO, "%s: the new signature does not verify", k->label);
	}
	return 0;
}

/* ---- key generation ---- */

static int write_new_file(const char *path, const void *data, size_t len, mode_t mode, struct custode_refusal *why)
{
	const char *p = data;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);

	if (fd < 0)
		return KEYERR(why, errno, "%s: %s%s", path, strerror(errno),
			      errno == EEXIST ? " (custode never overwrites a key file)" : "");
	/* The umask may only have narrowed the mode; make it exactly mode. */
	if (fchmod(fd, mode) < 0)
		goto fail;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			goto fail;
		p += w;
		len -= (size_t)w;
	}
	if (fsync(fd) < 0)
		goto fail;
	if (close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	return 0;
fail : {
	int e = errno ? errno : EIO;
	if (fd >= 0)
		close(fd);
	unlink(path);
	return KEYERR(why, e, "%s: %s", path, strerror(e));
}
}

static int pem_bytes(EVP_PKEY *pkey, bool private, char **out, size_t *len)
{
	BIO *bio = BIO_new(BIO_s_mem());
	char *data;
	long n;
	int ok;

	if (!bio)
		return -ENOMEM;
	ok = private ? PEM_write_bio_PrivateKey(bio, pkey, NULL, NULL, 0, NULL, NULL) : PEM_write_bio_PUBKEY(bio, pkey);
	n = BIO_get_mem_data(bio, &data);
	if (!ok || n <= 0 || !(*out = malloc((size_t)n))) {
		BIO_free(bio);
		ERR_clear_error();
		return -EIO;
	}
	memcpy(*out, data, (size_t)n);
	*len = (size_t)n;
	BIO_free(bio);
	return 0;
}

int custode_bundle_keygen(const char *path, enum custode_key_alg alg, char key_id[CUSTODE_KEY_ID_LEN],
			  struct custode_refusal *why)
{
	char pub_path[PATH_MAX], id[CUSTODE_KEY_ID_LEN];
	char *priv = NULL, *pub = NULL;
	size_t priv_len = 0, pub_len = 0;
	EVP_PKEY *pkey;
	int err;

	if (snprintf(pub_path, sizeof(pub_path), "%s.pub", path) >= (int)sizeof(pub_path))
		return KEYERR(why, ENAMETOOLONG, "%s: name too long", path);
	/* Refuse before creating anything when either file exists. */
	for (int i = 0; i < 2; i++) {
		const char *p = i ? pub_path : path;
		if (faccessat(AT_FDCWD, p, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
			return KEYERR(why, EEXIST, "%s: exists (custode never overwrites a key file)", p);
		if (errno != ENOENT)
			return KEYERR(why, errno, "%s: %s", p, strerror(errno));
	}
	if (alg == CUSTODE_KEY_ED25519)
		pkey = custode_ossl_keygen("ED25519", NULL);
	else if (alg == CUSTODE_KEY_P256)
		pkey = custode_ossl_keygen("EC", "P-256");
	else
		return KEYERR(why, EINVAL, "unknown key algorithm %d", alg);
	if (!pkey)
		return KEYERR(why, EIO, "key generation failed: %s", ssl_error());
	if (key_fingerprint(pkey, id) < 0 || pem_bytes(pkey, true, &priv, &priv_len) < 0 ||
	    pem_bytes(pkey, false, &pub, &pub_len) < 0) {
		err = KEYERR(why, EIO, "cannot encode the new key");
		goto out;
	}
	if ((err = write_new_file(path, priv, priv_len, 0600, why)))
		goto out;
	if ((err = write_new_file(pub_path, pub, pub_len, 0644, why))) {
		unlink(path); /* ours: created with O_EXCL above */
		goto out;
	}
	{
		/* Make both names durable. */
		char dir[PATH_MAX];
		char *slash;
		int dfd;

		snprintf(dir, sizeof(dir), "%s", path);
		slash = strrchr(dir, '/');
		if (!slash)
			snprintf(dir, sizeof(dir), ".");
		else
			*(slash == dir ? slash + 1 : slash) = 0;
		dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
	}
	if (key_id)
		memcpy(key_id, id, CUSTODE_KEY_ID_LEN);
	err = 0;
out:
	if (priv) {
		OPENSSL_cleanse(priv, priv_len);
		free(priv);
	}
	free(pub);
	EVP_PKEY_free(pkey);
	return err;
}
