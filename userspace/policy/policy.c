// SPDX-License-Identifier: Apache-2.0
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "custode/abi.h"
#include "policy/policy.h"
#include "util/time.h"

/* A field path for messages: "content.filesystem[2].allow". */
struct jpath {
	char buf[256];
};

static const char *jp_join(struct jpath *out, const char *parent, const char *field)
{
	snprintf(out->buf, sizeof(out->buf), "%s%s%s", parent, parent[0] ? "." : "", field);
	return out->buf;
}

static const char *jp_index(struct jpath *out, const char *parent, size_t i)
{
	snprintf(out->buf, sizeof(out->buf), "%s[%zu]", parent, i);
	return out->buf;
}

#define BAD(why, ...) custode_refuse(why, EINVAL, CUSTODE_REASON_POLICY_INVALID, __VA_ARGS__)

/* Refuse any member of obj not in allowed[] (NULL-terminated). */
static int only_fields(json_t *obj, const char *path, const char *const *allowed, struct custode_refusal *why)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v) {
		bool ok = false;
		for (const char *const *a = allowed; *a; a++)
			if (strcmp(key, *a) == 0)
				ok = true;
		if (!ok)
			return BAD(why, "%s%s%s: unknown field", path, path[0] ? "." : "", key);
	}
	return 0;
}

static int get_string(json_t *obj, const char *field, const char *path, bool required, const char **out,
		      struct custode_refusal *why)
{
	struct jpath jp;
	json_t *v = json_object_get(obj, field);

	*out = NULL;
	if (!v)
		return required ? BAD(why, "%s: missing", jp_join(&jp, path, field)) : 0;
	if (!json_is_string(v))
		return BAD(why, "%s: must be a string", jp_join(&jp, path, field));
	*out = json_string_value(v);
	return 0;
}

static int get_int(json_t *v, const char *path, int64_t min, int64_t max, int64_t *out, struct custode_refusal *why)
{
	if (!json_is_integer(v))
		return BAD(why, "%s: must be an integer", path);
	if (json_integer_value(v) < min || json_integer_value(v) > max)
		return BAD(why, "%s: must be between %lld and %lld", path, (long long)min, (long long)max);
	*out = json_integer_value(v);
	return 0;
}

int custode_access_parse_name(const char *name)
{
	static const struct {
		const char *name;
		int bit;
	} classes[] = {
		{"read", CUSTODE_ACCESS_READ},     {"write", CUSTODE_ACCESS_WRITE},
		{"create", CUSTODE_ACCESS_CREATE}, {"delete", CUSTODE_ACCESS_DELETE},
		{"exec", CUSTODE_ACCESS_EXEC},
	};
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
		if (strcmp(classes[i].name, name) == 0)
			return classes[i].bit;
	return -1;
}

const char *custode_access_format(uint32_t mask, char *buf, size_t len)
{
	static const char *const names[] = {"read", "write", "create", "delete", "exec"};
	size_t off = 0;

	if (len)
		buf[0] = 0;
	for (int i = 0; i < 5; i++) {
		if (!(mask & (1u << i)))
			continue;
		int n = snprintf(buf + off, len > off ? len - off : 0, "%s%s", off ? "," : "", names[i]);
		if (n > 0)
			off += (size_t)n;
	}
	return buf;
}

/* Is there a ".." component in path? */
static bool has_dotdot(const char *path)
{
	for (const char *c = path; (c = strstr(c, "..")); c += 2)
		if ((c == path || c[-1] == '/') && (c[2] == 0 || c[2] == '/'))
			return true;
	return false;
}

int custode_rule_path_check(const char *where, const char *path, enum custode_path_var *var, const char **rest,
			    struct custode_refusal *why)
{
	static const char *const vars[] = {[CUSTODE_PATH_VAR_WORKSPACE] = "${workspace}", [CUSTODE_PATH_VAR_TMP] = "${tmp}"};
	enum custode_path_var v = CUSTODE_PATH_VAR_NONE;
	const char *r = path;

