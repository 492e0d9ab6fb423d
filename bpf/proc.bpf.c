// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Process policy (docs/process.md): a run may not reach a process outside
 * itself (ptrace, PTRACE_MODE_READ access, signals, SIGIO ownership), may not
 * use bpf(), keyrings, perf events, userfaultfd/io_uring or the module and
 * kexec paths, and a cancelled run may not fork or exec. Outside every run,
 * custode's own maps and programs refuse every process but the custode binary
 * that loaded this object.
 *
 * A task's run is the ancestor of its cgroup v2 one level below custode's root
 * (custode_current_run for the caller; task_run_cgid for another task). Every
 * program honours an earlier LSM verdict and denies with -EPERM.
 *
 * Newcomers (bpf/lib/newcomer.bpf.h): marked and cleared here; in their
 * set-up window they are outside the run for these hooks, and no task of a
 * run may ptrace them or read their memory.
 */
#define CUSTODE_NEWCOMERS_OUTSIDE 1
#define CUSTODE_LSM_OBJECT 1 /* bpf/lib/run.bpf.h: the per-task run cache */
#include "tty.bpf.h"
#include "route.bpf.h"
#include "inbound_map.bpf.h"

#ifndef PROT_EXEC
#define PROT_EXEC 0x4
#define PROT_WRITE 0x2
#define VM_EXEC 0x4
#define VM_WRITE 0x2
#endif

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * The custode binary: the kernel's view (superblock s_dev, i_ino) of the
 * executable of the process that loaded this object, set by the loader
 * (userspace/engine/self.c). Only processes executing that inode may open
 * custode's maps and programs from outside the runs.
 */
const volatile __u64 custode_exe_dev = 0;
const volatile __u64 custode_exe_ino = 0;

/*
 * Binaries admitted besides that one (upgrades: docs/process.md). Written
 * only by a binary that may already open it: custode_admitted is custode_*,
 * so bpf_object() below guards it like every other map of the engine.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CUSTODE_MAX_ADMITTED);
	__type(key, struct custode_exe_key);
	__type(value, struct custode_admission);
	CUSTODE_PIN_BY_NAME(custode_admitted);
} custode_admitted SEC(".maps");

#define PTRACE_MODE_NOAUDIT 0x04
#define F_SETOWN 8
#define F_SETOWN_EX 15
#define FIOSETOWN 0x8901
#define SIOCSPGRP 0x8902

#define RUN_UNKNOWN CUSTODE_RUN_UNKNOWN

/* The id of t's cgroup v2 (kernfs node id, what bpf_get_current_cgroup_id returns). */
static __always_inline __u64 task_cgid(struct task_struct *t)
{
	return t->cgroups->dfl_cgrp->kn->id;
}

/*
 * The run of another task (launcher or attached; custode_cgroup_run_btf):
 * 0 when the task is in no run, RUN_UNKNOWN when its cgroup is nested too
 * deeply to walk (treated like a run that is not the caller's). BTF pointer
 * reads only (no bpf_probe_read_kernel: withdrawn under lockdown).
 */
static __always_inline __u64 task_run_cgid(struct task_struct *t)
{
	return custode_cgroup_run_btf(t->cgroups->dfl_cgrp);
}

static __always_inline void task_event(__u16 hook, __u32 reason, struct custode_run *run, __u32 enforced,
				       struct task_struct *t, __u32 target, __u32 detail, __u32 command)
{
	struct custode_event *ev = custode_event_reserve(hook, reason, run, enforced);

	if (!ev)
		return;
	ev->object = CUSTODE_OBJECT_TASK;
	if (t) {
		ev->obj.task.target_pid = t->pid;
		ev->obj.task.target_tgid = t->tgid;
		ev->obj.task.target_cgroup = task_cgid(t);
	} else {
		ev->obj.task.target_tgid = target;
	}
	ev->obj.task.signal = detail;
	ev->obj.task.command = command;
	custode_event_submit(ev);
}

/*
 * Count, record and return the verdict for a denial. Audit mode records and
 * allows — except for what protects the engine itself (bpf), and for
 * cancelled or unregistered runs, which are always denied (custode_enforced).
 */
static __always_inline int deny(__u16 hook, __u32 reason, struct custode_run *run, __u64 run_cgid,
				struct task_struct *t, __u32 target, __u32 detail, __u32 command)
{
	__u32 enforced = custode_enforced(run, reason);

	if (custode_record(run_cgid, hook, reason, run, enforced))
		task_event(hook, reason, run, enforced, t, target, detail, command);
	return enforced ? -EPERM : 0;
}

/*
 * The caller's standing: 0 = not in any run (allow), 1 = in a live run
 * (*runp set), or a denial already made for an unregistered or cancelled run
 * (*verdict set). Every hook of this file starts here.
 */
static __always_inline int caller(struct custode_run **runp, __u64 *cgid, __u16 hook, struct task_struct *t,
				  __u32 target, __u32 detail, __u32 command, int *verdict)
{
	__u32 denial;

	if (!custode_live_run(runp, cgid, &denial))
		return 0;
	if (denial) {
		*verdict = deny(hook, denial, *runp, *cgid, t, target, detail, command);
		return -1;
	}
	return 1;
}

/*
 * May the caller reach task t (ptrace access or a signal)? Inside its own run:
 * signals yes, ptrace only with "ptrace": "run". Outside its run: no, if the
 * caller's policy has a process section — and no either if t's run has one
 * (a run with a process policy is protected from every other run, whatever
 * that run's policy). A task outside every run may reach anything: the host is
 * trusted.
 */
static __always_inline int task_access(__u16 hook, __u32 reason, struct task_struct *t, __u32 detail, bool ptrace,
				       bool quiet)
{
	struct custode_run *run = NULL, *trun;
	__u64 cgid = 0, tcgid;
	int verdict = 0, c;

	c = caller(&run, &cgid, hook, t, 0, detail, 0, &verdict);
	if (c <= 0)
		return verdict;
	tcgid = task_run_cgid(t);
	/*
	 * A newcomer in its set-up window (a runtime's init before the
	 * entrypoint) runs as the host: no task of any run may trace it or
	 * read or write its memory, its fds or its environment, whatever the
	 * run's policy ("ptrace": "run" included).
	 */
	if (ptrace && custode_newcomer_task(t, tcgid))
		goto denied;
	if (tcgid == cgid) {
		if (!ptrace || !(run->flags & CUSTODE_RUN_PROCESS) || (run->flags & CUSTODE_RUN_PTRACE_RUN))
			return 0;
	} else if (!(run->flags & CUSTODE_RUN_PROCESS)) {
		if (!tcgid)
			return 0;
		trun = bpf_map_lookup_elem(&custode_runs, &tcgid);
		if (trun && !(trun->flags & CUSTODE_RUN_PROCESS))
			return 0;
		/* t's run asked for protection (or is unknown): deny */
	}
	/*
	 * PTRACE_MODE_NOAUDIT marks probes such as ps reading /proc/PID/stat:
	 * denied like the rest, but neither counted nor recorded (as the
	 * kernel's own audit does), or every `ps` would flood the receipt.
	 */
denied:
	if (quiet)
		return (run->flags & CUSTODE_RUN_AUDIT) ? 0 : -EPERM;
	return deny(hook, reason, run, cgid, t, 0, detail, 0);
}

