// SPDX-License-Identifier: Apache-2.0
/* custode bundle keygen | sign | verify | inspect */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>

#include "bundle/bundle.h"
#include "bundle/cmd.h"
#include "bundle/cmd_int.h"
#include "bundle/dsse.h"
#include "bundle/keys.h"
#include "bundle/sign.h"
#include "util/exit.h"
#include "util/time.h"
#include "policy/profiles.h"
#include "util/fsutil.h"

static const char keygen_help[] =
	"usage: custode bundle keygen --out KEY [--p256]\n"
	"\n"
	"Generate a signing key: the private key at KEY (PEM PKCS#8, unencrypted, mode\n"
	"0600) and its public key at KEY.pub (PEM, mode 0644). Ed25519 by default,\n"
	"ECDSA P-256 with --p256. Neither file may exist: keys are never overwritten.\n"
	"Prints the key id (sha256 of the DER public key).\n"
	"\n"
	"Exit: 0 done; 1 refused (bundle.key); 2 usage.\n";

static const char verify_help[] =
	"usage: custode bundle verify --trust PUB [--trust PUB...] [--threshold N]\n"
	"                             [--skew SECONDS] [--state-dir DIR] [--accept | --no-state]\n"
	"                             [--json] BUNDLE\n"
	"\n"
	"Verify a bundle completely: envelope, signatures by at least N distinct trusted\n"
	"keys (default 1), payload type, policy schema, contentDigest, the validity\n"
	"window (clock skew default 60 s, at most 300), and the version floor.\n"
	"\n"
	"The floor is the highest accepted version of each policy name, recorded in\n"
	CUSTODE_BUNDLE_STATE_DIR " (or --state-dir DIR). By default verify only\n"
	"READS it: a bundle of a lower version, or of the same version with other\n"
	"content, is refused (bundle.rollback), and nothing is written.\n"
	"  --accept     also accept the bundle: raise the floor to its version (needs\n"
	"               write access to the state directory, normally root's)\n"
	"  --no-state   neither read nor write the floor (checks everything else)\n"
	"  --no-update  the default (read-only); kept for scripts\n"
	"\n"
	"Exit: 0 verified; 1 refused (the reason code is printed); 2 usage.\n";

static const char inspect_help[] =
	"usage: custode bundle inspect [--json] BUNDLE\n"
	"\n"
	"Decode a bundle WITHOUT verifying it: payload type, signatures (keyids), the\n"
	"payload document, whether contentDigest matches the content, the validity\n"
	"window. No signature is checked; nothing shown is trusted.\n"
	"\n"
	"Exit: 0 decoded; 1 the envelope itself is unusable; 2 usage.\n";

static const char bundle_help[] =
	"usage: custode bundle keygen | sign | verify | inspect [--help]\n"
	"\n"
	"Signed policy bundles (DSSE envelopes of custode.policy/v1 documents):\n"
	"  keygen   make an Ed25519 (or P-256) signing key pair\n"
	"  sign     sign a policy document into a bundle\n"
	"  verify   verify a bundle against trusted public keys, with rollback protection\n"
	"  inspect  show what a bundle says, without trusting it\n"
	"\n"
	"docs/bundles.md describes the format and every check.\n";

int custode_bundle_usage_error(const char *help, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "custode: bundle: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n\n");
	fputs(help, stderr);
	return EXIT_USAGE;
}

int custode_bundle_bad_usage(const char *help)
{
	fputs(help, stderr);
	return EXIT_USAGE;
}

/*
 * Print untrusted text (envelope fields, messages quoting a payload) without
 * letting it drive the terminal: C0 and C1 controls and DEL as \xNN.
 */
static void put_clean(FILE *f, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else if (c == 0xc2 && i + 1 < len && (unsigned char)s[i + 1] >= 0x80 && (unsigned char)s[i + 1] <= 0x9f)
			fprintf(f, "\\u%04x", (unsigned char)s[++i]);
		else
			fputc(c, f);
	}
}

int custode_bundle_refused(const char *verb, const struct custode_refusal *why)
{
	fprintf(stderr, "custode: bundle %s: refused: %s: ", verb,
		custode_reason_name(why->reason) ? custode_reason_name(why->reason) : "unknown");
	put_clean(stderr, why->detail, strlen(why->detail));
	fputc('\n', stderr);
	return EXIT_BUNDLE_REFUSED;
}