	if (path[0] == '$') {
		for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
			size_t n = strlen(vars[i]);

			if (!strncmp(path, vars[i], n) && (path[n] == 0 || path[n] == '/')) {
				v = (enum custode_path_var)i;
				r = path + n;
			}
		}
		if (v == CUSTODE_PATH_VAR_NONE)
			return BAD(why, "%s: \"%s\": unknown variable (known: ${workspace}, ${tmp}, each followed by '/' or nothing)",
				   where, path);
	} else if (path[0] != '/') {
		return BAD(why, "%s: \"%s\" must be absolute or start with ${workspace} or ${tmp}", where, path);
	}
	if (strstr(r, "${"))
		return BAD(why, "%s: \"%s\": variables are allowed only at the start of a path", where, path);
	if (has_dotdot(r))
		return BAD(why, "%s: \"%s\" must have no \"..\" component (a rule names what it means)", where, path);
	if (var)
		*var = v;
	if (rest)
		*rest = r;
	return 0;
}

static int parse_filesystem(json_t *arr, struct custode_policy *p, struct custode_refusal *why)
{
	static const char *const fields[] = {"path", "allow", NULL};
	const char *base = "content.filesystem";
	struct jpath jp, jp2, jp3;
	size_t i, j;
	json_t *e, *a;

	if (!json_is_array(arr))
		return BAD(why, "%s: must be an array", base);
	if (json_array_size(arr) > CUSTODE_POLICY_MAX_FS_RULES)
		return BAD(why, "%s: more than %d rules", base, CUSTODE_POLICY_MAX_FS_RULES);
	p->fs = calloc(json_array_size(arr) + 1, sizeof(*p->fs));
	if (!p->fs)
		return -ENOMEM;
	json_array_foreach(arr, i, e) {
		const char *path;
		uint32_t allow = 0;
		int err;

		jp_index(&jp, base, i);
		if (!json_is_object(e))
			return BAD(why, "%s: must be an object", jp.buf);
		if ((err = only_fields(e, jp.buf, fields, why)) || (err = get_string(e, "path", jp.buf, true, &path, why)))
			return err;
		if (!path[0] || strlen(path) >= CUSTODE_PATH_MAX)
			return BAD(why, "%s: empty or too long", jp_join(&jp2, jp.buf, "path"));
		if ((err = custode_rule_path_check(jp_join(&jp2, jp.buf, "path"), path, NULL, NULL, why)))
			return err;
		a = json_object_get(e, "allow");
		jp_join(&jp2, jp.buf, "allow");
		if (!a)
			return BAD(why, "%s: missing", jp2.buf);
		if (!json_is_array(a))
			return BAD(why, "%s: must be an array", jp2.buf);
		json_array_foreach(a, j, e) {
			int bit;
			jp_index(&jp3, jp2.buf, j);
			if (!json_is_string(e))
				return BAD(why, "%s: must be a string", jp3.buf);
			bit = custode_access_parse_name(json_string_value(e));
			if (bit < 0)
				return BAD(why, "%s: unknown access class \"%s\" (read, write, create, delete, exec)", jp3.buf,
					   json_string_value(e));
			if (allow & (uint32_t)bit)
				return BAD(why, "%s: \"%s\" listed twice", jp3.buf, json_string_value(e));
			allow |= (uint32_t)bit;
		}
		p->fs[p->n_fs].path = strdup(path);
		if (!p->fs[p->n_fs].path)
			return -ENOMEM;
		p->fs[p->n_fs++].allow = allow;
	}
	return 0;
}

