// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/env.h"

static const char *const default_names[] = {"PATH", "LANG", "LANGUAGE", "TERM", "TZ", "COLORTERM", "NO_COLOR", NULL};

static bool name_is(const char *entry, const char *name)
{
	size_t n = strlen(name);
	return !strncmp(entry, name, n) && entry[n] == '=';
}

static bool wanted(const char *entry, const struct custode_policy *p)
{
	const char *eq = strchr(entry, '=');

	if (!eq || eq == entry)
		return false;
	/* set by custode itself, whatever the lists say (HOME: see below) */
	if (name_is(entry, "TMPDIR") || name_is(entry, "USER") || name_is(entry, "LOGNAME"))
		return false;
	if (p->has_env) {
		for (size_t i = 0; i < p->n_env; i++)
			if (name_is(entry, p->env[i]))
				return true;
		return false;
	}
	if (!strncmp(entry, "LC_", 3))
		return true;
	for (const char *const *d = default_names; *d; d++)
		if (name_is(entry, *d))
			return true;
	return false;
}

static int push(struct custode_run_env *e, size_t cap, char *s)
{
	if (!s)
		return -ENOMEM;
	if (e->n + 1 >= cap) {
		free(s);
		return -E2BIG;
	}
	e->envp[e->n++] = s;
	e->envp[e->n] = NULL;
	return 0;
}

static char *pair(const char *name, const char *value)
{
	char *s = NULL;
	return asprintf(&s, "%s=%s", name, value) < 0 ? NULL : s;
}

int custode_run_env_build(char *const *launcher_env, const struct custode_policy *p, const char *user,
			  const char *tmp, struct custode_run_env *out)
{
	struct custode_run_env e = {0};
	size_t n = 0, cap;
	bool home = false, path = false;
	int err = 0;

	for (char *const *v = launcher_env; v && *v; v++)
		n++;
	cap = n + 8;
	e.envp = calloc(cap, sizeof(*e.envp));
	e.kept = calloc(n + 1, sizeof(*e.kept));
	if (!e.envp || !e.kept) {
		err = -ENOMEM;
		goto fail;
	}
	for (char *const *v = launcher_env; v && *v && !err; v++) {
		const char *eq = strchr(*v, '=');
		bool dup = false;

		if (!wanted(*v, p))
			continue;
		/* first occurrence wins, as getenv(3) sees it */
		for (size_t i = 0; i < e.n_kept && !dup; i++)
			dup = name_is(*v, e.kept[i]);
		if (dup)
			continue;
		if (!(e.kept[e.n_kept] = strndup(*v, (size_t)(eq - *v)))) {
			err = -ENOMEM;
			break;
		}
		e.n_kept++;
		home |= name_is(*v, "HOME");
		path |= name_is(*v, "PATH");
		err = push(&e, cap, strdup(*v));
	}
	if (!err)
		err = push(&e, cap, pair("TMPDIR", tmp));
	if (!err && !home)
		err = push(&e, cap, pair("HOME", tmp));
	if (!err && user)
		err = push(&e, cap, pair("USER", user));
	if (!err && user)
		err = push(&e, cap, pair("LOGNAME", user));
	if (!err && !path)
		err = push(&e, cap, strdup("PATH=/usr/local/bin:/usr/bin:/bin"));
	if (err)
		goto fail;
	*out = e;
	return 0;
fail:
	custode_run_env_free(&e);
	return err;
}

void custode_run_env_free(struct custode_run_env *e)
{
	for (size_t i = 0; e->envp && e->envp[i]; i++)
		free(e->envp[i]);
	for (size_t i = 0; e->kept && e->kept[i]; i++)
		free(e->kept[i]);
	free(e->envp);
	free(e->kept);
	memset(e, 0, sizeof(*e));
}

const char *custode_run_env_get(const struct custode_run_env *e, const char *name)
{
	for (size_t i = 0; e->envp && e->envp[i]; i++)
		if (name_is(e->envp[i], name))
			return e->envp[i] + strlen(name) + 1;
	return NULL;
}
