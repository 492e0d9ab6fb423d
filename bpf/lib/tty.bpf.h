/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Terminals and runs. A terminal belongs to the session whose controlling
 * terminal it is (tty->ctrl.session); a run may use its own terminals (the
 * pty custode's launcher gives it, ptys it makes itself), never one whose
 * session is led by a process outside the run — another login's /dev/pts/N,
 * the shell that started custode — nor a host pty of no session (file.bpf.c
 * pty_foreign: who made a pty is recorded when its slave is created). Probe reads
 * throughout: these are rare paths (pty opens, tty ioctls).
 */
#ifndef CUSTODE_TTY_BPF_H
#define CUSTODE_TTY_BPF_H

#include "custode.bpf.h"

#define CUSTODE_S_IFMT 00170000
#define CUSTODE_S_IFCHR 0020000
#define CUSTODE_DEVPTS_SUPER_MAGIC 0x1cd1

#define TTY_MAJOR 4
#define TTYAUX_MAJOR 5 /* /dev/tty, /dev/console, /dev/ptmx */
#define UNIX98_PTY_SLAVE_MAJOR 136
#define UNIX98_PTY_MAJOR_COUNT 8

/* Is this inode a terminal whose open file keeps a struct tty_file_private in private_data? */
static __always_inline bool custode_is_tty_inode(struct inode *inode)
{
	__u32 major;

	if (!inode || (BPF_CORE_READ(inode, i_mode) & CUSTODE_S_IFMT) != CUSTODE_S_IFCHR)
		return false;
	major = BPF_CORE_READ(inode, i_rdev) >> 20;
	return major == TTY_MAJOR || major == TTYAUX_MAJOR ||
	       (major >= UNIX98_PTY_SLAVE_MAJOR && major < UNIX98_PTY_SLAVE_MAJOR + UNIX98_PTY_MAJOR_COUNT);
}

/* A pty slave on a devpts mount (/dev/pts/N): its dentry's d_fsdata is its tty. */
static __always_inline struct tty_struct *custode_devpts_slave(struct file *file)
{
	struct inode *inode = BPF_CORE_READ(file, f_inode);
	__u32 major;

	if (!inode || BPF_CORE_READ(inode, i_sb, s_magic) != CUSTODE_DEVPTS_SUPER_MAGIC ||
	    (BPF_CORE_READ(inode, i_mode) & CUSTODE_S_IFMT) != CUSTODE_S_IFCHR)
		return NULL;
	major = BPF_CORE_READ(inode, i_rdev) >> 20;
	if (major < UNIX98_PTY_SLAVE_MAJOR || major >= UNIX98_PTY_SLAVE_MAJOR + UNIX98_PTY_MAJOR_COUNT)
		return NULL;
	return (struct tty_struct *)BPF_CORE_READ(file, f_path.dentry, d_fsdata);
}

/*
 * A terminal of the host rather than a pty: virtual consoles and serial
 * lines (major 4: /dev/tty0..63, /dev/ttyS*), /dev/console (5:1), the
 * consoles' screen memory (7: /dev/vcs*, vcsa*), USB and ARM serial (188,
 * 166, 204) and hypervisor consoles (229: /dev/hvc*). A run's terminal is
 * always a pty (the launcher's, or one it makes through /dev/ptmx), so a run
 * never needs one of these; reading one is reading what someone types at the
 * machine, writing one a fake prompt. Decided by device number, so a node
 * the run makes itself (mknod) is the same device. /dev/tty (5:0, the
 * caller's own controlling terminal) and /dev/ptmx (5:2) are not in the list.
 */
static __always_inline bool custode_host_terminal(struct inode *inode)
{
	__u32 rdev, major, minor;

	if (!inode || (BPF_CORE_READ(inode, i_mode) & CUSTODE_S_IFMT) != CUSTODE_S_IFCHR)
		return false;
	rdev = BPF_CORE_READ(inode, i_rdev);
	major = rdev >> 20;
	minor = rdev & ((1U << 20) - 1);
	return major == TTY_MAJOR || (major == TTYAUX_MAJOR && minor == 1) || major == 7 || major == 188 ||
	       major == 166 || major == 204 || major == 229;
}

/* The tty of an open terminal file (custode_is_tty_inode), or NULL. */
static __always_inline struct tty_struct *custode_file_tty(struct file *file)
{
	struct tty_file_private *priv;

	if (!custode_is_tty_inode(BPF_CORE_READ(file, f_inode)))
		return NULL;
	priv = (struct tty_file_private *)BPF_CORE_READ(file, private_data);
	return priv ? BPF_CORE_READ(priv, tty) : NULL;
}

/* Is tty (NULL: no) the controlling terminal of a session? */
static __always_inline bool custode_tty_has_session(struct tty_struct *tty)
{
	return tty && BPF_CORE_READ(tty, ctrl.session);
}

/*
 * Is tty the terminal of a session led from outside run run_cgid? No
 * session: nobody's terminal (a fresh pty), not foreign. A session whose
 * leader is gone: can't tell whose it was, so foreign.
 */
static __always_inline bool custode_tty_session_foreign(struct tty_struct *tty, __u64 run_cgid)
{
	struct pid *sid;
	unsigned long first, task;
	struct cgroup *cg;

	if (!tty)
		return false;
	sid = BPF_CORE_READ(tty, ctrl.session);
	if (!sid)
		return false;
	first = (unsigned long)BPF_CORE_READ(sid, tasks[0].first); /* PIDTYPE_PID: the task whose pid is the sid */
	if (!first)
		return true;
	task = first - bpf_core_field_offset(struct task_struct, pid_links);
	cg = BPF_CORE_READ((struct task_struct *)task, cgroups, dfl_cgrp);
	return !custode_cgroup_in_run(cg, run_cgid);
}

/* Either end of a pty pair, or the terminal itself, belongs to a foreign session. */
static __always_inline bool custode_tty_foreign(struct tty_struct *tty, __u64 run_cgid)
{
	if (!tty)
		return false;
	return custode_tty_session_foreign(tty, run_cgid) ||
	       custode_tty_session_foreign(BPF_CORE_READ(tty, link), run_cgid);
}

#endif
