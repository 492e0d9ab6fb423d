// SPDX-License-Identifier: Apache-2.0
/* The kernel-test runner and its helpers (ktest.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "cgroup/cgroup.h"
#include "engine/probe.h"
#include "ktest.h"

#define KTEST_MAX 256
#define EXIT_SKIP 77

static struct {
	const char *name;
	ktest_fn fn;
	bool native_only;
} tests[KTEST_MAX];
static int ntests;
static int failures; /* in the child running one test */
static char custode_path[PATH_MAX], tprobe_path[PATH_MAX];

void ktest_register(const char *name, ktest_fn fn, bool native_only)
{
	if (ntests < KTEST_MAX) {
		tests[ntests].name = name;
		tests[ntests].native_only = native_only;
		tests[ntests++].fn = fn;
	}
}

void ktest_fail_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "    FAIL %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	failures++;
}

void ktest_skip(const char *why)
{
	fprintf(stderr, "    SKIP: %s\n", why);
	fflush(NULL);
	_exit(EXIT_SKIP);
}

void ktest_log(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "    ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

const char *ktest_custode(void)
{
	return custode_path;
}

const char *ktest_tprobe(void)
{
	return tprobe_path;
}

static char helper_dir[PATH_MAX];

const char *ktest_helper(const char *name)
{
	static char path[8][PATH_MAX];
	static int next;
	char *p = path[next++ % 8];

	if (ktest_in_guest())
		snprintf(p, PATH_MAX, "/usr/local/bin/custode-%s", name);
	else
		snprintf(p, PATH_MAX, "%s/%s", helper_dir, name);
	return p;
}

bool ktest_in_guest(void)
{
	const char *g = getenv("CUSTODE_IN_GUEST");
	return g && !strcmp(g, "1");
}

void ktest_need_lsm(void)
{
	static int known = -1;
	struct custode_probe_result r;

	if (known < 0) {
		custode_probe_lsm(&r);
		known = r.lsm_loads;
		if (!known) {
			char why[512];
			snprintf(why, sizeof(why), "BPF-LSM programs do not load here: %s", r.lsm_cause);
			ktest_skip(why);
		}
	}
	if (!known)
		ktest_skip("BPF-LSM programs do not load here");
}

int ktest_spawn(char *const argv[], int uid, struct ktest_proc *p)
{
	int in[2], out[2], err[2];

	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		return -errno;
	p->pid = fork();
	if (p->pid < 0)
		return -errno;
	if (p->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		if (uid >= 0) {
			gid_t g = (gid_t)uid;
			if (setgroups(1, &g) || setgid(g) || setuid((uid_t)uid))
				_exit(99);
		}
		execv(argv[0], argv);
		_exit(98);
	}
	close(in[0]);
	close(out[1]);
	close(err[1]);
	p->in = in[1];
	p->out = out[0];
	p->err = err[0];
	return 0;
}

/*
 * Timeouts are hang detectors, never waits: stretched (x4 by default,
 * $CUSTODE_KTEST_SLACK) so a loaded host — a TCG guest sharing two cores,
 * an engine load of every class — never fails a test that would pass.
 */
int ktest_slack(int timeout_ms)
{
	static int factor;
	long t;

	if (!factor) {
		const char *e = getenv("CUSTODE_KTEST_SLACK");
		factor = e && atoi(e) > 0 ? atoi(e) : 4;
	}
	t = (long)timeout_ms * factor;
	return t > 3600000 ? 3600000 : (int)t;
}

bool ktest_read_line(int fd, char *buf, size_t len, int timeout_ms)
{
	size_t n = 0;

	timeout_ms = ktest_slack(timeout_ms);
	while (n + 1 < len) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		char c;

		if (poll(&pfd, 1, timeout_ms) <= 0)
			return false;
		if (read(fd, &c, 1) != 1)
			return false;
		if (c == '\n')
			break;
		buf[n++] = c;
	}
	buf[n] = 0;
	return true;
}

