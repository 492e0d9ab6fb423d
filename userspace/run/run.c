// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/sched.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "bundle/bundle.h"
#include "cgroup/cgroup.h"
#include "cli/exit.h"
#include "dns/launch.h"
#include "dns/names.h"
#include "dns/resolver.h"
#include "policy/profiles.h"
#include "run/run.h"
#include "bundle/jcs.h"
#include "run/receipt.h"
#include "run/env.h"
#include "run/limits.h"
#include "run/pty.h"
#include "engine/hostaddrs.h"
#include "engine/probe.h"
#include "run/seccomp.h"
#include "run/user.h"
#include "util/fsutil.h"
#include "util/reasons.h"

#define MAX_ALLOWS 256
#define MAX_TRUST 32

struct run_opts {
	const char *profile;
	const char *policy_file;
	const char *bundle;
	const char *trust[MAX_TRUST];
	size_t n_trust;
	struct custode_allow allows[MAX_ALLOWS];
	const char *allow_strs[MAX_ALLOWS];
	size_t n_allows;
	bool profile_set;
	const char *workspace;
	const char *user;
	const char *receipt;
	long timeout_sec;
	bool audit;
	char **argv;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: custode run [--profile NAME | --bundle FILE --trust KEY... | --policy FILE] [--workspace DIR]\n"
		   "                   [--allow ADDR:PORT[/udp]]...\n"
		   "                   [--timeout SEC] [--audit] -- CMD [ARG...]\n"
		   "\n"
		   "Run CMD confined: in a new cgroup registered with the engine, under the\n"
		   "policy of a built-in profile. custode refuses (exit 125) rather than run\n"
		   "anything unenforced.\n"
		   "\n"
		   "  --profile NAME    built-in profile (default: read); see `custode profiles`\n"
		   "  --bundle FILE     a signed policy bundle (DSSE, docs/bundles.md), verified against\n"
		   "  --trust KEY       trusted public key(s) (PEM; repeatable); raises the version floor\n"
		   "                    in " CUSTODE_BUNDLE_STATE_DIR "\n"
		   "  --policy FILE     an unsigned policy document (docs/policy.md) owned by root and\n"
		   "                    writable only by root; fleets use signed bundles instead\n"
		   "  --allow ADDR:PORT[/tcp|/udp]\n"
		   "                    grant egress to a literal address (even a private one);\n"
		   "                    IPv6 as [ADDR]:PORT; repeatable; needs a network section\n"
		   "  --workspace DIR   the run's ${workspace} (default: the current directory);\n"
		   "                    CMD starts there\n"
		   "  --user USER[:GROUP]\n"
		   "                    run CMD as USER (name or uid); default: the sudo caller\n"
		   "                    (SUDO_UID), else the caller, and `nobody` for root. Never\n"
		   "                    root. CMD starts with no_new_privs and no capabilities\n"
		   "  --receipt FILE    write the run's receipt (JSON, docs/receipts.md) to FILE\n"
		   "                    atomically at the end; `-` for stdout\n"
		   "  --timeout SEC     kill the whole run after SEC seconds (exit 124); with the\n"
		   "                    policy's limits.wallSeconds, the shorter wins\n"
		   "  --audit           report decisions without denying (events say enforced=false)\n"
		   "  --help            this text\n"
		   "\n"
		   "CMD gets a cleared environment (the policy's env list, or PATH, LANG, LC_*,\n"
		   "TERM, TZ; HOME and TMPDIR are the run's private tmp), no fd above 2, a seccomp\n"
		   "denylist and the policy's limits (docs/process.md).\n"
		   "\n"
		   "Exit: CMD's status (128+N if killed by signal N); 124 timeout; 125 custode\n"
		   "refused or failed, or the run exceeded limits.outputBytes; 126 CMD cannot be\n"
		   "executed; 127 CMD not found.\n"
		   "Denials are summarised on stderr at exit; `custode events` has the details.\n");
}

static int refuse(const struct custode_refusal *why)
{
	fprintf(stderr, "custode: run: refused: %s: %s\n", custode_reason_name(why->reason), why->detail);
	return EXIT_REFUSED;
}

void custode_denial_summary(const struct custode_counters *c, char *out, size_t len)
{
	__u64 total = 0;
	size_t off;
	const char *sep = ": ";

	for (int i = 0; i < CUSTODE_REASON_KERNEL_MAX; i++)
		total += c->denials[i];
	off = (size_t)snprintf(out, len, "%" PRIu64 " denial%s", (uint64_t)total, total == 1 ? "" : "s");
	for (int i = 0; i < CUSTODE_REASON_KERNEL_MAX && off < len; i++) {
		const char *name = custode_reason_name(i);

		if (!c->denials[i])
			continue;
		off += (size_t)snprintf(out + off, len - off, "%s%s=%" PRIu64, sep, name ? name : "unknown",
					(uint64_t)c->denials[i]);
		sep = ", ";
	}
}

static int64_t read_peak(const char *cgroup, const char *file)
{
	char path[PATH_MAX], *text = NULL, *end;
	long long v;

	snprintf(path, sizeof(path), "%s/%s", cgroup, file);
	if (custode_read_file(path, 64, &text, NULL) < 0)
		return -1;
	v = strtoll(text, &end, 10);
	if (end == text || v < 0)
		v = -1;
	free(text);
	return v;
}

