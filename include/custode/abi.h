/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Map keys and values shared by the BPF engine and the userspace loader.
 * Bump CUSTODE_ABI_VERSION on any change to a layout here: a pinned engine of
 * another ABI version is never reused (see docs/engine.md).
 */
#ifndef CUSTODE_ABI_H
#define CUSTODE_ABI_H

#include "custode/types.h"
#include "custode/reasons.h"

#define CUSTODE_ABI_VERSION 10 /* 2: event record v2, custode_gates, throttle maps, CUSTODE_RUN_ATTACHED; 3: run cache; 4: attack classes (W^X flag, IPC owners, host addresses); 5: 64-bit policy_version (run value, event record v3); 6: admitted binaries (custode_admitted); resolver listeners in runs' network namespaces (custode_dns_netns, custode_dns_netns_seen, custode_dns_wake; custode_dns_cfg.gen); set-up newcomers (custode_newcomers); 7: the count of newcomer marks (custode_newcomers_live); 8: the restricting-identity filter (custode_identity_filter); 9: per-run decision tables (custode_decisions, custode_inode_stamps) instead of per-inode slots; 10: one shared decision table (custode_decisions an array; struct custode_decision names its run), no per-run tables */

/* bpffs layout of the pinned engine */
#define CUSTODE_PIN_ROOT "/sys/fs/bpf/custode"
#define CUSTODE_PIN_MAPS CUSTODE_PIN_ROOT "/maps"
#define CUSTODE_PIN_LINKS CUSTODE_PIN_ROOT "/links"

/* Longest path the engine resolves, NUL included (the kernel's PATH_MAX). */
#define CUSTODE_PATH_MAX 4096
/*
 * Bytes of path held in a rule key. A rule's path plus its '/' or NUL
 * terminator must fit, so rule paths are at most CUSTODE_RULE_PATH_MAX - 1
 * bytes; the policy compiler refuses longer ones. Longer *looked-up* paths
 * still match correctly: every rule is shorter than the key, so the longest
 * matching rule is always found within the key's bytes.
 */
#define CUSTODE_RULE_PATH_MAX 248

#define CUSTODE_MAX_RUNS 4096
#define CUSTODE_MAX_PATH_RULES 262144
#define CUSTODE_MAX_IDENTITIES 262144
#define CUSTODE_MAX_NET_RULES (1u << 20)
#define CUSTODE_MAX_NET_PRIVATE 65536
#define CUSTODE_MAX_PINS (1u << 18)
#define CUSTODE_EVENTS_BYTES (4u << 20)

/* Access classes (docs/policy.md, docs/file-policy.md). */
enum custode_access {
	CUSTODE_ACCESS_READ = 1u << 0,
	CUSTODE_ACCESS_WRITE = 1u << 1,  /* modify existing */
	CUSTODE_ACCESS_CREATE = 1u << 2,
	CUSTODE_ACCESS_DELETE = 1u << 3,
	CUSTODE_ACCESS_EXEC = 1u << 4,
};
#define CUSTODE_ACCESS_ALL 0x1fu

/* Run flags, in struct custode_run.flags. */
enum custode_run_flags {
	CUSTODE_RUN_AUDIT = 1u << 0,     /* compute and report, deny nothing */
	CUSTODE_RUN_CANCELLED = 1u << 1, /* cancellation started: deny everything */
	CUSTODE_RUN_FILE = 1u << 2,      /* file policy applies */
	CUSTODE_RUN_NET = 1u << 3,       /* egress policy applies */
	CUSTODE_RUN_NO_LISTEN = 1u << 4, /* bind to a non-zero port denied */
	CUSTODE_RUN_PROCESS = 1u << 5,   /* process policy applies (ptrace, signals: docs/process.md) */
	CUSTODE_RUN_PTRACE_RUN = 1u << 6, /* "ptrace": "run": the run may trace its own processes */
	/* 1u << 7 is CUSTODE_RUN_ATTACHED (below) */
	CUSTODE_RUN_WX_DENY = 1u << 8,    /* "wx": "deny": no writable or anonymous executable memory */
};

/*
 * Value of map custode_runs, keyed by the run cgroup's id (__u64). Written
 * only by userspace (whole-value updates are atomic for BPF readers).
 */
