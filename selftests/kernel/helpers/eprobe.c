// SPDX-License-Identifier: Apache-2.0
/*
 * eprobe: the escape-matrix probe (selftests/kernel/test_escape_*.c). It runs
 * a sequence of steps, each one attack primitive, and prints one line per
 * step: "ok" (sometimes followed by details) or the errno name. It stops at
 * the first step that fails. Exit: 0 every step succeeded, 1 a step failed,
 * 2 usage.
 *
 *   eprobe STEP [ARG...] [+ STEP [ARG...]]...
 *
 * Prefix steps print nothing when they succeed and "<step>:<ERRNO>" when not:
 *   userns                    unshare a user and a mount namespace; map our uid/gid
 *                             to 0 when /proc/self/{uid,gid}_map may be written
 *                             (the capabilities in the new namespace come without it)
 *   wait                      print "ready PID", read one line from stdin: meanwhile
 *                             the test may move this process into a run's cgroup
 *   fork-into CGROUP          a container runtime's two halves: fork; the parent writes the
 *                             child's pid into CGROUP/cgroup.procs, lets it go on with the
 *                             remaining steps, waits for it and exits with its status
 *   clone3-into CGROUP        the same with clone3(CLONE_INTO_CGROUP): the child is born there
 *   fork                      fork; the child goes on with the remaining steps, the parent waits
 *                             and exits with its status (runc's nsexec stages, crun exec's fork
 *                             after entering a pid namespace)
 *   move-self CGROUP          write our own pid into CGROUP/cgroup.procs
 *   keep-going                from here on a failing step doesn't stop the sequence (exit 1 at the end)
 *   in-thread                 the remaining steps run in a second thread (the main thread waits for
 *                             it, then the process exits with its result): a runtime that sets up
 *                             from another thread than its leader
 * Steps:
 *   hello                                 print "ok"
 *   open PATH MODE                        MODE: r w rw a t(O_RDONLY|O_TRUNC) c(O_CREAT|O_WRONLY)
 *                                         x(O_CREAT|O_EXCL|O_WRONLY) d(O_RDONLY|O_DIRECTORY) p(O_PATH)
 *   cat PATH                              open read-only, print "ok <first line>"
 *   openat2 DIR REL MODE FLAGS            FLAGS: none or a comma list of beneath, in_root,
 *                                         no_symlinks, no_magiclinks, no_xdev
 *   reopen PATH FIRST SECOND              open PATH with mode FIRST, then /proc/self/fd/N with SECOND
 *   chdir-open DIR REL MODE               chdir(DIR), open REL
 *   fchdir-open DIR REL MODE              O_PATH|O_DIRECTORY open of DIR, fchdir, open REL
 *   opath-stat PATH                       O_PATH open, fstatat(AT_EMPTY_PATH)
 *   hold-path PATH                        O_PATH open, kept for reopen-held
 *   reopen-held MODE                      open /proc/self/fd/N of the held fd; with r print
 *                                         "ok <first line>"
 *   link-proc PATH NEW                    O_PATH open, linkat(/proc/self/fd/N, NEW, AT_SYMLINK_FOLLOW)
 *   link-empty PATH NEW                   O_PATH open, linkat(fd, "", NEW, AT_EMPTY_PATH)
 *   handle-save PATH                      name_to_handle_at (kept for handle-open)
 *   handle-open MODE                      open_by_handle_at(AT_FDCWD, saved handle); cwd on the same fs
 *   exec PATH [ARG...]                    execv(PATH, {PATH, ARG...}) (takes the rest of the line)
 *   execveat-empty PATH ARGV0 [ARG...]    O_PATH open, execveat(fd, "", {ARGV0, ARG...}, AT_EMPTY_PATH)
 *   memfd-exec SRC ARGV0 [ARG...]         copy SRC into a memfd, fexecve it with {ARGV0, ARG...}
 *   memfd-mmap-exec SRC                   copy SRC into a memfd, mmap it PROT_EXEC
 *   mmap-exec PATH                        mmap PATH PROT_READ|PROT_EXEC
 *   mprotect-exec PATH                    mmap PATH PROT_READ, then mprotect PROT_READ|PROT_EXEC
 *   write-code PATH                       write a tiny x86-64 function returning 42 (mov eax,42; ret), mode 0755
 *   mprotect-call PATH                    map PATH PROT_READ, mprotect it PROT_READ|PROT_EXEC, call it:
 *                                         "ok <return value>" (only x86-64)
 *   link OLD NEW | rename OLD NEW | exchange A B (RENAME_EXCHANGE) | symlink TARGET LINK
 *   mkdir PATH | rmdir PATH | unlink PATH | mkfifo PATH | truncate PATH
 *   chmod PATH OCTAL | chown-self PATH | utimes PATH | setxattr PATH NAME
 *   race LINK ALLOWED DENIED SECONDS      a child swaps LINK between symlinks to ALLOWED and
 *                                         DENIED (symlink + rename) while we open LINK in a loop;
 *                                         print "ok opens=N allowed=N denied=N eacces=N enoent=N
 *                                         other=N swaps=N" (denied: opens that reached DENIED)
 *   cpurace DENIED DIR OPENS [mkdir]      one CPU shared by three processes of the run: two children
 *                                         create, open and unlink files with long names in DIR in a
 *                                         loop while we open DENIED OPENS times (the engine's per-CPU
 *                                         path buffer, written by the one whose hook gets preempted,
 *                                         then by another); print "ok opens=N leaked=N eacces=N
 *                                         other=N ops=N spurious=N" (leaked: opens of DENIED that
 *                                         succeeded; spurious: the children's operations refused).
 *                                         With mkdir: mkdir DENIED (and rmdir it when that succeeds)
 *                                         instead of the open: the walked path_* hooks
 *   unix-connect PATH|@NAME [stream|dgram]
 *   unix-send @NAME|PATH                  unconnected datagram
 *   unix-self @NAME|PATH                  bind + listen, connect to ourselves
 *   deep-mkdir DIR N LEN                  N nested directories named LEN × 'd' below DIR (mkdirat
 *                                         chain), then create file "f" in the last one
 *   deep-open DIR N LEN MODE              walk the chain with O_PATH openat, open "f" with MODE
 *   deep-utimes DIR N LEN                 walk the chain, utimensat("f", now)
 *   unshare-mnt                           unshare(CLONE_NEWNS) alone
 *   mount-bind SRC DST | mount-tmpfs DIR | umount DIR | chroot DIR | pivot-root NEW OLD
 *   mount-rbind SRC DST                   MS_BIND|MS_REC
 *   make-private                          mount(NULL, "/", MS_REC|MS_PRIVATE): what runtimes do first
 *   pivot-here DIR                        chdir(DIR), pivot_root(".", "."), umount2(".", MNT_DETACH),
 *                                         chdir("/") (crun's and runc's way)
 *   fsmount-attach DIR                    fsopen(tmpfs), fsconfig(CREATE), fsmount, move_mount to DIR
 *   tree-cat DIR REL                      open_tree(DIR, OPEN_TREE_CLONE): a detached copy; open REL
 *                                         in it read-only, print "ok <first line>"
 *   tree-exec DIR REL ARGV0 [ARG...]      the same, then execveat(treefd, REL, {ARGV0, ARG...})
 *   hold PATH                             open PATH read-only, print "ready PID FD", wait for stdin EOF
 *   block                                 print "ready PID TMPDIR", wait for stdin EOF
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>

/* The new mount API and openat2, by number: glibc's headers for them vary. */
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_fsconfig
#define SYS_fsconfig 431
#endif
#ifndef SYS_fsmount
#define SYS_fsmount 432
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#define E_OPEN_TREE_CLONE 1
#define E_OPEN_TREE_CLOEXEC O_CLOEXEC
#define E_FSCONFIG_CMD_CREATE 6
#define E_MOVE_MOUNT_F_EMPTY_PATH 0x4
#define E_RESOLVE_NO_XDEV 0x01
#define E_RESOLVE_NO_MAGICLINKS 0x02
#define E_RESOLVE_NO_SYMLINKS 0x04
#define E_RESOLVE_BENEATH 0x08
#define E_RESOLVE_IN_ROOT 0x10
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

