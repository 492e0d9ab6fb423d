// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/compile.h"
#include "policy/net.h"
#include "run/program.h"
#include "run/swap.h"

static unsigned run_classes(__u32 flags)
{
	return ((flags & CUSTODE_RUN_FILE) ? CUSTODE_CLASS_FILE : 0) |
	       ((flags & CUSTODE_RUN_PROCESS) ? CUSTODE_CLASS_PROCESS : 0) |
	       ((flags & CUSTODE_RUN_NET) ? CUSTODE_CLASS_EGRESS : 0);
}

int custode_run_swap_policy(struct custode_engine *e, struct custode_runstate *st, const struct custode_policy *p,
			    struct custode_refusal *why)
{
	struct custode_allow *allows = calloc(CUSTODE_RUN_MAX_ALLOWS, sizeof(*allows));
	struct custode_program pr = {
		.policy = p,
		.bindings = {.workspace = st->workspace, .tmp = st->tmp},
		.allows = allows,
		.n_allows = (size_t)st->n_allows,
		.run_id = st->run_id,
	};
	struct custode_run run;
	int err;

	if (!allows)
		return custode_refuse(why, ENOMEM, CUSTODE_REASON_RUN_SETUP_FAILED, "out of memory");
	if ((err = custode_engine_get_run(e, st->cgroup_id, &run))) {
		err = custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "run is not registered: %s",
				     strerror(-err));
		goto done;
	}
	if (run.flags & CUSTODE_RUN_CANCELLED) {
		err = custode_refuse(why, ESRCH, CUSTODE_REASON_RUN_CANCELLED, "the run is ending");
		goto done;
	}
	if (run_classes(run.flags) != custode_policy_classes(p)) {
		err = custode_refuse(why, ENOTSUP, CUSTODE_REASON_POLICY_UNSUPPORTED,
				     "%s v%llu asks for enforcement classes 0x%x, the run was set up for 0x%x; it takes "
				     "effect for new runs only",
				     p->name, (unsigned long long)p->version, custode_policy_classes(p),
				     run_classes(run.flags));
		goto done;
	}
	for (int i = 0; i < st->n_allows && i < CUSTODE_RUN_MAX_ALLOWS; i++)
		if ((err = custode_allow_parse(st->allows[i], &allows[i], why)))
			goto done;

	/* the new rules beside the old ones (another rule set id: nothing the run uses changes yet), then the flip */
	if ((err = custode_program_ruleset(e, &pr, why)))
		return err;
	if ((err = custode_program_rules(e, &pr, why)) || (err = custode_program_swap(e, &pr, st->cgroup_id, &run, why))) {
		custode_program_undo(e, &pr);
		goto out;
	}
	st->ruleset = pr.ruleset;
	snprintf(st->policy, sizeof(st->policy), "%s", p->name);
	custode_runstate_write(st);
out:
	custode_program_free(&pr);
done:
	free(allows);
	return err;
}