struct custode_run {
	__u64 run_id;
	__u32 ruleset; /* key space of this run's rules in custode_path_rules */
	__u32 flags;   /* enum custode_run_flags */
	__u64 policy_version; /* the policy's "version" (docs/policy.md: 0..2^53-1) */
};

/*
 * Value of map custode_counters, keyed like custode_runs. Bumped atomically
 * by the engine, read by userspace: exact even when the event stream drops
 * records. Kept apart from custode_run so userspace can rewrite a run's
 * flags without losing concurrent increments.
 */
struct custode_counters {
	__u64 denials[CUSTODE_REASON_KERNEL_MAX];
};

/* Key of map custode_path_rules (an LPM trie). */
struct custode_path_key {
	__u32 prefixlen; /* in bits: 32 for the ruleset + 8 per path byte */
	__u32 ruleset;
	__u8 path[CUSTODE_RULE_PATH_MAX];
};

/* Value of map custode_path_rules. */
struct custode_path_rule {
	__u32 allow; /* CUSTODE_ACCESS_* */
	__u32 flags; /* enum custode_path_rule_flags */
};

enum custode_path_rule_flags {
	/*
	 * A narrower rule lies below this path (e.g. ${workspace}/.git, above
	 * the read-only .git/hooks): a directory may not be renamed onto or
	 * away from here, or a whole prepared tree could land on the narrower rule.
	 */
	CUSTODE_PATH_RULE_PROTECTS_BELOW = 1u << 0,
	/*
	 * On the "D/" key of a rule (the root rule's "/") that no other rule or
	 * marker lies below: every path under D has this rule, whatever its
	 * last components, so the engine may decide a directory's files once
	 * for the directory (bpf/file.bpf.c, the decision table).
	 */
	CUSTODE_PATH_RULE_NOTHING_BELOW = 1u << 1,
};

/*
 * Key of map custode_identities (hash): a rule's path as it existed when the
 * rules were loaded, by identity. Value: struct custode_identity.
 */
struct custode_identity_key {
	__u32 ruleset;
	__u32 _pad0;
	__u64 dev; /* kernel dev_t of the superblock: major << 20 | minor */
	__u64 ino;
};

struct custode_identity {
	__u32 allow; /* the rule's classes */
	__u32 flags; /* enum custode_identity_flags */
};

enum custode_identity_flags {
	/* the rule narrows its parent (or denies): it holds for this inode whatever path reaches it */
	CUSTODE_IDENTITY_RESTRICTS = 1u << 0,
};

/*
 * Map custode_identity_filter (an mmapable array of __u64, one per slot):
 * how many restricting identities (CUSTODE_IDENTITY_RESTRICTS) of all live
 * rule sets hash to each slot. A 0 spares the engine the custode_identities
 * lookup for an inode: none of any run restricts it. Userspace adds to a
 * slot (atomically, through the mapping) before it adds the identity, and
 * takes away only for an identity it deleted; a count left high costs a
 * lookup, never a missed restriction.
 */
#define CUSTODE_IDENTITY_FILTER_SLOTS 4096u

static inline __u32 custode_identity_slot(__u64 dev, __u64 ino)
{
	__u64 h = (ino ^ (dev << 40) ^ (dev >> 24)) * 0x9e3779b97f4a7c15ull;

	return (__u32)(h >> 52); /* the top 12 bits: CUSTODE_IDENTITY_FILTER_SLOTS */
}

/*
 * Key of map custode_net_rules (an LPM trie): an egress grant of
 * (proto, port) to an address prefix. Matching is exact on ruleset, proto and
 * port and longest-prefix on the address, so the rules are a union: any rule
 * that covers (address, port, proto) grants it.
 */
struct custode_net_key {
	__u32 prefixlen; /* 64 + address prefix bits */
	__u32 ruleset;
	__u8 proto;      /* IPPROTO_TCP or IPPROTO_UDP */
	__u8 _pad0;
	__u16 port;      /* host byte order */
	__u8 addr[16];   /* IPv6, or IPv4 as ::ffff:a.b.c.d */
};
#define CUSTODE_NET_KEY_PREFIX_BITS 64