/* ptrace attach and PTRACE_MODE_READ access (/proc/PID/mem, environ, maps, fd; process_vm_*; kcmp; pidfd_getfd). */
/*
 * A denied PTRACE_MODE_READ check must stay denied. Since 6.15-ish kernels
 * (7.3: kernel/fork.c may_access_mm) mm_access lets perfmon_capable() —
 * CAP_PERFMON, then CAP_SYS_ADMIN — override a refused ptrace_may_access, so
 * root attached to a run could still process_madvise() a host process or
 * read its /proc/PID/maps. The denial arms a veto on the calling task, tagged
 * with the system call it happened in (number, user ip and sp: what the task
 * is in the middle of); the capable hook refuses those two capabilities in
 * that same call, quietly (the ptrace hook already counted and recorded the
 * denial). A veto left over by a call that never asked is overwritten by the
 * next denial and can only match the same call site again.
 */
struct ptrace_veto {
	__u64 nr, ip, sp;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ptrace_veto);
} custode_ptrace_veto SEC(".maps");

#define PTRACE_MODE_READ 0x01
#define CUSTODE_CAP_SYS_ADMIN 21
#define CUSTODE_CAP_PERFMON 38

static __always_inline void syscall_tag(struct ptrace_veto *v)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

	v->nr = regs->orig_ax;
	v->ip = regs->ip;
	v->sp = regs->sp;
}

