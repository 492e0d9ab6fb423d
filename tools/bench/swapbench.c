// SPDX-License-Identifier: Apache-2.0
/*
 * swapbench [ROUNDS] [RULES] [OTHERS] [OTHER_RULES]: a live policy swap
 * through the one implementation the daemon and attach use (run/program.h),
 * natively (the egress class loads here; every engine object holds the file
 * rule maps too, so file rules are programmed and deleted as on any host).
 *
 * OTHERS runs are registered first, each with OTHER_RULES file rules and as
 * many egress rules, so the maps hold what a busy host's do (a deletion that
 * scans the maps pays for them). Then, per round, a subject run of RULES file
 * rules + RULES egress rules (RULES/24 CIDR rules on one port each) is
 * swapped to a new version with as many different rules:
 *   compile  the policy's text (made beforehand, as a bundle's) parsed and
 *            compiled to a rule set (userspace only)
 *   add      the new rules into the maps (beside the old: nothing changes yet)
 *   flip     the one update of the run's value: the new policy is in force
 *   retire   the grace period (membarrier) and the deletion of the old rules
 * "In force" (compile + add + flip) is what a user waits for; retire follows.
 * "floor": the kernel's part of "add" — the same keys into fresh, empty maps
 * of the same definitions (insert_floor), so no userspace could add faster.
 * The runs are registered under empty cgroups made for the bench
 * (custode-swapbench/rN below the cgroup v2 mount: nothing runs in them, and
 * since they exist no gc reaps their runs): the maps are what is measured.
 * Everything is removed at the end.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <limits.h>
#include <stdbool.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>

#include "cgroup/cgroup.h"
#include "custode/abi.h"
#include "engine/engine.h"
#include "run/program.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The text of a policy of n directory rules under /srv/bench/<tag> and n egress CIDRs (tag picks distinct ones). */
static char *policy_text(int tag, int n, int version)
{
	size_t cap = (size_t)n * 160 + 512, len = 0;
	char *t = malloc(cap);

	if (!t)
		return NULL;
	len += (size_t)snprintf(t + len, cap - len,
				"{\"schema\":\"custode.policy/v1\",\"name\":\"bench/swap%d\",\"version\":%d,\"content\":{"
				"\"filesystem\":[",
				tag, version);
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(t + len, cap - len, "%s{\"path\":\"/srv/bench/t%d/v%d/d%d\",\"allow\":[\"read\"]}",
					i ? "," : "", tag, version, i);
	len += (size_t)snprintf(t + len, cap - len, "],\"network\":{\"egress\":[");
	for (int i = 0; i < n; i++) {
		int r = (tag * 7919 + version * 104729 + i) % 4000000;

		len += (size_t)snprintf(t + len, cap - len, "%s{\"cidr\":\"%d.%d.%d.0/24\",\"ports\":[%d]}", i ? "," : "",
					11 + r / 65536, (r / 256) % 256, r % 256, 1000 + version % 50000);
	}
	snprintf(t + len, cap - len, "]}}}");
	return t;
}

/* The policy parsed from its text (which is freed). */
static struct custode_policy *parse_policy(char *t)
{
	struct custode_policy *p = NULL;
	struct custode_refusal why = {0};

	if (t && custode_policy_parse(t, strlen(t), &p, &why) < 0) {
		fprintf(stderr, "swapbench: policy: %s\n", why.detail);
		p = NULL;
	}
	free(t);
	return p;
}

static struct custode_policy *make_policy(int tag, int n, int version)
{
	return parse_policy(policy_text(tag, n, version));
}

/*
 * The kernel's floor under "add": the same keys inserted (batch where the map
 * has it, else one call a key) into a fresh, empty map of the same definition
 * as `like` — no other run's rules in it, so a lower bound on what any
 * userspace could make of the insertion. ms, or -1.
 */
static double insert_floor(int like, const void *keys, const void *vals, size_t n, size_t ksz, size_t vsz)
{
	LIBBPF_OPTS(bpf_map_create_opts, copts);
	LIBBPF_OPTS(bpf_map_batch_opts, bopts, .elem_flags = BPF_ANY);
	struct bpf_map_info info;
	__u32 len = sizeof(info), count = (__u32)n;
	double t0, t;
	int fd;

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(like, &info, &len) < 0)
		return -1;
	copts.map_flags = info.map_flags;
	fd = bpf_map_create(info.type, "swapbench_floor", info.key_size, info.value_size, info.max_entries, &copts);
	if (fd < 0)
		return -1;
	t0 = now_ms();
	if (n && bpf_map_update_batch(fd, keys, vals, &count, &bopts) < 0) {
		for (size_t i = 0; i < n; i++)
			if (bpf_map_update_elem(fd, (const char *)keys + i * ksz, (const char *)vals + i * vsz, BPF_ANY) < 0) {
				close(fd);
				return -1;
			}
	}
	t = now_ms() - t0;
	close(fd);
	return t;
}

