/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Path resolution where bpf_d_path is not allowed (the path_* hooks,
 * file_mprotect, unix sockets): a bounded walk over dentries and mount
 * points, done by the program itself, relative to the task's root like
 * d_path. Deeper than CUSTODE_WALK_DEPTH components or longer than
 * CUSTODE_PATH_MAX: -ENAMETOOLONG (the caller denies with path.too_long).
 */
#ifndef CUSTODE_PATH_BPF_H
#define CUSTODE_PATH_BPF_H

#include "custode.bpf.h"

#define CUSTODE_WALK_DEPTH 64    /* path components */
#define CUSTODE_WALK_MOUNTS 16   /* mount points crossed */
#define CUSTODE_NAME_MAX 255

/*
 * The walk's state. It lives in the per-CPU map value, not on the stack:
 * the 6.1 verifier checks a bpf_loop callback once, with the values its
 * stack context had at the first call (fixed upstream in 6.7), and pruned a
 * depth check on that assumption. Map values are unknown to it, so every
 * bound below is checked for real.
 */
struct custode_walk_state {
	__u64 d, mnt, vmnt, root_d, root_m, mnt_ns;
	__u32 n;
	__u32 off;
	__s32 state; /* 0 walking, 1 done, <0 -errno */
	__u32 _pad;
};

/* Where paths are built: a rule key whose path runs on into tail (PATH_MAX + slack for the last write). */
struct custode_pathbuf {
	struct custode_path_key key;
	char tail[CUSTODE_PATH_MAX - CUSTODE_RULE_PATH_MAX + CUSTODE_NAME_MAX + 1];
	__u64 dents[CUSTODE_WALK_DEPTH];
	struct custode_walk_state ws;
};

/* Keep the compiler from dropping a bound mask it believes redundant. */
#define CUSTODE_OPAQUE(x) asm volatile("" : "+r"(x))

static __always_inline char *custode_pathbuf_str(struct custode_pathbuf *b)
{
	return (char *)b->key.path;
}

/* container_of(vfsmount, struct mount, mnt), read through probe reads only */
static __always_inline struct mount *custode_real_mount(struct vfsmount *m)
{
	return (struct mount *)((unsigned long)m - bpf_core_field_offset(struct mount, mnt));
}

/* Append "/" + the dentry's name at *off. */
static __always_inline int custode_path_append(struct custode_pathbuf *b, __u32 *off, struct dentry *d)
{
	char *buf = custode_pathbuf_str(b);
	const unsigned char *name = BPF_CORE_READ(d, d_name.name);
	__u32 len = BPF_CORE_READ(d, d_name.len), at = *off;

	if (len > CUSTODE_NAME_MAX || at + 1 + len >= CUSTODE_PATH_MAX)
		return -ENAMETOOLONG;
	CUSTODE_OPAQUE(at);
	buf[at & (CUSTODE_PATH_MAX - 1)] = '/';
	at += 1;
	CUSTODE_OPAQUE(at);
	CUSTODE_OPAQUE(len);
	if (bpf_probe_read_kernel(buf + (at & (CUSTODE_PATH_MAX - 1)), len & CUSTODE_NAME_MAX, name))
		return -ENOENT;
	*off = at + len;
	return 0;
}

struct custode_walk_ctx {
	struct custode_pathbuf *b; /* all state is in b->ws */
};

static long custode_walk_step(__u32 i, void *arg)
{
	struct custode_walk_state *st = &((struct custode_walk_ctx *)arg)->b->ws;
	struct custode_pathbuf *b = ((struct custode_walk_ctx *)arg)->b;
	struct mount *mnt = (struct mount *)st->mnt;
	struct dentry *d = (struct dentry *)st->d;
	unsigned long parent;
	__u32 n = st->n;

	if (st->d == st->root_d && st->vmnt == st->root_m) {
		st->state = 1;
		return 1;
	}
	if (d == BPF_CORE_READ(mnt, mnt.mnt_root)) {
		parent = (unsigned long)BPF_CORE_READ(mnt, mnt_parent);
		if (!parent || parent == st->mnt) {
			/*
			 * The top of a mount tree that isn't the task's root: a detached
			 * tree (open_tree clone) or another namespace. d_path would call
			 * it "/"; its real place is unknown, so the path is unresolved.
			 */
			st->state = -ENOENT;
			return 1;
		}
		st->d = (unsigned long)BPF_CORE_READ(mnt, mnt_mountpoint);
		st->mnt = parent;
		st->vmnt = parent + bpf_core_field_offset(struct mount, mnt);
		return 0;
	}
	if (n >= CUSTODE_WALK_DEPTH) {
		st->state = -ENAMETOOLONG;
		return 1;
	}
	CUSTODE_OPAQUE(n);
	b->dents[n & (CUSTODE_WALK_DEPTH - 1)] = st->d;
	st->n = n + 1;
	st->d = (unsigned long)BPF_CORE_READ(d, d_parent);
	if (!st->d) {
		st->state = -ENOENT;
		return 1;
	}
	return 0;
}

