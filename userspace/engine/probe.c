// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <bpf/libbpf.h>

#include "custode/abi.h"
#include "engine/probe.h"
#include "state/state.h"
#include "util/fsutil.h"
#include "util/reasons.h"

#include "probe.skel.h"

/* libbpf's messages are kept (not printed) so callers can show them with a refusal. */
static char libbpf_log_buf[8192];
static size_t libbpf_log_len;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[1024];
	int n;

	if (getenv("CUSTODE_BPF_DEBUG")) {
		/* developers: the whole libbpf and verifier output, as it comes */
		va_list copy;
		va_copy(copy, ap);
		vfprintf(stderr, fmt, copy);
		va_end(copy);
	}
	if (level == LIBBPF_DEBUG)
		return 0;
	n = vsnprintf(line, sizeof(line), fmt, ap);
	if (n <= 0)
		return 0;
	/* keep the tail: the verifier's verdict is at the end */
	if ((size_t)n >= sizeof(libbpf_log_buf))
		n = sizeof(libbpf_log_buf) - 1;
	if (libbpf_log_len + (size_t)n >= sizeof(libbpf_log_buf)) {
		size_t drop = libbpf_log_len + (size_t)n - sizeof(libbpf_log_buf) + 1;
		memmove(libbpf_log_buf, libbpf_log_buf + drop, libbpf_log_len - drop);
		libbpf_log_len -= drop;
	}
	memcpy(libbpf_log_buf + libbpf_log_len, line, (size_t)n);
	libbpf_log_len += (size_t)n;
	libbpf_log_buf[libbpf_log_len] = 0;
	return 0;
}

__attribute__((constructor)) static void engine_init_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}

const char *custode_libbpf_log(void)
{
	return libbpf_log_buf;
}

/*
 * From the kept log: the program libbpf last failed to load and the
 * verifier's verdict on it (the last line before "processed N insns", or
 * libbpf's own reason, such as an unresolved CO-RE relocation).
 */
void custode_libbpf_failure(char *prog, size_t proglen, char *verdict, size_t verdictlen)
{
	const char *p = libbpf_log_buf, *last = NULL, *line, *end;
	const char *tag = "libbpf: prog '";

	prog[0] = verdict[0] = 0;
	for (const char *q = p; (q = strstr(q, tag)); q += strlen(tag))
		if (strstr(q, "': failed to load") && strchr(q, '\n') > strstr(q, "': failed to load"))
			last = q;
	if (last) {
		const char *name = last + strlen(tag), *quote = strchr(name, '\'');
		snprintf(prog, proglen, "%.*s", quote ? (int)(quote - name) : 0, name);
	}
	/* the verdict: the line before "processed ", else the first "failed to resolve CO-RE" line */
	line = NULL;
	for (const char *q = p; (q = strstr(q, "\nprocessed ")); q++) {
		const char *b = q;
		while (b > p && b[-1] != '\n')
			b--;
		line = b;
	}
	if (!line)
		line = strstr(p, "failed to resolve CO-RE");
	if (!line)
		line = last;
	if (line) {
		end = strchr(line, '\n');
		snprintf(verdict, verdictlen, "%.*s", end ? (int)(end - line) : (int)strlen(line), line);
	}
}

void custode_libbpf_log_reset(void)
{
	libbpf_log_len = 0;
	libbpf_log_buf[0] = 0;
}


int custode_parse_lockdown(const char *text, char *out, size_t outlen)
{
	const char *open = strchr(text, '['), *close;
	size_t len;

	if (!open || !(close = strchr(open, ']')))
		return -EINVAL;
	len = (size_t)(close - open - 1);
	if (len == 0 || len >= outlen)
		return -EINVAL;
	memcpy(out, open + 1, len);
	out[len] = 0;
	return 0;
}

