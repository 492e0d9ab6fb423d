// SPDX-License-Identifier: Apache-2.0
/* Denial records: validation of raw ring-buffer records and their JSON form. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <criterion/criterion.h>
#include <jansson.h>

#include "custode/abi.h"
#include "custode/event.h"
#include "events/events.h"
#include "util/reasons.h"
#include "util/time.h"

/* 2026-01-01T00:00:00Z */
#define WALL_2026 1767225600LL
#define BOOT_NS (5000000000ull + 123456789ull)
#define BOOT_TO_WALL ((int64_t)WALL_2026 * 1000000000LL - 5000000000LL)

/*
 * A record in exactly `path_len` path bytes of heap, so that ASan catches a
 * read past the record. path may be NULL (no file object).
 */
static struct custode_event *make_event(const char *path, size_t path_bytes, size_t *size)
{
	size_t n = sizeof(struct custode_event) + path_bytes;
	struct custode_event *ev = calloc(1, n);

	cr_assert_not_null(ev);
	ev->version = CUSTODE_EVENT_VERSION;
	ev->size = (uint16_t)n;
	ev->hook = CUSTODE_HOOK_FILE_OPEN;
	ev->reason = CUSTODE_REASON_FILE_READ_DENIED;
	ev->flags = CUSTODE_EVENT_ENFORCED;
	ev->access = CUSTODE_ACCESS_READ | CUSTODE_ACCESS_WRITE;
	ev->seq = 42;
	ev->boot_ns = BOOT_NS;
	ev->run_id = 0x0123456789abcdefull;
	ev->cgroup_id = 987654321;
	ev->pid = 1234;
	ev->tgid = 1200;
	ev->uid = 1000;
	ev->gid = 1001;
	ev->ruleset = 7;
	ev->policy_version = 9;
	ev->exe_dev = (8u << 20) | 2;
	ev->exe_ino = 777;
	ev->object = CUSTODE_OBJECT_FILE;
	memcpy(ev->comm, "cat", 4);
	ev->obj.file.dev = (8u << 20) | 1;
	ev->obj.file.ino = 123456;
	ev->obj.file.mode = S_IFREG | 0640;
	if (path) {
		memcpy(ev->path, path, path_bytes);
		ev->obj.file.path_len = (uint32_t)path_bytes;
	}
	*size = n;
	return ev;
}

static struct custode_event *make_file_event(const char *path, size_t *size)
{
	return make_event(path, strlen(path) + 1, size);
}

static json_int_t get_int(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	cr_assert(json_is_integer(v), "\"%s\" is not an integer", key);
	return json_integer_value(v);
}

static const char *get_str(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	cr_assert(json_is_string(v), "\"%s\" is not a string", key);
	return json_string_value(v);
}

/* A reason code nothing names (the list only grows, so look for one). */
static int unnamed_reason(void)
{
	for (int r = 0xffff; r > 0; r--)
		if (!custode_reason_name(r))
			return r;
	cr_assert_fail("every reason code is named");
	return -1;
}

Test(events, hook_names)
{
	int max = -1;

	cr_assert_str_eq(custode_hook_name(CUSTODE_HOOK_NONE), "none");
	cr_assert_str_eq(custode_hook_name(CUSTODE_HOOK_FILE_OPEN), "file_open");
#define CHECK_HOOK(sym, num, name)                                 \
	do {                                                       \
		cr_assert_not_null(custode_hook_name(num), "%d", num); \
		cr_assert_str_eq(custode_hook_name(num), name);    \
		if (num > max)                                     \
			max = num;                                 \
	} while (0);
	CUSTODE_HOOKS(CHECK_HOOK)
#undef CHECK_HOOK
	cr_assert_null(custode_hook_name(max + 1));
	cr_assert_null(custode_hook_name(-1));
	cr_assert_null(custode_hook_name(0xffff));
}

