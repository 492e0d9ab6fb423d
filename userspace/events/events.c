// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <poll.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "util/exit.h"
#include "util/usage.h"
#include "control/control.h"
#include "engine/engine.h"
#include "events/events.h"
#include "custode/addr.h"
#include "policy/net.h"
#include "policy/policy.h"
#include "state/runstate.h"
#include "state/state.h"
#include "util/fsutil.h"
#include "util/time.h"
#include "util/reasons.h"

const char *custode_hook_name(int hook)
{
	switch (hook) {
#define CUSTODE_X_HOOK(sym, num, name) \
	case num:                      \
		return name;
		CUSTODE_HOOKS(CUSTODE_X_HOOK)
#undef CUSTODE_X_HOOK
	}
	return NULL;
}

int64_t custode_boot_to_wall_ns(void)
{
	struct timespec boot, wall;

	clock_gettime(CLOCK_BOOTTIME, &boot);
	clock_gettime(CLOCK_REALTIME, &wall);
	return (wall.tv_sec - boot.tv_sec) * 1000000000LL + (wall.tv_nsec - boot.tv_nsec);
}

/* Length of the valid UTF-8 sequence at p (at most n bytes), 0 if invalid. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	size_t len;
	unsigned int cp;

	if (p[0] < 0x80)
		return 1;
	if ((p[0] & 0xe0) == 0xc0)
		len = 2, cp = p[0] & 0x1f;
	else if ((p[0] & 0xf0) == 0xe0)
		len = 3, cp = p[0] & 0x0f;
	else if ((p[0] & 0xf8) == 0xf0)
		len = 4, cp = p[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* overlong forms, surrogates, beyond U+10FFFF */
	if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

/*
 * Bytes from the kernel (a path, a comm the task chose) as a JSON string:
 * as they are when valid UTF-8, else with each invalid byte written as the
 * four characters \xNN and *escaped set. Never drops the value.
 */
static json_t *bytes_string(const char *s, size_t n, bool *escaped)
{
	const unsigned char *p = (const unsigned char *)s;
	json_t *v = json_stringn(s, n);
	char *buf;
	size_t w = 0;

	*escaped = false;
	if (v)
		return v;
	buf = malloc(n * 4 + 1);
	if (!buf)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t l = p[i] ? utf8_seq(p + i, n - i) : 0;
		if (l) {
			memcpy(buf + w, p + i, l);
			w += l;
			i += l;
		} else {
			w += (size_t)sprintf(buf + w, "\\x%02x", p[i]);
			i++;
		}
	}
	*escaped = true;
	v = json_stringn(buf, w);
	free(buf);
	return v;
}

static json_t *hex_string(const char *s, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	char *buf = malloc(n * 2 + 1);
	json_t *v;

	if (!buf)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		buf[2 * i] = digits[(unsigned char)s[i] >> 4];
		buf[2 * i + 1] = digits[(unsigned char)s[i] & 15];
	}
	v = json_stringn(buf, n * 2);
	free(buf);
	return v;
}

/* A throttle record: which run and reason, how many denials went unrecorded; no task of its own. */
/*
 * What the process class records beside the other task, per hook (bpf/proc.bpf.c
 * passes them as obj.task.signal and obj.task.command): docs/events.md.
 */
static void task_details(__u16 hook, const struct custode_event_task *t, json_t *to)
{
	static const struct {
		__u16 hook;
		const char *detail, *command; /* names of obj.task.signal and obj.task.command, NULL: not set */
		bool detail_signed;
	} names[] = {
		{CUSTODE_HOOK_SOCKET_CREATE, "family", "protocol", false},
		{CUSTODE_HOOK_SOCKET_LISTEN, "family", NULL, false},
		{CUSTODE_HOOK_SOCKET_SETSOCKOPT, "level", "optname", false},
		{CUSTODE_HOOK_SOCKET_SENDMSG, "cmsg_level", "cmsg_type", false},
		{CUSTODE_HOOK_IPC_PERMISSION, "flag", "ipc_id", false},
		{CUSTODE_HOOK_IPC_ASSOCIATE, "flag", "ipc_id", false},
		{CUSTODE_HOOK_IPC_CTL, "ipc_cmd", "ipc_id", false},
		{CUSTODE_HOOK_TASK_SETNICE, "nice", NULL, true},
		{CUSTODE_HOOK_TASK_SETIOPRIO, "ioprio", NULL, false},
		{CUSTODE_HOOK_TASK_SETRLIMIT, "resource", NULL, false},
		{CUSTODE_HOOK_CAPABLE, "capability", NULL, false},
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (names[i].hook != hook)
			continue;
		json_object_set_new(to, names[i].detail,
				    json_integer(names[i].detail_signed ? (json_int_t)(int32_t)t->signal : (json_int_t)t->signal));
		if (names[i].command)
			json_object_set_new(to, names[i].command, json_integer(t->command));
		return;
	}
}