struct e_open_how {
	unsigned long long flags, mode, resolve;
};

static const char *errname(int e)
{
	switch (e) {
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EEXIST: return "EEXIST";
	case EISDIR: return "EISDIR";
	case ENOTDIR: return "ENOTDIR";
	case ENAMETOOLONG: return "ENAMETOOLONG";
	case ELOOP: return "ELOOP";
	case EROFS: return "EROFS";
	case EXDEV: return "EXDEV";
	case ENOEXEC: return "ENOEXEC";
	case EINVAL: return "EINVAL";
	case EBADF: return "EBADF";
	case EBUSY: return "EBUSY";
	case ENOSYS: return "ENOSYS";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ECONNREFUSED: return "ECONNREFUSED";
	case ENXIO: return "ENXIO";
	case EOVERFLOW: return "EOVERFLOW";
	case ENOTEMPTY: return "ENOTEMPTY";
	case ESTALE: return "ESTALE";
	case ETXTBSY: return "ETXTBSY";
	case EMLINK: return "EMLINK";
	case ENODATA: return "ENODATA";
	case EFAULT: return "EFAULT";
	case EAGAIN: return "EAGAIN";
	default: return "E?";
	}
}

static int fail(void)
{
	printf("%s\n", errname(errno));
	return 1;
}

