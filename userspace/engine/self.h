/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CUSTODE_ENGINE_SELF_H
#define CUSTODE_ENGINE_SELF_H

#include <linux/types.h>

/*
 * The kernel's view of this process's executable: the superblock's s_dev
 * (major << 20 | minor, as BPF reads inode->i_sb->s_dev) and the inode
 * number, taken from /proc/self/fdinfo and /proc/self/mountinfo for an fd of
 * /proc/self/exe. stat(2) is not used: btrfs reports a per-subvolume device
 * there, and overlayfs may report the underlying inode. The process
 * protection (bpf/proc.bpf.c) compares these with task->mm->exe_file.
 * Returns 0 or -errno.
 */
int custode_self_exe_identity(__u64 *dev, __u64 *ino);

/*
 * The same for any open fd of this process: its fdinfo, and the mount table
 * of mount_pid (0: this process) — the namespace the fd's mount belongs to,
 * e.g. the peer's for an fd of /proc/PID/exe.
 */
int custode_fd_identity(int fd, int mount_pid, __u64 *dev, __u64 *ino);

/* "\x7fcustode-engine-abi=<CUSTODE_ABI_VERSION>\n": in every custode binary (engine/admit.h). */
extern const char custode_abi_marker[];

/* The same, parsed from an fdinfo text and a mountinfo text (for tests). */
int custode_exe_identity_parse(const char *fdinfo, const char *mountinfo, __u64 *dev, __u64 *ino);

#endif
