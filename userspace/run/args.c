// SPDX-License-Identifier: Apache-2.0
/* `custode run`'s command line (args.h). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "run/args.h"
#include "run/receipt.h"
#include "bundle/bundle.h" /* CUSTODE_BUNDLE_STATE_DIR */
#include "util/exit.h"
#include "util/reasons.h"
#include "util/usage.h"


static void usage(FILE *f)
{
	fprintf(f, "usage: custode run [--profile NAME | --bundle FILE --trust KEY... | --policy FILE] [--workspace DIR]\n"
		   "                   [--allow ADDR:PORT[/tcp|/udp] | --allow HOST:PORT[/tcp|/udp]]...\n"
		   "                   [--timeout SEC] [--audit] [--require-limits] -- CMD [ARG...]\n"
		   "\n"
		   "Run CMD confined: in a new cgroup registered with the engine, under the\n"
		   "policy of a built-in profile. custode refuses (exit 125) rather than run\n"
		   "anything unenforced.\n"
		   "\n"
		   "  --profile NAME    built-in profile (default: read); see `custode profiles`\n"
		   "  --bundle FILE     a signed policy bundle (DSSE, docs/bundles.md), verified against\n"
		   "  --trust KEY       trusted public key(s) (PEM; repeatable); the run raises the\n"
		   "                    version floor in " CUSTODE_BUNDLE_STATE_DIR " as it starts\n"
		   "  --policy FILE     an unsigned policy document (docs/policy.md) owned by root and\n"
		   "                    writable only by root; fleets use signed bundles instead\n"
		   "  --allow ADDR:PORT[/tcp|/udp]\n"
		   "                    grant egress to a literal address (even a private one);\n"
		   "                    IPv6 as [ADDR]:PORT; repeatable; needs a network section\n"
		   "  --allow HOST:PORT[/tcp|/udp]\n"
		   "                    grant a host name, like a policy's host entry: custode's\n"
		   "                    resolver (in `custode daemon`) pins the addresses it\n"
		   "                    answers, vetted like the policy's (private ones dropped);\n"
		   "                    the run is refused (dns.no_resolver) if no resolver runs;\n"
		   "                    see docs/resolver.md\n"

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
		   "  --require-limits  refuse (limit.unavailable) rather than run without a cgroup\n"
		   "                    limit the policy sets (memoryBytes, pids, cpu) that this\n"
		   "                    host has no controller for; without it such a run goes on,\n"
		   "                    with a warning on stderr per limit not enforced\n"
		   "  --help            this text\n"
		   "\n"
		   "CMD gets a cleared environment (the policy's env list, or PATH, LANG, LC_*,\n"
		   "TERM, TZ; HOME and TMPDIR are the run's private tmp), no fd above 2, a seccomp\n"
		   "denylist and the policy's limits (docs/process.md).\n"
		   "\n"
		   "Exit: CMD's status (128+N if killed by signal N); 124 timeout; 125 custode\n"
		   "refused or failed (a usage error too: 2 may be CMD's), or the run exceeded\n"
		   "limits.outputBytes; 126 CMD cannot be executed; 127 CMD not found.\n"
		   "Denials are summarised on stderr at exit; `custode events` has the details.\n");
}

int custode_run_args_parse(int argc, char **argv, struct run_opts *o)
{
	static const struct option opts[] = {
		{"profile", required_argument, NULL, 'p'}, {"workspace", required_argument, NULL, 'w'},
		{"timeout", required_argument, NULL, 't'}, {"audit", no_argument, NULL, 'a'},
		{"help", no_argument, NULL, 'h'},
		/* contract options of later issues, refused until implemented */
		{"policy", required_argument, NULL, 'P'}, {"allow", required_argument, NULL, 'A'},
		{"user", required_argument, NULL, 'U'},
		{"bundle", required_argument, NULL, 'B'}, {"trust", required_argument, NULL, 'T'},
		{"receipt", required_argument, NULL, 'R'}, {"require-limits", no_argument, NULL, 'L'},
		{0}};
	char *end;
	int c;

	o->profile = "read"; /* o comes zeroed (args.h) */
	o->receipt_dest.fd = -1; /* none: never closes fd 0 */
	o->timeout_sec = 0;
	custode_getopt_start();
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
		case 'L':
			o->require_limits = true;
			break;
		default:
			custode_usage_bad_option("run", EXIT_REFUSED, argv);
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
	if (o->receipt) {
		struct custode_refusal why;

		/* an unusable destination refuses the run before the command starts (docs/receipts.md) */
		if (custode_receipt_open(o->receipt, &o->receipt_dest, &why) < 0) {
			fprintf(stderr, "custode: run: refused: %s: %s\n", custode_reason_name(why.reason), why.detail);
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
