// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Probes for `custode doctor`: the smallest program of each class custode
 * needs. Loading (not attaching) each one tells whether the host allows it.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("lsm/file_open")
int BPF_PROG(probe_lsm, struct file *file, int ret)
{
	return ret;
}

/*
 * Not a host check but a verifier rule: whether this kernel lets the inode
 * of a file's directory, reached through d_parent, reach the inode-storage
 * helpers (6.1 and 6.12 do; 7.x gives BPF d_parent as an untrusted
 * pointer). The file class keeps its directory decisions on that inode
 * where it does (bpf/file.bpf.c, custode_dir_storage): the same chain of
 * loads as there.
 */
struct {
	__uint(type, BPF_MAP_TYPE_INODE_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} probe_parent_slot SEC(".maps");

SEC("lsm/file_open")
int BPF_PROG(probe_parent_storage, struct file *file, int ret)
{
	struct dentry *d = file->f_path.dentry, *p;

	if (!d)
		return ret;
	p = d->d_parent;
	if (p && p != d)
		bpf_inode_storage_get(&probe_parent_slot, p->d_inode, 0, 0);
	return ret;
}

SEC("cgroup/connect4")
int probe_cgroup_sock_addr(struct bpf_sock_addr *ctx)
{
	return 1;
}
