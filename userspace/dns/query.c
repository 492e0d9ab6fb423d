// SPDX-License-Identifier: Apache-2.0
/* The resolver's queries: a run's query checked and sent upstream (or answered at once), and its answer vetted, pinned and replied. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <bpf/bpf.h>

#include "custode/abi.h"
#include "custode/reasons.h"
#include "custode/resolver.h"
#include "dns/names.h"
#include "dns/resolver_int.h"
#include "dns/vet.h"
#include "dns/wire.h"
#include "engine/hostaddrs.h"

void resolver_query_free(struct custode_resolver *r, struct query *q)
{
	if (q->counted) {
		struct run *run = resolver_run_find(r, q->cgid);
		if (run && run->inflight)
			run->inflight--;
	}
	resolver_up_release(r, q);
	free(q->tbuf);
	q->tbuf = NULL;
	link_del(&q->lnode);
	q->used = false;
	q->gen++;
	r->free_q[r->n_free_q++] = (int)(q - r->q);
}

struct vet_ctx {
	struct custode_resolver *r;
	struct run *run;
	__u64 netns; /* the namespace the query came from: its addresses are local services there */
	size_t audit_kept;
};

static bool vet_name_ok(void *ctx, const struct custode_dns_name *name)
{
	struct vet_ctx *c = ctx;
	struct custode_dns_port one;

	return c->run->names_ok && custode_dns_names_match(&c->run->names, name, &one, 1) > 0;
}

static bool vet_granted(void *ctx, const uint8_t addr[16])
{
	struct vet_ctx *c = ctx;
	struct custode_private_key k = {.prefixlen = 32 + 128, .ruleset = c->run->info.ruleset};
	__u32 v;

	memcpy(k.addr, addr, 16);
	if (bpf_map_lookup_elem(c->r->priv_fd, &k, &v) == 0)
		return true;
	if (c->run->info.flags & CUSTODE_RUN_AUDIT) {
		c->audit_kept++;
		return true;
	}
	return false;
}

/* One of the addresses of the namespace the query came from: a local service. */
static bool vet_host(void *ctx, const uint8_t addr[16])
{
	struct vet_ctx *c = ctx;

	return custode_hostaddrs_contains(c->r->hosts_fd, c->netns, addr);
}