static int parse_process(json_t *obj, struct custode_policy *p, struct custode_refusal *why)
{
	static const char *const fields[] = {"ptrace", "signals", "wx", NULL};
	const char *s;
	int err;

	if (!json_is_object(obj))
		return BAD(why, "content.process: must be an object");
	if ((err = only_fields(obj, "content.process", fields, why)))
		return err;
	if ((err = get_string(obj, "ptrace", "content.process", false, &s, why)))
		return err;
	if (s && strcmp(s, "none") && strcmp(s, "run"))
		return BAD(why, "content.process.ptrace: must be \"none\" or \"run\"");
	p->ptrace_run = s && !strcmp(s, "run");
	if ((err = get_string(obj, "signals", "content.process", false, &s, why)))
		return err;
	if (s && strcmp(s, "run"))
		return BAD(why, "content.process.signals: must be \"run\"");
	p->signals_run = true;
	if ((err = get_string(obj, "wx", "content.process", false, &s, why)))
		return err;
	if (s && strcmp(s, "deny") && strcmp(s, "allow"))
		return BAD(why, "content.process.wx: must be \"deny\" or \"allow\"");
	p->wx_deny = s && !strcmp(s, "deny");
	return 0;
}

/* "203.0.113.0/24", "2001:db8::/32", or a bare address (full length). */
static int parse_cidr(const char *s, struct custode_egress_rule *r)
{
	char buf[64], *slash, *end;
	long plen = -1;
	struct in_addr a4;
	struct in6_addr a6;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash) {
		*slash = 0;
		if (!isdigit((unsigned char)slash[1]))
			return -EINVAL;
		errno = 0;
		plen = strtol(slash + 1, &end, 10);
		if (*end || errno)
			return -EINVAL;
	}
	memset(r->addr, 0, 16);
	if (inet_pton(AF_INET, buf, &a4) == 1) {
		if (plen > 32)
			return -EINVAL;
		r->ipv4 = true;
		r->addr[10] = r->addr[11] = 0xff;
		memcpy(r->addr + 12, &a4, 4);
		r->prefixlen = (uint8_t)(96 + (plen < 0 ? 32 : plen));
	} else if (inet_pton(AF_INET6, buf, &a6) == 1) {
		if (plen > 128)
			return -EINVAL;
		r->ipv4 = false;
		memcpy(r->addr, &a6, 16);
		r->prefixlen = (uint8_t)(plen < 0 ? 128 : plen);
	} else {
		return -EINVAL;
	}
	/* Host bits must be zero: "10.0.0.1/8" is a typo, not a rule. */
	for (int bit = r->prefixlen; bit < 128; bit++)
		if (r->addr[bit / 8] & (0x80 >> (bit % 8)))
			return -EINVAL;
	r->kind = CUSTODE_EGRESS_CIDR;
	return 0;
}

/* A host name or "*.name": labels of [A-Za-z0-9-], not starting/ending with '-', 1..63 bytes, total <= 253. */
static bool valid_host(const char *s)
{
	size_t len = strlen(s), label = 0;

	if (!strncmp(s, "*.", 2)) {
		s += 2;
		len -= 2;
	}
	if (len && s[len - 1] == '.')
		len--;
	if (len == 0 || len > 253)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c == '.') {
			if (label == 0 || s[i - 1] == '-')
				return false;
			label = 0;
			continue;
		}
		if (!isalnum((unsigned char)c) && c != '-')
			return false;
		if (c == '-' && label == 0)
			return false;
		if (++label > 63)
			return false;
	}
	return label > 0 && s[len - 1] != '-';
}