Test(events, file_event_every_field)
{
	size_t size;
	struct custode_event *ev = make_file_event("/etc/shadow", &size);
	json_t *o = custode_event_to_json(ev, size, BOOT_TO_WALL);
	json_t *acc, *file;

	cr_assert_not_null(o);
	cr_assert_eq(get_int(o, "version"), CUSTODE_EVENT_VERSION);
	cr_assert_str_eq(get_str(o, "type"), "decision");
	cr_assert_eq(get_int(o, "seq"), 42);
	cr_assert_str_eq(get_str(o, "time"), "2026-01-01T00:00:00.123456Z");
	cr_assert_eq(get_int(o, "boot_ns"), (json_int_t)BOOT_NS);
	cr_assert_str_eq(get_str(o, "run_id"), "0123456789abcdef");
	cr_assert_eq(get_int(o, "cgroup_id"), 987654321);
	cr_assert_str_eq(get_str(o, "hook"), "file_open");
	cr_assert_str_eq(get_str(o, "reason"), "file.read.denied");
	cr_assert(json_is_true(json_object_get(o, "enforced")));
	cr_assert_eq(get_int(o, "pid"), 1234);
	cr_assert_eq(get_int(o, "tgid"), 1200);
	cr_assert_eq(get_int(o, "uid"), 1000);
	cr_assert_eq(get_int(o, "gid"), 1001);
	cr_assert_str_eq(get_str(o, "comm"), "cat");
	cr_assert_eq(get_int(o, "ruleset"), 7);
	cr_assert_eq(get_int(json_object_get(o, "policy"), "version"), 9);
	cr_assert_eq(get_int(json_object_get(o, "exe"), "dev"), (8 << 20) | 2);
	cr_assert_eq(get_int(json_object_get(o, "exe"), "ino"), 777);

	acc = json_object_get(o, "access");
	cr_assert(json_is_array(acc));
	cr_assert_eq(json_array_size(acc), 2);
	cr_assert_str_eq(json_string_value(json_array_get(acc, 0)), "read");
	cr_assert_str_eq(json_string_value(json_array_get(acc, 1)), "write");

	file = json_object_get(o, "file");
	cr_assert(json_is_object(file));
	cr_assert_eq(get_int(file, "dev"), (8 << 20) | 1);
	cr_assert_eq(get_int(file, "ino"), 123456);
	cr_assert_eq(get_int(file, "mode"), S_IFREG | 0640);
	cr_assert_str_eq(get_str(file, "path"), "/etc/shadow");
	cr_assert(json_is_true(json_object_get(file, "path_complete")));
	json_decref(o);
	free(ev);
}

Test(events, time_format_and_truncation)
{
	size_t size;
	struct custode_event *ev = make_file_event("/x", &size);
	json_t *o;
	const char *t;

	/* 1999-12-31T23:59:59.999999999 → microseconds truncated, not rounded into 2000 */
	ev->boot_ns = 999999999;
	o = custode_event_to_json(ev, size, 946684799LL * 1000000000LL);
	cr_assert_not_null(o);
	t = get_str(o, "time");
	cr_assert_str_eq(t, "1999-12-31T23:59:59.999999Z");
	json_decref(o);

	/* exact second: six zero digits */
	ev->boot_ns = 0;
	o = custode_event_to_json(ev, size, WALL_2026 * 1000000000LL);
	cr_assert_not_null(o);
	t = get_str(o, "time");
	cr_assert_str_eq(t, "2026-01-01T00:00:00.000000Z");
	cr_assert_eq(strlen(t), strlen("YYYY-MM-DDTHH:MM:SS.uuuuuuZ"));
	json_decref(o);
	free(ev);
}

Test(events, run_id_is_16_hex_digits)
{
	static const uint64_t ids[] = {0, 1, 0xffffffffffffffffull, 0xabcdef0000000000ull};
	static const char *const want[] = {"0000000000000000", "0000000000000001", "ffffffffffffffff",
					   "abcdef0000000000"};

	for (size_t i = 0; i < 4; i++) {
		size_t size;
		struct custode_event *ev = make_file_event("/x", &size);
		json_t *o;

		ev->run_id = ids[i];
		o = custode_event_to_json(ev, size, BOOT_TO_WALL);
		cr_assert_not_null(o);
		cr_assert_str_eq(get_str(o, "run_id"), want[i]);
		json_decref(o);
		free(ev);
	}
}

Test(events, audit_mode_and_partial_path)
{
	size_t size;
	struct custode_event *ev = make_file_event("/very/long/pa", &size);
	json_t *o;

	ev->flags = CUSTODE_EVENT_PATH_PARTIAL; /* not enforced: audit */
	o = custode_event_to_json(ev, size, BOOT_TO_WALL);
	cr_assert_not_null(o);
	cr_assert(json_is_false(json_object_get(o, "enforced")));
	cr_assert(json_is_false(json_object_get(json_object_get(o, "file"), "path_complete")));
	cr_assert_str_eq(get_str(json_object_get(o, "file"), "path"), "/very/long/pa");
	json_decref(o);
	free(ev);
}

