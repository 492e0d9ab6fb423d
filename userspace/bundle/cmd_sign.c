// SPDX-License-Identifier: Apache-2.0
/* custode bundle sign: a policy document into a DSSE bundle (cmd_int.h). */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "bundle/cmd_int.h"
#include "bundle/dsse.h"
#include "bundle/keys.h"
#include "bundle/sign.h"
#include "util/exit.h"
#include "policy/profiles.h"
#include "util/fsutil.h"
#include "util/time.h"

static const char sign_help[] =
	"usage: custode bundle sign (--key KEY | --signer-cmd CMD [--pub PUB])... [--keyid ID]\n"
	"                           [--version N] [--valid-for DURATION [--not-before TIME]]\n"
	"                           [--out FILE] (POLICY.json | - | --profile NAME)\n"
	"\n"
	"Sign a policy document into a DSSE bundle, written to stdout (or FILE).\n"
	"custode sets contentDigest (sha256 of the RFC 8785 form of \"content\") and,\n"
	"when asked, version, notBefore and notAfter; it changes nothing else. The\n"
	"signed payload is the RFC 8785 serialization of the resulting document.\n"
	"\n"
	"  --key KEY           sign with this private key (repeat for more signatures)\n"
	"  --signer-cmd CMD    sign with an external command (sh -c CMD): the bytes to\n"
	"                      sign (DSSE PAE) on its stdin, the RAW signature bytes on\n"
	"                      its stdout (not base64). custode never sees the key.\n"
	"                      e.g. P-256: 'openssl dgst -sha256 -sign k.pem'\n"
	"                      (docs/bundles.md has an Ed25519 recipe)\n"
	"  --pub PUB           public key of --signer-cmd: its signature is checked\n"
	"                      before the bundle is written, and its id is the keyid\n"
	"  --keyid ID          keyid hint, printable ASCII (one signature only;\n"
	"                      default the key id)\n"
	"  --version N         set \"version\" (0..2^53-1)\n"
	"  --valid-for D       set notBefore = now (or --not-before) and notAfter =\n"
	"                      notBefore + D: 90s, 15m, 12h, 30d, 2w; required when the\n"
	"                      document has no notBefore/notAfter\n"
	"  --not-before TIME   start of the window, YYYY-MM-DDTHH:MM:SSZ\n"
	"  --profile NAME      sign a built-in profile (custode profiles)\n"
	"  --out FILE          write the bundle to FILE (atomically) instead of stdout\n"
	"\n"
	"Exit: 0 done; 1 refused (policy.invalid, bundle.*); 2 usage.\n";

#define MAX_SIGNERS 16

static int read_input(const char *path, char **text, size_t *len, struct custode_refusal *why)
{
	int err;

	if (strcmp(path, "-") == 0) {
		size_t cap = 65536, n = 0;
		char *buf = malloc(cap + 1), *nb;
		for (;;) {
			ssize_t r;
			if (!buf)
				return custode_refuse(why, ENOMEM, CUSTODE_REASON_POLICY_INVALID, "out of memory");
			if (n == cap) {
				if (cap > CUSTODE_POLICY_MAX_BYTES) {
					free(buf);
					return custode_refuse(why, EFBIG, CUSTODE_REASON_BUNDLE_TOO_LARGE,
							      "stdin: larger than %u bytes", CUSTODE_POLICY_MAX_BYTES);
				}
				cap *= 2;
				nb = realloc(buf, cap + 1);
				if (!nb)
					free(buf);
				buf = nb;
				continue;
			}
			r = read(0, buf + n, cap - n);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0) {
				err = errno;
				free(buf);
				return custode_refuse(why, err, CUSTODE_REASON_POLICY_INVALID, "stdin: %s", strerror(err));
			}
			if (r == 0)
				break;
			n += (size_t)r;
		}
		buf[n] = 0;
		*text = buf;
		*len = n;
		return 0;
	}
	err = custode_read_file(path, CUSTODE_POLICY_MAX_BYTES, text, len);
	if (err == -EFBIG)
		return custode_refuse(why, EFBIG, CUSTODE_REASON_BUNDLE_TOO_LARGE, "%s: larger than %u bytes", path,
				      CUSTODE_POLICY_MAX_BYTES);
	if (err)
		return custode_refuse(why, -err, CUSTODE_REASON_POLICY_INVALID, "%s: %s", path, strerror(-err));
	return 0;
}

struct sign_opts {
	const char *keys[MAX_SIGNERS], *signer_cmd, *pub, *keyid, *profile, *out;
	const char *input; /* POLICY.json or "-", unless profile */
	size_t n_keys;
	int64_t version, valid_for, not_before;
};

