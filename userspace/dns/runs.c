// SPDX-License-Identifier: Apache-2.0
/* The resolver's runs: attribution by token, each run's names and counters, the decisions it reports, and forgetting runs that ended. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <bpf/bpf.h>

#include "custode/abi.h"
#include "custode/resolver.h"
#include "dns/names.h"
#include "engine/engine.h"
#include "dns/resolver_int.h"
#include "dns/wire.h"

/* The run this resolver knows by that cgroup id (registered or gone), NULL if none. */
struct run *resolver_run_find(struct custode_resolver *r, __u64 cgid)
{
	struct run **p = custode_table_find(&r->runs, &cgid);

	return p ? *p : NULL;
}

static void names_refresh(struct custode_resolver *r, struct run *run, uint64_t now)
{
	char path[PATH_MAX];
	struct stat st;
	struct custode_dns_names n;

	if (run->names_checked_ms && now - run->names_checked_ms < NAMES_RECHECK_MS)
		return;
	run->names_checked_ms = now;
	custode_dns_names_path(run->info.run_id, path, sizeof(path));
	if (stat(path, &st) < 0) {
		if (run->names_ok)
			custode_dns_names_free(&run->names);
		run->names_ok = false;
		return;
	}
	if (run->names_ok && st.st_ino == run->names_ino && st.st_mtim.tv_sec == run->names_mtime.tv_sec &&
	    st.st_mtim.tv_nsec == run->names_mtime.tv_nsec)
		return;
	if (st.st_uid != 0 || (st.st_mode & 022) || !S_ISREG(st.st_mode) ||
	    custode_dns_names_load(run->info.run_id, &n) < 0) {
		resolver_notice(r, "names of run %016llx unreadable or invalid (%s): every name denied",
		       (unsigned long long)run->info.run_id, path);
		if (run->names_ok)
			custode_dns_names_free(&run->names);
		run->names_ok = false;
		return;
	}
	if (run->names_ok)
		custode_dns_names_free(&run->names);
	run->names = n;
	run->names_ok = true;
	run->names_ino = st.st_ino;
	run->names_mtime = st.st_mtim;
}

/*
 * The run behind a cgroup id as registered (NULL: not registered), re-read
 * at most every RUN_REFRESH_MS. A run cancelled or ended within that time
 * may still get an answer and pins: harmless, its processes are denied
 * everything and its pins are deleted with it (and by resolver_gc()).
 */
struct run *resolver_run_get(struct custode_resolver *r, __u64 cgid)
{
	struct custode_run info;
	struct run *run = resolver_run_find(r, cgid);
	uint64_t now = resolver_now_ms();

	if (run && !run->gone_since_ms && now - run->info_ms < RUN_REFRESH_MS)
		return run;
	if (bpf_map_lookup_elem(r->runs_fd, &cgid, &info) < 0)
		return NULL;
	if (!run) {
		void *slot;

		run = calloc(1, sizeof(*run));
		if (!run)
			return NULL;
		run->cgid = cgid;
		run->info = info;
		if (bpf_map_lookup_elem(r->counters_fd, &cgid, &run->counters) < 0)
			memset(&run->counters, 0, sizeof(run->counters));
		if (custode_table_insert(&r->runs, &cgid, &slot) < 0) {
			free(run);
			return NULL;
		}
		*(struct run **)slot = run;
	}
	if (run->info.run_id != info.run_id) { /* cannot happen: cgroup ids are not reused */
		if (run->names_ok)
			custode_dns_names_free(&run->names);
		run->names_ok = false;
		run->names_checked_ms = 0;
	}
	run->info = info;
	run->info_ms = now;
	run->gone_since_ms = 0;
	names_refresh(r, run, now);
	return run;
}

/* The run cgroup a token names, 0 if none. */
__u64 resolver_token_cgid(struct custode_resolver *r, __u32 token)
{
	__u64 *known = custode_table_find(&r->tokens, &token), cgid = 0;
	void *slot;

	if (known)
		return *known;
	if (bpf_map_lookup_elem(r->token_run_fd, &token, &cgid) < 0)
		return 0;
	if (custode_table_insert(&r->tokens, &token, &slot) == 1)
		*(__u64 *)slot = cgid;
	return cgid;
}

/* Write the counters of the runs that had decisions since the last flush (one writer: no lost counts). */
void resolver_counters_flush(struct custode_resolver *r)
{
	for (size_t i = 0; i < r->n_dirty; i++) {
		struct run *run = r->dirty[i];
		bpf_map_update_elem(r->counters_fd, &run->cgid, &run->counters, BPF_ANY);
		run->dirty = false;
	}
	r->n_dirty = 0;
}

void resolver_run_free(struct custode_resolver *r, struct run *run)
{
	if (run->names_ok)
		custode_dns_names_free(&run->names);
	free(run);
}