/*
 * The policy version of a v2 or later record. A v2 record holds a __u32
 * there followed by 4 bytes of padding.
 */
static __u64 event_policy_version(const struct custode_event *ev)
{
	__u32 v2;

	if (ev->version != 2)
		return ev->policy_version;
	memcpy(&v2, &ev->policy_version, sizeof(v2));
	return v2;
}

static json_t *throttle_to_json(const struct custode_event *ev, int64_t boot_to_wall_ns)
{
	const char *reason = custode_reason_name(ev->reason), *hook = custode_hook_name(ev->hook);
	char hex[17], when[64], since[64];
	json_t *o;

	custode_run_id_format(ev->run_id, hex);
	custode_time_show((int64_t)ev->boot_ns + boot_to_wall_ns, when, sizeof(when));
	custode_time_show((int64_t)ev->obj.throttle.since_ns + boot_to_wall_ns, since, sizeof(since));
	o = json_pack("{s:i, s:s, s:s, s:I, s:s, s:I, s:s, s:s, s:s, s:b, s:{s:I}, s:{s:I, s:I, s:s}}", "version",
		      ev->version, "type", "throttle", "source", "kernel", "seq", (json_int_t)ev->seq, "time", when,
		      "boot_ns", (json_int_t)ev->boot_ns, "run_id", hex, "hook", hook ? hook : "unknown", "reason",
		      reason ? reason : "unknown", "enforced", (ev->flags & CUSTODE_EVENT_ENFORCED) != 0, "policy",
		      "version", (json_int_t)event_policy_version(ev), "throttle", "count", (json_int_t)ev->obj.throttle.count,
		      "total", (json_int_t)ev->obj.throttle.total, "since", since);
	if (o)
		json_object_set_new(json_object_get(o, "throttle"), "run_cgid",
				    json_integer((json_int_t)ev->obj.throttle.run_cgid));
	return o;
}

