// SPDX-License-Identifier: Apache-2.0
/* The bundle pipeline: envelope -> signatures -> type -> schema -> digest -> window. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <jansson.h>

#include "bundle/crypto.h"
#include "bundle/bundle.h"
#include "bundle/dsse.h"
#include "bundle/jcs.h"
#include "bundle/keys.h"
#include "bundle/sign.h"
#include "util/time.h"

#define REFUSE(why, err, r, ...) custode_refuse(why, err, CUSTODE_REASON_BUNDLE_##r, __VA_ARGS__)

/* A display form of untrusted bytes for messages: non-printables as \xNN, long strings cut with "...". */
static const char *printable(const char *s, size_t len, char *buf, size_t size)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 8 < size; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
		if (i + 1 < len && o + 8 >= size) {
			memcpy(buf + o, "...", 4);
			return buf;
		}
	}
	buf[o] = 0;
	return buf;
}

static void sha256_hex(const void *data, size_t len, char out[CUSTODE_DIGEST_LEN])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	if (!EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) || n != 32) {
		out[0] = 0;
		return;
	}
	memcpy(out, "sha256:", 7);
	for (unsigned i = 0; i < 32; i++)
		snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
}

static bool type_ok(const struct custode_dsse *e)
{
	size_t n = strlen(CUSTODE_BUNDLE_PAYLOAD_TYPE);
	return e->payload_type_len == n && memcmp(e->payload_type, CUSTODE_BUNDLE_PAYLOAD_TYPE, n) == 0;
}

/*
 * sha256 of JCS(content) of the payload bytes. The policy parser has already
 * accepted these bytes (strict JSON, duplicates refused, depth checked), so a
 * parse failure here is only possible for inspection of invalid payloads.
 */
static int content_digest(const unsigned char *payload, size_t len, char digest[CUSTODE_DIGEST_LEN],
			  struct custode_refusal *why)
{
	char err[200] = "";
	json_error_t jerr;
	json_t *doc, *content;
	int r;

	if (custode_json_depth((const char *)payload, len, CUSTODE_BUNDLE_MAX_DEPTH) > CUSTODE_BUNDLE_MAX_DEPTH)
		return REFUSE(why, E2BIG, TOO_LARGE, "payload: JSON nested deeper than %d", CUSTODE_BUNDLE_MAX_DEPTH);
	doc = json_loadb((const char *)payload, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc)
		return REFUSE(why, EINVAL, SCHEMA, "payload: line %d column %d: %s", jerr.line, jerr.column, jerr.text);
	content = json_is_object(doc) ? json_object_get(doc, "content") : NULL;
	if (!content) {
		json_decref(doc);
		return REFUSE(why, EINVAL, SCHEMA, "content: missing");
	}
	r = custode_jcs_sha256(content, digest, err, sizeof(err));
	json_decref(doc);
	if (r)
		return REFUSE(why, -r, SCHEMA, "content: cannot be canonicalized (RFC 8785): %s", err);
	return 0;
}

/* Type, schema, digest: everything about the payload bytes. Fills info's payload fields. */
static int check_payload(const struct custode_dsse *e, struct custode_policy **out, struct custode_bundle_info *info,
			 struct custode_refusal *why)
{
	struct custode_refusal pwhy = {0};
	struct custode_policy *p = NULL;
	char digest[CUSTODE_DIGEST_LEN], shown[200];
	int err;

