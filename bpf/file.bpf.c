// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * File policy: lsm/file_open decides read, write and exec by the opened
 * file's resolved path. The path is resolved with bpf_d_path (allowed in
 * file_open) and looked up in the run's rules (an LPM trie, cost bounded by
 * the path length, independent of the number of rules).
 */
#include "custode.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define FMODE_READ 0x1
#define FMODE_WRITE 0x2
#define FMODE_EXEC 0x20
#define __FMODE_EXEC 0x20 /* in f_flags: set by execve's open (f_mode has it only on newer kernels) */
#define O_TRUNC 01000

/* Per-CPU scratch: the rule key (with the whole resolved path) and the record. */
struct file_scratch {
	struct custode_path_key key; /* key.path holds the first bytes of path[] */
	char path_tail[CUSTODE_PATH_MAX - CUSTODE_RULE_PATH_MAX];
	/* a struct custode_event followed by its path */
	__u64 ev[(sizeof(struct custode_event) + CUSTODE_PATH_MAX) / 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct file_scratch);
} file_scratch SEC(".maps");

static __always_inline __u32 file_access(struct file *file)
{
	__u32 mode = BPF_CORE_READ(file, f_mode);
	__u32 flags = BPF_CORE_READ(file, f_flags);
	__u32 want = 0;

	if ((mode & FMODE_EXEC) || (flags & __FMODE_EXEC))
		want |= CUSTODE_ACCESS_EXEC;
	if (mode & FMODE_READ)
		want |= CUSTODE_ACCESS_READ;
	/* O_TRUNC truncates even with O_RDONLY, after file_open: it is a write. */
	if ((mode & FMODE_WRITE) || (flags & O_TRUNC))
		want |= CUSTODE_ACCESS_WRITE;
	return want;
}

static __always_inline __u32 missing_reason(__u32 missing)
{
	if (missing & CUSTODE_ACCESS_EXEC)
		return CUSTODE_REASON_FILE_EXEC_DENIED;
	if (missing & CUSTODE_ACCESS_WRITE)
		return CUSTODE_REASON_FILE_WRITE_DENIED;
	if (missing & CUSTODE_ACCESS_READ)
		return CUSTODE_REASON_FILE_READ_DENIED;
	if (missing & CUSTODE_ACCESS_CREATE)
		return CUSTODE_REASON_FILE_CREATE_DENIED;
	return CUSTODE_REASON_FILE_DELETE_DENIED;
}

/* Write a record for a denied (or audited) open. The path, if any, is in s->key. */
static __always_inline void file_event(struct file_scratch *s, struct file *file, struct custode_run *run,
				       __u32 reason, __u32 want, long path_len, __u32 enforced)
{
	struct custode_event *ev = (struct custode_event *)s->ev;
	__u32 n = 0, i;
	long err;

	custode_event_init(ev, CUSTODE_HOOK_FILE_OPEN, reason, run, enforced);
	ev->access = want;
	ev->object = CUSTODE_OBJECT_FILE;
	ev->obj.file.dev = BPF_CORE_READ(file, f_inode, i_sb, s_dev);
	ev->obj.file.ino = BPF_CORE_READ(file, f_inode, i_ino);
	ev->obj.file.mode = BPF_CORE_READ(file, f_inode, i_mode);
	if (path_len > 0 && path_len <= CUSTODE_PATH_MAX) {
		/* Copy the resolved path, 8 bytes a step, bounded for the verifier. */
		__u64 *dst = (__u64 *)ev->path;
		__u64 *src = (__u64 *)s->key.path;

		for (i = 0; i < CUSTODE_PATH_MAX / 8; i++) {
			if (i * 8 >= path_len)
				break;
			dst[i] = src[i];
		}
		n = path_len;
		ev->path[CUSTODE_PATH_MAX - 1] = 0;
	} else {
		ev->flags |= CUSTODE_EVENT_PATH_PARTIAL;
	}
	ev->obj.file.path_len = n;
	n = (sizeof(*ev) + n + 7) & ~7u;
	if (n > sizeof(struct custode_event) + CUSTODE_PATH_MAX)
		n = sizeof(struct custode_event) + CUSTODE_PATH_MAX;
	ev->size = n;
	err = bpf_ringbuf_output(&custode_events, ev, n, 0);
	custode_count_stat(err != 0);
}

SEC("lsm/file_open")
int BPF_PROG(custode_file_open, struct file *file, int ret)
{
	struct custode_run *run = NULL;
	struct file_scratch *s;
	__u64 run_cgid = 0;
	__u32 zero = 0, want, allow = 0, reason = 0, enforced;
	struct custode_path_rule *rule;
	long len;
	int where;

	if (ret)
		return ret; /* honour earlier LSM verdicts */
	where = custode_current_run(&run, &run_cgid);
	if (where == CUSTODE_NOT_IN_RUN)
		return 0;

	s = bpf_map_lookup_elem(&file_scratch, &zero);
	if (!s)
		return -EACCES; /* cannot happen; deny rather than allow */
	want = file_access(file);
	enforced = 1;

	/* Resolve first: every record, even for a cancelled or unregistered run, names the file. */
	len = bpf_d_path(&file->f_path, (char *)s->key.path, CUSTODE_PATH_MAX);
	if (where == CUSTODE_UNREGISTERED || !run) {
		reason = CUSTODE_REASON_RUN_UNREGISTERED;
		goto deny;
	}
	enforced = !(run->flags & CUSTODE_RUN_AUDIT);
	if (run->flags & CUSTODE_RUN_CANCELLED) {
		reason = CUSTODE_REASON_RUN_CANCELLED;
		enforced = 1;
		goto deny;
	}
	if (!(run->flags & CUSTODE_RUN_FILE))
		return 0;
	if (len < 0) {
		reason = len == -ENAMETOOLONG ? CUSTODE_REASON_PATH_TOO_LONG : CUSTODE_REASON_PATH_UNRESOLVED;
		goto deny;
	}
	/* d_path marks names outside the task's root "(unreachable)/...": not absolute. */
	if (len < 2 || s->key.path[0] != '/') {
		reason = CUSTODE_REASON_PATH_UNRESOLVED;
		goto deny;
	}
	s->key.ruleset = run->ruleset;
	s->key.prefixlen = 32 + 8 * (len < CUSTODE_RULE_PATH_MAX ? len : CUSTODE_RULE_PATH_MAX);
	rule = bpf_map_lookup_elem(&custode_path_rules, &s->key);
	if (rule)
		allow = rule->allow;
	if (!(want & ~allow))
		return 0;
	reason = missing_reason(want & ~allow);

deny:
	custode_count(run_cgid, reason);
	file_event(s, file, run, reason, want, len, enforced);
	return enforced ? -EACCES : 0;
}
