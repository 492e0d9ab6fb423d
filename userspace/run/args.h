/* SPDX-License-Identifier: Apache-2.0 */
/* `custode run`'s command line (run.c's, nobody else's). */
#ifndef CUSTODE_RUN_ARGS_H
#define CUSTODE_RUN_ARGS_H

#include <stdbool.h>
#include <stddef.h>

#include "policy/net.h"
#include "run/receipt.h"
#include "state/runstate.h" /* CUSTODE_RUN_MAX_ALLOWS */

#define MAX_ALLOWS CUSTODE_RUN_MAX_ALLOWS
#define MAX_TRUST 32

struct run_opts {
	const char *profile;
	const char *policy_file;
	const char *bundle;
	const char *trust[MAX_TRUST];
	size_t n_trust;
	struct custode_allow allows[MAX_ALLOWS];
	const char *allow_strs[MAX_ALLOWS];
	size_t n_allows;
	bool profile_set;
	const char *workspace;
	const char *user;
	const char *receipt;
	struct custode_receipt_dest receipt_dest; /* --receipt, checked and opened by the parse */
	long timeout_sec;
	bool audit;
	bool require_limits; /* refuse (limit.unavailable) rather than run without a cgroup limit the policy sets */
	char **argv;
};

/* o zeroed by the caller (calloc). 0: run; 1: --help was printed; -1: refused (said on stderr). */
int custode_run_args_parse(int argc, char **argv, struct run_opts *o);

#endif
