// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <linux/magic.h>

#include "cgroup/cgroup.h"
#include "util/exit.h"
#include "util/usage.h"
#include "doctor/doctor.h"
#include "engine/engine.h"
#include "engine/hooks.h"
#include "util/fsutil.h"
#include "util/reasons.h"

static void class_from_lsm(struct custode_class_status *c, const struct custode_probe_result *p)
{
	c->available = p->lsm_loads;
	if (!c->available) {
		c->reason = CUSTODE_REASON_KERNEL_LSM_UNAVAILABLE;
		snprintf(c->cause, sizeof(c->cause), "%s", p->lsm_cause);
	}
}

/*
 * "Available" means the class's real engine object loads on this kernel: a
 * dry load (verified, never pinned or attached), so doctor never promises
 * what `run` would refuse.
 */
static void class_dry_load(struct custode_class_status *c, unsigned cls)
{
	struct custode_refusal why = {0};

	if (!c->available)
		return;
	if (custode_engine_dry_load(cls, &why) == 0) {
		c->verified = true;
		return;
	}
	c->available = false;
	c->reason = why.reason;
	snprintf(c->cause, sizeof(c->cause), "%s", why.detail);
}

/*
 * The kernel's build configuration, where the host keeps it
 * (/boot/config-RELEASE): the options custode needs, for the fix hint.
 */
static void kernel_config(struct custode_doctor_report *r)
{
	static const char *const need[] = {"CONFIG_BPF_SYSCALL", "CONFIG_BPF_LSM", "CONFIG_DEBUG_INFO_BTF",
					   "CONFIG_CGROUP_BPF", "CONFIG_SECURITY_PATH", "CONFIG_BPF_JIT"};
	char path[300], *text = NULL;
	size_t len = 0;

	snprintf(path, sizeof(path), "/boot/config-%s", r->release);
	if (custode_read_file(path, 1 << 20, &text, NULL) != 0) {
		snprintf(r->config_evidence, sizeof(r->config_evidence), "%s unreadable: options not checked", path);
		return;
	}
	r->config_known = true;
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		char on[64];
		snprintf(on, sizeof(on), "\n%s=y", need[i]);
		if (!strstr(text, on) && strncmp(text, on + 1, strlen(on + 1)) != 0 &&
		    len < sizeof(r->config_missing))
			len += (size_t)snprintf(r->config_missing + len, sizeof(r->config_missing) - len, "%s%s",
						len ? " " : "", need[i]);
	}
	free(text);
	if (r->config_missing[0])
		snprintf(r->config_evidence, sizeof(r->config_evidence), "%s: not set: %s", path, r->config_missing);
	else
		snprintf(r->config_evidence, sizeof(r->config_evidence), "%s: every option custode needs is set", path);
}

/* What to do about an unavailable LSM class, added to its cause. */
static void lsm_hint(struct custode_class_status *c, const struct custode_doctor_report *r)
{
	const struct custode_probe_result *p = &r->probe;
	size_t n = strlen(c->cause);

	if (c->available || n >= sizeof(c->cause) - 1)
		return;
	if (r->config_known && strstr(r->config_missing, "CONFIG_BPF_LSM"))
		snprintf(c->cause + n, sizeof(c->cause) - n, "; fix: a kernel built with CONFIG_BPF_LSM=y");
	else if (r->config_known && strstr(r->config_missing, "CONFIG_DEBUG_INFO_BTF"))
		snprintf(c->cause + n, sizeof(c->cause) - n, "; fix: a kernel built with CONFIG_DEBUG_INFO_BTF=y");
	else if (p->lsm_list_known && !p->bpf_lsm_active)
		snprintf(c->cause + n, sizeof(c->cause) - n, "; fix: boot with lsm=%s%sbpf", p->lsm_list,
			 p->lsm_list[0] ? "," : "");
	else if (p->lockdown[0] && strcmp(p->lockdown, "none") != 0 && c->reason == CUSTODE_REASON_KERNEL_LSM_UNAVAILABLE)
		snprintf(c->cause + n, sizeof(c->cause) - n,
			 "; fix: boot without lockdown (Secure Boot enforces it) or run custode in a guest");
	else if (c->reason == CUSTODE_REASON_KERNEL_HOOK_UNSUPPORTED || c->reason == CUSTODE_REASON_ENGINE_LOAD_FAILED)
		snprintf(c->cause + n, sizeof(c->cause) - n,
			 "; this kernel (%s) is not one custode supports yet: report it with `custode doctor --json`",
			 r->release);
}

