// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>

#include "dns/names.h"
#include "state/state.h"
#include "util/fsutil.h"

#define NAMES_VERSION 1

void custode_dns_names_path(__u64 run_id, char *out, size_t len)
{
	custode_state_path(run_id, CUSTODE_STATE_NAMES, out, len);
}

static int cmp_port(const void *a, const void *b)
{
	const struct custode_dns_port *x = a, *y = b;

	if (x->proto != y->proto)
		return x->proto < y->proto ? -1 : 1;
	return x->port < y->port ? -1 : x->port > y->port;
}

static int cmp_grant(const void *a, const void *b)
{
	const struct custode_dns_grant *x = a, *y = b;

	if (x->wildcard != y->wildcard)
		return x->wildcard ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* Sort ports and drop repeats. */
static size_t uniq_ports(struct custode_dns_port *p, size_t n)
{
	size_t w = 0;

	qsort(p, n, sizeof(*p), cmp_port);
	for (size_t i = 0; i < n; i++)
		if (!w || cmp_port(&p[w - 1], &p[i]))
			p[w++] = p[i];
	return w;
}

void custode_dns_names_free(struct custode_dns_names *n)
{
	for (size_t i = 0; i < n->n; i++)
		free(n->grants[i].ports);
	free(n->grants);
	memset(n, 0, sizeof(*n));
}

/* One pattern ("pypi.org", "*.example.com", case and trailing dot as written) into g's name and wildcard. */
static int pattern(const char *s, struct custode_dns_grant *g)
{
	struct custode_dns_name dn;

	g->wildcard = !strncmp(s, "*.", 2);
	if (custode_dns_name_from_text(g->wildcard ? s + 2 : s, &dn) < 0)
		return -EINVAL;
	snprintf(g->name, sizeof(g->name), "%s", dn.text);
	return 0;
}

/* Merge grants of the same pattern (sorted first); the ports of each are made distinct. */
static int finish(struct custode_dns_names *n)
{
	size_t w = 0;

	qsort(n->grants, n->n, sizeof(*n->grants), cmp_grant);
	for (size_t i = 0; i < n->n; i++) {
		struct custode_dns_grant *g = &n->grants[i];

		if (w && !cmp_grant(&n->grants[w - 1], g)) {
			struct custode_dns_grant *d = &n->grants[w - 1];
			void *np = realloc(d->ports, (d->n_ports + g->n_ports) * sizeof(*d->ports));

			if (!np)
				return -ENOMEM;
			d->ports = np;
			memcpy(d->ports + d->n_ports, g->ports, g->n_ports * sizeof(*g->ports));
			d->n_ports += g->n_ports;
			free(g->ports);
			g->ports = NULL;
			continue;
		}
		n->grants[w++] = *g;
	}
	n->n = w;
	for (size_t i = 0; i < n->n; i++)
		n->grants[i].n_ports = uniq_ports(n->grants[i].ports, n->grants[i].n_ports);
	return 0;
}

int custode_dns_names_build(__u64 run_id, const struct custode_host_grant *hosts, size_t n_hosts,
			    struct custode_dns_names *out)
{
	struct custode_dns_names n = {.run_id = run_id};
	int err = -ENOMEM;

	n.grants = calloc(n_hosts + 1, sizeof(*n.grants));
	if (!n.grants)
		return -ENOMEM;
	for (size_t i = 0; i < n_hosts; i++) {
		struct custode_dns_grant *g = &n.grants[n.n];

		if (pattern(hosts[i].name, g) < 0 || !hosts[i].n_ports ||
		    (hosts[i].proto != CUSTODE_PROTO_TCP && hosts[i].proto != CUSTODE_PROTO_UDP)) {
			err = -EINVAL;
			goto fail;
		}
		g->ports = calloc(hosts[i].n_ports, sizeof(*g->ports));
		if (!g->ports)
			goto fail;
		n.n++;
		for (size_t j = 0; j < hosts[i].n_ports; j++) {
			if (!hosts[i].ports[j]) {
				err = -EINVAL;
				goto fail;
			}
			g->ports[j].proto = hosts[i].proto;
			g->ports[j].port = hosts[i].ports[j];
		}
		g->n_ports = hosts[i].n_ports;
	}
	if ((err = finish(&n)))
		goto fail;
	*out = n;
	return 0;
fail:
	custode_dns_names_free(&n);
	return err;
}

int custode_dns_names_write(__u64 run_id, const struct custode_host_grant *hosts, size_t n_hosts)
{
	char path[PATH_MAX], hex[17], *text;
	json_t *o, *arr;
	int err;

	custode_run_id_format(run_id, hex);
	arr = json_array();
	o = json_pack("{s:i, s:s, s:o}", "version", NAMES_VERSION, "run_id", hex, "hosts", arr);
	if (!o)
		return -ENOMEM;
	for (size_t i = 0; i < n_hosts; i++) {
		json_t *ports = json_array(), *h;

		for (size_t j = 0; j < hosts[i].n_ports; j++)
			json_array_append_new(ports, json_integer(hosts[i].ports[j]));
		h = json_pack("{s:s, s:s, s:o}", "host", hosts[i].name, "proto",
			      hosts[i].proto == CUSTODE_PROTO_UDP ? "udp" : "tcp", "ports", ports);
		if (!h || json_array_append_new(arr, h)) {
			json_decref(o);
			return -ENOMEM;
		}
	}
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!text)
		return -ENOMEM;
	custode_dns_names_path(run_id, path, sizeof(path));
	err = custode_write_file_volatile(path, text, strlen(text), 0600);
	free(text);
	return err;
}

