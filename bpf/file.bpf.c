// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * File and exec policy (docs/file-policy.md). Every decision resolves the
 * object's path — bpf_d_path where the kernel allows it (file_open,
 * bprm_check_security, mmap_file), a bounded dentry/mount walk elsewhere
 * (lib/path.bpf.h) — and looks it up in the run's rules, an LPM trie whose
 * cost is bounded by the path length, not the number of rules. Restricting
 * rules also hold by identity (device + inode), and hooks that see only a
 * dentry (utimes, xattrs) find their rule by walking up identities.
 *
 * An attached run's newcomer in its set-up window (a container runtime's
 * init before it execs the entrypoint: bpf/lib/newcomer.bpf.h) is outside
 * the run here, mounts included.
 */
#define CUSTODE_NEWCOMERS_OUTSIDE 1
#define CUSTODE_LSM_OBJECT 1 /* bpf/lib/run.bpf.h: the per-task run cache */
#include "path.bpf.h"
#include "tty.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define FMODE_READ 0x1
#define FMODE_WRITE 0x2
#define FMODE_EXEC 0x20
#define __FMODE_EXEC 0x20 /* in f_flags: set by execve's open (f_mode has it only on newer kernels) */
#define O_TRUNC 01000
#define PROT_EXEC 0x4
#define VM_EXEC 0x4
#define S_IFMT 00170000
#define S_IFDIR 0040000
#define S_IFREG 0100000
#define PROC_SUPER_MAGIC 0x9fa0
#define CGROUP2_SUPER_MAGIC 0x63677270
#define MQUEUE_MAGIC 0x19800202
#define PROT_WRITE 0x2
#define VM_WRITE 0x2
#define RENAME_EXCHANGE (1 << 1)
#define ATTR_MODE (1 << 0)
#define ATTR_UID (1 << 1)
#define ATTR_GID (1 << 2)
#define ATTR_SIZE (1 << 3)
#define IDENTITY_WALK 64

/*
 * The decision cache: a run's allowed classes for an inode through one mount
 * (or for a directory's files, below), valid while no path on the host could
 * have changed meaning since it was computed — the kernel's rename_lock and
 * mount_lock sequence counts (what d_path itself checks) and custode_fs_gen
 * (renames, changed runs) are all unchanged, and the object's stamp too
 * (below: bumped when its inode gets or loses a name). Only allowing
 * decisions are cached; denials always take the full path and are
 * reported. A second name of an inode opens the same data the first name
 * already may.
 *
 * The decisions live in one table of fixed size shared by every run
 * (custode_decisions, include/custode/abi.h, struct custode_decision): no
 * memory per run, nothing made or dropped when a run starts or ends. A slot
 * is picked by the run's cgroup id, the kind and the object's inode number,
 * and names the run and the object (inode address, inode number, mount):
 * another run or object on the same slot overwrites it (a miss later, never
 * a wrong hit), and an ended run's slots serve nobody (its id is never
 * reused). An address names one inode only while that inode
 * lives, and a number can name two files at once (btrfs subvolumes,
 * overlayfs layers): the memory of a freed inode can hold another inode of
 * the same number. So each number has a stamp (custode_inode_stamps, by a
 * hash of it), bumped whenever a dentry gets an inode of that number — the
 * only way a new inode can be reached — and whenever an inode of that
 * number is unlinked, removed or linked (inode_unlink: scoped to the inode,
 * not the host), and a slot holds only with the stamp read before it was
 * decided. While a hook decides, its file (and the file's
 * directory) are held, so they can't be freed and replaced meanwhile.
 *
 * Two hooks can write the same slot at once — on two CPUs, or one preempted
 * mid-way on one — and leave a mix of both, stable and whole-looking; a
 * reader can also read one half before a rewrite and the other after it. So
 * a slot carries a checksum of its contents, written last (0 while written):
 * a mixed or torn slot doesn't validate.
 */
struct fs_epoch {
	__u64 gen;
	__u32 rename_seq;
	__u32 mount_seq;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CUSTODE_DECISION_SLOTS);
	__type(key, __u32);
	__type(value, struct custode_decision);
	CUSTODE_PIN_BY_NAME(custode_decisions);
} custode_decisions SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CUSTODE_INODE_STAMPS);
	__type(key, __u32);
	__type(value, __u32);
	CUSTODE_PIN_BY_NAME(custode_inode_stamps);
} custode_inode_stamps SEC(".maps");


static __always_inline __u64 mix64(__u64 h, __u64 v)
{
	h ^= v;
	h *= 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 31);
}

/*
 * Is the number n the address ptr? Compared on an opaque copy of n, so that
 * the compiler can't use the pointer for n where the two are equal (the
 * verifier refuses arithmetic on a pointer, and n goes into decision_sum).
 */
static __always_inline int same_addr(__u64 n, __u64 ptr)
{
	CUSTODE_OPAQUE(n);
	return n == ptr;
}

/*
 * ptr as a number in *out, through a scratch cell; 0 if the cell was
 * rewritten under us (a program preempted here, and another on this CPU).
 */
static __always_inline int addr_number(volatile __u64 *cell, __u64 ptr, __u64 *out)
{
	__u64 n;

	*cell = ptr;
	n = *cell;
	if (!same_addr(n, ptr))
		return 0;
	*out = n;
	return 1;
}

extern const void rename_lock __ksym;
extern const void mount_lock __ksym;

/* The current epoch; 0 if a rename or mount is in progress (then nothing is cached or trusted). */
static __always_inline int fs_epoch_now(struct fs_epoch *e)
{
	__u32 zero = 0;
	__u64 *gen = bpf_map_lookup_elem(&custode_fs_gen, &zero);

	e->rename_seq = e->mount_seq = 1;
	if (!gen)
		return 0;
	e->gen = *gen;
	bpf_probe_read_kernel(&e->rename_seq, sizeof(e->rename_seq), &rename_lock);
	bpf_probe_read_kernel(&e->mount_seq, sizeof(e->mount_seq), &mount_lock);
	return !((e->rename_seq | e->mount_seq) & 1);
}

static __always_inline void fs_gen_bump(void)
{
	__u32 zero = 0;
	__u64 *gen = bpf_map_lookup_elem(&custode_fs_gen, &zero);

	if (gen)
		__sync_fetch_and_add(gen, 1);
}

/*
 * Per-CPU scratch: the path being decided and the record being written.
 *
 * BPF-LSM programs run with migration disabled, not preemption: on a
 * preemptible kernel (PREEMPT_LAZY, 7.x's default; preempt=full on any) a
 * tick can stop a hook between writing its path here and looking it up,
 * and another task's hook on the same CPU would write its own path over it
 * — the first would then decide on the second one's path (a denied file
 * opened with an allowed file's verdict, an allowed one refused).
 * So a hook that needs the buffer claims one of its CPU's
 * FILE_SCRATCH_SLOTS for itself (owner: the task, set by compare-and-swap
 * from 0) and releases it when its verdict leaves (who_end). A hook
 * preempted while holding a slot keeps it; the next one takes the next
 * slot. Only with every slot held by a preempted hook does a claim take the
 * last slot over (a steal), and then its holder, and any hook whose slot
 * was taken, finds the owner changed when it ends (who_end) and refuses
 * instead of deciding on what another task wrote: fail closed, never a
 * decision on another task's path.
 */
#define FILE_SCRATCH_SLOTS CUSTODE_SCRATCH_SLOTS

struct file_scratch {
	struct custode_scratch_head h; /* owner and counts (include/custode/abi.h) */
	struct custode_pathbuf pb;
	/* the stamps of the open's file and of its directory, read before its full decision (scratch_stamps) */
	__u32 stamp_file, stamp_dir;
	/* a struct custode_event followed by its path */
	__u64 ev[(sizeof(struct custode_event) + CUSTODE_PATH_MAX) / 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FILE_SCRATCH_SLOTS);
	__type(key, __u32);
	__type(value, struct file_scratch);
} file_scratch SEC(".maps");

/* What a hook asks and about what. */
struct ask {
	__u16 hook;
	__u32 want;     /* CUSTODE_ACCESS_* */
	int kobj;       /* a kernel object without a name (pipe, socket, memfd): see kernel_object() */
	long len;       /* resolved path length with NUL, or -errno */
	__u64 dev, ino; /* the object, when it exists */
	__u32 mode;
};

/* A run's context in one hook invocation (zeroed by CUSTODE_LSM_WITH, ended by who_end). */
struct who {
	struct custode_run *run;
	__u64 run_cgid;
	struct file_scratch *s; /* claimed, NULL until then */
	__u64 me;               /* the owner value of the claim */
};