int custode_run_reap(struct custode_engine *e, const struct custode_runstate *st, const struct custode_fs_ruleset *rs,
		     const struct custode_net_ruleset *net, struct custode_counters *counters,
		     struct custode_run_peaks *peaks)
{
	struct custode_run run;
	__u32 ruleset = st->ruleset;
	int err;

	if (peaks)
		peaks->memory = peaks->pids = -1;

	/* From here on every hook denies for this run, so nothing races the kill. */
	if (custode_engine_get_run(e, st->cgroup_id, &run) == 0) {
		ruleset = run.ruleset; /* a policy swap (custode daemon --bundles) may have replaced the launch's */
		run.flags |= CUSTODE_RUN_CANCELLED;
		custode_engine_set_run(e, st->cgroup_id, &run);
	}
	if (access(st->cgroup, F_OK) == 0) {
		custode_cgroup_kill(st->cgroup);
		err = custode_cgroup_wait_empty(st->cgroup, 10000);
		if (err == -ETIMEDOUT)
			return err; /* still registered and cancelled: confined */
		if (peaks) {
			peaks->memory = read_peak(st->cgroup, "memory.peak");
			peaks->pids = read_peak(st->cgroup, "pids.peak");
		}
		err = custode_cgroup_remove(st->cgroup);
		if (err && access(st->cgroup, F_OK) == 0)
			return err;
	}
	if (counters && custode_engine_get_counters(e, st->cgroup_id, counters) < 0)
		memset(counters, 0, sizeof(*counters));
	custode_engine_unregister(e, st->cgroup_id);
	if (rs && ruleset == st->ruleset)
		custode_engine_delete_rules(e, ruleset, rs);
	else
		custode_engine_delete_ruleset(e, ruleset);
	if (net && ruleset == st->ruleset)
		custode_engine_delete_net(e, net);
	else
		custode_engine_delete_net_ruleset(e, ruleset);
	custode_engine_delete_pins(e, st->cgroup_id); /* the resolver's, unknown here: scan */
	if (st->tmp[0])
		custode_rm_rf(st->tmp);
	custode_runstate_remove(st->run_id);
	custode_dns_names_remove(st->run_id);
	return 0;
}

static int parse_args(int argc, char **argv, struct run_opts *o)
{
	static const struct option opts[] = {
		{"profile", required_argument, NULL, 'p'}, {"workspace", required_argument, NULL, 'w'},
		{"timeout", required_argument, NULL, 't'}, {"audit", no_argument, NULL, 'a'},
		{"help", no_argument, NULL, 'h'},
		/* contract options of later issues, refused until implemented */
		{"policy", required_argument, NULL, 'P'}, {"allow", required_argument, NULL, 'A'},
		{"user", required_argument, NULL, 'U'},
		{"bundle", required_argument, NULL, 'B'}, {"trust", required_argument, NULL, 'T'},
		{"receipt", required_argument, NULL, 'R'},
		{0}};
	char *end;
	int c;

	memset(o, 0, sizeof(*o));
	o->profile = "read";
	o->timeout_sec = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			o->profile = optarg;
			o->profile_set = true;
			break;
		case 'w':
			o->workspace = optarg;
			break;
		case 't':
			errno = 0;
			o->timeout_sec = strtol(optarg, &end, 10);
			if (errno || *end || o->timeout_sec <= 0 || o->timeout_sec > 100L * 365 * 86400) {
				fprintf(stderr, "custode: run: --timeout: '%s' is not a positive number of seconds\n",
					optarg);
				return -1;
			}
			break;
		case 'a':
			o->audit = true;
			break;
		case 'h':
			usage(stdout);
			return 1;
		case 'P':
			o->policy_file = optarg;
			break;
		case 'U':
			o->user = optarg;
			break;
		case 'A': {
			struct custode_refusal why;

			if (o->n_allows == MAX_ALLOWS) {
				fprintf(stderr, "custode: run: refused: run.usage: more than %d --allow\n", MAX_ALLOWS);
				return -1;
			}
			o->allow_strs[o->n_allows] = optarg;
			if (custode_allow_parse(optarg, &o->allows[o->n_allows], &why) < 0) {
				fprintf(stderr, "custode: run: refused: %s: %s\n", custode_reason_name(why.reason), why.detail);
				return -1;
			}
			o->n_allows++;
			break;
		}
		case 'B':
			o->bundle = optarg;
			break;
		case 'T':
			if (o->n_trust == MAX_TRUST) {
				fprintf(stderr, "custode: run: refused: run.usage: more than %d --trust\n", MAX_TRUST);
				return -1;
			}
			o->trust[o->n_trust++] = optarg;
			break;
		case 'R':
			o->receipt = optarg;
			break;
		default:
			usage(stderr);
			return -1;
		}
	}
	if ((o->policy_file != NULL) + (o->bundle != NULL) + o->profile_set > 1) {
		fprintf(stderr, "custode: run: refused: run.usage: --profile, --bundle and --policy exclude each other\n");
		return -1;
	}
	if (!!o->bundle != !!o->n_trust) {
		fprintf(stderr, "custode: run: refused: run.usage: --bundle needs --trust KEY (and --trust needs --bundle)\n");
		return -1;
	}
	if (o->receipt && strcmp(o->receipt, "-") != 0) {
		char dir[PATH_MAX], *slash;

		snprintf(dir, sizeof(dir), "%s", o->receipt);
		slash = strrchr(dir, '/');
		if (slash)
			*(slash == dir ? slash + 1 : slash) = 0;
		else
			snprintf(dir, sizeof(dir), ".");
		if (access(dir, W_OK) < 0) {
			fprintf(stderr, "custode: run: refused: run.usage: --receipt %s: directory %s: %s\n", o->receipt,
				dir, strerror(errno));
			return -1;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "custode: run: no command given\n");
		usage(stderr);
		return -1;
	}
	o->argv = argv + optind;
	return 0;
}

