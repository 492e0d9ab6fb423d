/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The denial record written to the pinned ring buffer `custode_events`.
 * Versioned: consumers check `version` and skip records of a version they do
 * not know (the `size` field lets them step over it). Field-by-field docs:
 * docs/events.md.
 */
#ifndef CUSTODE_EVENT_H
#define CUSTODE_EVENT_H

#include "custode/types.h"

/*
 * 2: policy_version, the executable's identity (exe_dev, exe_ino) and
 * throttle records (CUSTODE_OBJECT_THROTTLE) after the v1 fields.
 * 3: policy_version is 64 bits (in v2 a __u32 followed by 4 bytes of padding;
 * same size and offsets). Readers also accept versions 1 (CUSTODE_EVENT_V1_SIZE
 * bytes + path) and 2.
 */
#define CUSTODE_EVENT_VERSION 3
#define CUSTODE_EVENT_V1_SIZE 120

/* The LSM or cgroup hook that made the decision. Stable numbers. */
#define CUSTODE_HOOKS(X)              \
	X(NONE, 0, "none")            \
	X(FILE_OPEN, 1, "file_open")  \
	X(CONNECT4, 2, "connect4")    \
	X(CONNECT6, 3, "connect6")    \
	X(SENDMSG4, 4, "sendmsg4")    \
	X(SENDMSG6, 5, "sendmsg6")    \
	X(SOCK_CREATE, 6, "sock_create") \
	X(BIND4, 7, "bind4")          \
	X(BIND6, 8, "bind6")          \
	X(BPRM_CHECK, 9, "bprm_check_security") \
	X(PATH_UNLINK, 10, "path_unlink") \
	X(PATH_RMDIR, 11, "path_rmdir") \
	X(PATH_MKDIR, 12, "path_mkdir") \
	X(PATH_MKNOD, 13, "path_mknod") \
	X(PATH_SYMLINK, 14, "path_symlink") \
	X(PATH_LINK, 15, "path_link") \
	X(PATH_RENAME, 16, "path_rename") \
	X(PATH_TRUNCATE, 17, "path_truncate") \
	X(PATH_CHMOD, 18, "path_chmod") \
	X(PATH_CHOWN, 19, "path_chown") \
	X(INODE_SETXATTR, 20, "inode_setxattr") \
	X(INODE_SETATTR, 21, "inode_setattr") \
	X(MMAP_FILE, 22, "mmap_file") \
	X(FILE_MPROTECT, 23, "file_mprotect") \
	X(SB_MOUNT, 24, "sb_mount") \
	X(UNIX_STREAM_CONNECT, 25, "unix_stream_connect") \
	X(UNIX_MAY_SEND, 26, "unix_may_send") \
	X(SOCKET_CONNECT, 27, "socket_connect") \
	X(SB_UMOUNT, 28, "sb_umount") \
	X(SB_PIVOTROOT, 29, "sb_pivotroot") \
	X(PTRACE_ACCESS_CHECK, 30, "ptrace_access_check") \
	X(PTRACE_TRACEME, 31, "ptrace_traceme") \
	X(TASK_KILL, 32, "task_kill") \
	X(FILE_SEND_SIGIOTASK, 33, "file_send_sigiotask") \
	X(BPF, 34, "bpf") \
	X(BPF_MAP, 35, "bpf_map") \
	X(BPF_PROG, 36, "bpf_prog") \
	X(KEY_ALLOC, 37, "key_alloc") \
	X(PERF_EVENT_OPEN, 38, "perf_event_open") \
	X(KERNEL_MODULE, 39, "kernel_module") \
	X(TASK_ALLOC, 40, "task_alloc") \
	X(MOVE_MOUNT, 41, "move_mount") \
	X(RESOLVER, 50, "resolver") \
	X(KEY_PERMISSION, 51, "key_permission") \
	X(FILE_FCNTL, 52, "file_fcntl") \
	X(FILE_IOCTL, 53, "file_ioctl") \
	X(INODE_INIT_SECURITY_ANON, 54, "inode_init_security_anon") \
	X(KERNEL_READ_FILE, 55, "kernel_read_file") \
	X(KERNEL_LOAD_DATA, 56, "kernel_load_data") \
	X(INODE_REMOVEXATTR, 57, "inode_removexattr") \
	X(PATH_CHROOT, 58, "path_chroot") \
	X(IPC_PERMISSION, 59, "ipc_permission") \
	X(IPC_ASSOCIATE, 60, "ipc_associate") \
	X(IPC_CTL, 61, "ipc_ctl") \
	X(IPC_ALLOC, 62, "ipc_alloc") \
	X(TASK_SETNICE, 63, "task_setnice") \
	X(TASK_SETIOPRIO, 64, "task_setioprio") \
	X(TASK_SETSCHEDULER, 65, "task_setscheduler") \
	X(TASK_MOVEMEMORY, 66, "task_movememory") \
	X(TASK_SETRLIMIT, 67, "task_setrlimit") \
	X(SOCKET_SETSOCKOPT, 68, "socket_setsockopt") \
	X(SOCKET_SENDMSG, 69, "socket_sendmsg") \
	X(SOCKET_LISTEN, 70, "socket_listen") \
	X(SOCKET_CREATE, 71, "socket_create") \
	X(FILE_IOCTL_COMPAT, 72, "file_ioctl_compat") \
	X(SETSOCKOPT, 73, "setsockopt") \
	X(INET_CONN_REQUEST, 74, "inet_conn_request") \
	X(TASK_SETPGID, 75, "task_setpgid") \
	X(CAPABLE, 76, "capable") \
	X(PATH_NOTIFY, 77, "path_notify")