static int decode_status(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

int ktest_wait(struct ktest_proc *p, int timeout_ms)
{
	int st;

	timeout_ms = ktest_slack(timeout_ms);
	for (int waited = 0; waited <= timeout_ms; waited += 10) {
		pid_t w = waitpid(p->pid, &st, WNOHANG);
		if (w == p->pid)
			return decode_status(st);
		if (w < 0)
			return -1;
		usleep(10000);
	}
	return -1;
}

void ktest_close_stdin(struct ktest_proc *p)
{
	if (p->in >= 0)
		close(p->in);
	p->in = -1;
}

void ktest_proc_close(struct ktest_proc *p)
{
	if (p->in >= 0)
		close(p->in);
	if (p->out >= 0)
		close(p->out);
	if (p->err >= 0)
		close(p->err);
	p->in = p->out = p->err = -1;
}

int ktest_run(char *const argv[], int uid, int timeout_ms, struct ktest_result *r)
{
	struct ktest_proc p;
	size_t no = 0, ne = 0;
	struct timespec t0, t;
	int st;

	memset(r, 0, sizeof(*r));
	timeout_ms = ktest_slack(timeout_ms);
	if (ktest_spawn(argv, uid, &p) < 0)
		return r->code = -1;
	close(p.in);
	p.in = -1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pfd[2] = {{.fd = p.out, .events = POLLIN}, {.fd = p.err, .events = POLLIN}};
		long elapsed;

		if (p.out < 0 && p.err < 0)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		elapsed = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
		if (elapsed > timeout_ms) {
			kill(p.pid, SIGKILL);
			waitpid(p.pid, &st, 0);
			ktest_proc_close(&p);
			return r->code = -1;
		}
		if (poll(pfd, 2, 100) <= 0)
			continue;
		for (int i = 0; i < 2; i++) {
			int *fd = i ? &p.err : &p.out;
			char *buf = i ? r->err : r->out;
			size_t *n = i ? &ne : &no;
			char tmp[4096];
			ssize_t got;

			if (*fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP)))
				continue;
			got = read(*fd, tmp, sizeof(tmp));
			if (got <= 0) {
				close(*fd);
				*fd = -1;
				continue;
			}
			if (*n + (size_t)got >= sizeof(r->out))
				got = (ssize_t)(sizeof(r->out) - 1 - *n);
			memcpy(buf + *n, tmp, (size_t)got);
			*n += (size_t)got;
			buf[*n] = 0;
		}
	}
	waitpid(p.pid, &st, 0);
	return r->code = decode_status(st);
}

bool ktest_write_file(const char *path, const char *content, int mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	bool ok;

	if (fd < 0)
		return false;
	ok = write(fd, content, strlen(content)) == (ssize_t)strlen(content);
	close(fd);
	return ok;
}

bool ktest_make_dirs(struct ktest_dirs *d)
{
	snprintf(d->root, sizeof(d->root), "/tmp/ktest-XXXXXX");
	if (!mkdtemp(d->root))
		return false;
	chmod(d->root, 0755);
	snprintf(d->ws, sizeof(d->ws), "%s/ws", d->root);
	snprintf(d->ws_file, sizeof(d->ws_file), "%s/f", d->ws);
	snprintf(d->outside, sizeof(d->outside), "%s/outside", d->root);
	/* runs execute as an unprivileged user: make the files writable by it, so what denies is custode's policy, not DAC */
	return mkdir(d->ws, 0755) == 0 && ktest_write_file(d->ws_file, "in the workspace\n", 0666) &&
	       chmod(d->ws_file, 0666) == 0 && ktest_write_file(d->outside, "outside the workspace\n", 0666) &&
	       chmod(d->outside, 0666) == 0;
}

json_t *ktest_events(void)
{
	static struct ktest_result r;
	char *argv[] = {(char *)ktest_custode(), "events", "--json", NULL};
	json_t *arr = json_array();

	if (ktest_run(argv, -1, 20000, &r) != 0) {
		ktest_log("custode events failed (%d): %s", r.code, r.err);
		return arr;
	}
	for (char *save = NULL, *line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		json_t *o = json_loads(line, 0, NULL);
		if (o)
			json_array_append_new(arr, o);
		else
			ktest_log("not JSON: %s", line);
	}
	return arr;
}

json_t *ktest_engine_status(void)
{
	static struct ktest_result r;
	char *argv[] = {(char *)ktest_custode(), "engine", "status", "--json", NULL};

	if (ktest_run(argv, -1, 60000, &r) != 0) {
		ktest_log("custode engine status failed (%d): %s", r.code, r.err);
		return NULL;
	}
	return json_loads(r.out, 0, NULL);
}

long long ktest_engine_status_int(const char *field)
{
	json_t *o = ktest_engine_status(), *v = json_object_get(o, field);
	long long n = json_is_integer(v) ? json_integer_value(v) : -1;

	json_decref(o);
	return n;
}