/* insert_floor of a compiled file + egress rule set: the rule maps' keys as custode_engine_add_* make them. */
static double rules_floor(struct custode_engine *e, const struct custode_program *pr)
{
	struct custode_path_key *keys;
	struct custode_path_rule *vals;
	double a = -1, b;
	size_t n;

	if (!custode_ruleset_entries(&pr->fs, pr->ruleset, &keys, &vals, &n)) {
		a = insert_floor(e->rules_fd, keys, vals, n, sizeof(*keys), sizeof(*vals));
		free(keys);
		free(vals);
	}
	b = insert_floor(e->net_rules_fd, pr->net.keys, pr->net.vals, pr->net.n, sizeof(*pr->net.keys),
			 sizeof(*pr->net.vals));
	return a < 0 || b < 0 ? -1 : a + b;
}

struct subject {
	struct custode_program pr;
	struct custode_policy *policy;
};

static int program(struct custode_engine *e, struct subject *s, int tag, int n, int version, __u64 run_id)
{
	static const struct custode_bindings b = {.workspace = "/srv/bench/ws", .tmp = "/srv/bench/tmp"};
	struct custode_refusal why = {0};

	memset(s, 0, sizeof(*s));
	if (!(s->policy = make_policy(tag, n, version)))
		return -1;
	s->pr.policy = s->policy;
	s->pr.bindings = b;
	s->pr.run_id = run_id;
	if (custode_program_ruleset(e, &s->pr, &why) < 0 || custode_program_rules(e, &s->pr, &why) < 0) {
		fprintf(stderr, "swapbench: program: %s\n", why.detail);
		return -1;
	}
	return 0;
}

static void drop(struct custode_engine *e, struct subject *s)
{
	custode_program_undo(e, &s->pr);
	custode_program_free(&s->pr);
	custode_policy_free(s->policy);
	s->policy = NULL;
}

static char cg_mount[PATH_MAX];

/* An empty cgroup for run i (made if needed); its id, or 0. With remove: rmdir it. */
static __u64 bench_cgroup(int i, bool remove)
{
	char path[PATH_MAX + 64];
	__u64 id = 0;

	snprintf(path, sizeof(path), "%s/custode-swapbench/r%d", cg_mount, i);
	if (remove) {
		rmdir(path);
		return 0;
	}
	if ((mkdir(path, 0755) < 0 && errno != EEXIST) || custode_cgroup_id(path, &id) < 0) {
		fprintf(stderr, "swapbench: cgroup %s: %s\n", path, strerror(errno));
		return 0;
	}
	return id;
}