static int parse_egress_rule(json_t *e, const char *path, struct custode_egress_rule *r, struct custode_refusal *why)
{
	static const char *const fields[] = {"host", "cidr", "ports", "proto", NULL};
	struct jpath jp, jp2;
	const char *host, *cidr, *proto;
	json_t *ports, *pv;
	size_t i;
	int err;

	if (!json_is_object(e))
		return BAD(why, "%s: must be an object", path);
	if ((err = only_fields(e, path, fields, why)) || (err = get_string(e, "host", path, false, &host, why)) ||
	    (err = get_string(e, "cidr", path, false, &cidr, why)) ||
	    (err = get_string(e, "proto", path, false, &proto, why)))
		return err;
	if (!!host == !!cidr)
		return BAD(why, "%s: exactly one of \"host\" and \"cidr\"", path);
	if (host) {
		if (!valid_host(host))
			return BAD(why, "%s: invalid host name \"%s\"", jp_join(&jp, path, "host"), host);
		r->kind = CUSTODE_EGRESS_HOST;
		r->host = strdup(host);
		if (!r->host)
			return -ENOMEM;
		for (char *c = r->host; *c; c++)
			*c = (char)tolower((unsigned char)*c);
	} else if (parse_cidr(cidr, r) < 0) {
		return BAD(why, "%s: invalid CIDR \"%s\"", jp_join(&jp, path, "cidr"), cidr);
	}
	r->proto = CUSTODE_PROTO_TCP; /* UDP (QUIC, DNS-over-anything) only when asked for */
	if (proto) {
		if (!strcmp(proto, "tcp"))
			r->proto = CUSTODE_PROTO_TCP;
		else if (!strcmp(proto, "udp"))
			r->proto = CUSTODE_PROTO_UDP;
		else
			return BAD(why, "%s: must be \"tcp\" or \"udp\"", jp_join(&jp, path, "proto"));
	}
	ports = json_object_get(e, "ports");
	jp_join(&jp, path, "ports");
	if (!ports)
		return BAD(why, "%s: missing (list the ports)", jp.buf);
	if (!json_is_array(ports) || json_array_size(ports) == 0 || json_array_size(ports) > 1024)
		return BAD(why, "%s: must be an array of 1..1024 ports", jp.buf);
	r->ports = calloc(json_array_size(ports), sizeof(*r->ports));
	if (!r->ports)
		return -ENOMEM;
	json_array_foreach(ports, i, pv) {
		int64_t port = 0;
		if ((err = get_int(pv, jp_index(&jp2, jp.buf, i), 1, 65535, &port, why)))
			return err;
		r->ports[r->n_ports++] = (uint16_t)port;
	}
	return 0;
}

/* content.network.private and .inbound: an array of at most 1024 CIDR strings (kind CIDR, no ports). */
static int parse_cidrs(json_t *arr, const char *where, struct custode_egress_rule **out, size_t *n,
		       struct custode_refusal *why)
{
	struct jpath jp;
	json_t *e;
	size_t i;

