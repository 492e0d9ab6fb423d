// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "policy/compile.h"

int custode_path_normalize(char *path)
{
	char *r = path, *w = path;

	if (path[0] != '/')
		return -EINVAL;
	while (*r) {
		if (*r == '/') {
			while (*r == '/')
				r++;
			/* component starts at r */
			if (r[0] == '.' && (r[1] == '/' || r[1] == 0)) {
				r++;
				continue;
			}
			if (r[0] == '.' && r[1] == '.' && (r[2] == '/' || r[2] == 0))
				return -EINVAL;
			if (*r)
				*w++ = '/';
			continue;
		}
		*w++ = *r++;
	}
	if (w == path)
		*w++ = '/';
	*w = 0;
	return 0;
}

int custode_path_bind(const char *in, const struct custode_bindings *b, char *out, size_t outlen,
		      struct custode_refusal *why)
{
	enum custode_path_var var;
	const char *rest, *value = NULL;
	int n, err;

	if ((err = custode_rule_path_check(in, in, &var, &rest, why)))
		return err;
	if (var != CUSTODE_PATH_VAR_NONE) {
		value = var == CUSTODE_PATH_VAR_WORKSPACE ? b->workspace : b->tmp;
		if (!value)
			return custode_refuse(why, EINVAL, CUSTODE_REASON_POLICY_INVALID, "%s: %.*s is not bound for this run",
					      in, (int)(rest - in), in);
	}
	n = snprintf(out, outlen, "%s%s", value ? value : "", rest);
	if (n < 0 || (size_t)n >= outlen)
		return custode_refuse(why, ENAMETOOLONG, CUSTODE_REASON_POLICY_PATH_TOO_LONG, "%s: too long", in);
	return 0;
}

/* Path order with '/' lowest, so that a path's descendants follow it contiguously. */
static int path_cmp(const char *a, const char *b)
{
	for (;; a++, b++) {
		unsigned char x = *a == '/' ? 1 : (unsigned char)*a, y = *b == '/' ? 1 : (unsigned char)*b;

		if (x != y || !x)
			return (int)x - (int)y;
	}
}

static int cmp_rule(const void *a, const void *b)
{
	return path_cmp(((const struct custode_compiled_rule *)a)->path, ((const struct custode_compiled_rule *)b)->path);
}

/* Is a a component-wise prefix of b (a == b excluded)? */
static bool encloses(const char *a, const char *b)
{
	size_t n = strlen(a);

	if (n == 1 && a[0] == '/')
		return b[0] == '/' && b[1] != 0;
	return strncmp(a, b, n) == 0 && b[n] == '/';
}

uint64_t custode_kernel_dev(uint64_t st_dev)
{
	return ((uint64_t)major(st_dev) << 20) | minor(st_dev);
}

static int push_rule(struct custode_compiled_rule **rules, size_t *n, size_t *cap, const struct custode_compiled_rule *r)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		void *nr = realloc(*rules, ncap * sizeof(**rules));
		if (!nr)
			return -ENOMEM;
		*rules = nr;
		*cap = ncap;
	}
	(*rules)[(*n)++] = *r;
	return 0;
}

/*
 * PROTECTS_BELOW on the enclosing rule (if any), the paths between it and the
 * narrowing rule r, and r itself. Intermediate paths become markers that
 * inherit the enclosing rule's classes.
 */
static int protect_path_to(struct custode_compiled_rule **rules, size_t *n, size_t *cap, size_t ri, long parent)
{
	char path[CUSTODE_RULE_PATH_MAX];
	size_t start = parent >= 0 ? strlen((*rules)[parent].path) : 0;
	uint32_t inherited = parent >= 0 ? (*rules)[parent].allow : 0;
	int err;

	if (parent >= 0)
		(*rules)[parent].flags |= CUSTODE_PATH_RULE_PROTECTS_BELOW;
	(*rules)[ri].flags |= CUSTODE_PATH_RULE_PROTECTS_BELOW;
	snprintf(path, sizeof(path), "%s", (*rules)[ri].path);
	for (size_t i = start + 1; path[i]; i++) {
		struct custode_compiled_rule m = {0};

		if (path[i] != '/')
			continue;
		memcpy(m.path, path, i);
		m.path[i] = 0;
		m.allow = inherited;
		m.flags = CUSTODE_PATH_RULE_PROTECTS_BELOW;
		m.marker = true;
		if ((err = push_rule(rules, n, cap, &m)))
			return err;
	}
	return 0;
}

