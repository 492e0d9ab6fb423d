// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "engine/engine.h"
#include "events/events.h"
#include "policy/policy.h"
#include "run/runstate.h"
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

static void format_time(int64_t wall_ns, char *out, size_t len)
{
	time_t s = (time_t)(wall_ns / 1000000000);
	struct tm tm;

	gmtime_r(&s, &tm);
	snprintf(out, len, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min, tm.tm_sec, (long)((wall_ns % 1000000000) / 1000));
}

json_t *custode_event_to_json(const void *data, size_t size, int64_t boot_to_wall_ns)
{
	const struct custode_event *ev = data;
	char hex[17], when[64], access[64], comm[17];
	const char *reason, *hook;
	json_t *o, *acc;

	if (size < sizeof(*ev) || ev->version != CUSTODE_EVENT_VERSION || ev->size > size || ev->size < sizeof(*ev))
		return NULL;
	reason = custode_reason_name(ev->reason);
	hook = custode_hook_name(ev->hook);
	custode_run_id_format(ev->run_id, hex);
	format_time((int64_t)ev->boot_ns + boot_to_wall_ns, when, sizeof(when));
	memcpy(comm, ev->comm, 16);
	comm[16] = 0;
	o = json_pack("{s:i, s:I, s:s, s:I, s:s, s:I, s:s, s:s, s:b, s:i, s:i, s:i, s:i, s:s, s:i}", "version",
		      ev->version, "seq", (json_int_t)ev->seq, "time", when, "boot_ns", (json_int_t)ev->boot_ns, "run_id",
		      hex, "cgroup_id", (json_int_t)ev->cgroup_id, "hook", hook ? hook : "unknown", "reason",
		      reason ? reason : "unknown", "enforced", (ev->flags & CUSTODE_EVENT_ENFORCED) != 0, "pid",
		      (int)ev->pid, "tgid", (int)ev->tgid, "uid", (int)ev->uid, "gid", (int)ev->gid, "comm", comm,
		      "ruleset", (int)ev->ruleset);
	if (!o)
		return NULL;
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
			size_t max = ev->size - sizeof(*ev);
			size_t n = strnlen(ev->path, f->path_len < max ? f->path_len : max);
			json_object_set_new(fo, "path", json_stringn(ev->path, n));
		}
		json_object_set_new(fo, "path_complete", json_boolean(!(ev->flags & CUSTODE_EVENT_PATH_PARTIAL)));
		json_object_set_new(o, "file", fo);
	}
	return o;
}

int custode_event_format(const json_t *ev, char *out, size_t len)
{
	const json_t *file = json_object_get(ev, "file");
	const json_t *acc = json_object_get(ev, "access");
	char access[64] = "";
	size_t i;
	json_t *a;

	json_array_foreach(acc, i, a) {
		strncat(access, i ? "," : "", sizeof(access) - strlen(access) - 1);
		strncat(access, json_string_value(a), sizeof(access) - strlen(access) - 1);
	}
	return snprintf(out, len, "%s run=%s pid=%d comm=%s %s %s%s%s%s%s%s", json_string_value(json_object_get(ev, "time")),
			json_string_value(json_object_get(ev, "run_id")), (int)json_integer_value(json_object_get(ev, "tgid")),
			json_string_value(json_object_get(ev, "comm")), json_string_value(json_object_get(ev, "hook")),
			json_string_value(json_object_get(ev, "reason")), access[0] ? " access=" : "", access,
			file && json_object_get(file, "path") ? " path=" : "",
			file && json_object_get(file, "path") ? json_string_value(json_object_get(file, "path")) : "",
			json_is_true(json_object_get(ev, "enforced")) ? "" : " (audit)");
}

struct consumer {
	bool json;
	bool filter_run;
	__u64 run_id;
	int64_t boot_to_wall_ns;
	unsigned long bad;
};

static int on_event(void *ctx, void *data, size_t size)
{
	struct consumer *c = ctx;
	const struct custode_event *ev = data;
	json_t *o;

	if (size >= sizeof(*ev) && c->filter_run && ev->run_id != c->run_id)
		return 0;
	o = custode_event_to_json(data, size, c->boot_to_wall_ns);
	if (!o) {
		c->bad++;
		return 0;
	}
	if (c->json) {
		json_dumpf(o, stdout, JSON_COMPACT);
		putchar('\n');
	} else {
		char line[8192];
		custode_event_format(o, line, sizeof(line));
		puts(line);
	}
	json_decref(o);
	return 0;
}

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: custode events [--follow] [--json] [--run ID]\n"
		   "\n"
		   "Print denial records from the engine's ring buffer, oldest first.\n"
		   "Records are consumed: each is printed once, to one reader.\n"
		   "\n"
		   "  --follow   keep reading until interrupted\n"
		   "  --json     one JSON object per line (fields: docs/events.md)\n"
		   "  --run ID   only records of run ID (16 hex digits, as printed by custode run)\n"
		   "  --help     this text\n");
}

int custode_cmd_events(int argc, char **argv)
{
	static const struct option opts[] = {{"follow", no_argument, NULL, 'f'}, {"json", no_argument, NULL, 'j'},
					     {"run", required_argument, NULL, 'r'}, {"help", no_argument, NULL, 'h'},
					     {0}};
	struct custode_refusal why = {0};
	struct custode_engine e;
	struct consumer c = {0};
	struct ring_buffer *rb;
	struct custode_stats stats;
	struct timespec boot, wall;
	bool follow = false;
	int opt, err;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "+fjr:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			follow = true;
			break;
		case 'j':
			c.json = true;
			break;
		case 'r':
			if (custode_run_id_parse(optarg, &c.run_id) < 0) {
				fprintf(stderr, "custode: events: --run: '%s' is not a run id (16 hex digits)\n", optarg);
				return 2;
			}
			c.filter_run = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "custode: events: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if ((err = custode_host_prepare(&e, &why)) || (err = custode_engine_open(&e, 0, 0, &why))) {
		fprintf(stderr, "custode: events: %s: %s\n", custode_reason_name(why.reason), why.detail);
		return 1;
	}
	clock_gettime(CLOCK_BOOTTIME, &boot);
	clock_gettime(CLOCK_REALTIME, &wall);
	c.boot_to_wall_ns = (wall.tv_sec - boot.tv_sec) * 1000000000LL + (wall.tv_nsec - boot.tv_nsec);
	setvbuf(stdout, NULL, _IOLBF, 0);
	rb = ring_buffer__new(e.events_fd, on_event, &c, NULL);
	if (!rb) {
		fprintf(stderr, "custode: events: cannot map the ring buffer: %s\n", strerror(errno));
		custode_engine_close(&e);
		return 1;
	}
	if (follow) {
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
		while (!stop) {
			err = ring_buffer__poll(rb, 500);
			if (err < 0 && err != -EINTR)
				break;
		}
	} else {
		ring_buffer__consume(rb);
	}
	if (c.bad)
		fprintf(stderr, "custode: events: skipped %lu records of an unknown version or size\n", c.bad);
	if (custode_engine_get_stats(&e, &stats) == 0 && stats.events_dropped)
		fprintf(stderr, "custode: events: %llu records were dropped since the engine loaded (ring buffer full)\n",
			(unsigned long long)stats.events_dropped);
	ring_buffer__free(rb);
	custode_engine_close(&e);
	return 0;
}