void custode_doctor_run(struct custode_doctor_report *r)
{
	struct utsname u;
	struct statfs st;
	char path[512], *text = NULL;

	memset(r, 0, sizeof(*r));
	r->root = geteuid() == 0;
	if (uname(&u) == 0) {
		snprintf(r->release, sizeof(r->release), "%s", u.release);
		snprintf(r->version, sizeof(r->version), "%s", u.version);
	}
	custode_probe_lsm(&r->probe);
	custode_probe_cgroup(&r->probe);
	r->cgroup2 = custode_cgroup2_mount(r->cgroup2_mount, sizeof(r->cgroup2_mount)) == 0;
	if (r->cgroup2) {
		snprintf(path, sizeof(path), "%s/cgroup.controllers", r->cgroup2_mount);
		if (custode_read_file(path, 4096, &text, NULL) == 0) {
			snprintf(r->cgroup2_controllers, sizeof(r->cgroup2_controllers), "%s", text);
			r->cgroup2_controllers[strcspn(r->cgroup2_controllers, "\n")] = 0;
			free(text);
		}
	}
	r->bpffs = statfs("/sys/fs/bpf", &st) == 0 && st.f_type == BPF_FS_MAGIC;

	kernel_config(r);
	class_from_lsm(&r->file, &r->probe);
	class_from_lsm(&r->process, &r->probe);
	r->egress.available = r->cgroup2 && r->probe.cgroup_loads;
	if (!r->cgroup2) {
		r->egress.reason = CUSTODE_REASON_KERNEL_NO_CGROUP2;
		snprintf(r->egress.cause, sizeof(r->egress.cause), "no cgroup v2 hierarchy is mounted");
	} else if (!r->probe.cgroup_loads) {
		r->egress.reason = CUSTODE_REASON_KERNEL_CGROUP_BPF_UNAVAILABLE;
		snprintf(r->egress.cause, sizeof(r->egress.cause), "%s", r->probe.cgroup_cause);
	}
	if (r->root) {
		class_dry_load(&r->file, CUSTODE_CLASS_FILE);
		class_dry_load(&r->process, CUSTODE_CLASS_PROCESS);
		class_dry_load(&r->egress, CUSTODE_CLASS_EGRESS);
		lsm_hint(&r->file, r);
		lsm_hint(&r->process, r);
	}
	if (!r->root) {
		struct custode_class_status *all[] = {&r->file, &r->process, &r->egress};
		for (int i = 0; i < 3; i++) {
			all[i]->available = false;
			all[i]->reason = CUSTODE_REASON_PRIVILEGE_REQUIRED;
			snprintf(all[i]->cause, sizeof(all[i]->cause), "not probed: custode doctor needs root to load probes");
		}
	}
}

int custode_doctor_exit_code(const struct custode_doctor_report *r)
{
	int n = r->file.available + r->process.available + r->egress.available;

	if (!r->root || n == 0)
		return 1;
	return n == 3 ? 0 : 3;
}

static json_t *check(bool ok, const char *evidence)
{
	return json_pack("{s:b, s:s}", "ok", ok, "evidence", evidence);
}

static json_t *class_json(const struct custode_class_status *c, const char *mechanism)
{
	json_t *o = json_pack("{s:b, s:s}", "available", c->available, "mechanism", mechanism);

	if (c->available)
		json_object_set_new(o, "evidence", json_string(c->verified ? "the engine object loads on this kernel "
									      "(dry load: verified, not attached)"
									    : "probe program loads"));
	if (!c->available) {
		json_object_set_new(o, "reason", json_string(custode_reason_name(c->reason)));
		json_object_set_new(o, "cause", json_string(c->cause));
	}
	return o;
}

