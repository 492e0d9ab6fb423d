/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CUSTODE_DOCTOR_H
#define CUSTODE_DOCTOR_H

#include <stdbool.h>
#include <jansson.h>

#include "engine/probe.h"

struct custode_class_status {
	bool available;
	bool verified;   /* the class's engine object loaded here (dry load) */
	int reason;      /* enum custode_reason when !available */
	char cause[384];
};

struct custode_doctor_report {
	struct custode_probe_result probe;
	char release[128];
	char version[256];
	bool root;
	bool cgroup2;
	char cgroup2_mount[256];
	char cgroup2_controllers[256];
	bool bpffs;
	bool config_known;          /* /boot/config-RELEASE read */
	char config_missing[256];   /* options custode needs that are not =y */
	char config_evidence[384];
	struct custode_class_status file, process, egress;
};

/* Gather every fact and probe. */
void custode_doctor_run(struct custode_doctor_report *r);
/* 0 all classes available, 3 some, 1 none or doctor could not probe (not root). */
int custode_doctor_exit_code(const struct custode_doctor_report *r);
json_t *custode_doctor_json(const struct custode_doctor_report *r);

int custode_cmd_doctor(int argc, char **argv);

#endif