struct id_acc {
	uint32_t ruleset;
	const struct custode_compiled_rule *const *sub; /* the narrowing rule and the rules below it */
	size_t n_sub;
	struct custode_fs_identity *ids;
	size_t n, cap, tree;
	bool partial;
};

static int id_put(struct id_acc *a, const struct stat *st, uint32_t allow, bool restricts)
{
	uint64_t dev = custode_kernel_dev(st->st_dev);

	for (size_t j = 0; j < a->n && j < 4096; j++) /* dedup the rule paths themselves; trees are disjoint */
		if (a->ids[j].key.dev == dev && a->ids[j].key.ino == st->st_ino) {
			a->ids[j].val.allow &= allow; /* two rules, one inode: the narrower holds */
			a->ids[j].val.flags |= restricts ? CUSTODE_IDENTITY_RESTRICTS : 0;
			return 0;
		}
	if (a->n == a->cap) {
		size_t ncap = a->cap ? a->cap * 2 : 64;
		void *p = realloc(a->ids, ncap * sizeof(*a->ids));
		if (!p)
			return -ENOMEM;
		a->ids = p;
		a->cap = ncap;
	}
	memset(&a->ids[a->n], 0, sizeof(a->ids[a->n]));
	a->ids[a->n].key.ruleset = a->ruleset;
	a->ids[a->n].key.dev = dev;
	a->ids[a->n].key.ino = st->st_ino;
	a->ids[a->n].val.allow = allow;
	a->ids[a->n].val.flags = restricts ? CUSTODE_IDENTITY_RESTRICTS : 0;
	a->n++;
	return 0;
}

static int id_add_path(struct id_acc *a, const char *path, uint32_t allow, bool restricts)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return 0; /* not there (yet): matched by path only */
	return id_put(a, &st, allow, restricts);
}

/*
 * Everything below a narrowing directory holds by identity too, with the
 * classes of the rule that governs its path: a hard link to one of its files,
 * a bind mount or a rename of one of its subdirectories, made outside the
 * run, then finds the restriction on the inode itself. Bounded: past
 * CUSTODE_MAX_TREE_IDS inodes the coverage is partial (reported).
 */
static int id_add_tree(struct id_acc *a, const char *dir, int depth)
{
	DIR *d;
	struct dirent *de;
	int err = 0;

	if (depth > 64)
		return 0;
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d)) && !err) {
		char child[PATH_MAX];
		struct stat st;
		uint32_t allow;
		const struct custode_compiled_rule *gov = NULL;
		size_t best = 0;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (snprintf(child, sizeof(child), "%s/%s", dir, de->d_name) >= (int)sizeof(child) ||
		    lstat(child, &st) < 0)
			continue;
		if (a->tree >= CUSTODE_MAX_TREE_IDS) {
			a->partial = true;
			break;
		}
		/* the governing rule: the longest of the narrowing rule and the rules below it */
		for (size_t i = 0; i < a->n_sub; i++) {
			size_t len = strlen(a->sub[i]->path);
			if (len > best && encloses(a->sub[i]->path, child)) {
				gov = a->sub[i];
				best = len;
			}
		}
		if (!gov)
			continue;
		allow = gov->allow;
		a->tree++;
		if ((err = id_put(a, &st, allow, gov->restricts)))
			break;
		if (S_ISDIR(st.st_mode))
			err = id_add_tree(a, child, depth + 1);
	}
	closedir(d);
	return err;
}

int custode_policy_compile_fs(const struct custode_policy *p, const struct custode_bindings *b, uint32_t ruleset,
			      struct custode_fs_ruleset *out, struct custode_refusal *why)
{
	struct custode_compiled_rule *rules;
	struct custode_fs_identity *ids = NULL;
	size_t n = 0, cap, nrules, n_ids = 0;
	long *parent = NULL, *stack = NULL;
	char buf[PATH_MAX * 2];
	int err;

