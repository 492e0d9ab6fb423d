// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dns/launch.h"
#include "dns/names.h"
#include "policy/compile.h"
#include "policy/net.h"
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
	struct custode_allow allows[16];
	struct custode_bindings b = {.workspace = st->workspace, .tmp = st->tmp};
	struct custode_fs_ruleset fs = {0};
	struct custode_net_ruleset net = {0};
	struct custode_run run, next;
	__u32 old_ruleset, new_ruleset;
	int err, lock;

	if ((err = custode_engine_get_run(e, st->cgroup_id, &run)))
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "run is not registered: %s",
				      strerror(-err));
	if (run.flags & CUSTODE_RUN_CANCELLED)
		return custode_refuse(why, ESRCH, CUSTODE_REASON_RUN_CANCELLED, "the run is ending");
	if (run_classes(run.flags) != custode_policy_classes(p))
		return custode_refuse(why, ENOTSUP, CUSTODE_REASON_POLICY_UNSUPPORTED,
				      "%s v%llu asks for enforcement classes 0x%x, the run was set up for 0x%x; it takes "
				      "effect for new runs only",
				      p->name, (unsigned long long)p->version, custode_policy_classes(p),
				      run_classes(run.flags));
	for (int i = 0; i < st->n_allows && i < 16; i++)
		if ((err = custode_allow_parse(st->allows[i], &allows[i], why)))
			return err;

	lock = custode_engine_lock();
	if (lock < 0)
		return custode_refuse(why, -lock, CUSTODE_REASON_RUN_SETUP_FAILED, "engine lock: %s", strerror(-lock));
	err = custode_engine_alloc_ruleset(e, &new_ruleset);
	custode_engine_unlock(lock);
	if (err)
		return custode_refuse(why, -err, CUSTODE_REASON_ENGINE_MAP_FULL, "no free rule set: %s", strerror(-err));

	if ((err = custode_policy_compile_fs(p, &b, new_ruleset, &fs, why)) ||
	    (err = custode_policy_compile_net(p, allows, (size_t)st->n_allows, new_ruleset, &net, why)))
		goto out;
	/* 1. the new rules, beside the old ones (another rule set id: nothing the run uses changes yet) */
	if ((err = custode_engine_add_rules(e, new_ruleset, &fs)) || (err = custode_engine_add_net(e, &net))) {
		custode_refuse(why, -err, CUSTODE_REASON_ENGINE_MAP_FULL, "adding the new rules: %s", strerror(-err));
		goto undo;
	}
	/* the resolver's names for the new policy (none: remove, so no old grant lingers) */
	if (net.n_hosts) {
		if ((err = custode_dns_run_prepare(st->run_id, &net, why)))
			goto undo;
	} else {
		custode_dns_names_remove(st->run_id);
	}
	/* 2. the flip: one update of the run's value */
	next = run;
	old_ruleset = run.ruleset;
	next.ruleset = new_ruleset;
	next.policy_version = (__u32)p->version;
	next.flags &= ~(CUSTODE_RUN_AUDIT | CUSTODE_RUN_NO_LISTEN | CUSTODE_RUN_PTRACE_RUN | CUSTODE_RUN_WX_DENY |
			CUSTODE_RUN_INBOUND);
	next.flags |= (p->audit ? CUSTODE_RUN_AUDIT : 0) | (p->has_network && !net.listen ? CUSTODE_RUN_NO_LISTEN : 0) |
		      (p->has_network && net.inbound_set ? CUSTODE_RUN_INBOUND : 0) |
		      (p->has_process && p->ptrace_run ? CUSTODE_RUN_PTRACE_RUN : 0) |
		      (p->has_process && p->wx_deny ? CUSTODE_RUN_WX_DENY : 0);
	if ((err = custode_engine_set_run(e, st->cgroup_id, &next))) {
		custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "flip: %s", strerror(-err));
		goto undo;
	}
	/* 3. the old rules go; pins of names the new policy may have revoked too */
	custode_engine_delete_ruleset(e, old_ruleset);
	custode_engine_delete_net_ruleset(e, old_ruleset);
	custode_engine_delete_pins(e, st->cgroup_id);
	st->ruleset = new_ruleset;
	snprintf(st->policy, sizeof(st->policy), "%s", p->name);
	custode_runstate_write(st);
	err = 0;
	goto out;
undo:
	custode_engine_delete_rules(e, new_ruleset, &fs);
	custode_engine_delete_net(e, &net);
out:
	custode_fs_ruleset_free(&fs);
	custode_net_ruleset_free(&net);
	return err;
}
