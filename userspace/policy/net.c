// SPDX-License-Identifier: Apache-2.0
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "policy/net.h"

int custode_addr_parse(const char *s, uint8_t out[16])
{
	struct in_addr a4;
	struct in6_addr a6;

	if (inet_pton(AF_INET, s, &a4) == 1) {
		memset(out, 0, 16);
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &a4, 4);
		return 0;
	}
	if (inet_pton(AF_INET6, s, &a6) == 1) {
		memcpy(out, &a6, 16);
		return 0;
	}
	return -EINVAL;
}

const char *custode_addr_format(const uint8_t addr[16], char *buf, size_t len)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	const char *ok;

	if (memcmp(addr, mapped, 12) == 0)
		ok = inet_ntop(AF_INET, addr + 12, buf, (socklen_t)len);
	else
		ok = inet_ntop(AF_INET6, addr, buf, (socklen_t)len);
	if (!ok && len)
		buf[0] = 0;
	return buf;
}

int custode_allow_parse(const char *s, struct custode_allow *out, struct custode_refusal *why)
{
	char host[256], *end;
	const char *colon, *port_s, *slash;
	long port;
	size_t hlen;
	struct custode_allow a;

	memset(&a, 0, sizeof(a));
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || close[1] != ':')
			goto bad;
		hlen = (size_t)(close - s - 1);
		if (hlen >= sizeof(host))
			goto bad;
		memcpy(host, s + 1, hlen);
		host[hlen] = 0;
		port_s = close + 2;
	} else {
		colon = strrchr(s, ':');
		if (!colon || strchr(s, ':') != colon)
			goto bad; /* IPv6 literals need brackets */
		hlen = (size_t)(colon - s);
		if (hlen == 0 || hlen >= sizeof(host))
			goto bad;
		memcpy(host, s, hlen);
		host[hlen] = 0;
		port_s = colon + 1;
	}
	if (host[0] == 0)
		goto bad;
	a.proto = CUSTODE_PROTO_TCP;
	slash = strchr(port_s, '/');
	if (slash) {
		if (!strcmp(slash + 1, "udp"))
			a.proto = CUSTODE_PROTO_UDP;
		else if (strcmp(slash + 1, "tcp"))
			goto bad;
	}
	if (*port_s < '0' || *port_s > '9')
		goto bad; /* digits only: no sign, no space */
	errno = 0;
	port = strtol(port_s, &end, 10);
	if (errno || end == port_s || (*end && *end != '/') || port < 1 || port > 65535)
		goto bad;
	a.port = (uint16_t)port;
	if (custode_addr_parse(host, a.addr) < 0) {
		/* something shaped like a host name (letters, digits, '-', '.', at least one letter) */
		bool name = s[0] != '[' && host[0] != '.' && host[0] != '-', letter = false;

		for (const char *c = host; name && *c; c++) {
			bool alpha = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z');
			letter |= alpha;
			name = alpha || (*c >= '0' && *c <= '9') || *c == '-' || *c == '.';
		}
		name = name && letter;
		if (!name)
			goto bad;
		if (strlen(host) >= sizeof(a.host) || strlen(host) > 253)
			goto bad;
		for (size_t i = 0; host[i]; i++)
			a.host[i] = (char)(host[i] >= 'A' && host[i] <= 'Z' ? host[i] - 'A' + 'a' : host[i]);
		*out = a;
		return 0; /* a host: through the resolver */
	}
	*out = a;
	return 0;
bad:
	return custode_refuse(why, EINVAL, CUSTODE_REASON_RUN_USAGE,
			      "--allow %s: expected ADDR:PORT or HOST:PORT[/tcp|/udp], IPv6 as [ADDR]:PORT", s);
}

static int add_key(struct custode_net_ruleset *rs, size_t *cap, uint32_t ruleset, uint8_t proto, uint16_t port,
		   const uint8_t addr[16], uint8_t prefixlen, uint32_t flags)
{
	struct custode_net_key *k;

	/* bounded before deduplication too, so a huge policy can't make us allocate without end */
	if (rs->n >= 4 * (size_t)CUSTODE_MAX_NET_KEYS_PER_RUN)
		return -E2BIG;
	if (rs->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		void *nk = realloc(rs->keys, ncap * sizeof(*rs->keys));
		if (!nk)
			return -ENOMEM;
		rs->keys = nk;
		nk = realloc(rs->vals, ncap * sizeof(*rs->vals));
		if (!nk)
			return -ENOMEM;
		rs->vals = nk;
		*cap = ncap;
	}
	k = &rs->keys[rs->n];
	memset(k, 0, sizeof(*k));
	k->prefixlen = CUSTODE_NET_KEY_PREFIX_BITS + prefixlen;
	k->ruleset = ruleset;
	k->proto = proto;
	k->port = port;
	memcpy(k->addr, addr, 16);
	rs->vals[rs->n].flags = flags;
	rs->n++;
	return 0;
}