enum custode_net_rule_flags {
	/* a literal the operator typed (--allow): granted even if private */
	CUSTODE_NET_RULE_LITERAL = 1u << 0,
};

struct custode_net_rule {
	__u32 flags;
};

/* Key of map custode_net_private (LPM trie): network.private grants, per ruleset. */
struct custode_private_key {
	__u32 prefixlen; /* 32 + address prefix bits */
	__u32 ruleset;
	__u8 addr[16];
};

/*
 * Key of map custode_pins (hash): an address the resolver pinned for one
 * run, on one port and protocol. Value: struct custode_pin.
 */
struct custode_pin_key {
	__u64 run_cgid;
	__u8 proto;
	__u8 _pad0;
	__u16 port;
	__u32 _pad1;
	__u8 addr[16];
};

struct custode_pin {
	__u64 expires_ns; /* CLOCK_BOOTTIME; the pin is void from then on */
};

/* Engine-wide counters (per-CPU array, one entry). */
struct custode_stats {
	__u64 events;        /* records written */
	__u64 events_dropped; /* records lost because the ring buffer was full */
};

/*
 * The head of each slot of the file class's per-CPU scratch (map
 * file_scratch of bpf/file.bpf.c, CUSTODE_SCRATCH_SLOTS entries per CPU,
 * not pinned): a hook claims a slot for itself while it decides, so that a
 * hook preempted on the same CPU can't have its path rewritten under it.
 * `custode engine status` sums the counts over the CPUs.
 */
#define CUSTODE_SCRATCH_SLOTS 4
struct custode_scratch_head {
	__u64 owner;  /* the claiming task (its address), 0 = free */
	__u64 claims; /* claims of this slot */
	__u64 steals; /* claims that took it from a preempted holder (every slot held) */
	__u64 lost;   /* hooks that found their slot taken when they ended, and refused */
};

/*
 * The file engine's cache of allowing decisions (bpf/file.bpf.c): one array
 * of CUSTODE_DECISION_SLOTS, custode_decisions, made with the engine and
 * shared by every run, so its memory is fixed (CUSTODE_DECISION_SLOTS *
 * sizeof(struct custode_decision)) whatever the runs open and however many
 * there are. Nothing is made or dropped per run: a slot is direct-mapped
 * from (run cgroup id, kind, inode number) and names its run, so a run's
 * slots serve only that run and are dead once it ends (cgroup ids are never
 * reused while the system runs), free for whoever maps there next. A
 * collision overwrites (a miss, never a wrong hit: the slot names its run
 * and object and carries a checksum).
 */
#define CUSTODE_DECISION_SLOTS 65536

enum custode_decision_kind {
	CUSTODE_DECISION_FILE = 1, /* this inode, through this mount */
	CUSTODE_DECISION_DIR = 2,  /* the regular files directly in this directory, through this mount */
};

struct custode_decision {
	__u64 run;   /* the run cgroup's id: whose decision this is */
	__u64 obj;   /* the inode's address (a directory's for CUSTODE_DECISION_DIR) */
	__u64 ino;
	__u64 mnt;   /* the mount's address */
	__u64 gen;   /* custode_fs_gen when decided */
	__u32 rename_seq, mount_seq; /* the kernel's rename_lock and mount_lock counts when decided */
	__u32 stamp; /* the object's address stamp (custode_inode_stamps) when decided */
	__u16 kind;  /* enum custode_decision_kind */
	__u16 dirlen; /* CUSTODE_DECISION_DIR: the directory's path length, NUL excluded */
	__u32 allow; /* CUSTODE_ACCESS_* */
	__u32 ruleset; /* the run's rule set when decided (a directory's files' identities are looked up in it) */
	__u64 sum;   /* a checksum of the above, written last (0 while written): a torn or mixed slot doesn't validate */
};

/*
 * custode_inode_stamps (array of __u32): bumped, at the slot of an inode's
 * number, each time a dentry gets an inode (security_d_instantiate), so an
 * inode freed and its memory reused for another inode of the same number
 * can't inherit a decision kept for the address; and each time an inode of
 * that number is unlinked, removed or linked (security_inode_unlink, _rmdir,
 * _link), so a decision made through a name doesn't outlive the name.
 */