	if (!type_ok(e))
		return REFUSE(why, EMEDIUMTYPE, TYPE, "payloadType \"%s\" is not %s",
			      printable(e->payload_type, e->payload_type_len, shown, sizeof(shown)),
			      CUSTODE_BUNDLE_PAYLOAD_TYPE);
	if (custode_json_depth((const char *)e->payload, e->payload_len, CUSTODE_BUNDLE_MAX_DEPTH) >
	    CUSTODE_BUNDLE_MAX_DEPTH)
		return REFUSE(why, E2BIG, TOO_LARGE, "payload: JSON nested deeper than %d", CUSTODE_BUNDLE_MAX_DEPTH);
	/* The payload is parsed from the exact bytes the signatures cover. */
	err = custode_policy_parse((const char *)e->payload, e->payload_len, &p, &pwhy);
	if (err)
		return REFUSE(why, -err, SCHEMA, "%s", pwhy.detail);
	if (!p->has_validity) {
		custode_policy_free(p);
		return REFUSE(why, EINVAL, SCHEMA, "notBefore/notAfter: missing; a bundle must carry a validity window");
	}
	if (!p->content_digest) {
		custode_policy_free(p);
		return REFUSE(why, EINVAL, DIGEST, "contentDigest: missing");
	}
	if ((err = content_digest(e->payload, e->payload_len, digest, why))) {
		custode_policy_free(p);
		return err;
	}
	if (strcmp(digest, p->content_digest) != 0) {
		err = REFUSE(why, EBADMSG, DIGEST, "contentDigest %s does not match the content, whose RFC 8785 sha256 is %s",
			     p->content_digest, digest);
		custode_policy_free(p);
		return err;
	}
	snprintf(info->name, sizeof(info->name), "%s", p->name);
	info->version = p->version;
	memcpy(info->digest, digest, sizeof(digest));
	sha256_hex(e->payload, e->payload_len, info->payload_sha256);
	info->not_before = p->not_before;
	info->not_after = p->not_after;
	*out = p;
	return 0;
}

/* notBefore - skew <= now < notAfter + skew, without overflow. */
static int check_window(int64_t not_before, int64_t not_after, int64_t now, unsigned skew, struct custode_refusal *why)
{
	char a[32], b[32];
	int64_t late, early;

	if (__builtin_add_overflow(now, (int64_t)skew, &late))
		late = INT64_MAX;
	if (__builtin_sub_overflow(now, (int64_t)skew, &early))
		early = INT64_MIN;
	if (late < not_before)
		return REFUSE(why, EKEYREJECTED, NOT_YET_VALID, "notBefore %s is in the future (now %s, skew %u s)",
			      custode_time_show_sec(not_before, a, sizeof(a)), custode_time_show_sec(now, b, sizeof(b)), skew);
	if (early >= not_after)
		return REFUSE(why, EKEYEXPIRED, EXPIRED, "notAfter %s has passed (now %s, skew %u s)",
			      custode_time_show_sec(not_after, a, sizeof(a)), custode_time_show_sec(now, b, sizeof(b)), skew);
	return 0;
}

int custode_bundle_verify(const void *data, size_t len, const struct custode_trust *trust, int64_t now,
			  struct custode_policy **out, struct custode_bundle_info *info, struct custode_refusal *why)
{
	struct custode_bundle_info *tmp;
	struct custode_policy *p = NULL;
	struct custode_dsse *e = NULL;
	int err;

	if (!trust)
		return REFUSE(why, EINVAL, SIGNATURE, "no trusted keys given");
	tmp = calloc(1, sizeof(*tmp));
	if (!tmp)
		return REFUSE(why, ENOMEM, MALFORMED, "out of memory");
	if ((err = custode_dsse_parse(data, len, &e, why)) ||
	    (err = custode_dsse_verify(e, trust, tmp->signers, &tmp->n_signers, why)) ||
	    (err = check_payload(e, &p, tmp, why)) ||
	    (err = check_window(tmp->not_before, tmp->not_after, now, trust->skew, why)))
		goto out;
	tmp->verified_at = now;
	if (info)
		*info = *tmp;
	if (out) {
		*out = p;
		p = NULL;
	}
out:
	custode_policy_free(p);
	custode_dsse_free(e);
	free(tmp);
	return err;
}

/*
 * Read at most CUSTODE_BUNDLE_MAX_BYTES of a regular file; bundle.too_large
 * past it. The daemon reads recorded bundle paths again from its event loop
 * (runs listing): an open that waits (a FIFO put at the path waits for a
 * writer) would stop it. O_NONBLOCK makes that open return at once, and
 * anything but a regular file is refused before a read. Symbolic links are
 * followed on purpose: Kubernetes ConfigMap and Secret volumes present
 * every file as one (NAME -> ..data/NAME).
 */
