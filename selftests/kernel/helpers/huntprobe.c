// SPDX-License-Identifier: Apache-2.0
/*
 * huntprobe: probes for test_attack_hunt.c (new attacks against the issue 13
 * classes). Each operation prints one line: "ok ..." or the errno name.
 *
 *   huntprobe serve                      one operation per stdin line (split on spaces)
 *   huntprobe abstract-serve NAME        stream listener on the abstract name @NAME: "ready PID",
 *                                        then "got TEXT" per connection, until stdin EOF
 *   huntprobe abstract-send NAME TEXT    connect to @NAME and send TEXT
 *   huntprobe connect ADDR PORT          TCP connect (3 s): "ok", "timeout" or the errno
 *   huntprobe sh WORDS...                system() of the words joined: "ok" or "exit N"
 *   huntprobe corepat FILE               core_pattern = "|<this binary> corehelper FILE"
 *   huntprobe crash                      a child that dies of SIGSEGV (dumps core if the pattern says)
 *   huntprobe corehelper FILE            (run by the kernel) write "uid=U cgroup=C" to FILE
 *   huntprobe mknod PATH c|b MAJ MIN     make a device node
 *   huntprobe openw PATH TEXT            open O_WRONLY and write TEXT
 *   huntprobe openr PATH                 open O_RDONLY and read up to 16 bytes: "ok N"
 *   huntprobe fanotify-perm PATH         an FAN_OPEN_PERM mark on PATH, then a child opens PATH and
 *                                        the mark's holder refuses it: "ok child-open-refused"
 *   huntprobe fanotify-mount PATH        an FAN_OPEN mark on PATH's whole mount: "ok"
 *   huntprobe inotify PATH               an inotify watch on PATH: "ok"
 */
#include <stddef.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static int fail(void)
{
	int e = errno;
	const char *n;

	switch (e) {
	case EPERM: n = "EPERM"; break;
	case EACCES: n = "EACCES"; break;
	case ENOENT: n = "ENOENT"; break;
	case EINVAL: n = "EINVAL"; break;
	case ECONNREFUSED: n = "ECONNREFUSED"; break;
	case ENETUNREACH: n = "ENETUNREACH"; break;
	case EHOSTUNREACH: n = "EHOSTUNREACH"; break;
	case ETIMEDOUT: n = "ETIMEDOUT"; break;
	case EEXIST: n = "EEXIST"; break;
	case ENXIO: n = "ENXIO"; break;
	default: n = NULL;
	}
	if (n)
		printf("%s\n", n);
	else
		printf("E%d\n", e);
	return 1;
}

static int ok(void)
{
	printf("ok\n");
	return 0;
}

static socklen_t abstract_addr(struct sockaddr_un *sa, const char *name)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "%s", name);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
}

static int abstract_serve(const char *name)
{
	struct sockaddr_un sa;
	socklen_t len = abstract_addr(&sa, name);
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (l < 0 || bind(l, (struct sockaddr *)&sa, len) < 0 || listen(l, 8) < 0)
		return fail();
	printf("ready %d\n", (int)getpid());
	for (;;) {
		struct pollfd p[2] = {{.fd = 0, .events = POLLIN}, {.fd = l, .events = POLLIN}};
		char buf[128];

		if (poll(p, 2, -1) < 0)
			continue;
		if (p[0].revents && read(0, buf, sizeof(buf)) <= 0)
			return 0;
		if (p[1].revents) {
			int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
			ssize_t n;

			if (c < 0)
				continue;
			n = read(c, buf, sizeof(buf) - 1);
			buf[n > 0 ? n : 0] = 0;
			printf("got %s\n", buf);
			close(c);
		}
	}
}

static int abstract_send(const char *name, const char *text)
{
	struct sockaddr_un sa;
	socklen_t len = abstract_addr(&sa, name);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (s < 0 || connect(s, (struct sockaddr *)&sa, len) < 0)
		return fail();
	if (write(s, text, strlen(text)) < 0)
		return fail();
	close(s);
	return ok();
}

static int tcp_connect(const char *addr, int port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int s, fam = strchr(addr, ':') ? AF_INET6 : AF_INET, err = 0;
	struct pollfd p;
	socklen_t el = sizeof(err);

	memset(&ss, 0, sizeof(ss));
	if (fam == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		a->sin_port = htons((unsigned short)port);
		inet_pton(AF_INET, addr, &a->sin_addr);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((unsigned short)port);
		inet_pton(AF_INET6, addr, &a->sin6_addr);
		len = sizeof(*a);
	}
	s = socket(fam, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return fail();
	if (connect(s, (struct sockaddr *)&ss, len) == 0)
		return ok();
	if (errno != EINPROGRESS)
		return fail();
	p.fd = s;
	p.events = POLLOUT;
	if (poll(&p, 1, 3000) <= 0) {
		printf("timeout\n");
		return 1;
	}
	getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &el);
	if (err) {
		errno = err;
		return fail();
	}
	return ok();
}

static int run_sh(int argc, char **argv)
{
	char cmd[1024] = "";
	int st;

	for (int i = 0; i < argc; i++)
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), "%s%s", i ? " " : "", argv[i]);
	st = system(cmd);
	if (st == 0)
		return ok();
	printf("exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	return 1;
}