struct launch {
	struct custode_engine e;
	struct custode_policy *policy;
	struct custode_fs_ruleset rules;
	struct custode_net_ruleset net;
	struct custode_runstate st;
	struct custode_run_user user;
	const char *policy_source, *policy_ref;
	char policy_digest[80];
	json_t *bundle_json;
	bool registered, rules_added, cgroup_made;
	int lock_fd;
	struct custode_limits_applied limits; /* cgroup limits written (setup) */
	struct custode_seccomp filter;        /* compiled in the launcher, installed by the child */
	struct custode_run_env env;           /* the command's environment */
	int out_pipe[2], err_pipe[2];         /* the command's stdout/stderr, when the output is capped */
	struct custode_pty pty;               /* the run's own terminal, when the caller's fds 0..2 include one */
	struct custode_hostaddr_watch hosts;  /* this namespace's own addresses, kept current (egress runs) */
};

/* A local policy file is trusted like a built-in only if nobody but root could have written it. */
static int read_policy_file(const char *path, char **text, size_t *len, struct custode_refusal *why)
{
	struct stat st;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st) < 0) {
		err = errno;
		if (fd >= 0)
			close(fd);
		return custode_refuse(why, err, CUSTODE_REASON_POLICY_INVALID, "--policy %s: %s", path, strerror(err));
	}
	close(fd);
	if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022))
		return custode_refuse(why, EPERM, CUSTODE_REASON_POLICY_INVALID,
				      "--policy %s: must be a regular file owned by root and writable only by root", path);
	err = custode_read_file(path, CUSTODE_POLICY_MAX_BYTES, text, len);
	if (err)
		return custode_refuse(why, -err, CUSTODE_REASON_POLICY_INVALID, "--policy %s: %s", path,
				      err == -EFBIG ? "too large" : strerror(-err));
	return 0;
}

/* sha256 of the JCS form of the document's content (what contentDigest means), for the receipt. */
static void content_digest(const char *text, size_t len, char out[80])
{
	json_t *doc = json_loadb(text, len, 0, NULL);

	out[0] = 0;
	if (doc && custode_jcs_sha256(json_object_get(doc, "content"), out, NULL, 0) < 0)
		out[0] = 0;
	json_decref(doc);
}

static int load_policy(const struct run_opts *o, struct launch *l, struct custode_refusal *why)
{
	struct custode_policy *p = NULL;
	struct custode_policy **out = &l->policy;
	int err;

	if (o->bundle) {
		struct custode_trust *trust = NULL;
		struct custode_bundle_info info;

		if ((err = custode_trust_new(&trust)))
			return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "trust: %s", strerror(-err));
		for (size_t i = 0; i < o->n_trust && !err; i++)
			err = custode_trust_add_file(trust, o->trust[i], why) < 0 ? -1 : 0;
		/* verify, then raise the version floor, before the policy takes effect */
		if (!err)
			err = custode_bundle_load(o->bundle, trust, (int64_t)time(NULL), NULL, &p, &info, why);
		custode_trust_free(trust);
		if (err)
			return err < 0 ? err : -EINVAL;
		l->policy_source = "bundle";
		l->policy_ref = o->bundle;
		snprintf(l->policy_digest, sizeof(l->policy_digest), "%s", info.digest);
		{
			json_t *signers = json_array();
			for (size_t i = 0; i < info.n_signers; i++)
				json_array_append_new(signers, json_string(info.signers[i].key_id));
			l->bundle_json = json_pack("{s:s, s:I, s:I, s:o}", "payload_sha256", info.payload_sha256,
						   "not_before", (json_int_t)info.not_before, "not_after",
						   (json_int_t)info.not_after, "signers", signers);
		}
	} else if (o->policy_file) {
		char *text = NULL;
		size_t len = 0;

		if ((err = read_policy_file(o->policy_file, &text, &len, why)))
			return err;
		err = custode_policy_parse(text, len, &p, why);
		if (!err)
			content_digest(text, len, l->policy_digest);
		free(text);
		l->policy_source = "file";
		l->policy_ref = o->policy_file;
	} else {
		const struct custode_builtin_profile *bp = custode_profile_find(o->profile);

		if (!bp)
			return custode_refuse(why, ENOENT, CUSTODE_REASON_POLICY_UNKNOWN_PROFILE,
					      "no built-in profile named '%s' (see `custode profiles`)", o->profile);
		err = custode_policy_parse(bp->text, bp->len, &p, why);
		if (!err)
			content_digest(bp->text, bp->len, l->policy_digest);
		l->policy_source = "profile";
		l->policy_ref = bp->name;
	}
	if (err)
		return err;
	if (o->n_allows && !p->has_network) {
		custode_policy_free(p);
		return custode_refuse(why, EINVAL, CUSTODE_REASON_RUN_USAGE,
				      "--allow needs a policy with a network section (e.g. --profile net-only)");
	}
	*out = p;
	return 0;
}

