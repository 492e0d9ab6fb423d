/* SPDX-License-Identifier: Apache-2.0 */
/* What this kernel lets custode load, with the evidence (used by doctor and by the loader). */
#ifndef CUSTODE_ENGINE_PROBE_H
#define CUSTODE_ENGINE_PROBE_H

#include <stdbool.h>
#include <stddef.h>

struct custode_refusal;

struct custode_probe_result {
	bool lsm_list_known;
	char lsm_list[256];      /* /sys/kernel/security/lsm */
	bool bpf_lsm_active;     /* "bpf" in the list */
	char lockdown[32];       /* "none", "integrity", "confidentiality"; "" if unknown */
	bool btf;                /* /sys/kernel/btf/vmlinux */

	bool lsm_probed;
	bool lsm_loads;
	int lsm_errno;
	char lsm_cause[384];     /* why not, in words, naming the cause */

	bool cgroup_probed;
	bool cgroup_loads;
	int cgroup_errno;
	char cgroup_cause[256];
};

/* The active lockdown level from the text of /sys/kernel/security/lockdown ("none [integrity] ..."). */
int custode_parse_lockdown(const char *text, char *out, size_t outlen);
/* Whether the comma-separated LSM list names lsm. */
bool custode_lsm_list_has(const char *list, const char *lsm);

/* Fill the host facts (LSM list, lockdown, BTF); mounts securityfs if needed and possible. */
void custode_probe_host(struct custode_probe_result *r);
/* Host facts, then try to load a minimal lsm/file_open program. */
void custode_probe_lsm(struct custode_probe_result *r);
/*
 * custode_probe_lsm's answer for this boot: taken from CUSTODE_LSM_PROBE_FILE
 * when that file names this boot, else probed and recorded there. For the
 * launcher, which needs the answer on every run (a probe load parses the
 * kernel's BTF: milliseconds). Whether the kernel accepts LSM programs can't
 * change within a boot in the direction that matters: the LSM list is fixed
 * at boot and lockdown can be raised but never lowered. A stale "loads" then
 * ends as a refused engine load (fail closed), never as a weaker run.
 * doctor and the loader's refusals probe afresh.
 */
void custode_probe_lsm_cached(struct custode_probe_result *r);
/* Try to load a minimal cgroup/connect4 program. */
void custode_probe_cgroup(struct custode_probe_result *r);

/*
 * The classes of want (CUSTODE_CLASS_*) the probes in *r say this kernel
 * loads: file and process where an LSM program loads (custode_probe_lsm),
 * egress where a cgroup program does (custode_probe_cgroup); a kind not
 * probed counts as not loading.
 */
unsigned custode_probe_classes(const struct custode_probe_result *r, unsigned want);
/*
 * Why class cls does not load here, from *r: kernel.lsm_unavailable or
 * kernel.cgroup_bpf_unavailable, with the probe's cause.
 */
void custode_probe_class_refusal(const struct custode_probe_result *r, unsigned cls, struct custode_refusal *why);

/* The last lines libbpf logged (verifier output on a load failure). */
const char *custode_libbpf_log(void);
void custode_libbpf_log_reset(void);
/* The program libbpf last failed to load and the verifier's verdict ("" where unknown). */
void custode_libbpf_failure(char *prog, size_t proglen, char *verdict, size_t verdictlen);

#endif