CUSTODE_LSM(ptrace_access_check, custode_proc_ptrace_access, struct task_struct *child, unsigned int mode, int ret)
{
	struct ptrace_veto *v;
	int verdict;

	if (ret)
		return ret;
	verdict = task_access(CUSTODE_HOOK_PTRACE_ACCESS_CHECK, CUSTODE_REASON_PROCESS_PTRACE_DENIED, child, mode, true,
			      (mode & PTRACE_MODE_NOAUDIT) != 0);
	if (verdict && (mode & PTRACE_MODE_READ)) {
		v = bpf_task_storage_get(&custode_ptrace_veto, bpf_get_current_task_btf(), NULL,
					 BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (v)
			syscall_tag(v);
		/* no storage (out of memory): the override stays possible; nothing better to do here */
	}
	return verdict;
}

/* Does the calling task hold a ptrace veto made in this very system call? (Consumed by CAP_SYS_ADMIN, the last one asked.) */
static __always_inline bool ptrace_vetoed(int cap)
{
	struct ptrace_veto *v, now;
	bool hit;

	v = bpf_task_storage_get(&custode_ptrace_veto, bpf_get_current_task_btf(), NULL, 0);
	if (!v || (!v->nr && !v->ip))
		return false;
	syscall_tag(&now);
	hit = now.nr == v->nr && now.ip == v->ip && now.sp == v->sp;
	if (cap == CUSTODE_CAP_SYS_ADMIN || !hit)
		v->nr = v->ip = v->sp = 0;
	return hit;
}

/* PTRACE_TRACEME: the caller offers itself to its parent. */
CUSTODE_LSM(ptrace_traceme, custode_proc_ptrace_traceme, struct task_struct *parent, int ret)
{
	if (ret)
		return ret;
	return task_access(CUSTODE_HOOK_PTRACE_TRACEME, CUSTODE_REASON_PROCESS_PTRACE_DENIED, parent, 0, true, false);
}

/*
 * kill(2) and friends, signal 0 probes included. Only user-originated signals
 * reach this hook (the kernel's own, such as SIGCHLD, do not).
 */
CUSTODE_LSM(task_kill, custode_proc_task_kill, struct task_struct *p, struct kernel_siginfo *info, int sig, const struct cred *cred,
	     int ret)
{
	if (ret)
		return ret;
	return task_access(CUSTODE_HOOK_TASK_KILL, CUSTODE_REASON_PROCESS_SIGNAL_DENIED, p, (__u32)sig, false, false);
}

/*
 * SIGIO/SIGURG ownership. The decision is made when the owner is set: at
 * delivery the kernel runs in the context of whoever caused the I/O (another
 * process, or a softirq), which says nothing about who chose the target. A
 * run may make only itself (its process or thread) the owner of a file:
 * F_SETOWN with another pid or a process group, F_SETOWN_EX (its argument is
 * in user memory, which this hook cannot read safely) and the socket ioctls
 * FIOSETOWN/SIOCSPGRP are denied.
 */
CUSTODE_LSM(file_fcntl, custode_proc_file_fcntl, struct file *file, unsigned int cmd, unsigned long arg, int ret)
{
	struct custode_run *run = NULL;
	__u64 cgid = 0, pid_tgid;
	int verdict = 0, c, who = (int)arg;

	if (ret)
		return ret;
	c = caller(&run, &cgid, CUSTODE_HOOK_FILE_FCNTL, NULL, 0, 0, cmd, &verdict);
	if (c <= 0)
		return verdict;
	if (!(run->flags & CUSTODE_RUN_PROCESS))
		return 0;
	if (cmd == F_SETOWN) {
		pid_tgid = bpf_get_current_pid_tgid();
		if (who == 0 || who == (int)(__u32)pid_tgid || who == (int)(pid_tgid >> 32))
			return 0;
		return deny(CUSTODE_HOOK_FILE_FCNTL, CUSTODE_REASON_PROCESS_SIGNAL_DENIED, run, cgid, NULL, (__u32)who, 0,
			    cmd);
	}
	if (cmd == F_SETOWN_EX)
		return deny(CUSTODE_HOOK_FILE_FCNTL, CUSTODE_REASON_PROCESS_SIGNAL_DENIED, run, cgid, NULL, 0, 0, cmd);
	return 0;
}

/*
 * Terminals (docs/process.md "Terminals"). For every run, whatever its
 * policy: no pushing bytes into a terminal's input queue (TIOCSTI), no
 * console selection paste (TIOCLINUX), no line-discipline change (TIOCSETD),
 * no console redirection (TIOCCONS) — on any terminal, its own included.
 * Control of a terminal of a session led from outside the run (making it a
 * controlling terminal, its foreground group, a signal through a pty master,
 * a hangup) is denied too. Launched runs never hold such a terminal (their
 * own session on custode's pty); attached runs may have inherited one.
 */
#define TIOCSCTTY 0x540E
#define TIOCSPGRP 0x5410
#define TIOCSTI 0x5412
#define TIOCLINUX 0x541C
#define TIOCCONS 0x541D
#define TIOCSETD 0x5423
#define TIOCVHANGUP 0x5437
#define TIOCSIG 0x40045436

static __always_inline int ioctl_decide(__u16 hook, struct file *file, unsigned int cmd)
{
	struct custode_run *run = NULL;
	__u64 cgid = 0;
	int verdict = 0, c;

	c = caller(&run, &cgid, hook, NULL, 0, 0, cmd, &verdict);
	if (c <= 0)
		return verdict;
	if (cmd == TIOCSTI || cmd == TIOCLINUX || cmd == TIOCSETD || cmd == TIOCCONS)
		return deny(hook, CUSTODE_REASON_PROCESS_TTY_DENIED, run, cgid, NULL, 0, 0, cmd);
	if ((cmd == TIOCSCTTY || cmd == TIOCSPGRP || cmd == TIOCSIG || cmd == TIOCVHANGUP) &&
	    custode_tty_foreign(custode_file_tty(file), cgid))
		return deny(hook, CUSTODE_REASON_PROCESS_TTY_DENIED, run, cgid, NULL, 0, 0, cmd);
	if ((run->flags & CUSTODE_RUN_PROCESS) && (cmd == FIOSETOWN || cmd == SIOCSPGRP))
		return deny(hook, CUSTODE_REASON_PROCESS_SIGNAL_DENIED, run, cgid, NULL, 0, 0, cmd);
	return 0;
}

CUSTODE_LSM(file_ioctl, custode_proc_file_ioctl, struct file *file, unsigned int cmd, unsigned long arg, int ret)
{
	return ret ? ret : ioctl_decide(CUSTODE_HOOK_FILE_IOCTL, file, cmd);
}

/* The 32-bit compat path has its own hook since 6.8 (and Debian's 6.1): same decisions. */
CUSTODE_LSM_OPTIONAL(file_ioctl_compat, custode_proc_file_ioctl_compat, struct file *file, unsigned int cmd,
		     unsigned long arg, int ret)
{
	return ret ? ret : ioctl_decide(CUSTODE_HOOK_FILE_IOCTL_COMPAT, file, cmd);
}

/*
 * An operation no run with a process policy may perform. Cancelled and
 * unregistered runs are denied whatever their policy.
 */
static __always_inline int run_denied(__u16 hook, __u32 reason, __u32 detail, __u32 command)
{
	struct custode_run *run = NULL;
	__u64 cgid = 0;
	int verdict = 0, c;

	c = caller(&run, &cgid, hook, NULL, 0, detail, command, &verdict);
	if (c <= 0)
		return verdict;
	/*
	 * Runs with a process policy; and every attached run, whatever its
	 * policy: an attached process has no seccomp filter (a launched run's
	 * refuses these calls in every run), so the LSM stands in for it.
	 */
	if (!(run->flags & (CUSTODE_RUN_PROCESS | CUSTODE_RUN_ATTACHED)))
		return 0;
	return deny(hook, reason, run, cgid, NULL, 0, detail, command);
}

/* Keyrings: creating a key or keyring, and any use of an existing one (inherited session keyrings included). */
CUSTODE_LSM(key_alloc, custode_proc_key_alloc, struct key *key, const struct cred *cred, unsigned long flags, int ret)
{
	if (ret)
		return ret;
	return run_denied(CUSTODE_HOOK_KEY_ALLOC, CUSTODE_REASON_PROCESS_KEYRING_DENIED, 0, 0);
}

CUSTODE_LSM(key_permission, custode_proc_key_permission, key_ref_t key_ref, const struct cred *cred, enum key_need_perm need_perm, int ret)
{
	if (ret)
		return ret;
	return run_denied(CUSTODE_HOOK_KEY_PERMISSION, CUSTODE_REASON_PROCESS_KEYRING_DENIED, (__u32)need_perm, 0);
}

/* 6.1: (attr, type) */
CUSTODE_LSM(perf_event_open, custode_proc_perf_event_open, struct perf_event_attr *attr, int type, int ret)
{
	if (ret)
		return ret;
	return run_denied(CUSTODE_HOOK_PERF_EVENT_OPEN, CUSTODE_REASON_PROCESS_PERF_DENIED, (__u32)type, 0);
}

/* later kernels: (type) */
CUSTODE_LSM(perf_event_open, custode_proc_perf_event_open_type, int type, int ret)
{
	if (ret)
		return ret;
	return run_denied(CUSTODE_HOOK_PERF_EVENT_OPEN, CUSTODE_REASON_PROCESS_PERF_DENIED, (__u32)type, 0);
}

/* Module autoloading on the run's behalf (e.g. socket() of an unloaded protocol family). */
CUSTODE_LSM(kernel_module_request, custode_proc_module_request, char *kmod_name, int ret)
{
	if (ret)
		return ret;
	return run_denied(CUSTODE_HOOK_KERNEL_MODULE, CUSTODE_REASON_PROCESS_KERNEL_DENIED, 0, 0);
}

/* finit_module, kexec_file_load, IMA policy and key loading; firmware (requested by drivers) is left alone. */
CUSTODE_LSM(kernel_read_file, custode_proc_kernel_read_file, struct file *file, enum kernel_read_file_id id, bool contents, int ret)
{
	if (ret)
		return ret;
	if (id == READING_FIRMWARE)
		return 0;
	return run_denied(CUSTODE_HOOK_KERNEL_READ_FILE, CUSTODE_REASON_PROCESS_KERNEL_DENIED, (__u32)id, 0);
}

/*
 * fanotify marks that reach past the run (they need CAP_SYS_ADMIN: attached
 * root). A permission event (open, access, exec; pre-access on 6.14+) makes
 * every host process that touches the marked object wait for the run's
 * answer, which it never has to give; a mark on a whole mount or filesystem
 * reports every host process's file activity. Refused like the other kernel
 * surfaces (process.kernel.denied). Inode marks without permission events
 * (inotify, dnotify, unprivileged fanotify) are left alone.
 */
#define CUSTODE_FS_PERM_EVENTS (0x00010000u | 0x00020000u | 0x00040000u | 0x00100000u)

CUSTODE_LSM(path_notify, custode_proc_path_notify, const struct path *path, __u64 mask, unsigned int obj_type, int ret)
{
	if (ret)
		return ret;
	if (!(mask & CUSTODE_FS_PERM_EVENTS) && obj_type == FSNOTIFY_OBJ_TYPE_INODE)
		return 0;
	return run_denied(CUSTODE_HOOK_PATH_NOTIFY, CUSTODE_REASON_PROCESS_KERNEL_DENIED, obj_type, (__u32)mask);
}

/* init_module, kexec_load. */
CUSTODE_LSM(kernel_load_data, custode_proc_kernel_load_data, enum kernel_load_data_id id, bool contents, int ret)
{
	if (ret)
		return ret;
	if (id == LOADING_FIRMWARE)
		return 0;
	return run_denied(CUSTODE_HOOK_KERNEL_LOAD_DATA, CUSTODE_REASON_PROCESS_KERNEL_DENIED, (__u32)id, 0);
}

/*
 * Capabilities no run may use, whatever its policy: a launched run has none
 * at all (its launcher drops them), but a root process attached to a run
 * keeps its own, and no seccomp filter stands in front of reboot(2),
 * settimeofday, iopl, acct or init_module there. Refused for every live run
 * (process.kernel.denied): CAP_SYS_MODULE, CAP_SYS_RAWIO (iopl, ioperm,
 * /dev/mem, raw block I/O), CAP_SYS_PACCT, CAP_SYS_BOOT (reboot, kexec),
 * CAP_SYS_TIME, CAP_AUDIT_CONTROL, CAP_MAC_OVERRIDE, CAP_MAC_ADMIN,
 * CAP_SYSLOG (kernel addresses, the kernel log), and CAP_DAC_READ_SEARCH
 * (open_by_handle_at reaches any file by inode number, past every path
 * rule; ordinary root reads fall back to CAP_DAC_OVERRIDE, so that one is
 * refused without a record), and CAP_NET_ADMIN (routes, addresses, links and
 * firewall of the host's network: a "local" route for a granted address
 * turns it into a host service the egress policy refuses as loopback).
 * Probes the kernel marks CAP_OPT_NOAUDIT (ps, %pK in /proc files) are
 * refused unrecorded too.
 */
#define CUSTODE_CAP_DAC_READ_SEARCH 2
#define CUSTODE_CAP_OPT_NOAUDIT 2 /* 1 << 1 */
#define CUSTODE_RUN_CAPS_DENIED                                                                              \
	((1ULL << 2) | (1ULL << 12) | (1ULL << 16) | (1ULL << 17) | (1ULL << 20) | (1ULL << 22) | (1ULL << 25) | \
	 (1ULL << 30) | (1ULL << 32) | (1ULL << 33) | (1ULL << 34))

CUSTODE_LSM(capable, custode_proc_capable, const struct cred *cred, struct user_namespace *ns, int cap,
	    unsigned int opts, int ret)
{
	struct custode_run *run = NULL;
	__u64 cgid = 0;
	int verdict = 0, c;

	if ((cap == CUSTODE_CAP_PERFMON || cap == CUSTODE_CAP_SYS_ADMIN) && ptrace_vetoed(cap) && !ret)
		return -EPERM; /* perfmon_capable() overriding the ptrace denial above */
	if (ret)
		return ret;
	if (cap < 0 || cap > 63 || !(CUSTODE_RUN_CAPS_DENIED & (1ULL << cap)))
		return 0; /* most checks end here, before any lookup */
	c = caller(&run, &cgid, CUSTODE_HOOK_CAPABLE, NULL, 0, (__u32)cap, 0, &verdict);
	if (c <= 0)
		return verdict;
	if (cap == CUSTODE_CAP_DAC_READ_SEARCH || (opts & CUSTODE_CAP_OPT_NOAUDIT))
		return (run->flags & CUSTODE_RUN_AUDIT) ? 0 : -EPERM;
	return deny(CUSTODE_HOOK_CAPABLE, CUSTODE_REASON_PROCESS_KERNEL_DENIED, run, cgid, NULL, 0, (__u32)cap, 0);
}

/*
 * Priority, scheduling, I/O priority, resource limits and memory placement
 * of another process: setpriority, sched_setaffinity/setscheduler/setattr,
 * ioprio_set, prlimit (a tight RLIMIT_CPU gets a host process killed by the
 * kernel), migrate_pages/move_pages. Scoped like signals: within the run
 * yes; a process outside it no (process.sched.denied). A process's own
 * limits and priority are its own business (the kernel calls these hooks
 * for the caller too: same run, allowed).
 */
CUSTODE_LSM(task_setnice, custode_proc_task_setnice, struct task_struct *p, int nice, int ret)
{
	return ret ? ret : task_access(CUSTODE_HOOK_TASK_SETNICE, CUSTODE_REASON_PROCESS_SCHED_DENIED, p, (__u32)nice, false, false);
}

CUSTODE_LSM(task_setioprio, custode_proc_task_setioprio, struct task_struct *p, int ioprio, int ret)
{
	return ret ? ret
		   : task_access(CUSTODE_HOOK_TASK_SETIOPRIO, CUSTODE_REASON_PROCESS_SCHED_DENIED, p, (__u32)ioprio, false, false);
}

CUSTODE_LSM(task_setscheduler, custode_proc_task_setscheduler, struct task_struct *p, int ret)
{
	return ret ? ret : task_access(CUSTODE_HOOK_TASK_SETSCHEDULER, CUSTODE_REASON_PROCESS_SCHED_DENIED, p, 0, false, false);
}

CUSTODE_LSM(task_movememory, custode_proc_task_movememory, struct task_struct *p, int ret)
{
	return ret ? ret : task_access(CUSTODE_HOOK_TASK_MOVEMEMORY, CUSTODE_REASON_PROCESS_SCHED_DENIED, p, 0, false, false);
}

CUSTODE_LSM(task_setrlimit, custode_proc_task_setrlimit, struct task_struct *p, unsigned int resource,
	    struct rlimit *new_rlim, int ret)
{
	return ret ? ret
		   : task_access(CUSTODE_HOOK_TASK_SETRLIMIT, CUSTODE_REASON_PROCESS_SCHED_DENIED, p, resource, false, false);
}

/*
 * SysV IPC (shared memory, message queues, semaphore sets) scoped to the
 * run: an object belongs to the run whose process created it (recorded at
 * creation, forgotten when the kernel frees it); a run with a process
 * policy may use only its own. Host objects are denied (process.ipc.denied)
 * through every access path: ipcperms (shmat, msgsnd/msgrcv, semop, IPC_STAT,
 * ...), the *get of an existing key (associate) and the *ctl commands.
 * Launched runs also get an IPC namespace of their own; attached runs live
 * in whatever namespace they have, the host's for a systemd unit.
 * Objects created by a run when the map is full are refused: an object whose
 * owner can't be recorded would look like the host's, and the run that made
 * it would lose it — worse, refuse it up front.
 */
#define CUSTODE_MAX_IPC_OBJECTS 65536

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CUSTODE_MAX_IPC_OBJECTS);
	__type(key, __u64);   /* the object's struct kern_ipc_perm, by address */
	__type(value, __u64); /* the creating run's cgroup id */
	__uint(map_flags, BPF_F_NO_PREALLOC);
} custode_ipc_owner SEC(".maps");

