// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
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
 */
#include "custode.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * The custode binary: the kernel's view (superblock s_dev, i_ino) of the
 * executable of the process that loaded this object, set by the loader
 * (userspace/engine/self.c). Only processes executing that inode may open
 * custode's maps and programs from outside the runs.
 */
const volatile __u64 custode_exe_dev = 0;
const volatile __u64 custode_exe_ino = 0;

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
	struct custode_event *ev = bpf_ringbuf_reserve(&custode_events, sizeof(*ev), 0);

	if (!ev) {
		custode_count_stat(1);
		return;
	}
	custode_event_init(ev, hook, reason, run, enforced);
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
	bpf_ringbuf_submit(ev, 0);
	custode_count_stat(0);
}

/*
 * Count, record and return the verdict for a denial. Audit mode records and
 * allows — except for what protects the engine itself (bpf), and for
 * cancelled or unregistered runs, which are always denied.
 */
static __always_inline int deny(__u16 hook, __u32 reason, struct custode_run *run, __u64 run_cgid,
				struct task_struct *t, __u32 target, __u32 detail, __u32 command)
{
	__u32 enforced = !run || !(run->flags & CUSTODE_RUN_AUDIT) || (run->flags & CUSTODE_RUN_CANCELLED) ||
			 reason == CUSTODE_REASON_RUN_CANCELLED || reason == CUSTODE_REASON_RUN_UNREGISTERED ||
			 reason == CUSTODE_REASON_PROCESS_BPF_DENIED || reason == CUSTODE_REASON_ENGINE_PROTECTED;

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
	int where = custode_current_run(runp, cgid);

	if (where == CUSTODE_NOT_IN_RUN)
		return 0;
	if (where == CUSTODE_UNREGISTERED || !*runp) {
		*verdict = deny(hook, CUSTODE_REASON_RUN_UNREGISTERED, NULL, *cgid, t, target, detail, command);
		return -1;
	}
	if ((*runp)->flags & CUSTODE_RUN_CANCELLED) {
		*verdict = deny(hook, CUSTODE_REASON_RUN_CANCELLED, *runp, *cgid, t, target, detail, command);
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
	if (quiet)
		return (run->flags & CUSTODE_RUN_AUDIT) ? 0 : -EPERM;
	return deny(hook, reason, run, cgid, t, 0, detail, 0);
}

/* ptrace attach and PTRACE_MODE_READ access (/proc/PID/mem, environ, maps, fd; process_vm_*; kcmp; pidfd_getfd). */
CUSTODE_LSM(ptrace_access_check, custode_proc_ptrace_access, struct task_struct *child, unsigned int mode, int ret)
{
	if (ret)
		return ret;
	return task_access(CUSTODE_HOOK_PTRACE_ACCESS_CHECK, CUSTODE_REASON_PROCESS_PTRACE_DENIED, child, mode, true,
			   (mode & PTRACE_MODE_NOAUDIT) != 0);
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

CUSTODE_LSM(file_ioctl, custode_proc_file_ioctl, struct file *file, unsigned int cmd, unsigned long arg, int ret)
{
	struct custode_run *run = NULL;
	__u64 cgid = 0;
	int verdict = 0, c;

	if (ret)
		return ret;
	c = caller(&run, &cgid, CUSTODE_HOOK_FILE_IOCTL, NULL, 0, 0, cmd, &verdict);
	if (c <= 0)
		return verdict;
	if ((run->flags & CUSTODE_RUN_PROCESS) && (cmd == FIOSETOWN || cmd == SIOCSPGRP))
		return deny(CUSTODE_HOOK_FILE_IOCTL, CUSTODE_REASON_PROCESS_SIGNAL_DENIED, run, cgid, NULL, 0, 0, cmd);
	return 0;
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
	if (!(run->flags & CUSTODE_RUN_PROCESS))
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

/* Is the current task executing the custode binary that loaded this object? */
static __always_inline bool current_is_custode(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct mm_struct *mm = task->mm;
	struct file *exe;
	struct inode *inode;

	if (!custode_exe_ino || !mm)
		return false;
	exe = mm->exe_file;
	if (!exe)
		return false;
	inode = exe->f_inode;
	return inode && inode->i_ino == custode_exe_ino && inode->i_sb->s_dev == custode_exe_dev;
}

/* custode's objects are named custode_* (bpf/lib/custode.bpf.h, the meta map, every program). */
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
