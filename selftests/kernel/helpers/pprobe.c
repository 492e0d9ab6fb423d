// SPDX-License-Identifier: Apache-2.0
/*
 * pprobe: process-containment probes for the kernel tests. Each operation
 * prints "ok" or the errno's name (EPERM, EACCES, ...) and exits 0 on success,
 * 1 on failure, 2 on usage errors.
 *
 *   pprobe target                print "ready PID ADDR" (ADDR holds "pprobe-secret"), then print
 *                                "signal N" for every SIGIO/SIGURG/SIGUSR1 until stdin closes
 *   pprobe attach PID            ptrace(PTRACE_ATTACH), then detach
 *   pprobe read PATH             open and read PATH (/proc/PID/environ, /proc/PID/mem: open only)
 *   pprobe vmread PID ADDR       process_vm_readv of 8 bytes
 *   pprobe kill PID SIG          kill(2)
 *   pprobe setown PID|self       a socketpair, F_SETOWN PID, O_ASYNC, then a write: SIGIO to PID
 *   pprobe setown-ex PID         the same with F_SETOWN_EX
 *   pprobe fiosetown PID         ioctl(FIOSETOWN) on a socket
 *   pprobe traceme               ptrace(PTRACE_TRACEME)
 *   pprobe child OP              fork a child that waits, then OP on it: attach, environ, kill
 *   pprobe bpf-map-create        BPF_MAP_CREATE (an array named "pprobe")
 *   pprobe bpf-prog-load         BPF_PROG_LOAD (a socket filter returning 0)
 *   pprobe bpf-map-id NAME       print the id of the first map named NAME (by walking ids)
 *   pprobe bpf-prog-id NAME      print the id of the first program named NAME
 *   pprobe bpf-obj-get PATH      BPF_OBJ_GET of a pin
 *   pprobe bpf-map-get ID        BPF_MAP_GET_FD_BY_ID
 *   pprobe bpf-prog-get ID       BPF_PROG_GET_FD_BY_ID
 *   pprobe bpf-map-names         every map id and name this process may open ("ID NAME"), and
 *                                "denied ID ERRNO" for those it may not
 *   pprobe add-key               add_key("user", ...) to the process keyring
 *   pprobe session-keyring       keyctl(KEYCTL_DESCRIBE) of the session keyring
 *   pprobe perf                  perf_event_open (software clock, this process)
 *   pprobe userfaultfd           userfaultfd(2)
 *   pprobe io-uring              io_uring_setup(2)
 *   pprobe init-module           init_module(2) with a non-ELF image
 *   pprobe module-request        socket(AF_APPLETALK): the kernel would autoload net-pf-5
 *   pprobe module-autoload       setsockopt(TCP_CONGESTION, an unknown name): root makes the
 *                                kernel request module tcp_<name>
 *   pprobe syscalls              every syscall the launcher's seccomp filter denies, with
 *                                harmless arguments: "NAME ERRNO" lines; exits 0
 *   pprobe clone-ns FLAGNAME     clone(2) with one namespace flag (user, net, ns, pid, ...)
 *   pprobe clone3                clone3(2)
 *   pprobe unshare FLAGNAME      unshare(2)
 *   pprobe fork                  fork(2) (the child exits at once)
 *   pprobe i386                  getpid through int 0x80 (the i386 ABI)
 *   pprobe x32                   getpid with the x32 syscall bit
 *   pprobe fds                   the open fds, space-separated
 *   pprobe alloc MIB             allocate and touch MIB MiB
 *   pprobe after MS exec PATH|fork   sleep MS, then try OP every 100 ms ("exec ERRNO", "fork ok"...)
 *                                until it succeeds (exec) or the process is killed
 *   pprobe wait OP ...           print "ready PID", read a line, do OP, block until stdin closes
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <sched.h>
#include <linux/bpf.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

static char secret[64] = "pprobe-secret";

static const char *errname(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "E?";
}

static int result(long r)
{
	if (r < 0) {
		printf("%s\n", errname(errno));
		return 1;
	}
	printf("ok\n");
	return 0;
}

static void on_signal(int sig)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "signal %d\n", sig);
	if (write(1, buf, (size_t)n) < 0) {
		/* nothing to do */
	}
}