static __always_inline int ipc_decide(__u16 hook, struct kern_ipc_perm *perm, __u32 detail)
{
	struct custode_run *run = NULL;
	__u64 cgid = 0, key = (__u64)perm, *owner;
	int verdict = 0, c;

	c = caller(&run, &cgid, hook, NULL, 0, detail, 0, &verdict);
	if (c <= 0)
		return verdict;
	if (!(run->flags & CUSTODE_RUN_PROCESS) || !perm)
		return 0;
	owner = bpf_map_lookup_elem(&custode_ipc_owner, &key);
	if (owner && *owner == cgid)
		return 0;
	return deny(hook, CUSTODE_REASON_PROCESS_IPC_DENIED, run, cgid, NULL, 0, detail,
		    (__u32)BPF_CORE_READ(perm, id));
}

static __always_inline int ipc_alloc(struct kern_ipc_perm *perm)
{
	struct custode_run *run = NULL;
	__u64 cgid = 0, key = (__u64)perm;
	int verdict = 0, c;

	c = caller(&run, &cgid, CUSTODE_HOOK_IPC_ALLOC, NULL, 0, 0, 0, &verdict);
	if (c <= 0)
		return verdict;
	if (bpf_map_update_elem(&custode_ipc_owner, &key, &cgid, BPF_ANY))
		return deny(CUSTODE_HOOK_IPC_ALLOC, CUSTODE_REASON_PROCESS_IPC_DENIED, run, cgid, NULL, 0, 0, 0);
	return 0;
}

static __always_inline int ipc_free(struct kern_ipc_perm *perm)
{
	__u64 key = (__u64)perm;

	bpf_map_delete_elem(&custode_ipc_owner, &key);
	return 0;
}

CUSTODE_LSM(ipc_permission, custode_proc_ipc_permission, struct kern_ipc_perm *ipcp, short flag, int ret)
{
	return ret ? ret : ipc_decide(CUSTODE_HOOK_IPC_PERMISSION, ipcp, (__u32)flag);
}

CUSTODE_LSM(shm_alloc_security, custode_proc_shm_alloc, struct kern_ipc_perm *perm, int ret)
{
	return ret ? ret : ipc_alloc(perm);
}

CUSTODE_LSM_VOID(shm_free_security, custode_proc_shm_free, struct kern_ipc_perm *perm)
{
	return ipc_free(perm);
}

