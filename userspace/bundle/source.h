/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where a policy comes from, for the runs the launcher (`custode run`) and
 * the daemon (attach) make and the daemon checks (adoption, `custode runs
 * --verify`): a built-in profile by name, a local policy file, the highest
 * verified version of a named policy among the bundles of a directory, or
 * one bundle file. Library code: refusals, no logging.
 */
#ifndef CUSTODE_BUNDLE_SOURCE_H
#define CUSTODE_BUNDLE_SOURCE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include <jansson.h>

#include "bundle/bundle.h"
#include "policy/policy.h"
#include "util/reasons.h"

/* Where named policies and bundles come from (the daemon's --bundles and --trust). */
struct custode_policy_source {
	const char *bundles_dir;      /* NULL: no named policies */
	const struct custode_trust *trust; /* NULL: bundles can't be verified (refused) */
	const char *state_dir;        /* version floors; NULL: CUSTODE_BUNDLE_STATE_DIR */
	bool check_floor_only;        /* a bundle (file or named): compare with the floor, read-only; the
					 caller accepts (custode_source_accept) once nothing can refuse its use */
};

/* A policy and where it came from. */
struct custode_resolved_policy {
	struct custode_policy *p; /* the caller frees it */
	char source[16];          /* "profile", "file", "bundle" */
	char ref[PATH_MAX];       /* the profile's name, the policy file, or the bundle file (canonical) */
	char digest[80];
	int64_t not_before, not_after; /* bundles */
};

/* sha256 of the JCS form of a policy document's "content" ("" if it has none). */
void custode_policy_content_digest(const char *text, size_t len, char out[80]);

/* The built-in profiles' content digests, computed at build time (tools/gen/profile-digest.c). */
struct custode_profile_digest {
	const char *name;
	const char *digest;
};

extern const struct custode_profile_digest custode_profile_digests[];

/* A built-in profile. */
/*
 * A bundle's validity window into o, for receipts and `custode attach`:
 * not_before_time/not_after_time as RFC 3339 (docs/output.md), and
 * not_before/not_after as Unix seconds, deprecated, kept for readers that
 * already parse them. 0, or -ENOMEM.
 */
int custode_bundle_window_json(json_t *o, int64_t not_before, int64_t not_after);

int custode_source_profile(const char *name, struct custode_resolved_policy *r, struct custode_refusal *why);

/*
 * An unsigned policy document (`custode run --policy`), trusted like a
 * built-in only if nobody but root could have written it: a regular file
 * owned by root and writable only by root (the refusals name --policy).
 */
int custode_source_file(const char *path, struct custode_resolved_policy *r, struct custode_refusal *why);

/*
 * The highest version of policy `name` (exactly want_version unless it is
 * (__u64)-1) among the bundles of dir that verify against src->trust and
 * pass the version floor: the policy, its bundle's info and path out.
 */
int custode_source_find_named(const char *dir, const char *name, __u64 want_version,
			      const struct custode_policy_source *src, struct custode_policy **out,
			      struct custode_bundle_info *info, char *path_out, size_t path_len,
			      struct custode_refusal *why);

/*
 * A named policy (name non-NULL: found in src->bundles_dir) or a bundle file
 * (path: verified), accepted (the floor raised), or with
 * src->check_floor_only only compared with the floor, read-only: the caller
 * then accepts info with custode_source_accept() once nothing else can refuse
 * the policy's use, so a refused run or attach leaves the floor as it was.
 * info (may be NULL) receives the bundle's info: its signers, for a receipt.
 */
int custode_source_bundle(const char *path, const char *name, const struct custode_policy_source *src,
			  struct custode_resolved_policy *r, struct custode_bundle_info *info,
			  struct custode_refusal *why);

/* Raise the floor of src's state directory to info (custode_bundle_accept): the check_floor_only caller's last step. */
int custode_source_accept(const struct custode_policy_source *src, const struct custode_bundle_info *info,
			  struct custode_refusal *why);

/* Where src keeps its version floors: its state_dir, or CUSTODE_BUNDLE_STATE_DIR. */
const char *custode_source_floor_dir(const struct custode_policy_source *src);

#endif
