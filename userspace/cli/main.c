// SPDX-License-Identifier: Apache-2.0
/* custode: confine agent-run processes with BPF. Command dispatch. */
#include <stdio.h>
#include <string.h>

#include "attach/cmd.h"
#include "bundle/cmd.h"
#include "cli/commands.h"
#include "util/exit.h"
#include "daemon/daemon.h"
#include "doctor/doctor.h"
#include "events/events.h"
#include "run/run.h"

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *what;
} commands[] = {
	{"run", custode_cmd_run, "run a command confined by a policy"},
	{"doctor", custode_cmd_doctor, "report what this host can enforce, with evidence"},
	{"events", custode_cmd_events, "print denial records"},
	{"gc", custode_cmd_gc, "reap runs whose launcher is gone"},
	{"engine", custode_cmd_engine, "status, load, unload or admit to the pinned engine"},
	{"profiles", custode_cmd_profiles, "list the built-in profiles"},
	{"bundle", custode_cmd_bundle, "keygen, sign, verify, inspect signed policy bundles"},
	{"daemon", custode_cmd_daemon, "the host's daemon: stream, control socket, resolver, bundles"},
	{"attach", custode_cmd_attach, "register an existing cgroup as a run (through the daemon)"},
	{"detach", custode_cmd_detach, "unregister an attached run"},
	{"runs", custode_cmd_runs, "list the registered runs, with policy and denial counts"},
	{"reasons", custode_cmd_reasons, "list the stable reason codes and what each means"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: custode COMMAND [ARGS...]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].what);
	fprintf(f, "\n`custode COMMAND --help` describes each. custode %s\n", CUSTODE_VERSION);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("custode %s\n", CUSTODE_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "custode: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