enum custode_hook {
#define CUSTODE_X_HOOK(sym, num, name) CUSTODE_HOOK_##sym = num,
	CUSTODE_HOOKS(CUSTODE_X_HOOK)
#undef CUSTODE_X_HOOK
};

enum custode_event_flags {
	CUSTODE_EVENT_ENFORCED = 1u << 0,   /* the operation was denied (not audit mode) */
	CUSTODE_EVENT_PATH_PARTIAL = 1u << 1, /* path[] is not the full resolved path */
	CUSTODE_EVENT_THROTTLE = 1u << 2,     /* a throttle record: obj.throttle, no decision of its own */
};

enum custode_object_kind {
	CUSTODE_OBJECT_NONE = 0,
	CUSTODE_OBJECT_FILE = 1,
	CUSTODE_OBJECT_NET = 2,
	CUSTODE_OBJECT_TASK = 3,
	CUSTODE_OBJECT_THROTTLE = 4,
};

struct custode_event_file {
	__u64 dev;      /* kernel dev_t of the superblock: major << 20 | minor */
	__u64 ino;
	__u32 mode;     /* i_mode */
	__u32 path_len; /* bytes in path[] including the terminating NUL; 0 if none */
};

struct custode_event_net {
	__u8 addr[16];   /* destination, IPv4 as ::ffff:a.b.c.d; zero for sock_create */
	__u16 port;      /* host byte order */
	__u16 family;    /* AF_INET, AF_INET6, ... */
	__u16 proto;     /* IPPROTO_TCP, IPPROTO_UDP, ... */
	__u16 sock_type; /* SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, ... */
	__u32 addr_class; /* enum custode_addr_class */
	__u32 _pad;
};

struct custode_event_task {
	__u32 target_pid;   /* the other task (thread id) */
	__u32 target_tgid;
	__u64 target_cgroup; /* its cgroup id */
	__u32 signal;       /* task_kill: the signal; ptrace: the PTRACE_MODE_* mode */
	__u32 command;      /* bpf: the bpf() command; bpf_map/bpf_prog: the map or program id; fcntl/ioctl: the command */
	__u64 _pad;
};

/*
 * A throttle record (flags has CUSTODE_EVENT_THROTTLE): `count` denials of
 * this run (run_id) and reason were counted but not recorded since the
 * previous throttle record for them; `total` is the monotonic sum of all
 * such denials (lets a reader that lost a throttle record catch up).
 */
struct custode_event_throttle {
	__u64 count;
	__u64 total;
	__u64 since_ns; /* CLOCK_BOOTTIME start of the window the suppressed denials fell in (the last one) */
	__u64 run_cgid; /* the run's cgroup id (the throttle state's key, with the reason) */
};

struct custode_event {
	__u16 version;     /* CUSTODE_EVENT_VERSION */
	__u16 size;        /* bytes of this record, path included */
	__u16 hook;        /* enum custode_hook */
	__u16 reason;      /* enum custode_reason */
	__u32 flags;       /* enum custode_event_flags */
	__u32 access;      /* requested access classes, CUSTODE_ACCESS_* */
	__u64 seq;         /* engine-wide sequence number: gaps mean lost records */
	__u64 boot_ns;     /* CLOCK_BOOTTIME at the decision */
	__u64 run_id;
	__u64 cgroup_id;   /* the task's own cgroup (may be a child of the run's) */
	__u32 pid;         /* thread id */
	__u32 tgid;        /* process id */
	__u32 uid;
	__u32 gid;
	__u32 ruleset;     /* rule set the decision was made against */
	__u16 object;      /* enum custode_object_kind */
	__u16 _pad0;
	char comm[16];
	union {
		struct custode_event_file file;
		struct custode_event_net net;
		struct custode_event_task task;
		struct custode_event_throttle throttle;
		__u8 raw[32];
	} obj;
	/* version 2 */
	__u64 exe_dev;     /* the task's executable (mm->exe_file): kernel dev_t, 0 for kernel threads */
	__u64 exe_ino;
	__u64 policy_version; /* the run's policy version (custode_run.policy_version); v2: __u32 + padding */
	char path[];       /* obj.file.path_len bytes, NUL-terminated */
};

_Static_assert(sizeof(struct custode_event_file) == 24, "custode_event_file ABI");
_Static_assert(sizeof(struct custode_event_net) == 32, "custode_event_net ABI");
_Static_assert(sizeof(struct custode_event_task) == 32, "custode_event_task ABI");
_Static_assert(sizeof(struct custode_event_throttle) == 32, "custode_event_throttle ABI");
_Static_assert(sizeof(struct custode_event) == 144, "custode_event ABI");
_Static_assert(__builtin_offsetof(struct custode_event, exe_dev) == CUSTODE_EVENT_V1_SIZE, "v1 prefix");
_Static_assert(__builtin_offsetof(struct custode_event, policy_version) == 136, "v2 policy_version offset");

#endif