bool custode_dns_names_remove(__u64 run_id)
{
	char path[PATH_MAX];

	custode_dns_names_path(run_id, path, sizeof(path));
	return unlink(path) == 0 || errno != ENOENT;
}

static bool only_fields(json_t *o, const char *const *allowed)
{
	const char *k;
	json_t *v;

	json_object_foreach(o, k, v) {
		size_t i;
		for (i = 0; allowed[i] && strcmp(allowed[i], k); i++)
			;
		if (!allowed[i])
			return false;
	}
	return true;
}

int custode_dns_names_parse(const char *text, size_t len, struct custode_dns_names *out)
{
	static const char *const top[] = {"version", "run_id", "hosts", NULL};
	static const char *const entry[] = {"host", "proto", "ports", NULL};
	struct custode_host_grant *hosts = NULL;
	size_t n_hosts = 0, i;
	json_t *doc, *arr, *e;
	__u64 run_id;
	int err = -EINVAL;

	doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	if (!doc)
		return -EINVAL;
	arr = json_object_get(doc, "hosts");
	if (!json_is_object(doc) || !only_fields(doc, top) ||
	    json_integer_value(json_object_get(doc, "version")) != NAMES_VERSION ||
	    !json_is_string(json_object_get(doc, "run_id")) ||
	    custode_run_id_parse(json_string_value(json_object_get(doc, "run_id")), &run_id) < 0 || !json_is_array(arr) ||
	    json_array_size(arr) > CUSTODE_POLICY_MAX_EGRESS)
		goto out;
	hosts = calloc(json_array_size(arr) + 1, sizeof(*hosts));
	if (!hosts) {
		err = -ENOMEM;
		goto out;
	}
	json_array_foreach(arr, i, e) {
		struct custode_host_grant *h = &hosts[n_hosts];
		json_t *ports = json_object_get(e, "ports"), *pv;
		const char *proto = json_string_value(json_object_get(e, "proto"));
		size_t j;

		if (!json_is_object(e) || !only_fields(e, entry) || !json_is_string(json_object_get(e, "host")) || !proto ||
		    !json_is_array(ports) || json_array_size(ports) == 0 || json_array_size(ports) > 1024)
			goto out;
		h->name = (char *)json_string_value(json_object_get(e, "host"));
		if (!strcmp(proto, "tcp"))
			h->proto = CUSTODE_PROTO_TCP;
		else if (!strcmp(proto, "udp"))
			h->proto = CUSTODE_PROTO_UDP;
		else
			goto out;
		h->ports = calloc(json_array_size(ports), sizeof(*h->ports));
		if (!h->ports) {
			err = -ENOMEM;
			goto out;
		}
		n_hosts++;
		json_array_foreach(ports, j, pv) {
			json_int_t p = json_integer_value(pv);
			if (!json_is_integer(pv) || p < 1 || p > 65535)
				goto out;
			h->ports[h->n_ports++] = (uint16_t)p;
		}
	}
	err = custode_dns_names_build(run_id, hosts, n_hosts, out);
out:
	for (i = 0; i < n_hosts; i++)
		free(hosts[i].ports);
	free(hosts);
	json_decref(doc);
	return err;
}

int custode_dns_names_load(__u64 run_id, struct custode_dns_names *out)
{
	char path[PATH_MAX], *text = NULL;
	size_t len = 0;
	struct custode_dns_names n;
	int err;

	custode_dns_names_path(run_id, path, sizeof(path));
	if ((err = custode_read_file(path, CUSTODE_DNS_NAMES_MAX_BYTES, &text, &len)))
		return err;
	err = custode_dns_names_parse(text, len, &n);
	free(text);
	if (err)
		return err;
	if (n.run_id != run_id) {
		custode_dns_names_free(&n);
		return -EINVAL;
	}
	*out = n;
	return 0;
}

static const struct custode_dns_grant *find(const struct custode_dns_names *n, const char *name, bool wildcard)
{
	struct custode_dns_grant key;

	key.wildcard = wildcard;
	snprintf(key.name, sizeof(key.name), "%s", name);
	return bsearch(&key, n->grants, n->n, sizeof(*n->grants), cmp_grant);
}

static size_t add_ports(const struct custode_dns_grant *g, struct custode_dns_port *out, size_t have, size_t max)
{
	for (size_t i = 0; i < g->n_ports && have < max; i++)
		out[have++] = g->ports[i];
	return have;
}

size_t custode_dns_names_match(const struct custode_dns_names *n, const struct custode_dns_name *name,
			       struct custode_dns_port *out, size_t max)
{
	const struct custode_dns_grant *g;
	size_t have = 0;

	if (!name->host || !name->text[0] || !n->n)
		return 0;
	if ((g = find(n, name->text, false)))
		have = add_ports(g, out, have, max);
	/* every proper suffix: "*.b.c" and "*.c" cover "a.b.c", never "b.c" itself */
	for (const char *dot = strchr(name->text, '.'); dot; dot = strchr(dot + 1, '.'))
		if ((g = find(n, dot + 1, true)))
			have = add_ports(g, out, have, max);
	return uniq_ports(out, have);
}