/* A slot of this CPU's scratch for this hook alone (see struct file_scratch), or NULL. */
static __always_inline struct file_scratch *scratch_claim(__u64 me)
{
	struct file_scratch *s = NULL;

#pragma unroll
	for (__u32 i = 0; i < FILE_SCRATCH_SLOTS; i++) {
		__u32 k = i;

		s = bpf_map_lookup_elem(&file_scratch, &k);
		if (!s)
			return NULL;
		if (__sync_val_compare_and_swap(&s->h.owner, 0, me) == 0) {
			s->h.claims++;
			return s;
		}
	}
	/* every slot is held by a preempted hook: take the last one over */
	*(volatile __u64 *)&s->h.owner = me;
	__sync_fetch_and_add(&s->h.steals, 1);
	return s;
}

static __always_inline void who_claim(struct who *w)
{
	if (w->s)
		return; /* one claim per invocation */
	w->me = bpf_get_current_task();
	w->s = scratch_claim(w->me);
}

/* Is w's slot still its own (nothing another task wrote since the claim)? */
static __always_inline int who_holds(struct who *w)
{
	return w->s && *(volatile __u64 *)&w->s->h.owner == w->me;
}

/*
 * The verdict v of an invocation, on its way out: its slot released; if
 * another task took the slot meanwhile, what the hook read there may be that
 * task's, so it refuses (-EACCES, counted in the slot's h.lost).
 */
static __always_inline int who_end(struct who *w, int v)
{
	struct file_scratch *s = w->s;

	if (!s)
		return v;
	if (__sync_val_compare_and_swap(&s->h.owner, w->me, 0) == w->me)
		return v;
	__sync_fetch_and_add(&s->h.lost, 1);
	return -EACCES;
}

/* A file hook: the body's `w` is its struct who, ended by who_end. */
#define FILE_LSM(hook, name, args...) CUSTODE_LSM_WITH(hook, name, struct who, who_end, args)

/* Find the run and claim the scratch; 0 = not in a run (allow), 1 = decide. */
static __always_inline int who_init(struct who *w)
{
	w->run = NULL;
	w->run_cgid = 0;
	/* a run cgroup without an entry (unregistered) leaves w->run NULL */
	if (custode_current_run(&w->run, &w->run_cgid) == CUSTODE_NOT_IN_RUN)
		return 0;
	who_claim(w);
	return 1;
}

/*
 * The same for a task whose run cgroup is already known (custode_current_run_cgid
 * said it is in a run): the run's entry, without walking the cgroups again.
 * No entry is run.unregistered, as for custode_current_run.
 */
static __always_inline void who_init_run(struct who *w, __u64 run_cgid)
{
	w->run_cgid = run_cgid;
	w->run = bpf_map_lookup_elem(&custode_runs, &run_cgid);
	who_claim(w);
}

/* Direct BTF loads (one guarded load each), not bpf_probe_read_kernel calls: this is the hot path. */
static __always_inline void ask_inode(struct ask *a, struct inode *inode)
{
	if (!inode)
		return;
	a->dev = inode->i_sb->s_dev;
	a->ino = inode->i_ino;
	a->mode = inode->i_mode;
}

/* The same through probe reads, for pointers the verifier sees as plain numbers. */
static __always_inline void ask_inode_probe(struct ask *a, struct inode *inode)
{
	if (!inode)
		return;
	a->dev = BPF_CORE_READ(inode, i_sb, s_dev);
	a->ino = BPF_CORE_READ(inode, i_ino);
	a->mode = BPF_CORE_READ(inode, i_mode);
}

static __always_inline __u32 missing_reason(__u32 missing)
{
	if (missing & CUSTODE_ACCESS_EXEC)
		return CUSTODE_REASON_FILE_EXEC_DENIED;
	if (missing & CUSTODE_ACCESS_WRITE)
		return CUSTODE_REASON_FILE_WRITE_DENIED;
	if (missing & CUSTODE_ACCESS_CREATE)
		return CUSTODE_REASON_FILE_CREATE_DENIED;
	if (missing & CUSTODE_ACCESS_DELETE)
		return CUSTODE_REASON_FILE_DELETE_DENIED;
	return CUSTODE_REASON_FILE_READ_DENIED;
}

/* Write a record; the path, if resolved, is at the start of the scratch buffer. */
static __always_inline void file_event(struct who *w, const struct ask *a, __u32 reason, __u32 enforced)
{
	struct file_scratch *s = w->s;
	struct custode_event *ev = (struct custode_event *)s->ev;
	const char *src = custode_pathbuf_str(&s->pb);
	__u32 n = 0;

	custode_event_init(ev, a->hook, reason, w->run, enforced);
	ev->access = a->want;
	ev->object = CUSTODE_OBJECT_FILE;
	ev->obj.file.dev = a->dev;
	ev->obj.file.ino = a->ino;
	ev->obj.file.mode = a->mode;
	if (a->len > 0 && a->len <= CUSTODE_PATH_MAX) {
		/* one bounded copy (a helper call, not a loop: every denial site inlines this) */
		n = a->len < CUSTODE_PATH_MAX ? (__u32)a->len : CUSTODE_PATH_MAX - 1;
		CUSTODE_OPAQUE(n);
		n &= CUSTODE_PATH_MAX - 1;
		if (bpf_probe_read_kernel(ev->path, n, src))
			n = 0;
		ev->path[CUSTODE_PATH_MAX - 1] = 0;
	} else {
		ev->flags |= CUSTODE_EVENT_PATH_PARTIAL;
	}
	ev->obj.file.path_len = n;
	n = (sizeof(*ev) + n + 7) & ~7u;
	if (n > sizeof(struct custode_event) + CUSTODE_PATH_MAX)
		n = sizeof(struct custode_event) + CUSTODE_PATH_MAX;
	ev->size = n;
	/* the record as this hook wrote it, or none (who_end refuses then) */
	if (who_holds(w))
		custode_event_output(ev, n);
}

/*
 * Count, report, and return the verdict (audit mode allows; a cancelled run
 * never does): custode_enforced, whose reason tests never hold here.
 */
static __always_inline int deny(struct who *w, const struct ask *a, __u32 reason)
{
	__u32 enforced = CUSTODE_RUN_ENFORCES(w->run);

	if (custode_record(w->run_cgid, a->hook, reason, w->run, enforced) && w->s)
		file_event(w, a, reason, enforced);
	return enforced ? -EACCES : 0;
}

/*
 * The run-level verdict that comes before any rule: 1 = go on with the
 * rules, otherwise the return value of the hook in *ret. The live-run test
 * is custode_run_denial's (bpf/lib/run.bpf.h), spelled out here with a
 * deny() per reason: through that helper, clang shares one inlined deny()
 * between the two reasons, and custode_file_open then costs the 6.1
 * verifier about 100k more instructions (745k -> 848k measured) of the
 * headroom it hardly has.
 */
static __always_inline int run_gate(struct who *w, const struct ask *a, int *ret)
{
	if (!w->s) {
		*ret = -EACCES; /* cannot happen; deny rather than allow */
		return 0;
	}
	if (!w->run) { /* unregistered */
		*ret = deny(w, a, CUSTODE_REASON_RUN_UNREGISTERED);
		return 0;
	}
	if (w->run->flags & CUSTODE_RUN_CANCELLED) {
		*ret = deny(w, a, CUSTODE_REASON_RUN_CANCELLED);
		return 0;
	}
	if (!(w->run->flags & CUSTODE_RUN_FILE)) {
		*ret = 0;
		return 0;
	}
	return 1;
}

/* Allowed classes for the resolved path in the scratch buffer (and its rule's flags). */
static __always_inline __u32 rules_allow(struct who *w, long len, __u32 *flags)
{
	struct custode_path_key *key = &w->s->pb.key;
	struct custode_path_rule *rule;

	key->ruleset = w->run->ruleset;
	key->prefixlen = 32 + 8 * (len < CUSTODE_RULE_PATH_MAX ? len : CUSTODE_RULE_PATH_MAX);
	rule = bpf_map_lookup_elem(&custode_path_rules, key);
	if (flags)
		*flags = rule ? rule->flags : 0;
	return rule ? rule->allow : 0;
}

/* The classes a restricting rule bound to this inode leaves (all when none is). */
static __always_inline __u32 identity_mask(__u32 ruleset, struct inode *inode)
{
	struct custode_identity_key k = {};
	struct custode_identity *id;
	__u64 *restricting;
	__u32 slot;

	if (!inode)
		return ~0u;
	k.ruleset = ruleset;
	k.dev = inode->i_sb->s_dev;
	k.ino = inode->i_ino;
	/* no run restricts anything that hashes here: no lookup */
	slot = custode_identity_slot(k.dev, k.ino);
	restricting = bpf_map_lookup_elem(&custode_identity_filter, &slot);
	if (restricting && !*restricting)
		return ~0u;
	id = bpf_map_lookup_elem(&custode_identities, &k);
	if (id && (id->flags & CUSTODE_IDENTITY_RESTRICTS))
		return id->allow;
	return ~0u;
}