static int read_bundle_file(const char *path, char **out, size_t *out_len, struct custode_refusal *why)
{
	size_t cap = CUSTODE_BUNDLE_MAX_BYTES + 1, len = 0;
	struct stat st;
	char *buf;
	int fd, fl;

	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return REFUSE(why, errno, MALFORMED, "%s: %s", path, strerror(errno));
	errno = 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int e = errno;
		close(fd);
		return REFUSE(why, e ? e : EINVAL, MALFORMED, "%s: not a regular file", path);
	}
	/* a regular file: reads as usual from here on */
	if ((fl = fcntl(fd, F_GETFL)) >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	if (st.st_size > (off_t)CUSTODE_BUNDLE_MAX_BYTES) {
		close(fd);
		return REFUSE(why, E2BIG, TOO_LARGE, "%s: %lld bytes, more than %u", path, (long long)st.st_size,
			      CUSTODE_BUNDLE_MAX_BYTES);
	}
	buf = malloc(cap + 1);
	if (!buf) {
		close(fd);
		return REFUSE(why, ENOMEM, MALFORMED, "out of memory");
	}
	/* The file may grow after fstat: the cap holds for what is read. */
	while (len < cap) {
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			free(buf);
			return REFUSE(why, e, MALFORMED, "%s: %s", path, strerror(e));
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (len > CUSTODE_BUNDLE_MAX_BYTES) {
		free(buf);
		return REFUSE(why, E2BIG, TOO_LARGE, "%s: more than %u bytes", path, CUSTODE_BUNDLE_MAX_BYTES);
	}
	buf[len] = 0;
	*out = buf;
	*out_len = len;
	return 0;
}

int custode_bundle_verify_file(const char *path, const struct custode_trust *trust, int64_t now,
			       struct custode_policy **out, struct custode_bundle_info *info,
			       struct custode_refusal *why)
{
	size_t len = 0;
	char *data = NULL;
	int err;

	if ((err = read_bundle_file(path, &data, &len, why)))
		return err;
	err = custode_bundle_verify(data, len, trust, now, out, info, why);
	free(data);
	return err;
}

int custode_bundle_load(const char *path, const struct custode_trust *trust, int64_t now, const char *state_dir,
			struct custode_policy **out, struct custode_bundle_info *info, struct custode_refusal *why)
{
	struct custode_bundle_info *tmp = calloc(1, sizeof(*tmp));
	struct custode_policy *p = NULL;
	int err;

	if (!tmp)
		return REFUSE(why, ENOMEM, MALFORMED, "out of memory");
	if ((err = custode_bundle_verify_file(path, trust, now, &p, tmp, why)) ||
	    (err = custode_bundle_accept(state_dir ? state_dir : CUSTODE_BUNDLE_STATE_DIR, tmp, NULL, why))) {
		custode_policy_free(p);
		free(tmp);
		return err;
	}
	if (info)
		*info = *tmp;
	free(tmp);
	if (out)
		*out = p;
	else
		custode_policy_free(p);
	return 0;
}

/* ---- inspection ---- */

void custode_bundle_report_free(struct custode_bundle_report *r)
{
	if (!r)
		return;
	free(r->payload_type);
	free(r->payload);
	for (size_t i = 0; r->keyids && i < r->n_signatures; i++)
		free(r->keyids[i]);
	free(r->keyids);
	free(r->sig_lens);
	custode_policy_free(r->policy);
	free(r);
}

int custode_bundle_inspect(const void *data, size_t len, int64_t now, struct custode_bundle_report **out,
			   struct custode_refusal *why)
{
	struct custode_bundle_report *r;
	struct custode_dsse *e = NULL;
	struct custode_policy *p = NULL;
	int err;

	if ((err = custode_dsse_parse(data, len, &e, why)))
		return err;
	r = calloc(1, sizeof(*r));
	if (!r) {
		custode_dsse_free(e);
		return REFUSE(why, ENOMEM, MALFORMED, "out of memory");
	}
	/* Take the decoded fields over from the envelope. */
	r->payload_type = e->payload_type;
	r->payload_type_len = e->payload_type_len;
	r->payload = e->payload;
	r->payload_len = e->payload_len;
	e->payload_type = NULL;
	e->payload = NULL;
	r->n_signatures = e->n_sigs;
	r->keyids = calloc(e->n_sigs + 1, sizeof(*r->keyids));
	r->sig_lens = calloc(e->n_sigs + 1, sizeof(*r->sig_lens));
	if (!r->keyids || !r->sig_lens) {
		r->n_signatures = 0;
		custode_bundle_report_free(r);
		custode_dsse_free(e);
		return REFUSE(why, ENOMEM, MALFORMED, "out of memory");
	}
	for (size_t i = 0; i < e->n_sigs; i++) {
		r->keyids[i] = e->sigs[i].keyid;
		e->sigs[i].keyid = NULL;
		r->sig_lens[i] = e->sigs[i].sig_len;
	}
	custode_dsse_free(e);

	r->type_ok = strlen(CUSTODE_BUNDLE_PAYLOAD_TYPE) == r->payload_type_len &&
		     !memcmp(r->payload_type, CUSTODE_BUNDLE_PAYLOAD_TYPE, r->payload_type_len);
	sha256_hex(r->payload, r->payload_len, r->info.payload_sha256);

	if (custode_json_depth((const char *)r->payload, r->payload_len, CUSTODE_BUNDLE_MAX_DEPTH) >
	    CUSTODE_BUNDLE_MAX_DEPTH) {
		REFUSE(&r->schema_why, E2BIG, TOO_LARGE, "payload: JSON nested deeper than %d", CUSTODE_BUNDLE_MAX_DEPTH);
		r->digest_why = r->schema_why;
		*out = r;
		return 0;
	}
	err = custode_policy_parse((const char *)r->payload, r->payload_len, &p, &r->schema_why);
	if (!err) {
		r->schema_ok = true;
		r->policy = p;
		snprintf(r->info.name, sizeof(r->info.name), "%s", p->name);
		r->info.version = p->version;
		r->window_present = p->has_validity;
		r->info.not_before = p->not_before;
		r->info.not_after = p->not_after;
		r->digest_present = p->content_digest != NULL;
		if (r->window_present) {
			struct custode_refusal w;
			if (check_window(p->not_before, p->not_after, now, CUSTODE_BUNDLE_SKEW_DEFAULT, &w))
				r->window_reason = w.reason;
		}
	} else {
		r->schema_why.reason = CUSTODE_REASON_BUNDLE_SCHEMA;
	}
	if (!content_digest(r->payload, r->payload_len, r->digest_computed, &r->digest_why)) {
		memcpy(r->info.digest, r->digest_computed, sizeof(r->info.digest));
		r->digest_ok = r->digest_present && !strcmp(p->content_digest, r->digest_computed);
		if (r->digest_present && !r->digest_ok)
			REFUSE(&r->digest_why, EBADMSG, DIGEST, "contentDigest %s does not match the content (%s)",
			       p->content_digest, r->digest_computed);
	}
	*out = r;
	return 0;
}

/* ---- producing ---- */

int custode_bundle_prepare(const char *text, size_t len, int64_t version, int64_t not_before, int64_t valid_for,
			   int64_t now, char **payload, size_t *payload_len, struct custode_bundle_info *info,
			   struct custode_refusal *why)
{
	struct custode_dsse check = {0};
	struct custode_policy *p = NULL;
	struct custode_refusal pwhy = {0};
	char digest[CUSTODE_DIGEST_LEN], err[200] = "", ts[32];
	struct custode_bundle_info *tmp = NULL;
	json_t *doc, *content;
	json_error_t jerr;
	char *out = NULL;
	size_t out_len = 0;
	int r;

	if (len > CUSTODE_BUNDLE_MAX_BYTES)
		return REFUSE(why, E2BIG, TOO_LARGE, "policy: %zu bytes; a bundle holds at most %u", len,
			      CUSTODE_BUNDLE_MAX_BYTES);
	if (custode_json_depth(text, len, CUSTODE_BUNDLE_MAX_DEPTH) > CUSTODE_BUNDLE_MAX_DEPTH)
		return REFUSE(why, E2BIG, TOO_LARGE, "policy: JSON nested deeper than %d", CUSTODE_BUNDLE_MAX_DEPTH);
	doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc)
		return custode_refuse(why, EINVAL, CUSTODE_REASON_POLICY_INVALID, "policy: line %d column %d: %s",
				      jerr.line, jerr.column, jerr.text);
	if (!json_is_object(doc)) {
		r = custode_refuse(why, EINVAL, CUSTODE_REASON_POLICY_INVALID, "policy: must be a JSON object");
		goto out;
	}
	if (version >= 0 && json_object_set_new(doc, "version", json_integer(version))) {
		r = REFUSE(why, ENOMEM, SCHEMA, "out of memory");
		goto out;
	}
	if (valid_for > 0) {
		int64_t nb = not_before >= 0 ? not_before : now, na;
		if (__builtin_add_overflow(nb, valid_for, &na)) {
			r = REFUSE(why, ERANGE, SCHEMA, "notAfter: out of range");
			goto out;
		}
		if (json_object_set_new(doc, "notBefore", json_string(custode_time_format(nb, ts, sizeof(ts)))) ||
		    json_object_set_new(doc, "notAfter", json_string(custode_time_format(na, ts, sizeof(ts))))) {
			r = REFUSE(why, ENOMEM, SCHEMA, "out of memory");
			goto out;
		}
	}
	content = json_object_get(doc, "content");
	if (!content) {
		r = custode_refuse(why, EINVAL, CUSTODE_REASON_POLICY_INVALID, "content: missing");
		goto out;
	}
	if ((r = custode_jcs_sha256(content, digest, err, sizeof(err)))) {
		r = custode_refuse(why, -r, CUSTODE_REASON_POLICY_INVALID, "content: cannot be canonicalized (RFC 8785): %s",
				   err);
		goto out;
	}
	if (json_object_set_new(doc, "contentDigest", json_string(digest))) {
		r = REFUSE(why, ENOMEM, SCHEMA, "out of memory");
		goto out;
	}
	if ((r = custode_jcs(doc, &out, &out_len, err, sizeof(err)))) {
		r = custode_refuse(why, -r, CUSTODE_REASON_POLICY_INVALID, "policy: cannot be canonicalized (RFC 8785): %s",
				   err);
		goto out;
	}
	if ((r = custode_policy_parse(out, out_len, &p, &pwhy))) {
		r = custode_refuse(why, -r, CUSTODE_REASON_POLICY_INVALID, "%s", pwhy.detail);
		goto out;
	}
	if (!p->has_validity) {
		r = REFUSE(why, ENODATA, SCHEMA,
			   "notBefore/notAfter: the document has no validity window; give one with --valid-for DURATION");
		goto out;
	}
	custode_policy_free(p);
	p = NULL;
	/* What the verifier will do with these bytes, minus the signature. */
	check.payload_type = (char *)CUSTODE_BUNDLE_PAYLOAD_TYPE;
	check.payload_type_len = strlen(CUSTODE_BUNDLE_PAYLOAD_TYPE);
	check.payload = (unsigned char *)out;
	check.payload_len = out_len;
	tmp = calloc(1, sizeof(*tmp));
	if (!tmp) {
		r = REFUSE(why, ENOMEM, SCHEMA, "out of memory");
		goto out;
	}
	if ((r = check_payload(&check, &p, tmp, why)))
		goto out;
	if (info)
		*info = *tmp;
	*payload = out;
	*payload_len = out_len;
	out = NULL;
	r = 0;
out:
	free(tmp);
	free(out);
	custode_policy_free(p);
	json_decref(doc);
	return r;
}
