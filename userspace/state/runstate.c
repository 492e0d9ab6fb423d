// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>

#include "state/runstate.h"
#include "state/state.h"
#include "util/fsutil.h"

int custode_runstate_write(const struct custode_runstate *st)
{
	char path[PATH_MAX], hex[17];
	json_t *o;
	char *text;
	int err;

	custode_run_id_format(st->run_id, hex);
	o = json_pack("{s:s, s:I, s:i, s:i, s:I, s:s, s:s, s:s, s:s}", "run_id", hex, "cgroup_id",
		      (json_int_t)st->cgroup_id, "ruleset", (int)st->ruleset, "launcher_pid", st->launcher_pid,
		      "started", (json_int_t)st->started, "cgroup", st->cgroup, "tmp", st->tmp, "workspace",
		      st->workspace, "policy", st->policy);
	if (!o)
		return -ENOMEM;
	json_object_set_new(o, "source", json_string(st->source));
	{
		json_t *a = json_array();
		for (int i = 0; i < st->n_allows && i < CUSTODE_RUN_MAX_ALLOWS; i++)
			json_array_append_new(a, json_string(st->allows[i]));
		json_object_set_new(o, "allows", a);
	}
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!text)
		return -ENOMEM;
	custode_state_path(st->run_id, CUSTODE_STATE_RUN, path, sizeof(path));
	err = custode_write_file_volatile(path, text, strlen(text), 0600);
	free(text);
	return err;
}

static int copy_str(json_t *o, const char *key, char *out, size_t len)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_string(v) || strlen(json_string_value(v)) >= len)
		return -EINVAL;
	strcpy(out, json_string_value(v));
	return 0;
}

int custode_runstate_parse(const char *text, struct custode_runstate *st)
{
	struct custode_runstate tmp;
	json_t *o, *v;
	char hex[32];
	int err = -EINVAL;

	memset(&tmp, 0, sizeof(tmp));
	o = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(o))
		goto out;
	if (copy_str(o, "run_id", hex, sizeof(hex)) || custode_run_id_parse(hex, &tmp.run_id))
		goto out;
	if (!json_is_integer(v = json_object_get(o, "cgroup_id")) || json_integer_value(v) <= 0)
		goto out;
	tmp.cgroup_id = (__u64)json_integer_value(v);
	if (!json_is_integer(v = json_object_get(o, "ruleset")) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > UINT32_MAX)
		goto out;
	tmp.ruleset = (__u32)json_integer_value(v);
	if (!json_is_integer(v = json_object_get(o, "launcher_pid")) || json_integer_value(v) <= 0 ||
	    json_integer_value(v) > INT32_MAX)
		goto out;
	tmp.launcher_pid = (int)json_integer_value(v);
	if (!json_is_integer(v = json_object_get(o, "started")))
		goto out;
	tmp.started = json_integer_value(v);
	if (copy_str(o, "cgroup", tmp.cgroup, sizeof(tmp.cgroup)) || copy_str(o, "tmp", tmp.tmp, sizeof(tmp.tmp)) ||
	    copy_str(o, "workspace", tmp.workspace, sizeof(tmp.workspace)) ||
	    copy_str(o, "policy", tmp.policy, sizeof(tmp.policy)))
		goto out;
	/* optional (state files of older versions lack them) */
	if (json_object_get(o, "source") && copy_str(o, "source", tmp.source, sizeof(tmp.source)))
		goto out;
	if ((v = json_object_get(o, "allows"))) {
		size_t i;
		json_t *e;

		if (!json_is_array(v) || json_array_size(v) > CUSTODE_RUN_MAX_ALLOWS)
			goto out;
		json_array_foreach(v, i, e) {
			if (!json_is_string(e) || strlen(json_string_value(e)) >= sizeof(tmp.allows[0]))
				goto out;
			strcpy(tmp.allows[i], json_string_value(e));
			tmp.n_allows++;
		}
	}
	*st = tmp;
	err = 0;
out:
	json_decref(o);
	return err;
}

int custode_runstate_read(__u64 run_id, struct custode_runstate *st)
{
	char path[PATH_MAX], *text = NULL;
	int err;

	custode_state_path(run_id, CUSTODE_STATE_RUN, path, sizeof(path));
	err = custode_read_file(path, 1 << 20, &text, NULL);
	if (err)
		return err;
	err = custode_runstate_parse(text, st);
	free(text);
	return err;
}

void custode_runstate_remove(__u64 run_id)
{
	char path[PATH_MAX];

	custode_state_path(run_id, CUSTODE_STATE_RUN, path, sizeof(path));
	unlink(path);
	custode_state_path(run_id, CUSTODE_STATE_LOCK, path, sizeof(path));
	unlink(path);
}

void custode_run_tmp_path(__u64 run_id, char *buf, size_t len)
{
	char base[PATH_MAX], hex[17];

	if (!realpath("/tmp", base))
		snprintf(base, sizeof(base), "/tmp");
	custode_run_id_format(run_id, hex);
	snprintf(buf, len, "%s/custode-%s", base, hex);
}
