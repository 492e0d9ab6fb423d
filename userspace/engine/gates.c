// SPDX-License-Identifier: Apache-2.0
/* The gate table of attached runs (gates.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "engine/gates.h"
#include "engine/maps.h"

int custode_gates_plan(const struct custode_gates *cur, const struct custode_gate_want *want, size_t n,
		       struct custode_gates *phase1, struct custode_gates *phase2)
{
	struct custode_gates p1 = *cur;
	__u32 wanted_levels[CUSTODE_MAX_GATES];
	__u64 new_ids[CUSTODE_MAX_GATES * 4];
	__u32 new_levels[CUSTODE_MAX_GATES * 4];
	size_t n_new = 0;

	/* phase 1: keep the slots of gates still wanted (levels replaced), free the others */
	for (int k = 0; k < CUSTODE_MAX_GATES; k++) {
		wanted_levels[k] = 0;
		if (!p1.gate[k].id)
			continue;
		for (size_t i = 0; i < n; i++)
			if (want[i].gate_id == p1.gate[k].id && want[i].level_bit >= 0 &&
			    want[i].level_bit < CUSTODE_GATE_LEVELS)
				wanted_levels[k] |= 1u << want[i].level_bit;
	}
	for (int k = 0; k < CUSTODE_MAX_GATES; k++) {
		if (!p1.gate[k].id)
			continue;
		if (!wanted_levels[k]) {
			memset(&p1.gate[k], 0, sizeof(p1.gate[k]));
			p1.used &= ~(1u << k);
		} else {
			p1.gate[k].levels = wanted_levels[k];
			p1.used |= 1u << k;
		}
	}
	/* gates not in a slot yet */
	for (size_t i = 0; i < n; i++) {
		bool have = false;

		if (!want[i].gate_id || want[i].level_bit < 0 || want[i].level_bit >= CUSTODE_GATE_LEVELS)
			continue;
		for (int k = 0; k < CUSTODE_MAX_GATES; k++)
			if (p1.gate[k].id == want[i].gate_id)
				have = true;
		if (have)
			continue;
		for (size_t j = 0; j < n_new; j++)
			if (new_ids[j] == want[i].gate_id) {
				new_levels[j] |= 1u << want[i].level_bit;
				have = true;
			}
		if (have)
			continue;
		if (n_new == sizeof(new_ids) / sizeof(new_ids[0]))
			return -ENOSPC;
		new_ids[n_new] = want[i].gate_id;
		new_levels[n_new++] = 1u << want[i].level_bit;
	}
	*phase1 = p1;
	/* phase 2: the new gates, into slots that were free before phase 1 (so no slot changes its id at once) */
	for (size_t j = 0; j < n_new; j++) {
		int k;

		for (k = 0; k < CUSTODE_MAX_GATES; k++)
			if (!p1.gate[k].id && !cur->gate[k].id)
				break;
		if (k == CUSTODE_MAX_GATES)
			return -ENOSPC;
		p1.gate[k].id = new_ids[j];
		p1.gate[k].levels = new_levels[j];
		p1.used |= 1u << k;
	}
	*phase2 = p1;
	return 0;
}

int custode_gates_open(struct custode_refusal *why)
{
	int fd = custode_map_open(CUSTODE_MAP_GATES);

	if (fd < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_ENGINE_MISMATCH,
				      "the pinned engine has no custode_gates map (an older build, in use by runs): "
				      "attached runs need the engine to be replaced once idle");
	return fd;
}

int custode_gates_apply(struct custode_gate_want *want, size_t n, size_t cap, bool unresolved,
			struct custode_refusal *why)
{
	struct custode_gates cur, p1, p2;
	__u32 zero = 0;
	int fd, err;

	if ((fd = custode_gates_open(why)) < 0)
		return fd;
	memset(&cur, 0, sizeof(cur));
	if (bpf_map_lookup_elem(fd, &zero, &cur) < 0) {
		err = custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "read custode_gates: %s",
				     strerror(errno));
		goto out;
	}
	/*
	 * A registered attached run whose gate can't be worked out (no state
	 * file and no path for its id) may still hold processes: fail closed,
	 * keep every gate bit there is and only add.
	 */
	if (unresolved)
		for (int k = 0; k < CUSTODE_MAX_GATES; k++)
			for (int b = 0; cur.gate[k].id && b < CUSTODE_GATE_LEVELS && n < cap; b++)
				if ((cur.gate[k].levels >> b) & 1) {
					want[n].gate_id = cur.gate[k].id;
					want[n++].level_bit = b;
				}
	if ((err = custode_gates_plan(&cur, want, n, &p1, &p2))) {
		err = custode_refuse(why, -err, CUSTODE_REASON_ENGINE_MAP_FULL,
				     "attached runs lie below more than %d distinct cgroups at custode's root level",
				     CUSTODE_MAX_GATES);
		goto out;
	}
	if ((memcmp(&p1, &cur, sizeof(cur)) && bpf_map_update_elem(fd, &zero, &p1, BPF_ANY) < 0) ||
	    (memcmp(&p2, &p1, sizeof(p1)) && bpf_map_update_elem(fd, &zero, &p2, BPF_ANY) < 0))
		err = custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "write custode_gates: %s",
				     strerror(errno));
	/* the run cache may hold answers computed with the old gates */
	if (custode_engine_bump_runs_gen() < 0 && !err)
		err = custode_refuse(why, EIO, CUSTODE_REASON_RUN_SETUP_FAILED, "bump custode_runs_gen");
out:
	close(fd);
	return err;
}
