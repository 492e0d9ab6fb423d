// SPDX-License-Identifier: Apache-2.0
/* custode events --run ID --reason CODE --since T: parsing and matching (pure logic). */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/time.h"
#include "events/events.h"
#include "state/runstate.h"
#include "util/reasons.h"

int custode_event_since_parse(const char *s, int64_t now_wall_ns, int64_t *out_wall_ns)
{
	int64_t v, secs;

	if (!s || !*s)
		return -EINVAL;
	if (s[0] == '@') {
		char *end;
		long long n;

		if (s[1] < '0' || s[1] > '9')
			return -EINVAL;
		errno = 0;
		n = strtoll(s + 1, &end, 10);
		if (errno || *end || n < 0 || n > INT64_MAX / 1000000000LL) /* nanoseconds must fit */
			return -EINVAL;
		*out_wall_ns = (int64_t)n * 1000000000LL;
		return 0;
	}
	if (strchr(s, 'T')) {
		long year = strtol(s, NULL, 10);

		/* only years whose nanoseconds fit int64 (1677-09-21 .. 2262-04-11), or sec * 1e9 overflows */
		if (year < 1678 || year > 2261 || custode_time_parse_ns(s, &v) < 0)
			return -EINVAL;
		*out_wall_ns = v;
		return 0;
	}
	if (custode_duration_parse(s, &secs) < 0)
		return -EINVAL;
	*out_wall_ns = now_wall_ns - secs * 1000000000LL;
	return 0;
}

int custode_event_reason_check(const char *s)
{
	if (!s || !*s || strlen(s) >= sizeof(((struct custode_event_filter *)0)->reason))
		return -EINVAL;
	if (!strchr(s, '*') && !strchr(s, '?') && !strchr(s, '['))
		return custode_reason_from_name(s) >= 0 ? 0 : -EINVAL;
	/* a pattern must be able to match something: a typo is an error, not an empty stream */
	for (int r = 0; r < 1024; r++) {
		const char *name = custode_reason_name(r);
		if (name && fnmatch(s, name, 0) == 0)
			return 0;
	}
	return -EINVAL;
}

bool custode_event_filter_match_meta(const struct custode_event_filter *f, __u64 run_id, const char *reason,
				     int64_t wall_ns)
{
	if (!f)
		return true;
	if (f->has_run && run_id != f->run_id)
		return false;
	if (f->reason[0] && (!reason || fnmatch(f->reason, reason, 0) != 0))
		return false;
	if (f->has_since && (!wall_ns || wall_ns < f->since_wall_ns))
		return false;
	return true;
}

bool custode_event_filter_match(const struct custode_event_filter *f, const json_t *ev)
{
	if (!f)
		return true;
	if (f->has_run) {
		const char *rid = json_string_value(json_object_get(ev, "run_id"));
		__u64 id;

		if (!rid || custode_run_id_parse(rid, &id) < 0 || id != f->run_id)
			return false;
	}
	if (f->reason[0]) {
		const char *r = json_string_value(json_object_get(ev, "reason"));

		if (!r || fnmatch(f->reason, r, 0) != 0)
			return false;
	}
	if (f->has_since) {
		const char *t = json_string_value(json_object_get(ev, "time"));
		int64_t when;

		if (!t || custode_time_parse_ns(t, &when) < 0 || when < f->since_wall_ns)
			return false;
	}
	return true;
}

json_t *custode_event_filter_to_json(const struct custode_event_filter *f)
{
	json_t *o = json_object();
	char hex[17];

	if (f->has_run) {
		custode_run_id_format(f->run_id, hex);
		json_object_set_new(o, "run", json_string(hex));
	}
	if (f->reason[0])
		json_object_set_new(o, "reason", json_string(f->reason));
	if (f->has_since)
		json_object_set_new(o, "since_ns", json_integer(f->since_wall_ns));
	return o;
}

int custode_event_filter_from_json(const json_t *o, struct custode_event_filter *f)
{
	struct custode_event_filter tmp;
	json_t *v;

	memset(&tmp, 0, sizeof(tmp));
	if ((v = json_object_get(o, "run"))) {
		if (!json_is_string(v) || custode_run_id_parse(json_string_value(v), &tmp.run_id) < 0)
			return -EINVAL;
		tmp.has_run = true;
	}
	if ((v = json_object_get(o, "reason"))) {
		if (!json_is_string(v) || custode_event_reason_check(json_string_value(v)) < 0)
			return -EINVAL;
		snprintf(tmp.reason, sizeof(tmp.reason), "%s", json_string_value(v));
	}
	if ((v = json_object_get(o, "since_ns"))) {
		if (!json_is_integer(v))
			return -EINVAL;
		tmp.since_wall_ns = json_integer_value(v);
		tmp.has_since = true;
	}
	*f = tmp;
	return 0;
}