json_t *ktest_find_event(json_t *arr, const char *hook, const char *reason, const char *path)
{
	size_t i;
	json_t *e;

	json_array_foreach(arr, i, e) {
		const char *h = json_string_value(json_object_get(e, "hook"));
		const char *r = json_string_value(json_object_get(e, "reason"));
		const char *p = json_string_value(json_object_get(json_object_get(e, "file"), "path"));

		if (h && r && !strcmp(h, hook) && !strcmp(r, reason) && (!path || (p && !strcmp(p, path))))
			return e;
	}
	return NULL;
}

void ktest_need_cgroup_bpf(void)
{
	struct custode_probe_result r = {0};

	custode_probe_cgroup(&r);
	if (!r.cgroup_loads) {
		char why[512];
		snprintf(why, sizeof(why), "cgroup socket programs do not load here: %s", r.cgroup_cause);
		ktest_skip(why);
	}
}

static bool sh(const char *cmd)
{
	int st = system(cmd);

	if (st != 0)
		ktest_log("command failed (%d): %s", st, cmd);
	return st == 0;
}

static bool listen_on(int family, int port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0), on = 1;

	if (fd < 0)
		return false;
	memset(&ss, 0, sizeof(ss));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	if (family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((unsigned short)port);
		len = sizeof(*s4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((unsigned short)port);
		len = sizeof(*s6);
	}
	/* leaked on purpose: the listeners live as long as this test process */
	return bind(fd, (struct sockaddr *)&ss, len) == 0 && listen(fd, 128) == 0;
}

static int near_ns = -1, far_ns = -1;

bool ktest_far_enter(void)
{
	if (far_ns < 0 || setns(far_ns, CLONE_NEWNET) < 0) {
		ktest_log("entering the far network namespace: %s", far_ns < 0 ? "no ktest_netns" : strerror(errno));
		return false;
	}
	return true;
}

void ktest_far_leave(void)
{
	if (near_ns >= 0 && setns(near_ns, CLONE_NEWNET) < 0)
		ktest_log("leaving the far network namespace: %s", strerror(errno));
}

bool ktest_far_sh(const char *cmd)
{
	bool ok;

	if (!ktest_far_enter())
		return false;
	ok = sh(cmd);
	ktest_far_leave();
	return ok;
}

bool ktest_far_addr(const char *addr)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), strchr(addr, ':') ? "ip -6 addr add %s/128 dev ktv1" : "ip addr add %s/32 dev ktv1",
		 addr);
	return ktest_far_sh(cmd);
}

/* Can a socket of the near namespace reach [2001:db8::10]:8080 and 203.0.113.10:8080 (neighbour discovery done)? */
static bool far_reachable(void)
{
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6, .sin6_port = htons(8080)};
	struct sockaddr_in s4 = {.sin_family = AF_INET, .sin_port = htons(8080)};
	int f6 = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0), f4 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	inet_pton(AF_INET6, "2001:db8::10", &s6.sin6_addr);
	inet_pton(AF_INET, "203.0.113.10", &s4.sin_addr);
	ok = f6 >= 0 && f4 >= 0 && connect(f6, (struct sockaddr *)&s6, sizeof(s6)) == 0 &&
	     connect(f4, (struct sockaddr *)&s4, sizeof(s4)) == 0;
	if (f6 >= 0)
		close(f6);
	if (f4 >= 0)
		close(f4);
	return ok;
}