json_t *custode_event_to_json(const void *data, size_t size, int64_t boot_to_wall_ns)
{
	const struct custode_event *ev = data;
	char hex[17], when[64], access[64];
	const char *reason, *hook;
	json_t *o, *acc, *jcomm;
	size_t head;
	bool escaped;

	if (size < CUSTODE_EVENT_V1_SIZE)
		return NULL;
	if (ev->version == 1)
		head = CUSTODE_EVENT_V1_SIZE;
	else if (ev->version == 2 || ev->version == CUSTODE_EVENT_VERSION)
		head = sizeof(*ev);
	else
		return NULL;
	if (size < head || ev->size > size || ev->size < head)
		return NULL;
	if (ev->version >= 2 && (ev->flags & CUSTODE_EVENT_THROTTLE))
		return ev->object == CUSTODE_OBJECT_THROTTLE ? throttle_to_json(ev, boot_to_wall_ns) : NULL;
	reason = custode_reason_name(ev->reason);
	hook = custode_hook_name(ev->hook);
	custode_run_id_format(ev->run_id, hex);
	custode_time_show((int64_t)ev->boot_ns + boot_to_wall_ns, when, sizeof(when));
	jcomm = bytes_string(ev->comm, strnlen(ev->comm, sizeof(ev->comm)), &escaped);
	o = json_pack("{s:i, s:s, s:I, s:s, s:I, s:s, s:I, s:s, s:s, s:b, s:I, s:I, s:I, s:I, s:o, s:I}", "version",
		      ev->version, "type", "decision", "seq", (json_int_t)ev->seq, "time", when, "boot_ns",
		      (json_int_t)ev->boot_ns, "run_id", hex, "cgroup_id", (json_int_t)ev->cgroup_id, "hook",
		      hook ? hook : "unknown", "reason", reason ? reason : "unknown", "enforced",
		      (ev->flags & CUSTODE_EVENT_ENFORCED) != 0, "pid", (json_int_t)ev->pid, "tgid", (json_int_t)ev->tgid,
		      "uid", (json_int_t)ev->uid, "gid", (json_int_t)ev->gid, "comm", jcomm ? jcomm : json_string(""),
		      "ruleset", (json_int_t)ev->ruleset);
	if (!o)
		return NULL;
	if (escaped)
		json_object_set_new(o, "comm_escaped", json_true());
	if (ev->version >= 2) {
		json_object_set_new(o, "policy", json_pack("{s:I}", "version", (json_int_t)event_policy_version(ev)));
		if (ev->exe_ino)
			json_object_set_new(o, "exe", json_pack("{s:I, s:I}", "dev", (json_int_t)ev->exe_dev, "ino",
								(json_int_t)ev->exe_ino));
	}
	if (ev->access) {
		custode_access_format(ev->access, access, sizeof(access));
		acc = json_array();
		for (char *save = NULL, *t = strtok_r(access, ",", &save); t; t = strtok_r(NULL, ",", &save))
			json_array_append_new(acc, json_string(t));
		json_object_set_new(o, "access", acc);
	}
	if (ev->object == CUSTODE_OBJECT_FILE) {
		const struct custode_event_file *f = &ev->obj.file;
		json_t *fo = json_pack("{s:I, s:I, s:i}", "dev", (json_int_t)f->dev, "ino", (json_int_t)f->ino, "mode",
				       (int)f->mode);

		if (f->path_len) {
			const char *path = (const char *)data + head;
			size_t max = ev->size - head;
			size_t n = strnlen(path, f->path_len < max ? f->path_len : max);
			json_t *jp = bytes_string(path, n, &escaped);

			if (jp)
				json_object_set_new(fo, "path", jp);
			if (escaped) {
				json_object_set_new(fo, "path_escaped", json_true());
				json_object_set_new(fo, "path_hex", hex_string(path, n));
			}
		}
		json_object_set_new(fo, "path_complete", json_boolean(!(ev->flags & CUSTODE_EVENT_PATH_PARTIAL)));
		json_object_set_new(o, "file", fo);
	}
	if (ev->object == CUSTODE_OBJECT_TASK) {
		const struct custode_event_task *t = &ev->obj.task;
		json_t *to = json_object();

		/* the other task (ptrace, signals, F_SETOWN's pid), when there is one */
		if (t->target_tgid || t->target_pid) {
			json_object_set_new(to, "target_pid", json_integer(t->target_pid));
			json_object_set_new(to, "target_tgid", json_integer((json_int_t)(int32_t)t->target_tgid));
		}
		if (t->target_cgroup)
			json_object_set_new(to, "target_cgroup", json_integer((json_int_t)t->target_cgroup));
		if (ev->hook == CUSTODE_HOOK_TASK_KILL)
			json_object_set_new(to, "signal", json_integer(t->signal));
		else if (ev->hook == CUSTODE_HOOK_PTRACE_ACCESS_CHECK)
			json_object_set_new(to, "mode", json_integer(t->signal));
		if (ev->hook == CUSTODE_HOOK_TASK_ALLOC && (t->signal || t->command))
			json_object_set_new(to, "clone_flags",
					    json_integer((json_int_t)(((__u64)t->command << 32) | (__u64)t->signal)));
		if (ev->hook == CUSTODE_HOOK_BPF_MAP || ev->hook == CUSTODE_HOOK_BPF_PROG)
			json_object_set_new(to, "id", json_integer(t->command));
		else if (ev->hook == CUSTODE_HOOK_BPF || ev->hook == CUSTODE_HOOK_FILE_FCNTL || ev->hook == CUSTODE_HOOK_FILE_IOCTL ||
			 ev->hook == CUSTODE_HOOK_FILE_IOCTL_COMPAT)
			json_object_set_new(to, "command", json_integer(t->command));
		task_details(ev->hook, t, to);
		json_object_set_new(o, "task", to);
	}
	if (ev->object == CUSTODE_OBJECT_NET) {
		const struct custode_event_net *n = &ev->obj.net;
		static const char *const classes[] = {"ordinary",   "unspecified", "loopback", "private",  "link_local",
						      "multicast", "broadcast",   "reserved", "metadata", "host"};
		char addr[64];
		json_t *no = json_object();

		if (ev->hook != CUSTODE_HOOK_SOCK_CREATE && ev->hook != CUSTODE_HOOK_SETSOCKOPT) {
			json_object_set_new(no, "addr", json_string(custode_addr_format(n->addr, addr, sizeof(addr))));
			json_object_set_new(no, "port", json_integer(n->port));
		}
		json_object_set_new(no, "family", json_string(n->family == 2 ? "inet" : n->family == 10 ? "inet6" : "other"));
		json_object_set_new(no, "family_number", json_integer(n->family));
		json_object_set_new(no, "proto", n->proto == 6 ? json_string("tcp") : n->proto == 17 ? json_string("udp")
											: json_integer(n->proto));
		json_object_set_new(no, "sock_type", n->sock_type == 1 ? json_string("stream")
						     : n->sock_type == 2 ? json_string("dgram")
						     : n->sock_type == 3 ? json_string("raw")
									  : json_integer(n->sock_type));
		if (ev->hook != CUSTODE_HOOK_SOCK_CREATE)
			json_object_set_new(no, "addr_class", json_string(n->addr_class < sizeof(classes) / sizeof(classes[0])
										  ? classes[n->addr_class]
										  : "unknown"));
		json_object_set_new(o, "net", no);
	}
	return o;
}

