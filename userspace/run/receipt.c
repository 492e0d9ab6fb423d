// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "run/receipt.h"
#include "run/seccomp.h"
#include "util/fsutil.h"
#include "util/reasons.h"
#include "util/time.h"

/* RFC 3339 UTC with microseconds, as every output shows a time (docs/output.md) */
static json_t *rfc3339(int64_t ns)
{
	char buf[CUSTODE_TIME_LEN];

	return json_string(custode_time_show(ns, buf, sizeof(buf)));
}

static json_t *strings(const char *const *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static json_t *argv_json(char *const *argv)
{
	json_t *a = json_array();

	for (; argv && *argv; argv++) {
		json_t *s = json_string(*argv);
		json_array_append_new(a, s ? s : json_string("(not UTF-8)"));
	}
	return a;
}

static void limit_json(const struct custode_limit_state *ls, json_t *cg, json_t *not_enforced)
{
	if (!ls->requested)
		return;
	if (ls->enforced)
		json_object_set_new(cg, ls->file, json_string(ls->value));
	else
		json_array_append_new(not_enforced, json_pack("{s:s, s:s, s:s}", "class", "limits", "limit", ls->name,
							      "reason", ls->why_not ? ls->why_not : "not enforced"));
}

/* cgroup limits (enforced, or "no controller"), the wall clock and the output cap. */
static void limits_json(const struct custode_receipt *r, json_t *enforced, json_t *not_enforced)
{
	json_t *cg = json_object();
	bool any = false;

	if (r->limits) {
		limit_json(&r->limits->memory, cg, not_enforced);
		limit_json(&r->limits->pids, cg, not_enforced);
		limit_json(&r->limits->cpu, cg, not_enforced);
		if (r->limits->swap_limited)
			json_object_set_new(cg, "memory.swap.max", json_string("0"));
		any = r->limits->memory.requested || r->limits->pids.requested || r->limits->cpu.requested;
	}
	if (json_object_size(cg))
		json_array_append_new(enforced, json_pack("{s:s, s:s, s:o}", "class", "limits", "mechanism", "cgroup v2",
							  "cgroup", cg));
	else
		json_decref(cg);
	if (r->timeout_sec > 0)
		json_array_append_new(enforced, json_pack("{s:s, s:s, s:I, s:s}", "class", "timeout", "mechanism", "launcher",
							  "seconds", (json_int_t)r->timeout_sec, "source",
							  r->timeout_source ? r->timeout_source : "?"));
	if (r->output_cap >= 0)
		json_array_append_new(enforced, json_pack("{s:s, s:s, s:I, s:I}", "class", "output", "mechanism",
							  "launcher (stdout and stderr relayed)", "limit_bytes",
							  (json_int_t)r->output_cap, "written_bytes", (json_int_t)r->output_written));
	if (!any && r->timeout_sec <= 0 && r->output_cap < 0)
		json_array_append_new(not_enforced, json_pack("{s:s, s:s}", "class", "limits", "reason",
							      "not requested by the policy"));
}

json_t *custode_receipt_json(const struct custode_receipt *r)
{
	static const char *const file_hooks[] = {"lsm/file_open"};
	static const char *const net_hooks[] = {"cgroup/connect4", "cgroup/connect6", "cgroup/sendmsg4",
						"cgroup/sendmsg6", "cgroup/sock_create", "cgroup/bind4", "cgroup/bind6"};
	static const char *const proc_hooks[] = {
		"lsm/ptrace_access_check", "lsm/ptrace_traceme", "lsm/task_kill", "lsm/file_fcntl", "lsm/file_ioctl",
		"lsm/bpf", "lsm/bpf_map", "lsm/bpf_prog", "lsm/key_alloc", "lsm/key_permission", "lsm/perf_event_open",
		"lsm/kernel_module_request", "lsm/kernel_read_file", "lsm/kernel_load_data",
		"lsm/inode_init_security_anon", "lsm/task_alloc", "lsm/bprm_check_security"};
	const struct custode_policy *p = r->policy;
	json_t *o, *enforced = json_array(), *not_enforced = json_array(), *by_reason = json_object(), *pol, *ex;
	char hex[17];
	uint64_t total = 0;

	custode_run_id_format(r->st->run_id, hex);

	if (p->has_filesystem)
		json_array_append_new(enforced, json_pack("{s:s, s:s, s:o, s:i}", "class", "file", "mechanism", "bpf-lsm",
							  "hooks", strings(file_hooks, 1), "rules", (int)p->n_fs));
	else
		json_array_append_new(not_enforced,
				      json_pack("{s:s, s:s}", "class", "file", "reason", "not requested by the policy"));
	if (p->has_network) {
		json_array_append_new(enforced, json_pack("{s:s, s:s, s:o, s:I, s:I, s:b}", "class", "egress", "mechanism",
							  "cgroup-bpf", "hooks", strings(net_hooks, 7), "egress_keys",
							  (json_int_t)r->egress_keys, "private_grants",
							  (json_int_t)r->private_grants, "listen", p->listen));
	} else {
		json_array_append_new(not_enforced,
				      json_pack("{s:s, s:s}", "class", "egress", "reason", "not requested by the policy"));
	}
	json_array_append_new(enforced, json_pack("{s:s, s:s, s:s}", "class", "sockets", "mechanism", "seccomp",
						  "detail",
						  "socket families unix, inet, inet6 and netlink route only; "
						  "io_uring refused"));
	{
		json_t *denied = json_array();

		for (const char *const *c = custode_seccomp_denied; *c; c++)
			json_array_append_new(denied, json_string(*c));
		if (!r->ptrace_allowed) {
			json_array_append_new(denied, json_string("ptrace"));
			json_array_append_new(denied, json_string("process_vm_readv"));
			json_array_append_new(denied, json_string("process_vm_writev"));
		}
		json_array_append_new(
			enforced,
			json_pack("{s:s, s:s, s:o, s:s, s:s, s:s}", "class", "syscalls", "mechanism", "seccomp", "denied", denied,
				  "namespaces", "unshare and clone with a namespace flag denied; clone3 ENOSYS (libc falls back to clone)",
				  "ptrace", r->ptrace_allowed ? "allowed by seccomp (\"ptrace\": \"run\"); the LSM keeps it inside the run"
							      : "denied",
				  "foreign_abis", "killed (i386, x32)"));
	}
	if (p->has_process)
		json_array_append_new(enforced, json_pack("{s:s, s:s, s:o, s:s, s:s, s:s}", "class", "process", "mechanism",
							  "bpf-lsm", "hooks", strings(proc_hooks, sizeof(proc_hooks) / sizeof(proc_hooks[0])),
							  "ptrace", p->ptrace_run ? "run" : "none", "signals", "run",
							  "denied", "bpf, keyrings, perf_event_open, userfaultfd, io_uring, "
							  "module and kexec paths; processes outside the run are unreachable"));
	else
		json_array_append_new(not_enforced, json_pack("{s:s, s:s}", "class", "process", "reason",
							      "not requested by the policy"));
	limits_json(r, enforced, not_enforced);
	if (r->env) {
		json_t *kept = json_array(), *set = json_array();

		for (size_t i = 0; i < r->env->n_kept; i++)
			json_array_append_new(kept, json_string(r->env->kept[i]));
		for (size_t i = 0; i < r->env->n; i++) {
			const char *e = r->env->envp[i];
			size_t n = strcspn(e, "=");
			bool from_caller = false;

			for (size_t k = 0; k < r->env->n_kept && !from_caller; k++)
				from_caller = strlen(r->env->kept[k]) == n && !strncmp(r->env->kept[k], e, n);
			if (!from_caller)
				json_array_append_new(set, json_stringn(e, n));
		}
		json_array_append_new(enforced, json_pack("{s:s, s:s, s:s, s:o, s:o}", "class", "environment", "mechanism",
							  "launcher", "allowlist", p->has_env ? "policy" : "default",
							  "kept", kept, "set", set));
	}
	json_array_append_new(enforced, json_pack("{s:s, s:s, s:s}", "class", "file_descriptors", "mechanism", "launcher",
						  "detail", "every fd above 2 closed before exec (close_range)"));
	json_array_append_new(enforced, json_pack("{s:s, s:s, s:i, s:i, s:s, s:b, s:s}", "class", "credentials",
						  "mechanism", "setresuid, capset, prctl", "uid", (int)r->user->uid, "gid",
						  (int)r->user->gid, "user", r->user->name, "no_new_privs", 1,
						  "capabilities", "none (bounding, ambient, permitted, effective)"));
	json_array_append_new(enforced, json_pack("{s:s, s:s, s:s}", "class", "containment", "mechanism", "cgroup v2",
						  "detail", "the run's cgroup is killed (cgroup.kill) and removed at the end"));

	for (int i = 0; r->counters && i < CUSTODE_REASON_KERNEL_MAX; i++) {
		const char *name = custode_reason_name(i);

		if (!r->counters->denials[i])
			continue;
		total += r->counters->denials[i];
		json_object_set_new(by_reason, name ? name : "unknown", json_integer((json_int_t)r->counters->denials[i]));
	}

	pol = json_pack("{s:s, s:I, s:s, s:s}", "name", p->name, "version", (json_int_t)p->version, "source",
			r->policy_source, "ref", r->policy_ref);
	if (r->policy_digest)
		json_object_set_new(pol, "content_digest", json_string(r->policy_digest));
	if (r->bundle)
		json_object_set(pol, "bundle", (json_t *)r->bundle);
	if (r->policy_version_at_end && r->policy_version_at_end != p->version)
		json_object_set_new(pol, "version_at_end", json_integer((json_int_t)r->policy_version_at_end));

	ex = json_pack("{s:i}", "code", r->exit_code);
	if (r->wait_status >= 0 && WIFEXITED(r->wait_status))
		json_object_set_new(ex, "status", json_integer(WEXITSTATUS(r->wait_status)));
	if (r->wait_status >= 0 && WIFSIGNALED(r->wait_status)) {
		json_object_set_new(ex, "signal", json_integer(WTERMSIG(r->wait_status)));
		json_object_set_new(ex, "signal_name", json_string(sigabbrev_np(WTERMSIG(r->wait_status))
									   ? sigabbrev_np(WTERMSIG(r->wait_status))
									   : "?"));
	}
	json_object_set_new(ex, "cancelled", r->cancelled ? json_string(r->cancelled) : json_null());

	o = json_pack("{s:i, s:s, s:s, s:I, s:o, s:s, s:s, s:o, s:s, s:o, s:o, s:{s:I, s:o}, s:o, s:o, s:o, s:I, s:b}",
		      "receipt_version", CUSTODE_RECEIPT_VERSION, "run_id", hex, "cgroup", r->st->cgroup, "cgroup_id",
		      (json_int_t)r->st->cgroup_id, "command", argv_json(r->argv), "workspace", r->st->workspace, "tmp",
		      r->st->tmp, "policy", pol, "mode", r->audit ? "audit" : "enforce", "enforced", enforced,
		      "not_enforced", not_enforced, "denials", "total", (json_int_t)total, "by_reason", by_reason, "exit",
		      ex, "started", rfc3339(r->started_ns), "ended", rfc3339(r->ended_ns), "duration_ms",
		      (json_int_t)((r->ended_ns - r->started_ns) / 1000000), "cleaned_up", r->reaped);
	/* the seccomp filter's EPERMs happen before any hook: nothing counts them (docs/process.md) */
	if (o)
		json_object_set_new(json_object_get(o, "denials"), "seccomp_refusals_counted", json_false());
	if (o && r->dns) {
		json_t *dns = json_pack("{s:I, s:I, s:I}", "queries", (json_int_t)r->dns->queries, "answered",
					(json_int_t)r->dns->answered, "pins", (json_int_t)r->dns->pins);
		json_t *by = json_object();
		for (int i = 0; i < CUSTODE_DNS_REASONS; i++) {
			const char *name = custode_reason_name(CUSTODE_REASON_DNS_NAME_DENIED + i);
			if (r->dns->denials[i] && name)
				json_object_set_new(by, name, json_integer((json_int_t)r->dns->denials[i]));
		}
		json_object_set_new(dns, "by_reason", by);
		json_object_set_new(o, "resolver", dns);
	}
	if (o) {
		json_t *res = json_object();
		json_object_set_new(res, "memory_peak_bytes", r->memory_peak >= 0 ? json_integer(r->memory_peak) : json_null());
		json_object_set_new(res, "pids_peak", r->pids_peak >= 0 ? json_integer(r->pids_peak) : json_null());
		json_object_set_new(o, "resources", res);
	}
	return o;
}

#define DEST_BAD(why, err, fmt, ...) custode_refuse(why, err, CUSTODE_REASON_RUN_USAGE, "--receipt %s: " fmt, __VA_ARGS__)

/* "/dev/fd/N" or "/proc/self/fd/N": N; else -1. */
static int fd_path(const char *path)
{
	static const char *const prefixes[] = {"/dev/fd/", "/proc/self/fd/"};
	char *end;
	long n;

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t len = strlen(prefixes[i]);

		if (strncmp(path, prefixes[i], len) || !isdigit((unsigned char)path[len]))
			continue;
		errno = 0;
		n = strtol(path + len, &end, 10);
		return errno || *end || n > INT_MAX ? -1 : (int)n;
	}
	return -1;
}