/* Move link `dev` of this namespace into far, through a child parked there. */
static bool move_to_far(const char *dev)
{
	char cmd[128], c;
	int p[2];
	pid_t pid;
	bool ok;

	if (pipe(p) < 0)
		return false;
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		if (setns(far_ns, CLONE_NEWNET) < 0)
			_exit(1);
		if (write(p[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	ok = pid > 0 && read(p[0], &c, 1) == 1;
	close(p[0]);
	if (ok) {
		snprintf(cmd, sizeof(cmd), "ip link set %s netns %d", dev, (int)pid);
		ok = sh(cmd);
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return ok;
}

bool ktest_netns(void)
{
	bool ok;

	if (near_ns >= 0)
		close(near_ns);
	if (far_ns >= 0)
		close(far_ns);
	near_ns = far_ns = -1;
	/* far first: the namespace standing for the internet */
	if (unshare(CLONE_NEWNET) < 0 || (far_ns = open("/proc/self/ns/net", O_RDONLY)) < 0) {
		ktest_log("far network namespace: %s", strerror(errno));
		return false;
	}
	sh("sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 >/dev/null 2>&1 || true");
	if (!sh("ip link set lo up"))
		return false;
	if (unshare(CLONE_NEWNET) < 0 || (near_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) < 0) {
		ktest_log("near network namespace: %s", strerror(errno));
		return false;
	}
	sh("sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 >/dev/null 2>&1 || true");
	/*
	 * The guest's ip is busybox's: no peer names, netns by pid only. A fresh
	 * namespace names the peer veth0; a process parked in far takes it over.
	 */
	if (!sh("ip link set lo up") || !sh("ip link add ktv0 type veth") || !move_to_far("veth0") ||
	    !ktest_far_sh("ip link set veth0 name ktv1") || !sh("ip addr add 198.51.100.1/32 dev ktv0") ||
	    !sh("ip -6 addr add 2001:db8:1::1/128 dev ktv0") || !sh("ip link set ktv0 up") ||
	    !sh("ip route add 203.0.113.0/24 dev ktv0") || !sh("ip -6 route add 2001:db8::/64 dev ktv0"))
		return false;
	if (!ktest_far_sh("ip link set ktv1 up") || !ktest_far_addr("203.0.113.10") || !ktest_far_addr("2001:db8::10") ||
	    !ktest_far_sh("ip route add 198.51.100.0/24 dev ktv1") || !ktest_far_sh("ip -6 route add 2001:db8:1::/64 dev ktv1"))
		return false;
	/* let everyone open ping sockets here, so that a refusal inside a run is custode's */
	sh("echo '0 2147483647' > /proc/sys/net/ipv4/ping_group_range");
	if (!ktest_far_enter())
		return false;
	ok = listen_on(AF_INET, 8080) && listen_on(AF_INET, 8081) && listen_on(AF_INET6, 8080) &&
	     listen_on(AF_INET6, 8081);
	ktest_far_leave();
	/* and local services on the same ports in near, reached through loopback (or the near's own addresses) */
	ok = ok && listen_on(AF_INET, 8080) && listen_on(AF_INET, 8081) && listen_on(AF_INET6, 8080) &&
	     listen_on(AF_INET6, 8081);
	if (!ok)
		return false;
	/* the links come up and neighbours are found asynchronously: wait until both families connect */
	for (int i = 0; i < 200; i++) {
		if (far_reachable())
			return true;
		usleep(50000);
	}
	ktest_log("the far namespace's listeners stay unreachable");
	return false;
}

json_t *ktest_find_net_event(json_t *arr, const char *reason, const char *addr, int port)
{
	size_t i;
	json_t *e;

	json_array_foreach(arr, i, e) {
		const char *r = json_string_value(json_object_get(e, "reason"));
		json_t *net = json_object_get(e, "net");
		const char *a = json_string_value(json_object_get(net, "addr"));

		if (!net || !r || strcmp(r, reason))
			continue;
		if (addr && (!a || strcmp(a, addr)))
			continue;
		if (port && json_integer_value(json_object_get(net, "port")) != port)
			continue;
		return e;
	}
	return NULL;
}

const char *ktest_policy_file(const char *dir, const char *name, const char *json)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/%s.json", dir, name);
	if (!ktest_write_file(path, json, 0644))
		return NULL;
	chmod(path, 0644);
	return path;
}

bool ktest_proc_cgroup(int pid, char *out, size_t len)
{
	char path[64], mount[PATH_MAX], line[PATH_MAX];
	FILE *f;
	bool ok = false;

	if (custode_cgroup2_mount(mount, sizeof(mount)) < 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = 0;
			snprintf(out, len, "%s%s", mount, line + 3);
			ok = true;
		}
	}
	fclose(f);
	return ok;
}

bool ktest_pid_alive(int pid)
{
	char path[64], line[256];
	FILE *f;
	bool alive = false;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "State:", 6))
			alive = !strchr(line, 'Z') && !strchr(line, 'X');
	fclose(f);
	return alive;
}

/*
 * The helpers must be executable inside a `read` run, whose exec set is the
 * system directories: in the guest they are copied to /usr/local/bin/custode-NAME.
 */