static const char *jstr(const json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));
	return v ? v : "";
}

/*
 * A string from a record for the one-line human format: control characters
 * (a newline in a file name or a comm set with prctl could forge lines),
 * and backslashes escaped as \xNN. Rotating static
 * buffers: up to four live results.
 */
static const char *safe(const char *v)
{
	static __thread char bufs[4][4 * 1024 + 8];
	static __thread unsigned k;
	char *b = bufs[k++ % 4];
	size_t w = 0;

	for (; *v && w + 5 < sizeof(bufs[0]); v++) {
		unsigned char c = (unsigned char)*v;

		if (c < 0x20 || c == 0x7f || c == '\\')
			w += (size_t)snprintf(b + w, sizeof(bufs[0]) - w, "\\x%02x", c);
		else
			b[w++] = (char)c;
	}
	b[w] = 0;
	return b;
}

int custode_event_format(const json_t *ev, char *out, size_t len)
{
	const json_t *file = json_object_get(ev, "file");
	const json_t *net = json_object_get(ev, "net");
	const json_t *pol = json_object_get(ev, "policy");
	const char *type = jstr(ev, "type");
	char dest[128] = "", policy[200] = "";
	const json_t *acc = json_object_get(ev, "access");
	char access[64] = "";
	size_t i;
	json_t *a;

	if (json_object_get(pol, "name") && json_object_get(pol, "version"))
		snprintf(policy, sizeof(policy), " policy=%s@%lld", safe(jstr(pol, "name")),
			 (long long)json_integer_value(json_object_get(pol, "version")));
	else if (json_object_get(pol, "name"))
		snprintf(policy, sizeof(policy), " policy=%s", safe(jstr(pol, "name")));
	if (!strcmp(type, "throttle")) {
		const json_t *t = json_object_get(ev, "throttle");
		return snprintf(out, len, "%s run=%s%s throttled %lld %s (%s, %lld suppressed in all)%s", jstr(ev, "time"),
				jstr(ev, "run_id"), policy, (long long)json_integer_value(json_object_get(t, "count")),
				jstr(ev, "reason"), json_is_string(json_object_get(ev, "source")) ? jstr(ev, "source") : "kernel",
				(long long)json_integer_value(json_object_get(t, "total")),
				json_is_true(json_object_get(ev, "enforced")) ? "" : " (audit)");
	}
	if (!strcmp(type, "dns")) {
		const json_t *d = json_object_get(ev, "dns");
		const char *detail = jstr(d, "detail");

		return snprintf(out, len, "%s run=%s%s dns %s %s %s/%s%s%s%s", jstr(ev, "time"), jstr(ev, "run_id"), policy,
				jstr(ev, "reason"), jstr(d, "decision"), safe(jstr(d, "name")), jstr(d, "qtype"),
				detail[0] ? " (" : "", detail[0] ? safe(detail) : "", detail[0] ? ")" : "");
	}
	if (!strcmp(type, "dropped"))
		return snprintf(out, len, "%s %lld records dropped (ring buffer full; %lld since the engine loaded)",
				jstr(ev, "time"), (long long)json_integer_value(json_object_get(ev, "count")),
				(long long)json_integer_value(json_object_get(ev, "total")));
	if (net && json_object_get(net, "addr")) {
		const char *addr = jstr(net, "addr");

		snprintf(dest, sizeof(dest), " dest=%s%s%s:%d/%s", strchr(addr, ':') ? "[" : "", addr,
			 strchr(addr, ':') ? "]" : "", (int)json_integer_value(json_object_get(net, "port")),
			 json_is_string(json_object_get(net, "proto")) ? jstr(net, "proto") : "?");
	}
	json_array_foreach(acc, i, a) {
		strncat(access, i ? "," : "", sizeof(access) - strlen(access) - 1);
		strncat(access, json_string_value(a), sizeof(access) - strlen(access) - 1);
	}
	return snprintf(out, len, "%s run=%s%s pid=%d comm=%s %s %s%s%s%s%s%s%s", jstr(ev, "time"), jstr(ev, "run_id"),
			policy, (int)json_integer_value(json_object_get(ev, "tgid")), safe(jstr(ev, "comm")), jstr(ev, "hook"),
			jstr(ev, "reason"), access[0] ? " access=" : "", access,
			file && json_object_get(file, "path") ? " path=" : "",
			file && json_object_get(file, "path") ? safe(jstr(file, "path")) : "", dest,
			json_is_true(json_object_get(ev, "enforced")) ? "" : " (audit)");
}