bool custode_bundle_parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;
	unsigned long long v;

	if (!s[0] || s[0] == '-' || s[0] == '+' || s[0] == ' ')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return false;
	*out = v;
	return true;
}

/* ---- keygen ---- */

static int cmd_keygen(int argc, char **argv)
{
	static const struct option opts[] = {
		{"out", required_argument, NULL, 'o'}, {"p256", no_argument, NULL, 'p'}, {"help", no_argument, NULL, 'h'}, {0}};
	struct custode_refusal why = {0};
	char id[CUSTODE_KEY_ID_LEN];
	enum custode_key_alg alg = CUSTODE_KEY_ED25519;
	const char *out = NULL;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		if (c == 'o')
			out = optarg;
		else if (c == 'p')
			alg = CUSTODE_KEY_P256;
		else if (c == 'h') {
			fputs(keygen_help, stdout);
			return 0;
		} else
			return custode_bundle_bad_usage(keygen_help);
	}
	if (optind != argc)
		return custode_bundle_usage_error(keygen_help, "unexpected argument '%s'", argv[optind]);
	if (!out || !out[0])
		return custode_bundle_usage_error(keygen_help, "--out KEY is required");
	if (custode_bundle_keygen(out, alg, id, &why))
		return custode_bundle_refused("keygen", &why);
	printf("custode: bundle keygen: %s private key %s (mode 0600), public key %s.pub\nkey id %s\n",
	       custode_key_alg_name(alg), out, out, id);
	return 0;
}

/* ---- verify ---- */

static json_t *signers_json(const struct custode_bundle_info *info, const struct custode_trust *t)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < info->n_signers; i++) {
		const char *label = custode_trust_label(t, info->signers[i].key_id);
		json_array_append_new(a, json_pack("{s:s, s:s, s:s}", "keyId", info->signers[i].key_id, "keyFile",
						   label ? label : "", "keyidHint", info->signers[i].keyid_hint));
	}
	return a;
}

struct verify_opts {
	const char *trust_files[CUSTODE_BUNDLE_MAX_KEYS + 1];
	size_t n_trust;
	unsigned threshold, skew;
	const char *state_dir, *bundle;
	bool json, no_state, accept;
};