/* This process's resident set, in KiB (VmRSS), or -1. */
static long rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void show(const char *what, double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	printf("  %-9s %9.2f ms  [%.2f-%.2f]\n", what, v[n / 2], v[0], v[n - 1]);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5, rules = argc > 2 ? atoi(argv[2]) : 10000;
	int others = argc > 3 ? atoi(argv[3]) : 4, other_rules = argc > 4 ? atoi(argv[4]) : 2000;
	__u64 base_cgid, *other_cgid;
	char top[PATH_MAX + 32];
	struct custode_engine e;
	struct custode_refusal why = {0};
	struct subject *o = calloc((size_t)others + 1, sizeof(*o)), cur, next;
	double t_compile[64], t_add[64], t_flip[64], t_retire[64], t_force[64];
	struct custode_run run;
	long rss_before, rss_after, rss_trimmed;
	int err = 1;

	memset(&e, 0, sizeof(e));
	memset(&cur, 0, sizeof(cur));
	if (!o || rounds < 1 || rounds > 64 || rules < 1 || others < 0) {
		fprintf(stderr, "usage: swapbench [ROUNDS<=64] [RULES] [OTHERS] [OTHER_RULES]\n");
		return 2;
	}
	if (custode_cgroup2_mount(cg_mount, sizeof(cg_mount)) < 0) {
		fprintf(stderr, "swapbench: no cgroup v2 mount\n");
		return 1;
	}
	snprintf(top, sizeof(top), "%s/custode-swapbench", cg_mount);
	mkdir(top, 0755);
	other_cgid = calloc((size_t)others + 1, sizeof(*other_cgid));
	if (!other_cgid || !(base_cgid = bench_cgroup(0, false)))
		return 1;
	for (int i = 0; i < others; i++)
		if (!(other_cgid[i] = bench_cgroup(i + 1, false)))
			return 1;
	if (custode_host_prepare(&e, &why) < 0 ||
	    custode_engine_open(&e, CUSTODE_CLASS_EGRESS, CUSTODE_ENGINE_LOAD, &why) < 0) {
		fprintf(stderr, "swapbench: engine: %s\n", why.detail);
		return 1;
	}
	for (int i = 0; i < others; i++)
		if (program(&e, &o[i], 100 + i, other_rules, 1, 0x5000 + (__u64)i) < 0 ||
		    custode_program_register(&e, &o[i].pr, other_cgid[i], 0, NULL, &why) < 0)
			goto refused;
	if (program(&e, &cur, 1, rules, 1, 0x4000) < 0 ||
	    custode_program_register(&e, &cur.pr, base_cgid, 0, &run, &why) < 0)
		goto refused;
	rss_before = rss_kib();
	for (int r = 0; r < rounds; r++) {
		/* the text is the bundle's, made before the clock starts: a swap parses it, never writes it */
		char *text = policy_text(1, rules, r + 2);
		double t0 = now_ms(), t1, t2, t3, t4;
		struct custode_policy *p = parse_policy(text);
		struct custode_refusal w = {0};

		if (!p)
			goto out;
		memset(&next, 0, sizeof(next));
		next.policy = p;
		next.pr.policy = p;
		next.pr.bindings = cur.pr.bindings;
		next.pr.run_id = 0x4000;
		if (custode_program_ruleset(&e, &next.pr, &w) < 0 ||
		    custode_policy_compile_fs(p, &next.pr.bindings, next.pr.ruleset, &next.pr.fs, &w) < 0 ||
		    custode_policy_compile_net(p, NULL, 0, next.pr.ruleset, &next.pr.net, &w) < 0) {
			fprintf(stderr, "swapbench: compile: %s\n", w.detail);
			goto out;
		}
		t1 = now_ms();
		next.pr.rules_added = true;
		if (custode_engine_add_rules(&e, next.pr.ruleset, &next.pr.fs) < 0 ||
		    custode_engine_add_net(&e, &next.pr.net) < 0) {
			fprintf(stderr, "swapbench: add: %s\n", strerror(errno));
			goto out;
		}
		t2 = now_ms();
		{
			struct custode_run n;
			int rc = custode_engine_get_run(&e, base_cgid, &run);

			n = run;
			n.ruleset = next.pr.ruleset;
			if (rc < 0 || (rc = custode_engine_set_run(&e, base_cgid, &n)) < 0) {
				fprintf(stderr, "swapbench: flip: %s\n", strerror(-rc));
				goto out;
			}
		}
		t3 = now_ms();
		custode_engine_quiesce();
		custode_engine_delete_ruleset(&e, run.ruleset);
		custode_engine_delete_net_ruleset(&e, run.ruleset);
		t4 = now_ms();
		/* the subject now runs `next`; the old one's rules are gone */
		cur.pr.rules_added = false;
		cur.pr.registered = false; /* the run stays: it is `next`'s now */
		drop(&e, &cur);
		cur = next;
		cur.pr.registered = true;
		cur.pr.cgroup_id = base_cgid;
		t_compile[r] = t1 - t0;
		t_add[r] = t2 - t1;
		t_flip[r] = t3 - t2;
		t_retire[r] = t4 - t3;
		t_force[r] = t3 - t0;
	}
	{
		double fl[64];

		for (int r = 0; r < rounds; r++)
			fl[r] = rules_floor(&e, &cur.pr);
		show("floor", fl, rounds);
	}
	rss_after = rss_kib();
	malloc_trim(0); /* what the daemon does after applying a bundle (daemon/bundles.c) */
	rss_trimmed = rss_kib();
	printf("swap of %d file + %d egress rules, %d other runs of %d + %d present, %d rounds (median [min-max])\n", rules,
	       rules, others, other_rules, other_rules, rounds);
	show("compile", t_compile, rounds);
	show("add", t_add, rounds);
	show("flip", t_flip, rounds);
	show("in force", t_force, rounds);
	show("retire", t_retire, rounds);
	printf("  RSS       %ld KiB before the swaps, %ld after, %ld once the heap is trimmed\n", rss_before, rss_after,
	       rss_trimmed);
	err = 0;
	goto out;
refused:
	fprintf(stderr, "swapbench: %s\n", why.detail[0] ? why.detail : "setup failed");
out:
	if (cur.policy)
		drop(&e, &cur);
	for (int i = 0; i < others; i++)
		if (o[i].policy)
			drop(&e, &o[i]);
	custode_engine_close(&e);
	for (int i = 0; i <= others; i++)
		bench_cgroup(i, true);
	rmdir(top);
	free(other_cgid);
	free(o);
	return err;
}