static int result(long r)
{
	if (r < 0)
		return fail();
	printf("ok\n");
	return 0;
}

static int flags_of(const char *m)
{
	if (!strcmp(m, "r")) return O_RDONLY;
	if (!strcmp(m, "w")) return O_WRONLY;
	if (!strcmp(m, "rw")) return O_RDWR;
	if (!strcmp(m, "a")) return O_WRONLY | O_APPEND;
	if (!strcmp(m, "t")) return O_RDONLY | O_TRUNC;
	if (!strcmp(m, "c")) return O_WRONLY | O_CREAT;
	if (!strcmp(m, "x")) return O_WRONLY | O_CREAT | O_EXCL;
	if (!strcmp(m, "d")) return O_RDONLY | O_DIRECTORY;
	if (!strcmp(m, "p")) return O_PATH;
	return -1;
}

/* Open with a mode name; -1 with errno set (EINVAL for a bad name). */
static int open_mode(int dir, const char *path, const char *mode)
{
	int f = flags_of(mode);

	if (f < 0) {
		errno = EINVAL;
		return -1;
	}
	return openat(dir, path, f | O_CLOEXEC, 0666);
}

static int open_step(int dir, const char *path, const char *mode)
{
	int fd = open_mode(dir, path, mode);

	if (fd < 0)
		return fail();
	close(fd);
	printf("ok\n");
	return 0;
}

/* print "ok <first line of fd>" */
static int cat_fd(int fd)
{
	char buf[256];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);

	if (n < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return fail();
	}
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	close(fd);
	printf("ok %s\n", buf);
	return 0;
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

static int do_userns(void)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	char map[64];

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
		printf("userns:%s\n", errname(errno));
		return 1;
	}
	/* best effort: inside a run /proc/self/uid_map is not writable; the namespace's capabilities don't need it */
	write_file("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
	write_file("/proc/self/uid_map", map);
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
	write_file("/proc/self/gid_map", map);
	return 0;
}

static int do_wait(void)
{
	char line[64];

	printf("ready %d\n", (int)getpid());
	if (!fgets(line, sizeof(line), stdin)) {
		printf("wait:EOF\n");
		return 1;
	}
	return 0;
}

/* The runtime's placement of its child (fork-into, clone3-into); the parent never returns. */
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

struct e_clone_args {
	unsigned long long flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
		set_tid_size, cgroup;
};

static int write_procs(const char *cg, int pid)
{
	char path[4200], buf[32];
	int fd, n, ok;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%d", pid);
	ok = write(fd, buf, (size_t)n) == n;
	n = errno;
	close(fd);
	return ok ? 0 : -n;
}

static void parent_waits(int pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

static int do_fork_into(const char *cg)
{
	int go[2], pid, err;
	char c = 0;

	if (pipe(go) < 0)
		return fail();
	pid = fork();
	if (pid < 0)
		return fail();
	if (pid == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1 || c != 'g')
			_exit(1); /* the parent reported the failure */
		close(go[0]);
		return 0;
	}
	close(go[0]);
	err = write_procs(cg, pid);
	if (err) {
		printf("fork-into:%s\n", errname(-err));
		kill(pid, SIGKILL);
		parent_waits(pid);
	}
	c = 'g';
	if (write(go[1], &c, 1) != 1)
		kill(pid, SIGKILL);
	close(go[1]);
	parent_waits(pid);
	return 1;
}

/* fork: the child goes on with the remaining steps, the parent waits and exits with its status */
static int do_fork(void)
{
	int pid = fork();

	if (pid < 0)
		return fail();
	if (pid == 0)
		return 0;
	parent_waits(pid);
	return 1;
}

static int do_clone3_into(const char *cg)
{
	struct e_clone_args a = {0};
	int fd = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long pid;

	if (fd < 0) {
		printf("clone3-into:%s\n", errname(errno));
		return 1;
	}
	a.flags = CLONE_INTO_CGROUP;
	a.exit_signal = SIGCHLD;
	a.cgroup = (unsigned long long)fd;
	pid = syscall(SYS_clone3, &a, sizeof(a));
	if (pid < 0) {
		printf("clone3-into:%s\n", errname(errno));
		return 1;
	}
	if (pid == 0) {
		close(fd);
		return 0;
	}
	parent_waits((int)pid);
	return 1;
}