static int corepat(const char *file)
{
	char self[512], pat[1200];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int fd;

	if (n < 0)
		return fail();
	self[n] = 0;
	snprintf(pat, sizeof(pat), "|%s corehelper %s", self, file);
	fd = open("/proc/sys/kernel/core_pattern", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return fail();
	if (write(fd, pat, strlen(pat)) < 0)
		return fail();
	close(fd);
	return ok();
}

static int crash(void)
{
	pid_t p = fork();
	int st;

	if (p == 0) {
		signal(SIGSEGV, SIG_DFL);
		raise(SIGSEGV);
		_exit(0);
	}
	if (p < 0 || waitpid(p, &st, 0) < 0)
		return fail();
	printf("ok %s%s\n", WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "exited", WCOREDUMP(st) ? " (core dumped)" : "");
	return 0;
}

static int corehelper(const char *file)
{
	char cg[512] = "", buf[4096];
	FILE *f = fopen("/proc/self/cgroup", "r");
	int fd;

	while (read(0, buf, sizeof(buf)) > 0) /* drain the core */
		;
	if (f) {
		if (!fgets(cg, sizeof(cg), f))
			cg[0] = 0;
		fclose(f);
	}
	cg[strcspn(cg, "\n")] = 0;
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return 1;
	dprintf(fd, "uid=%d cgroup=%s\n", (int)getuid(), cg);
	close(fd);
	return 0;
}

/* Hold an open of path by a child with a permission mark, and refuse it */
static int fanotify_perm(const char *path)
{
	struct fanotify_event_metadata ev;
	struct fanotify_response resp;
	struct pollfd p;
	int fd = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC, O_RDONLY), st;
	pid_t c;

	if (fd < 0 || fanotify_mark(fd, FAN_MARK_ADD, FAN_OPEN_PERM, AT_FDCWD, path) < 0)
		return fail();
	c = fork();
	if (c == 0)
		_exit(open(path, O_RDONLY) < 0 ? 1 : 0);
	p.fd = fd;
	p.events = POLLIN;
	if (c < 0 || poll(&p, 1, 30000) != 1 || read(fd, &ev, sizeof(ev)) < (ssize_t)sizeof(ev)) {
		printf("no event\n");
		return 1;
	}
	resp.fd = ev.fd;
	resp.response = FAN_DENY;
	if (write(fd, &resp, sizeof(resp)) < 0)
		return fail();
	close(ev.fd);
	if (waitpid(c, &st, 0) < 0)
		return fail();
	printf(WIFEXITED(st) && WEXITSTATUS(st) == 1 ? "ok child-open-refused\n" : "child-opened\n");
	return 0;
}

static int fanotify_mount(const char *path)
{
	int fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC, O_RDONLY);

	if (fd < 0 || fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_OPEN, AT_FDCWD, path) < 0)
		return fail();
	close(fd);
	return ok();
}

static int inotify_watch(const char *path)
{
	int fd = inotify_init1(IN_CLOEXEC);

	if (fd < 0 || inotify_add_watch(fd, path, IN_OPEN | IN_MODIFY) < 0)
		return fail();
	close(fd);
	return ok();
}

static int dispatch(int argc, char **argv)
{
	const char *op = argc > 1 ? argv[1] : "";
	const char *a = argc > 2 ? argv[2] : NULL, *b = argc > 3 ? argv[3] : NULL;

#define OP(name, n) (!strcmp(op, name) && argc >= (n) + 2)
	if (OP("abstract-serve", 1))
		return abstract_serve(a);
	if (OP("abstract-send", 2))
		return abstract_send(a, b);
	if (OP("connect", 2))
		return tcp_connect(a, atoi(b));
	if (OP("sh", 1))
		return run_sh(argc - 2, argv + 2);
	if (OP("corepat", 1))
		return corepat(a);
	if (OP("crash", 0))
		return crash();
	if (OP("corehelper", 1))
		return corehelper(a);
	if (OP("mknod", 4)) {
		mode_t m = (argv[3][0] == 'b' ? S_IFBLK : S_IFCHR) | 0600;
		return mknod(a, m, makedev(atoi(argv[4]), atoi(argv[5]))) < 0 ? fail() : ok();
	}
	if (OP("openw", 2)) {
		int fd = open(a, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, b, strlen(b)) < 0)
			return fail();
		close(fd);
		return ok();
	}
	if (OP("fanotify-perm", 1))
		return fanotify_perm(a);
	if (OP("fanotify-mount", 1))
		return fanotify_mount(a);
	if (OP("inotify", 1))
		return inotify_watch(a);
	if (OP("openr", 1)) {
		char buf[16];
		int fd = open(a, O_RDONLY | O_CLOEXEC);
		ssize_t n;
		if (fd < 0 || (n = read(fd, buf, sizeof(buf))) < 0)
			return fail();
		close(fd);
		printf("ok %d\n", (int)n);
		return 0;
	}
#undef OP
	printf("usage\n");
	return 2;
}

static int serve(void)
{
	char line[1024];

	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		char *args[24], *save = NULL;
		int n = 0;

		args[n++] = "huntprobe";
		for (char *t = strtok_r(line, " \n", &save); t && n < 23; t = strtok_r(NULL, " \n", &save))
			args[n++] = t;
		args[n] = NULL;
		if (n > 1)
			dispatch(n, args);
	}
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc >= 2 && !strcmp(argv[1], "serve"))
		return serve();
	return dispatch(argc, argv);
}
