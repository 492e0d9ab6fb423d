// SPDX-License-Identifier: Apache-2.0
/* The resolver's pins: writing an answer's (address, port) pins for a run within its quota, expiring them, adopting an earlier resolver's. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "custode/abi.h"
#include "custode/resolver.h"
#include "dns/resolver_int.h"

static uint32_t pin_hash(const struct custode_pin_key *k)
{
	const uint8_t *p = (const uint8_t *)k;
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < sizeof(*k); i++)
		h = (h ^ p[i]) * 16777619u;
	return h % PIN_BUCKETS;
}

static struct pin **pin_slot(struct custode_resolver *r, const struct custode_pin_key *k)
{
	struct pin **p = &r->pins[pin_hash(k)];

	while (*p && memcmp(&(*p)->key, k, sizeof(*k)))
		p = &(*p)->next;
	return p;
}

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
			if (!*pin_slot(r, &k))
				fresh++;
		}
	if (run->pins + fresh > r->cfg.pin_quota)
		return -EDQUOT;
	for (size_t a = 0; a < v->n_addrs; a++)
		for (size_t i = 0; i < n_ports; i++) {
			struct custode_pin val = {.expires_ns = expires};
			struct pin **slot, *p;

			pin_key(&k, run->cgid, &ports[i], v->addrs[a]);
			slot = pin_slot(r, &k);
			if (*slot && (*slot)->expires + slack >= expires)
				continue; /* already pinned (almost) as long */
			if (bpf_map_update_elem(r->pins_fd, &k, &val, BPF_ANY) < 0)
				return -ENOSPC;
			(*written)++;
			if (*slot) {
				(*slot)->expires = expires;
				continue;
			}
			p = malloc(sizeof(*p));
			if (!p)
				return -ENOMEM;
			p->key = k;
			p->expires = expires;
			p->next = NULL;
			*slot = p;
			run->pins++;
			r->n_pins++;
		}
	return 0;
}

/* Drop expired pins (the kernel ignores them already; this frees map room and quota). */
void resolver_pins_sweep(struct custode_resolver *r, bool all_of_gone_runs)
{
	__u64 now = resolver_boot_ns();

	for (size_t b = 0; b < PIN_BUCKETS; b++) {
		struct pin **p = &r->pins[b];

		while (*p) {
			struct pin *x = *p;
			struct run *run = *resolver_run_slot(r, x->key.run_cgid);
			bool gone = all_of_gone_runs && (!run || run->gone_since_ms);

			if (x->expires > now && !gone) {
				p = &x->next;
				continue;
			}
			/* gone runs: the launcher deleted their pins, but one written since would linger */
			bpf_map_delete_elem(r->pins_fd, &x->key);
			if (run && run->pins)
				run->pins--;
			r->n_pins--;
			*p = x->next;
			free(x);
		}
	}
}

/* Pins left by an earlier resolver count against their runs' quotas. */
void resolver_pins_adopt(struct custode_resolver *r)
{
	struct custode_pin_key key, next;
	struct custode_pin val;
	void *prev = NULL;

	while (bpf_map_get_next_key(r->pins_fd, prev, &next) == 0) {
		struct pin **slot, *p;
		struct run *run;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(r->pins_fd, &key, &val) < 0)
			continue;
		run = resolver_run_get(r, key.run_cgid);
		slot = pin_slot(r, &key);
		if (!run || *slot || !(p = malloc(sizeof(*p))))
			continue;
		p->key = key;
		p->expires = val.expires_ns;
		p->next = NULL;
		*slot = p;
		run->pins++;
		r->n_pins++;
	}
}