static void install_helpers(const char *dir)
{
	char cmd[PATH_MAX * 2 + 64], src[PATH_MAX + 300];
	struct dirent *de;
	DIR *d;

	snprintf(helper_dir, sizeof(helper_dir), "%s", dir);
	snprintf(tprobe_path, sizeof(tprobe_path), "%s/tprobe", dir);
	if (!ktest_in_guest() || geteuid() != 0 || !(d = opendir(dir)))
		return;
	mkdir("/usr/local", 0755);
	mkdir("/usr/local/bin", 0755);
	/* every helper program built next to ktest (selftests/kernel/helpers/NAME.c) */
	while ((de = readdir(d))) {
		struct stat st;

		snprintf(src, sizeof(src), "%s/%s", dir, de->d_name);
		if (de->d_name[0] == '.' || stat(src, &st) != 0 || !S_ISREG(st.st_mode) || access(src, X_OK) != 0 ||
		    strchr(de->d_name, '\'') || !strcmp(de->d_name, "ktest") || !strcmp(de->d_name, "unit-tests"))
			continue;
		snprintf(cmd, sizeof(cmd), "cp '%s' '/usr/local/bin/custode-%s'", src, de->d_name);
		if (system(cmd) == 0 && !strcmp(de->d_name, "tprobe"))
			snprintf(tprobe_path, sizeof(tprobe_path), "/usr/local/bin/custode-tprobe");
	}
	closedir(d);
}

/*
 * The hang watchdog. A test that has not ended after ktest_slack(150 s) (10 min
 * by default, or $CUSTODE_KTEST_HANG_S seconds; the slowest test takes ~2 min
 * in a loaded guest) is stuck: say
 * where each of its processes sleeps in the kernel, kill them all, and report
 * it failed, so one stuck test costs its own 10 minutes, not the guest's whole
 * time limit and the report of every test after it.
 */
#define KTEST_MAX_PROCS 4096

/* The test's process and every process below it, by parent links in /proc. */
static int test_tree(pid_t root, pid_t *tree, int max)
{
	static pid_t pid[KTEST_MAX_PROCS], ppid[KTEST_MAX_PROCS];
	int n = 0, k = 0;
	struct dirent *de;
	DIR *d = opendir("/proc");

	if (!d)
		return 0;
	while ((de = readdir(d)) && n < KTEST_MAX_PROCS) {
		char path[64], buf[512], *rp;
		ssize_t len;
		int fd;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = 0;
		rp = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
		if (!rp || sscanf(rp + 1, " %*c %d", &ppid[n]) != 1)
			continue;
		pid[n++] = atoi(de->d_name);
	}
	closedir(d);
	tree[k++] = root;
	for (int i = 0; i < k && k < max; i++)
		for (int j = 0; j < n && k < max; j++)
			if (ppid[j] == tree[i] && pid[j] != root)
				tree[k++] = pid[j];
	return k;
}

static void print_file(const char *path, const char *prefix, int max_lines)
{
	char line[512];
	FILE *f = fopen(path, "re");

	if (!f)
		return;
	for (int i = 0; i < max_lines && fgets(line, sizeof(line), f); i++)
		printf("%s%s%s", prefix, line, strchr(line, '\n') ? "" : "\n");
	fclose(f);
}

static void hang_report_and_kill(pid_t root, double secs)
{
	static pid_t tree[KTEST_MAX_PROCS];
	int n = test_tree(root, tree, KTEST_MAX_PROCS);

	printf("# HUNG after %.0f s: %d process%s; where each sleeps:\n", secs, n, n == 1 ? "" : "es");
	for (int i = 0; i < n && i < 32; i++) {
		char path[64], comm[64] = "?", wchan[128] = "?";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/comm", tree[i]);
		if ((f = fopen(path, "re"))) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
		}
		snprintf(path, sizeof(path), "/proc/%d/wchan", tree[i]);
		if ((f = fopen(path, "re"))) {
			if (!fgets(wchan, sizeof(wchan), f))
				snprintf(wchan, sizeof(wchan), "?");
			fclose(f);
		}
		printf("#   pid %d (%s) wchan %s\n", tree[i], comm, wchan);
		snprintf(path, sizeof(path), "/proc/%d/stack", tree[i]);
		print_file(path, "#     ", 16);
	}
	/* stop them all first, so none forks or is reaped between the walk and the kill */
	for (int i = 0; i < n; i++)
		kill(tree[i], SIGSTOP);
	n = test_tree(root, tree, KTEST_MAX_PROCS);
	for (int i = n - 1; i >= 0; i--)
		kill(tree[i], SIGKILL);
	fflush(stdout);
}