bool custode_lsm_list_has(const char *list, const char *lsm)
{
	size_t n = strlen(lsm);

	if (n == 0)
		return false;
	for (const char *p = list; (p = strstr(p, lsm)); p += n)
		if ((p == list || p[-1] == ',') && (p[n] == 0 || p[n] == ',' || p[n] == '\n'))
			return true;
	return false;
}

static void ensure_securityfs(void)
{
	struct statfs st;

	if (statfs("/sys/kernel/security", &st) == 0 && st.f_type == SECURITYFS_MAGIC)
		return;
	if (geteuid() == 0)
		mount("securityfs", "/sys/kernel/security", "securityfs", 0, NULL);
}

void custode_probe_host(struct custode_probe_result *r)
{
	char *text = NULL;

	memset(r, 0, sizeof(*r));
	ensure_securityfs();
	if (custode_read_file("/sys/kernel/security/lsm", 4096, &text, NULL) == 0) {
		r->lsm_list_known = true;
		snprintf(r->lsm_list, sizeof(r->lsm_list), "%s", text);
		r->lsm_list[strcspn(r->lsm_list, "\n")] = 0;
		r->bpf_lsm_active = custode_lsm_list_has(r->lsm_list, "bpf");
		free(text);
		text = NULL;
	}
	if (custode_read_file("/sys/kernel/security/lockdown", 4096, &text, NULL) == 0) {
		if (custode_parse_lockdown(text, r->lockdown, sizeof(r->lockdown)) < 0)
			r->lockdown[0] = 0;
		free(text);
	}
	r->btf = access("/sys/kernel/btf/vmlinux", R_OK) == 0;
}

enum probe_prog { PROBE_LSM, PROBE_CGROUP };

/* Load one of the probe object's programs, then drop it all. */
static int probe_load_prog(enum probe_prog which)
{
	struct probe_bpf *skel;
	int err;

	skel = probe_bpf__open();
	if (!skel)
		return -errno;
	bpf_program__set_autoload(skel->progs.probe_lsm, which == PROBE_LSM);
	bpf_program__set_autoload(skel->progs.probe_cgroup_sock_addr, which == PROBE_CGROUP);
	err = probe_bpf__load(skel);
	probe_bpf__destroy(skel);
	return err;
}

static int probe_load(bool lsm)
{
	return probe_load_prog(lsm ? PROBE_LSM : PROBE_CGROUP);
}

/*
 * Probe one kind of program (LSM, or cgroup): *loads and *err_out, or, not
 * as root, EPERM and "not probed" in cause. Whether it was loaded.
 */
static bool probe_kind(bool lsm, bool *probed, bool *loads, int *err_out, char *cause, size_t len)
{
	int err;

	*probed = true;
	if (geteuid() != 0) {
		*err_out = EPERM;
		snprintf(cause, len, "not probed: loading BPF needs root");
		return false;
	}
	err = probe_load(lsm);
	*loads = err == 0;
	*err_out = -err;
	return true;
}

void custode_probe_lsm(struct custode_probe_result *r)
{
	custode_probe_host(r);
	if (!probe_kind(true, &r->lsm_probed, &r->lsm_loads, &r->lsm_errno, r->lsm_cause, sizeof(r->lsm_cause)) ||
	    r->lsm_loads)
		return;
	if (!r->btf)
		snprintf(r->lsm_cause, sizeof(r->lsm_cause),
			 "the kernel exposes no BTF (/sys/kernel/btf/vmlinux missing); LSM programs need it");
	else if (r->lsm_list_known && !r->bpf_lsm_active)
		snprintf(r->lsm_cause, sizeof(r->lsm_cause),
			 "BPF-LSM is not active (active LSMs: %s); boot with lsm=...,bpf and CONFIG_BPF_LSM=y",
			 r->lsm_list);
	else if (r->lsm_errno == EPERM && r->lockdown[0] && strcmp(r->lockdown, "none") != 0)
		snprintf(r->lsm_cause, sizeof(r->lsm_cause),
			 "lockdown=%s: the locked-down kernel refuses LSM programs (EPERM with an empty verifier "
			 "log, as for fentry/fexit); lockdown cannot be lowered at run time",
			 r->lockdown);
	else
		snprintf(r->lsm_cause, sizeof(r->lsm_cause), "loading an lsm/file_open program failed: %s",
			 strerror(r->lsm_errno));
}

