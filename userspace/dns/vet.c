// SPDX-License-Identifier: Apache-2.0
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "custode/addr.h"
#include "custode/reasons.h"
#include "dns/vet.h"
#include "util/reasons.h"

bool custode_dns_answers(const struct custode_dns_msg *resp, uint16_t id, const struct custode_dns_name *name,
			 uint16_t type)
{
	return (resp->flags & CUSTODE_DNS_F_QR) && custode_dns_opcode(resp) == 0 && resp->id == id &&
	       resp->qtype == type && resp->qclass == CUSTODE_DNS_C_IN && custode_dns_name_eq(&resp->qname, name);
}

/* An answer's address as its record type has it: A records are kept v4-mapped. */
static const char *addr_text(uint16_t type, const uint8_t addr[16], char *buf, size_t len)
{
	if (type == CUSTODE_DNS_T_A)
		return inet_ntop(AF_INET, addr + 12, buf, (socklen_t)len) ? buf : "?";
	return inet_ntop(AF_INET6, addr, buf, (socklen_t)len) ? buf : "?";
}

__attribute__((format(printf, 4, 5))) static void fail(struct custode_dns_vetted *v, int reason, bool deny,
						      const char *fmt, ...)
{
	va_list ap;

	v->reason = reason;
	v->deny = deny;
	v->rcode = CUSTODE_DNS_SERVFAIL;
	v->n_addrs = 0;
	va_start(ap, fmt);
	vsnprintf(v->detail, sizeof(v->detail), fmt, ap);
	va_end(ap);
}

static uint32_t min_ttl(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

void custode_dns_vet(const struct custode_dns_name *name, uint16_t type, const struct custode_dns_msg *resp,
		     const struct custode_dns_vet_opts *o, struct custode_dns_vetted *v)
{
	const struct custode_dns_name *cur;
	unsigned rcode = custode_dns_rcode(resp);

	memset(v, 0, sizeof(*v));
	v->ttl = UINT32_MAX;
	v->chain[0] = *name;
	v->n_chain = 1;
	if (rcode == CUSTODE_DNS_NXDOMAIN) {
		v->rcode = CUSTODE_DNS_NXDOMAIN;
		v->ttl = 0;
		return;
	}
	if (rcode != CUSTODE_DNS_NOERROR) {
		fail(v, CUSTODE_REASON_DNS_UPSTREAM, false, "upstream answered rcode %u", rcode);
		return;
	}
	/* the chain: each hop is the one CNAME owned by the previous name */
	cur = name;
	for (;;) {
		const struct custode_dns_rr *cname = NULL;

		for (size_t i = 0; i < resp->n_an; i++) {
			const struct custode_dns_rr *rr = &resp->an[i];

			if (rr->type != CUSTODE_DNS_T_CNAME || rr->class != CUSTODE_DNS_C_IN ||
			    !custode_dns_name_eq(&rr->owner, cur))
				continue;
			if (cname && !custode_dns_name_eq(&cname->rd.target, &rr->rd.target)) {
				fail(v, CUSTODE_REASON_DNS_MALFORMED, false, "two CNAME records for %s", cur->text);
				return;
			}
			cname = rr;
		}
		if (!cname)
			break;
		if (!cname->rd.target.host) {
			fail(v, CUSTODE_REASON_DNS_UPSTREAM, false, "CNAME of %s to a name that is not a host name",
			     cur->text);
			return;
		}
		for (size_t k = 0; k < v->n_chain; k++)
			if (custode_dns_name_eq(&v->chain[k], &cname->rd.target)) {
				fail(v, CUSTODE_REASON_DNS_UPSTREAM, false, "CNAME loop at %s", cname->rd.target.text);
				return;
			}
		if (v->n_chain > CUSTODE_DNS_MAX_CHAIN) {
			fail(v, CUSTODE_REASON_DNS_UPSTREAM, false, "CNAME chain longer than %d hops",
			     CUSTODE_DNS_MAX_CHAIN);
			return;
		}
		if (o->cname_strict && !(o->name_ok && o->name_ok(o->ctx, &cname->rd.target))) {
			fail(v, CUSTODE_REASON_DNS_NAME_DENIED, true, "CNAME target %s is not granted",
			     cname->rd.target.text);
			return;
		}
		v->chain[v->n_chain++] = cname->rd.target;
		v->ttl = min_ttl(v->ttl, custode_dns_ttl(cname->ttl));
		cur = &v->chain[v->n_chain - 1];
	}
	/* the addresses of the last name, of the asked type; everything else is dropped */
	for (size_t i = 0; i < resp->n_an; i++) {
		const struct custode_dns_rr *rr = &resp->an[i];
		bool dup = false;
		int cls;

		if (rr->type != type || rr->class != CUSTODE_DNS_C_IN || !custode_dns_name_eq(&rr->owner, cur) ||
		    (type != CUSTODE_DNS_T_A && type != CUSTODE_DNS_T_AAAA))
			continue;
		cls = custode_addr_classify(rr->rd.addr);
		if ((cls == CUSTODE_ADDR_ORDINARY || cls == CUSTODE_ADDR_PRIVATE) && o->host && o->host(o->ctx, rr->rd.addr))
			cls = CUSTODE_ADDR_HOST; /* the last step of DNS rebinding: a granted name answering with this host */
		if (cls != CUSTODE_ADDR_ORDINARY && !(o->granted && o->granted(o->ctx, rr->rd.addr))) {
			if (!v->dropped++) {
				memcpy(v->first_dropped, rr->rd.addr, 16);
				v->first_dropped_class = cls;
			}
			continue;
		}
		for (size_t k = 0; k < v->n_addrs && !dup; k++)
			dup = !memcmp(v->addrs[k], rr->rd.addr, 16);
		if (dup || v->n_addrs == CUSTODE_DNS_MAX_ADDRS)
			continue;
		memcpy(v->addrs[v->n_addrs++], rr->rd.addr, 16);
		v->ttl = min_ttl(v->ttl, custode_dns_ttl(rr->ttl));
	}
	if (!v->n_addrs && v->dropped) {
		char text[INET6_ADDRSTRLEN];

		fail(v, CUSTODE_REASON_DNS_ANSWER_PRIVATE, true, "every address of %s is special (first: %s, %s)",
		     cur->text, addr_text(type, v->first_dropped, text, sizeof(text)),
		     custode_reason_name(custode_addr_reason(v->first_dropped_class)));
		return;
	}
	v->rcode = CUSTODE_DNS_NOERROR;
	if (v->ttl == UINT32_MAX)
		v->ttl = 0;
}