CUSTODE_LSM(shm_associate, custode_proc_shm_associate, struct kern_ipc_perm *perm, int shmflg, int ret)
{
	return ret ? ret : ipc_decide(CUSTODE_HOOK_IPC_ASSOCIATE, perm, (__u32)shmflg);
}

CUSTODE_LSM(shm_shmctl, custode_proc_shm_shmctl, struct kern_ipc_perm *perm, int cmd, int ret)
{
	return ret ? ret : ipc_decide(CUSTODE_HOOK_IPC_CTL, perm, (__u32)cmd);
}

CUSTODE_LSM(msg_queue_alloc_security, custode_proc_msg_alloc, struct kern_ipc_perm *perm, int ret)
{
	return ret ? ret : ipc_alloc(perm);
}

CUSTODE_LSM_VOID(msg_queue_free_security, custode_proc_msg_free, struct kern_ipc_perm *perm)
{
	return ipc_free(perm);
}

CUSTODE_LSM(msg_queue_associate, custode_proc_msg_associate, struct kern_ipc_perm *perm, int msqflg, int ret)
{
	return ret ? ret : ipc_decide(CUSTODE_HOOK_IPC_ASSOCIATE, perm, (__u32)msqflg);
}

CUSTODE_LSM(msg_queue_msgctl, custode_proc_msg_msgctl, struct kern_ipc_perm *perm, int cmd, int ret)
{
	return ret ? ret : ipc_decide(CUSTODE_HOOK_IPC_CTL, perm, (__u32)cmd);
}

CUSTODE_LSM(sem_alloc_security, custode_proc_sem_alloc, struct kern_ipc_perm *perm, int ret)
{
	return ret ? ret : ipc_alloc(perm);
}

CUSTODE_LSM_VOID(sem_free_security, custode_proc_sem_free, struct kern_ipc_perm *perm)
{
	return ipc_free(perm);
}

CUSTODE_LSM(sem_associate, custode_proc_sem_associate, struct kern_ipc_perm *perm, int semflg, int ret)
{
	return ret ? ret : ipc_decide(CUSTODE_HOOK_IPC_ASSOCIATE, perm, (__u32)semflg);
}

CUSTODE_LSM(sem_semctl, custode_proc_sem_semctl, struct kern_ipc_perm *perm, int cmd, int ret)
{
	return ret ? ret : ipc_decide(CUSTODE_HOOK_IPC_CTL, perm, (__u32)cmd);
}

/* ---- sockets (attached runs have no seccomp filter: these hold for them too) ---- */

#define AF_UNIX 1
#define AF_INET 2
#define AF_INET6 10
#define AF_NETLINK 16
#define NETLINK_ROUTE 0

/*
 * Socket families: unix, inet, inet6 and rtnetlink only, for every run
 * (what the launcher's seccomp filter allows): no AF_PACKET frames, no
 * other netlink families, nothing the kernel adds later. Kernel-internal
 * sockets are not the run's doing. The inet types and protocols are
 * decided by the egress class's sock_create (TCP and UDP only).
 */
CUSTODE_LSM(socket_create, custode_proc_socket_create, int family, int type, int protocol, int kern, int ret)
{
	struct custode_run *run = NULL;
	__u64 cgid = 0;
	int verdict = 0, c;

	if (ret || kern)
		return ret;
	c = caller(&run, &cgid, CUSTODE_HOOK_SOCKET_CREATE, NULL, 0, (__u32)family, (__u32)protocol, &verdict);
	if (c <= 0)
		return verdict;
	if (family == AF_UNIX || family == AF_INET || family == AF_INET6 ||
	    (family == AF_NETLINK && protocol == NETLINK_ROUTE))
		return 0;
	return deny(CUSTODE_HOOK_SOCKET_CREATE, CUSTODE_REASON_NET_SOCKET_DENIED, run, cgid, NULL, 0, (__u32)family,
		    (__u32)protocol);
}

/*
 * W^X, opt-in ("process": {"wx": "deny"}): no memory that is executable and
 * either anonymous or writable — JIT-compiled or decrypted code can't be
 * run (process.wx.denied). A private file mapping whose pages were written
 * (it has anonymous copies) counts as writable, and so does a file that is
 * open for writing anywhere (i_writecount > 0: the double mapping JITs use,
 * one writable and one executable view of the same memfd or file). Code
 * from files mapped the ordinary way (ld.so, dlopen) is the file policy's
 * business (exec rights). Breaks JITs (V8/Node, the JVM, LuaJIT, PyPy, .NET,
 * wasm runtimes): docs/process.md.
 */
static __always_inline int wx_decide(__u16 hook, struct file *file, bool writable)
{
	struct custode_run *run = NULL;
	__u64 cgid = 0;
	int verdict = 0, c;

	/* open for writing somewhere, or mapped shared and writable somewhere (a memfd's other view) */
	if (file && !writable && BPF_CORE_READ(file, f_inode, i_writecount.counter) <= 0 &&
	    BPF_CORE_READ(file, f_mapping, i_mmap_writable.counter) <= 0)
		return 0;
	c = caller(&run, &cgid, hook, NULL, 0, 0, 0, &verdict);
	if (c <= 0)
		return verdict;
	if (!(run->flags & CUSTODE_RUN_WX_DENY))
		return 0;
	return deny(hook, CUSTODE_REASON_PROCESS_WX_DENIED, run, cgid, NULL, 0, file ? 1 : 0, 0);
}

CUSTODE_LSM(mmap_file, custode_proc_mmap_file, struct file *file, unsigned long reqprot, unsigned long prot,
	    unsigned long flags, int ret)
{
	if (ret || !(prot & PROT_EXEC))
		return ret;
	return wx_decide(CUSTODE_HOOK_MMAP_FILE, file, prot & PROT_WRITE);
}

CUSTODE_LSM(file_mprotect, custode_proc_file_mprotect, struct vm_area_struct *vma, unsigned long reqprot,
	    unsigned long prot, int ret)
{
	if (ret || !(prot & PROT_EXEC) || (vma->vm_flags & VM_EXEC))
		return ret;
	/* the mapping becomes executable: anonymous, writable, or a private one with modified pages */
	return wx_decide(CUSTODE_HOOK_FILE_MPROTECT, vma->vm_file,
			 (prot & PROT_WRITE) || (vma->vm_flags & VM_WRITE) || vma->anon_vma);
}

/* Route options: bpf/lib/route.bpf.h. */
static __always_inline int net_run(__u16 hook, struct custode_run **run, __u64 *cgid, __u32 detail, __u32 command,
				   int *verdict)
{
	int c = caller(run, cgid, hook, NULL, 0, detail, command, verdict);

	if (c <= 0)
		return c;
	return ((*run)->flags & CUSTODE_RUN_NET) ? 1 : 0;
}

CUSTODE_LSM(socket_setsockopt, custode_proc_socket_setsockopt, struct socket *sock, int level, int optname, int ret)
{
	struct custode_run *run = NULL;
	__u64 cgid = 0;
	int verdict = 0;

	if (ret)
		return ret;
	if (!custode_route_option(level, optname))
		return 0;
	if (net_run(CUSTODE_HOOK_SOCKET_SETSOCKOPT, &run, &cgid, (__u32)level, (__u32)optname, &verdict) <= 0)
		return verdict;
	return deny(CUSTODE_HOOK_SOCKET_SETSOCKOPT, CUSTODE_REASON_NET_ROUTE_OPTION_DENIED, run, cgid, NULL, 0,
		    (__u32)level, (__u32)optname);
}