/* This boot's id (36 characters), or "" if the kernel doesn't say. */
static void boot_id(char out[40])
{
	char *text = NULL;

	out[0] = 0;
	if (custode_read_file("/proc/sys/kernel/random/boot_id", 64, &text, NULL) == 0) {
		snprintf(out, 40, "%.36s", text);
		free(text);
	}
}

/* The record: "<boot id> <lsm_loads 0|1> <lsm_errno> <cause>\n". */
void custode_probe_lsm_cached(struct custode_probe_result *r)
{
	char boot[40], id[40], line[600], *text = NULL;
	int loads, err, n = 0;

	boot_id(boot);
	if (boot[0] && geteuid() == 0 && custode_read_file(CUSTODE_LSM_PROBE_FILE, sizeof(line), &text, NULL) == 0) {
		if (sscanf(text, "%39s %d %d %n", id, &loads, &err, &n) == 3 && n > 0 && strcmp(id, boot) == 0 &&
		    (loads == 0 || loads == 1) && err >= 0) {
			custode_probe_host(r);
			r->lsm_probed = true;
			r->lsm_loads = loads;
			r->lsm_errno = err;
			snprintf(r->lsm_cause, sizeof(r->lsm_cause), "%s", text + n);
			r->lsm_cause[strcspn(r->lsm_cause, "\n")] = 0;
			free(text);
			return;
		}
		free(text);
	}
	custode_probe_lsm(r);
	if (!boot[0] || geteuid() != 0)
		return;
	n = snprintf(line, sizeof(line), "%s %d %d %s\n", boot, r->lsm_loads, r->lsm_errno, r->lsm_cause);
	if (n > 0 && (size_t)n < sizeof(line) && custode_mkdir_p(CUSTODE_STATE_DIR, 0700) == 0)
		custode_write_file_volatile(CUSTODE_LSM_PROBE_FILE, line, (size_t)n, 0600); /* a cache: a failed write costs the next run a probe */
}

void custode_probe_cgroup(struct custode_probe_result *r)
{
	if (probe_kind(false, &r->cgroup_probed, &r->cgroup_loads, &r->cgroup_errno, r->cgroup_cause,
		       sizeof(r->cgroup_cause)) &&
	    !r->cgroup_loads)
		snprintf(r->cgroup_cause, sizeof(r->cgroup_cause), "loading a cgroup/connect4 program failed: %s",
			 strerror(r->cgroup_errno));
}

unsigned custode_probe_classes(const struct custode_probe_result *r, unsigned want)
{
	unsigned loads = 0;

	if (r->lsm_loads)
		loads |= CUSTODE_CLASS_FILE | CUSTODE_CLASS_PROCESS;
	if (r->cgroup_loads)
		loads |= CUSTODE_CLASS_EGRESS;
	return want & loads;
}

void custode_probe_class_refusal(const struct custode_probe_result *r, unsigned cls, struct custode_refusal *why)
{
	if (cls & (CUSTODE_CLASS_FILE | CUSTODE_CLASS_PROCESS))
		custode_refuse(why, 0, CUSTODE_REASON_KERNEL_LSM_UNAVAILABLE, "%s",
			       r->lsm_probed ? r->lsm_cause : "BPF-LSM was not probed");
	else
		custode_refuse(why, 0, CUSTODE_REASON_KERNEL_CGROUP_BPF_UNAVAILABLE, "%s",
			       r->cgroup_probed ? r->cgroup_cause : "cgroup BPF was not probed");
}