/* verify's command line into o: -1 to go on, else the exit code (0 after --help). */
static int verify_args(int argc, char **argv, struct verify_opts *o)
{
	static const struct option opts[] = {
		{"trust", required_argument, NULL, 't'},     {"threshold", required_argument, NULL, 'T'},
		{"skew", required_argument, NULL, 's'},      {"state-dir", required_argument, NULL, 'd'},
		{"no-state", no_argument, NULL, 'N'},        {"no-update", no_argument, NULL, 'U'},
		{"json", no_argument, NULL, 'j'},            {"help", no_argument, NULL, 'h'},
		{"accept", no_argument, NULL, 'a'},          {0}};
	bool dir_given = false, no_update = false;
	unsigned long long u;
	int c;

	memset(o, 0, sizeof(*o));
	o->state_dir = CUSTODE_BUNDLE_STATE_DIR;
	o->threshold = 1;
	o->skew = CUSTODE_BUNDLE_SKEW_DEFAULT;
	optind = 1;
	while ((c = getopt_long(argc, argv, "t:h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (o->n_trust == CUSTODE_BUNDLE_MAX_KEYS)
				return custode_bundle_usage_error(verify_help, "at most %d --trust keys", CUSTODE_BUNDLE_MAX_KEYS);
			o->trust_files[o->n_trust++] = optarg;
			break;
		case 'T':
			if (!custode_bundle_parse_uint(optarg, CUSTODE_BUNDLE_MAX_KEYS, &u) || u < 1)
				return custode_bundle_usage_error(verify_help, "--threshold '%s': must be 1..32", optarg);
			o->threshold = (unsigned)u;
			break;
		case 's':
			if (!custode_bundle_parse_uint(optarg, CUSTODE_BUNDLE_SKEW_MAX, &u))
				return custode_bundle_usage_error(verify_help, "--skew '%s': must be 0..300 seconds", optarg);
			o->skew = (unsigned)u;
			break;
		case 'd':
			o->state_dir = optarg;
			dir_given = true;
			break;
		case 'N':
			o->no_state = true;
			break;
		case 'U':
			no_update = true;
			break;
		case 'a':
			o->accept = true;
			break;
		case 'j':
			o->json = true;
			break;
		case 'h':
			fputs(verify_help, stdout);
			return 0;
		default:
			return custode_bundle_bad_usage(verify_help);
		}
	}
	if (optind != argc - 1)
		return custode_bundle_usage_error(verify_help, "one BUNDLE is required");
	if (!o->n_trust)
		return custode_bundle_usage_error(verify_help, "--trust PUB is required: custode trusts keys, not bundles");
	if (o->no_state && (no_update || dir_given || o->accept))
		return custode_bundle_usage_error(verify_help, "--no-state excludes --accept, --no-update and --state-dir");
	if (o->accept && no_update)
		return custode_bundle_usage_error(verify_help, "--accept and --no-update exclude each other");
	if (!o->state_dir[0])
		return custode_bundle_usage_error(verify_help, "--state-dir: empty");
	o->bundle = argv[optind];
	return -1;
}

/* What a verified bundle is, on stdout; floor says what was done with the version floor. */
static void verify_print(const struct verify_opts *o, const struct custode_bundle_info *info,
			 const struct custode_trust *trust, const char *floor)
{
	char a[32], b[32];

	if (o->json) {
		json_t *j = json_pack("{s:b, s:s, s:I, s:s, s:s, s:s, s:s, s:o, s:s, s:s?}", "verified", 1, "name", info->name,
				      "version", (json_int_t)info->version, "contentDigest", info->digest, "payloadSha256",
				      info->payload_sha256, "notBefore", custode_time_show_sec(info->not_before, a, sizeof(a)),
				      "notAfter", custode_time_show_sec(info->not_after, b, sizeof(b)), "signers",
				      signers_json(info, trust), "floor", floor, "stateDir", o->no_state ? NULL : o->state_dir);
		if (j) {
			json_dumpf(j, stdout, JSON_COMPACT);
			putchar('\n');
			json_decref(j);
		}
		return;
	}
	printf("custode: bundle verified: %s version %llu\n", info->name, (unsigned long long)info->version);
	printf("  content   %s\n  payload   %s\n", info->digest, info->payload_sha256);
	for (size_t i = 0; i < info->n_signers; i++) {
		const char *label = custode_trust_label(trust, info->signers[i].key_id);
		printf("  signed by %s (%s)", info->signers[i].key_id, label ? label : "?");
		if (info->signers[i].keyid_hint[0] && strcmp(info->signers[i].keyid_hint, info->signers[i].key_id)) {
			printf(" keyid \"");
			put_clean(stdout, info->signers[i].keyid_hint, strlen(info->signers[i].keyid_hint));
			putchar('"');
		}
		putchar('\n');
	}
	printf("  valid     %s .. %s\n", custode_time_show_sec(info->not_before, a, sizeof(a)),
	       custode_time_show_sec(info->not_after, b, sizeof(b)));
	if (!strcmp(floor, "raised"))
		printf("  floor     raised to %llu in %s\n", (unsigned long long)info->version, o->state_dir);
	else if (!strcmp(floor, "unchanged"))
		printf("  floor     unchanged: version %llu already accepted (%s)\n", (unsigned long long)info->version,
		       o->state_dir);
	else if (!strcmp(floor, "checked"))
		printf("  floor     checked, not raised (%s; --accept raises it)\n", o->state_dir);
	else
		printf("  floor     not checked (--no-state)\n");
}

/* The version floor as asked: checked (the default), raised (--accept), or neither (--no-state). *floor says which; 0 or -1 (why). */
static int verify_floor(const struct verify_opts *o, const struct custode_bundle_info *info, const char **floor,
			struct custode_refusal *why)
{
	bool raised = false;

	*floor = "skipped";
	if (o->no_state)
		return 0;
	if (!o->accept) {
		if (custode_bundle_floor_check(o->state_dir, info, why))
			return -1;
		*floor = "checked";
		return 0;
	}
	if (custode_bundle_accept(o->state_dir, info, &raised, why))
		return -1;
	*floor = raised ? "raised" : "unchanged";
	return 0;
}

static int cmd_verify(int argc, char **argv)
{
	struct verify_opts o;
	struct custode_refusal why = {0};
	struct custode_trust *trust = NULL;
	struct custode_bundle_info *info = NULL;
	struct custode_policy *policy = NULL;
	const char *floor;
	int64_t now;
	int rc;

	if ((rc = verify_args(argc, argv, &o)) >= 0)
		return rc;
	rc = EXIT_BUNDLE_REFUSED;
	if (custode_trust_new(&trust))
		return EXIT_BUNDLE_REFUSED;
	for (size_t i = 0; i < o.n_trust; i++)
		if (custode_trust_add_file(trust, o.trust_files[i], &why) < 0)
			goto fail;
	if (custode_trust_set_threshold(trust, o.threshold, &why) || custode_trust_set_skew(trust, o.skew, &why))
		goto fail;
	info = calloc(1, sizeof(*info));
	if (!info)
		goto out;
	/* One `now` for the whole verification. */
	now = (int64_t)time(NULL);
	if (custode_bundle_verify_file(o.bundle, trust, now, &policy, info, &why) || verify_floor(&o, info, &floor, &why))
		goto fail;
	verify_print(&o, info, trust, floor);
	rc = 0;
	goto out;
fail:
	if (o.json) {
		json_t *j = json_pack("{s:b, s:s, s:s}", "verified", 0, "reason",
				      custode_reason_name(why.reason) ? custode_reason_name(why.reason) : "unknown", "detail",
				      why.detail);
		if (j) {
			json_dumpf(j, stdout, JSON_COMPACT);
			putchar('\n');
			json_decref(j);
		}
	}
	custode_bundle_refused("verify", &why);
	if (why.reason == CUSTODE_REASON_BUNDLE_STATE)
		fprintf(stderr, "custode: bundle verify: the floor in %s is needed%s; --no-state verifies without it, "
				"--state-dir DIR uses another\n",
			o.state_dir, o.accept ? " to accept (normally root's)" : " to compare the version");
out:
	custode_policy_free(policy);
	custode_trust_free(trust);
	free(info);
	return rc;
}

/* ---- inspect ---- */

static const char *window_name(const struct custode_bundle_report *r)
{
	if (!r->window_present)
		return "missing";
	if (r->window_reason == CUSTODE_REASON_BUNDLE_EXPIRED)
		return "expired";
	if (r->window_reason == CUSTODE_REASON_BUNDLE_NOT_YET_VALID)
		return "not_yet_valid";
	return "current";
}

static int cmd_inspect(int argc, char **argv)
{
	static const struct option opts[] = {{"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0}};
	struct custode_bundle_report *r = NULL;
	struct custode_refusal why = {0};
	json_t *payload_doc;
	bool json = false;
	char *data = NULL;
	size_t len = 0;
	int c, err;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'j')
			json = true;
		else if (c == 'h') {
			fputs(inspect_help, stdout);
			return 0;
		} else
			return custode_bundle_bad_usage(inspect_help);
	}
	if (optind != argc - 1)
		return custode_bundle_usage_error(inspect_help, "one BUNDLE is required");
	err = custode_read_file(argv[optind], CUSTODE_BUNDLE_MAX_BYTES, &data, &len);
	if (err == -EFBIG) {
		custode_refuse(&why, E2BIG, CUSTODE_REASON_BUNDLE_TOO_LARGE, "%s: more than %u bytes", argv[optind],
			       CUSTODE_BUNDLE_MAX_BYTES);
		return custode_bundle_refused("inspect", &why);
	}
	if (err) {
		custode_refuse(&why, -err, CUSTODE_REASON_BUNDLE_MALFORMED, "%s: %s", argv[optind], strerror(-err));
		return custode_bundle_refused("inspect", &why);
	}
	err = custode_bundle_inspect(data, len, (int64_t)time(NULL), &r, &why);
	free(data);
	if (err)
		return custode_bundle_refused("inspect", &why);
	payload_doc = r->payload_len ? json_loadb((const char *)r->payload, r->payload_len, JSON_REJECT_DUPLICATES, NULL)
				     : NULL;
	if (json) {
		char a[32], b[32];
		json_t *sigs = json_array(), *o;
		for (size_t i = 0; i < r->n_signatures; i++)
			json_array_append_new(sigs, json_pack("{s:s, s:I}", "keyid", r->keyids[i], "bytes",
							      (json_int_t)r->sig_lens[i]));
		o = json_pack("{s:b, s:s%, s:b, s:o, s:I, s:s}", "verified", 0, "payloadType", r->payload_type,
			      r->payload_type_len, "payloadTypeIsPolicy", r->type_ok, "signatures", sigs, "payloadBytes",
			      (json_int_t)r->payload_len, "payloadSha256", r->info.payload_sha256);
		if (o) {
			json_object_set_new(o, "schema",
					    r->schema_ok ? json_pack("{s:b}", "ok", 1)
							 : json_pack("{s:b, s:s, s:s}", "ok", 0, "reason", "bundle.schema",
								     "detail", r->schema_why.detail));
			if (r->schema_ok) {
				json_object_set_new(o, "name", json_string(r->info.name));
				json_object_set_new(o, "version", json_integer((json_int_t)r->info.version));
			}
			json_object_set_new(o, "contentDigest",
					    json_pack("{s:s?, s:s?, s:b}", "stated",
						      r->schema_ok && r->policy->content_digest ? r->policy->content_digest : NULL,
						      "computed", r->digest_computed[0] ? r->digest_computed : NULL, "match",
						      r->digest_ok));
			if (r->schema_ok && r->window_present) {
				json_object_set_new(o, "notBefore",
						    json_string(custode_time_show_sec(r->info.not_before, a, sizeof(a))));
				json_object_set_new(o, "notAfter", json_string(custode_time_show_sec(r->info.not_after, b, sizeof(b))));
			}
			json_object_set_new(o, "window", json_string(r->schema_ok ? window_name(r) : "unknown"));
			json_object_set(o, "payload", payload_doc ? payload_doc : json_null());
			json_dumpf(o, stdout, JSON_COMPACT);
			putchar('\n');
			json_decref(o);
		}
	} else {
		char a[32], b[32];

		printf("UNVERIFIED: no signature was checked; nothing below is trusted "
		       "(custode bundle verify --trust PUB checks it).\n");
		printf("payloadType    \"");
		put_clean(stdout, r->payload_type, r->payload_type_len);
		printf("\"%s\n", r->type_ok ? " (a custode policy)" : " (NOT a custode policy)");
		printf("signatures     %zu\n", r->n_signatures);
		for (size_t i = 0; i < r->n_signatures; i++) {
			printf("  [%zu] %zu bytes, keyid \"", i, r->sig_lens[i]);
			put_clean(stdout, r->keyids[i], strlen(r->keyids[i]));
			printf("\"\n");
		}
		printf("payload        %zu bytes, %s\n", r->payload_len, r->info.payload_sha256);
		if (r->schema_ok) {
			printf("policy         %s version %llu\n", r->info.name, (unsigned long long)r->info.version);
		} else {
			printf("policy         INVALID: ");
			put_clean(stdout, r->schema_why.detail, strlen(r->schema_why.detail));
			putchar('\n');
		}
		if (r->digest_ok)
			printf("contentDigest  %s (matches the content)\n", r->digest_computed);
		else if (r->schema_ok && r->policy->content_digest)
			printf("contentDigest  %s DOES NOT MATCH the content (%s)\n", r->policy->content_digest,
			       r->digest_computed[0] ? r->digest_computed : "not computable");
		else if (r->schema_ok)
			printf("contentDigest  missing (content is %s)\n", r->digest_computed);
		if (r->schema_ok && r->window_present)
			printf("validity       %s .. %s (%s)\n", custode_time_show_sec(r->info.not_before, a, sizeof(a)),
			       custode_time_show_sec(r->info.not_after, b, sizeof(b)),
			       !strcmp(window_name(r), "current") ? "current" : window_name(r));
		else if (r->schema_ok)
			printf("validity       missing (a bundle must have notBefore/notAfter)\n");
		if (payload_doc) {
			/* ASCII only: the document is untrusted and this is a terminal */
			char *pretty = json_dumps(payload_doc, JSON_INDENT(2) | JSON_ENSURE_ASCII);
			if (pretty) {
				printf("payload document:\n%s\n", pretty);
				free(pretty);
			}
		}
	}
	json_decref(payload_doc);
	custode_bundle_report_free(r);
	return 0;
}

int custode_cmd_bundle(int argc, char **argv)
{
	if (argc < 2) {
		fputs(bundle_help, stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		fputs(bundle_help, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "keygen"))
		return cmd_keygen(argc - 1, argv + 1);
	if (!strcmp(argv[1], "sign"))
		return custode_bundle_cmd_sign(argc - 1, argv + 1);
	if (!strcmp(argv[1], "verify"))
		return cmd_verify(argc - 1, argv + 1);
	if (!strcmp(argv[1], "inspect"))
		return cmd_inspect(argc - 1, argv + 1);
	fprintf(stderr, "custode: bundle: unknown action '%s'\n\n", argv[1]);
	fputs(bundle_help, stderr);
	return EXIT_USAGE;
}
