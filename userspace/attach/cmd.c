// SPDX-License-Identifier: Apache-2.0
/* custode attach / detach / runs: clients of the daemon's control socket (docs/operations.md). */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "attach/attach.h"
#include "attach/cmd.h"
#include "attach/container.h"
#include "attach/unit.h"
#include "util/exit.h"
#include "control/control.h"
#include "engine/engine.h"
#include "state/runstate.h"
#include "util/reasons.h"
#include "util/usage.h"

/*
 * How long to wait for the daemon's answer. An attach may load engine
 * classes first (seconds on a slow or emulated host): giving up early would
 * report a failure for an attach that then completes.
 */
#define CALL_TIMEOUT_MS 300000

static int refused(const char *cmd, const struct custode_refusal *why)
{
	fprintf(stderr, "custode: %s: refused: %s: %s\n", cmd, custode_reason_name(why->reason), why->detail);
	return why->reason == CUSTODE_REASON_RUN_USAGE ? 2 : EXIT_REFUSED;
}

/* A run id of cmd's (what names where) that is not one, its request dropped: EXIT_USAGE. */
static int bad_run_id(const char *cmd, json_t *req, const char *what, const char *arg)
{
	json_decref(req);
	return custode_usage_error(cmd, EXIT_USAGE, "%s'%s' is not 16 hex digits (a run id)", what, arg);
}

/* getopt_long refused an option of cmd, its request dropped: EXIT_USAGE. */
static int bad_option(const char *cmd, json_t *req, char **argv)
{
	json_decref(req);
	return custode_usage_bad_option(cmd, EXIT_USAGE, argv);
}

/* req (consumed) to the daemon: 0 with its answer in *resp, or the exit of its refusal (said on stderr). */
static int call_daemon(const char *cmd, json_t *req, json_t **resp)
{
	struct custode_refusal why = {0};
	int err = custode_control_call(req, resp, CALL_TIMEOUT_MS, &why);

	json_decref(req);
	return err ? refused(cmd, &why) : 0;
}

static const char *jstr(const json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	return v ? v : "";
}

static void print_json(const json_t *o)
{
	json_dumpf(o, stdout, JSON_COMPACT);
	putchar('\n');
}

/* --container ARG of cmd to its cgroup: 0, or the exit of its refusal (said on stderr). */
static int resolve_container(const char *cmd, const char *arg, struct custode_container_found *out)
{
	struct custode_refusal why = {0};

	if (!custode_container_resolve(arg, out, &why))
		return 0;
	if (why.reason == CUSTODE_REASON_RUN_USAGE)
		return custode_usage_error(cmd, EXIT_USAGE, "%s", why.detail);
	return refused(cmd, &why);
}

/* What --container found, for the answer: {"id", "name", "runtime"}. */
static json_t *container_json(const struct custode_container_found *c)
{
	return json_pack("{s:s, s:s?, s:s}", "id", c->id, "name", c->name[0] ? c->name : NULL, "runtime",
			 c->runtime ? c->runtime : "");
}

static void attach_usage(FILE *f)
{
	fprintf(f, "usage: custode attach (--cgroup PATH | --unit NAME | --container ID|NAME)\n"
		   "                      (--profile NAME | --policy NAME | --bundle FILE)\n"
		   "                      [--workspace DIR] [--run-id ID] [--json]\n"
		   "\n"
		   "Register an existing cgroup v2 (a container's, a systemd unit's) as a run: its\n"
		   "processes, those running now and every descendant, are confined by the policy\n"
		   "from their next operation on, until `custode detach`. Done by the daemon\n"
		   "(`custode daemon` must run), which re-adopts the run after a restart.\n"
		   "\n"
		   "  --cgroup PATH      the cgroup (below the cgroup v2 mount, outside custode's own\n"
		   "                     subtree, not holding the daemon, not nested in another run)\n"
		   "  --unit NAME        a systemd unit's cgroup (systemctl show -P ControlGroup; NAME\n"
		   "                     without a type means NAME.service). The unit must be running,\n"
		   "                     or starting: ExecStartPre=+custode attach --unit %%n confines\n"
		   "                     the service from its first exec (docs/operations.md)\n"
		   "  --container ID|NAME  a container's cgroup: its full id, a unique id prefix\n"
		   "                     or its name. podman (from PATH) is asked for its\n"
		   "                     process's cgroup; without podman, or for an id podman\n"
		   "                     does not know, the cgroup tree is searched for\n"
		   "                     libpod-, cri-containerd-, crio- or docker-<id>.scope.\n"
		   "                     It must be running (docs/operations.md)\n"
		   "  --profile NAME     a built-in profile (`custode profiles`)\n"
		   "  --policy NAME      a policy accepted from the daemon's --bundles directory\n"
		   "  --bundle FILE      a signed bundle, verified with the daemon's --trust keys\n"
		   "  --workspace DIR    what ${workspace} means for this run (default: nothing:\n"
		   "                     rules under ${workspace} and ${tmp} grant nothing)\n"
		   "  --run-id ID        16 hex digits (default: random)\n"
		   "  --json             print the run as JSON\n"
		   "\n"
		   "Limits, environment and the launcher's seccomp filter are not applied to an\n"
		   "attached run (its owner manages them); a policy with required limits is refused.\n"
		   "Exit: 0 attached; 125 refused (reason code on stderr); 2 usage.\n");
}