void resolver_decide(struct custode_resolver *r, const struct decision_in *in)
{
	struct custode_resolver_decision d = {0};
	char type[16];

	if (in->run) {
		struct custode_dns_counters *c = &in->run->counters;

		c->queries++;
		if (in->v && in->v->n_addrs && !in->reason)
			c->answered++;
		c->pins += in->pins;
		if (in->reason >= CUSTODE_REASON_DNS_NAME_DENIED &&
		    in->reason < CUSTODE_REASON_DNS_NAME_DENIED + CUSTODE_DNS_REASONS)
			c->denials[in->reason - CUSTODE_REASON_DNS_NAME_DENIED]++;
		if (in->v && in->v->dropped && in->reason != CUSTODE_REASON_DNS_ANSWER_PRIVATE)
			c->denials[CUSTODE_REASON_DNS_ANSWER_PRIVATE - CUSTODE_REASON_DNS_NAME_DENIED]++;
		/*
		 * Denials are written at once (before the run gets its answer, so the
		 * launcher's summary can't miss one); the rest at the end of this loop
		 * iteration, before the next wait.
		 */
		if (in->reason || (in->v && in->v->dropped))
			bpf_map_update_elem(r->counters_fd, &in->run->cgid, c, BPF_ANY);
		else if (!in->run->dirty) {
			if (r->n_dirty == MAX_DIRTY)
				resolver_counters_flush(r);
			in->run->dirty = true;
			r->dirty[r->n_dirty++] = in->run;
		}
		d.run_id = in->run->info.run_id;
	}
	if (!r->hooks.decision)
		return;
	d.run_cgid = in->cgid;
	d.name = in->name && in->name->host ? in->name->text : "";
	d.type = custode_dns_type_name(in->qtype, type, sizeof(type));
	d.proto = in->proto == IPPROTO_TCP ? "tcp" : "udp";
	d.reason = in->reason;
	d.enforced = in->enforced;
	d.rcode = in->rcode;
	if (in->v && !in->reason) {
		d.n_addrs = in->v->n_addrs;
		d.addrs = (const uint8_t(*)[16])in->v->addrs;
	}
	d.dropped = in->v ? in->v->dropped : 0;
	d.pins = in->pins;
	d.ttl = in->ttl;
	d.detail = in->detail ? in->detail : (in->v && in->v->detail[0] ? in->v->detail : NULL);
	r->hooks.decision(r->hooks.ctx, &d);
}

/* An order-free digest of the registered runs' cgroup ids (and their number). */
static uint64_t registered_signature(struct custode_resolver *r)
{
	__u64 key, next;
	void *prev = NULL;
	uint64_t sum = 0, x = 0, n = 0;

	while (bpf_map_get_next_key(r->runs_fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		sum += custode_hash_u64(key);
		x ^= custode_hash_u64(key ^ 0x9e3779b97f4a7c15ull);
		n++;
	}
	return sum ^ (x << 1) ^ custode_hash_u64(n + 1); /* never 0, the value before the first gc */
}

/* Runs that ended: forget them (after a while, their counters too) and free their tokens. */
void resolver_gc(struct custode_resolver *r, uint64_t now)
{
	__u64 key, next;
	void *prev = NULL;
	struct custode_run info;
	struct custode_table_iter it;
	bool any_gone = false;
	uint64_t sig;
	void *slot;

	custode_table_iter_init(&r->runs, &it);
	while (custode_table_iter_next(&r->runs, &it, NULL, &slot)) {
		struct run *run = *(struct run **)slot;

		if (bpf_map_lookup_elem(r->runs_fd, &run->cgid, &info) == 0)
			continue;
		if (!run->gone_since_ms) {
			run->gone_since_ms = now;
			any_gone = true;
		}
		if (now - run->gone_since_ms < COUNTERS_KEEP_MS)
			continue;
		bpf_map_delete_elem(r->counters_fd, &run->cgid);
		custode_table_iter_remove(&r->runs, &it);
		resolver_run_free(r, run);
	}
	/*
	 * The pins of ended runs: a launcher's teardown leaves them here (so it
	 * costs the same whatever pins other runs hold), and a run can end
	 * between two ticks unseen by this resolver (the set of registered runs
	 * changed; its names file removed, dns/resolver.c; or, where neither
	 * shows it — a run that came and went between two ticks without inotify
	 * — every SWEEP_ENDED_TICKS ticks): the table's go, then every pin of an
	 * unregistered run in one walk of the map (also an earlier resolver's).
	 */
	sig = registered_signature(r);
	if (any_gone || sig != r->runs_sig || ++r->gc_ticks % SWEEP_ENDED_TICKS == 0) {
		size_t n;
		int err;

		resolver_pins_sweep(r, true);
		if ((err = custode_pins_delete_unregistered(r->pins_fd, r->runs_fd, &n)))
			resolver_notice(r, "pins of ended runs: %s", strerror(-err));
		else
			r->runs_sig = sig;
	}
	/* tokens: a cgroup id never comes back, so the tokens of an unregistered run are dead */
	while (bpf_map_get_next_key(r->run_token_fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(r->runs_fd, &key, &info) == 0)
			continue;
		if (bpf_map_delete_elem(r->run_token_fd, &key) == 0)
			prev = NULL;
	}
	{
		__u32 tkey, tnext;
		void *tprev = NULL;

		while (bpf_map_get_next_key(r->token_run_fd, tprev, &tnext) == 0) {
			__u64 owner;

			tkey = tnext;
			tprev = &tkey;
			if (bpf_map_lookup_elem(r->token_run_fd, &tkey, &owner) < 0 ||
			    bpf_map_lookup_elem(r->runs_fd, &owner, &info) == 0)
				continue;
			custode_table_delete(&r->tokens, &tkey);
			if (bpf_map_delete_elem(r->token_run_fd, &tkey) == 0)
				tprev = NULL;
		}
	}
	/* counters of runs this resolver never saw (an earlier one did): once they are long unregistered */
	prev = NULL;
	while (bpf_map_get_next_key(r->counters_fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (resolver_run_find(r, key) || bpf_map_lookup_elem(r->runs_fd, &key, &info) == 0)
			continue;
		/* first sight: remember it as gone, delete after COUNTERS_KEEP_MS */
		{
			struct run *run = calloc(1, sizeof(*run));

			if (run && custode_table_insert(&r->runs, &key, &slot) == 1) {
				run->cgid = key;
				run->gone_since_ms = now;
				*(struct run **)slot = run;
			} else
				free(run);
		}
	}
}