static int target(void)
{
	char line[64];

	signal(SIGIO, on_signal);
	signal(SIGURG, on_signal);
	signal(SIGUSR1, on_signal);
	printf("ready %d %p\n", (int)getpid(), (void *)secret);
	while (fgets(line, sizeof(line), stdin) || errno == EINTR)
		errno = 0;
	return 0;
}

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

static long bpf_map_create(void)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_ARRAY;
	a.key_size = 4;
	a.value_size = 8;
	a.max_entries = 1;
	strcpy(a.map_name, "pprobe");
	return sys_bpf(BPF_MAP_CREATE, &a);
}

static long bpf_prog_load(void)
{
	struct bpf_insn insns[] = {
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0},
		{.code = BPF_JMP | BPF_EXIT},
	};
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	a.insns = (uint64_t)(uintptr_t)insns;
	a.insn_cnt = 2;
	a.license = (uint64_t)(uintptr_t)"GPL";
	strcpy(a.prog_name, "pprobe");
	return sys_bpf(BPF_PROG_LOAD, &a);
}

static long bpf_get_fd(int cmd, uint32_t id)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	if (cmd == BPF_MAP_GET_FD_BY_ID)
		a.map_id = id;
	else
		a.prog_id = id;
	return sys_bpf(cmd, &a);
}

/* Walk map or program ids; print the id of NAME (find), or every id and name (list). */
static int bpf_walk(int next_cmd, int get_cmd, const char *find)
{
	uint32_t id = 0;
	int found = 0;

	for (;;) {
		union bpf_attr a;
		char name[BPF_OBJ_NAME_LEN + 1] = "";
		long fd;

		memset(&a, 0, sizeof(a));
		a.start_id = id;
		if (sys_bpf(next_cmd, &a) < 0)
			break;
		id = a.next_id;
		fd = bpf_get_fd(get_cmd, id);
		if (fd < 0) {
			if (!find)
				printf("denied %u %s\n", id, errname(errno));
			continue;
		}
		if (next_cmd == BPF_MAP_GET_NEXT_ID) {
			struct bpf_map_info info;
			memset(&info, 0, sizeof(info));
			memset(&a, 0, sizeof(a));
			a.info.bpf_fd = (uint32_t)fd;
			a.info.info_len = sizeof(info);
			a.info.info = (uint64_t)(uintptr_t)&info;
			if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a) == 0)
				memcpy(name, info.name, BPF_OBJ_NAME_LEN);
		} else {
			struct bpf_prog_info info;
			memset(&info, 0, sizeof(info));
			memset(&a, 0, sizeof(a));
			a.info.bpf_fd = (uint32_t)fd;
			a.info.info_len = sizeof(info);
			a.info.info = (uint64_t)(uintptr_t)&info;
			if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a) == 0)
				memcpy(name, info.name, BPF_OBJ_NAME_LEN);
		}
		close((int)fd);
		if (find && !strcmp(name, find)) {
			printf("%u\n", id);
			return 0;
		}
		if (!find)
			printf("%u %s\n", id, name);
		found++;
	}
	if (find) {
		printf("ENOENT\n");
		return 1;
	}
	return 0;
}