/* A restricting rule bound to this inode narrows the allowed classes. */
static __always_inline __u32 identity_restrict(struct who *w, struct inode *inode, __u32 allow)
{
	return allow & identity_mask(w->run->ruleset, inode);
}

#define SB_KERNMOUNT (1 << 22)

/*
 * Pipes, sockets, memfds and other anonymous files live on kernel-internal
 * mounts (SB_KERNMOUNT): they have no name a rule could match. A run reaches
 * them only through fds it holds (reopened via /proc/self/fd — another
 * process's fds are guarded by the ptrace check), so reading and writing
 * them is allowed; executing or mapping them executable never is.
 */
static __always_inline int kernel_object(struct vfsmount *vmnt)
{
	return vmnt && (vmnt->mnt_sb->s_flags & SB_KERNMOUNT);
}

static __always_inline int decide_kernel_object(struct who *w, struct ask *a)
{
	if (!(a->want & CUSTODE_ACCESS_EXEC))
		return 0;
	return deny(w, a, CUSTODE_REASON_FILE_EXEC_DENIED);
}

/*
 * bpf_d_path, checked: a file in a mount outside the task's mount namespace
 * (a detached open_tree copy, another namespace's) has no name here — d_path
 * would call its tree's top "/" — so it stays unresolved; a kernel object is
 * named for the event only ("pipe:[123]", "/memfd:x"); "(deleted)" is decided
 * by the name the file had.
 */
#define D_PATH_CHECKED(w, a, pathp, vmnt)                                                                  \
	do {                                                                                               \
		(a)->len = -ENOENT;                                                                        \
		if (!(w)->s)                                                                               \
			break;                                                                             \
		if (custode_mount_is_ours(vmnt)) {                                                         \
			(a)->len = bpf_d_path(pathp, custode_pathbuf_str(&(w)->s->pb), CUSTODE_PATH_MAX);  \
		} else if (kernel_object(vmnt)) {                                                          \
			(a)->kobj = 1;                                                                     \
			(a)->len = bpf_d_path(pathp, custode_pathbuf_str(&(w)->s->pb), CUSTODE_PATH_MAX);  \
		}                                                                                          \
		if ((a)->len > 0 && !(a)->kobj)                                                             \
			(a)->len = custode_strip_deleted(&(w)->s->pb, (a)->len);                           \
	} while (0)

/*
 * The path-checked decision: resolved path (a->len) → rules → want. The
 * path must be resolved and absolute; longer than the limit is its own reason.
 */
static __always_inline int decide_path(struct who *w, struct ask *a, __u32 allow_mask)
{
	__u32 allow;

	if (a->kobj)
		return decide_kernel_object(w, a);
	if (a->len < 0)
		return deny(w, a, a->len == -ENAMETOOLONG ? CUSTODE_REASON_PATH_TOO_LONG : CUSTODE_REASON_PATH_UNRESOLVED);
	/* d_path marks names outside the task's root "(unreachable)/...": not absolute */
	if (a->len < 2 || custode_pathbuf_str(&w->s->pb)[0] != '/')
		return deny(w, a, CUSTODE_REASON_PATH_UNRESOLVED);
	allow = rules_allow(w, a->len, NULL) & allow_mask;
	if (a->want & ~allow)
		return deny(w, a, missing_reason(a->want & ~allow));
	return 0;
}

/*
 * bpf_d_path, checked: a file in a mount outside the task's mount namespace
 * (a detached open_tree copy, another namespace's) has no name here — d_path
 * would call its tree's top "/" — and "(deleted)" is decided by the name the
 * file had.
 */
/* ---- open, exec, mmap ---- */

static __always_inline __u32 open_access(struct file *file)
{
	__u32 mode = file->f_mode;
	__u32 flags = file->f_flags;
	__u32 want = 0;

	if ((mode & FMODE_EXEC) || (flags & __FMODE_EXEC))
		want |= CUSTODE_ACCESS_EXEC;
	if (mode & FMODE_READ)
		want |= CUSTODE_ACCESS_READ;
	/* O_TRUNC truncates even with O_RDONLY, after file_open: it is a write */
	if ((mode & FMODE_WRITE) || (flags & O_TRUNC))
		want |= CUSTODE_ACCESS_WRITE;
	return want;
}

/*
 * procfs entries of a process (/proc/<pid>/...) belong to the run only if
 * that process is in the run (custode_cgroup_in_run: launcher and attached runs).
 */
static __always_inline int proc_foreign(struct who *w, struct inode *inode)
{
	unsigned long pi, first, task;
	struct cgroup *cg;
	struct pid *pid;

	if (!inode || inode->i_sb->s_magic != PROC_SUPER_MAGIC)
		return 0;
	pi = (unsigned long)inode - bpf_core_field_offset(struct proc_inode, vfs_inode);
	pid = BPF_CORE_READ((struct proc_inode *)pi, pid);
	if (!pid)
		return 0; /* a system-wide entry (cpuinfo, meminfo, ...) */
	first = (unsigned long)BPF_CORE_READ(pid, tasks[0].first); /* PIDTYPE_PID */
	if (!first)
		return 1; /* the process is gone: nothing of the run */
	task = first - bpf_core_field_offset(struct task_struct, pid_links);
	cg = BPF_CORE_READ((struct task_struct *)task, cgroups, dfl_cgrp);
	return !custode_cgroup_in_run(cg, w->run_cgid);
}

/*
 * Leaving the run through cgroup v2, or reaching outside it. Writing a pid
 * into the cgroup.procs or cgroup.threads of another cgroup moves that
 * process there; cgroup.kill and cgroup.freeze stop processes without the
 * signal hooks; limit files starve them. A run (an attached one may be root,
 * with no seccomp filter) that could write those files of a cgroup outside
 * itself would leave every custode hook behind or reach processes it may not
 * signal. So a write open of any file on a cgroup2 mount (any mount, any
 * cgroup namespace) is allowed only when the file's cgroup is the run's
 * cgroup or lies below it, whatever the policy grants
 * (file.cgroup_escape.denied, EACCES; audit mode records and allows); inside,
 * the policy decides as for any file. A run keeps moving its processes
 * between its own child cgroups and setting their limits. Only with the file
 * class loaded (attach always loads it).
 *
 * The cgroup is found by kernfs nodes, not dentries: the file's inode's
 * i_private is its kernfs node, whose parent is the cgroup's directory, and
 * a cgroup directory's kernfs id is the cgroup id custode keys runs on. The
 * kernfs parents reach the hierarchy's real root, whatever the mount's root
 * (a cgroup namespace) shows. Deeper than CGROUP_ESCAPE_WALK levels below
 * the run: not found, denied. Probe reads only here: these are rare opens,
 * and i_private is an untyped pointer.
 *
 * Not covered: an fd for such a file opened before the process was in a run
 * (attached runs keep what they had open), or passed in from outside.
 */
#define CGROUP_ESCAPE_WALK 64

/* Is this open a write to a file on cgroup v2? */
static __always_inline int cgroupfs_write(struct inode *inode, __u32 want)
{
	return (want & CUSTODE_ACCESS_WRITE) && inode && inode->i_sb->s_magic == CGROUP2_SUPER_MAGIC;
}

/* Is the cgroup of this cgroup2 file (its kernfs parent) run_cgid or below it? */
static __always_inline int cgroup_file_in_run(struct inode *inode, __u64 run_cgid)
{
	struct kernfs_node *kn = (struct kernfs_node *)inode->i_private;

	return custode_kn_in_run(custode_kn_parent(kn), run_cgid, CGROUP_ESCAPE_WALK);
}

/*
 * Directory decisions. A regular file F of directory D, reached through
 * mount M, is decided by the longest rule matching "D/F"; when the rule
 * matching "D/" has nothing below it (CUSTODE_PATH_RULE_NOTHING_BELOW, set
 * by the compiler), every name in D falls to that same rule, so the run's
 * classes for D's files don't depend on their names: that rule's classes,
 * narrowed by the restricting identities of D and of M's root, are kept for
 * (D, M) as the run's in the decision table, and the first open of another file of D costs
 * one lookup and the file's own identity lookup instead of d_path and the
 * rules — and no slot of its own. The same epoch as the file decisions (a
 * rename or mount anywhere, a changed run) and D's stamp (D unlinked,
 * replaced); a file of D unlinked or linked changes no other name in D. Only regular
 * files whose dentry is not their mount's root (a file bind mount's parent
 * is in another tree); only where file decisions are kept, so /proc, devpts,
 * mqueue and cgroupfs writes are always decided in full. A name too long to
 * resolve is decided in full (path.too_long).
 */