#define CMSG_MAX 16 /* control messages looked at per sendmsg; more than that on an inet socket: refused */

struct cmsg_head {
	__u64 len;
	__s32 level;
	__s32 type;
};

CUSTODE_LSM(socket_sendmsg, custode_proc_socket_sendmsg, struct socket *sock, struct msghdr *msg, int size, int ret)
{
	struct custode_run *run = NULL;
	__u64 cgid = 0, controllen, off = 0;
	int verdict = 0, family;
	struct cmsg_head h;
	char *control;

	if (ret)
		return ret;
	/* every sendmsg on the host passes here: direct loads, no helper call, until a run has control messages */
	controllen = msg->msg_controllen;
	if (!controllen)
		return 0;
	/* sock->sk is nullable to the verifier (and clang folds a plain check away): read it probed */
	family = BPF_CORE_READ(sock, sk, __sk_common.skc_family);
	if (family != AF_INET && family != AF_INET6)
		return 0;
	if (net_run(CUSTODE_HOOK_SOCKET_SENDMSG, &run, &cgid, 0, 0, &verdict) <= 0)
		return verdict;
	/* sendmsg(2) copies the control messages into the kernel before this hook; any other path: refused */
	if (BPF_CORE_READ_BITFIELD_PROBED(msg, msg_control_is_user))
		return deny(CUSTODE_HOOK_SOCKET_SENDMSG, CUSTODE_REASON_NET_ROUTE_OPTION_DENIED, run, cgid, NULL, 0, 0, 0);
	control = BPF_CORE_READ(msg, msg_control);
	for (int i = 0; i < CMSG_MAX; i++) {
		if (off + sizeof(h) > controllen)
			return 0;
		if (bpf_probe_read_kernel(&h, sizeof(h), control + off))
			break;
		if (custode_route_option(h.level, h.type))
			return deny(CUSTODE_HOOK_SOCKET_SENDMSG, CUSTODE_REASON_NET_ROUTE_OPTION_DENIED, run, cgid, NULL, 0,
				    (__u32)h.level, (__u32)h.type);
		if (h.len < sizeof(h))
			return 0; /* the kernel refuses a malformed one (EINVAL) */
		off += (h.len + 7) & ~7ULL;
	}
	/* too many to look at, or unreadable: can't tell, refuse */
	return deny(CUSTODE_HOOK_SOCKET_SENDMSG, CUSTODE_REASON_NET_ROUTE_OPTION_DENIED, run, cgid, NULL, 0, 0, CMSG_MAX);
}

/*
 * Inbound peers ("network": {"inbound": [CIDR...]}): a TCP connection
 * request (SYN) to a run's listening socket from a peer outside the list is
 * dropped before any connection exists (net.inbound.denied). This runs in
 * softirq context: the run is the listening socket's cgroup's, not the
 * current task's, and the event names no process.
 */
CUSTODE_LSM(inet_conn_request, custode_proc_inet_conn_request, struct sock *sk, struct sk_buff *skb,
	    struct request_sock *req, int ret)
{
	struct custode_private_key k;
	struct custode_run *run;
	struct custode_event *ev;
	__u64 run_cgid;
	__u16 family;

	if (ret)
		return ret;
	run_cgid = custode_cgroup_run_btf(sk->sk_cgrp_data.cgroup);
	if (!run_cgid || run_cgid == CUSTODE_RUN_UNKNOWN)
		return 0;
	run = bpf_map_lookup_elem(&custode_runs, &run_cgid);
	if (!run || !(run->flags & CUSTODE_RUN_INBOUND) || !(run->flags & CUSTODE_RUN_NET))
		return 0;
	__builtin_memset(&k, 0, sizeof(k));
	k.prefixlen = 32 + 128;
	k.ruleset = run->ruleset;
	family = req->__req_common.skc_family;
	if (family == AF_INET) {
		__u32 a = req->__req_common.skc_daddr;

		k.addr[10] = k.addr[11] = 0xff;
		__builtin_memcpy(&k.addr[12], &a, 4);
	} else if (family == AF_INET6) {
		bpf_probe_read_kernel(k.addr, 16, &req->__req_common.skc_v6_daddr);
	} else {
		return 0;
	}
	if (bpf_map_lookup_elem(&custode_net_inbound, &k))
		return 0;
	{
		__u32 enforced = custode_enforced(run, CUSTODE_REASON_NET_INBOUND_DENIED);

		if (!custode_record(run_cgid, CUSTODE_HOOK_INET_CONN_REQUEST, CUSTODE_REASON_NET_INBOUND_DENIED, run,
				    enforced))
			return enforced ? -EPERM : 0;
		ev = custode_event_reserve(CUSTODE_HOOK_INET_CONN_REQUEST, CUSTODE_REASON_NET_INBOUND_DENIED, run,
					   enforced);
		if (!ev)
			return enforced ? -EPERM : 0;
		ev->pid = ev->tgid = 0; /* softirq: no process of the run asked */
		__builtin_memset(ev->comm, 0, sizeof(ev->comm));
		ev->object = CUSTODE_OBJECT_NET;
		__builtin_memcpy(ev->obj.net.addr, k.addr, 16);
		ev->obj.net.port = req->__req_common.skc_num; /* the run's local port */
		ev->obj.net.family = family;
		ev->obj.net.proto = 6;
		ev->obj.net.sock_type = 1;
		custode_event_submit(ev);
		return enforced ? -EPERM : 0;
	}
}

/*
 * listen(2) when the policy doesn't let the run listen ("listen": false, the
 * built-in profiles): whatever the port — an ephemeral one from bind(0), or
 * the one listen() binds by itself — so inbound connections never reach a
 * run that may not serve (net.bind.denied).
 */
CUSTODE_LSM(socket_listen, custode_proc_socket_listen, struct socket *sock, int backlog, int ret)
{
	struct custode_run *run = NULL;
	__u64 cgid = 0;
	int verdict = 0, family;

	if (ret)
		return ret;
	family = BPF_CORE_READ(sock, sk, __sk_common.skc_family);
	if (family != AF_INET && family != AF_INET6)
		return 0;
	if (net_run(CUSTODE_HOOK_SOCKET_LISTEN, &run, &cgid, 0, 0, &verdict) <= 0)
		return verdict;
	if (!(run->flags & CUSTODE_RUN_NO_LISTEN))
		return 0;
	return deny(CUSTODE_HOOK_SOCKET_LISTEN, CUSTODE_REASON_NET_BIND_DENIED, run, cgid, NULL, 0, (__u32)family, 0);
}

/*
 * Anonymous inodes with their own security context. userfaultfd (the
 * syscall and /dev/userfaultfd) and io_uring instances are kernel attack
 * surface no run needs: denied by name. Newer kernels make other anonymous
 * inodes through this hook too (memfd_create on 7.x, secretmem, guest_memfd):
 * those stay allowed, so a memfd remains a file like any other to the file
 * policy (exec and executable mappings of it are denied there).
 */
static __always_inline bool anon_name_is(const char *got, const char *want, int n)
{
	for (int i = 0; i < n; i++)
		if (got[i] != want[i])
			return false;
	return true;
}

