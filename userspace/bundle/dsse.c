// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "bundle/base64.h"
#include "bundle/dsse.h"
#include "bundle/jcs.h"
#include "bundle/keys.h"
#include "bundle/sign.h"

#define MALFORMED(why, ...) custode_refuse(why, EINVAL, CUSTODE_REASON_BUNDLE_MALFORMED, __VA_ARGS__)
#define TOO_LARGE(why, ...) custode_refuse(why, E2BIG, CUSTODE_REASON_BUNDLE_TOO_LARGE, __VA_ARGS__)

void custode_dsse_free(struct custode_dsse *e)
{
	if (!e)
		return;
	free(e->payload_type);
	free(e->payload);
	for (size_t i = 0; e->sigs && i < e->n_sigs; i++) {
		free(e->sigs[i].keyid);
		free(e->sigs[i].sig);
	}
	free(e->sigs);
	free(e);
}

/* Decode the base64 string member `field` of obj (absent: empty) into *out. */
static int get_b64(json_t *obj, const char *field, const char *where, unsigned char **out, size_t *out_len,
		   struct custode_refusal *why)
{
	json_t *v = json_object_get(obj, field);
	const char *what = NULL;
	size_t at = 0;
	int err;

	if (!v)
		v = json_string("");
	else if (!json_is_string(v))
		return MALFORMED(why, "%s: must be a base64 string", where);
	else
		json_incref(v);
	if (!v)
		return MALFORMED(why, "out of memory");
	err = custode_b64_decode(json_string_value(v), json_string_length(v), out, out_len, &what, &at);
	json_decref(v);
	if (err == -ENOMEM)
		return custode_refuse(why, ENOMEM, CUSTODE_REASON_BUNDLE_MALFORMED, "out of memory");
	if (err)
		return MALFORMED(why, "%s: invalid base64: %s (at offset %zu)", where, what, at);
	return 0;
}

static int parse_envelope(json_t *doc, struct custode_dsse *e, struct custode_refusal *why)
{
	json_t *v, *sigs, *s;
	size_t i;
	int err;

	if (!json_is_object(doc))
		return MALFORMED(why, "envelope: must be a JSON object");
	if ((err = get_b64(doc, "payload", "payload", &e->payload, &e->payload_len, why)))
		return err;
	v = json_object_get(doc, "payloadType");
	if (v && !json_is_string(v))
		return MALFORMED(why, "payloadType: must be a string");
	e->payload_type_len = v ? json_string_length(v) : 0;
	e->payload_type = malloc(e->payload_type_len + 1);
	if (!e->payload_type)
		return custode_refuse(why, ENOMEM, CUSTODE_REASON_BUNDLE_MALFORMED, "out of memory");
	memcpy(e->payload_type, v ? json_string_value(v) : "", e->payload_type_len + 1);

	sigs = json_object_get(doc, "signatures");
	if (!sigs)
		return 0; /* no signatures: verification refuses, inspection shows it */
	if (!json_is_array(sigs))
		return MALFORMED(why, "signatures: must be an array");
	if (json_array_size(sigs) > CUSTODE_BUNDLE_MAX_SIGNATURES)
		return TOO_LARGE(why, "signatures: %zu, more than %d", json_array_size(sigs), CUSTODE_BUNDLE_MAX_SIGNATURES);
	e->sigs = calloc(json_array_size(sigs) + 1, sizeof(*e->sigs));
	if (!e->sigs)
		return custode_refuse(why, ENOMEM, CUSTODE_REASON_BUNDLE_MALFORMED, "out of memory");
	json_array_foreach(sigs, i, s) {
		struct custode_dsse_sig *sig = &e->sigs[i];
		char where[48];
		json_t *kid;

		snprintf(where, sizeof(where), "signatures[%zu]", i);
		if (!json_is_object(s))
			return MALFORMED(why, "%s: must be an object", where);
		e->n_sigs = i + 1; /* from here on this entry is freed with the rest */
		kid = json_object_get(s, "keyid");
		if (kid && !json_is_string(kid))
			return MALFORMED(why, "%s.keyid: must be a string", where);
		if (kid && json_string_length(kid) > CUSTODE_BUNDLE_MAX_KEYID)
			return MALFORMED(why, "%s.keyid: longer than %d bytes", where, CUSTODE_BUNDLE_MAX_KEYID);
		sig->keyid = strdup(kid ? json_string_value(kid) : "");
		if (!sig->keyid)
			return custode_refuse(why, ENOMEM, CUSTODE_REASON_BUNDLE_MALFORMED, "out of memory");
		snprintf(where, sizeof(where), "signatures[%zu].sig", i);
		if ((err = get_b64(s, "sig", where, &sig->sig, &sig->sig_len, why)))
			return err;
	}
	return 0;
}