struct consumer {
	bool json;
	struct custode_event_filter filter;
	struct custode_event_enricher *en;
	int64_t boot_to_wall_ns;
	unsigned long bad, printed;
};

static void print_event(struct consumer *c, const json_t *o)
{
	if (c->json) {
		json_dumpf(o, stdout, JSON_COMPACT);
		putchar('\n');
	} else {
		char line[8192];
		custode_event_format(o, line, sizeof(line));
		puts(line);
	}
	c->printed++;
}

static void show_event(void *arg, const json_t *o)
{
	print_event(arg, o);
}

/* The pinned ring buffer as a source of records (struct custode_event_source). */
struct ring_source {
	struct ring_buffer *rb;
	int (*fn)(void *arg, void *data, size_t size);
	void *arg;
};

static int ring_sample(void *ctx, void *data, size_t size)
{
	struct ring_source *rs = ctx;

	return rs->fn(rs->arg, data, size);
}

static int ring_drain(void *ctx, int (*fn)(void *arg, void *data, size_t size), void *arg)
{
	struct ring_source *rs = ctx;

	rs->fn = fn;
	rs->arg = arg;
	return ring_buffer__consume(rs->rb);
}

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: custode events [--follow] [--json] [--run ID] [--reason CODE] [--since T]\n"
		   "\n"
		   "Print denial records, oldest first (fields: docs/events.md).\n"
		   "\n"
		   "With `custode daemon` running, the daemon owns the engine's ring buffer: the\n"
		   "records it kept (its --history, default the last 10000) are printed, then,\n"
		   "with --follow, every new one. Without a daemon, the ring buffer is read\n"
		   "directly: each record is printed once, to one reader; records a filter\n"
		   "does not match are kept (" CUSTODE_EVENT_SPOOL ", at most 10000) and\n"
		   "printed first by a later read that matches them, or taken by the daemon.\n"
		   "\n"
		   "  --follow       keep reading until interrupted\n"
		   "  --json         one JSON object per line (docs/events.schema.json)\n"
		   "  --run ID       only records of run ID (16 hex digits, as printed by custode run)\n"
		   "  --reason CODE  only this reason code, or a pattern such as 'file.*'\n"
		   "  --since T      only records at or after T: RFC 3339 (2026-01-01T10:00:00Z),\n"
		   "                 @UNIXSECONDS, or a duration back from now (90s, 15m, 2h, 7d)\n"
		   "  --help         this text\n"
		   "\n"
		   "Throttle records (\"type\": \"throttle\") say how many denials of a run and reason\n"
		   "were counted but not recorded; dropped records (\"type\": \"dropped\") how many\n"
		   "the full ring buffer lost. Counters stay exact (custode runs, receipts).\n"
		   "\n"
		   "Exit: 0 done; 125 refused or failed (not root, no engine loaded, the daemon\n"
		   "refused or failed: the reason code is on stderr); 2 usage.\n");
}