static __always_inline __u32 *stamp_of(__u64 ino)
{
	__u32 i = (__u32)mix64(0x452821e638d01377ull, ino) & (CUSTODE_INODE_STAMPS - 1);

	return bpf_map_lookup_elem(&custode_inode_stamps, &i);
}

/* Void every kept decision on inodes of this number (and any sharing its stamp). */
static __always_inline void inode_stamp_bump(struct inode *inode)
{
	__u32 *stamp = inode ? stamp_of(inode->i_ino) : NULL;

	if (stamp)
		__sync_fetch_and_add(stamp, 1);
}

/* The slot of a run's decision on an object (its inode number, its kind). */
static __always_inline struct custode_decision *decision_slot(__u64 run_cgid, __u64 ino, __u16 kind)
{
	__u32 i = (__u32)mix64(mix64(run_cgid, kind), ino) & (CUSTODE_DECISION_SLOTS - 1);

	return bpf_map_lookup_elem(&custode_decisions, &i);
}

static __always_inline __u64 decision_sum(const struct custode_decision *d)
{
	__u64 h = 0x243f6a8885a308d3ull;

	h = mix64(h, d->run);
	h = mix64(h, d->obj);
	h = mix64(h, d->ino);
	h = mix64(h, d->mnt);
	h = mix64(h, d->gen);
	h = mix64(h, ((__u64)d->rename_seq << 32) | d->mount_seq);
	h = mix64(h, ((__u64)d->stamp << 32) | ((__u32)d->kind << 16) | d->dirlen);
	h = mix64(h, ((__u64)d->allow << 32) | d->ruleset);
	return h | 1; /* never 0: a slot being written doesn't validate */
}

/*
 * The fields of a slot but its addresses and checksum, one by one: a slot is
 * read and written through a volatile pointer, a field at a time, never as a
 * block copy the compiler could reorder around the checksum.
 */
#define DECISION_FIELDS(X) X(gen) X(rename_seq) X(mount_seq) X(stamp) X(dirlen) X(allow) X(ruleset)
#define DECISION_READ(f) d->f = v->f;
#define DECISION_WRITE(f) v->f = d.f;

/*
 * Does slot c hold the run's decision for obj (of this kind) through mnt at
 * epoch e? Its contents in *d. The addresses are compared as numbers read from the
 * slot (same_addr): that is what the checksum is made of.
 */
static __always_inline int decision_valid(struct custode_decision *c, __u64 run_cgid, struct inode *obj,
					  struct vfsmount *mnt, __u16 kind, const struct fs_epoch *e,
					  struct custode_decision *d)
{
	volatile struct custode_decision *v = c;
	__u32 *stamp;

	/* another run's or object's slot (the common miss): out before reading the rest */
	d->run = v->run;
	d->obj = v->obj;
	d->ino = v->ino;
	d->kind = v->kind;
	if (d->run != run_cgid || !same_addr(d->obj, (__u64)obj) || d->ino != obj->i_ino || d->kind != kind)
		return 0;
	d->mnt = v->mnt;
	DECISION_FIELDS(DECISION_READ)
	d->sum = v->sum;
	if (!same_addr(d->mnt, (__u64)mnt) || d->gen != e->gen || d->rename_seq != e->rename_seq ||
	    d->mount_seq != e->mount_seq)
		return 0;
	stamp = stamp_of(d->ino);
	if (!stamp || *(volatile __u32 *)stamp != d->stamp)
		return 0; /* a dentry got an inode of this number since: maybe another inode at this address */
	return d->sum == decision_sum(d); /* else torn, or a mix of two writers */
}

/*
 * The stamp stored is the object's at the start of the decision, not now:
 * an unlink or link of the object that ran while the hook decided has
 * bumped it since, and the slot must not hold past it.
 */
static __always_inline void decision_store(struct custode_decision *c, __u64 run_cgid, struct inode *obj,
					   struct vfsmount *mnt, __u16 kind, const struct fs_epoch *e, __u32 allow,
					   __u32 ruleset, __u32 dirlen, __u32 stamp)
{
	volatile struct custode_decision *v = c;
	struct custode_decision d = {
		.run = run_cgid,
		.ino = obj->i_ino,
		.gen = e->gen,
		.rename_seq = e->rename_seq,
		.mount_seq = e->mount_seq,
		.kind = kind,
		.dirlen = (__u16)dirlen,
		.allow = allow,
		.ruleset = ruleset,
		.stamp = stamp,
	};

	/* the checksum last: a reader between these stores sees a slot that doesn't validate */
	v->sum = 0;
	/* the addresses stored, and read back as numbers: what the checksum is made of */
	if (!addr_number(&v->obj, (__u64)obj, &d.obj) || !addr_number(&v->mnt, (__u64)mnt, &d.mnt))
		return; /* rewritten under us: left invalid */
	v->run = d.run;
	v->ino = d.ino;
	v->kind = d.kind;
	DECISION_FIELDS(DECISION_WRITE)
	v->sum = decision_sum(&d);
}

/* D, when a decision for this file may be D's: a regular file below its mount's root. */
static __always_inline struct inode *dir_of(struct file *file, struct inode *inode)
{
	struct dentry *d = file->f_path.dentry, *p;

	if (!inode || !d || (inode->i_mode & S_IFMT) != S_IFREG || d == file->f_path.mnt->mnt_root)
		return NULL;
	p = d->d_parent;
	if (!p || p == d)
		return NULL;
	return p->d_inode;
}

/*
 * Before a full decision of an open: the stamps its kept decision will be
 * made at, in the hook's scratch (kept only if the scratch stayed the
 * hook's: decision_keep).
 */
static __always_inline void scratch_stamps(struct who *w, struct file *file, struct inode *inode)
{
	struct inode *dir = dir_of(file, inode);
	__u32 *s = stamp_of(inode->i_ino);

	if (!w->s)
		return;
	w->s->stamp_file = s ? *(volatile __u32 *)s : 0;
	s = dir ? stamp_of(dir->i_ino) : NULL;
	w->s->stamp_dir = s ? *(volatile __u32 *)s : 0;
}

/*
 * Do the run's kept decisions allow `want` on this file: a decision of its
 * directory (with the file's own identity applied) or of the file itself?
 * Without a claim: the scratch cells it uses are checked as they are read.
 */
static __noinline int decided(struct file *file, __u64 run_cgid, const struct fs_epoch *e, __u32 want)
{
	struct inode *inode = file->f_inode, *dir = dir_of(file, inode);
	struct vfsmount *mnt = file->f_path.mnt;
	struct custode_decision *c, d;

	if (!inode)
		return 0;
	/*
	 * The directory's first: most files are under a rule with nothing
	 * below it, whose decision is their directory's, and they have no slot
	 * of their own (looking there first cost every such open a miss).
	 */
	if (dir && (c = decision_slot(run_cgid, dir->i_ino, CUSTODE_DECISION_DIR)) &&
	    decision_valid(c, run_cgid, dir, mnt, CUSTODE_DECISION_DIR, e, &d) && !(want & ~d.allow) &&
	    /* "D/name (deleted)" and its NUL must fit, or d_path would have refused it */
	    d.dirlen + file->f_path.dentry->d_name.len + 12 <= CUSTODE_PATH_MAX &&
	    !(want & ~identity_mask(d.ruleset, inode)))
		return 1;
	/* the file's own: no identity lookup (its identities were applied when it was kept) */
	return (c = decision_slot(run_cgid, inode->i_ino, CUSTODE_DECISION_FILE)) &&
	       decision_valid(c, run_cgid, inode, mnt, CUSTODE_DECISION_FILE, e, &d) && !(want & ~d.allow);
}

/*
 * After an allowed full decision of an open (`allow`, the file's identity
 * applied): kept as the run's in the decision table, as D's decision when the rule matching
 * "D/" has nothing below it, else as the file's. `masks` is the identity
 * mask of D and of the mount's root (high half) and `allow` (low half); the
 * path of the file is in the scratch buffer (len with its NUL).
 */