/* An inherited fd: it must be open, and for writing. */
static int open_fd(const char *path, int n, struct custode_receipt_dest *d, struct custode_refusal *why)
{
	int fl = fcntl(n, F_GETFL);

	if (fl < 0)
		return DEST_BAD(why, EBADF, "fd %d is not open", path, n);
	if ((fl & O_ACCMODE) == O_RDONLY)
		return DEST_BAD(why, EBADF, "fd %d is not open for writing", path, n);
	d->fd = fcntl(n, F_DUPFD_CLOEXEC, 3);
	if (d->fd < 0)
		return DEST_BAD(why, errno, "%s", path, strerror(errno));
	return 0;
}

/* A file replaced atomically at the end: not a directory, in a directory we may write in. */
static int check_file(const char *path, struct custode_refusal *why)
{
	char dir[PATH_MAX], *slash;
	struct stat st;

	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
		return DEST_BAD(why, ENAMETOOLONG, "too long", path);
	slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = 0;
	else
		snprintf(dir, sizeof(dir), ".");
	if (path[strlen(path) - 1] == '/')
		return DEST_BAD(why, EISDIR, "names a directory, not a file", path);
	if (stat(dir, &st) < 0)
		return DEST_BAD(why, errno, "directory %s: %s", path, dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return DEST_BAD(why, ENOTDIR, "%s is not a directory", path, dir);
	if (access(dir, W_OK | X_OK) < 0)
		return DEST_BAD(why, errno, "directory %s: %s", path, dir, strerror(errno));
	return 0;
}

int custode_receipt_open(const char *path, struct custode_receipt_dest *d, struct custode_refusal *why)
{
	struct stat st;
	int n;

	d->path = path;
	d->fd = -1;
	if (!strcmp(path, "-"))
		return 0;
	if (!path[0])
		return DEST_BAD(why, EINVAL, "empty", path);
	if ((n = fd_path(path)) >= 0)
		return open_fd(path, n, d, why);
	if (stat(path, &st) < 0) {
		if (errno != ENOENT)
			return DEST_BAD(why, errno, "%s", path, strerror(errno));
		return check_file(path, why);
	}
	if (S_ISDIR(st.st_mode))
		return DEST_BAD(why, EISDIR, "is a directory, not a file", path);
	if (S_ISREG(st.st_mode))
		return check_file(path, why);
	/* a FIFO, a terminal, /dev/null: written in place, never replaced (O_NONBLOCK: a FIFO needs a reader now) */
	d->fd = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (d->fd < 0)
		return DEST_BAD(why, errno, "%s", path, errno == ENXIO ? "a FIFO without a reader" : strerror(errno));
	fcntl(d->fd, F_SETFL, fcntl(d->fd, F_GETFL) & ~O_NONBLOCK);
	return 0;
}

void custode_receipt_close(struct custode_receipt_dest *d)
{
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int custode_receipt_write(const struct custode_receipt_dest *d, const json_t *receipt)
{
	char *text = json_dumps(receipt, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	size_t len;
	int err = 0;

	if (!text)
		return -ENOMEM;
	len = strlen(text);
	text[len] = '\n'; /* json_dumps' NUL: the text is written by length */
	if (!strcmp(d->path, "-")) {
		if (fwrite(text, 1, len + 1, stdout) != len + 1 || fflush(stdout) != 0)
			err = -EIO;
	} else if (d->fd >= 0) {
		err = write_all(d->fd, text, len + 1);
	} else {
		err = custode_write_file_atomic(d->path, text, len + 1, 0644);
	}
	free(text);
	return err;
}