/* Through the daemon: it owns the ring buffer. 1 when no daemon answers (read directly instead). */
static int via_daemon(struct consumer *c, bool follow)
{
	struct custode_refusal why = {0};
	struct custode_control_client cl;
	json_t *req, *o;
	int err;

	if (custode_control_connect(&cl, &why) < 0) {
		if (why.reason == CUSTODE_REASON_DAEMON_NOT_RUNNING)
			return 1;
		fprintf(stderr, "custode: events: %s: %s\n", custode_reason_name(why.reason), why.detail);
		return -1;
	}
	req = json_pack("{s:s, s:b, s:o}", "cmd", "events", "follow", follow, "filter",
			custode_event_filter_to_json(&c->filter));
	err = custode_control_send(&cl, req);
	json_decref(req);
	if (err) {
		fprintf(stderr, "custode: events: sending to the daemon: %s\n", strerror(-err));
		custode_control_close(&cl);
		return -1;
	}
	while (!stop) {
		json_t *ev;

		o = custode_control_recv(&cl, 500, &err);
		if (!o) {
			if (err == -ETIMEDOUT || err == -EINTR)
				continue;
			if (err == -EPIPE && follow) {
				fprintf(stderr, "custode: events: the daemon closed the stream\n");
				custode_control_close(&cl);
				return -1;
			}
			fprintf(stderr, "custode: events: reading from the daemon: %s\n", strerror(-err));
			custode_control_close(&cl);
			return -1;
		}
		if ((ev = json_object_get(o, "event"))) {
			print_event(c, ev);
		} else if (json_object_get(o, "lost")) {
			fprintf(stderr, "custode: events: this reader was too slow: the daemon skipped %lld records for it\n",
				(long long)json_integer_value(json_object_get(o, "lost")));
		} else if (json_object_get(o, "ok")) {
			bool ok = json_is_true(json_object_get(o, "ok"));

			if (!ok)
				fprintf(stderr, "custode: events: %s: %s\n", json_string_value(json_object_get(o, "reason")),
					json_string_value(json_object_get(o, "detail")));
			json_decref(o);
			custode_control_close(&cl);
			return ok ? 0 : -1;
		}
		json_decref(o);
	}
	custode_control_close(&cl);
	return 0;
}

/*
 * Without the daemon: read the spool, then the ring buffer (with --follow, again
 * whenever it has records), under the spool's lock; what the filter does not
 * match stays in the spool for a later read (docs/events.md). 0 or -errno.
 */
static int read_direct(struct consumer *c, struct ring_source *rs, bool follow)
{
	const struct custode_event_source src = {ring_drain, rs};
	struct custode_event_read r = {.spool = CUSTODE_EVENT_SPOOL, .filter = &c->filter, .en = c->en,
				       .show = show_event, .arg = c};
	uint64_t dropped_seen = 0;
	int err;

	custode_mkdir_p(CUSTODE_STATE_DIR, 0700);
	do {
		r.boot_to_wall_ns = custode_boot_to_wall_ns();
		r.bad = 0;
		err = custode_event_read_once(&r, &src);
		c->bad += r.bad;
		if (err < 0) {
			fprintf(stderr, "custode: events: the spool %s: %s%s\n", CUSTODE_EVENT_SPOOL, strerror(-err),
				r.kept ? " (records this read did not show may be lost)" : " (nothing was read)");
			return err;
		}
		if (r.dropped > dropped_seen)
			fprintf(stderr, "custode: events: %llu records no read showed were dropped (the spool keeps %d)\n",
				(unsigned long long)(r.dropped - dropped_seen), CUSTODE_EVENT_SPOOL_MAX);
		dropped_seen = r.dropped;
		if (follow) {
			struct pollfd p = {.fd = ring_buffer__epoll_fd(rs->rb), .events = POLLIN};

			poll(&p, 1, 500);
		}
	} while (follow && !stop);
	if (r.kept)
		fprintf(stderr, "custode: events: %lu records not shown are kept for later reads (%s)\n", r.kept,
			CUSTODE_EVENT_SPOOL);
	return 0;
}