/* sign's command line into o: -1 to go on, else the exit code (0 after --help). */
static int sign_args(int argc, char **argv, struct sign_opts *o)
{
	static const struct option opts[] = {
		{"key", required_argument, NULL, 'k'},       {"signer-cmd", required_argument, NULL, 'c'},
		{"pub", required_argument, NULL, 'p'},       {"keyid", required_argument, NULL, 'i'},
		{"version", required_argument, NULL, 'V'},   {"valid-for", required_argument, NULL, 'v'},
		{"not-before", required_argument, NULL, 'n'}, {"profile", required_argument, NULL, 'P'},
		{"out", required_argument, NULL, 'o'},       {"help", no_argument, NULL, 'h'},
		{0}};
	unsigned long long u;
	int c;

	memset(o, 0, sizeof(*o));
	o->version = -1;
	o->not_before = -1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "k:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'k':
			if (o->n_keys == MAX_SIGNERS)
				return custode_bundle_usage_error(sign_help, "at most %d --key options", MAX_SIGNERS);
			o->keys[o->n_keys++] = optarg;
			break;
		case 'c':
			if (o->signer_cmd)
				return custode_bundle_usage_error(sign_help, "--signer-cmd may be given once");
			o->signer_cmd = optarg;
			break;
		case 'p':
			o->pub = optarg;
			break;
		case 'i':
			o->keyid = optarg;
			break;
		case 'V':
			if (!custode_bundle_parse_uint(optarg, (uint64_t)CUSTODE_POLICY_VERSION_MAX, &u))
				return custode_bundle_usage_error(sign_help, "--version '%s': must be an integer 0..2^53-1", optarg);
			o->version = (int64_t)u;
			break;
		case 'v':
			if (custode_duration_parse(optarg, &o->valid_for) < 0)
				return custode_bundle_usage_error(sign_help, "--valid-for '%s': a positive number and a unit s, m, h, d or w "
							      "(at most 10 years)", optarg);
			break;
		case 'n':
			if (custode_time_parse(optarg, 0, &o->not_before, NULL) < 0 || o->not_before < 0)
				return custode_bundle_usage_error(sign_help, "--not-before '%s': must be YYYY-MM-DDTHH:MM:SSZ", optarg);
			break;
		case 'P':
			o->profile = optarg;
			break;
		case 'o':
			o->out = optarg;
			break;
		case 'h':
			fputs(sign_help, stdout);
			return 0;
		default:
			return custode_bundle_bad_usage(sign_help);
		}
	}
	if (!o->n_keys && !o->signer_cmd)
		return custode_bundle_usage_error(sign_help, "--key KEY or --signer-cmd CMD is required");
	if (o->pub && !o->signer_cmd)
		return custode_bundle_usage_error(sign_help, "--pub goes with --signer-cmd");
	if (o->keyid && o->n_keys + (o->signer_cmd ? 1 : 0) != 1)
		return custode_bundle_usage_error(sign_help, "--keyid needs exactly one signature");
	if (o->keyid) {
		bool printable = o->keyid[0] && strlen(o->keyid) <= CUSTODE_BUNDLE_MAX_KEYID;
		for (const char *k = o->keyid; printable && *k; k++)
			printable = *k >= 0x20 && *k < 0x7f;
		if (!printable)
			return custode_bundle_usage_error(sign_help, "--keyid: 1..%d printable ASCII characters", CUSTODE_BUNDLE_MAX_KEYID);
	}
	if (o->not_before >= 0 && !o->valid_for)
		return custode_bundle_usage_error(sign_help, "--not-before needs --valid-for");
	if (o->profile ? optind != argc : optind != argc - 1)
		return custode_bundle_usage_error(sign_help, "%s",
				   o->profile ? "--profile and a file: give one" : "one POLICY.json (or -) is required");
	o->input = o->profile ? NULL : argv[optind];
	return -1;
}

/* The document to sign, a built-in profile or the input: -1 to go on, else the exit code. */
static int sign_input(const struct sign_opts *o, char **text, size_t *len)
{
	struct custode_refusal why = {0};

	if (o->profile) {
		const struct custode_builtin_profile *bp = custode_profile_find(o->profile);
		if (!bp) {
			custode_refuse(&why, ENOENT, CUSTODE_REASON_POLICY_UNKNOWN_PROFILE, "no built-in profile '%s'", o->profile);
			return custode_bundle_refused("sign", &why);
		}
		*text = strndup(bp->text, bp->len);
		*len = bp->len;
		return *text ? -1 : EXIT_BUNDLE_REFUSED;
	}
	if (read_input(o->input, text, len, &why))
		return custode_bundle_refused("sign", &why);
	return -1;
}

/* A signature by each --key, appended to sigs: its keyid the --keyid hint, else the key's id. */
static int sign_with_keys(const struct sign_opts *o, const unsigned char *pae, size_t pae_len,
			  struct custode_bundle_sig *sigs, size_t *n_sigs, struct custode_refusal *why)
{
	for (size_t i = 0; i < o->n_keys; i++) {
		struct custode_signing_key *k = NULL;
		if (custode_signing_key_load(o->keys[i], &k, why) || custode_signing_key_sign(k, pae, pae_len, &sigs[*n_sigs], why)) {
			custode_signing_key_free(k);
			return -1;
		}
		sigs[*n_sigs].keyid = strdup(o->keyid ? o->keyid : custode_signing_key_id(k));
		(*n_sigs)++;
		custode_signing_key_free(k);
	}
	return 0;
}