Test(events, unknown_hook_and_reason_are_named_unknown)
{
	size_t size;
	struct custode_event *ev = make_file_event("/x", &size);
	json_t *o;

	ev->hook = 0xfffe;
	ev->reason = (uint16_t)unnamed_reason();
	o = custode_event_to_json(ev, size, BOOT_TO_WALL);
	cr_assert_not_null(o);
	cr_assert_str_eq(get_str(o, "hook"), "unknown");
	cr_assert_str_eq(get_str(o, "reason"), "unknown");
	json_decref(o);
	free(ev);
}

Test(events, no_access_no_access_field)
{
	size_t size;
	struct custode_event *ev = make_file_event("/x", &size);
	json_t *o;

	ev->access = 0;
	o = custode_event_to_json(ev, size, BOOT_TO_WALL);
	cr_assert_not_null(o);
	cr_assert_null(json_object_get(o, "access"));
	json_decref(o);

	ev->access = CUSTODE_ACCESS_EXEC;
	o = custode_event_to_json(ev, size, BOOT_TO_WALL);
	cr_assert_eq(json_array_size(json_object_get(o, "access")), 1);
	cr_assert_str_eq(json_string_value(json_array_get(json_object_get(o, "access"), 0)), "exec");
	json_decref(o);
	free(ev);
}

Test(events, no_object_no_file_field)
{
	size_t size;
	struct custode_event *ev = make_event(NULL, 0, &size);
	json_t *o;

	ev->object = CUSTODE_OBJECT_NONE;
	o = custode_event_to_json(ev, size, BOOT_TO_WALL);
	cr_assert_not_null(o);
	cr_assert_null(json_object_get(o, "file"));
	json_decref(o);
	free(ev);
}

Test(events, file_without_path)
{
	size_t size;
	struct custode_event *ev = make_event(NULL, 0, &size);
	json_t *o, *file;

	o = custode_event_to_json(ev, size, BOOT_TO_WALL);
	cr_assert_not_null(o);
	file = json_object_get(o, "file");
	cr_assert(json_is_object(file));
	cr_assert_null(json_object_get(file, "path"));
	cr_assert_eq(get_int(file, "ino"), 123456);
	json_decref(o);
	free(ev);
}

Test(events, comm_of_16_bytes_without_nul)
{
	size_t size;
	struct custode_event *ev = make_file_event("/x", &size);
	json_t *o;

	memcpy(ev->comm, "0123456789abcdef", 16);
	o = custode_event_to_json(ev, size, BOOT_TO_WALL);
	cr_assert_not_null(o);
	cr_assert_str_eq(get_str(o, "comm"), "0123456789abcdef");
	json_decref(o);
	free(ev);
}

/* ---- refusals ---- */

Test(events, short_record_refused)
{
	size_t size;
	struct custode_event *ev = make_file_event("/x", &size);
	/* a copy of exactly the short length, so reading past it is caught */
	void *s = malloc(sizeof(struct custode_event) - 1);

	memcpy(s, ev, sizeof(struct custode_event) - 1);
	cr_assert_null(custode_event_to_json(s, sizeof(struct custode_event) - 1, 0));
	cr_assert_null(custode_event_to_json(s, 0, 0));
	cr_assert_null(custode_event_to_json(s, 8, 0));
	free(s);
	free(ev);
}

Test(events, unknown_version_refused)
{
	size_t size;
	struct custode_event *ev = make_file_event("/x", &size);

	ev->version = 0;
	cr_assert_null(custode_event_to_json(ev, size, 0));
	ev->version = CUSTODE_EVENT_VERSION + 1;
	cr_assert_null(custode_event_to_json(ev, size, 0));
	ev->version = 0xffff;
	cr_assert_null(custode_event_to_json(ev, size, 0));
	free(ev);
}

Test(events, record_size_larger_than_data_refused)
{
	size_t size;
	struct custode_event *ev = make_file_event("/etc/shadow", &size);

	ev->size = (uint16_t)(size + 1);
	cr_assert_null(custode_event_to_json(ev, size, 0));
	ev->size = 0xffff;
	cr_assert_null(custode_event_to_json(ev, size, 0));
	free(ev);
}

