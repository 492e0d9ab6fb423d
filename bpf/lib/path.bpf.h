/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
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

/* Where paths are built: a rule key whose path runs on into tail (PATH_MAX + slack for the last write). */
struct custode_pathbuf {
	struct custode_path_key key;
	char tail[CUSTODE_PATH_MAX - CUSTODE_RULE_PATH_MAX + CUSTODE_NAME_MAX + 1];
	__u64 dents[CUSTODE_WALK_DEPTH];
};

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
	buf[at & (CUSTODE_PATH_MAX - 1)] = '/';
	at += 1;
	if (bpf_probe_read_kernel(buf + (at & (CUSTODE_PATH_MAX - 1)), len & CUSTODE_NAME_MAX, name))
		return -ENOENT;
	*off = at + len;
	return 0;
}

/*
 * The walk and the build are bpf_loop callbacks: the verifier checks one
 * iteration, not every unrolled one (a plain loop over dentries and mounts
 * exceeds its budget).
 */
struct custode_walk_ctx {
	struct custode_pathbuf *b;
	unsigned long d, mnt, vmnt, root_d, root_m;
	__u32 n;
	__u32 off;
	int state; /* 0 walking, 1 done, <0 -errno */
};

static long custode_walk_step(__u32 i, void *arg)
{
	struct custode_walk_ctx *c = arg;
	struct mount *mnt = (struct mount *)c->mnt;
	struct dentry *d = (struct dentry *)c->d, *mnt_root;
	unsigned long parent;

	if (c->d == c->root_d && c->vmnt == c->root_m) {
		c->state = 1;
		return 1;
	}
	mnt_root = BPF_CORE_READ(mnt, mnt.mnt_root);
	if (d == mnt_root) {
		parent = (unsigned long)BPF_CORE_READ(mnt, mnt_parent);
		if (!parent || parent == c->mnt) {
			c->state = 1; /* the root of the mount namespace */
			return 1;
		}
		c->d = (unsigned long)BPF_CORE_READ(mnt, mnt_mountpoint);
		c->mnt = parent;
		c->vmnt = parent + bpf_core_field_offset(struct mount, mnt);
		return 0;
	}
	if (c->n >= CUSTODE_WALK_DEPTH) {
		c->state = -ENAMETOOLONG;
		return 1;
	}
	c->b->dents[c->n & (CUSTODE_WALK_DEPTH - 1)] = c->d;
	c->n++;
	c->d = (unsigned long)BPF_CORE_READ(d, d_parent);
	if (!c->d) {
		c->state = -ENOENT;
		return 1;
	}
	return 0;
}

static long custode_build_step(__u32 i, void *arg)
{
	struct custode_walk_ctx *c = arg;
	int err;

	if (i >= c->n)
		return 1;
	err = custode_path_append(c->b, &c->off, (struct dentry *)c->b->dents[(c->n - 1 - i) & (CUSTODE_WALK_DEPTH - 1)]);
	if (err) {
		c->state = err;
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
	struct custode_walk_ctx c = {};
	int err;

	c.b = b;
	c.d = (unsigned long)dentry;
	c.vmnt = (unsigned long)vmnt;
	c.mnt = (unsigned long)custode_real_mount(vmnt);
	c.root_d = (unsigned long)BPF_CORE_READ(task, fs, root.dentry);
	c.root_m = (unsigned long)BPF_CORE_READ(task, fs, root.mnt);
	bpf_loop(CUSTODE_WALK_DEPTH + CUSTODE_WALK_MOUNTS, custode_walk_step, &c, 0);
	if (c.state == 0)
		return -ENAMETOOLONG; /* more mount points than we follow */
	if (c.state < 0)
		return c.state;
	c.state = 0;
	bpf_loop(CUSTODE_WALK_DEPTH, custode_build_step, &c, 0);
	if (c.state < 0)
		return c.state;
	if (last && (err = custode_path_append(b, &c.off, last)))
		return err;
	if (c.off == 0)
		custode_pathbuf_str(b)[c.off++] = '/';
	custode_pathbuf_str(b)[c.off & (CUSTODE_PATH_MAX - 1)] = 0;
	return c.off + 1;
}

#endif