int custode_cmd_attach(int argc, char **argv)
{
	static const struct option opts[] = {{"cgroup", required_argument, NULL, 'c'},
					     {"unit", required_argument, NULL, 'u'},
					     {"container", required_argument, NULL, 'C'},
					     {"profile", required_argument, NULL, 'p'},
					     {"policy", required_argument, NULL, 'P'},
					     {"bundle", required_argument, NULL, 'b'},
					     {"workspace", required_argument, NULL, 'w'},
					     {"run-id", required_argument, NULL, 'r'},
					     {"json", no_argument, NULL, 'j'},
					     {"help", no_argument, NULL, 'h'},
					     {0}};
	json_t *req = json_pack("{s:s}", "cmd", "attach"), *resp = NULL, *run, *pol;
	const char *unit = NULL, *container = NULL;
	struct custode_container_found ctr = {0};
	bool json = false;
	int c, sources = 0, targets = 0, err;
	__u64 id;

	custode_getopt_start();
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			json_object_set_new(req, "cgroup", json_string(optarg));
			targets++;
			break;
		case 'u':
			unit = optarg;
			targets++;
			break;
		case 'C':
			container = optarg;
			targets++;
			break;
		case 'p':
			json_object_set_new(req, "profile", json_string(optarg));
			sources++;
			break;
		case 'P':
			json_object_set_new(req, "policy", json_string(optarg));
			sources++;
			break;
		case 'b': {
			char abs[4096];

			json_object_set_new(req, "bundle", json_string(realpath(optarg, abs) ? abs : optarg));
			sources++;
			break;
		}
		case 'w': {
			char abs[4096];

			json_object_set_new(req, "workspace", json_string(realpath(optarg, abs) ? abs : optarg));
			break;
		}
		case 'r':
			if (custode_run_id_parse(optarg, &id) < 0)
				return bad_run_id("attach", req, "--run-id ", optarg);
			json_object_set_new(req, "run_id", json_string(optarg + (strncmp(optarg, "run-", 4) ? 0 : 4)));
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			attach_usage(stdout);
			json_decref(req);
			return 0;
		default:
			return bad_option("attach", req, argv);
		}
	}
	if (optind < argc) {
		json_decref(req);
		return custode_usage_extra_arg("attach", EXIT_USAGE, argv[optind]);
	}
	if (targets != 1 || sources != 1) {
		json_decref(req);
		return custode_usage_error("attach", EXIT_USAGE,
					   "needs one of --cgroup PATH, --unit NAME, --container ID|NAME and one of "
					   "--profile, --policy, --bundle");
	}
	if (container && (err = resolve_container("attach", container, &ctr))) {
		json_decref(req);
		return err;
	}
	if (container)
		json_object_set_new(req, "cgroup", json_string(ctr.cgroup));
	if (unit) {
		struct custode_refusal why = {0};
		char name[CUSTODE_UNIT_NAME_MAX + 1], cg[4096];

		if (custode_unit_resolve(unit, name, sizeof(name), cg, sizeof(cg), &why)) {
			json_decref(req);
			if (why.reason == CUSTODE_REASON_RUN_USAGE)
				return custode_usage_error("attach", EXIT_USAGE, "%s", why.detail);
			return refused("attach", &why);
		}
		json_object_set_new(req, "cgroup", json_string(cg));
	}
	if ((err = call_daemon("attach", req, &resp)))
		return err;
	run = json_object_get(resp, "run");
	pol = json_object_get(run, "policy");
	if (container)
		json_object_set_new(run, "container", container_json(&ctr));
	if (json)
		print_json(run);
	else
		printf("custode: attached run %s: %s under %s v%lld (%s)%s%s%s%.12s\n", jstr(run, "run_id"),
		       jstr(run, "cgroup"), jstr(pol, "name"), (long long)json_integer_value(json_object_get(pol, "version")),
		       jstr(run, "mode"), container ? ": container " : "", ctr.name, ctr.name[0] ? " " : "", ctr.id);
	{
		/* a run in a network namespace the resolver could not enter gets no DNS: say so, whatever the format */
		const json_t *dns = json_object_get(run, "dns");

		if (dns && !json_is_true(json_object_get(dns, "served")))
			fprintf(stderr, "custode: attach: warning: the run's DNS is not served yet (%s): %s\n",
				json_object_get(dns, "reason") ? jstr(dns, "reason") : "?",
				json_object_get(dns, "detail") ? jstr(dns, "detail") : "");
	}
	json_decref(resp);
	return 0;
}