void resolver_finish(struct custode_resolver *r, struct query *q, const struct custode_dns_msg *resp, int fail_reason,
		     const char *fail_detail)
{
	struct run *run = resolver_run_get(r, q->cgid);
	struct vet_ctx vc = {.r = r, .run = run, .netns = q->c.netns};
	struct custode_dns_vet_opts o = {
		.cname_strict = r->cfg.cname_strict, .name_ok = vet_name_ok, .granted = vet_granted,
		.host = vet_host, .ctx = &vc};
	struct custode_dns_vetted *v = r->vetted;
	struct decision_in d = {.run = run, .cgid = q->cgid, .name = &q->qname, .qtype = q->qtype, .proto = q->c.proto,
				.enforced = true};
	size_t n_ports = 0, written = 0;
	uint32_t eff, ttl = 0;
	int err;

	if (!run || (run->info.flags & CUSTODE_RUN_CANCELLED)) {
		d.reason = CUSTODE_REASON_DNS_NAME_DENIED;
		d.rcode = r->cfg.deny_rcode;
		d.detail = "the run ended while its query was upstream";
		resolver_decide(r, &d); /* reported (and a denial counted) before the run sees it */
		resolver_reply(r, q, d.rcode, NULL, 0);
		goto out;
	}
	d.enforced = !(run->info.flags & CUSTODE_RUN_AUDIT);
	if (!resp) {
		d.reason = fail_reason ? fail_reason : CUSTODE_REASON_DNS_UPSTREAM;
		d.rcode = CUSTODE_DNS_SERVFAIL;
		d.detail = fail_detail;
		resolver_decide(r, &d);
		resolver_reply(r, q, d.rcode, NULL, 0);
		goto out;
	}
	custode_dns_vet(&q->qname, q->qtype, resp, &o, v);
	d.v = v;
	if (v->reason && (v->deny || v->rcode != CUSTODE_DNS_NOERROR)) {
		d.reason = v->reason;
		d.rcode = v->deny ? r->cfg.deny_rcode : v->rcode;
		if (!d.enforced && v->deny) {
			d.rcode = CUSTODE_DNS_SERVFAIL; /* audit: nothing usable to pass on either */
		}
		resolver_decide(r, &d);
		resolver_reply(r, q, d.rcode, NULL, 0);
		goto out;
	}
	eff = v->ttl < r->cfg.ttl_min ? r->cfg.ttl_min : v->ttl > r->cfg.ttl_max ? r->cfg.ttl_max : v->ttl;
	/* never more than the pin's remaining life (eff + grace), never more than upstream said */
	ttl = v->ttl < eff ? v->ttl : eff;
	if (v->rcode == CUSTODE_DNS_NOERROR && v->n_addrs && q->granted_name) {
		n_ports = run->names_ok ? custode_dns_names_match(&run->names, &q->qname, r->ports, MAX_PORTS) : 0;
		err = resolver_pin_answer(r, run, v, r->ports, n_ports, eff, &written);
		if (err) {
			d.reason = CUSTODE_REASON_DNS_PINS_FULL;
			d.pins = written;
			d.detail = err == -EDQUOT ? "the run's pin quota is used up" : "the engine's pin map refused an insert";
			if (err != -EDQUOT)
				resolver_notice(r, "pin map insert failed for run %016llx: map full?",
				       (unsigned long long)run->info.run_id);
			d.rcode = r->cfg.deny_rcode;
			if (d.enforced) {
				resolver_decide(r, &d);
				resolver_reply(r, q, d.rcode, NULL, 0);
				goto out;
			}
		}
	}
	if (!q->granted_name) { /* audit mode: resolved for the report, nothing pinned */
		d.reason = CUSTODE_REASON_DNS_NAME_DENIED;
		d.enforced = false;
	} else if (vc.audit_kept && !d.reason) {
		d.reason = CUSTODE_REASON_DNS_ANSWER_PRIVATE;
		d.enforced = false;
	}
	d.rcode = v->rcode;
	d.pins = written;
	d.ttl = ttl;
	resolver_decide(r, &d);
	resolver_reply(r, q, v->rcode, v, ttl);
out:
	resolver_query_free(r, q);
}