static long custode_build_step(__u32 i, void *arg)
{
	struct custode_pathbuf *b = ((struct custode_walk_ctx *)arg)->b;
	struct custode_walk_state *st = &b->ws;
	__u32 n = st->n, idx;
	int err;

	if (i >= n || n > CUSTODE_WALK_DEPTH)
		return 1;
	idx = n - 1 - i;
	CUSTODE_OPAQUE(idx);
	err = custode_path_append(b, &st->off, (struct dentry *)b->dents[idx & (CUSTODE_WALK_DEPTH - 1)]);
	if (err) {
		st->state = err;
		return 1;
	}
	return 0;
}

/*
 * Absolute path of (vmnt, dentry), then "/" + last's name if last is given,
 * NUL-terminated at the start of b. Returns the length including the NUL.
 */
static __always_inline long custode_path_build(struct custode_pathbuf *b, struct vfsmount *vmnt, struct dentry *dentry,
					       struct dentry *last)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct custode_walk_ctx c = {.b = b};
	struct custode_walk_state *st = &b->ws;
	__u32 off;
	int err;

	st->d = (unsigned long)dentry;
	st->vmnt = (unsigned long)vmnt;
	st->mnt = (unsigned long)custode_real_mount(vmnt);
	st->root_d = (unsigned long)BPF_CORE_READ(task, fs, root.dentry);
	st->root_m = (unsigned long)BPF_CORE_READ(task, fs, root.mnt);
	st->n = 0;
	st->off = 0;
	st->state = 0;
	bpf_loop(CUSTODE_WALK_DEPTH + CUSTODE_WALK_MOUNTS, custode_walk_step, &c, 0);
	if (st->state == 0)
		return -ENAMETOOLONG; /* more mount points than we follow */
	if (st->state < 0)
		return st->state;
	st->state = 0;
	bpf_loop(CUSTODE_WALK_DEPTH, custode_build_step, &c, 0);
	if (st->state < 0)
		return st->state;
	off = st->off;
	if (last && (err = custode_path_append(b, &off, last)))
		return err;
	if (off == 0)
		custode_pathbuf_str(b)[off++] = '/';
	CUSTODE_OPAQUE(off);
	custode_pathbuf_str(b)[off & (CUSTODE_PATH_MAX - 1)] = 0;
	return off + 1;
}

/* Is the mount in the current task's mount namespace (not detached, not another namespace's)? */
static __always_inline int custode_mount_is_ours(struct vfsmount *vmnt)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct mount *m = custode_real_mount(vmnt);

	return (unsigned long)BPF_CORE_READ(m, mnt_ns) == (unsigned long)task->nsproxy->mnt_ns;
}

/*
 * d_path names an unlinked file "<path> (deleted)": decide it by the name it
 * had, not as a sibling of that name. Returns the new length.
 */
static __always_inline long custode_strip_deleted(struct custode_pathbuf *b, long len)
{
	static const char suffix[] = " (deleted)";
	char *buf = custode_pathbuf_str(b);
	__u32 at;

	if (len < 12 || len > CUSTODE_PATH_MAX)
		return len;
	at = (__u32)len - 11; /* the suffix starts here; len counts the NUL */
	CUSTODE_OPAQUE(at);
	at &= CUSTODE_PATH_MAX - 1;
	for (int i = 0; i < 10; i++)
		if (buf[at + i] != suffix[i])
			return len;
	buf[at] = 0;
	return at + 1;
}

#endif