static int setown(const char *pid, int how)
{
	int sv[2], p = strcmp(pid, "self") ? atoi(pid) : (int)getpid();

	signal(SIGIO, on_signal); /* "self": SIGIO's default action would end us */

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return result(-1);
	if (how == 0 && fcntl(sv[0], F_SETOWN, p) < 0)
		return result(-1);
	if (how == 1) {
		struct f_owner_ex ex = {.type = F_OWNER_PID, .pid = p};
		if (fcntl(sv[0], F_SETOWN_EX, &ex) < 0)
			return result(-1);
	}
	if (how == 2 && ioctl(sv[0], FIOSETOWN, &p) < 0)
		return result(-1);
	if (fcntl(sv[0], F_SETFL, O_ASYNC | O_NONBLOCK) < 0)
		return result(-1);
	/* data arriving on sv[0] raises SIGIO for its owner */
	if (write(sv[1], "x", 1) != 1)
		return result(-1);
	usleep(100000);
	return result(0);
}

static long i386_getpid(void)
{
	long r;
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");
	return r;
}

static unsigned long ns_flag(const char *name)
{
	static const struct {
		const char *name;
		unsigned long flag;
	} f[] = {{"user", CLONE_NEWUSER}, {"net", CLONE_NEWNET},	 {"ns", CLONE_NEWNS},	{"pid", CLONE_NEWPID},
		 {"uts", CLONE_NEWUTS},	  {"ipc", CLONE_NEWIPC},	 {"cgroup", CLONE_NEWCGROUP}, {"time", 0x80},
		 {"files", CLONE_FILES}};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (!strcmp(f[i].name, name))
			return f[i].flag;
	return 0;
}

static int clone_ns(const char *name)
{
	long pid = syscall(SYS_clone, ns_flag(name) | SIGCHLD, 0, 0, 0, 0);

	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid((pid_t)pid, NULL, 0);
	return result(pid);
}

/*
 * Each syscall the seccomp filter denies, with arguments that make it fail
 * harmlessly (or do nothing) when it is allowed: "NAME ERRNO" or "NAME ok".
 */