/*
 * The engine classes a run needs. A policy with only limits or env sections
 * asks for none, but the run still needs the engine's maps (registration,
 * counters, the cancelled flag): the egress class provides them on any host
 * with cgroup BPF, and its hooks govern nothing for a run without a network
 * section.
 */
static unsigned run_classes(const struct custode_policy *p)
{
	unsigned c = custode_policy_classes(p);
	struct custode_probe_result pr = {0};

	c = c ? c : CUSTODE_CLASS_EGRESS;
	if ((c & (CUSTODE_CLASS_FILE | CUSTODE_CLASS_PROCESS)) == (CUSTODE_CLASS_FILE | CUSTODE_CLASS_PROCESS))
		return c;
	/*
	 * Where BPF-LSM loads, every run gets the protections that hold for every
	 * run whatever its policy (terminals, socket families, listen, route
	 * options: docs/process.md, docs/egress.md), which live in the file and
	 * process classes. Elsewhere the policy's own classes are all there is
	 * (a net-only run on an egress-only host).
	 */
	custode_probe_lsm(&pr);
	if (pr.lsm_loads)
		c |= CUSTODE_CLASS_FILE | CUSTODE_CLASS_PROCESS;
	return c;
}

static int exit_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return EXIT_REFUSED;
}


/* Undo a partial setup (no process has run in the cgroup yet). */
static void setup_undo(struct launch *l)
{
	if (l->registered)
		custode_engine_unregister(&l->e, l->st.cgroup_id);
	if (l->rules_added) {
		custode_engine_delete_rules(&l->e, l->st.ruleset, &l->rules);
		custode_engine_delete_net(&l->e, &l->net);
	}
	if (l->cgroup_made)
		custode_cgroup_remove(l->st.cgroup);
	if (l->st.tmp[0])
		custode_rm_rf(l->st.tmp);
	custode_runstate_remove(l->st.run_id);
	custode_dns_names_remove(l->st.run_id);
}

