// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>

#include "cgroup/cgroup.h"
#include "util/fsutil.h"
#include "util/time.h"

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape_octal(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = 0;
}

int custode_cgroup2_mount_parse(const char *mountinfo, char *out, size_t outlen)
{
	char best[PATH_MAX] = "";
	const char *line = mountinfo;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char buf[PATH_MAX * 2], *fields[16], *sep, *save = NULL, *tok;
		int n = 0;

		if (len < sizeof(buf)) {
			memcpy(buf, line, len);
			buf[len] = 0;
			/* "id parent maj:min root mountpoint opts [optional...] - fstype source superopts" */
			sep = strstr(buf, " - ");
			if (sep) {
				*sep = 0;
				for (tok = strtok_r(buf, " ", &save); tok && n < 16; tok = strtok_r(NULL, " ", &save))
					fields[n++] = tok;
				tok = strtok_r(sep + 3, " ", &save);
				if (n >= 5 && tok && strcmp(tok, "cgroup2") == 0) {
					unescape_octal(fields[4]);
					if (!best[0] || strcmp(fields[4], "/sys/fs/cgroup") == 0)
						snprintf(best, sizeof(best), "%s", fields[4]);
				}
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	if (!best[0])
		return -ENOENT;
	if (strlen(best) >= outlen)
		return -ENAMETOOLONG;
	strcpy(out, best);
	return 0;
}

int custode_cgroup2_mount(char *out, size_t outlen)
{
	struct statfs fs;
	char *text = NULL;
	int err;

	/*
	 * The answer the parse prefers, without reading mountinfo (thousands of
	 * lines on a node with many containers): /sys/fs/cgroup when cgroup2 is
	 * mounted there. Hybrid hosts (cgroup2 elsewhere) read it.
	 */
	if (statfs("/sys/fs/cgroup", &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC) {
		if (outlen <= strlen("/sys/fs/cgroup"))
			return -ENAMETOOLONG;
		strcpy(out, "/sys/fs/cgroup");
		return 0;
	}
	err = custode_read_file("/proc/self/mountinfo", 16u << 20, &text, NULL);
	if (err)
		return err;
	err = custode_cgroup2_mount_parse(text, out, outlen);
	free(text);
	return err;
}

int custode_cgroup_root(const char *mount, char *out, size_t outlen)
{
	const char *env = getenv("CUSTODE_CGROUP_ROOT");
	size_t mlen = strlen(mount);
	int n;

	if (env && *env) {
		if (strncmp(env, mount, mlen) != 0 || env[mlen] != '/')
			return -EINVAL;
		for (const char *c = env + mlen; (c = strstr(c, "/..")); c += 3)
			if (c[3] == 0 || c[3] == '/')
				return -EINVAL; /* a ".." component, not a name like "..foo" */
		n = snprintf(out, outlen, "%s", env);
	} else {
		n = snprintf(out, outlen, "%s/custode", mount);
	}
	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

int custode_cgroup_level(const char *mount, const char *path)
{
	size_t mlen = strlen(mount);
	int level = 0;

	if (strncmp(path, mount, mlen) != 0 || (path[mlen] && path[mlen] != '/'))
		return -EINVAL;
	for (const char *p = path + mlen; *p; p++)
		if (*p == '/' && p[1] && p[1] != '/')
			level++;
	return level;
}

int custode_cgroup_of_pid(const char *mount, int pid, char *out, size_t outlen)
{
	char proc[64], *text = NULL;
	int err;

	if (pid)
		snprintf(proc, sizeof(proc), "/proc/%d/cgroup", pid);
	else
		snprintf(proc, sizeof(proc), "/proc/self/cgroup");
	if ((err = custode_read_file(proc, 1 << 16, &text, NULL)) < 0)
		return err;
	err = -ENOENT;
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		if (!strncmp(l, "0::", 3)) {
			err = snprintf(out, outlen, "%s%s", mount, strcmp(l + 3, "/") ? l + 3 : "") >= (int)outlen
				      ? -ENAMETOOLONG
				      : 0;
			break;
		}
	free(text);
	return err;
}

static bool pid_listed(const char *procs, pid_t pid)
{
	char *text = NULL;
	bool found = false;

	if (custode_read_file(procs, 1 << 24, &text, NULL) < 0)
		return false;
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && !found; l = strtok_r(NULL, "\n", &save))
		found = atoi(l) == pid;
	free(text);
	return found;
}

/* Does this process's cgroup, as /proc/self/cgroup and mount say, list it? */
static bool own_view_holds(const char *mount)
{
	char own[PATH_MAX], procs[PATH_MAX + 16];

	if (custode_cgroup_of_pid(mount, 0, own, sizeof(own)) < 0)
		return false;
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", own);
	return pid_listed(procs, getpid());
}

int custode_cgroupns_host(const char *mount)
{
	int fd, err = 0;

	if (own_view_holds(mount))
		return 0;
	/* a cgroup namespace whose root is not the mount's (a container's own, the host's cgroup2 bind-mounted) */
	if ((fd = open("/proc/1/ns/cgroup", O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	if (setns(fd, CLONE_NEWCGROUP) < 0)
		err = -errno;
	close(fd);
	if (err)
		return err;
	return own_view_holds(mount) ? 0 : -ENXIO;
}

int custode_cgroup_id(const char *path, __u64 *id)
{
	struct {
		struct file_handle fh;
		__u64 id;
	} h;
	int mount_id;

	h.fh.handle_bytes = sizeof(h.id);
	if (name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, 0) < 0)
		return -errno;
	if (h.fh.handle_bytes != sizeof(__u64))
		return -EINVAL;
	memcpy(id, h.fh.f_handle, sizeof(*id));
	return 0;
}

/* Is `c` a whole word of the space-separated list `list`? */
static bool has_word(const char *list, const char *c)
{
	size_t clen = strlen(c);

	for (const char *hit = list; (hit = strstr(hit, c)); hit += clen)
		if ((hit == list || hit[-1] == ' ') && (hit[clen] == 0 || hit[clen] == ' ' || hit[clen] == '\n'))
			return true;
	return false;
}

int custode_cgroup_enable_controllers(const char *path, const char *wanted)
{
	char file[PATH_MAX], *avail = NULL, *on = NULL, req[256] = "";
	char want[256], *save = NULL;
	int err;

	snprintf(file, sizeof(file), "%s/cgroup.controllers", path);
	err = custode_read_file(file, 4096, &avail, NULL);
	if (err)
		return err;
	/* what is on already is not asked again: a write takes the kernel's cgroup_mutex */
	snprintf(file, sizeof(file), "%s/cgroup.subtree_control", path);
	if (custode_read_file(file, 4096, &on, NULL) < 0)
		on = NULL;
	snprintf(want, sizeof(want), "%s", wanted);
	for (char *c = strtok_r(want, " ", &save); c; c = strtok_r(NULL, " ", &save)) {
		char pat[64];

		if (!has_word(avail, c) || (on && has_word(on, c)))
			continue;
		snprintf(pat, sizeof(pat), "%s+%s", req[0] ? " " : "", c);
		strncat(req, pat, sizeof(req) - strlen(req) - 1);
	}
	free(avail);
	free(on);
	if (!req[0])
		return 0;
	return custode_write_str(file, req);
}

static int kill_procs_fallback(const char *path)
{
	char file[PATH_MAX], *procs = NULL;
	int err;

	snprintf(file, sizeof(file), "%s/cgroup.procs", path);
	err = custode_read_file(file, 16u << 20, &procs, NULL);
	if (err)
		return err;
	for (char *p = procs; *p;) {
		long pid = strtol(p, &p, 10);
		if (pid > 0)
			kill((pid_t)pid, SIGKILL);
		while (*p == '\n')
			p++;
	}
	free(procs);
	return 0;
}

int custode_cgroup_kill(const char *path)
{
	char file[PATH_MAX];
	int err;

	snprintf(file, sizeof(file), "%s/cgroup.kill", path);
	err = custode_write_str(file, "1");
	if (err != -ENOENT)
		return err;
	/* Before 5.14: freeze, kill every process, thaw (child cgroups: see remove). */
	snprintf(file, sizeof(file), "%s/cgroup.freeze", path);
	custode_write_str(file, "1");
	err = kill_procs_fallback(path);
	custode_write_str(file, "0");
	return err;
}

static int populated(const char *path)
{
	char file[PATH_MAX], *text = NULL, *p;
	int ret;

	snprintf(file, sizeof(file), "%s/cgroup.events", path);
	ret = custode_read_file(file, 4096, &text, NULL);
	if (ret)
		return ret;
	p = strstr(text, "populated ");
	ret = p ? p[10] == '1' : -EINVAL;
	free(text);
	return ret;
}

int custode_cgroup_wait_empty(const char *path, int timeout_ms)
{
	char file[PATH_MAX];
	long long deadline = custode_mono_ms() + timeout_ms;
	int fd, r;

	snprintf(file, sizeof(file), "%s/cgroup.events", path);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLPRI};
		long long left;

		r = populated(path);
		if (r <= 0)
			break;
		left = deadline - custode_mono_ms();
		if (left <= 0) {
			r = -ETIMEDOUT;
			break;
		}
		/* cgroup.events signals changes with POLLPRI; re-check at least every 50 ms. */
		poll(&pfd, 1, left < 50 ? (int)left : 50);
	}
	close(fd);
	return r < 0 ? r : 0;
}

static int remove_tree(const char *path, int depth)
{
	DIR *d;
	struct dirent *de;
	int err = 0;

	if (depth > 64)
		return -ELOOP;
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		char child[PATH_MAX];

		if (de->d_type != DT_DIR || !strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (snprintf(child, sizeof(child), "%s/%s", path, de->d_name) >= (int)sizeof(child)) {
			err = -ENAMETOOLONG;
			continue;
		}
		int r = remove_tree(child, depth + 1);
		if (r && !err)
			err = r;
	}
	closedir(d);
	if (rmdir(path) < 0 && errno != ENOENT && !err)
		err = -errno;
	return err;
}

int custode_cgroup_remove(const char *path)
{
	return remove_tree(path, 0);
}

int custode_cgroup_move(const char *path, int pid)
{
	char file[PATH_MAX], buf[32];

	snprintf(file, sizeof(file), "%s/cgroup.procs", path);
	snprintf(buf, sizeof(buf), "%d", pid);
	return custode_write_str(file, buf);
}

int custode_cgroup_path_by_id(const char *mount, __u64 id, char *out, size_t len)
{
	struct {
		struct file_handle fh;
		__u64 id;
	} h;
	char link[64];
	ssize_t n;
	int mfd, fd, err = 0;

	memset(&h, 0, sizeof(h));
	h.fh.handle_bytes = sizeof(__u64);
	h.fh.handle_type = 0xfe; /* FILEID_KERNFS: cgroup2 exports the kernfs node id */
	memcpy(h.fh.f_handle, &id, sizeof(id));
	mfd = open(mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (mfd < 0)
		return -errno;
	fd = open_by_handle_at(mfd, &h.fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		err = errno == ESTALE ? -ENOENT : -errno;
		close(mfd);
		return err;
	}
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, out, len - 1);
	if (n <= 0)
		err = n < 0 ? -errno : -ENOENT;
	else
		out[n] = 0;
	close(fd);
	close(mfd);
	return err;
}