json_t *custode_doctor_json(const struct custode_doctor_report *r)
{
	const struct custode_probe_result *p = &r->probe;
	char ev[512];
	json_t *checks = json_object(), *root, *features = NULL;
	int code = custode_doctor_exit_code(r);

	json_object_set_new(checks, "root", check(r->root, r->root ? "euid 0" : "not running as root"));
	json_object_set_new(checks, "active_lsms",
			    check(p->bpf_lsm_active, p->lsm_list_known ? p->lsm_list : "/sys/kernel/security/lsm unreadable"));
	snprintf(ev, sizeof(ev), "%s", p->lockdown[0] ? p->lockdown : "unknown (/sys/kernel/security/lockdown unreadable)");
	json_object_set_new(checks, "lockdown", check(strcmp(p->lockdown, "confidentiality") != 0, ev));
	json_object_set_new(checks, "btf", check(p->btf, p->btf ? "/sys/kernel/btf/vmlinux" : "/sys/kernel/btf/vmlinux missing"));
	if (p->lsm_loads)
		snprintf(ev, sizeof(ev), "an lsm/file_open program loaded");
	else
		snprintf(ev, sizeof(ev), "%s (errno %d)", p->lsm_cause, p->lsm_errno);
	json_object_set_new(checks, "lsm_program_loads", check(p->lsm_loads, ev));
	json_object_set_new(checks, "kernel_config", check(!r->config_known || !r->config_missing[0], r->config_evidence));
	if (p->cgroup_loads)
		snprintf(ev, sizeof(ev), "a cgroup/connect4 program loaded");
	else
		snprintf(ev, sizeof(ev), "%s (errno %d)", p->cgroup_cause, p->cgroup_errno);
	json_object_set_new(checks, "cgroup_program_loads", check(p->cgroup_loads, ev));
	json_object_set_new(checks, "cgroup2", check(r->cgroup2, r->cgroup2 ? r->cgroup2_mount : "no cgroup2 mount"));
	snprintf(ev, sizeof(ev), "controllers: %s", r->cgroup2_controllers[0] ? r->cgroup2_controllers : "none");
	json_object_set_new(checks, "cgroup2_controllers",
			    check(strstr(r->cgroup2_controllers, "memory") && strstr(r->cgroup2_controllers, "pids"), ev));
	json_object_set_new(checks, "bpffs", check(r->bpffs, r->bpffs ? "/sys/fs/bpf" : "/sys/fs/bpf is not a bpffs (custode mounts it on first use)"));

	{
		bool rc = custode_kernel_has_cgrp_storage();
		json_t *feat = json_object();

		json_object_set_new(feat, "run_cache",
				    json_pack("{s:b, s:s, s:s}", "available", rc, "kind", rc ? "cgroup-storage" : "task-storage",
					      "evidence",
					      rc ? "BPF_MAP_TYPE_CGRP_STORAGE in the kernel's BTF: a task's attached run is "
						   "cached on its cgroup"
						 : "no BPF_MAP_TYPE_CGRP_STORAGE (before 6.2): a task's attached run is "
						   "cached on the task instead, for the cgroup it is in"));
		features = feat;
	}
	root = json_pack("{s:s, s:{s:s, s:s}, s:o, s:{s:o, s:o, s:o}, s:s, s:i}", "custode", CUSTODE_VERSION, "kernel",
			 "release", r->release, "version", r->version, "checks", checks, "classes", "file",
			 class_json(&r->file, "bpf-lsm"), "process", class_json(&r->process, "bpf-lsm"), "egress",
			 class_json(&r->egress, "cgroup-bpf"), "status",
			 code == 0 ? "ok" : code == 3 ? "partial" : "unavailable", "exit", code);
	json_object_set_new(root, "features", features);
	return root;
}

static void print_human(const struct custode_doctor_report *r)
{
	const struct custode_probe_result *p = &r->probe;
	const struct {
		const char *name;
		const struct custode_class_status *c;
	} classes[] = {{"file", &r->file}, {"process", &r->process}, {"egress", &r->egress}};

	printf("kernel      %s\n", r->release);
	printf("root        %s\n", r->root ? "yes" : "no");
	printf("LSMs        %s\n", p->lsm_list_known ? p->lsm_list : "unknown");
	printf("lockdown    %s\n", p->lockdown[0] ? p->lockdown : "unknown");
	printf("BTF         %s\n", p->btf ? "yes" : "no");
	printf("LSM probe   %s\n", p->lsm_loads ? "loads" : p->lsm_cause);
	printf("config      %s\n", r->config_evidence);
	printf("cgroup BPF  %s\n", p->cgroup_loads ? "loads" : p->cgroup_cause);
	printf("cgroup2     %s (controllers: %s)\n", r->cgroup2 ? r->cgroup2_mount : "not mounted",
	       r->cgroup2_controllers[0] ? r->cgroup2_controllers : "none");
	printf("bpffs       %s\n", r->bpffs ? "mounted" : "not mounted");
	printf("run cache   %s\n", custode_kernel_has_cgrp_storage() ? "cgroup storage (6.2+)" : "off (no cgroup storage)");
	printf("\n");
	for (int i = 0; i < 3; i++) {
		if (classes[i].c->available)
			printf("%-8s available%s\n", classes[i].name,
			       classes[i].c->verified ? " (its engine object loads on this kernel)" : "");
		else
			printf("%-8s unavailable: %s: %s\n", classes[i].name, custode_reason_name(classes[i].c->reason),
			       classes[i].c->cause);
	}
}

static void usage(FILE *f)
{
	fprintf(f, "usage: custode doctor [--json]\n"
		   "\n"
		   "Report each prerequisite of enforcement with its evidence and which\n"
		   "enforcement classes (file, process, egress) this host can provide.\n"
		   "\n"
		   "  --json   one JSON object on stdout\n"
		   "  --help   this text\n"
		   "\n"
		   "Exit: 0 all classes available; 3 some; 1 none, or not root (it cannot probe);\n"
		   "2 usage.\n");
}

int custode_cmd_doctor(int argc, char **argv)
{
	static const struct option opts[] = {{"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0}};
	struct custode_doctor_report r;
	bool json = false;
	int c;

	custode_getopt_start();
	while ((c = getopt_long(argc, argv, "+jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return custode_usage_bad_option("doctor", EXIT_USAGE, argv);
		}
	}
	if (optind < argc)
		return custode_usage_extra_arg("doctor", EXIT_USAGE, argv[optind]);
	custode_doctor_run(&r);
	if (json) {
		json_t *o = custode_doctor_json(&r);
		json_dumpf(o, stdout, JSON_COMPACT);
		putchar('\n');
		json_decref(o);
	} else {
		print_human(&r);
	}
	return custode_doctor_exit_code(&r);
}