	if (!json_is_array(arr) || json_array_size(arr) > 1024)
		return BAD(why, "%s: must be an array of at most 1024 CIDRs", where);
	*out = calloc(json_array_size(arr) + 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	json_array_foreach(arr, i, e) {
		jp_index(&jp, where, i);
		if (!json_is_string(e) || parse_cidr(json_string_value(e), &(*out)[i]) < 0)
			return BAD(why, "%s: must be a CIDR string", jp.buf);
		(*n)++;
	}
	return 0;
}

static int parse_network(json_t *obj, struct custode_policy *p, struct custode_refusal *why)
{
	static const char *const fields[] = {"egress", "private", "listen", "inbound", NULL};
	struct jpath jp;
	json_t *arr, *e;
	size_t i;
	int err;

	if (!json_is_object(obj))
		return BAD(why, "content.network: must be an object");
	if ((err = only_fields(obj, "content.network", fields, why)))
		return err;
	p->listen = true;
	if ((e = json_object_get(obj, "listen"))) {
		if (!json_is_boolean(e))
			return BAD(why, "content.network.listen: must be true or false");
		p->listen = json_is_true(e);
	}
	arr = json_object_get(obj, "egress");
	if (arr) {
		if (!json_is_array(arr) || json_array_size(arr) > CUSTODE_POLICY_MAX_EGRESS)
			return BAD(why, "content.network.egress: must be an array of at most %d rules",
				   CUSTODE_POLICY_MAX_EGRESS);
		p->egress = calloc(json_array_size(arr) + 1, sizeof(*p->egress));
		if (!p->egress)
			return -ENOMEM;
		json_array_foreach(arr, i, e) {
			if ((err = parse_egress_rule(e, jp_index(&jp, "content.network.egress", i), &p->egress[i], why)))
				return err;
			p->n_egress++;
		}
	}
	if ((arr = json_object_get(obj, "private")) &&
	    (err = parse_cidrs(arr, "content.network.private", &p->private_addrs, &p->n_private, why)))
		return err;
	if ((arr = json_object_get(obj, "inbound"))) {
		p->has_inbound = true;
		if ((err = parse_cidrs(arr, "content.network.inbound", &p->inbound, &p->n_inbound, why)))
			return err;
	}
	return 0;
}

static int parse_limits(json_t *obj, struct custode_policy *p, struct custode_refusal *why)
{
	static const char *const fields[] = {"memoryBytes", "pids", "cpu", "wallSeconds", "outputBytes", "required", NULL};
	static const struct {
		const char *name;
		uint32_t bit;
	} names[] = {{"memoryBytes", CUSTODE_LIMIT_MEMORY}, {"pids", CUSTODE_LIMIT_PIDS}, {"cpu", CUSTODE_LIMIT_CPU},
		     {"wallSeconds", CUSTODE_LIMIT_WALL}, {"outputBytes", CUSTODE_LIMIT_OUTPUT}};
	struct custode_limits *l = &p->limits;
	struct jpath jp;
	json_t *v, *e;
	size_t i;
	int err;

	l->memory_bytes = l->pids = l->cpu_millis = l->wall_seconds = l->output_bytes = -1;
	if (!json_is_object(obj))
		return BAD(why, "content.limits: must be an object");
	if ((err = only_fields(obj, "content.limits", fields, why)))
		return err;
	if ((v = json_object_get(obj, "memoryBytes")) &&
	    (err = get_int(v, "content.limits.memoryBytes", 1 << 20, INT64_MAX, &l->memory_bytes, why)))
		return err;
	if ((v = json_object_get(obj, "pids")) && (err = get_int(v, "content.limits.pids", 1, 4194304, &l->pids, why)))
		return err;
	if ((v = json_object_get(obj, "wallSeconds")) &&
	    (err = get_int(v, "content.limits.wallSeconds", 1, 100L * 365 * 86400, &l->wall_seconds, why)))
		return err;
	if ((v = json_object_get(obj, "outputBytes")) &&
	    (err = get_int(v, "content.limits.outputBytes", 1, INT64_MAX, &l->output_bytes, why)))
		return err;
	if ((v = json_object_get(obj, "cpu"))) {
		if (!json_is_number(v) || json_number_value(v) < 0.01 || json_number_value(v) > 4096)
			return BAD(why, "content.limits.cpu: must be a number of CPUs between 0.01 and 4096");
		l->cpu_millis = (int64_t)(json_number_value(v) * 1000 + 0.5);
	}
	/* "required": limits that must be enforced, or the run is refused (limit.unavailable) */
	if ((v = json_object_get(obj, "required"))) {
		if (!json_is_array(v))
			return BAD(why, "content.limits.required: must be an array of limit names");
		json_array_foreach(v, i, e) {
			const char *s = json_is_string(e) ? json_string_value(e) : NULL;
			uint32_t bit = 0;

			jp_index(&jp, "content.limits.required", i);
			for (size_t k = 0; s && k < sizeof(names) / sizeof(names[0]); k++)
				if (!strcmp(s, names[k].name))
					bit = names[k].bit;
			if (!bit)
				return BAD(why, "%s: must be one of memoryBytes, pids, cpu, wallSeconds, outputBytes", jp.buf);
			if (l->required & bit)
				return BAD(why, "%s: \"%s\" listed twice", jp.buf, s);
			if (!json_object_get(obj, s))
				return BAD(why, "%s: \"%s\" is required but not set", jp.buf, s);
			l->required |= bit;
		}
	}
	return 0;
}

static int parse_env(json_t *arr, struct custode_policy *p, struct custode_refusal *why)
{
	struct jpath jp;
	json_t *e;
	size_t i;

	if (!json_is_array(arr) || json_array_size(arr) > CUSTODE_POLICY_MAX_ENV)
		return BAD(why, "content.env: must be an array of at most %d names", CUSTODE_POLICY_MAX_ENV);
	p->env = calloc(json_array_size(arr) + 1, sizeof(*p->env));
	if (!p->env)
		return -ENOMEM;
	json_array_foreach(arr, i, e) {
		const char *s = json_is_string(e) ? json_string_value(e) : NULL;
		bool ok = s && (isalpha((unsigned char)s[0]) || s[0] == '_') && strlen(s) <= 255;

		for (const char *c = s; ok && *c; c++)
			ok = isalnum((unsigned char)*c) || *c == '_';
		if (!ok)
			return BAD(why, "%s: must be an environment variable name", jp_index(&jp, "content.env", i));
		p->env[p->n_env] = strdup(s);
		if (!p->env[p->n_env++])
			return -ENOMEM;
	}
	return 0;
}

static int parse_content(json_t *c, struct custode_policy *p, struct custode_refusal *why)
{
	static const char *const fields[] = {"mode", "filesystem", "process", "network", "limits", "env", NULL};
	/* each section present sets its has_* and is parsed, in this order */
	const struct {
		const char *key;
		bool *has;
		int (*parse)(json_t *v, struct custode_policy *p, struct custode_refusal *why);
	} sections[] = {
		{"filesystem", &p->has_filesystem, parse_filesystem},
		{"process", &p->has_process, parse_process},
		{"network", &p->has_network, parse_network},
		{"limits", &p->has_limits, parse_limits},
		{"env", &p->has_env, parse_env},
	};
	const char *mode;
	int err;

	if (!json_is_object(c))
		return BAD(why, "content: must be an object");
	if ((err = only_fields(c, "content", fields, why)) || (err = get_string(c, "mode", "content", false, &mode, why)))
		return err;
	if (mode && strcmp(mode, "enforce") && strcmp(mode, "audit"))
		return BAD(why, "content.mode: must be \"enforce\" or \"audit\"");
	p->audit = mode && !strcmp(mode, "audit");
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		json_t *v = json_object_get(c, sections[i].key);

		if (!v)
			continue;
		*sections[i].has = true;
		if ((err = sections[i].parse(v, p, why)))
			return err;
	}
	return 0;
}