static void detach_usage(FILE *f)
{
	fprintf(f, "usage: custode detach (--run ID | --cgroup PATH | --container ID|NAME | ID) [--json]\n"
		   "\n"
		   "Unregister an attached run: its processes are no longer confined. Prints its\n"
		   "final denial counts. Runs started by `custode run` end with their command.\n"
		   "--container finds the container's cgroup as `custode attach --container` does.\n"
		   "Exit: 0 detached; 125 refused; 2 usage.\n");
}

static void print_counts(const json_t *run)
{
	const json_t *d = json_object_get(run, "denials"), *by = json_object_get(d, "by_reason"), *v;
	const char *k, *sep = ": ";

	printf("%lld denial%s", (long long)json_integer_value(json_object_get(d, "total")),
	       json_integer_value(json_object_get(d, "total")) == 1 ? "" : "s");
	json_object_foreach((json_t *)by, k, v) {
		printf("%s%s=%lld", sep, k, (long long)json_integer_value(v));
		sep = ", ";
	}
}

int custode_cmd_detach(int argc, char **argv)
{
	static const struct option opts[] = {{"run", required_argument, NULL, 'r'},
					     {"cgroup", required_argument, NULL, 'c'},
					     {"container", required_argument, NULL, 'C'},
					     {"json", no_argument, NULL, 'j'},
					     {"help", no_argument, NULL, 'h'},
					     {0}};
	json_t *req = json_pack("{s:s}", "cmd", "detach"), *resp = NULL, *run;
	struct custode_container_found ctr = {0};
	const char *container = NULL;
	bool json = false;
	int c, err, targets = 0;
	__u64 id;

	custode_getopt_start();
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 'r' || c == 'c' || c == 'C')
			targets++;
		if (c == 'C') {
			container = optarg;
		} else if (c == 'r' || c == 'c') {
			if (c == 'r' && custode_run_id_parse(optarg, &id) < 0)
				return bad_run_id("detach", req, "--run ", optarg);
			if (c == 'r')
				json_object_set_new(req, "run_id", json_string(optarg + (strncmp(optarg, "run-", 4) ? 0 : 4)));
			else {
				char abs[4096];
				json_object_set_new(req, "cgroup", json_string(realpath(optarg, abs) ? abs : optarg));
			}
		} else if (c == 'j') {
			json = true;
		} else if (c == 'h') {
			detach_usage(stdout);
			json_decref(req);
			return 0;
		} else {
			return bad_option("detach", req, argv);
		}
	}
	if (optind == argc - 1 && !targets) {
		if (custode_run_id_parse(argv[optind], &id) < 0)
			return bad_run_id("detach", req, "", argv[optind]);
		json_object_set_new(req, "run_id", json_string(argv[optind] + (strncmp(argv[optind], "run-", 4) ? 0 : 4)));
		optind++;
		targets++;
	}
	if (optind < argc) {
		json_decref(req);
		return custode_usage_extra_arg("detach", EXIT_USAGE, argv[optind]);
	}
	if (targets != 1) {
		json_decref(req);
		return custode_usage_error("detach", EXIT_USAGE,
					   "needs one of --run ID, --cgroup PATH, --container ID|NAME, ID");
	}
	if (container && (err = resolve_container("detach", container, &ctr))) {
		json_decref(req);
		return err;
	}
	if (container)
		json_object_set_new(req, "cgroup", json_string(ctr.cgroup));
	if ((err = call_daemon("detach", req, &resp)))
		return err;
	run = json_object_get(resp, "run");
	if (container)
		json_object_set_new(run, "container", container_json(&ctr));
	if (json) {
		print_json(run);
	} else {
		printf("custode: detached run %s (%s): ", jstr(run, "run_id"), jstr(run, "cgroup"));
		print_counts(run);
		putchar('\n');
	}
	json_decref(resp);
	return 0;
}