/* A host entry for the resolver: the name lowercased (the parser did) without a trailing dot. */
static int add_host(struct custode_net_ruleset *rs, const struct custode_egress_rule *r)
{
	struct custode_host_grant *h;
	size_t len;

	if (rs->n_hosts % 64 == 0) {
		void *nh = realloc(rs->hosts, (rs->n_hosts + 64) * sizeof(*rs->hosts));
		if (!nh)
			return -ENOMEM;
		rs->hosts = nh;
	}
	h = &rs->hosts[rs->n_hosts];
	memset(h, 0, sizeof(*h));
	h->name = strdup(r->host);
	h->ports = calloc(r->n_ports ? r->n_ports : 1, sizeof(*h->ports));
	if (!h->name || !h->ports) {
		free(h->name);
		free(h->ports);
		return -ENOMEM;
	}
	len = strlen(h->name);
	if (len > 1 && h->name[len - 1] == '.')
		h->name[len - 1] = 0;
	for (char *c = h->name; *c; c++)
		if (*c >= 'A' && *c <= 'Z')
			*c = (char)(*c + 32);
	memcpy(h->ports, r->ports, r->n_ports * sizeof(*h->ports));
	h->n_ports = r->n_ports;
	h->proto = (uint8_t)r->proto;
	rs->n_hosts++;
	return 0;
}

struct net_pair {
	struct custode_net_key key;
	struct custode_net_rule val;
};

static int cmp_pair(const void *a, const void *b)
{
	return memcmp(&((const struct net_pair *)a)->key, &((const struct net_pair *)b)->key, sizeof(struct custode_net_key));
}

/* CIDR rules (content.network.private, .inbound) as LPM keys of the ruleset: none for none, or -ENOMEM. */
static int private_keys(const struct custode_egress_rule *r, size_t n, uint32_t ruleset,
			struct custode_private_key **out, size_t *n_out)
{
	struct custode_private_key *k;

	if (!n)
		return 0;
	k = calloc(n, sizeof(*k));
	if (!k)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		k[i].prefixlen = 32 + r[i].prefixlen;
		k[i].ruleset = ruleset;
		memcpy(k[i].addr, r[i].addr, 16);
	}
	*out = k;
	*n_out = n;
	return 0;
}

int custode_policy_compile_net(const struct custode_policy *p, const struct custode_allow *allows, size_t n_allows,
			       uint32_t ruleset, struct custode_net_ruleset *out, struct custode_refusal *why)
{
	struct custode_net_ruleset rs = {0};
	size_t cap = 0;
	int err = 0;

	rs.listen = p->has_network ? p->listen : true;
	for (size_t i = 0; i < p->n_egress; i++) {
		const struct custode_egress_rule *r = &p->egress[i];

		if (r->kind == CUSTODE_EGRESS_HOST) {
			if ((err = add_host(&rs, r)))
				goto fail;
			continue;
		}
		for (size_t j = 0; j < r->n_ports; j++) {
			err = add_key(&rs, &cap, ruleset, (uint8_t)r->proto, r->ports[j], r->addr, r->prefixlen, 0);
			if (err)
				goto toolarge;
		}
	}
	for (size_t i = 0; i < n_allows; i++) {
		if (allows[i].host[0]) {
			/* an operator's --allow HOST:PORT: a host entry like the policy's own */
			struct custode_egress_rule r = {.kind = CUSTODE_EGRESS_HOST, .host = (char *)allows[i].host,
							.proto = allows[i].proto, .ports = (uint16_t *)&allows[i].port,
							.n_ports = 1};
			if ((err = add_host(&rs, &r)))
				goto fail;
			continue;
		}
		err = add_key(&rs, &cap, ruleset, allows[i].proto, allows[i].port, allows[i].addr, 128,
			      CUSTODE_NET_RULE_LITERAL);
		if (err)
			goto toolarge;
	}
	/* The same key twice (a repeated port, a --allow equal to a /32 rule): keep one, literal wins. */
	if (rs.n) {
		struct net_pair *pairs = calloc(rs.n, sizeof(*pairs));
		size_t w = 0;

		if (!pairs) {
			err = -ENOMEM;
			goto fail;
		}
		for (size_t i = 0; i < rs.n; i++) {
			pairs[i].key = rs.keys[i];
			pairs[i].val = rs.vals[i];
		}
		qsort(pairs, rs.n, sizeof(*pairs), cmp_pair);
		for (size_t i = 0; i < rs.n; i++) {
			if (w && !memcmp(&pairs[w - 1].key, &pairs[i].key, sizeof(pairs[i].key))) {
				pairs[w - 1].val.flags |= pairs[i].val.flags;
				continue;
			}
			pairs[w++] = pairs[i];
		}
		for (size_t i = 0; i < w; i++) {
			rs.keys[i] = pairs[i].key;
			rs.vals[i] = pairs[i].val;
		}
		rs.n = w;
		free(pairs);
		if (rs.n > CUSTODE_MAX_NET_KEYS_PER_RUN) {
			err = -E2BIG;
			goto toolarge;
		}
	}
	if ((err = private_keys(p->private_addrs, p->n_private, ruleset, &rs.priv, &rs.n_priv)))
		goto fail;
	rs.inbound_set = p->has_inbound;
	if ((err = private_keys(p->inbound, p->n_inbound, ruleset, &rs.inbound, &rs.n_inbound)))
		goto fail;
	*out = rs;
	return 0;
toolarge:
	if (err == -E2BIG)
		err = custode_refuse(why, E2BIG, CUSTODE_REASON_POLICY_TOO_LARGE,
				     "content.network: more than %d egress keys (rules × ports)", CUSTODE_MAX_NET_KEYS_PER_RUN);
fail:
	custode_net_ruleset_free(&rs);
	return err;
}

void custode_net_ruleset_free(struct custode_net_ruleset *rs)
{
	free(rs->keys);
	free(rs->vals);
	free(rs->priv);
	free(rs->inbound);
	for (size_t i = 0; i < rs->n_hosts; i++) {
		free(rs->hosts[i].name);
		free(rs->hosts[i].ports);
	}
	free(rs->hosts);
	memset(rs, 0, sizeof(*rs));
}