#define CUSTODE_INODE_STAMPS 65536

/*
 * Userspace-owned description of the pinned engine (array map
 * custode_meta, one entry). Written by the loader after attach.
 */
struct custode_meta {
	__u32 abi_version;
	__u32 root_level;   /* cgroup level of custode's root cgroup */
	__u64 root_cgroup_id;
	__u32 classes;      /* enum custode_class loaded */
	__u32 next_ruleset; /* allocator, under the engine lock */
	__u64 loaded_at;    /* CLOCK_REALTIME seconds */
	__u64 build_digest; /* first 8 bytes of SHA-256 over the engine's BPF objects */
};

/* Enforcement classes (doctor, policies). */
enum custode_class {
	CUSTODE_CLASS_FILE = 1u << 0,
	CUSTODE_CLASS_PROCESS = 1u << 1,
	CUSTODE_CLASS_EGRESS = 1u << 2,
};

_Static_assert(sizeof(struct custode_run) == 24, "custode_run ABI");
_Static_assert(sizeof(struct custode_counters) == 8 * CUSTODE_REASON_KERNEL_MAX, "custode_counters ABI");
_Static_assert(sizeof(struct custode_path_key) == 8 + CUSTODE_RULE_PATH_MAX, "custode_path_key ABI");
_Static_assert(sizeof(struct custode_path_rule) == 8, "custode_path_rule ABI");
_Static_assert(sizeof(struct custode_identity_key) == 24, "custode_identity_key ABI");
_Static_assert(sizeof(struct custode_identity) == 8, "custode_identity ABI");
_Static_assert(sizeof(struct custode_stats) == 16, "custode_stats ABI");
_Static_assert(sizeof(struct custode_scratch_head) == 32, "custode_scratch_head ABI");
_Static_assert(sizeof(struct custode_net_key) == 28, "custode_net_key ABI");
_Static_assert(sizeof(struct custode_private_key) == 24, "custode_private_key ABI");
_Static_assert(sizeof(struct custode_pin_key) == 32, "custode_pin_key ABI");
_Static_assert(sizeof(struct custode_meta) == 40, "custode_meta ABI");
_Static_assert(sizeof(struct custode_decision) == 72, "custode_decision ABI");

/* ---- attached runs and event throttling: docs/operations.md, docs/events.md ---- */

/*
 * Run flag (struct custode_run.flags): the run is an existing cgroup v2 that
 * `custode attach` registered (outside custode's subtree, found through
 * custode_gates); launcher runs never have it. `custode gc` leaves such runs
 * to the daemon, which knows their cgroup paths.
 */
#define CUSTODE_RUN_ATTACHED (1u << 7)

/*
 * Where attached runs are (map custode_gates, an array of one entry). A gate
 * is the ancestor, at custode's root level, of at least one attached cgroup
 * (e.g. /sys/fs/cgroup/kubepods.slice); bit i of `levels` says an attached
 * cgroup at level root_level + i lies below it. A task whose ancestor at the
 * root level is neither custode's root nor a gate is outside every run: it
 * pays the one ancestor-id helper call the hooks always made, an inlined
 * array lookup and a few compares, and no hash lookup (docs/engine.md).
 *
 * Written by userspace only, as whole-value updates that a concurrent BPF
 * reader may see torn (byte by byte). They stay safe because a used slot's id
 * never changes in place (a slot is freed by one update and reused by a
 * later one) and `levels` and `used` gain bits only for new attachments and
 * lose them only after detaching: every mix of old and new bytes still holds
 * each bit that both versions hold.
 */
#define CUSTODE_MAX_GATES 8
#define CUSTODE_GATE_LEVELS 32 /* attached cgroups lie at most 31 levels below custode's root level */

struct custode_gate {
	__u64 id;     /* cgroup id of the gate; 0: unused slot */
	__u32 levels; /* bit i: an attached cgroup at level root_level + i below this gate */
	__u32 _pad0;
};

struct custode_gates {
	__u32 used; /* bit k: gate[k] is in use (0: no attached run at all) */
	__u32 _pad0;
	struct custode_gate gate[CUSTODE_MAX_GATES];
};

