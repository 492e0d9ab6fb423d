// SPDX-License-Identifier: Apache-2.0
/* The resolver's pins: writing an answer's (address, port) pins for a run within its quota, expiring them, adopting an earlier resolver's. */
#include <errno.h>
#include <string.h>
#include <bpf/bpf.h>

#include "custode/abi.h"
#include "custode/resolver.h"
#include "dns/resolver_int.h"

static void pin_key(struct custode_pin_key *k, __u64 cgid, const struct custode_dns_port *port, const uint8_t *addr)
{
	memset(k, 0, sizeof(*k));
	k->run_cgid = cgid;
	k->proto = port->proto;
	k->port = port->port;
	memcpy(k->addr, addr, 16);
}

/*
 * Pin every (address, port) of an answer for the run before the reply goes
 * out. All or nothing against the quota; a map that refuses an insert fails
 * the lookup closed.
 */
int resolver_pin_answer(struct custode_resolver *r, struct run *run, const struct custode_dns_vetted *v,
			const struct custode_dns_port *ports, size_t n_ports, uint32_t eff_ttl, size_t *written)
{
	__u64 expires = resolver_boot_ns() + ((__u64)eff_ttl + r->cfg.grace) * 1000000000ull;
	/*
	 * A pin that already lives almost as long is not rewritten: up to a
	 * second (never more than the grace) short of the new expiry, it still
	 * outlives the TTL the run is told (at most eff_ttl).
	 */
	__u64 slack = (r->cfg.grace < 1 ? r->cfg.grace : 1) * 1000000000ull;
	size_t fresh = 0;
	struct custode_pin_key k;

	*written = 0;
	for (size_t a = 0; a < v->n_addrs; a++)
		for (size_t i = 0; i < n_ports; i++) {
			pin_key(&k, run->cgid, &ports[i], v->addrs[a]);
			if (!custode_table_find(&r->pins, &k))
				fresh++;
		}
	if (run->pins + fresh > r->cfg.pin_quota)
		return -EDQUOT;
	for (size_t a = 0; a < v->n_addrs; a++)
		for (size_t i = 0; i < n_ports; i++) {
			struct custode_pin val = {.expires_ns = expires};
			__u64 *pinned;
			void *slot;

			pin_key(&k, run->cgid, &ports[i], v->addrs[a]);
			pinned = custode_table_find(&r->pins, &k);
			if (pinned && *pinned + slack >= expires)
				continue; /* already pinned (almost) as long */
			if (bpf_map_update_elem(r->pins_fd, &k, &val, BPF_ANY) < 0)
				return -ENOSPC;
			(*written)++;
			if (pinned) {
				*pinned = expires;
				continue;
			}
			if (custode_table_insert(&r->pins, &k, &slot) < 0)
				return -ENOMEM;
			*(__u64 *)slot = expires;
			run->pins++;
		}
	return 0;
}

/* Drop expired pins (the kernel ignores them already; this frees map room and quota). */
void resolver_pins_sweep(struct custode_resolver *r, bool all_of_gone_runs)
{
	__u64 now = resolver_boot_ns();
	struct custode_table_iter it;
	const void *kp;
	void *vp;

	custode_table_iter_init(&r->pins, &it);
	while (custode_table_iter_next(&r->pins, &it, &kp, &vp)) {
		const struct custode_pin_key *key = kp;
		struct run *run = resolver_run_find(r, key->run_cgid);
		bool gone = all_of_gone_runs && (!run || run->gone_since_ms);

		if (*(const __u64 *)vp > now && !gone)
			continue;
		/* gone runs: the launcher deleted their pins, but one written since would linger */
		bpf_map_delete_elem(r->pins_fd, key);
		if (run && run->pins)
			run->pins--;
		custode_table_iter_remove(&r->pins, &it);
	}
}

/* Pins left by an earlier resolver count against their runs' quotas. */
void resolver_pins_adopt(struct custode_resolver *r)
{
	struct custode_pin_key key, next;
	struct custode_pin val;
	void *prev = NULL;

	while (bpf_map_get_next_key(r->pins_fd, prev, &next) == 0) {
		struct run *run;
		void *slot;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(r->pins_fd, &key, &val) < 0)
			continue;
		run = resolver_run_get(r, key.run_cgid);
		if (!run || custode_table_insert(&r->pins, &key, &slot) != 1)
			continue;
		*(__u64 *)slot = val.expires_ns;
		run->pins++;
	}
}