CUSTODE_LSM(inode_init_security_anon, custode_proc_anon_inode, struct inode *inode, const struct qstr *name,
	    const struct inode *context_inode, int ret)
{
	char buf[16] = {};

	if (ret)
		return ret;
	if (!name || bpf_probe_read_kernel_str(buf, sizeof(buf), BPF_CORE_READ(name, name)) < 0)
		return run_denied(CUSTODE_HOOK_INODE_INIT_SECURITY_ANON, CUSTODE_REASON_PROCESS_KERNEL_DENIED, 0, 0);
	if (!anon_name_is(buf, "[userfaultfd]", 14) && !anon_name_is(buf, "[io_uring]", 11))
		return 0;
	return run_denied(CUSTODE_HOOK_INODE_INIT_SECURITY_ANON, CUSTODE_REASON_PROCESS_KERNEL_DENIED, 0, 0);
}

/*
 * From the moment a run is cancelled nothing in it may fork or exec (the
 * kill that follows then finds a closed set of processes).
 *
 * A live run may fork and clone, but never with CLONE_INTO_CGROUP: the
 * child would be born in the cgroup of a directory fd the caller holds —
 * an O_PATH or O_RDONLY fd, which file_open never sees as a write — so a
 * run (an attached one may be root, with no seccomp filter) could put a
 * child outside itself. The kernel calls this hook from copy_process()
 * before cgroup_can_fork() resolves the target cgroup, so the target is not
 * known here: every CLONE_INTO_CGROUP from a run is denied, whatever the
 * run's policy, also into the run's own child cgroups
 * (process.cgroup_move.denied, EPERM; audit mode records and allows).
 * Moving a process into the run's own child cgroups through cgroup.procs
 * stays possible (file.cgroup_escape.denied in bpf/file.bpf.c guards that
 * path): a spawner inside a run that uses CLONE_INTO_CGROUP needs its
 * fork-then-move fallback. clone_flags is 64 bits here (copy_process passes
 * kernel_clone_args.flags), so clone3's high flags are visible.
 */
#define CUSTODE_CLONE_INTO_CGROUP 0x200000000ULL

CUSTODE_LSM(task_alloc, custode_proc_task_alloc, struct task_struct *task, unsigned long clone_flags, int ret)
{
	struct custode_run *run = NULL;
	__u64 cgid = 0;
	int verdict = 0, c;

	if (ret)
		return ret;
	c = caller(&run, &cgid, CUSTODE_HOOK_TASK_ALLOC, NULL, 0, 0, 0, &verdict);
	if (c <= 0)
		return verdict;
	if ((__u64)clone_flags & CUSTODE_CLONE_INTO_CGROUP)
		return deny(CUSTODE_HOOK_TASK_ALLOC, CUSTODE_REASON_PROCESS_CGROUP_MOVE_DENIED, run, cgid, NULL, 0,
			    (__u32)clone_flags, (__u32)((__u64)clone_flags >> 32));
	return 0;
}

CUSTODE_LSM(bprm_check_security, custode_proc_exec, struct linux_binprm *bprm, int ret)
{
	struct custode_run *run = NULL;
	__u64 cgid = 0;
	int verdict = 0;

	if (ret)
		return ret;
	caller(&run, &cgid, CUSTODE_HOOK_BPRM_CHECK, NULL, 0, 0, 0, &verdict);
	return verdict;
}

/* ---- newcomers: marked when placed from outside, cleared at their exec (bpf/lib/newcomer.bpf.h) ---- */

/*
 * The attached, live run whose cgroup (or a cgroup below it) `cg` is, or 0.
 * Launcher runs never get newcomers: their launcher's own set-up is its
 * child's, which seccomp and the hooks already expect.
 */
static __always_inline __u64 attached_run_of(struct cgroup *cg)
{
	__u64 id = custode_cgroup_run_btf(cg);
	struct custode_run *r;

	if (!id || id == RUN_UNKNOWN)
		return 0;
	r = bpf_map_lookup_elem(&custode_runs, &id);
	if (!r || !(r->flags & CUSTODE_RUN_ATTACHED) || (r->flags & CUSTODE_RUN_CANCELLED))
		return 0;
	return id;
}

/* Is the current task in no run at all (a newcomer's own window included: it is in a run's cgroup)? */
static __always_inline bool current_in_no_run(void)
{
	struct task_struct *me = bpf_get_current_task_btf();

	return custode_cgroup_run_btf(me->cgroups->dfl_cgrp) == 0;
}

/*
 * cgroup_attach_task(dst, leader, threadgroup): a cgroup.procs write (and
 * the kernel's other migrations that go through it). The entry records a
 * candidate on the mover, the exit marks it once the move succeeded: the
 * whole process (threadgroup) of a leader in no run, moved by a task in no
 * run into an attached run. A thread moved alone (cgroup.threads) never is.
 * Pending entries live on the mover, keyed by its task (one move at a time
 * per task: cgroup_threadgroup_rwsem and cgroup_mutex are held across it).
 */
struct attach_pending {
	__u64 leader; /* the task_struct moved, by address: matched at the exit */
	__u64 run_cgid;
	__u64 cgid;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct attach_pending);
} custode_attach_pending SEC(".maps");

CUSTODE_TRACED("fentry/cgroup_attach_task", custode_proc_attach_enter, struct cgroup *dst_cgrp, struct task_struct *leader,
	       bool threadgroup)
{
	struct task_struct *me = bpf_get_current_task_btf();
	struct attach_pending *p;
	__u64 run_cgid;

	p = bpf_task_storage_get(&custode_attach_pending, me, NULL, 0);
	if (p)
		p->leader = 0; /* a candidate left over by a move that never returned here: gone */
	if (!threadgroup || !leader || !current_in_no_run())
		return 0;
	run_cgid = attached_run_of(dst_cgrp);
	if (!run_cgid)
		return 0;
	/* already in a run (this one or another): it stays a resident of whatever confines it */
	if (custode_cgroup_run_btf(leader->cgroups->dfl_cgrp) != 0)
		return 0;
	if (!p)
		p = bpf_task_storage_get(&custode_attach_pending, me, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!p)
		return 0; /* no memory: no mark, the process is a resident (fail closed) */
	p->leader = (__u64)leader;
	p->run_cgid = run_cgid;
	p->cgid = dst_cgrp->kn->id;
	return 0;
}

/* custode_newcomers_live by `delta`: +1 before a mark is made, -1 after one is gone (bpf/lib/newcomer.bpf.h). */
static __always_inline void newcomers_count(__s64 delta)
{
	__u32 zero = 0;
	__u64 *live = bpf_map_lookup_elem(&custode_newcomers_live, &zero);

	if (live)
		__sync_fetch_and_add(live, delta);
}

static __always_inline void newcomer_mark(struct task_struct *t, __u64 run_cgid, __u64 cgid)
{
	struct custode_newcomer *n;

	n = bpf_task_storage_get(&custode_newcomers, t, NULL, 0);
	if (!n) {
		/* counted first: a hook that sees the mark sees the count too */
		newcomers_count(1);
		n = bpf_task_storage_get(&custode_newcomers, t, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!n) {
			newcomers_count(-1);
			return; /* no memory: a resident (fail closed) */
		}
	}
	n->run_cgid = run_cgid;
	n->cgid = cgid;
}

/* Remove t's mark, if it has one, and count it gone (only the delete that removed it does). */
static __always_inline void newcomer_clear(struct task_struct *t)
{
	if (!custode_newcomers_possible())
		return;
	if (bpf_task_storage_delete(&custode_newcomers, t) == 0)
		newcomers_count(-1);
}