/*
 * In-kernel throttling of denial records, per run and reason (map
 * custode_throttle, LRU hash). At most `burst` records per window; further
 * denials of that run and reason are counted (exactly) but not recorded, and
 * the first denial of the next window writes one throttle record that says
 * how many were suppressed. Counters (custode_counters) are never throttled.
 */
struct custode_throttle_key {
	__u64 run_cgid; /* 0 for decisions about tasks outside every run (engine.protected) */
	__u32 reason;
	__u32 _pad0;
};

struct custode_throttle {
	__u64 window_start_ns; /* CLOCK_BOOTTIME; the window that rolls it over is elected by cmpxchg */
	__u64 in_window;       /* records written in this window */
	__u64 suppressed;      /* denials not recorded, since the entry was created (monotonic) */
	__u64 reported;        /* of those, how many throttle records have covered */
};

/* Value of map custode_event_cfg (array, one entry): written by the daemon. 0 fields: defaults. */
struct custode_event_cfg {
	__u64 window_ns; /* default CUSTODE_THROTTLE_WINDOW_NS */
	__u32 burst;     /* records per run, reason and window; default CUSTODE_THROTTLE_BURST */
	__u32 flags;     /* enum custode_event_cfg_flags */
};

enum custode_event_cfg_flags {
	CUSTODE_EVENT_CFG_NO_THROTTLE = 1u << 0, /* record every denial (tests, debugging) */
};

#define CUSTODE_THROTTLE_WINDOW_NS 10000000000ull /* 10 s */
#define CUSTODE_THROTTLE_BURST 100
#define CUSTODE_MAX_THROTTLE 16384

/* Engine-wide event counters beyond custode_stats (per-CPU array, one entry). */
struct custode_event_stats {
	__u64 suppressed;       /* denials not recorded because of throttling */
	__u64 throttle_records; /* throttle records written (also counted in custode_stats.events) */
};

/*
 * The run cache (kernels with BPF_MAP_TYPE_CGRP_STORAGE, 6.2+): a task's
 * attached run, or none, kept on its cgroup v2 (map custode_run_cache), so a
 * task below a gate finds it with one storage lookup instead of an
 * ancestor-id call and a hash lookup per attached level. A cgroup's
 * ancestry never changes, so the answer only changes with the registry:
 * userspace bumps custode_runs_gen (array, one __u64) after every change to
 * custode_runs or custode_gates, and an entry holds only while its `gen` is
 * CUSTODE_RUN_CACHE_VALID | that value. Writers claim an entry by moving
 * `gen` to CUSTODE_RUN_CACHE_BUSY (cmpxchg), readers re-read `gen` after
 * `run_cgid`: a torn entry never validates. docs/engine.md.
 */
struct custode_run_cache {
	__u64 gen;      /* CUSTODE_RUN_CACHE_VALID | custode_runs_gen, BUSY while written, 0 never filled */
	__u64 run_cgid; /* the attached run's cgroup id; 0: in no run */
};

#define CUSTODE_RUN_CACHE_VALID (1ull << 63)
#define CUSTODE_RUN_CACHE_BUSY 1ull

/* Which run cache an LSM object uses (its custode_use_run_cache, set by the loader; 0: none). */
#define CUSTODE_RUN_CACHE_CGROUP 1 /* custode_run_cache, cgroup storage (6.2+) */
#define CUSTODE_RUN_CACHE_TASK 2   /* custode_task_run_cache below, task storage (6.1) */

/*
 * The run cache where the kernel has no cgroup storage (6.1): the same
 * answer kept per task (task storage, each LSM object its own, unpinned),
 * for the cgroup the task was in when it was computed: valid while `gen` is
 * as above and the task is still in cgroup `cgid`. Written and read like
 * the cgroup's (claim, re-read of `gen`).
 */
struct custode_task_run_cache {
	struct custode_run_cache c;
	__u64 cgid; /* the task's cgroup v2 when the answer was computed */
};