int custode_cmd_events(int argc, char **argv)
{
	static const struct option opts[] = {{"follow", no_argument, NULL, 'f'},   {"json", no_argument, NULL, 'j'},
					     {"run", required_argument, NULL, 'r'}, {"reason", required_argument, NULL, 'R'},
					     {"since", required_argument, NULL, 's'}, {"help", no_argument, NULL, 'h'},
					     {0}};
	struct custode_refusal why = {0};
	struct custode_engine e;
	struct consumer c = {0};
	struct ring_source rs = {0};
	struct custode_stats stats;
	bool follow = false;
	int opt, err;

	custode_getopt_start();
	while ((opt = getopt_long(argc, argv, "+fjr:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			follow = true;
			break;
		case 'j':
			c.json = true;
			break;
		case 'r':
			if (custode_run_id_parse(optarg, &c.filter.run_id) < 0)
				return custode_usage_error("events", EXIT_USAGE,
							   "--run: '%s' is not a run id (16 hex digits)", optarg);
			c.filter.has_run = true;
			break;
		case 'R':
			if (custode_event_reason_check(optarg) < 0)
				return custode_usage_error("events", EXIT_USAGE,
							   "--reason: '%s' is no reason code (and matches none)", optarg);
			snprintf(c.filter.reason, sizeof(c.filter.reason), "%s", optarg);
			break;
		case 's': {
			struct timespec now;

			clock_gettime(CLOCK_REALTIME, &now);
			if (custode_event_since_parse(optarg, now.tv_sec * 1000000000LL + now.tv_nsec,
						      &c.filter.since_wall_ns) < 0)
				return custode_usage_error("events", EXIT_USAGE,
							   "--since: '%s': expected RFC 3339 (2026-01-01T10:00:00Z), "
							   "@UNIXSECONDS or a duration (15m, 2h)",
							   optarg);
			c.filter.has_since = true;
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			return custode_usage_bad_option("events", EXIT_USAGE, argv);
		}
	}
	if (optind < argc)
		return custode_usage_extra_arg("events", EXIT_USAGE, argv[optind]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	err = via_daemon(&c, follow);
	if (err <= 0)
		return err < 0 ? EXIT_REFUSED : 0;
	if ((err = custode_host_prepare(&e, &why)) || (err = custode_engine_open(&e, 0, 0, &why))) {
		fprintf(stderr, "custode: events: %s: %s\n", custode_reason_name(why.reason), why.detail);
		return EXIT_REFUSED;
	}
	c.en = custode_event_enricher_new();
	rs.rb = ring_buffer__new(e.events_fd, ring_sample, &rs, NULL);
	if (!rs.rb) {
		fprintf(stderr, "custode: events: cannot map the ring buffer: %s\n", strerror(errno));
		custode_event_enricher_free(c.en);
		custode_engine_close(&e);
		return EXIT_REFUSED;
	}
	err = read_direct(&c, &rs, follow);
	if (c.bad)
		fprintf(stderr, "custode: events: skipped %lu records of an unknown version or size\n", c.bad);
	if (custode_engine_get_stats(&e, &stats) == 0 && stats.events_dropped)
		fprintf(stderr, "custode: events: %llu records were dropped since the engine loaded (ring buffer full)\n",
			(unsigned long long)stats.events_dropped);
	ring_buffer__free(rs.rb);
	custode_event_enricher_free(c.en);
	custode_engine_close(&e);
	return err < 0 ? EXIT_REFUSED : 0;
}