int custode_dsse_parse(const void *data, size_t len, struct custode_dsse **out, struct custode_refusal *why)
{
	struct custode_dsse *e;
	json_error_t jerr;
	unsigned depth;
	json_t *doc;
	int err;

	if (len > CUSTODE_BUNDLE_MAX_BYTES)
		return TOO_LARGE(why, "envelope: %zu bytes, more than %u", len, CUSTODE_BUNDLE_MAX_BYTES);
	depth = custode_json_depth(data, len, CUSTODE_BUNDLE_MAX_DEPTH);
	if (depth > CUSTODE_BUNDLE_MAX_DEPTH)
		return TOO_LARGE(why, "envelope: JSON nested deeper than %d", CUSTODE_BUNDLE_MAX_DEPTH);
	doc = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc)
		return MALFORMED(why, "envelope: line %d column %d: %s", jerr.line, jerr.column, jerr.text);
	e = calloc(1, sizeof(*e));
	if (!e) {
		json_decref(doc);
		return custode_refuse(why, ENOMEM, CUSTODE_REASON_BUNDLE_MALFORMED, "out of memory");
	}
	err = parse_envelope(doc, e, why);
	json_decref(doc);
	if (err) {
		custode_dsse_free(e);
		return err;
	}
	*out = e;
	return 0;
}

int custode_dsse_pae(const void *type, size_t type_len, const void *body, size_t body_len, unsigned char **out,
		     size_t *out_len)
{
	char head[64], mid[32];
	int hn, mn;
	size_t total;
	unsigned char *p;

	hn = snprintf(head, sizeof(head), "DSSEv1 %zu ", type_len);
	mn = snprintf(mid, sizeof(mid), " %zu ", body_len);
	if (hn < 0 || mn < 0 || type_len > SIZE_MAX / 2 || body_len > SIZE_MAX / 2 - type_len - 128)
		return -EOVERFLOW;
	total = (size_t)hn + type_len + (size_t)mn + body_len;
	p = malloc(total ? total : 1);
	if (!p)
		return -ENOMEM;
	memcpy(p, head, (size_t)hn);
	if (type_len)
		memcpy(p + hn, type, type_len);
	memcpy(p + hn + type_len, mid, (size_t)mn);
	if (body_len)
		memcpy(p + hn + type_len + mn, body, body_len);
	*out = p;
	*out_len = total;
	return 0;
}

int custode_dsse_verify(const struct custode_dsse *e, const struct custode_trust *trust,
			struct custode_bundle_signer *signers, size_t *n_signers, struct custode_refusal *why)
{
	bool counted[CUSTODE_BUNDLE_MAX_KEYS] = {false};
	unsigned char *pae;
	size_t pae_len, n = 0;
	int err;