static void runs_usage(FILE *f)
{
	fprintf(f, "usage: custode runs [--json]\n"
		   "\n"
		   "List the registered runs — started by `custode run` (launched) or by `custode\n"
		   "attach` (attached) — with policy name and version, start time, state and\n"
		   "exact denial counts. Through the daemon when it runs (which also re-verifies\n"
		   "each attached run's policy), else from the pinned engine.\n"
		   "\n"
		   "  --json   one JSON array (fields: docs/operations.md)\n"
		   "Exit: 0 done (an empty list when no engine is loaded); 125 refused or failed\n"
		   "(not root, the daemon or the engine can't be read: the reason code is on\n"
		   "stderr); 2 usage.\n");
}

int custode_cmd_runs(int argc, char **argv)
{
	static const struct option opts[] = {{"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0}};
	struct custode_refusal why = {0};
	json_t *req, *resp = NULL, *runs, *r;
	bool json = false;
	size_t i;
	int c, err;

	custode_getopt_start();
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 'j') {
			json = true;
		} else if (c == 'h') {
			runs_usage(stdout);
			return 0;
		} else {
			return custode_usage_bad_option("runs", EXIT_USAGE, argv);
		}
	}
	if (optind < argc)
		return custode_usage_extra_arg("runs", EXIT_USAGE, argv[optind]);
	req = json_pack("{s:s}", "cmd", "runs");
	err = custode_control_call(req, &resp, CALL_TIMEOUT_MS, &why);
	json_decref(req);
	if (err && why.reason != CUSTODE_REASON_DAEMON_NOT_RUNNING) {
		return refused("runs", &why);
	}
	if (err) {
		struct custode_engine e;

		if (custode_host_prepare(&e, &why) || custode_engine_open(&e, 0, 0, &why)) {
			if (why.reason == CUSTODE_REASON_ENGINE_MISSING) {
				if (json)
					printf("[]\n");
				return 0;
			}
			fprintf(stderr, "custode: runs: %s: %s\n", custode_reason_name(why.reason), why.detail);
			return EXIT_REFUSED;
		}
		resp = json_pack("{s:o}", "runs", custode_runs_list(&e, NULL, false));
		custode_engine_close(&e);
	}
	runs = json_object_get(resp, "runs");
	if (json) {
		print_json(runs);
	} else {
		printf("%-16s  %-8s  %-9s  %-28s  %-27s  %8s  %s\n", "RUN", "KIND", "STATE", "POLICY", "STARTED", "DENIALS",
		       "CGROUP");
		json_array_foreach(runs, i, r) {
			const json_t *pol = json_object_get(r, "policy");
			char polbuf[160];

			snprintf(polbuf, sizeof(polbuf), "%s v%lld%s", json_object_get(pol, "name") ? jstr(pol, "name") : "?",
				 (long long)json_integer_value(json_object_get(pol, "version")),
				 json_is_false(json_object_get(pol, "verified")) ? " (unverified)" : "");
			printf("%-16s  %-8s  %-9s  %-28s  %-27s  %8lld  %s\n", jstr(r, "run_id"), jstr(r, "kind"),
			       jstr(r, "state"), polbuf, json_is_string(json_object_get(r, "started")) ? jstr(r, "started") : "-",
			       (long long)json_integer_value(json_object_get(json_object_get(r, "denials"), "total")),
			       json_is_string(json_object_get(r, "cgroup")) ? jstr(r, "cgroup") : "-");
		}
	}
	json_decref(resp);
	return 0;
}