bool custode_policy_name_valid(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > CUSTODE_POLICY_MAX_NAME)
		return false;
	for (; *s; s++)
		if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && !strchr("._/-", *s))
			return false;
	return true;
}

static int parse_document(json_t *doc, struct custode_policy *p, struct custode_refusal *why)
{
	static const char *const fields[] = {"schema", "name", "version", "notBefore", "notAfter",
					     "contentDigest", "content", NULL};
	const char *schema, *name, *nb, *na, *digest;
	json_t *v;
	int64_t version = 0;
	int err;

	if (!json_is_object(doc))
		return BAD(why, "policy: must be a JSON object");
	if ((err = get_string(doc, "schema", "", true, &schema, why)))
		return err;
	if (strcmp(schema, CUSTODE_POLICY_SCHEMA) != 0)
		return BAD(why, "schema: unknown schema \"%s\" (this custode reads %s)", schema, CUSTODE_POLICY_SCHEMA);
	if ((err = only_fields(doc, "", fields, why)) || (err = get_string(doc, "name", "", true, &name, why)) ||
	    (err = get_string(doc, "notBefore", "", false, &nb, why)) ||
	    (err = get_string(doc, "notAfter", "", false, &na, why)) ||
	    (err = get_string(doc, "contentDigest", "", false, &digest, why)))
		return err;
	if (!custode_policy_name_valid(name))
		return BAD(why, "name: must be 1..%d characters of a-z 0-9 . _ / -", CUSTODE_POLICY_MAX_NAME);
	v = json_object_get(doc, "version");
	if (!v)
		return BAD(why, "version: missing");
	if ((err = get_int(v, "version", 0, CUSTODE_POLICY_VERSION_MAX, &version, why)))
		return err;
	if (!!nb != !!na)
		return BAD(why, "%s: notBefore and notAfter come together", nb ? "notAfter" : "notBefore");
	if (nb) {
		if (custode_time_parse(nb, CUSTODE_TIME_FRAC_ANY, &p->not_before, NULL) < 0)
			return BAD(why, "notBefore: not an RFC 3339 UTC time (YYYY-MM-DDTHH:MM:SSZ)");
		if (custode_time_parse(na, CUSTODE_TIME_FRAC_ANY, &p->not_after, NULL) < 0)
			return BAD(why, "notAfter: not an RFC 3339 UTC time (YYYY-MM-DDTHH:MM:SSZ)");
		if (p->not_after <= p->not_before)
			return BAD(why, "notAfter: must be later than notBefore");
		p->has_validity = true;
	}
	if (digest) {
		bool ok = strncmp(digest, "sha256:", 7) == 0 && strlen(digest) == 7 + 64;
		for (const char *c = digest + 7; ok && *c; c++)
			ok = isdigit((unsigned char)*c) || (*c >= 'a' && *c <= 'f');
		if (!ok)
			return BAD(why, "contentDigest: must be \"sha256:\" and 64 lowercase hex digits");
		if (!(p->content_digest = strdup(digest)))
			return -ENOMEM;
	}
	if (!(p->name = strdup(name)))
		return -ENOMEM;
	p->version = (uint64_t)version;
	v = json_object_get(doc, "content");
	if (!v)
		return BAD(why, "content: missing");
	return parse_content(v, p, why);
}