static int setup(struct launch *l, const struct run_opts *o, struct custode_refusal *why)
{
	struct custode_bindings b;
	struct custode_run run = {0};
	char ws[PATH_MAX], tmpbase[PATH_MAX], hex[17];
	struct stat sb;
	int err, lock;

	if (!realpath(o->workspace ? o->workspace : ".", ws) || stat(ws, &sb) < 0 || !S_ISDIR(sb.st_mode))
		return custode_refuse(why, ENOTDIR, CUSTODE_REASON_RUN_WORKSPACE, "workspace '%s': %s",
				      o->workspace ? o->workspace : ".", errno ? strerror(errno) : "not a directory");
	if (getrandom(&l->st.run_id, sizeof(l->st.run_id), 0) != sizeof(l->st.run_id))
		return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "getrandom: %s", strerror(errno));
	custode_run_id_format(l->st.run_id, hex);
	snprintf(l->st.workspace, sizeof(l->st.workspace), "%s", ws);
	snprintf(l->st.policy, sizeof(l->st.policy), "%s", l->policy->name);
	snprintf(l->st.source, sizeof(l->st.source), "%s", l->policy_source ? l->policy_source : "");
	for (size_t i = 0; i < o->n_allows && i < 16; i++)
		snprintf(l->st.allows[l->st.n_allows++], sizeof(l->st.allows[0]), "%s", o->allow_strs[i]);
	l->st.launcher_pid = getpid();
	l->st.started = time(NULL);

	/* The lock comes first: gc treats a run whose lock is free as orphaned. */
	l->lock_fd = custode_runlock_take(l->st.run_id);
	if (l->lock_fd < 0)
		return custode_refuse(why, -l->lock_fd, CUSTODE_REASON_RUN_SETUP_FAILED, "run lock: %s",
				      strerror(-l->lock_fd));
	if (!realpath("/tmp", tmpbase))
		snprintf(tmpbase, sizeof(tmpbase), "/tmp");
	snprintf(l->st.tmp, sizeof(l->st.tmp), "%s/custode-%s", tmpbase, hex);
	if (mkdir(l->st.tmp, 0700) < 0) {
		l->st.tmp[0] = 0;
		return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "mkdir tmp: %s", strerror(errno));
	}
	if (chown(l->st.tmp, l->user.uid, l->user.gid) < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "chown tmp: %s", strerror(errno));
	snprintf(l->st.cgroup, sizeof(l->st.cgroup), "%s/run-%s", l->e.cg_root, hex);
	if ((err = custode_runstate_write(&l->st)))
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "state file: %s", strerror(-err));

	b.workspace = ws;
	b.tmp = l->st.tmp;

	lock = custode_engine_lock();
	if (lock < 0)
		return custode_refuse(why, -lock, CUSTODE_REASON_RUN_SETUP_FAILED, "engine lock: %s", strerror(-lock));
	err = custode_engine_alloc_ruleset(&l->e, &l->st.ruleset);
	custode_engine_unlock(lock);
	if (err)
		return custode_refuse(why, -err, CUSTODE_REASON_ENGINE_MAP_FULL, "no free rule set: %s", strerror(-err));
	if ((err = custode_policy_compile_fs(l->policy, &b, l->st.ruleset, &l->rules, why)))
		return err;
	if ((err = custode_policy_compile_net(l->policy, o->allows, o->n_allows, l->st.ruleset, &l->net, why)))
		return err;
	/* host entries: the resolver must be up, and learns the run's names before the run exists */
	if ((err = custode_dns_run_prepare(l->st.run_id, &l->net, why)))
		return err;
	/* Rules before registration, registration before the first process. */
	l->rules_added = true;
	if ((err = custode_engine_add_rules(&l->e, l->st.ruleset, &l->rules)))
		return custode_refuse(why, -err, err == -E2BIG || err == -ENOSPC ? CUSTODE_REASON_ENGINE_MAP_FULL
										 : CUSTODE_REASON_RUN_SETUP_FAILED,
				      "adding %zu rules: %s", l->rules.n, strerror(-err));
	if ((err = custode_engine_add_net(&l->e, &l->net)))
		return custode_refuse(why, -err, err == -E2BIG || err == -ENOSPC ? CUSTODE_REASON_ENGINE_MAP_FULL
										 : CUSTODE_REASON_RUN_SETUP_FAILED,
				      "adding %zu egress keys: %s", l->net.n, strerror(-err));
	/* the run's own addresses are local services, not destinations (net.host_address) */
	if (l->policy->has_network && (err = custode_hostaddrs_watch(&l->hosts, -1, why)))
		return err;
	if (mkdir(l->st.cgroup, 0755) < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_CGROUP_FAILED, "mkdir %s: %s", l->st.cgroup,
				      strerror(errno));
	l->cgroup_made = true;
	if ((err = custode_cgroup_id(l->st.cgroup, &l->st.cgroup_id)))
		return custode_refuse(why, -err, CUSTODE_REASON_CGROUP_FAILED, "cgroup id: %s", strerror(-err));
	if ((err = custode_limits_apply(l->st.cgroup, l->policy, &l->limits, why)))
		return err;
	run.run_id = l->st.run_id;
	run.ruleset = l->st.ruleset;
	run.flags = (l->policy->has_filesystem ? CUSTODE_RUN_FILE : 0) |
		    (l->policy->has_network ? CUSTODE_RUN_NET : 0) |
		    (l->policy->has_network && !l->net.listen ? CUSTODE_RUN_NO_LISTEN : 0) |
		    (l->policy->has_network && l->net.inbound_set ? CUSTODE_RUN_INBOUND : 0) |
		    (o->audit || l->policy->audit ? CUSTODE_RUN_AUDIT : 0) |
		    (l->policy->has_process ? CUSTODE_RUN_PROCESS : 0) |
		    (l->policy->has_process && l->policy->ptrace_run ? CUSTODE_RUN_PTRACE_RUN : 0) |
		    (l->policy->has_process && l->policy->wx_deny ? CUSTODE_RUN_WX_DENY : 0);
	run.policy_version = (__u32)l->policy->version;
	if ((err = custode_engine_register(&l->e, l->st.cgroup_id, &run)))
		return custode_refuse(why, -err, err == -E2BIG ? CUSTODE_REASON_ENGINE_MAP_FULL : CUSTODE_REASON_RUN_SETUP_FAILED,
				      "register run: %s", strerror(-err));
	l->registered = true;
	if ((err = custode_runstate_write(&l->st)))
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "state file: %s", strerror(-err));
	return 0;
}

/*
 * In the child, inside the run's cgroup: a session of its own, only the
 * command's stdio survives (the run's pty for what were terminals), then
 * credentials, seccomp, the run's environment, exec — or errno on the pipe.
 * Nothing here allocates: the filter and environment were built by the
 * launcher.
 */
static __attribute__((noreturn)) void child_exec(const struct run_opts *o, const struct launch *l, const sigset_t *old,
						 int errfd)
{
	int e;

	sigprocmask(SIG_SETMASK, old, NULL);
	signal(SIGPIPE, SIG_DFL);
	/* never the caller's session: no controlling terminal to push input into (TIOCSTI) or signal through */
	if (setsid() < 0)
		goto fail;
	if (l->out_pipe[1] >= 0 && (dup2(l->out_pipe[1], 1) < 0 || dup2(l->err_pipe[1], 2) < 0))
		goto fail;
	if ((e = custode_pty_child(&l->pty)) < 0) {
		errno = -e;
		goto fail;
	}
	/* fds above 2 are closed: nothing the launcher (or its caller) had open reaches the run */
	if ((errfd > 3 && close_range(3, (unsigned)errfd - 1, 0) < 0) || close_range((unsigned)errfd + 1, ~0U, 0) < 0)
		goto fail;
	if (chdir(l->st.workspace) < 0)
		goto fail;
	if ((e = custode_run_user_enter(&l->user)) < 0) {
		errno = -e;
		goto fail;
	}
	if ((e = custode_seccomp_apply(&l->filter)) < 0) {
		errno = -e;
		goto fail;
	}
	environ = l->env.envp; /* execvp searches the run's PATH */
	execvp(o->argv[0], o->argv);
fail:
	e = errno;
	if (write(errfd, &e, sizeof(e)) < 0) {
		/* nothing left to report with */
	}
	_exit(e == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC);
}