	cap = p->n_fs ? p->n_fs : 1;
	rules = calloc(cap, sizeof(*rules));
	if (!rules)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_fs; i++) {
		char where[64];

		snprintf(where, sizeof(where), "content.filesystem[%zu].path", i);
		if ((err = custode_rule_path_check(where, p->fs[i].path, NULL, NULL, why)) ||
		    (err = custode_path_bind(p->fs[i].path, b, buf, sizeof(buf), why)))
			goto fail;
		if (custode_path_normalize(buf) < 0) {
			err = custode_refuse(why, EINVAL, CUSTODE_REASON_POLICY_INVALID,
					     "content.filesystem[%zu].path: \"%s\" must be absolute and have no \"..\"", i,
					     p->fs[i].path);
			goto fail;
		}
		if (strlen(buf) > CUSTODE_RULE_PATH_MAX - 1) {
			err = custode_refuse(why, ENAMETOOLONG, CUSTODE_REASON_POLICY_PATH_TOO_LONG,
					     "content.filesystem[%zu].path: \"%.64s...\" is %zu bytes once bound; rules are "
					     "limited to %d",
					     i, buf, strlen(buf), CUSTODE_RULE_PATH_MAX - 1);
			goto fail;
		}
		memset(&rules[n], 0, sizeof(rules[n]));
		memcpy(rules[n].path, buf, strlen(buf) + 1);
		rules[n++].allow = p->fs[i].allow;
	}
	qsort(rules, n, sizeof(*rules), cmp_rule);
	/* Two rules for one path (e.g. ${workspace} bound onto a listed path): the narrower wins. */
	size_t w = 0;
	for (size_t i = 0; i < n; i++) {
		if (w && strcmp(rules[w - 1].path, rules[i].path) == 0) {
			rules[w - 1].allow &= rules[i].allow;
			continue;
		}
		rules[w++] = rules[i];
	}
	n = nrules = w;

	/* enclosing rules: with '/' sorted lowest, a stack of open ancestors */
	parent = calloc(nrules ? nrules : 1, sizeof(*parent));
	stack = calloc(nrules ? nrules : 1, sizeof(*stack));
	if (!parent || !stack) {
		err = -ENOMEM;
		goto fail;
	}
	size_t depth = 0;
	for (size_t i = 0; i < nrules; i++) {
		while (depth && !encloses(rules[stack[depth - 1]].path, rules[i].path))
			depth--;
		parent[i] = depth ? stack[depth - 1] : -1;
		stack[depth++] = (long)i;
	}
	/* a leaf: sorted with '/' lowest, whatever lies below a rule follows it directly */
	for (size_t i = 0; i < nrules; i++)
		rules[i].leaf = i + 1 == nrules || !encloses(rules[i].path, rules[i + 1].path);
	for (size_t i = 0; i < nrules; i++) {
		uint32_t up = parent[i] >= 0 ? rules[parent[i]].allow : 0;

		rules[i].restricts = rules[i].allow == 0 || (parent[i] >= 0 && (rules[i].allow & ~up) == 0 && rules[i].allow != up);
		if (rules[i].restricts && (err = protect_path_to(&rules, &n, &cap, i, parent[i])))
			goto fail;
	}
	/* one marker per path (two narrowing rules under one directory share it) */
	if (n > nrules) {
		qsort(rules + nrules, n - nrules, sizeof(*rules), cmp_rule);
		w = nrules;
		for (size_t i = nrules; i < n; i++)
			if (w == nrules || strcmp(rules[w - 1].path, rules[i].path) != 0)
				rules[w++] = rules[i];
		n = w;
	}
	/* identities of the rule paths that exist now, and of everything below narrowing directories */
	struct id_acc acc = {.ruleset = ruleset};
	const struct custode_compiled_rule **subs = NULL;

	for (size_t i = 0; i < nrules; i++) {
		if ((err = id_add_path(&acc, rules[i].path, rules[i].allow, rules[i].restricts)))
			goto fail_acc;
	}
	subs = calloc(nrules ? nrules : 1, sizeof(*subs));
	if (!subs) {
		err = -ENOMEM;
		goto fail_acc;
	}
	for (size_t i = 0; i < nrules; i++) {
		struct stat st;

		if (!rules[i].restricts || lstat(rules[i].path, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		/* rules at or below this one: contiguous after it in path order */
		acc.n_sub = 0;
		for (size_t j = i; j < nrules && (j == i || encloses(rules[i].path, rules[j].path)); j++)
			subs[acc.n_sub++] = &rules[j];
		acc.sub = subs;
		if ((err = id_add_tree(&acc, rules[i].path, 0)))
			goto fail_acc;
	}
	free(subs);
	subs = NULL;
	ids = acc.ids;
	n_ids = acc.n;
	out->ids_partial = acc.partial;
	free(parent);
	free(stack);
	out->rules = rules;
	out->n = n;
	out->ids = ids;
	out->n_ids = n_ids;
	return 0;
fail_acc:
	free(subs);
	free(acc.ids);
fail:
	free(parent);
	free(stack);
	free(ids);
	free(rules);
	return err;
}

void custode_fs_ruleset_free(struct custode_fs_ruleset *rs)
{
	free(rs->rules);
	free(rs->ids);
	memset(rs, 0, sizeof(*rs));
}

int custode_rule_keys(const struct custode_compiled_rule *r, uint32_t ruleset, struct custode_path_key keys[2])
{
	size_t len = strlen(r->path);

	memset(keys, 0, 2 * sizeof(keys[0]));
	keys[0].ruleset = keys[1].ruleset = ruleset;
	if (len == 1 && r->path[0] == '/') {
		keys[0].path[0] = '/';
		keys[0].prefixlen = 32 + 8;
		return 1;
	}
	/* exact: "D\0" */
	memcpy(keys[0].path, r->path, len);
	keys[0].path[len] = 0;
	keys[0].prefixlen = (uint32_t)(32 + 8 * (len + 1));
	if (r->marker)
		return 1; /* a marker is the path itself only */
	/* below: "D/" */
	memcpy(keys[1].path, r->path, len);
	keys[1].path[len] = '/';
	keys[1].prefixlen = (uint32_t)(32 + 8 * (len + 1));
	return 2;
}

int custode_rule_entries(const struct custode_compiled_rule *r, uint32_t ruleset, struct custode_path_key keys[2],
			 struct custode_path_rule vals[2])
{
	int k = custode_rule_keys(r, ruleset, keys);

	for (int j = 0; j < k; j++) {
		vals[j].allow = r->allow;
		vals[j].flags = r->flags;
		/* rename protection is about the path itself (keys[0], "D\0"), never what's below it */
		if (j == 1)
			vals[j].flags &= ~CUSTODE_PATH_RULE_PROTECTS_BELOW;
		/* and what lies below is the "D/" key's business (the root rule's one key is both) */
		if (r->leaf && !r->marker && (j == 1 || k == 1))
			vals[j].flags |= CUSTODE_PATH_RULE_NOTHING_BELOW;
	}
	return k;
}

int custode_ruleset_entries(const struct custode_fs_ruleset *rs, uint32_t ruleset, struct custode_path_key **keys,
			    struct custode_path_rule **vals, size_t *n)
{
	size_t cap = rs->n ? rs->n * 2 : 1;

	*n = 0;
	*keys = calloc(cap, sizeof(**keys));
	*vals = calloc(cap, sizeof(**vals));
	if (!*keys || !*vals) {
		free(*keys);
		free(*vals);
		*keys = NULL;
		*vals = NULL;
		return -ENOMEM;
	}
	for (size_t i = 0; i < rs->n; i++)
		*n += (size_t)custode_rule_entries(&rs->rules[i], ruleset, &(*keys)[*n], &(*vals)[*n]);
	return 0;
}

uint32_t custode_fs_lookup(const struct custode_fs_ruleset *rs, const char *path)
{
	size_t best = 0;
	const struct custode_compiled_rule *hit = NULL;

	for (size_t i = 0; i < rs->n; i++) {
		const char *rp = rs->rules[i].path;

		if (rs->rules[i].marker) {
			if (strcmp(path, rp) == 0 && (!hit || strlen(rp) > best)) {
				hit = &rs->rules[i];
				best = strlen(rp);
			}
			continue;
		}
		size_t len = strlen(rp);
		bool match;

		if (len == 1 && rp[0] == '/')
			match = path[0] == '/';
		else
			match = strncmp(path, rp, len) == 0 && (path[len] == 0 || path[len] == '/');
		if (match && (!hit || len > best)) {
			hit = &rs->rules[i];
			best = len;
		}
	}
	return hit ? hit->allow : 0;
}
