// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>

#include "cli/output.h"

int custode_print_document(const json_t *doc, FILE *f)
{
	if (json_dumpf(doc, f, JSON_COMPACT) || fputc('\n', f) == EOF)
		return -EIO;
	return 0;
}

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "-";
}

static long long num(const json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

/* ["file","egress"] as "file, egress"; "none" when empty. */
static void print_list(const json_t *a, FILE *f)
{
	const json_t *v;
	size_t i;

	if (!json_array_size(a))
		fputs("none", f);
	json_array_foreach(a, i, v)
		fprintf(f, "%s%s", i ? ", " : "", json_string_value(v) ? json_string_value(v) : "?");
	fputc('\n', f);
}

void custode_print_engine_status(const json_t *st, FILE *f)
{
	const json_t *entries = json_object_get(st, "entries"), *v;
	const char *name;

	fprintf(f, "%-16s %s\n", "pin root", str(st, "pin_root"));
	fprintf(f, "%-16s %s\n", "loaded at", str(st, "loaded_at_time"));
	fprintf(f, "%-16s %lld\n", "abi version", num(st, "abi_version"));
	fprintf(f, "%-16s ", "classes");
	print_list(json_object_get(st, "classes"), f);
	fprintf(f, "%-16s %s (id %lld)\n", "cgroup root", str(st, "cgroup_root"), num(st, "cgroup_root_id"));
	fprintf(f, "%-16s %lld\n", "runs", num(st, "runs"));
	fprintf(f, "%-16s %lld (%lld dropped)\n", "events", num(st, "events"), num(st, "events_dropped"));
	fprintf(f, "%-16s %s\n", "run cache", str(st, "run_cache"));
	if (json_is_object(json_object_get(st, "decisions"))) {
		const json_t *d = json_object_get(st, "decisions");

		fprintf(f, "%-16s %lld slots shared by the runs (%lld KiB), %lld used (%lld of them by ended runs)\n",
			"decisions", num(d, "slots"), num(d, "bytes") / 1024, num(d, "slots_used"),
			num(d, "slots_of_ended_runs"));
	}
	if (json_is_integer(json_object_get(st, "restricting_identities")))
		fprintf(f, "%-16s %lld (counted in custode_identity_filter)\n", "restrictions",
			num(st, "restricting_identities"));
	if (json_is_object(json_object_get(st, "scratch"))) {
		const json_t *sc = json_object_get(st, "scratch"), *c;
		size_t i;

		fprintf(f, "%-16s claims ", "path buffers");
		json_array_foreach(json_object_get(sc, "claims"), i, c)
			fprintf(f, "%s%lld", i ? "/" : "", (long long)json_integer_value(c));
		fprintf(f, " by slot; %lld steals, %lld refused\n", num(sc, "steals"), num(sc, "lost"));
	}
	if (json_is_integer(json_object_get(st, "newcomers")))
		fprintf(f, "%-16s %lld (processes of containers in set-up below attached cgroups)\n", "newcomers",
			num(st, "newcomers"));
	{
		const json_t *adm = json_object_get(st, "admitted"), *a;
		size_t i;

		fprintf(f, "%-16s %zu\n", "admitted", json_array_size(adm));
		json_array_foreach(adm, i, a)
			fprintf(f, "  dev %lld:%lld ino %lld, ABI %lld, %s\n", num(a, "dev") >> 20, num(a, "dev") & 0xfffff,
				num(a, "ino"), num(a, "abi_version"), str(a, "admitted_at"));
	}
	fputs("map entries\n", f);
	json_object_foreach((json_t *)entries, name, v)
		fprintf(f, "  %-30s %lld\n", name, (long long)json_integer_value(v));
}

json_t *custode_profile_row(const char *name, const char *policy, unsigned long long version, size_t rules)
{
	return json_pack("{s:s, s:s, s:I, s:I}", "name", name, "policy", policy, "version", (json_int_t)version,
			 "rules", (json_int_t)rules);
}

void custode_print_profiles(const json_t *rows, FILE *f)
{
	const json_t *r;
	size_t i;

	json_array_foreach(rows, i, r)
		fprintf(f, "%-16s %s v%lld, %lld filesystem rules\n", str(r, "name"), str(r, "policy"), num(r, "version"),
			num(r, "rules"));
}