Test(events, record_size_smaller_than_header_refused)
{
	size_t size;
	struct custode_event *ev = make_file_event("/etc/shadow", &size);

	ev->size = sizeof(struct custode_event) - 1;
	cr_assert_null(custode_event_to_json(ev, size, 0));
	ev->size = 0;
	cr_assert_null(custode_event_to_json(ev, size, 0));
	free(ev);
}

Test(events, record_followed_by_more_data)
{
	/* data longer than the record (ring-buffer padding): the record's own size bounds the path */
	size_t size;
	struct custode_event *ev = make_event("/etc/shadowXXXXXXXX", 20, &size);
	json_t *o;

	ev->size = (uint16_t)(sizeof(*ev) + 11); /* "/etc/shadow" without its NUL */
	ev->obj.file.path_len = 12;
	o = custode_event_to_json(ev, size, 0);
	if (o) {
		const char *p = get_str(json_object_get(o, "file"), "path");
		cr_assert_leq(strlen(p), 11);
		cr_assert_eq(strncmp(p, "/etc/shadow", strlen(p)), 0);
		json_decref(o);
	}
	free(ev);
}

Test(events, path_without_nul_is_bounded)
{
	size_t size;
	/* 8 path bytes, no NUL, in a heap block that ends right after them */
	struct custode_event *ev = make_event("ABCDEFGH", 8, &size);
	json_t *o;

	ev->obj.file.path_len = 100; /* claims more than the record holds */
	o = custode_event_to_json(ev, size, 0);
	/* refusing the inconsistent record is fine too; reading past it is not */
	if (o) {
		const char *p = get_str(json_object_get(o, "file"), "path");
		cr_assert_str_eq(p, "ABCDEFGH");
		json_decref(o);
	}

	ev->obj.file.path_len = 8;
	o = custode_event_to_json(ev, size, 0);
	if (o) {
		cr_assert_str_eq(get_str(json_object_get(o, "file"), "path"), "ABCDEFGH");
		json_decref(o);
	}
	free(ev);
}

Test(events, path_len_shorter_than_string)
{
	size_t size;
	struct custode_event *ev = make_file_event("/etc/shadow", &size);
	json_t *o;

	ev->obj.file.path_len = 4;
	o = custode_event_to_json(ev, size, 0);
	cr_assert_not_null(o);
	cr_assert_str_eq(get_str(json_object_get(o, "file"), "path"), "/etc");
	json_decref(o);
	free(ev);
}

/*
 * BUG (events.c custode_event_to_json, json_pack "comm" as "s"): the kernel
 * cuts comm at 15 bytes, which can split a UTF-8 character ("ééééééééé"
 * → 7 é and a lone 0xc3), and comm is settable to any bytes by the run
 * itself (prctl PR_SET_NAME). json_pack refuses non-UTF-8, so the whole
 * record becomes NULL and the denial is dropped from `custode events` as
 * "unknown version or size". A confined process can thus hide its denials.
 */