static int do_pivot_here(const char *dir)
{
	if (chdir(dir) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 || umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		return fail();
	printf("ok\n");
	return 0;
}

static int keep_going;

static int run_steps(int argc, char **argv, int i);

/* in-thread: the steps after it, from a second thread */
static int rest_argc, rest_at;
static char **rest_argv;

static void *rest_in_thread(void *arg)
{
	(void)arg;
	return (void *)(long)run_steps(rest_argc, rest_argv, rest_at);
}

static int do_in_thread(void)
{
	pthread_t t;
	void *r;
	int err = pthread_create(&t, NULL, rest_in_thread, NULL);

	if (err) {
		printf("in-thread:%s\n", errname(err));
		return 1;
	}
	pthread_join(t, &r);
	exit((int)(long)r);
}

static int block_until_eof(void)
{
	char line[64];

	while (fgets(line, sizeof(line), stdin))
		;
	return 0;
}

static int copy_fd(int to, const char *src)
{
	char buf[65536];
	int from = open(src, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (from < 0)
		return -1;
	while ((n = read(from, buf, sizeof(buf))) > 0)
		if (write(to, buf, (size_t)n) != n) {
			close(from);
			return -1;
		}
	close(from);
	return n < 0 ? -1 : 0;
}

static unsigned long long resolve_flags(const char *s)
{
	unsigned long long r = 0;
	char tmp[256], *save = NULL;

	if (!strcmp(s, "none"))
		return 0;
	snprintf(tmp, sizeof(tmp), "%s", s);
	for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!strcmp(t, "beneath")) r |= E_RESOLVE_BENEATH;
		else if (!strcmp(t, "in_root")) r |= E_RESOLVE_IN_ROOT;
		else if (!strcmp(t, "no_symlinks")) r |= E_RESOLVE_NO_SYMLINKS;
		else if (!strcmp(t, "no_magiclinks")) r |= E_RESOLVE_NO_MAGICLINKS;
		else if (!strcmp(t, "no_xdev")) r |= E_RESOLVE_NO_XDEV;
	}
	return r;
}

/* Fill a sockaddr_un: "@name" is abstract. */
static socklen_t unix_addr(const char *name, struct sockaddr_un *sa)
{
	size_t n = strlen(name);

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (name[0] == '@') {
		if (n > sizeof(sa->sun_path))
			n = sizeof(sa->sun_path);
		memcpy(sa->sun_path + 1, name + 1, n - 1);
		return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	}
	snprintf(sa->sun_path, sizeof(sa->sun_path), "%s", name);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(sa->sun_path) + 1);
}