CUSTODE_TRACED_EXIT(cgroup_attach_task, custode_proc_attach_exit, struct cgroup *dst_cgrp, struct task_struct *leader,
		    bool threadgroup, int ret)
{
	struct task_struct *me = bpf_get_current_task_btf();
	struct attach_pending *p;

	p = bpf_task_storage_get(&custode_attach_pending, me, NULL, 0);
	if (!p || !p->leader)
		return 0;
	if (ret == 0 && p->leader == (__u64)leader && leader)
		newcomer_mark(leader->group_leader, p->run_cgid, p->cgid);
	p->leader = 0;
	return 0;
}

/*
 * clone3(CLONE_INTO_CGROUP) by a parent in no run, into an attached run:
 * the child is born a newcomer. The tracepoint fires in copy_process after
 * cgroup_post_fork (the child is in its cgroup) and before the child first
 * runs. A thread (CLONE_THREAD) joins its leader's standing instead; from
 * inside a run the flag is refused by task_alloc above. A newcomer's own
 * fork children inherit its window (below).
 */
#define CUSTODE_CLONE_THREAD 0x00010000ULL

CUSTODE_TRACED("tp_btf/task_newtask", custode_proc_newtask, struct task_struct *task, __u64 clone_flags)
{
	struct task_struct *me = bpf_get_current_task_btf();
	struct custode_newcomer *parent;
	__u64 run_cgid;

	if (clone_flags & CUSTODE_CLONE_THREAD)
		return 0;
	run_cgid = attached_run_of(task->cgroups->dfl_cgrp);
	if (!run_cgid)
		return 0;
	if (clone_flags & CUSTODE_CLONE_INTO_CGROUP) {
		if (current_in_no_run())
			newcomer_mark(task, run_cgid, task->cgroups->dfl_cgrp->kn->id);
		return 0;
	}
	/*
	 * A newcomer's fork child, before either has exec'd, runs the runtime's
	 * code too (runc's nsexec stages, crun exec's fork after joining the
	 * container's pid namespace): it inherits the window, into the same run
	 * only, and loses it at its own exec. A resident's child never has one.
	 */
	parent = bpf_task_storage_get(&custode_newcomers, me->group_leader, NULL, 0);
	if (parent && parent->run_cgid == run_cgid)
		newcomer_mark(task, run_cgid, parent->cgid);
	return 0;
}

/*
 * The exec that ends the window. bprm_creds_for_exec is the first LSM hook
 * of an execve that has opened its file (before bprm_check_security, the
 * binary handlers, the interpreter's open and the new image): from here on
 * the task is the run's — the entrypoint's own exec check included, so the
 * entrypoint must be one the policy lets the run execute. An exec that
 * fails after this point does not reopen the window (fail closed: the
 * runtime's error path runs confined). Never a verdict of its own.
 */
CUSTODE_LSM(bprm_creds_for_exec, custode_proc_exec_begins, struct linux_binprm *bprm, int ret)
{
	struct task_struct *me = bpf_get_current_task_btf();

	newcomer_clear(me->group_leader);
	return ret;
}

/*
 * A process that never exec'd (a runtime's intermediate fork that exits,
 * a set-up that failed): its mark goes with its last thread, so the count
 * comes back to 0 once no container is being set up. The tracepoint fires
 * in do_exit after signal->live was decremented: 0 means this is the last
 * thread. An earlier thread's exit leaves the mark on the leader for the
 * threads still running. 7.x added group_dead after the task: only the
 * task is read (CUSTODE_TRACED_PREFIX).
 */
CUSTODE_TRACED_PREFIX("tp_btf/sched_process_exit", custode_proc_exit, struct task_struct *p)
{
	if (!p || p->signal->live.counter != 0)
		return 0;
	newcomer_clear(p->group_leader); /* nothing when no mark can exist (custode_newcomers_possible) */
	return 0;
}

/*
 * bpf(): every command is denied to every task inside custode's subtree,
 * whatever its run's policy (so also map and program access by id, pins,
 * links). The engine's own state must never be reachable from a run.
 */
static __always_inline int bpf_cmd(int cmd)
{
	struct custode_run *run = NULL;
	__u64 cgid = 0;

	if (custode_current_run(&run, &cgid) == CUSTODE_NOT_IN_RUN)
		return 0;
	return deny(CUSTODE_HOOK_BPF, CUSTODE_REASON_PROCESS_BPF_DENIED, run, cgid, NULL, 0, 0, (__u32)cmd);
}

CUSTODE_LSM(bpf, custode_proc_bpf, int cmd, union bpf_attr *attr, unsigned int size, int ret)
{
	return ret ? ret : bpf_cmd(cmd);
}

/* later kernels add `kernel` (the call comes from a BPF syscall program): denied in a run all the same */
CUSTODE_LSM(bpf, custode_proc_bpf_kernel, int cmd, union bpf_attr *attr, unsigned int size, bool kernel, int ret)
{
	return ret ? ret : bpf_cmd(cmd);
}

/* Is the current task executing the custode binary that loaded this object, or one admitted since? */
static __always_inline bool current_is_custode(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct mm_struct *mm = task->mm;
	struct custode_exe_key key;
	struct file *exe;
	struct inode *inode;

	if (!custode_exe_ino || !mm)
		return false;
	exe = mm->exe_file;
	if (!exe)
		return false;
	inode = exe->f_inode;
	if (!inode)
		return false;
	key.dev = inode->i_sb->s_dev;
	key.ino = inode->i_ino;
	if (key.ino == custode_exe_ino && key.dev == custode_exe_dev)
		return true;
	return bpf_map_lookup_elem(&custode_admitted, &key) != NULL;
}

/* custode's objects are named custode_* (bpf/lib/maps.bpf.h, the meta map, every program). */
static __always_inline bool custode_name(const char *name)
{
	return name[0] == 'c' && name[1] == 'u' && name[2] == 's' && name[3] == 't' && name[4] == 'o' &&
	       name[5] == 'd' && name[6] == 'e' && name[7] == '_';
}

/*
 * A new fd for a map or program: bpf(MAP/PROG_GET_FD_BY_ID), BPF_OBJ_GET of a
 * pin, and creation. Inside a run: denied (bpf() already is). Outside: a
 * custode_* object is reserved to the custode binary.
 */
static __always_inline int bpf_object(__u16 hook, const char *name, __u32 id, __u32 detail)
{
	struct custode_run *run = NULL;
	__u64 cgid = 0;

	if (custode_current_run(&run, &cgid) != CUSTODE_NOT_IN_RUN)
		return deny(hook, CUSTODE_REASON_PROCESS_BPF_DENIED, run, cgid, NULL, 0, detail, id);
	if (!custode_name(name) || current_is_custode())
		return 0;
	return deny(hook, CUSTODE_REASON_ENGINE_PROTECTED, NULL, 0, NULL, 0, detail, id);
}

CUSTODE_LSM(bpf_map, custode_proc_bpf_map, struct bpf_map *map, fmode_t fmode, int ret)
{
	if (ret)
		return ret;
	return bpf_object(CUSTODE_HOOK_BPF_MAP, map->name, map->id, (__u32)fmode);
}

CUSTODE_LSM(bpf_prog, custode_proc_bpf_prog, struct bpf_prog *prog, int ret)
{
	struct bpf_prog_aux *aux;

	if (ret)
		return ret;
	aux = prog->aux;
	return bpf_object(CUSTODE_HOOK_BPF_PROG, aux->name, aux->id, 0);
}