static pid_t spawn_into(int cgfd, const struct run_opts *o, const struct launch *l, const sigset_t *old, int *errpipe)
{
	struct clone_args args;
	long pid;

	memset(&args, 0, sizeof(args));
	/*
	 * An IPC namespace of its own: the run sees no SysV object or POSIX
	 * message queue of the host's, and the host none of its (the process
	 * class also scopes IPC by owner, for attached runs: docs/process.md).
	 */
	args.flags = CLONE_INTO_CGROUP | CLONE_NEWIPC;
	args.exit_signal = SIGCHLD;
	args.cgroup = (__u64)cgfd;
	pid = syscall(SYS_clone3, &args, sizeof(args));
	if (pid == 0) {
		close(errpipe[0]);
		child_exec(o, l, old, errpipe[1]);
	}
	return (pid_t)pid;
}

/*
 * Cancel the run: first the cancelled flag, so every hook denies from this
 * instant (a process racing to fork or exec is refused), then cgroup.kill.
 * CUSTODE_TEST_KILL_DELAY_MS (tests only, at most 5000) widens the gap
 * between the two so the kernel tests can observe the denials.
 */
static void cancel_run(struct launch *l)
{
	struct custode_run run;
	const char *delay = getenv("CUSTODE_TEST_KILL_DELAY_MS");

	if (custode_engine_get_run(&l->e, l->st.cgroup_id, &run) == 0) {
		run.flags |= CUSTODE_RUN_CANCELLED;
		custode_engine_set_run(&l->e, l->st.cgroup_id, &run);
	}
	if (delay) {
		long ms = strtol(delay, NULL, 10);
		if (ms > 0)
			usleep((useconds_t)(ms > 5000 ? 5000 : ms) * 1000);
	}
	custode_cgroup_kill(l->st.cgroup);
}

/* The command's stdout and stderr, relayed to ours and counted against outputBytes. */
struct relay {
	int fd[2];       /* read ends (non-blocking); -1 once closed or unused */
	int64_t cap;     /* bytes the run may write, -1: no cap */
	int64_t written; /* bytes the run wrote, relayed or not */
	bool sink_gone[2];
};

static void relay_out(struct relay *r, int i, const char *buf, size_t n)
{
	while (n && !r->sink_gone[i]) {
		ssize_t w = write(i ? 2 : 1, buf, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			r->sink_gone[i] = true; /* our reader left: keep counting, stop relaying */
			break;
		}
		buf += w;
		n -= (size_t)w;
	}
}

/* Relay what pipe i holds now. Returns true when the cap has just been exceeded. */
static bool relay_drain(struct relay *r, int i)
{
	char buf[65536];
	bool over = false;

	while (r->fd[i] >= 0) {
		ssize_t n = read(r->fd[i], buf, sizeof(buf));
		int64_t room;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			close(r->fd[i]);
			r->fd[i] = -1;
			break;
		}
		room = r->cap < 0 ? n : r->cap - r->written;
		if (room > 0)
			relay_out(r, i, buf, (size_t)(room < n ? room : n));
		if (r->cap >= 0 && r->written <= r->cap && r->written + n > r->cap)
			over = true;
		r->written += n;
	}
	return over;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void launch_free(struct launch *l)
{
	json_decref(l->bundle_json);
	if (l->lock_fd >= 0)
		close(l->lock_fd);
	for (int i = 0; i < 2; i++) {
		if (l->out_pipe[i] >= 0)
			close(l->out_pipe[i]);
		if (l->err_pipe[i] >= 0)
			close(l->err_pipe[i]);
	}
	custode_pty_close(&l->pty); /* the caller's terminal restored on every path */
	custode_hostaddrs_unwatch(&l->hosts);
	custode_fs_ruleset_free(&l->rules);
	custode_net_ruleset_free(&l->net);
	custode_seccomp_free(&l->filter);
	custode_run_env_free(&l->env);
	custode_policy_free(l->policy);
	custode_engine_close(&l->e);
}