static int syscalls(void)
{
	static const struct {
		const char *name;
		long nr;
		long a[6];
	} calls[] = {
		{"mount", SYS_mount, {0, 0, 0, 0, 0}},
		{"umount2", SYS_umount2, {0, -1}},
		{"pivot_root", SYS_pivot_root, {0, 0}},
		{"chroot", SYS_chroot, {0}},
		{"move_mount", SYS_move_mount, {-1, 0, -1, 0, -1}},
		{"open_tree", SYS_open_tree, {-1, 0, -1}},
		{"fsopen", SYS_fsopen, {0, -1}},
		{"fsconfig", SYS_fsconfig, {-1, -1, 0, 0, 0}},
		{"fsmount", SYS_fsmount, {-1, -1, -1}},
		{"fspick", SYS_fspick, {-1, 0, -1}},
		{"mount_setattr", SYS_mount_setattr, {-1, 0, -1, 0, 0}},
		{"setns", SYS_setns, {-1, 0}},
		{"bpf", SYS_bpf, {-1, 0, 0}},
		{"perf_event_open", SYS_perf_event_open, {0, 0, -1, -1, 0}},
		{"io_uring_setup", SYS_io_uring_setup, {0, 0}},
		{"io_uring_enter", SYS_io_uring_enter, {-1, 0, 0, 0, 0, 0}},
		{"io_uring_register", SYS_io_uring_register, {-1, 0, 0, 0}},
		{"userfaultfd", SYS_userfaultfd, {-1}},
		{"keyctl", SYS_keyctl, {-1, 0, 0, 0, 0}},
		{"add_key", SYS_add_key, {0, 0, 0, 0, 0}},
		{"request_key", SYS_request_key, {0, 0, 0, 0}},
		{"init_module", SYS_init_module, {0, 0, 0}},
		{"finit_module", SYS_finit_module, {-1, 0, 0}},
		{"delete_module", SYS_delete_module, {0, 0}},
		{"kexec_load", SYS_kexec_load, {0, 0, 0, -1}},
		{"kexec_file_load", SYS_kexec_file_load, {-1, -1, 0, 0, -1}},
		{"reboot", SYS_reboot, {0, 0, 0, 0}},
		{"swapon", SYS_swapon, {0, 0}},
		{"swapoff", SYS_swapoff, {0}},
		{"settimeofday", SYS_settimeofday, {-1, -1}},
		{"clock_settime", SYS_clock_settime, {-1, 0}},
		{"clock_adjtime", SYS_clock_adjtime, {-1, 0}},
		{"adjtimex", SYS_adjtimex, {0}},
		{"open_by_handle_at", SYS_open_by_handle_at, {-1, 0, 0}},
		{"acct", SYS_acct, {-1}},
		{"iopl", SYS_iopl, {-1}},
		{"ioperm", SYS_ioperm, {0, 0, 0}},
		{"quotactl", SYS_quotactl, {-1, 0, 0, 0}},
		{"quotactl_fd", SYS_quotactl_fd, {-1, 0, 0, 0}},
		{"ptrace", SYS_ptrace, {PTRACE_PEEKDATA, 0, 0, 0}},
		{"process_vm_readv", SYS_process_vm_readv, {0, 0, 0, 0, 0, -1}},
		{"process_vm_writev", SYS_process_vm_writev, {0, 0, 0, 0, 0, -1}},
		{"unshare(CLONE_NEWUSER)", SYS_unshare, {CLONE_NEWUSER | 0x1}}, /* 0x1: invalid too, so nothing is unshared */
		{"clone3", SYS_clone3, {0, 0}},
		{"socket(AF_PACKET)", SYS_socket, {17, SOCK_RAW, 0}},
		{"socket(AF_VSOCK)", SYS_socket, {40, SOCK_STREAM, 0}},
		{"socket(AF_NETLINK,NETLINK_AUDIT)", SYS_socket, {16, SOCK_RAW, 9}},
		{"socketpair(AF_INET)", SYS_socketpair, {2, SOCK_STREAM, 0, 0}},
	};

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		long r;

		errno = 0;
		r = syscall(calls[i].nr, calls[i].a[0], calls[i].a[1], calls[i].a[2], calls[i].a[3], calls[i].a[4],
			    calls[i].a[5]);
		if (r >= 0 && (calls[i].nr == SYS_socket || calls[i].nr == SYS_userfaultfd || calls[i].nr == SYS_bpf))
			close((int)r);
		printf("%s %s\n", calls[i].name, r < 0 ? errname(errno) : "ok");
	}
	return 0;
}

static int fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	const char *sep = "";

	if (!d)
		return result(-1);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || atoi(de->d_name) == dirfd(d))
			continue;
		printf("%s%s", sep, de->d_name);
		sep = " ";
	}
	printf("\n");
	closedir(d);
	return 0;
}

static int child_op(const char *op)
{
	char path[64], buf[256];
	int p[2], r, fd;
	pid_t c;

	if (pipe(p) < 0)
		return result(-1);
	c = fork();
	if (c == 0) {
		close(p[1]);
		if (read(p[0], buf, 1) < 0) {
			/* parent gone */
		}
		_exit(0);
	}
	close(p[0]);
	if (!strcmp(op, "attach")) {
		r = ptrace(PTRACE_ATTACH, c, 0, 0) < 0 ? -1 : 0;
		if (r == 0) {
			waitpid(c, NULL, __WALL);
			ptrace(PTRACE_DETACH, c, 0, 0);
		}
	} else if (!strcmp(op, "environ")) {
		snprintf(path, sizeof(path), "/proc/%d/environ", (int)c);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		r = fd < 0 ? -1 : (int)read(fd, buf, sizeof(buf));
		if (fd >= 0)
			close(fd);
	} else if (!strcmp(op, "kill")) {
		r = kill(c, 0);
	} else {
		return 2;
	}
	{
		int e = errno;
		close(p[1]);
		waitpid(c, NULL, 0);
		errno = e;
	}
	return result(r < 0 ? -1 : 0);
}

