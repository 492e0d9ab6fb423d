/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CUSTODE_RUN_USER_H
#define CUSTODE_RUN_USER_H

#include <sys/types.h>

#include "util/reasons.h"

struct custode_run_user {
	uid_t uid;
	gid_t gid;
	char name[64]; /* for messages */
};

/*
 * Who the command runs as. spec is --user's value (NAME|UID[:GROUP|GID]) or
 * NULL: then SUDO_UID/SUDO_GID when custode was started through sudo, else
 * the caller — and a caller that is root gets `nobody`. uid 0 is refused
 * (run.root_unprotected): with every capability dropped, a root process still
 * owns the engine's pins in bpffs and could remove them (docs/engine.md).
 */
int custode_run_user_resolve(const char *spec, struct custode_run_user *out, struct custode_refusal *why);

/*
 * In the run's first process, before exec: no_new_privs, supplementary groups
 * = {gid}, gid, uid, every capability gone (bounding, ambient, inheritable,
 * permitted, effective). Returns 0 or -errno.
 */
int custode_run_user_enter(const struct custode_run_user *u);

#endif