	if (!trust || trust->n == 0)
		return custode_refuse(why, EKEYREJECTED, CUSTODE_REASON_BUNDLE_SIGNATURE, "no trusted keys");
	if (trust->threshold > trust->n)
		return custode_refuse(why, EKEYREJECTED, CUSTODE_REASON_BUNDLE_SIGNATURE,
				      "threshold %u can never be met: only %zu distinct trusted key%s", trust->threshold,
				      trust->n, trust->n == 1 ? "" : "s");
	if (e->n_sigs == 0)
		return custode_refuse(why, EKEYREJECTED, CUSTODE_REASON_BUNDLE_SIGNATURE, "the envelope has no signatures");
	if ((err = custode_dsse_pae(e->payload_type, e->payload_type_len, e->payload, e->payload_len, &pae, &pae_len)))
		return custode_refuse(why, -err, CUSTODE_REASON_BUNDLE_SIGNATURE, "PAE: %s", strerror(-err));
	/*
	 * Every signature against every trusted key not yet counted. The keyid
	 * is only a hint (DSSE: "MUST NOT be used for security decisions"), so
	 * it neither selects nor excludes a key; a key counts once however many
	 * signatures it made.
	 */
	for (size_t s = 0; s < e->n_sigs && n < trust->n; s++) {
		for (size_t k = 0; k < trust->n; k++) {
			if (counted[k] || !custode_key_verify(&trust->keys[k], pae, pae_len, e->sigs[s].sig, e->sigs[s].sig_len))
				continue;
			counted[k] = true;
			if (signers) {
				memcpy(signers[n].key_id, trust->keys[k].id, CUSTODE_KEY_ID_LEN);
				snprintf(signers[n].keyid_hint, sizeof(signers[n].keyid_hint), "%s", e->sigs[s].keyid);
			}
			n++;
			break;
		}
	}
	free(pae);
	if (n < trust->threshold)
		return custode_refuse(why, EKEYREJECTED, CUSTODE_REASON_BUNDLE_SIGNATURE,
				      "%zu of the required %u trusted key%s signed (%zu signature%s, %zu trusted key%s)", n,
				      trust->threshold, trust->threshold == 1 ? "" : "s", e->n_sigs, e->n_sigs == 1 ? "" : "s",
				      trust->n, trust->n == 1 ? "" : "s");
	if (n_signers)
		*n_signers = n;
	return 0;
}

int custode_dsse_envelope_encode(const char *type, const void *payload, size_t payload_len,
				 const struct custode_bundle_sig *sigs, size_t n_sigs, char **out, size_t *out_len,
				 struct custode_refusal *why)
{
	json_t *env = NULL, *arr;
	char *b64 = NULL, *text = NULL;
	size_t len;

	if (n_sigs > CUSTODE_BUNDLE_MAX_SIGNATURES)
		return TOO_LARGE(why, "%zu signatures, more than %d", n_sigs, CUSTODE_BUNDLE_MAX_SIGNATURES);
	if (payload_len > CUSTODE_BUNDLE_MAX_BYTES)
		return TOO_LARGE(why, "payload of %zu bytes: the envelope would exceed %u bytes", payload_len,
				 CUSTODE_BUNDLE_MAX_BYTES);
	if (!(b64 = custode_b64_encode(payload, payload_len, false)))
		goto nomem;
	env = json_object();
	arr = json_array();
	if (!env || !arr || json_object_set_new(env, "payload", json_string(b64)) ||
	    json_object_set_new(env, "payloadType", json_string(type)) || json_object_set_new(env, "signatures", arr)) {
		if (!env)
			json_decref(arr);
		goto nomem;
	}
	free(b64);
	b64 = NULL;
	for (size_t i = 0; i < n_sigs; i++) {
		json_t *s = json_object();
		char *sb = custode_b64_encode(sigs[i].sig, sigs[i].sig_len, false);

		if (!s || !sb || json_array_append_new(arr, s)) {
			free(sb);
			goto nomem;
		}
		if ((sigs[i].keyid && sigs[i].keyid[0] && json_object_set_new(s, "keyid", json_string(sigs[i].keyid))) ||
		    json_object_set_new(s, "sig", json_string(sb))) {
			free(sb);
			goto nomem;
		}
		free(sb);
	}
	text = json_dumps(env, JSON_COMPACT);
	if (!text)
		goto nomem;
	json_decref(env);
	len = strlen(text);
	if (len + 1 > CUSTODE_BUNDLE_MAX_BYTES) {
		free(text);
		return TOO_LARGE(why, "the envelope would be %zu bytes, more than %u", len + 1, CUSTODE_BUNDLE_MAX_BYTES);
	}
	/* a trailing newline: a file, not a fragment */
	{
		char *nt = realloc(text, len + 2);
		if (!nt) {
			free(text);
			return custode_refuse(why, ENOMEM, CUSTODE_REASON_BUNDLE_MALFORMED, "out of memory");
		}
		text = nt;
		text[len++] = '\n';
		text[len] = 0;
	}
	*out = text;
	*out_len = len;
	return 0;
nomem:
	free(b64);
	json_decref(env);
	return custode_refuse(why, ENOMEM, CUSTODE_REASON_BUNDLE_MALFORMED, "out of memory");
}
