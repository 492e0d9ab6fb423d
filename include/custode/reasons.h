/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Reason codes: the one list shared by BPF programs, events, receipts, logs and
 * exit messages. Numbers and names are stable ABI: never renumber, never reuse,
 * only append. Codes below CUSTODE_REASON_KERNEL_MAX are produced by the BPF
 * engine and counted per run; codes from 100 up are refusals made by userspace.
 */
#ifndef CUSTODE_REASONS_H
#define CUSTODE_REASONS_H

#define CUSTODE_REASON_KERNEL_MAX 64

/* X(enum suffix, number, stable name, one-line description) */
#define CUSTODE_KERNEL_REASONS(X)                                                     \
	X(NONE, 0, "none", "no reason (allowed)")                                     \
	X(FILE_READ_DENIED, 1, "file.read.denied", "read access not granted by the policy") \
	X(FILE_WRITE_DENIED, 2, "file.write.denied", "write access not granted by the policy") \
	X(FILE_EXEC_DENIED, 3, "file.exec.denied", "exec access not granted by the policy") \
	X(FILE_CREATE_DENIED, 4, "file.create.denied", "create access not granted by the policy") \
	X(FILE_DELETE_DENIED, 5, "file.delete.denied", "delete access not granted by the policy") \
	X(PATH_TOO_LONG, 6, "path.too_long", "path longer than the engine resolves")   \
	X(PATH_UNRESOLVED, 7, "path.unresolved", "path could not be resolved to an absolute name") \
	X(RUN_UNREGISTERED, 8, "run.unregistered", "task in custode's subtree outside any registered run") \
	X(RUN_CANCELLED, 9, "run.cancelled", "run was cancelled; every hook denies") \
	X(NET_EGRESS_DENIED, 10, "net.egress.denied", "no egress rule or pin grants this destination") \
	X(NET_PRIVATE_ADDRESS, 11, "net.private_address", "private address (RFC 1918, CGNAT, ULA) not granted as a literal") \
	X(NET_LOOPBACK, 12, "net.loopback", "loopback address not granted as a literal") \
	X(NET_LINK_LOCAL, 13, "net.link_local", "link-local address not granted as a literal") \
	X(NET_METADATA, 14, "net.metadata", "cloud metadata address not granted as a literal") \
	X(NET_UNSPECIFIED, 15, "net.unspecified", "unspecified address (0.0.0.0/8, ::) not granted as a literal") \
	X(NET_MULTICAST, 16, "net.multicast", "multicast address not granted as a literal") \
	X(NET_BROADCAST, 17, "net.broadcast", "broadcast address not granted as a literal") \
	X(NET_RESERVED, 18, "net.reserved", "reserved or benchmarking address not granted as a literal") \
	X(NET_DNS_DENIED, 19, "net.dns.denied", "DNS (port 53) to anything but custode's resolver") \
	X(NET_SOCKET_DENIED, 20, "net.socket.denied", "socket family, type or protocol not allowed in a run") \
	X(NET_BIND_DENIED, 21, "net.bind.denied", "the policy does not let the run listen") \
	X(FILE_MOUNT_DENIED, 22, "file.mount.denied", "mount, umount, pivot_root and chroot are denied in a run") \
	X(FILE_IDENTITY_DENIED, 23, "file.identity.denied", "the file is denied by identity (device and inode)") \
	X(UNIX_CONNECT_DENIED, 24, "unix.connect.denied", "connecting to this unix socket path is not granted") \
	X(UNIX_ABSTRACT_DENIED, 25, "unix.abstract.denied", "abstract unix sockets outside the run are denied") \
	X(FILE_PROC_DENIED, 26, "file.proc.denied", "procfs entries of processes outside the run are denied") \
	X(FILE_LINK_DENIED, 27, "file.link.denied", "a hard link's source must be inside the run's write scope") \
	X(PROCESS_PTRACE_DENIED, 28, "process.ptrace.denied", "ptrace or PTRACE_MODE_READ access not granted") \
	X(PROCESS_SIGNAL_DENIED, 29, "process.signal.denied", "signals to processes outside the run are denied") \
	X(PROCESS_BPF_DENIED, 30, "process.bpf.denied", "bpf() is denied in a run") \
	X(PROCESS_KEYRING_DENIED, 31, "process.keyring.denied", "kernel keyrings are denied in a run") \
	X(PROCESS_PERF_DENIED, 32, "process.perf.denied", "perf_event_open is denied in a run") \
	X(PROCESS_KERNEL_DENIED, 33, "process.kernel.denied", "module loading, kexec and similar are denied in a run") \
	X(ENGINE_PROTECTED, 34, "engine.protected", "custode's own maps, programs and links are reserved to custode") \
	X(PROCESS_CGROUP_MOVE_DENIED, 35, "process.cgroup_move.denied", "clone3(CLONE_INTO_CGROUP) is denied in a run") \
	X(FILE_CGROUP_ESCAPE_DENIED, 36, "file.cgroup_escape.denied", "moving processes into a cgroup outside the run is denied") \
	X(PROCESS_TTY_DENIED, 37, "process.tty.denied", "terminal input injection, or control of a terminal of another session") \
	X(FILE_TTY_DENIED, 38, "file.tty.denied", "terminals of sessions outside the run are denied") \
	X(PROCESS_IPC_DENIED, 39, "process.ipc.denied", "IPC objects (SysV, POSIX message queues) outside the run are denied") \
	X(PROCESS_SCHED_DENIED, 40, "process.sched.denied", "priority, scheduling, resource limits and memory placement of processes outside the run are denied") \
	X(NET_ROUTE_OPTION_DENIED, 41, "net.route_option.denied", "source routes and routing headers are refused in a run") \
	X(NET_HOST_ADDRESS, 42, "net.host_address", "an address of this host, not granted as a literal") \
	X(PROCESS_WX_DENIED, 43, "process.wx.denied", "writable or anonymous executable memory refused (process.wx: deny)") \
	X(NET_INBOUND_DENIED, 44, "net.inbound.denied", "an inbound connection from a peer outside the run's grants") \
	X(FILE_KERNEL_DENIED, 45, "file.kernel.denied", "the kernel's settings (/proc/sys, sysrq-trigger, sysfs, debugfs, ...) are read-only in a run")