/* Wait for the test's process; kill it (and report) once it is past the watchdog. */
static int wait_test(pid_t pid, const struct timespec *t0)
{
	const char *e = getenv("CUSTODE_KTEST_HANG_S");
	int limit_ms = e && atoi(e) > 0 && atoi(e) < 86400 ? atoi(e) * 1000 : ktest_slack(150000);
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0), st = 0;
	bool hung = false;

	for (;;) {
		struct timespec now;
		pid_t w = waitpid(pid, &st, WNOHANG);
		long waited;

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			printf("# waitpid(%d): %s\n", (int)pid, strerror(errno));
			st = 1 << 8; /* no status: a failure, never a pass */
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		waited = (now.tv_sec - t0->tv_sec) * 1000L + (now.tv_nsec - t0->tv_nsec) / 1000000L;
		if (hung && waited >= limit_ms + 60000L) {
			printf("# the hung test's process did not die in 60 s (stuck in the kernel); going on\n");
			break;
		}
		if (!hung && waited >= limit_ms) {
			hang_report_and_kill(pid, (double)waited / 1000);
			hung = true;
		}
		if (pfd >= 0) {
			struct pollfd p = { .fd = pfd, .events = POLLIN };

			poll(&p, 1, hung ? 1000 : (int)(limit_ms - waited));
		} else {
			usleep(100000); /* no pidfd_open (older than 5.3): look ten times a second */
		}
	}
	if (pfd >= 0)
		close(pfd);
	return hung ? -1 : st;
}

static void usage(void)
{
	fprintf(stderr, "usage: ktest [--require-all] [--list] [PATTERN...]\n"
			"  --require-all  a skipped test fails (the guest, where every kernel test must run)\n"
			"  PATTERN        fnmatch(3) patterns of test names to run\n");
}

int main(int argc, char **argv)
{
	char self[PATH_MAX], dir[PATH_MAX];
	bool require_all = false, list = false;
	char **patterns = NULL;
	int npat = 0, pass = 0, fail = 0, skip = 0, ran = 0;
	struct timespec t0, t1;
	double secs, total = 0;
	ssize_t n;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--require-all"))
			require_all = true;
		else if (!strcmp(argv[i], "--list"))
			list = true;
		else if (argv[i][0] == '-') {
			usage();
			return 2;
		} else {
			if (!patterns)
				patterns = &argv[i];
			npat++;
		}
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 2;
	self[n] = 0;
	snprintf(dir, sizeof(dir), "%s", self);
	*strrchr(dir, '/') = 0;
	snprintf(custode_path, sizeof(custode_path), "%s/../custode", dir);
	if (getenv("CUSTODE_BIN"))
		snprintf(custode_path, sizeof(custode_path), "%s", getenv("CUSTODE_BIN"));
	if (!list)
		install_helpers(dir);
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (!list)
		printf("TAP version 13\n"); /* --list prints the names alone: tools/test counts them */
	for (int i = 0; i < ntests; i++) {
		bool match = npat == 0, hung;
		int st, code;
		pid_t pid;

		for (int k = 0; k < npat && !match; k++)
			match = fnmatch(patterns[k], tests[i].name, 0) == 0;
		if (!match || (tests[i].native_only && ktest_in_guest()))
			continue;
		if (list) {
			printf("%s\n", tests[i].name);
			continue;
		}
		ran++;
		fflush(NULL);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		pid = fork();
		if (pid == 0) {
			tests[i].fn();
			fflush(NULL);
			_exit(failures ? 1 : 0);
		}
		st = wait_test(pid, &t0);
		hung = st == -1;
		code = hung ? 1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
		total += secs;
		printf("# %s: %.1f s\n", tests[i].name, secs);
		if (code == 0) {
			printf("ok %d - %s\n", ran, tests[i].name);
			pass++;
		} else if (code == EXIT_SKIP && !require_all) {
			printf("ok %d - %s # SKIP\n", ran, tests[i].name);
			skip++;
		} else {
			printf("not ok %d - %s%s\n", ran, tests[i].name,
			       hung			 ? " (hung: killed by the watchdog)"
			       : code == EXIT_SKIP ? " (skipped, but --require-all)"
						     : "");
			fail++;
		}
	}
	if (list)
		return 0;
	printf("1..%d\n# pass %d, fail %d, skip %d (%.0f s)\n", ran, pass, fail, skip, total);
	if (ran == 0)
		return 1;
	if (fail)
		return 1;
	return skip == ran ? 77 : 0;
}