/* A query from a run (UDP datagram or one TCP message), attributed by token. True: it went upstream. */
bool resolver_client_query(struct custode_resolver *r, const struct client *cl, const uint8_t *buf, size_t len)
{
	struct custode_dns_msg *m = r->msg;
	uint32_t token = ntohl(cl->local.s_addr) & 0xffffff;
	struct decision_in d = {.proto = cl->proto, .enforced = true};
	uint16_t id, flags;
	__u64 cgid = 0;
	struct run *run = NULL;
	struct query *q;
	int err;

	if (len < CUSTODE_DNS_HEADER)
		return false; /* not even a header: nothing to answer to */
	id = (uint16_t)(buf[0] << 8 | buf[1]);
	flags = (uint16_t)(buf[2] << 8 | buf[3]);
	if (flags & CUSTODE_DNS_F_QR)
		return false; /* a response sent to us: never answer one (no reflection loops) */
	if ((ntohl(cl->local.s_addr) >> 24) != 127)
		return false;
	if ((cgid = resolver_token_cgid(r, token)))
		run = resolver_run_get(r, cgid);
	if (run)
		resolver_nsl_saw_run(r, cl->nsl, cgid); /* it keeps its namespace's listeners open */
	d.run = run;
	d.cgid = cgid;
	err = custode_dns_parse(buf, len, m);
	if (!err && (custode_dns_opcode(m) != 0)) {
		d.reason = CUSTODE_REASON_DNS_MALFORMED;
		d.rcode = CUSTODE_DNS_NOTIMP;
		d.detail = "opcode other than QUERY";
		resolver_decide(r, &d);
		resolver_reply_header(r, cl, id, flags, d.rcode);
		return false;
	}
	if (err || m->ancount || m->nscount || m->arcount != (m->edns ? 1 : 0) || !m->qname.wire_len) {
		d.reason = CUSTODE_REASON_DNS_MALFORMED;
		d.rcode = CUSTODE_DNS_FORMERR;
		d.detail = err == -E2BIG ? "too many records" : err ? "malformed query" : "a query carries only a question (and OPT)";
		resolver_decide(r, &d);
		resolver_reply_header(r, cl, id, flags, d.rcode);
		return false;
	}
	d.name = &m->qname;
	d.qtype = m->qtype;
	q = NULL;
	if (!r->n_free_q || (run && run->inflight >= MAX_RUN_INFLIGHT)) {
		d.reason = CUSTODE_REASON_DNS_UPSTREAM;
		d.rcode = CUSTODE_DNS_SERVFAIL;
		d.detail = r->n_free_q ? "too many queries of this run in flight" : "resolver busy";
		resolver_decide(r, &d);
		resolver_reply_header(r, cl, id, flags, d.rcode);
		return false;
	}
	q = &r->q[r->free_q[--r->n_free_q]];
	{
		unsigned gen = q->gen;
		memset(q, 0, offsetof(struct query, lnode));
		q->gen = gen;
	}
	link_init(&q->lnode);
	q->used = true;
	q->fd = -1;
	q->us = -1;
	q->c = *cl;
	q->cgid = cgid;
	q->client_id = id;
	q->rd = flags & CUSTODE_DNS_F_RD;
	q->edns = m->edns;
	q->max_len = cl->proto == IPPROTO_TCP ? 65535
			 : m->edns ? (m->edns_udp < CUSTODE_DNS_UDP_MIN ? CUSTODE_DNS_UDP_MIN
					: m->edns_udp > 4096 ? 4096 : m->edns_udp)
				   : CUSTODE_DNS_UDP_MIN;
	q->question_len = m->question_end - CUSTODE_DNS_HEADER;
	memcpy(q->question, buf + CUSTODE_DNS_HEADER, q->question_len);
	q->qname = m->qname;
	q->qtype = m->qtype;
	q->started_ms = resolver_now_ms();

	if (m->edns && m->edns_version != 0) {
		d.reason = CUSTODE_REASON_DNS_MALFORMED;
		d.rcode = CUSTODE_DNS_BADVERS;
		d.detail = "EDNS version other than 0";
		goto answer_now;
	}
	if (!run || (run->info.flags & CUSTODE_RUN_CANCELLED) || !(run->info.flags & CUSTODE_RUN_NET)) {
		d.reason = CUSTODE_REASON_DNS_NAME_DENIED;
		d.rcode = r->cfg.deny_rcode;
		d.detail = !run ? "no registered run holds this query's token" : "the run is cancelled";
		goto answer_now;
	}
	d.enforced = !(run->info.flags & CUSTODE_RUN_AUDIT);
	q->audit = !d.enforced;
	if (m->qclass != CUSTODE_DNS_C_IN) {
		d.reason = CUSTODE_REASON_DNS_NAME_DENIED;
		d.rcode = r->cfg.deny_rcode;
		d.enforced = true;
		d.detail = "class other than IN";
		goto answer_now;
	}
	q->granted_name = run->names_ok && custode_dns_names_match(&run->names, &m->qname, r->ports, 1) > 0;
	if (!q->granted_name) {
		d.reason = CUSTODE_REASON_DNS_NAME_DENIED;
		d.rcode = r->cfg.deny_rcode;
		d.detail = !m->qname.host ? "not a host name" : !run->names_ok ? "the run names no hosts" : NULL;
		if (d.enforced || !m->qname.host)
			goto answer_now; /* denied names never go upstream */
	}
	if (m->qtype != CUSTODE_DNS_T_A && m->qtype != CUSTODE_DNS_T_AAAA) {
		/* HTTPS/SVCB (their hints would bypass vetting), MX, TXT, ...: an empty answer */
		d.reason = 0;
		d.rcode = CUSTODE_DNS_NOERROR;
		d.detail = "only A and AAAA are resolved: empty answer";
		goto answer_now;
	}
	run->inflight++;
	q->counted = true;
	if (resolver_up_start(r, q) < 0) {
		unsigned gen = q->gen;
		resolver_up_next(r, q, CUSTODE_REASON_DNS_UPSTREAM, "cannot reach the upstream resolvers");
		return q->used && q->gen == gen;
	}
	return true;
answer_now:
	resolver_decide(r, &d);
	resolver_reply(r, q, d.rcode, NULL, 0);
	resolver_query_free(r, q);
	return false;
}
