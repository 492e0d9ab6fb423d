// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

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
	static const struct {
		const char *var;
		size_t off;
	} vars[] = {
		{"${workspace}", offsetof(struct custode_bindings, workspace)},
		{"${tmp}", offsetof(struct custode_bindings, tmp)},
	};
	const char *rest = in, *value = NULL;
	int n;

	if (in[0] == '$') {
		for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
			size_t vl = strlen(vars[i].var);
			if (strncmp(in, vars[i].var, vl) == 0 && (in[vl] == 0 || in[vl] == '/')) {
				value = *(const char *const *)((const char *)b + vars[i].off);
				if (!value)
					return custode_refuse(why, EINVAL, CUSTODE_REASON_POLICY_INVALID,
							      "%s: %s is not bound for this run", in, vars[i].var);
				rest = in + vl;
				break;
			}
		}
		if (!value)
			return custode_refuse(why, EINVAL, CUSTODE_REASON_POLICY_INVALID,
					      "%s: unknown variable (known: ${workspace}, ${tmp})", in);
	}
	if (strstr(rest, "${"))
		return custode_refuse(why, EINVAL, CUSTODE_REASON_POLICY_INVALID,
				      "%s: variables are allowed only at the start of a path", in);
	n = snprintf(out, outlen, "%s%s", value ? value : "", rest);
	if (n < 0 || (size_t)n >= outlen)
		return custode_refuse(why, ENAMETOOLONG, CUSTODE_REASON_POLICY_PATH_TOO_LONG, "%s: too long", in);
	return 0;
}

static int cmp_rule(const void *a, const void *b)
{
	return strcmp(((const struct custode_compiled_rule *)a)->path, ((const struct custode_compiled_rule *)b)->path);
}

int custode_policy_compile_fs(const struct custode_policy *p, const struct custode_bindings *b,
			      struct custode_fs_ruleset *out, struct custode_refusal *why)
{
	struct custode_compiled_rule *rules;
	size_t n = 0;
	char buf[PATH_MAX * 2];
	int err;

	rules = calloc(p->n_fs ? p->n_fs : 1, sizeof(*rules));
	if (!rules)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_fs; i++) {
		err = custode_path_bind(p->fs[i].path, b, buf, sizeof(buf), why);
		if (err)
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
	out->rules = rules;
	out->n = w;
	return 0;
fail:
	free(rules);
	return err;
}

void custode_fs_ruleset_free(struct custode_fs_ruleset *rs)
{
	free(rs->rules);
	rs->rules = NULL;
	rs->n = 0;
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
	/* below: "D/" */
	memcpy(keys[1].path, r->path, len);
	keys[1].path[len] = '/';
	keys[1].prefixlen = (uint32_t)(32 + 8 * (len + 1));
	return 2;
}

uint32_t custode_fs_lookup(const struct custode_fs_ruleset *rs, const char *path)
{
	size_t best = 0;
	const struct custode_compiled_rule *hit = NULL;

	for (size_t i = 0; i < rs->n; i++) {
		const char *rp = rs->rules[i].path;
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
