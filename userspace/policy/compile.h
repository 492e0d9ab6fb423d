/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Compile a policy's filesystem rules for one run: bind ${workspace} and
 * ${tmp}, normalise each path, merge duplicates, and encode rule keys for the
 * engine's LPM trie (include/custode/abi.h).
 */
#ifndef CUSTODE_POLICY_COMPILE_H
#define CUSTODE_POLICY_COMPILE_H

#include <stddef.h>
#include <stdint.h>

#include "custode/abi.h"
#include "policy/policy.h"

struct custode_bindings {
	const char *workspace; /* absolute, canonical */
	const char *tmp;       /* absolute, canonical */
};

struct custode_compiled_rule {
	char path[CUSTODE_RULE_PATH_MAX]; /* normalised, no trailing '/', "/" for the root */
	uint32_t allow;
	uint32_t flags;  /* enum custode_path_rule_flags */
	bool marker;     /* not a rule: an exact-path entry carrying flags, allow inherited */
	bool restricts;  /* narrower than its enclosing rule (or denies): held by identity too */
	bool leaf;       /* no other rule lies below this one (CUSTODE_PATH_RULE_NOTHING_BELOW) */
};

struct custode_fs_identity {
	struct custode_identity_key key;
	struct custode_identity val;
};

struct custode_fs_ruleset {
	struct custode_compiled_rule *rules; /* rules, then markers */
	size_t n;
	struct custode_fs_identity *ids;     /* rule paths, and everything below narrowing rules, as they existed */
	size_t n_ids;
	bool ids_partial;                    /* a narrowing rule's tree had more inodes than CUSTODE_MAX_TREE_IDS */
};

/* Inodes recorded below narrowing rules, per run (identity of denied trees, docs/file-policy.md). */
#define CUSTODE_MAX_TREE_IDS 65536

/*
 * Normalise an absolute path in place: collapse "//", drop "/." and a
 * trailing '/', refuse ".." (a rule must name what it means). -EINVAL if not
 * absolute or has "..".
 */
int custode_path_normalize(char *path);

/* Expand variables in one rule path into out. */
int custode_path_bind(const char *in, const struct custode_bindings *b, char *out, size_t outlen,
		      struct custode_refusal *why);

/*
 * Bind, normalise, merge duplicates (the narrower wins); then find each
 * rule's enclosing rule, mark narrowing rules (restricts), add
 * PROTECTS_BELOW markers on the paths from the enclosing rule down to each
 * narrowing rule, and resolve every existing rule path to its identity
 * (stat: device and inode). ruleset is written into the identity keys.
 */
int custode_policy_compile_fs(const struct custode_policy *p, const struct custode_bindings *b, uint32_t ruleset,
			      struct custode_fs_ruleset *out, struct custode_refusal *why);
void custode_fs_ruleset_free(struct custode_fs_ruleset *rs);

/*
 * Keys for one compiled rule in rule set `ruleset`. A rule for D matches D
 * itself ("D\0") and everything below it ("D/"), never a sibling such as
 * "Dx". The root rule is the single prefix "/". Returns the number of keys (1 or 2).
 */
int custode_rule_keys(const struct custode_compiled_rule *r, uint32_t ruleset, struct custode_path_key keys[2]);

/* The same keys with their values: the rule's classes and the flags each key carries. */
int custode_rule_entries(const struct custode_compiled_rule *r, uint32_t ruleset, struct custode_path_key keys[2],
			 struct custode_path_rule vals[2]);

/*
 * Every key and value of a rule set (custode_rule_entries of each rule), in
 * two arrays the caller frees: what custode_engine_add_rules writes to the
 * map. *n the number of entries; 0, or -ENOMEM (nothing allocated).
 */
int custode_ruleset_entries(const struct custode_fs_ruleset *rs, uint32_t ruleset, struct custode_path_key **keys,
			    struct custode_path_rule **vals, size_t *n);

/* The kernel's dev_t (major << 20 | minor) of a userspace st_dev. */
uint64_t custode_kernel_dev(uint64_t st_dev);

/* Userspace model of the engine's decision: allowed classes for an absolute resolved path. */
uint32_t custode_fs_lookup(const struct custode_fs_ruleset *rs, const char *path);

#endif