static __noinline void decision_keep(struct who *w, struct file *file, long len, __u64 masks, const struct fs_epoch *e)
{
	__u32 up = masks >> 32, allow = (__u32)masks;
	struct inode *inode = file->f_inode, *dir = dir_of(file, inode);
	struct custode_path_key *key;
	struct custode_path_rule *rule;
	struct custode_decision *c;
	__u32 nlen, dirlen;
	__u64 stamps;

	if (!w->s || !w->run || !inode)
		return;
	/* read from the scratch before who_holds says it stayed this hook's */
	stamps = (__u64)w->s->stamp_dir << 32 | w->s->stamp_file;
	nlen = file->f_path.dentry->d_name.len;
	if (dir && len >= 3 && len <= CUSTODE_PATH_MAX && nlen + 2 <= len) {
		dirlen = (__u32)len - 2 - nlen; /* "D" "/" name NUL */
		CUSTODE_OPAQUE(dirlen);
		key = &w->s->pb.key;
		if (custode_pathbuf_str(&w->s->pb)[dirlen & (CUSTODE_PATH_MAX - 1)] == '/') {
			key->ruleset = w->run->ruleset;
			key->prefixlen =
				32 + 8 * (dirlen + 1 < CUSTODE_RULE_PATH_MAX ? dirlen + 1 : CUSTODE_RULE_PATH_MAX);
			rule = bpf_map_lookup_elem(&custode_path_rules, key);
			/* everything read from the scratch is read: still this hook's? */
			if (rule && (rule->flags & CUSTODE_PATH_RULE_NOTHING_BELOW) && who_holds(w) &&
			    (c = decision_slot(w->run_cgid, dir->i_ino, CUSTODE_DECISION_DIR))) {
				decision_store(c, w->run_cgid, dir, file->f_path.mnt, CUSTODE_DECISION_DIR, e,
					       rule->allow & up, w->run->ruleset, dirlen, (__u32)(stamps >> 32));
				return; /* the directory's decision serves this file too: no slot of its own */
			}
		}
	}
	/* allow came from the scratch: kept only if the scratch was this hook's throughout */
	if (who_holds(w) && (c = decision_slot(w->run_cgid, inode->i_ino, CUSTODE_DECISION_FILE)))
		decision_store(c, w->run_cgid, inode, file->f_path.mnt, CUSTODE_DECISION_FILE, e, allow,
			       w->run->ruleset, 0, (__u32)stamps);
}

/*
 * The decisions for an exec check (bprm_check, PROT_EXEC mappings): a kept
 * allow of the file (from an open: its identities applied, so never more
 * than the exec decision, which has none) or of its directory. 1 = allowed.
 */
static __noinline int exec_cached(struct file *file, __u64 run_cgid)
{
	struct inode *inode = file->f_inode;
	struct fs_epoch e = {};
	__u64 magic;

	if (!inode)
		return 0;
	magic = inode->i_sb->s_magic;
	if (magic == PROC_SUPER_MAGIC || magic == CUSTODE_DEVPTS_SUPER_MAGIC || magic == MQUEUE_MAGIC ||
	    magic == CGROUP2_SUPER_MAGIC || !fs_epoch_now(&e))
		return 0;
	return decided(file, run_cgid, &e, CUSTODE_ACCESS_EXEC);
}

/*
 * Objects that belong to the run that created them, recorded when their
 * dentry is instantiated (in the creator's context) and gone with the inode:
 * - POSIX message queues: a run with a process policy opens only its own,
 *   through mq_open (the internal mount, otherwise a kernel object) or any
 *   mqueue mount (process.ipc.denied). Launched runs also have an IPC
 *   namespace of their own.
 * - pty slaves (/dev/pts/N): the slave's inode is made when its master is
 *   opened (/dev/ptmx), so a pty the run makes itself is recorded here. A
 *   pty that is nobody's controlling terminal is the run's only if the run
 *   made it (pty_foreign): a host pty of no session — a program that never
 *   gave it a session, a login whose leader is gone — is not up for grabs.
 */
struct {
	__uint(type, BPF_MAP_TYPE_INODE_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64); /* the creating run's cgroup id */
} run_inode_owner SEC(".maps");

/*
 * Called for every dentry that gets its inode, host-wide: the address's
 * stamp (the decision table), two loads and out, unless it's a queue or a
 * pty made in a run.
 */