/*
 * The host's own addresses (map custode_host_addrs, hash): every address of
 * a network namespace custode runs in, keyed by the namespace's cookie
 * (SO_NETNS_COOKIE, bpf_get_netns_cookie), kept current by custode's
 * processes from rtnetlink (userspace/engine/hostaddrs.c). A run's
 * connect/sendmsg to one of them is a connection to a local service through
 * a non-loopback address: classified CUSTODE_ADDR_HOST (net.host_address),
 * denied unless granted as a literal (--allow ADDR:PORT) or by
 * network.private. Value: the interface index.
 */
struct custode_host_addr_key {
	__u64 netns;
	__u8 addr[16]; /* IPv4 as ::ffff:a.b.c.d */
};

#define CUSTODE_MAX_HOST_ADDRS 65536

/*
 * Run flag: the policy lists the peers that may connect ("network":
 * {"inbound": [CIDR...]}, map custode_net_inbound): every other TCP
 * connection request to the run's listening sockets is dropped
 * (inet_conn_request, net.inbound.denied).
 */
#define CUSTODE_RUN_INBOUND (1u << 9)
#define CUSTODE_MAX_NET_INBOUND 65536

_Static_assert(sizeof(struct custode_host_addr_key) == 24, "custode_host_addr_key ABI");
_Static_assert(sizeof(struct custode_run_cache) == 16, "custode_run_cache ABI");
_Static_assert(sizeof(struct custode_task_run_cache) == 24, "custode_task_run_cache ABI");
_Static_assert(sizeof(struct custode_gate) == 16, "custode_gate ABI");
_Static_assert(sizeof(struct custode_gates) == 8 + 16 * CUSTODE_MAX_GATES, "custode_gates ABI");
_Static_assert(sizeof(struct custode_throttle_key) == 16, "custode_throttle_key ABI");
_Static_assert(sizeof(struct custode_throttle) == 32, "custode_throttle ABI");
_Static_assert(sizeof(struct custode_event_cfg) == 16, "custode_event_cfg ABI");
_Static_assert(sizeof(struct custode_event_stats) == 16, "custode_event_stats ABI");
_Static_assert(CUSTODE_MAX_GATES <= 32, "custode_gates.used is a 32-bit map");

/* ---- upgrades: binaries admitted to the engine (docs/process.md, "Upgrades") ---- */

/*
 * An executable's identity as the kernel sees it: (i_sb->s_dev, i_ino) of
 * task->mm->exe_file. Key of custode_admitted: besides the binary that
 * loaded the process class, these binaries may open custode's maps and
 * programs (bpf/proc.bpf.c current_is_custode). Only a binary that may
 * already open the engine can add one (the map is custode_*).
 */
struct custode_exe_key {
	__u64 dev;
	__u64 ino;
};

struct custode_admission {
	__u64 admitted_at; /* CLOCK_REALTIME seconds */
	__u32 abi_version; /* the admitted binary's, equal to the engine's when admitted */
	__u32 by_pid;      /* the process that asked (the daemon's peer, or the admitting command) */
};

#define CUSTODE_MAX_ADMITTED 64

/*
 * Every custode binary carries this marker once per build, followed by its
 * ABI version in decimal and a newline: how the daemon tells a custode binary
 * of the engine's ABI from another executable before admitting it
 * (userspace/engine/admit.c). The leading byte keeps it out of text.
 */
#define CUSTODE_ABI_MARKER "\x7f" "custode-engine-abi="

_Static_assert(sizeof(struct custode_exe_key) == 16, "custode_exe_key ABI");
_Static_assert(sizeof(struct custode_admission) == 16, "custode_admission ABI");

/* ---- newcomers: a container runtime's set-up below an attached cgroup (docs/operations.md) ---- */

/*
 * The mark of a newcomer, in task storage on its thread-group leader
 * (custode_newcomers, bpf/lib/newcomer.bpf.h): a process placed into an
 * attached run's cgroup by a process in no run, while it was itself in no
 * run. Until its next exec it is treated as outside the run (its set-up
 * window); that exec is the run's, and clears the mark.
 */
struct custode_newcomer {
	__u64 run_cgid; /* the attached run it was placed into */
	__u64 cgid;     /* the cgroup it was placed into (in or below the run's) */
};

_Static_assert(sizeof(struct custode_newcomer) == 16, "custode_newcomer ABI");

#endif