int custode_policy_parse(const char *text, size_t len, struct custode_policy **out, struct custode_refusal *why)
{
	struct custode_policy *p;
	json_error_t jerr;
	json_t *doc;
	int err;

	if (len > CUSTODE_POLICY_MAX_BYTES)
		return BAD(why, "policy: larger than %u bytes", CUSTODE_POLICY_MAX_BYTES);
	doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc)
		return BAD(why, "policy: line %d column %d: %s", jerr.line, jerr.column, jerr.text);
	p = calloc(1, sizeof(*p));
	if (!p) {
		json_decref(doc);
		return -ENOMEM;
	}
	err = parse_document(doc, p, why);
	json_decref(doc);
	if (err) {
		if (err == -ENOMEM)
			custode_refuse(why, ENOMEM, CUSTODE_REASON_POLICY_INVALID, "policy: out of memory");
		custode_policy_free(p);
		return err;
	}
	*out = p;
	return 0;
}

static void free_egress(struct custode_egress_rule *r, size_t n)
{
	for (size_t i = 0; r && i < n; i++) {
		free(r[i].host);
		free(r[i].ports);
	}
	free(r);
}

void custode_policy_free(struct custode_policy *p)
{
	if (!p)
		return;
	free(p->name);
	free(p->content_digest);
	for (size_t i = 0; p->fs && p->fs[i].path; i++)
		free(p->fs[i].path);
	free(p->fs);
	/* parse failures can leave a partly filled entry past n: free up to the allocation's end marker */
	free_egress(p->egress, p->n_egress + (p->egress ? 1 : 0));
	free_egress(p->private_addrs, p->n_private);
	free_egress(p->inbound, p->n_inbound);
	for (size_t i = 0; p->env && p->env[i]; i++)
		free(p->env[i]);
	free(p->env);
	free(p);
}

unsigned custode_policy_classes(const struct custode_policy *p)
{
	unsigned c = 0;

	if (p->has_filesystem)
		c |= CUSTODE_CLASS_FILE;
	if (p->has_process)
		c |= CUSTODE_CLASS_PROCESS;
	if (p->has_network)
		c |= CUSTODE_CLASS_EGRESS;
	if (p->has_inbound) /* inet_conn_request is an LSM hook: no BPF-LSM, no inbound filter (refused) */
		c |= CUSTODE_CLASS_PROCESS;
	return c;
}
