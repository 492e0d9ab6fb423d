// SPDX-License-Identifier: Apache-2.0
/* The syscalls the launcher's seccomp filter denies by name (run/seccomp.h): for the filter's build step and the receipts. */
#include <stddef.h>

#include "run/seccomp.h"

const char *const custode_seccomp_denied[] = {
	/* mount family */
	"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick",
	"mount_setattr",
	/* namespaces: setns always; unshare and clone with a namespace flag (below) */
	"setns",
	/* kernel attack surface */
	"bpf", "perf_event_open", "io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd",
	"keyctl", "add_key", "request_key",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"reboot", "swapon", "swapoff",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"open_by_handle_at", "acct", "iopl", "ioperm", "quotactl", "quotactl_fd",
	NULL,
};

const char *const custode_seccomp_ptrace_calls[] = {"ptrace", "process_vm_readv", "process_vm_writev", NULL};