CUSTODE_LSM_VOID(d_instantiate, custode_d_instantiate, struct dentry *dentry, struct inode *inode)
{
	__u64 run_cgid, *owner, magic;

	if (!inode)
		return 0;
	/* an inode of this number reachable anew (maybe another at a kept address): its decisions no longer hold */
	inode_stamp_bump(inode);
	magic = inode->i_sb->s_magic;
	if (magic != MQUEUE_MAGIC && magic != CUSTODE_DEVPTS_SUPER_MAGIC)
		return 0;
	run_cgid = custode_current_run_cgid();
	if (!run_cgid)
		return 0;
	owner = bpf_inode_storage_get(&run_inode_owner, inode, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (owner)
		*owner = run_cgid;
	return 0;
}

static __always_inline bool made_by_run(struct inode *inode, __u64 run_cgid)
{
	__u64 *owner = bpf_inode_storage_get(&run_inode_owner, inode, 0, 0);

	return owner && *owner == run_cgid;
}

static __always_inline bool mqueue_foreign(struct inode *inode, __u64 run_cgid)
{
	if (!inode || inode->i_sb->s_magic != MQUEUE_MAGIC)
		return false;
	return !made_by_run(inode, run_cgid);
}

/*
 * A pty slave the run may not open: one whose session (either end's) is led
 * from outside the run, or one of no session that the run didn't make.
 */
static __always_inline bool pty_foreign(struct file *file, __u64 run_cgid)
{
	struct tty_struct *tty = custode_devpts_slave(file);

	if (!tty)
		return false;
	if (custode_tty_has_session(tty) || custode_tty_has_session(BPF_CORE_READ(tty, link)))
		return custode_tty_foreign(tty, run_cgid);
	return !made_by_run(file->f_inode, run_cgid);
}

/*
 * The kernel's own settings, which no run writes whatever its policy grants
 * (file.kernel.denied): sysctls under /proc/sys and /proc's other
 * system-wide entries (an entry of no process: sysrq-trigger signals every
 * process past task_kill or reboots the host, core_pattern and modprobe name
 * programs the kernel runs as root outside every run, irq affinities), and
 * the filesystems whose files are kernel knobs. Only root (or a namespaced
 * capability) can write most of them: attached root, runs launched by root.
 */
#define SYSFS_MAGIC 0x62656572
#define SECURITYFS_MAGIC 0x73636673
#define DEBUGFS_MAGIC 0x64626720
#define TRACEFS_MAGIC 0x74726163
#define CONFIGFS_MAGIC 0x62656570
#define EFIVARFS_MAGIC 0xde5e81e4
#define BINFMTFS_MAGIC 0x42494e4d
#define PSTOREFS_MAGIC 0x6165676c
#define FUSECTL_SUPER_MAGIC 0x65735543
#define SELINUX_MAGIC 0xf97cff8c
#define SMACK_MAGIC 0x43415d53

static __always_inline bool kernel_knob(struct inode *inode)
{
	unsigned long magic, pi;

	if (!inode)
		return false;
	magic = inode->i_sb->s_magic;
	if (magic == PROC_SUPER_MAGIC) {
		pi = (unsigned long)inode - bpf_core_field_offset(struct proc_inode, vfs_inode);
		return !BPF_CORE_READ((struct proc_inode *)pi, pid);
	}
	return magic == SYSFS_MAGIC || magic == SECURITYFS_MAGIC || magic == DEBUGFS_MAGIC || magic == TRACEFS_MAGIC ||
	       magic == CONFIGFS_MAGIC || magic == EFIVARFS_MAGIC || magic == BINFMTFS_MAGIC || magic == PSTOREFS_MAGIC ||
	       magic == FUSECTL_SUPER_MAGIC || magic == SELINUX_MAGIC || magic == SMACK_MAGIC;
}

/*
 * What no run writes whatever its policy (also runs without a file section),
 * decided before the policy: 0 allow, -EACCES deny, 1 = the policy decides.
 * - kernel knobs (kernel_knob), in any run state: file.kernel.denied;
 * - /proc/PID files of a process outside the run: oom_score_adj (the OOM
 *   killer's next victim), coredump_filter, clear_refs, autogroup,
 *   timerslack_ns, uid_map and the like act on that process with no LSM hook
 *   of their own: file.proc.denied, as the policy says for runs with a file
 *   section (which read none either). Reading is left to the policy.
 * A subprogram, not inlined: file_open is at the edge of 6.1's verifier
 * limit, and a call that returns only a number leaves its state as it was.
 */
static __always_inline int write_scope(struct who *w, struct file *file, __u32 want)
{
	struct ask a = {.hook = CUSTODE_HOOK_FILE_OPEN, .want = want};
	struct inode *inode = file->f_inode;
	int knob;

	if (!inode)
		return 1;
	knob = kernel_knob(inode);
	if (!knob && inode->i_sb->s_magic != PROC_SUPER_MAGIC)
		return 1;
	if (!who_init(w))
		return 1;
	ask_inode(&a, inode);
	D_PATH_CHECKED(w, &a, &file->f_path, file->f_path.mnt);
	if (knob)
		return deny(w, &a, CUSTODE_REASON_FILE_KERNEL_DENIED);
	/* an unregistered or cancelled run: custode_file_open refuses everything */
	if (w->run && !(w->run->flags & CUSTODE_RUN_CANCELLED) && proc_foreign(w, inode))
		return deny(w, &a, CUSTODE_REASON_FILE_PROC_DENIED);
	return 1;
}

/* With a claim of its own, ended before file_open goes on (and claims again if it must). */
static __noinline int open_write_scope(struct file *file, __u32 want)
{
	struct who w = {};

	return who_end(&w, write_scope(&w, file, want));
}

FILE_LSM(file_open, custode_file_open, struct file *file, int ret)
{
	struct ask a = {.hook = CUSTODE_HOOK_FILE_OPEN};
	struct fs_epoch epoch = {};
	struct inode *inode;
	struct dentry *dentry;
	__u64 run_cgid;
	__u32 allow, up;
	int r, cacheable, migrate;

	if (ret)
		return ret; /* honour earlier LSM verdicts */
	run_cgid = custode_current_run_cgid();
	if (!run_cgid)
		return 0; /* outside every run: one helper call, no map lookup */
	a.want = open_access(file);
	inode = file->f_inode;
	if (a.want & CUSTODE_ACCESS_WRITE) {
		r = open_write_scope(file, a.want);
		if (r != 1)
			return r;
	}
	/* a write on cgroupfs: decided in full every time, never by (nor into) the cache */
	migrate = cgroupfs_write(inode, a.want);
	/* the fast path: this run already may do this to this inode through this mount, and nothing moved since */
	cacheable = !migrate && inode && inode->i_sb->s_magic != PROC_SUPER_MAGIC &&
		    inode->i_sb->s_magic != CUSTODE_DEVPTS_SUPER_MAGIC && inode->i_sb->s_magic != MQUEUE_MAGIC &&
		    fs_epoch_now(&epoch);
	if (cacheable && decided(file, run_cgid, &epoch, a.want))
		return 0;

	who_init_run(w, run_cgid);
	if (cacheable)
		scratch_stamps(w, file, inode);
	ask_inode(&a, inode);
	D_PATH_CHECKED(w, &a, &file->f_path, file->f_path.mnt);
	/*
	 * Before the policy, and for every live run whatever its policy (also
	 * runs without a file section): no process leaves the run through
	 * cgroupfs. Unregistered and cancelled runs are denied by run_gate.
	 */
	if (migrate && w->s && w->run && !(w->run->flags & CUSTODE_RUN_CANCELLED) && !cgroup_file_in_run(inode, w->run_cgid))
		return deny(w, &a, CUSTODE_REASON_FILE_CGROUP_ESCAPE_DENIED);
	/*
	 * Every live run, whatever its policy grants: no terminal of a session
	 * led from outside the run (another login's /dev/pts/N: reading what is
	 * typed there, writing a fake prompt), and none of the host's own
	 * terminals (consoles, serial lines: bpf/lib/tty.bpf.h).
	 */
	if (w->s && w->run && !(w->run->flags & CUSTODE_RUN_CANCELLED) &&
	    (pty_foreign(file, w->run_cgid) || custode_host_terminal(inode)))
		return deny(w, &a, CUSTODE_REASON_FILE_TTY_DENIED);
	if (w->s && w->run && (w->run->flags & CUSTODE_RUN_PROCESS) && !(w->run->flags & CUSTODE_RUN_CANCELLED) &&
	    mqueue_foreign(inode, w->run_cgid))
		return deny(w, &a, CUSTODE_REASON_PROCESS_IPC_DENIED);
	if (!run_gate(w, &a, &r))
		return r;
	if (a.kobj)
		return decide_kernel_object(w, &a);
	if (proc_foreign(w, inode))
		return deny(w, &a, CUSTODE_REASON_FILE_PROC_DENIED);
	if (a.len < 0 || a.len < 2 || custode_pathbuf_str(&w->s->pb)[0] != '/')
		return decide_path(w, &a, CUSTODE_ACCESS_ALL);
	allow = rules_allow(w, a.len, NULL);
	if (a.want & ~allow)
		return deny(w, &a, missing_reason(a.want & ~allow));
	/*
	 * The path allows. Restricting rules also hold by identity — the file,
	 * its directory, and its mount's root (a bind mount) — so an alias made
	 * outside the run (hard link, bind mount, rename) doesn't reopen them.
	 */
	dentry = file->f_path.dentry;
	up = identity_mask(w->run->ruleset, dentry->d_parent->d_inode) &
	     identity_mask(w->run->ruleset, file->f_path.mnt->mnt_root->d_inode);
	allow = identity_restrict(w, inode, allow) & up;
	if (a.want & ~allow)
		return deny(w, &a, CUSTODE_REASON_FILE_IDENTITY_DENIED);
	if (cacheable && !(w->run->flags & CUSTODE_RUN_AUDIT))
		decision_keep(w, file, a.len, (__u64)up << 32 | allow, &epoch);
	return 0;
}

/* The final file of an exec (and each interpreter on the way): needs exec. */
FILE_LSM(bprm_check_security, custode_bprm_check, struct linux_binprm *bprm, int ret)
{
	struct ask a = {.hook = CUSTODE_HOOK_BPRM_CHECK, .want = CUSTODE_ACCESS_EXEC};
	struct file *file;
	__u64 run_cgid;
	int r;

	if (ret)
		return ret;
	run_cgid = custode_current_run_cgid();
	if (!run_cgid)
		return 0;
	file = bprm->file;
	if (exec_cached(file, run_cgid))
		return 0;
	who_init_run(w, run_cgid);
	ask_inode(&a, file->f_inode);
	D_PATH_CHECKED(w, &a, &bprm->file->f_path, bprm->file->f_path.mnt);
	if (!run_gate(w, &a, &r))
		return r;
	return decide_path(w, &a, CUSTODE_ACCESS_ALL);
}

/* Executable mappings of a file (ld.so ./binary, dlopen) need exec on the file. */
FILE_LSM(mmap_file, custode_mmap_file, struct file *file, unsigned long reqprot, unsigned long prot, unsigned long flags,
	     int ret)
{
	struct ask a = {.hook = CUSTODE_HOOK_MMAP_FILE, .want = CUSTODE_ACCESS_EXEC};
	__u64 run_cgid;
	int r;

	if (ret)
		return ret;
	if (!(prot & PROT_EXEC) || !file)
		return 0;
	run_cgid = custode_current_run_cgid();
	if (!run_cgid || exec_cached(file, run_cgid))
		return 0;
	who_init_run(w, run_cgid);
	ask_inode(&a, file->f_inode);
	D_PATH_CHECKED(w, &a, &file->f_path, file->f_path.mnt);
	if (!run_gate(w, &a, &r))
		return r;
	return decide_path(w, &a, CUSTODE_ACCESS_ALL);
}

/* Making a file mapping executable later is the same as mapping it so. */
FILE_LSM(file_mprotect, custode_file_mprotect, struct vm_area_struct *vma, unsigned long reqprot, unsigned long prot, int ret)
{
	struct ask a = {.hook = CUSTODE_HOOK_FILE_MPROTECT, .want = CUSTODE_ACCESS_EXEC};
	struct file *file;
	__u64 run_cgid;
	int r;

	if (ret)
		return ret;
	if (!(prot & PROT_EXEC) || (vma->vm_flags & VM_EXEC))
		return 0;
	file = vma->vm_file;
	if (!file)
		return 0;
	run_cgid = custode_current_run_cgid();
	if (!run_cgid || exec_cached(file, run_cgid))
		return 0;
	who_init_run(w, run_cgid);
	ask_inode(&a, file->f_inode);
	a.len = w->s ? custode_path_build(&w->s->pb, file->f_path.mnt, file->f_path.dentry, NULL) : -ENOENT;
	if (!run_gate(w, &a, &r))
		return r;
	return decide_path(w, &a, CUSTODE_ACCESS_ALL);
}

/* ---- the namespace: create, delete, link, rename ---- */

/* want on dir/dentry, the object created or removed there */
static __always_inline int dir_entry(struct who *w, __u16 hook, __u32 want, const struct path *dir, struct dentry *dentry)
{
	struct ask a = {.hook = hook, .want = want};
	int r;

	if (!who_init(w))
		return 0;
	ask_inode(&a, dentry->d_inode);
	a.len = w->s ? custode_path_build(&w->s->pb, dir->mnt, dir->dentry, dentry) : -ENOENT;
	if (!run_gate(w, &a, &r))
		return r;
	return decide_path(w, &a, CUSTODE_ACCESS_ALL);
}

/* Regular files (O_CREAT), fifos, device nodes and unix sockets are all made here. */
FILE_LSM(path_mknod, custode_path_mknod, const struct path *dir, struct dentry *dentry, umode_t mode, unsigned int dev, int ret)
{
	return ret ? ret : dir_entry(w, CUSTODE_HOOK_PATH_MKNOD, CUSTODE_ACCESS_CREATE, dir, dentry);
}

FILE_LSM(path_mkdir, custode_path_mkdir, const struct path *dir, struct dentry *dentry, umode_t mode, int ret)
{
	return ret ? ret : dir_entry(w, CUSTODE_HOOK_PATH_MKDIR, CUSTODE_ACCESS_CREATE, dir, dentry);
}

FILE_LSM(path_symlink, custode_path_symlink, const struct path *dir, struct dentry *dentry, const char *old_name, int ret)
{
	return ret ? ret : dir_entry(w, CUSTODE_HOOK_PATH_SYMLINK, CUSTODE_ACCESS_CREATE, dir, dentry);
}

/*
 * Unlink, rmdir and link change the names of one inode and of no other:
 * its own stamp is bumped (by every process), so its kept decisions — and
 * its directory decision, for a directory — are decided afresh, and nothing
 * else is voided. A file unlinked elsewhere on the host (temporary files,
 * builds) costs other files' opens nothing. The names of every other file
 * keep their meaning: an unlinked name is no name, a linked one is a second
 * name of an inode already decided (and gets its inode through
 * d_instantiate, which bumps the stamp again). Renames and mounts void
 * everything (rename_lock, mount_lock, custode_fs_gen): a moved directory
 * changes every path below it, and no hook runs after the move to say
 * which.
 *
 * The inode hooks, not the path ones: vfs_unlink, vfs_rmdir and vfs_link
 * call them for every caller (overlayfs on its upper layer, nfsd, ksmbd,
 * cachefiles: no path hook there), after the permission checks (a process
 * that may not delete the name can't bump its stamp). A decision stores the
 * stamp read before it started (scratch_stamps), so an unlink that runs while
 * an open is decided voids what that open keeps.
 */
CUSTODE_LSM(inode_unlink, custode_inode_unlink, struct inode *dir, struct dentry *dentry, int ret)
{
	inode_stamp_bump(dentry->d_inode);
	return ret;
}

CUSTODE_LSM(inode_rmdir, custode_inode_rmdir, struct inode *dir, struct dentry *dentry, int ret)
{
	inode_stamp_bump(dentry->d_inode);
	return ret;
}

CUSTODE_LSM(inode_link, custode_inode_link, struct dentry *old_dentry, struct inode *dir, struct dentry *new_dentry, int ret)
{
	inode_stamp_bump(old_dentry->d_inode);
	return ret;
}

/* Unlink and rmdir need delete on the name; the inode's kept decisions go in inode_unlink, above. */
FILE_LSM(path_unlink, custode_path_unlink, const struct path *dir, struct dentry *dentry, int ret)
{
	return ret ? ret : dir_entry(w, CUSTODE_HOOK_PATH_UNLINK, CUSTODE_ACCESS_DELETE, dir, dentry);
}

FILE_LSM(path_rmdir, custode_path_rmdir, const struct path *dir, struct dentry *dentry, int ret)
{
	return ret ? ret : dir_entry(w, CUSTODE_HOOK_PATH_RMDIR, CUSTODE_ACCESS_DELETE, dir, dentry);
}

/*
 * A hard link creates a new name for an existing inode: the new name needs
 * create, and the source must be inside the run's write scope — else a run
 * could give a file it may only read a second, writable name.
 */
FILE_LSM(path_link, custode_path_link, struct dentry *old_dentry, const struct path *new_dir, struct dentry *new_dentry, int ret)
{
	struct ask a = {.hook = CUSTODE_HOOK_PATH_LINK, .want = CUSTODE_ACCESS_WRITE};
	struct vfsmount *mnt;
	struct inode *inode;
	__u32 allow;
	int r;

	if (ret)
		return ret;
	if (!who_init(w))
		return 0;
	inode = old_dentry->d_inode;
	ask_inode(&a, inode);
	mnt = new_dir->mnt; /* a link never crosses mounts */
	a.len = w->s ? custode_path_build(&w->s->pb, mnt, old_dentry->d_parent, old_dentry) : -ENOENT;
	if (!run_gate(w, &a, &r))
		return r;
	if (a.len < 0)
		return decide_path(w, &a, CUSTODE_ACCESS_ALL);
	allow = identity_restrict(w, inode, rules_allow(w, a.len, NULL));
	if (!(allow & CUSTODE_ACCESS_WRITE))
		return deny(w, &a, CUSTODE_REASON_FILE_LINK_DENIED);
	a.want = CUSTODE_ACCESS_CREATE;
	a.len = custode_path_build(&w->s->pb, mnt, new_dir->dentry, new_dentry);
	return decide_path(w, &a, CUSTODE_ACCESS_ALL);
}

/* One end of a rename: want at dir/dentry; a directory may not move onto or off a protected path. */
static __always_inline int rename_end(struct who *w, struct ask *a, const struct path *dir, struct dentry *dentry,
				      int is_dir)
{
	__u32 flags = 0, allow;

	a->len = custode_path_build(&w->s->pb, dir->mnt, dir->dentry, dentry);
	if (a->len < 0 || custode_pathbuf_str(&w->s->pb)[0] != '/')
		return decide_path(w, a, CUSTODE_ACCESS_ALL);
	allow = rules_allow(w, a->len, &flags);
	if (a->want & ~allow)
		return deny(w, a, missing_reason(a->want & ~allow));
	if (is_dir && (flags & CUSTODE_PATH_RULE_PROTECTS_BELOW))
		return deny(w, a, a->want & CUSTODE_ACCESS_CREATE ? CUSTODE_REASON_FILE_CREATE_DENIED
								  : CUSTODE_REASON_FILE_DELETE_DENIED);
	return 0;
}

/* Rename deletes at the source and creates at the destination (both ways for RENAME_EXCHANGE). */
FILE_LSM(path_rename, custode_path_rename, const struct path *old_dir, struct dentry *old_dentry, const struct path *new_dir,
	     struct dentry *new_dentry, unsigned int flags, int ret)
{
	struct ask a = {.hook = CUSTODE_HOOK_PATH_RENAME};
	struct inode *old_inode, *new_inode;
	int exchange = flags & RENAME_EXCHANGE, r, old_dir_is, new_dir_is;

	fs_gen_bump(); /* rename_lock covers the move itself; this covers the time before it */
	if (ret)
		return ret;
	if (!who_init(w))
		return 0;
	old_inode = old_dentry->d_inode;
	new_inode = new_dentry->d_inode;
	ask_inode(&a, old_inode);
	a.len = -ENOENT;
	if (!run_gate(w, &a, &r))
		return r;
	old_dir_is = old_inode && (old_inode->i_mode & S_IFMT) == S_IFDIR;
	new_dir_is = new_inode && (new_inode->i_mode & S_IFMT) == S_IFDIR;
	a.want = CUSTODE_ACCESS_DELETE | (exchange ? CUSTODE_ACCESS_CREATE : 0);
	if ((r = rename_end(w, &a, old_dir, old_dentry, old_dir_is || (exchange && new_dir_is))))
		return r;
	ask_inode(&a, new_inode);
	a.want = CUSTODE_ACCESS_CREATE | (new_inode ? CUSTODE_ACCESS_DELETE : 0);
	return rename_end(w, &a, new_dir, new_dentry, old_dir_is || (exchange && new_dir_is));
}

/* ---- changes to an existing file ---- */

/* want (write) on a path; a restricting identity on the inode holds too. */
static __always_inline int path_write(struct who *w, __u16 hook, const struct path *path)
{
	struct ask a = {.hook = hook, .want = CUSTODE_ACCESS_WRITE};
	struct inode *inode;
	struct dentry *d;
	int r;

	if (!who_init(w))
		return 0;
	d = path->dentry;
	inode = d->d_inode;
	ask_inode(&a, inode);
	a.len = w->s ? custode_path_build(&w->s->pb, path->mnt, d, NULL) : -ENOENT;
	if (!run_gate(w, &a, &r))
		return r;
	r = decide_path(w, &a, CUSTODE_ACCESS_ALL);
	if (r)
		return r;
	if (!(identity_restrict(w, inode, CUSTODE_ACCESS_ALL) & CUSTODE_ACCESS_WRITE))
		return deny(w, &a, CUSTODE_REASON_FILE_IDENTITY_DENIED);
	return 0;
}

FILE_LSM(path_truncate, custode_path_truncate, const struct path *path, int ret)
{
	return ret ? ret : path_write(w, CUSTODE_HOOK_PATH_TRUNCATE, path);
}

FILE_LSM(path_chmod, custode_path_chmod, const struct path *path, umode_t mode, int ret)
{
	return ret ? ret : path_write(w, CUSTODE_HOOK_PATH_CHMOD, path);
}

FILE_LSM(path_chown, custode_path_chown, const struct path *path, unsigned int uid, unsigned int gid, int ret)
{
	return ret ? ret : path_write(w, CUSTODE_HOOK_PATH_CHOWN, path);
}

/*
 * Hooks that see only a dentry (timestamps, extended attributes): the rule
 * is found by identity, walking up from the inode within its file system;
 * the nearest rule path by identity decides, and none means denied.
 */
static __always_inline int dentry_write(struct who *w, __u16 hook, struct dentry *dentry)
{
	struct ask a = {.hook = hook, .want = CUSTODE_ACCESS_WRITE, .len = -ENOENT};
	struct custode_identity_key k = {};
	struct custode_identity *id = NULL;
	struct dentry *d = dentry;
	int r, i;

	if (!who_init(w))
		return 0;
	ask_inode(&a, dentry->d_inode);
	if (!run_gate(w, &a, &r))
		return r;
	k.ruleset = w->run->ruleset;
	for (i = 0; i < IDENTITY_WALK; i++) {
		struct inode *inode = d->d_inode;
		struct dentry *parent;

		if (inode) {
			k.dev = inode->i_sb->s_dev;
			k.ino = inode->i_ino;
			id = bpf_map_lookup_elem(&custode_identities, &k);
			if (id)
				break;
		}
		parent = d->d_parent;
		if (!parent || parent == d)
			break;
		d = parent;
	}
	if (!id && i == IDENTITY_WALK)
		return deny(w, &a, CUSTODE_REASON_PATH_TOO_LONG); /* deeper than the walk goes: unresolved, not "no rule" */
	if (!id || !(id->allow & CUSTODE_ACCESS_WRITE))
		return deny(w, &a, CUSTODE_REASON_FILE_WRITE_DENIED);
	return 0;
}

/* Mode, owner and size changes have path hooks; what's left here is timestamps (utimes). */
static __always_inline int setattr_decide(struct who *w, struct dentry *dentry, struct iattr *attr)
{
	if (attr->ia_valid & (ATTR_MODE | ATTR_UID | ATTR_GID | ATTR_SIZE))
		return 0; /* path_chmod, path_chown, path_truncate decided */
	return dentry_write(w, CUSTODE_HOOK_INODE_SETATTR, dentry);
}

/* 6.1: (dentry, attr) */
FILE_LSM(inode_setattr, custode_inode_setattr, struct dentry *dentry, struct iattr *attr, int ret)
{
	return ret ? ret : setattr_decide(w, dentry, attr);
}

/* later kernels: the mount's idmap comes first */
struct mnt_idmap;
FILE_LSM(inode_setattr, custode_inode_setattr_idmap, struct mnt_idmap *idmap, struct dentry *dentry,
	    struct iattr *attr, int ret)
{
	return ret ? ret : setattr_decide(w, dentry, attr);
}

FILE_LSM(inode_setxattr, custode_inode_setxattr, struct user_namespace *mnt_userns, struct dentry *dentry, const char *name,
	     const void *value, size_t size, int flags, int ret)
{
	return ret ? ret : dentry_write(w, CUSTODE_HOOK_INODE_SETXATTR, dentry);
}

FILE_LSM(inode_removexattr, custode_inode_removexattr, struct user_namespace *mnt_userns, struct dentry *dentry, const char *name,
	     int ret)
{
	return ret ? ret : dentry_write(w, CUSTODE_HOOK_INODE_REMOVEXATTR, dentry);
}

/*
 * ---- mounts and roots: never inside a run ----
 * (A newcomer in its set-up window is not inside: who_init finds no run.)
 */

static __always_inline int no_mounts(struct who *w, __u16 hook)
{
	struct ask a = {.hook = hook, .len = -ENOENT};

	if (!who_init(w))
		return 0;
	if (!w->s)
		return -EPERM;
	if (!w->run) /* unregistered */
		return deny(w, &a, CUSTODE_REASON_RUN_UNREGISTERED) ? -EPERM : 0;
	/* every run, whatever its policy: a mount could hide or rebind any path */
	return deny(w, &a, CUSTODE_REASON_FILE_MOUNT_DENIED) ? -EPERM : 0;
}

FILE_LSM(sb_mount, custode_sb_mount, const char *dev_name, const struct path *path, const char *type, unsigned long flags,
	     void *data, int ret)
{
	return ret ? ret : no_mounts(w, CUSTODE_HOOK_SB_MOUNT);
}

FILE_LSM(sb_umount, custode_sb_umount, struct vfsmount *mnt, int flags, int ret)
{
	return ret ? ret : no_mounts(w, CUSTODE_HOOK_SB_UMOUNT);
}

FILE_LSM(sb_pivotroot, custode_sb_pivotroot, const struct path *old_path, const struct path *new_path, int ret)
{
	return ret ? ret : no_mounts(w, CUSTODE_HOOK_SB_PIVOTROOT);
}

FILE_LSM(move_mount, custode_move_mount, const struct path *from_path, const struct path *to_path, int ret)
{
	return ret ? ret : no_mounts(w, CUSTODE_HOOK_MOVE_MOUNT);
}

FILE_LSM(path_chroot, custode_path_chroot, const struct path *path, int ret)
{
	return ret ? ret : no_mounts(w, CUSTODE_HOOK_PATH_CHROOT);
}

/* ---- unix sockets ---- */

/* Is the socket's creator in the current run? (custode_cgroup_in_run: launcher and attached runs) */
static __always_inline int sock_in_run(struct who *w, struct sock *sk)
{
	return custode_cgroup_in_run(BPF_CORE_READ(sk, sk_cgrp_data.cgroup), w->run_cgid);
}

/*
 * Connecting to a path socket needs write on its path (docker.sock,
 * ssh-agent, D-Bus, resolved are outside every built-in profile); an
 * abstract socket must belong to the run; unnamed (socketpair) ones are fine.
 */
static __always_inline int unix_peer(struct who *w, __u16 hook, struct sock *other)
{
	struct ask a = {.hook = hook, .want = CUSTODE_ACCESS_WRITE};
	struct unix_sock *u = (struct unix_sock *)other;
	struct dentry *d;
	int r;

	if (!who_init(w))
		return 0;
	d = BPF_CORE_READ(u, path.dentry);
	ask_inode_probe(&a, d ? BPF_CORE_READ(d, d_inode) : NULL);
	a.len = w->s && d ? custode_path_build(&w->s->pb, BPF_CORE_READ(u, path.mnt), d, NULL) : -ENOENT;
	/*
	 * An abstract socket (no path: nothing a file rule could name) is host
	 * IPC like SysV objects: refused to every live run whatever its policy
	 * unless it is the run's own — X11's @/tmp/.X11-unix/X0 takes keystrokes,
	 * a session bus takes method calls. Unnamed (socketpair) peers are fine.
	 */
	if (!d && w->s && w->run && !(w->run->flags & CUSTODE_RUN_CANCELLED) && BPF_CORE_READ(u, addr) &&
	    !sock_in_run(w, other))
		return deny(w, &a, CUSTODE_REASON_UNIX_ABSTRACT_DENIED);
	if (!run_gate(w, &a, &r))
		return r;
	if (d) {
		__u32 allow;

		if (a.len < 0 || custode_pathbuf_str(&w->s->pb)[0] != '/')
			return decide_path(w, &a, CUSTODE_ACCESS_ALL);
		allow = rules_allow(w, a.len, NULL);
		if (!(allow & CUSTODE_ACCESS_WRITE))
			return deny(w, &a, CUSTODE_REASON_UNIX_CONNECT_DENIED);
	}
	return 0; /* abstract: the run's own (above); unnamed */
}

FILE_LSM(unix_stream_connect, custode_unix_stream_connect, struct sock *sock, struct sock *other, struct sock *newsk, int ret)
{
	return ret ? ret : unix_peer(w, CUSTODE_HOOK_UNIX_STREAM_CONNECT, other);
}

FILE_LSM(unix_may_send, custode_unix_may_send, struct socket *sock, struct socket *other, int ret)
{
	return ret ? ret : unix_peer(w, CUSTODE_HOOK_UNIX_MAY_SEND, BPF_CORE_READ(other, sk));
}