static int dispatch(int argc, char **argv)
{
	const char *op = argc > 1 ? argv[1] : "";

	if (!strcmp(op, "target"))
		return target();
	if (argc >= 3 && !strcmp(op, "attach")) {
		pid_t p = atoi(argv[2]);
		if (ptrace(PTRACE_ATTACH, p, 0, 0) < 0)
			return result(-1);
		waitpid(p, NULL, __WALL);
		ptrace(PTRACE_DETACH, p, 0, 0);
		return result(0);
	}
	if (argc >= 3 && !strcmp(op, "read")) {
		char buf[256];
		int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return result(-1);
		if (strstr(argv[2], "/mem")) { /* open is the check; reading needs a mapped address */
			close(fd);
			return result(0);
		}
		if (read(fd, buf, sizeof(buf)) < 0) {
			close(fd);
			return result(-1);
		}
		close(fd);
		return result(0);
	}
	if (argc >= 4 && !strcmp(op, "vmread")) {
		char buf[8];
		struct iovec local = {.iov_base = buf, .iov_len = sizeof(buf)};
		struct iovec remote = {.iov_base = (void *)strtoul(argv[3], NULL, 0), .iov_len = sizeof(buf)};
		return result(process_vm_readv(atoi(argv[2]), &local, 1, &remote, 1, 0));
	}
	if (argc >= 4 && !strcmp(op, "kill"))
		return result(kill(atoi(argv[2]), atoi(argv[3])));
	if (argc >= 3 && !strcmp(op, "setown"))
		return setown(argv[2], 0);
	if (argc >= 3 && !strcmp(op, "setown-ex"))
		return setown(argv[2], 1);
	if (argc >= 3 && !strcmp(op, "fiosetown"))
		return setown(argv[2], 2);
	if (!strcmp(op, "traceme"))
		return result(ptrace(PTRACE_TRACEME, 0, 0, 0));
	if (argc >= 3 && !strcmp(op, "child"))
		return child_op(argv[2]);
	if (!strcmp(op, "bpf-map-create"))
		return result(bpf_map_create());
	if (!strcmp(op, "bpf-prog-load"))
		return result(bpf_prog_load());
	if (argc >= 3 && !strcmp(op, "bpf-map-id"))
		return bpf_walk(BPF_MAP_GET_NEXT_ID, BPF_MAP_GET_FD_BY_ID, argv[2]);
	if (argc >= 3 && !strcmp(op, "bpf-prog-id"))
		return bpf_walk(BPF_PROG_GET_NEXT_ID, BPF_PROG_GET_FD_BY_ID, argv[2]);
	if (!strcmp(op, "bpf-map-names"))
		return bpf_walk(BPF_MAP_GET_NEXT_ID, BPF_MAP_GET_FD_BY_ID, NULL);
	if (argc >= 3 && !strcmp(op, "bpf-obj-get")) {
		union bpf_attr a;
		memset(&a, 0, sizeof(a));
		a.pathname = (uint64_t)(uintptr_t)argv[2];
		return result(sys_bpf(BPF_OBJ_GET, &a));
	}
	if (argc >= 3 && !strcmp(op, "bpf-map-get"))
		return result(bpf_get_fd(BPF_MAP_GET_FD_BY_ID, (uint32_t)strtoul(argv[2], NULL, 10)));
	if (argc >= 3 && !strcmp(op, "bpf-prog-get"))
		return result(bpf_get_fd(BPF_PROG_GET_FD_BY_ID, (uint32_t)strtoul(argv[2], NULL, 10)));
	if (!strcmp(op, "add-key"))
		return result(syscall(SYS_add_key, "user", "pprobe", "x", 1, KEY_SPEC_PROCESS_KEYRING));
	if (!strcmp(op, "session-keyring")) {
		char buf[256];
		return result(syscall(SYS_keyctl, KEYCTL_DESCRIBE, KEY_SPEC_SESSION_KEYRING, buf, sizeof(buf)));
	}
	if (!strcmp(op, "perf")) {
		struct perf_event_attr a;
		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.type = PERF_TYPE_SOFTWARE;
		a.config = PERF_COUNT_SW_CPU_CLOCK;
		a.exclude_kernel = 1;
		a.exclude_hv = 1;
		return result(syscall(SYS_perf_event_open, &a, 0, -1, -1, 0));
	}
	if (!strcmp(op, "userfaultfd"))
		return result(syscall(SYS_userfaultfd, O_CLOEXEC));
	if (!strcmp(op, "io-uring")) {
		char params[120];
		memset(params, 0, sizeof(params));
		return result(syscall(SYS_io_uring_setup, 1, params));
	}
	if (!strcmp(op, "init-module")) {
		static char image[64] = "not an ELF module";
		return result(syscall(SYS_init_module, image, sizeof(image), ""));
	}
	if (!strcmp(op, "module-request"))
		return result(socket(5 /* AF_APPLETALK */, SOCK_DGRAM, 0));
	if (!strcmp(op, "module-autoload")) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		static const char name[] = "custode_none";

		if (fd < 0)
			return result(-1);
		return result(setsockopt(fd, IPPROTO_TCP, 13 /* TCP_CONGESTION */, name, sizeof(name) - 1));
	}
	if (!strcmp(op, "syscalls"))
		return syscalls();
	if (argc >= 3 && !strcmp(op, "clone-ns"))
		return clone_ns(argv[2]);
	if (!strcmp(op, "clone3"))
		return result(syscall(SYS_clone3, NULL, 0));
	if (argc >= 3 && !strcmp(op, "unshare"))
		return result(unshare((int)ns_flag(argv[2])));
	if (!strcmp(op, "fork")) {
		pid_t c = fork();
		if (c == 0)
			_exit(0);
		if (c > 0)
			waitpid(c, NULL, 0);
		return result(c);
	}
	if (!strcmp(op, "i386")) {
		long r = i386_getpid();
		printf("%s\n", r == getpid() ? "ok" : "E?");
		return r == getpid() ? 0 : 1;
	}
	if (!strcmp(op, "x32"))
		return result(syscall(0x40000000 | SYS_getpid));
	if (!strcmp(op, "fds"))
		return fds();
	if (argc >= 3 && !strcmp(op, "alloc")) {
		size_t n = (size_t)atol(argv[2]) << 20;
		char *m = malloc(n);
		if (!m)
			return result(-1);
		for (size_t i = 0; i < n; i += 4096)
			m[i] = 1;
		return result(0);
	}
	if (argc >= 4 && !strcmp(op, "after")) {
		/* after MS, repeat OP every 100 ms, printing each outcome, until killed (at most 100 times) */
		usleep((useconds_t)atoi(argv[2]) * 1000);
		for (int i = 0; i < 100; i++) {
			if (!strcmp(argv[3], "exec") && argc >= 5) {
				execv(argv[4], argv + 4);
				printf("exec %s\n", errname(errno));
			} else if (!strcmp(argv[3], "fork")) {
				pid_t c = fork();
				if (c == 0)
					_exit(0);
				if (c > 0)
					waitpid(c, NULL, 0);
				printf("fork %s\n", c < 0 ? errname(errno) : "ok");
			} else {
				return 2;
			}
			usleep(100000);
		}
		return 1;
	}
	fprintf(stderr, "pprobe: unknown operation (see the comment at the top of pprobe.c)\n");
	return 2;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc >= 3 && !strcmp(argv[1], "wait")) {
		char line[64];
		int r;

		printf("ready %d\n", (int)getpid());
		if (!fgets(line, sizeof(line), stdin))
			return 2;
		r = dispatch(argc - 1, argv + 1);
		while (fgets(line, sizeof(line), stdin))
			;
		return r;
	}
	return dispatch(argc, argv);
}