int custode_cmd_run(int argc, char **argv)
{
	struct custode_refusal why = {0};
	struct run_opts o;
	struct launch l;
	struct custode_counters counters;
	struct custode_seccomp_opts sopts = {0};
	struct relay relay = {.fd = {-1, -1}, .cap = -1};
	sigset_t mask, old;
	int errpipe[2] = {-1, -1}, sfd = -1, cgfd = -1, status = 0, code, err, exec_errno = 0;
	pid_t child;
	bool child_done = false;
	int cancel_code = -1;
	const char *cancelled = NULL, *timeout_source = NULL;
	struct custode_run_peaks peaks = {-1, -1};
	struct timespec t_start, t_end;
	long long deadline = 0, timeout_sec = 0;
	char summary[1024], hex[17];

	err = parse_args(argc, argv, &o);
	if (err)
		return err > 0 ? 0 : EXIT_REFUSED;
	memset(&l, 0, sizeof(l));
	l.lock_fd = -1;
	l.out_pipe[0] = l.out_pipe[1] = l.err_pipe[0] = l.err_pipe[1] = -1;
	custode_pty_init(&l.pty);
	l.hosts = (struct custode_hostaddr_watch)CUSTODE_HOSTADDR_WATCH_INIT;
	if ((err = custode_run_user_resolve(o.user, &l.user, &why)))
		return refuse(&why);
	if ((err = load_policy(&o, &l, &why)))
		return refuse(&why);
	if ((err = custode_host_prepare(&l.e, &why)))
		goto refused;
	if ((err = custode_engine_open(&l.e, run_classes(l.policy), CUSTODE_ENGINE_LOAD, &why)))
		goto refused;
	if ((err = setup(&l, &o, &why))) {
		setup_undo(&l);
		goto refused;
	}
	/* the wall clock: --timeout or limits.wallSeconds, whichever is shorter */
	if (o.timeout_sec) {
		timeout_sec = o.timeout_sec;
		timeout_source = "--timeout";
	}
	if (custode_limit_is_set(l.policy, l.policy->limits.wall_seconds) &&
	    (!timeout_sec || l.policy->limits.wall_seconds < timeout_sec)) {
		timeout_sec = l.policy->limits.wall_seconds;
		timeout_source = "policy";
	}
	sopts.allow_ptrace = l.policy->has_process && l.policy->ptrace_run;
	if ((err = custode_seccomp_build(&sopts, &l.filter))) {
		custode_refuse(&why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "seccomp filter: %s", strerror(-err));
		setup_undo(&l);
		goto refused;
	}
	if ((err = custode_run_env_build(environ, l.policy, l.user.name, l.st.tmp, &l.env))) {
		custode_refuse(&why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "environment: %s", strerror(-err));
		setup_undo(&l);
		goto refused;
	}
	if (custode_limit_is_set(l.policy, l.policy->limits.output_bytes)) {
		/* the output cap needs the bytes to pass through us */
		if (pipe2(l.out_pipe, O_CLOEXEC) < 0 || pipe2(l.err_pipe, O_CLOEXEC) < 0) {
			custode_refuse(&why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "output pipes: %s", strerror(errno));
			setup_undo(&l);
			goto refused;
		}
		relay.cap = l.policy->limits.output_bytes;
		signal(SIGPIPE, SIG_IGN); /* a reader that leaves must not kill the launcher (and orphan the run) */
	}
	if ((err = custode_pty_open(&l.pty))) {
		custode_refuse(&why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "the run's terminal: %s", strerror(-err));
		setup_undo(&l);
		goto refused;
	}
	l.pty.cap = relay.cap; /* what the run's terminal shows counts against outputBytes too */
	l.pty.written = &relay.written;

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	custode_pty_sigmask(&mask);
	sigprocmask(SIG_BLOCK, &mask, &old);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	cgfd = open(l.st.cgroup, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (sfd < 0 || cgfd < 0 || pipe2(errpipe, O_CLOEXEC) < 0) {
		custode_refuse(&why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "launcher setup: %s", strerror(errno));
		setup_undo(&l);
		goto refused;
	}
	fflush(NULL);
	clock_gettime(CLOCK_REALTIME, &t_start);
	child = spawn_into(cgfd, &o, &l, &old, errpipe);
	if (child < 0) {
		custode_refuse(&why, errno, CUSTODE_REASON_CGROUP_FAILED, "clone3 into %s: %s", l.st.cgroup,
			       strerror(errno));
		setup_undo(&l);
		goto refused;
	}
	close(errpipe[1]);
	close(cgfd);
	custode_pty_start(&l.pty);
	if (l.out_pipe[1] >= 0) {
		close(l.out_pipe[1]);
		close(l.err_pipe[1]);
		l.out_pipe[1] = l.err_pipe[1] = -1;
		relay.fd[0] = l.out_pipe[0];
		relay.fd[1] = l.err_pipe[0];
		l.out_pipe[0] = l.err_pipe[0] = -1; /* owned by the relay now */
		fcntl(relay.fd[0], F_SETFL, O_NONBLOCK);
		fcntl(relay.fd[1], F_SETFL, O_NONBLOCK);
	}
	if (read(errpipe[0], &exec_errno, sizeof(exec_errno)) != sizeof(exec_errno))
		exec_errno = 0;
	close(errpipe[0]);

	if (timeout_sec)
		deadline = now_ms() + timeout_sec * 1000LL;
	while (!child_done) {
		struct pollfd pfd[7] = {{.fd = sfd, .events = POLLIN},
					{.fd = relay.fd[0], .events = POLLIN},
					{.fd = relay.fd[1], .events = POLLIN},
					[6] = {.fd = l.hosts.nl_fd, .events = POLLIN}};
		struct signalfd_siginfo si;
		int wait_ms = -1;
		bool over = false;

		if (deadline) {
			long long now = now_ms();
			if (now >= deadline && cancel_code < 0) {
				cancel_code = EXIT_TIMEOUT;
				cancelled = "timeout";
				fprintf(stderr, "custode: run: timeout after %lld s: killing the run\n", timeout_sec);
				cancel_run(&l);
				deadline = 0;
			} else if (deadline) {
				wait_ms = (int)(deadline - now);
			}
		}
		custode_pty_pollfds(&l.pty, pfd + 3);
		if (poll(pfd, 7, wait_ms) <= 0)
			continue;
		if (pfd[6].revents & (POLLIN | POLLERR)) {
			struct custode_refusal hw = {0};

			/* a failed re-read leaves the old entries: they only deny */
			if (custode_hostaddrs_refresh(&l.hosts, &hw))
				fprintf(stderr, "custode: run: %s: %s\n", custode_reason_name(hw.reason), hw.detail);
		}
		for (int i = 0; i < 2; i++)
			if (pfd[1 + i].revents & (POLLIN | POLLHUP | POLLERR))
				over |= relay_drain(&relay, i);
		over |= custode_pty_io(&l.pty, pfd + 3);
		if (over && cancel_code < 0) {
			cancel_code = EXIT_REFUSED;
			cancelled = "output";
			fprintf(stderr, "custode: run: %s: the run wrote more than %lld bytes: killing the run\n",
				custode_reason_name(CUSTODE_REASON_LIMIT_OUTPUT), (long long)relay.cap);
			cancel_run(&l);
		}
		if (!(pfd[0].revents & POLLIN) || read(sfd, &si, sizeof(si)) != sizeof(si))
			continue;
		if (si.ssi_signo == SIGCHLD) {
			pid_t w;
			while ((w = waitpid(-1, &status, WNOHANG)) > 0)
				if (w == child)
					child_done = true;
			continue;
		}
		if (custode_pty_signal(&l.pty, (int)si.ssi_signo))
			continue;
		if (cancel_code < 0) {
			cancel_code = 128 + (int)si.ssi_signo;
			cancelled = "signal";
			fprintf(stderr, "custode: run: %s: killing the run\n", strsignal((int)si.ssi_signo));
			cancel_run(&l);
		}
	}
	/* what the command left in the pipes and its terminal, then (after the kill) what the rest of the run wrote */
	{
		bool over = custode_pty_drain(&l.pty);

		for (int i = 0; i < 2; i++)
			over |= relay_drain(&relay, i);
		if (over && cancel_code < 0) {
			cancel_code = EXIT_REFUSED;
			cancelled = "output";
		}
	}

	code = cancel_code >= 0 ? cancel_code : exit_status(status);
	memset(&counters, 0, sizeof(counters));
	__u32 final_version = 0;
	{
		struct custode_run now;
		if (custode_engine_get_run(&l.e, l.st.cgroup_id, &now) == 0)
			final_version = now.policy_version;
	}
	err = custode_run_reap(&l.e, &l.st, &l.rules, &l.net, &counters, &peaks);
	for (int i = 0; i < 2; i++) {
		/* still non-blocking: a writer that escaped the run (an fd passed out) can't hold us here */
		relay_drain(&relay, i);
		if (relay.fd[i] >= 0)
			close(relay.fd[i]);
	}
	custode_pty_finish(&l.pty, 2000); /* and the caller's terminal back as it was, before we print */
	clock_gettime(CLOCK_REALTIME, &t_end);
	custode_run_id_format(l.st.run_id, hex);
	if (err)
		fprintf(stderr,
			"custode: run %s: could not empty the run's cgroup (%s); it stays confined and cancelled, "
			"`custode gc` retries\n",
			hex, strerror(-err));
	if (exec_errno)
		fprintf(stderr, "custode: run: cannot execute '%s': %s\n", o.argv[0], strerror(exec_errno));
	custode_denial_summary(&counters, summary, sizeof(summary));
	if (strncmp(summary, "0 denials", 9) != 0)
		fprintf(stderr, "custode: run %s: %s%s\n", hex, summary,
			(o.audit || l.policy->audit) ? " (audit: nothing was denied)" : "");
	/* the resolver's counts, for the receipt, before the summary consumes them */
	struct custode_dns_counters dns_counts;
	bool have_dns = custode_resolver_counters(l.st.cgroup_id, &dns_counts, false) == 0;
	custode_dns_run_summary(l.st.cgroup_id, summary, sizeof(summary));
	if (summary[0])
		fprintf(stderr, "custode: run %s: resolver: %s%s\n", hex, summary,
			(o.audit || l.policy->audit) ? " (audit: nothing was denied)" : "");
	if (o.receipt) {
		struct custode_receipt rc = {
			.st = &l.st,
			.policy = l.policy,
			.policy_source = l.policy_source,
			.policy_ref = l.policy_ref,
			.policy_digest = l.policy_digest[0] ? l.policy_digest : NULL,
			.bundle = l.bundle_json,
			.user = &l.user,
			.argv = o.argv,
			.audit = o.audit || l.policy->audit,
			.egress_keys = l.net.n,
			.private_grants = l.net.n_priv,
			.counters = &counters,
			.exit_code = code,
			.wait_status = status,
			.cancelled = cancelled,
			.reaped = err == 0,
			.started_ns = t_start.tv_sec * 1000000000LL + t_start.tv_nsec,
			.ended_ns = t_end.tv_sec * 1000000000LL + t_end.tv_nsec,
			.memory_peak = peaks.memory,
			.pids_peak = peaks.pids,
			.dns = have_dns ? &dns_counts : NULL,
			.policy_version_at_end = final_version,
			.limits = &l.limits,
			.env = &l.env,
			.ptrace_allowed = sopts.allow_ptrace,
			.timeout_sec = timeout_sec,
			.timeout_source = timeout_source,
			.output_cap = relay.cap,
			.output_written = relay.written,
		};
		json_t *j = custode_receipt_json(&rc);
		int werr = j ? custode_receipt_write(o.receipt, j) : -ENOMEM;

		if (werr)
			fprintf(stderr, "custode: run %s: cannot write the receipt to %s: %s\n", hex, o.receipt,
				strerror(-werr));
		json_decref(j);
	}
	close(sfd);
	launch_free(&l);
	return code;

refused:
	launch_free(&l);
	return refuse(&why);
}
