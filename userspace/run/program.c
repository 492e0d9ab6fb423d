// SPDX-License-Identifier: Apache-2.0
/* Programming a policy into the engine (program.h). */
#include <errno.h>
#include <string.h>

#include "dns/launch.h"
#include "dns/names.h"
#include "run/program.h"

__u32 custode_program_flags(const struct custode_policy *p, const struct custode_net_ruleset *net)
{
	return (p->has_filesystem ? CUSTODE_RUN_FILE : 0) | (p->has_network ? CUSTODE_RUN_NET : 0) |
	       (p->has_network && !net->listen ? CUSTODE_RUN_NO_LISTEN : 0) |
	       (p->has_network && net->inbound_set ? CUSTODE_RUN_INBOUND : 0) | (p->audit ? CUSTODE_RUN_AUDIT : 0) |
	       (p->has_process ? CUSTODE_RUN_PROCESS : 0) |
	       (p->has_process && p->ptrace_run ? CUSTODE_RUN_PTRACE_RUN : 0) |
	       (p->has_process && p->wx_deny ? CUSTODE_RUN_WX_DENY : 0);
}

int custode_program_ruleset(struct custode_engine *e, struct custode_program *pr, struct custode_refusal *why)
{
	int err, lock;

	lock = custode_engine_lock();
	if (lock < 0)
		return custode_refuse(why, -lock, CUSTODE_REASON_RUN_SETUP_FAILED, "engine lock: %s", strerror(-lock));
	err = custode_engine_alloc_ruleset(e, &pr->ruleset);
	custode_engine_unlock(lock);
	if (err)
		return custode_refuse(why, -err, CUSTODE_REASON_ENGINE_MAP_FULL, "no free rule set: %s", strerror(-err));
	return 0;
}

static int map_refusal(int err)
{
	return err == -E2BIG || err == -ENOSPC ? CUSTODE_REASON_ENGINE_MAP_FULL : CUSTODE_REASON_RUN_SETUP_FAILED;
}

int custode_program_rules(struct custode_engine *e, struct custode_program *pr, struct custode_refusal *why)
{
	int err;

	if ((err = custode_policy_compile_fs(pr->policy, &pr->bindings, pr->ruleset, &pr->fs, why)) ||
	    (err = custode_policy_compile_net(pr->policy, pr->allows, pr->n_allows, pr->ruleset, &pr->net, why)))
		return err;
	/* under a rule set id no run uses yet: nothing changes until a run points to it */
	pr->rules_added = true;
	if ((err = custode_engine_add_rules(e, pr->ruleset, &pr->fs)))
		return custode_refuse(why, -err, map_refusal(err), "adding %zu rules: %s", pr->fs.n, strerror(-err));
	if ((err = custode_engine_add_net(e, &pr->net)))
		return custode_refuse(why, -err, map_refusal(err), "adding %zu egress keys: %s", pr->net.n,
				      strerror(-err));
	/*
	 * Host entries: the resolver must be up, and learns the run's names
	 * before the run uses the rules. None: remove, so that no grant of a
	 * swapped-out policy lingers.
	 */
	if (!pr->net.n_hosts) {
		custode_dns_names_remove(pr->run_id);
		return 0;
	}
	return custode_dns_run_prepare(pr->run_id, &pr->net, why);
}

bool custode_program_current(const struct custode_run *run, __u64 version)
{
	return run->policy_version == version;
}

int custode_program_register(struct custode_engine *e, struct custode_program *pr, __u64 cgid, __u32 extra_flags,
			     struct custode_run *out, struct custode_refusal *why)
{
	struct custode_run run = {0};
	int err;

	run.run_id = pr->run_id;
	run.ruleset = pr->ruleset;
	run.policy_version = pr->policy->version;
	run.flags = custode_program_flags(pr->policy, &pr->net) | extra_flags;
	if ((err = custode_engine_register(e, cgid, &run)))
		return custode_refuse(why, -err, err == -E2BIG ? CUSTODE_REASON_ENGINE_MAP_FULL : CUSTODE_REASON_RUN_SETUP_FAILED,
				      "register run: %s", strerror(-err));
	pr->registered = true;
	pr->cgroup_id = cgid;
	if (out)
		*out = run;
	return 0;
}

int custode_program_swap(struct custode_engine *e, struct custode_program *pr, __u64 cgid,
			 const struct custode_run *cur, struct custode_refusal *why)
{
	struct custode_run next = *cur;
	int err;

	next.ruleset = pr->ruleset;
	next.policy_version = pr->policy->version;
	next.flags &= ~CUSTODE_PROGRAM_LIVE_FLAGS;
	next.flags |= custode_program_flags(pr->policy, &pr->net) & CUSTODE_PROGRAM_LIVE_FLAGS;
	/* the flip: one update of the run's value */
	if ((err = custode_engine_set_run(e, cgid, &next)))
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "flip: %s", strerror(-err));
	/*
	 * the old rules go, once no decision in flight can still be reading
	 * them; pins of names the new policy may have revoked too
	 */
	custode_engine_quiesce();
	custode_engine_delete_ruleset(e, cur->ruleset);
	custode_engine_delete_net_ruleset(e, cur->ruleset);
	custode_engine_delete_pins(e, cgid);
	return 0;
}

void custode_program_undo(struct custode_engine *e, struct custode_program *pr)
{
	if (pr->registered)
		custode_engine_unregister(e, pr->cgroup_id);
	pr->registered = false;
	if (pr->rules_added) {
		custode_engine_delete_rules(e, pr->ruleset, &pr->fs);
		custode_engine_delete_net(e, &pr->net);
	}
	pr->rules_added = false;
}

void custode_program_free(struct custode_program *pr)
{
	custode_fs_ruleset_free(&pr->fs);
	custode_net_ruleset_free(&pr->net);
}