static int step_race(const char *link, const char *allowed, const char *denied, int seconds)
{
	struct stat sa, sd;
	long *swaps;
	char tmp[4096];
	long opens = 0, n_allowed = 0, n_denied = 0, eacces = 0, enoent = 0, other = 0;
	time_t end;
	pid_t child;

	if (stat(allowed, &sa) < 0 || stat(denied, &sd) < 0)
		return fail();
	swaps = mmap(NULL, sizeof(long), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (swaps == MAP_FAILED)
		return fail();
	*swaps = 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp", link);
	end = time(NULL) + seconds;
	child = fork();
	if (child < 0)
		return fail();
	if (child == 0) {
		/* the swapper: atomically replace LINK by a symlink to the other target */
		for (long i = 0; time(NULL) < end; i++) {
			unlink(tmp);
			if (symlink(i & 1 ? denied : allowed, tmp) == 0 && rename(tmp, link) == 0)
				(*swaps)++;
		}
		_exit(0);
	}
	while (time(NULL) < end) {
		int fd = open(link, O_RDONLY | O_CLOEXEC);
		struct stat st;
		char buf[16];

		opens++;
		if (fd < 0) {
			if (errno == EACCES)
				eacces++;
			else if (errno == ENOENT)
				enoent++;
			else
				other++;
			continue;
		}
		if (fstat(fd, &st) == 0 && st.st_dev == sd.st_dev && st.st_ino == sd.st_ino)
			n_denied++;
		else if (st.st_dev == sa.st_dev && st.st_ino == sa.st_ino)
			n_allowed++;
		else
			other++;
		if (read(fd, buf, sizeof(buf)) < 0)
			other++;
		close(fd);
	}
	waitpid(child, NULL, 0);
	printf("ok opens=%ld allowed=%ld denied=%ld eacces=%ld enoent=%ld other=%ld swaps=%ld\n", opens, n_allowed,
	       n_denied, eacces, enoent, other, *swaps);
	return 0;
}

struct cpurace_shared {
	volatile int stop;
	long ops, spurious, other;
};

static void cpurace_child(struct cpurace_shared *sh, const char *dir, int c)
{
	char name[4096], pad[201];

	memset(pad, 'n', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = 0;
	for (long i = 0; !sh->stop; i++) {
		int fd;

		snprintf(name, sizeof(name), "%s/%s_%d_%ld", dir, pad, c, i);
		fd = open(name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
		if (fd < 0) {
			__atomic_add_fetch(errno == EACCES ? &sh->spurious : &sh->other, 1, __ATOMIC_RELAXED);
			continue;
		}
		close(fd);
		if (unlink(name) < 0)
			__atomic_add_fetch(errno == EACCES ? &sh->spurious : &sh->other, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&sh->ops, 1, __ATOMIC_RELAXED);
	}
	_exit(0);
}

static int step_cpurace(const char *denied, const char *dir, long opens, int mk)
{
	long leaked = 0, eacces = 0, other = 0;
	struct cpurace_shared *sh;
	pid_t kids[2];
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (opens <= 0 || sched_setaffinity(0, sizeof(one), &one) < 0)
		return fail();
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return fail();
	memset(sh, 0, sizeof(*sh));
	for (int c = 0; c < 2; c++) {
		kids[c] = fork();
		if (kids[c] < 0)
			return fail();
		if (kids[c] == 0)
			cpurace_child(sh, dir, c);
	}
	for (long i = 0; i < opens; i++) {
		int fd;
		char buf[16];

		if (mk) {
			if (mkdir(denied, 0700) == 0) {
				leaked++;
				rmdir(denied);
			} else if (errno == EACCES) {
				eacces++;
			} else {
				other++;
			}
			continue;
		}
		fd = open(denied, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			if (errno == EACCES)
				eacces++;
			else
				other++;
			continue;
		}
		if (read(fd, buf, sizeof(buf)) >= 0)
			leaked++;
		else
			other++;
		close(fd);
	}
	sh->stop = 1;
	for (int c = 0; c < 2; c++)
		waitpid(kids[c], NULL, 0);
	printf("ok opens=%ld leaked=%ld eacces=%ld other=%ld ops=%ld spurious=%ld\n", opens, leaked, eacces,
	       other + sh->other, sh->ops, sh->spurious);
	return 0;
}

/* Walk N components of LEN × 'd' below dir (creating them if mk); returns an O_PATH fd of the last, or -1. */
static int deep_walk(const char *dir, int n, int len, int mk)
{
	char name[256];
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (len < 1 || len > 255)
		len = 1;
	memset(name, 'd', (size_t)len);
	name[len] = 0;
	for (int i = 0; fd >= 0 && i < n; i++) {
		int next;

		if (mk && mkdirat(fd, name, 0777) < 0 && errno != EEXIST) {
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		next = openat(fd, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		fd = next;
	}
	return fd;
}

static int mount_api_attach(const char *dir)
{
	int fs = (int)syscall(SYS_fsopen, "tmpfs", 0), mnt;

	if (fs < 0)
		return -1;
	if (syscall(SYS_fsconfig, fs, E_FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return -1;
	mnt = (int)syscall(SYS_fsmount, fs, 0, 0);
	if (mnt < 0)
		return -1;
	return (int)syscall(SYS_move_mount, mnt, "", AT_FDCWD, dir, E_MOVE_MOUNT_F_EMPTY_PATH);
}

static struct file_handle *saved_handle;
static int held_fd = -1;

/* Run one step at argv[0]; *used = arguments consumed (0: usage error). */
static int step(int argc, char **argv, int *used)
{
	const char *s = argv[0];

#define NEED(n)                      \
	do {                         \
		if (argc < (n) + 1)  \
			return *used = 0, 2; \
		*used = (n) + 1;     \
	} while (0)

	if (!strcmp(s, "userns")) {
		NEED(0);
		return do_userns();
	}
	if (!strcmp(s, "wait")) {
		NEED(0);
		return do_wait();
	}
	if (!strcmp(s, "fork-into")) {
		NEED(1);
		return do_fork_into(argv[1]);
	}
	if (!strcmp(s, "fork")) {
		NEED(0);
		return do_fork();
	}
	if (!strcmp(s, "clone3-into")) {
		NEED(1);
		return do_clone3_into(argv[1]);
	}
	if (!strcmp(s, "move-self")) {
		int err;
		NEED(1);
		err = write_procs(argv[1], (int)getpid());
		if (err)
			printf("move-self:%s\n", errname(-err));
		return err ? 1 : 0;
	}
	if (!strcmp(s, "in-thread")) {
		NEED(0);
		return do_in_thread();
	}
	if (!strcmp(s, "keep-going")) {
		NEED(0);
		keep_going = 1;
		return 0;
	}
	if (!strcmp(s, "make-private")) {
		NEED(0);
		return result(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	}
	if (!strcmp(s, "mount-rbind")) {
		NEED(2);
		return result(mount(argv[1], argv[2], NULL, MS_BIND | MS_REC, NULL));
	}
	if (!strcmp(s, "pivot-here")) {
		NEED(1);
		return do_pivot_here(argv[1]);
	}
	if (!strcmp(s, "hello")) {
		NEED(0);
		printf("ok\n");
		return 0;
	}
	if (!strcmp(s, "open")) {
		NEED(2);
		return open_step(AT_FDCWD, argv[1], argv[2]);
	}
	if (!strcmp(s, "cat")) {
		int fd;
		NEED(1);
		fd = open(argv[1], O_RDONLY | O_CLOEXEC);
		return fd < 0 ? fail() : cat_fd(fd);
	}
	if (!strcmp(s, "openat2")) {
		struct e_open_how how = {0};
		int dir, fd;
		NEED(4);
		dir = open(argv[1], O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dir < 0 || flags_of(argv[3]) < 0)
			return fail();
		how.flags = (unsigned long long)(flags_of(argv[3]) | O_CLOEXEC);
		how.resolve = resolve_flags(argv[4]);
		fd = (int)syscall(SYS_openat2, dir, argv[2], &how, sizeof(how));
		if (fd < 0)
			return fail();
		close(fd);
		printf("ok\n");
		return 0;
	}
	if (!strcmp(s, "reopen")) {
		char proc[64];
		int fd;
		NEED(3);
		fd = open_mode(AT_FDCWD, argv[1], argv[2]);
		if (fd < 0)
			return fail();
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		return open_step(AT_FDCWD, proc, argv[3]);
	}
	if (!strcmp(s, "chdir-open")) {
		NEED(3);
		if (chdir(argv[1]) < 0)
			return fail();
		return open_step(AT_FDCWD, argv[2], argv[3]);
	}
	if (!strcmp(s, "fchdir-open")) {
		int fd;
		NEED(3);
		fd = open(argv[1], O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || fchdir(fd) < 0)
			return fail();
		return open_step(AT_FDCWD, argv[2], argv[3]);
	}
	if (!strcmp(s, "opath-stat")) {
		struct stat st;
		int fd;
		NEED(1);
		fd = open(argv[1], O_PATH | O_CLOEXEC);
		if (fd < 0)
			return fail();
		return result(fstatat(fd, "", &st, AT_EMPTY_PATH));
	}
	if (!strcmp(s, "hold-path")) {
		NEED(1);
		held_fd = open(argv[1], O_PATH | O_CLOEXEC);
		return result(held_fd);
	}
	if (!strcmp(s, "reopen-held")) {
		char proc[64];
		int fd;
		NEED(1);
		if (held_fd < 0)
			return *used = 0, 2;
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", held_fd);
		if (strcmp(argv[1], "r"))
			return open_step(AT_FDCWD, proc, argv[1]);
		fd = open(proc, O_RDONLY | O_CLOEXEC);
		return fd < 0 ? fail() : cat_fd(fd);
	}
	if (!strcmp(s, "link-proc") || !strcmp(s, "link-empty")) {
		char proc[64];
		int fd;
		NEED(2);
		fd = open(argv[1], O_PATH | O_CLOEXEC);
		if (fd < 0)
			return fail();
		if (!strcmp(s, "link-empty"))
			return result(linkat(fd, "", AT_FDCWD, argv[2], AT_EMPTY_PATH));
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		return result(linkat(AT_FDCWD, proc, AT_FDCWD, argv[2], AT_SYMLINK_FOLLOW));
	}
	if (!strcmp(s, "handle-save")) {
		int mount_id;
		NEED(1);
		saved_handle = calloc(1, sizeof(*saved_handle) + MAX_HANDLE_SZ);
		if (!saved_handle)
			return fail();
		saved_handle->handle_bytes = MAX_HANDLE_SZ;
		return result(name_to_handle_at(AT_FDCWD, argv[1], saved_handle, &mount_id, 0));
	}
	if (!strcmp(s, "handle-open")) {
		int fd;
		NEED(1);
		if (!saved_handle || flags_of(argv[1]) < 0)
			return *used = 0, 2;
		fd = open_by_handle_at(AT_FDCWD, saved_handle, flags_of(argv[1]) | O_CLOEXEC);
		if (fd < 0)
			return fail();
		return cat_fd(fd);
	}
	if (!strcmp(s, "exec")) {
		NEED(1);
		*used = argc;
		execv(argv[1], argv + 1);
		return fail();
	}
	if (!strcmp(s, "execveat-empty")) {
		int fd;
		NEED(2);
		*used = argc;
		fd = open(argv[1], O_PATH | O_CLOEXEC);
		if (fd < 0)
			return fail();
		syscall(SYS_execveat, fd, "", argv + 2, environ, AT_EMPTY_PATH);
		return fail();
	}
	if (!strcmp(s, "memfd-exec") || !strcmp(s, "memfd-mmap-exec")) {
		int fd;
		NEED(!strcmp(s, "memfd-exec") ? 2 : 1);
		fd = memfd_create("eprobe", 0);
		if (fd < 0 || copy_fd(fd, argv[1]) < 0)
			return fail();
		if (!strcmp(s, "memfd-mmap-exec"))
			return result(mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED ? -1 : 0);
		*used = argc;
		fexecve(fd, argv + 2, environ);
		return fail();
	}
	if (!strcmp(s, "mmap-exec") || !strcmp(s, "mprotect-exec")) {
		void *p;
		int fd;
		NEED(1);
		fd = open(argv[1], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return fail();
		if (!strcmp(s, "mmap-exec"))
			return result(mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED ? -1 : 0);
		p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED) {
			printf("mmap:%s\n", errname(errno));
			return 1;
		}
		return result(mprotect(p, 4096, PROT_READ | PROT_EXEC));
	}
	if (!strcmp(s, "write-code")) {
		static const unsigned char code[] = {0xb8, 0x2a, 0x00, 0x00, 0x00, 0xc3}; /* mov eax, 42; ret */
		int fd;
		NEED(1);
		fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
		if (fd < 0)
			return fail();
		if (write(fd, code, sizeof(code)) != (ssize_t)sizeof(code)) {
			close(fd);
			return fail();
		}
		close(fd);
		printf("ok\n");
		return 0;
	}
	if (!strcmp(s, "mprotect-call")) {
		void *p;
		int fd;
		NEED(1);
		fd = open(argv[1], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return fail();
		p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED) {
			printf("mmap:%s\n", errname(errno));
			return 1;
		}
		if (mprotect(p, 4096, PROT_READ | PROT_EXEC) < 0)
			return fail();
#if defined(__x86_64__)
		printf("ok %d\n", ((int (*)(void))p)());
		return 0;
#else
		errno = ENOSYS;
		return fail();
#endif
	}
	if (!strcmp(s, "link")) {
		NEED(2);
		return result(link(argv[1], argv[2]));
	}
	if (!strcmp(s, "rename")) {
		NEED(2);
		return result(rename(argv[1], argv[2]));
	}
	if (!strcmp(s, "exchange")) {
		NEED(2);
		return result(renameat2(AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE));
	}
	if (!strcmp(s, "symlink")) {
		NEED(2);
		return result(symlink(argv[1], argv[2]));
	}
	if (!strcmp(s, "mkdir")) {
		NEED(1);
		return result(mkdir(argv[1], 0777));
	}
	if (!strcmp(s, "rmdir")) {
		NEED(1);
		return result(rmdir(argv[1]));
	}
	if (!strcmp(s, "unlink")) {
		NEED(1);
		return result(unlink(argv[1]));
	}
	if (!strcmp(s, "mkfifo")) {
		NEED(1);
		return result(mkfifo(argv[1], 0666));
	}
	if (!strcmp(s, "truncate")) {
		NEED(1);
		return result(truncate(argv[1], 0));
	}
	if (!strcmp(s, "chmod")) {
		NEED(2);
		return result(chmod(argv[1], (mode_t)strtol(argv[2], NULL, 8)));
	}
	if (!strcmp(s, "chown-self")) {
		NEED(1);
		return result(chown(argv[1], getuid(), getgid()));
	}
	if (!strcmp(s, "utimes")) {
		NEED(1);
		return result(utimensat(AT_FDCWD, argv[1], NULL, 0));
	}
	if (!strcmp(s, "setxattr")) {
		NEED(2);
		return result(setxattr(argv[1], argv[2], "x", 1, 0));
	}
	if (!strcmp(s, "race")) {
		NEED(4);
		return step_race(argv[1], argv[2], argv[3], atoi(argv[4]));
	}
	if (!strcmp(s, "cpurace")) {
		int mk = argc > 4 && !strcmp(argv[4], "mkdir");

		NEED(3);
		if (mk)
			*used = 5;
		return step_cpurace(argv[1], argv[2], atol(argv[3]), mk);
	}
	if (!strcmp(s, "unix-connect") || !strcmp(s, "unix-send") || !strcmp(s, "unix-self")) {
		struct sockaddr_un sa;
		socklen_t len;
		int type = SOCK_STREAM, fd;
		NEED(1);
		len = unix_addr(argv[1], &sa);
		if (!strcmp(s, "unix-connect") && argc > 2 && (!strcmp(argv[2], "stream") || !strcmp(argv[2], "dgram"))) {
			*used = 3;
			if (!strcmp(argv[2], "dgram"))
				type = SOCK_DGRAM;
		}
		if (!strcmp(s, "unix-send"))
			type = SOCK_DGRAM;
		if (!strcmp(s, "unix-self")) {
			int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (l < 0 || bind(l, (struct sockaddr *)&sa, len) < 0 || listen(l, 4) < 0)
				return fail();
		}
		fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return fail();
		if (!strcmp(s, "unix-send"))
			return result(sendto(fd, "x", 1, 0, (struct sockaddr *)&sa, len));
		return result(connect(fd, (struct sockaddr *)&sa, len));
	}
	if (!strcmp(s, "deep-mkdir") || !strcmp(s, "deep-open") || !strcmp(s, "deep-utimes")) {
		int mk = !strcmp(s, "deep-mkdir"), fd;
		NEED(s[5] == 'o' ? 4 : 3);
		fd = deep_walk(argv[1], atoi(argv[2]), atoi(argv[3]), mk);
		if (fd < 0) {
			printf("walk:%s\n", errname(errno));
			return 1;
		}
		if (mk)
			return open_step(fd, "f", "c");
		if (!strcmp(s, "deep-utimes"))
			return result(utimensat(fd, "f", NULL, 0));
		return open_step(fd, "f", argv[4]);
	}
	if (!strcmp(s, "unshare-mnt")) {
		NEED(0);
		return result(unshare(CLONE_NEWNS));
	}
	if (!strcmp(s, "mount-bind")) {
		NEED(2);
		return result(mount(argv[1], argv[2], NULL, MS_BIND, NULL));
	}
	if (!strcmp(s, "mount-tmpfs")) {
		NEED(1);
		return result(mount("none", argv[1], "tmpfs", 0, NULL));
	}
	if (!strcmp(s, "umount")) {
		NEED(1);
		return result(umount2(argv[1], 0));
	}
	if (!strcmp(s, "chroot")) {
		NEED(1);
		return result(chroot(argv[1]));
	}
	if (!strcmp(s, "pivot-root")) {
		NEED(2);
		return result(syscall(SYS_pivot_root, argv[1], argv[2]));
	}
	if (!strcmp(s, "fsmount-attach")) {
		NEED(1);
		return result(mount_api_attach(argv[1]));
	}
	if (!strcmp(s, "tree-cat") || !strcmp(s, "tree-exec")) {
		int tree, fd;
		NEED(!strcmp(s, "tree-exec") ? 3 : 2);
		tree = (int)syscall(SYS_open_tree, AT_FDCWD, argv[1], E_OPEN_TREE_CLONE | E_OPEN_TREE_CLOEXEC);
		if (tree < 0) {
			printf("open_tree:%s\n", errname(errno));
			return 1;
		}
		if (!strcmp(s, "tree-exec")) {
			*used = argc;
			syscall(SYS_execveat, tree, argv[2], argv + 3, environ, 0);
			return fail();
		}
		fd = openat(tree, argv[2], O_RDONLY | O_CLOEXEC);
		return fd < 0 ? fail() : cat_fd(fd);
	}
	if (!strcmp(s, "hold")) {
		int fd;
		NEED(1);
		fd = open(argv[1], O_RDONLY);
		if (fd < 0)
			return fail();
		printf("ready %d %d\n", (int)getpid(), fd);
		return block_until_eof();
	}
	if (!strcmp(s, "block")) {
		const char *t = getenv("TMPDIR");
		NEED(0);
		printf("ready %d %s\n", (int)getpid(), t ? t : "-");
		return block_until_eof();
	}
	return *used = 0, 2;
#undef NEED
}

/* Steps argv[i..]: 0 every one succeeded, else the first failure's code (or 1 after keep-going). */
static int run_steps(int argc, char **argv, int i)
{
	int failed = 0;

	while (i < argc) {
		int end = i, used = 0, r;

		while (end < argc && strcmp(argv[end], "+"))
			end++;
		rest_argc = argc, rest_argv = argv, rest_at = end + 1; /* for in-thread */
		r = step(end - i, argv + i, &used);
		if (used == 0 || (used != end - i && r == 0)) {
			fprintf(stderr, "eprobe: bad step: %s\n", argv[i]);
			return 2;
		}
		if (r && !keep_going)
			return r;
		failed |= r != 0;
		i = end + 1;
	}
	return failed;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc < 2) {
		fprintf(stderr, "usage: eprobe STEP [ARG...] [+ STEP [ARG...]]... (see the source)\n");
		return 2;
	}
	return run_steps(argc, argv, 1);
}
