/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CUSTODE_RUN_ENV_H
#define CUSTODE_RUN_ENV_H

#include <stddef.h>

#include "policy/policy.h"

/*
 * The run's environment (docs/process.md), built from the launcher's:
 * - kept: the variables the policy's "env" list names; without an "env"
 *   section, the default set PATH, LANG, LANGUAGE, LC_*, TERM, TZ, COLORTERM,
 *   NO_COLOR;
 * - always set by custode: TMPDIR (the run's private tmp), HOME (the private
 *   tmp, unless the policy lists HOME: then the caller's), USER and LOGNAME
 *   (the run's user), and PATH=/usr/local/bin:/usr/bin:/bin when not kept.
 * Everything else — SSH_AUTH_SOCK, tokens, SUDO_*, LD_PRELOAD, ... — is dropped.
 */
struct custode_run_env {
	char **envp;   /* NULL-terminated, for execve */
	size_t n;
	char **kept;   /* names taken from the launcher's environment, NULL-terminated */
	size_t n_kept;
};

int custode_run_env_build(char *const *launcher_env, const struct custode_policy *p, const char *user,
			  const char *tmp, struct custode_run_env *out);
void custode_run_env_free(struct custode_run_env *e);
/* The value of NAME in e, or NULL. */
const char *custode_run_env_get(const struct custode_run_env *e, const char *name);

#endif