Test(events, comm_not_utf8_keeps_the_event)
{
	size_t size;
	struct custode_event *ev = make_file_event("/etc/shadow", &size);
	json_t *o;
	bool kept, comm_ok, reason_ok, kept2;

	/* results are collected first, so a failure leaks nothing under ASan */
	memset(ev->comm, 0, sizeof(ev->comm));
	memcpy(ev->comm, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3", 15);
	o = custode_event_to_json(ev, size, BOOT_TO_WALL);
	kept = o != NULL;
	comm_ok = json_is_string(json_object_get(o, "comm"));
	reason_ok = json_is_string(json_object_get(o, "reason")) &&
		    !strcmp(json_string_value(json_object_get(o, "reason")), "file.read.denied");
	json_decref(o);

	memcpy(ev->comm, "\xff\xfe\x80", 4);
	o = custode_event_to_json(ev, size, BOOT_TO_WALL);
	kept2 = o != NULL;
	json_decref(o);
	free(ev);

	cr_assert(kept, "a denial with a comm cut inside a UTF-8 character was dropped");
	cr_assert(comm_ok);
	cr_assert(reason_ok);
	cr_assert(kept2, "a denial with a non-UTF-8 comm was dropped");
}

/*
 * BUG (events.c, json_stringn for file.path): Linux file names are bytes,
 * not UTF-8. For a name like "/home/u/caf\xe9" json_stringn returns NULL,
 * json_object_set_new silently drops it, and the record says
 * path_complete: true with no path at all. The path must be reported
 * (encoded somehow — the encoding is unspecified), or at least not
 * claimed complete.
 */
Test(events, path_not_utf8_is_reported)
{
	size_t size;
	struct custode_event *ev = make_file_event("/home/u/caf\xe9", &size);
	json_t *o, *file, *path;
	bool kept, ok;

	o = custode_event_to_json(ev, size, BOOT_TO_WALL);
	kept = o != NULL;
	file = json_object_get(o, "file");
	path = json_object_get(file, "path");
	ok = json_is_object(file) &&
	     (json_is_string(path) || (!path && json_is_false(json_object_get(file, "path_complete"))));
	json_decref(o);
	free(ev);
	cr_assert(kept);
	cr_assert(ok, "non-UTF-8 path silently dropped while path_complete is true");
}

/*
 * BUG (events.c: "uid"/"gid"/"ruleset" packed as (int) with "s:i"): ids
 * are __u32. A uid above INT_MAX (user namespaces map ids up to 2^32-2)
 * comes out negative.
 */
Test(events, large_ids_are_not_negative)
{
	size_t size;
	struct custode_event *ev = make_file_event("/x", &size);
	json_t *o;
	json_int_t uid, gid, ruleset;

	ev->uid = 3000000000u;
	ev->gid = 4294967294u;
	ev->ruleset = 0x80000001u;
	o = custode_event_to_json(ev, size, BOOT_TO_WALL);
	free(ev);
	cr_assert_not_null(o);
	uid = json_integer_value(json_object_get(o, "uid"));
	gid = json_integer_value(json_object_get(o, "gid"));
	ruleset = json_integer_value(json_object_get(o, "ruleset"));
	json_decref(o);
	cr_assert_eq(uid, 3000000000LL);
	cr_assert_eq(gid, 4294967294LL);
	cr_assert_eq(ruleset, 0x80000001LL);
}

/* ---- one line for terminals ---- */

Test(events, format_line)
{
	size_t size;
	struct custode_event *ev = make_file_event("/etc/shadow", &size);
	json_t *o = custode_event_to_json(ev, size, BOOT_TO_WALL);
	char line[512];
	int n;

	cr_assert_not_null(o);
	n = custode_event_format(o, line, sizeof(line));
	cr_assert_eq(n, (int)strlen(line));
	cr_assert_not_null(strstr(line, "2026-01-01T00:00:00.123456Z"), "%s", line);
	cr_assert_not_null(strstr(line, "file.read.denied"), "%s", line);
	cr_assert_not_null(strstr(line, "path=/etc/shadow"), "%s", line);
	cr_assert_not_null(strstr(line, "run=0123456789abcdef"), "%s", line);
	cr_assert_not_null(strstr(line, "pid=1200"), "%s", line); /* the process, not the thread */
	cr_assert_not_null(strstr(line, "comm=cat"), "%s", line);
	cr_assert_not_null(strstr(line, "file_open"), "%s", line);
	cr_assert_not_null(strstr(line, "access=read,write"), "%s", line);
	cr_assert_null(strstr(line, "(audit)"), "%s", line);
	json_decref(o);

	ev->flags = 0;
	o = custode_event_to_json(ev, size, BOOT_TO_WALL);
	custode_event_format(o, line, sizeof(line));
	cr_assert_not_null(strstr(line, "(audit)"), "%s", line);
	json_decref(o);
	free(ev);
}

Test(events, format_without_path_or_access)
{
	size_t size;
	struct custode_event *ev = make_event(NULL, 0, &size);
	json_t *o;
	char line[512];

	ev->access = 0;
	ev->reason = CUSTODE_REASON_RUN_CANCELLED;
	o = custode_event_to_json(ev, size, BOOT_TO_WALL);
	cr_assert_not_null(o);
	custode_event_format(o, line, sizeof(line));
	cr_assert_not_null(strstr(line, "run.cancelled"), "%s", line);
	cr_assert_null(strstr(line, "path="), "%s", line);
	cr_assert_null(strstr(line, "access="), "%s", line);
	json_decref(o);
	free(ev);
}

Test(events, format_truncates_within_the_buffer)
{
	size_t size;
	struct custode_event *ev = make_file_event("/etc/shadow", &size);
	json_t *o = custode_event_to_json(ev, size, BOOT_TO_WALL);
	char full[512], *small = malloc(20);
	int n;

	n = custode_event_format(o, full, sizeof(full));
	cr_assert_eq(custode_event_format(o, small, 20), n); /* snprintf: the length it wanted */
	cr_assert_eq(strlen(small), 19);
	cr_assert_eq(strncmp(small, full, 19), 0);
	free(small);
	json_decref(o);
	free(ev);
}

/* ---- version 1 records and throttle records ---- */

static void set_u16(unsigned char *rec, size_t off, uint16_t v)
{
	memcpy(rec + off, &v, sizeof(v));
}

Test(events, version_1_record_read_with_its_own_layout)
{
	/* a v1 record: the 120-byte head, then the path (no exe / policy_version fields) */
	size_t size, n;
	struct custode_event *ev = make_file_event("/etc/shadow", &size);
	unsigned char *v1;
	json_t *o, *file;

	n = CUSTODE_EVENT_V1_SIZE + sizeof("/etc/shadow");
	v1 = malloc(n);
	memcpy(v1, ev, CUSTODE_EVENT_V1_SIZE);
	memcpy(v1 + CUSTODE_EVENT_V1_SIZE, "/etc/shadow", sizeof("/etc/shadow"));
	set_u16(v1, offsetof(struct custode_event, version), 1);
	set_u16(v1, offsetof(struct custode_event, size), (uint16_t)n);
	o = custode_event_to_json(v1, n, BOOT_TO_WALL);
	cr_assert_not_null(o);
	cr_assert_eq(get_int(o, "version"), 1);
	cr_assert_null(json_object_get(o, "exe"), "v1 has no executable identity");
	cr_assert_null(json_object_get(o, "policy"), "v1 has no policy version");
	file = json_object_get(o, "file");
	cr_assert_str_eq(get_str(file, "path"), "/etc/shadow");
	json_decref(o);
	/* a size below the v1 head is refused */
	set_u16(v1, offsetof(struct custode_event, size), (uint16_t)(CUSTODE_EVENT_V1_SIZE - 1));
	cr_assert_null(custode_event_to_json(v1, n, 0));
	free(v1);
	free(ev);
}

/* The policy version is 64 bits since record v3: 2^32+1 is not 1 (issue 16). */
Test(events, policy_version_64_bits)
{
	size_t size;
	struct custode_event *ev = make_event(NULL, 0, &size);
	json_t *o;

	ev->policy_version = 4294967297ull;
	o = custode_event_to_json(ev, size, BOOT_TO_WALL);
	cr_assert_not_null(o);
	cr_expect_eq(get_int(json_object_get(o, "policy"), "version"), 4294967297LL);
	json_decref(o);
	free(ev);
}

/* A v2 record held a __u32 policy version and 4 bytes of padding: the padding is not read. */
Test(events, version_2_record_policy_version_is_32_bits)
{
	size_t size;
	struct custode_event *ev = make_event(NULL, 0, &size);
	unsigned char *rec = (unsigned char *)ev;
	uint32_t v = 9, pad = 0xffffffffu;
	json_t *o;

	ev->version = 2;
	memcpy(rec + offsetof(struct custode_event, policy_version), &v, sizeof(v));
	memcpy(rec + offsetof(struct custode_event, policy_version) + sizeof(v), &pad, sizeof(pad));
	o = custode_event_to_json(ev, size, BOOT_TO_WALL);
	cr_assert_not_null(o, "a v2 record is read");
	cr_expect_eq(get_int(o, "version"), 2);
	cr_expect_eq(get_int(json_object_get(o, "policy"), "version"), 9);
	json_decref(o);
	free(ev);
}

Test(events, throttle_record)
{
	size_t size;
	struct custode_event *ev = make_event(NULL, 0, &size);
	json_t *o, *t;

	ev->flags = CUSTODE_EVENT_ENFORCED | CUSTODE_EVENT_THROTTLE;
	ev->object = CUSTODE_OBJECT_THROTTLE;
	memset(&ev->obj, 0, sizeof(ev->obj));
	ev->obj.throttle.count = 999900;
	ev->obj.throttle.total = 1999800;
	ev->obj.throttle.since_ns = BOOT_NS - 10000000000LL;
	ev->obj.throttle.run_cgid = 4242;
	o = custode_event_to_json(ev, size, BOOT_TO_WALL);
	cr_assert_not_null(o);
	cr_assert_str_eq(get_str(o, "type"), "throttle");
	cr_assert_str_eq(get_str(o, "reason"), "file.read.denied");
	cr_assert_str_eq(get_str(o, "run_id"), "0123456789abcdef");
	cr_assert_null(json_object_get(o, "file"), "a throttle record has no object of its own");
	cr_assert_null(json_object_get(o, "pid"));
	t = json_object_get(o, "throttle");
	cr_assert(json_is_object(t));
	cr_assert_eq(get_int(t, "count"), 999900);
	cr_assert_eq(get_int(t, "total"), 1999800);
	cr_assert_eq(get_int(t, "run_cgid"), 4242);
	cr_assert_str_eq(get_str(t, "since"), "2025-12-31T23:59:50.123456Z");
	json_decref(o);

	/* the flag without the object kind (or the reverse) is not a record custode writes */
	ev->object = CUSTODE_OBJECT_FILE;
	cr_assert_null(custode_event_to_json(ev, size, BOOT_TO_WALL));
	free(ev);
}

Test(events, format_escapes_control_characters)
{
	/* a newline in a file name (or a comm set with prctl) must not forge a second log line */
	size_t size;
	struct custode_event *ev = make_file_event("/tmp/x\n2026-01-01T00:00:00.000000Z run=0 forged\\", &size);
	json_t *o;
	char line[1024];

	memcpy(ev->comm, "a\tb\x1b[0m", sizeof("a\tb\x1b[0m"));
	o = custode_event_to_json(ev, size, BOOT_TO_WALL);
	cr_assert_not_null(o);
	custode_event_format(o, line, sizeof(line));
	cr_assert_null(strchr(line, '\n'), "%s", line);
	cr_assert_null(strchr(line, '\t'), "%s", line);
	cr_assert_null(strchr(line, '\x1b'), "%s", line);
	cr_assert_not_null(strstr(line, "path=/tmp/x\\x0a2026-01-01"), "%s", line);
	cr_assert_not_null(strstr(line, "forged\\x5c"), "a backslash is escaped too: %s", line);
	cr_assert_not_null(strstr(line, "comm=a\\x09b\\x1b[0m"), "%s", line);
	json_decref(o);
	free(ev);
}

Test(events, time_parse_range)
{
	int64_t ns = 0;

	cr_assert_eq(custode_time_parse_ns("2026-01-01T00:00:00.5Z", &ns), 0);
	cr_assert_eq(ns, WALL_2026 * 1000000000LL + 500000000LL);
	cr_assert_eq(custode_time_parse_ns("2262-01-01T00:00:00Z", &ns), 0);
	cr_assert_lt(custode_time_parse_ns("2263-01-01T00:00:00Z", &ns), 0, "past int64 nanoseconds");
	cr_assert_lt(custode_time_parse_ns("9999-12-31T23:59:59Z", &ns), 0);
	cr_assert_lt(custode_time_parse_ns("1600-01-01T00:00:00Z", &ns), 0);
	cr_assert_eq(custode_time_parse_ns("1970-01-01T00:00:00Z", &ns), 0);
	cr_assert_eq(ns, 0);
}

Test(events, format_dns_record)
{
	json_t *o = json_loads("{\"version\":2,\"type\":\"dns\",\"source\":\"resolver\","
			       "\"time\":\"2026-01-01T00:00:00.000000Z\",\"run_id\":\"0123456789abcdef\","
			       "\"policy\":{\"name\":\"builtin/net\"},\"reason\":\"dns.name.denied\",\"enforced\":true,"
			       "\"dns\":{\"name\":\"evil\\ntest\",\"qtype\":\"AAAA\",\"proto\":\"udp\","
			       "\"decision\":\"denied\",\"rcode\":5,\"addrs\":[],\"dropped\":0}}",
			       0, NULL);
	char line[512];

	cr_assert_not_null(o);
	custode_event_format(o, line, sizeof(line));
	cr_assert_str_eq(line, "2026-01-01T00:00:00.000000Z run=0123456789abcdef policy=builtin/net dns "
			       "dns.name.denied denied evil\\x0atest/AAAA");
	json_decref(o);
}