#define CUSTODE_USER_REASONS(X)                                                       \
	X(PRIVILEGE_REQUIRED, 100, "privilege.required", "custode needs root (CAP_BPF, CAP_SYS_ADMIN)") \
	X(KERNEL_LSM_UNAVAILABLE, 101, "kernel.lsm_unavailable", "BPF-LSM programs cannot be loaded on this host") \
	X(KERNEL_CGROUP_BPF_UNAVAILABLE, 102, "kernel.cgroup_bpf_unavailable", "cgroup BPF programs cannot be loaded on this host") \
	X(KERNEL_NO_CGROUP2, 103, "kernel.no_cgroup2", "no cgroup v2 hierarchy is mounted") \
	X(KERNEL_NO_BTF, 104, "kernel.no_btf", "the kernel exposes no BTF") \
	X(KERNEL_NO_BPFFS, 105, "kernel.no_bpffs", "bpffs is not mounted and cannot be mounted") \
	X(KERNEL_HOOK_UNSUPPORTED, 106, "kernel.hook_unsupported", "an LSM hook custode needs is missing or has a prototype custode does not know") \
	X(ENGINE_LOAD_FAILED, 110, "engine.load_failed", "the BPF engine failed to load") \
	X(ENGINE_MISMATCH, 111, "engine.mismatch", "a pinned engine of another ABI or cgroup root is in use") \
	X(ENGINE_MAP_FULL, 112, "engine.map_full", "an engine map is full") \
	X(ENGINE_MISSING, 113, "engine.missing", "no pinned engine is loaded") \
	X(CGROUP_FAILED, 120, "cgroup.failed", "the run's cgroup could not be created or managed") \
	X(POLICY_INVALID, 130, "policy.invalid", "the policy document is invalid") \
	X(POLICY_UNKNOWN_PROFILE, 131, "policy.unknown_profile", "no built-in profile of that name") \
	X(POLICY_UNSUPPORTED, 132, "policy.unsupported", "the policy asks for enforcement this custode cannot provide") \
	X(POLICY_PATH_TOO_LONG, 133, "policy.path_too_long", "a policy path is longer than the rule limit") \
	X(POLICY_TOO_LARGE, 134, "policy.too_large", "the compiled policy exceeds the per-run rule limit") \
	X(POLICY_FILE_UNSAFE, 135, "policy.file_unsafe", "an unsigned --policy file is not a regular file owned by root and writable only by root") \
	X(RUN_WORKSPACE, 140, "run.workspace", "the workspace is not an accessible directory") \
	X(RUN_SETUP_FAILED, 141, "run.setup_failed", "the run could not be set up") \
	X(RUN_USAGE, 142, "run.usage", "invalid command line") \
	X(RUN_ROOT_UNPROTECTED, 143, "run.root_unprotected", "a command running as root could remove the engine") \
	X(RUN_USER, 144, "run.user", "the run's user or group is unknown or invalid") \
	X(BUNDLE_MALFORMED, 150, "bundle.malformed", "the bundle is not a well-formed DSSE envelope") \
	X(BUNDLE_TOO_LARGE, 151, "bundle.too_large", "the bundle exceeds the size or depth limit") \
	X(BUNDLE_SIGNATURE, 152, "bundle.signature", "no valid signature by enough trusted keys") \
	X(BUNDLE_TYPE, 153, "bundle.type", "the payload type is not a custode policy") \
	X(BUNDLE_SCHEMA, 154, "bundle.schema", "the payload does not satisfy the policy schema") \
	X(BUNDLE_DIGEST, 155, "bundle.digest", "contentDigest does not match the content") \
	X(BUNDLE_NOT_YET_VALID, 156, "bundle.not_yet_valid", "the bundle's notBefore is in the future") \
	X(BUNDLE_EXPIRED, 157, "bundle.expired", "the bundle's notAfter has passed") \
	X(BUNDLE_ROLLBACK, 158, "bundle.rollback", "the bundle's version is below the accepted floor, or equal with another digest") \
	X(BUNDLE_STATE, 159, "bundle.state", "the version-floor state is unreadable or corrupt") \
	X(BUNDLE_KEY, 160, "bundle.key", "a key file is unreadable or of an unsupported type") \
	X(BUNDLE_SIGNER, 161, "bundle.signer", "the external signer command failed") \
	X(DNS_NAME_DENIED, 170, "dns.name.denied", "the run's policy does not grant this name") \
	X(DNS_ANSWER_PRIVATE, 171, "dns.answer.private", "an answer address is special and not granted; dropped") \
	X(DNS_PINS_FULL, 172, "dns.pins_full", "the run's pin quota is used up") \
	X(DNS_MALFORMED, 173, "dns.malformed", "a malformed DNS message") \
	X(DNS_UPSTREAM, 174, "dns.upstream", "no usable answer from the upstream resolvers") \
	X(DNS_NO_RESOLVER, 175, "dns.no_resolver", "the policy names hosts but custode's resolver is not running") \
	X(LIMIT_UNAVAILABLE, 180, "limit.unavailable", "a required limit has no cgroup controller here") \
	X(LIMIT_OUTPUT, 181, "limit.output", "the run exceeded its output cap") \
	X(DAEMON_RUNNING, 190, "daemon.running", "another custode daemon is running") \
	X(DAEMON_PEER, 191, "daemon.peer", "the control socket refuses this peer") \
	X(DAEMON_NOT_RUNNING, 192, "daemon.not_running", "no custode daemon answers on the control socket") \
	X(DAEMON_PROTOCOL, 193, "daemon.protocol", "a malformed request or answer on the control socket") \
	X(DAEMON_USAGE, 194, "daemon.usage", "a daemon flag is invalid, or names a file, directory, key or address it cannot use") \
	X(ATTACH_CGROUP, 200, "attach.cgroup", "this cgroup cannot be attached as a run") \
	X(ATTACH_EXISTS, 201, "attach.exists", "the cgroup or the run id already belongs to a run") \
	X(RUN_NOT_FOUND, 202, "run.not_found", "no such run") \
	X(POLICY_UNVERIFIED, 203, "policy.unverified", "the run's policy no longer verifies; the run keeps its last good policy") \
	X(UNIT_NO_SYSTEMD, 204, "unit.no_systemd", "not a systemd host: systemd is not PID 1, or there is no systemctl") \
	X(UNIT_UNKNOWN, 205, "unit.unknown", "systemd knows no such unit") \
	X(UNIT_NO_CGROUP, 206, "unit.no_cgroup", "the systemd unit is not running: it has no cgroup") \
	X(ENGINE_ADMIT_REFUSED, 207, "engine.admit_refused", "this executable may not be admitted to the engine: not a custode binary, not root's alone, or the admitted list is full") \
	X(ENGINE_ABI_DIFFERS, 208, "engine.abi_differs", "the binary's engine ABI differs from the pinned engine's: it can take over only once no run is registered") \
	X(CONTAINER_UNKNOWN, 210, "container.unknown", "no container has this id or name (podman's list, then the runtimes' cgroup names)") \
	X(CONTAINER_AMBIGUOUS, 211, "container.ambiguous", "the id prefix matches more than one container") \
	X(CONTAINER_NOT_RUNNING, 212, "container.not_running", "the container is not running: it has no process, no cgroup") \
	X(CONTAINER_NO_RUNTIME, 213, "container.no_runtime", "a container name needs podman, which is not in PATH or did not answer") \
	X(DNS_NETNS_UNSERVED, 218, "dns.netns_unserved", "custode's resolver cannot listen in the run's network namespace: its DNS is denied")

enum custode_reason {
#define CUSTODE_X_ENUM(sym, num, name, desc) CUSTODE_REASON_##sym = num,
	CUSTODE_KERNEL_REASONS(CUSTODE_X_ENUM)
	CUSTODE_USER_REASONS(CUSTODE_X_ENUM)
#undef CUSTODE_X_ENUM
};

#endif