/*
 * The --signer-cmd signature, appended to sigs. With --pub it is checked
 * before anything is written, and the key's id is its keyid.
 */
static int sign_with_cmd(const struct sign_opts *o, const unsigned char *pae, size_t pae_len,
			 struct custode_bundle_sig *sigs, size_t *n_sigs, struct custode_refusal *why)
{
	struct custode_trust *t = NULL;
	char id[CUSTODE_KEY_ID_LEN] = "";

	if (o->pub && (custode_trust_new(&t) || custode_trust_add_file(t, o->pub, why) < 0)) {
		custode_trust_free(t);
		return -1;
	}
	if (custode_signer_cmd_sign(o->signer_cmd, pae, pae_len, &sigs[*n_sigs], why)) {
		custode_trust_free(t);
		return -1;
	}
	(*n_sigs)++;
	if (t) {
		if (!custode_key_verify(&t->keys[0], pae, pae_len, sigs[*n_sigs - 1].sig, sigs[*n_sigs - 1].sig_len)) {
			custode_refuse(why, EBADMSG, CUSTODE_REASON_BUNDLE_SIGNER,
				       "the signer command's output is not a valid %s signature by %s",
				       custode_key_alg_name(t->keys[0].alg), o->pub);
			custode_trust_free(t);
			return -1;
		}
		memcpy(id, t->keys[0].id, sizeof(id));
		custode_trust_free(t);
	}
	if (o->keyid || id[0])
		sigs[*n_sigs - 1].keyid = strdup(o->keyid ? o->keyid : id);
	return 0;
}

/* The envelope to --out (atomically) or stdout; 0, or -1 with the failure printed. */
static int sign_write(const char *out, const char *env, size_t env_len)
{
	int err;

	if (out) {
		if ((err = custode_write_file_atomic(out, env, env_len, 0644))) {
			fprintf(stderr, "custode: bundle sign: %s: %s\n", out, strerror(-err));
			return -1;
		}
	} else if (fwrite(env, 1, env_len, stdout) != env_len || fflush(stdout) != 0) {
		fprintf(stderr, "custode: bundle sign: stdout: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

int custode_bundle_cmd_sign(int argc, char **argv)
{
	struct sign_opts o;
	struct custode_bundle_sig sigs[MAX_SIGNERS + 1];
	struct custode_refusal why = {0};
	struct custode_bundle_info *info = NULL;
	int64_t now = (int64_t)time(NULL);
	unsigned char *pae = NULL;
	char *text = NULL, *payload = NULL, *env = NULL;
	size_t n_sigs = 0, text_len = 0, payload_len = 0, pae_len = 0, env_len = 0;
	int rc, err;

	memset(sigs, 0, sizeof(sigs));
	if ((rc = sign_args(argc, argv, &o)) >= 0 || (rc = sign_input(&o, &text, &text_len)) >= 0)
		return rc;
	rc = EXIT_BUNDLE_REFUSED;
	info = calloc(1, sizeof(*info));
	if (!info)
		goto out;
	err = custode_bundle_prepare(text, text_len, o.version, o.not_before, o.valid_for, now, &payload, &payload_len,
				     info, &why);
	if (err == -ENODATA) {
		fprintf(stderr, "custode: bundle sign: %s\n", why.detail);
		rc = EXIT_USAGE;
		goto out;
	}
	if (err) {
		custode_bundle_refused("sign", &why);
		goto out;
	}
	if (custode_dsse_pae(CUSTODE_BUNDLE_PAYLOAD_TYPE, strlen(CUSTODE_BUNDLE_PAYLOAD_TYPE), payload, payload_len, &pae,
			     &pae_len)) {
		custode_refuse(&why, ENOMEM, CUSTODE_REASON_BUNDLE_SIGNER, "out of memory");
		custode_bundle_refused("sign", &why);
		goto out;
	}
	if (sign_with_keys(&o, pae, pae_len, sigs, &n_sigs, &why) ||
	    (o.signer_cmd && sign_with_cmd(&o, pae, pae_len, sigs, &n_sigs, &why)) ||
	    custode_dsse_envelope_encode(CUSTODE_BUNDLE_PAYLOAD_TYPE, payload, payload_len, sigs, n_sigs, &env, &env_len,
					 &why)) {
		custode_bundle_refused("sign", &why);
		goto out;
	}
	if (sign_write(o.out, env, env_len))
		goto out;
	{
		char a[32], b[32];
		fprintf(stderr, "custode: bundle sign: %s version %llu, %s, valid %s .. %s, %zu signature%s\n", info->name,
			(unsigned long long)info->version, info->digest, custode_time_show_sec(info->not_before, a, sizeof(a)),
			custode_time_show_sec(info->not_after, b, sizeof(b)), n_sigs, n_sigs == 1 ? "" : "s");
		if (info->not_after <= now)
			fprintf(stderr, "custode: bundle sign: warning: this bundle has already expired\n");
	}
	rc = 0;
out:
	for (size_t i = 0; i < n_sigs; i++)
		custode_bundle_sig_clear(&sigs[i]);
	free(info);
	free(env);
	free(pae);
	free(payload);
	free(text);
	return rc;
}
