/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Policy documents, schema custode.policy/v1 (docs/policy.md): parsed
 * strictly (unknown fields, wrong types and duplicate keys refused, with the
 * field's path in the message) into struct custode_policy.
 */
#ifndef CUSTODE_POLICY_H
#define CUSTODE_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/reasons.h"

#define CUSTODE_POLICY_SCHEMA "custode.policy/v1"
#define CUSTODE_POLICY_MAX_BYTES (16u << 20)
#define CUSTODE_POLICY_MAX_FS_RULES 100000
#define CUSTODE_POLICY_MAX_EGRESS 100000
#define CUSTODE_POLICY_MAX_ENV 1024
#define CUSTODE_POLICY_MAX_NAME 128
/* Largest "version": 2^53-1, the largest integer every JSON reader (and JCS) carries exactly. */
#define CUSTODE_POLICY_VERSION_MAX 9007199254740991LL

struct custode_fs_rule {
	char *path;     /* as written, variables unexpanded */
	uint32_t allow; /* CUSTODE_ACCESS_* */
};

enum custode_egress_kind { CUSTODE_EGRESS_HOST = 1, CUSTODE_EGRESS_CIDR = 2 };
enum custode_proto { CUSTODE_PROTO_ANY = 0, CUSTODE_PROTO_TCP = 6, CUSTODE_PROTO_UDP = 17 };

struct custode_egress_rule {
	int kind;
	char *host;          /* kind HOST */
	uint8_t addr[16];    /* kind CIDR: IPv4 as ::ffff:a.b.c.d */
	uint8_t prefixlen;   /* in the 128-bit form */
	bool ipv4;
	int proto;           /* enum custode_proto */
	uint16_t *ports;     /* empty: any port */
	size_t n_ports;
};

/* Limits, as bits of custode_limits.required ("required": [...] in the policy). */
enum custode_limit {
	CUSTODE_LIMIT_MEMORY = 1u << 0, /* memoryBytes */
	CUSTODE_LIMIT_PIDS = 1u << 1,   /* pids */
	CUSTODE_LIMIT_CPU = 1u << 2,    /* cpu */
	CUSTODE_LIMIT_WALL = 1u << 3,   /* wallSeconds */
	CUSTODE_LIMIT_OUTPUT = 1u << 4, /* outputBytes */
};

struct custode_limits {
	int64_t memory_bytes; /* -1: unset */
	int64_t pids;
	int64_t cpu_millis;   /* "cpu": CPUs as a number, stored in thousandths */
	int64_t wall_seconds;
	int64_t output_bytes;
	uint32_t required;    /* enum custode_limit: refuse the run rather than run without these */
};

struct custode_policy {
	char *name;
	uint64_t version;
	bool has_validity;
	int64_t not_before; /* unix seconds; 0 if absent */
	int64_t not_after;
	char *content_digest; /* "sha256:<hex>" or NULL */

	bool audit;

	bool has_filesystem;
	struct custode_fs_rule *fs;
	size_t n_fs;

	bool has_process;
	bool ptrace_run;  /* "ptrace": "run" */
	bool signals_run; /* "signals": "run" */
	bool wx_deny;     /* "wx": "deny": no writable or anonymous executable memory */

	bool has_network;
	struct custode_egress_rule *egress;
	size_t n_egress;
	struct custode_egress_rule *private_addrs; /* kind CIDR, no ports */
	size_t n_private;
	bool listen; /* "listen": may the run bind chosen ports (default true) */
	struct custode_egress_rule *inbound; /* "inbound": peers that may connect (kind CIDR, no ports) */
	size_t n_inbound;
	bool has_inbound; /* present (even empty: no peer may connect) */

	bool has_limits;
	struct custode_limits limits;

	bool has_env;
	char **env;
	size_t n_env;
};

/* The variables a filesystem rule's path may start with, bound per run (policy/compile.h). */
enum custode_path_var { CUSTODE_PATH_VAR_NONE = -1, CUSTODE_PATH_VAR_WORKSPACE = 0, CUSTODE_PATH_VAR_TMP = 1 };

/*
 * A filesystem rule's path as written (docs/policy.md): absolute, or
 * ${workspace} or ${tmp} alone or followed by '/'; no other variable, no
 * variable elsewhere, no ".." component. The one check of a rule path: the
 * parser applies it (so `bundle sign` and `verify` refuse what a run would)
 * and binding applies it again. Messages start with where. On success *var
 * and *rest (each may be NULL) are the variable and what follows it.
 */
int custode_rule_path_check(const char *where, const char *path, enum custode_path_var *var, const char **rest,
			    struct custode_refusal *why);

/* Parse a policy document. On failure *out is untouched and *why says which field and why. */
int custode_policy_parse(const char *text, size_t len, struct custode_policy **out, struct custode_refusal *why);
void custode_policy_free(struct custode_policy *p);

/* A valid policy name: 1..CUSTODE_POLICY_MAX_NAME characters of a-z 0-9 . _ / - */
bool custode_policy_name_valid(const char *s);

/* Enforcement classes (enum custode_class) the policy needs. */
unsigned custode_policy_classes(const struct custode_policy *p);

/* One access class name ("read") → its CUSTODE_ACCESS_* bit; -1 for anything else. */
int custode_access_parse_name(const char *name);
/* mask → "read,exec" into buf. */
const char *custode_access_format(uint32_t mask, char *buf, size_t len);

#endif
