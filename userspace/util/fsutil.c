// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/stat.h>

#include "util/fsutil.h"

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int write_atomic(const char *path, const void *data, size_t len, mode_t mode, bool durable)
{
	char tmp[PATH_MAX], dir[PATH_MAX];
	char *slash;
	int fd, err, dfd;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, mode) < 0 || (err = write_all(fd, data, len)) < 0 || (durable && fsync(fd) < 0)) {
		err = errno ? -errno : -EIO;
		close(fd);
		unlink(tmp);
		return err;
	}
	if (close(fd) < 0 || rename(tmp, path) < 0) {
		err = -errno;
		unlink(tmp);
		return err;
	}
	if (!durable)
		return 0;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash) {
		*(slash == dir ? slash + 1 : slash) = 0;
		dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
	}
	return 0;
}

int custode_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	return write_atomic(path, data, len, mode, true);
}

int custode_write_file_volatile(const char *path, const void *data, size_t len, mode_t mode)
{
	return write_atomic(path, data, len, mode, false);
}

int custode_read_file(const char *path, size_t max, char **out, size_t *lenp)
{
	size_t cap = 4096, len = 0;
	char *buf, *nbuf;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(cap + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			if (cap >= max) {
				/* full at the limit: fine only if the file ends here */
				char probe;
				ssize_t m = read(fd, &probe, 1);
				if (m < 0 && errno == EINTR)
					continue;
				if (m == 0)
					break;
				err = m < 0 ? -errno : -EFBIG;
				goto fail;
			}
			cap = cap * 2 > max ? max : cap * 2;
			nbuf = realloc(buf, cap + 1);
			if (!nbuf) {
				err = -ENOMEM;
				goto fail;
			}
			buf = nbuf;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto fail;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			err = -EFBIG;
			goto fail;
		}
	}
	close(fd);
	buf[len] = 0;
	*out = buf;
	if (lenp)
		*lenp = len;
	return 0;
fail:
	close(fd);
	free(buf);
	return err;
}

int custode_write_str(const char *path, const char *s)
{
	int fd, err = 0;
	ssize_t n;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	if (n < 0)
		err = -errno;
	else if ((size_t)n != strlen(s))
		err = -EIO;
	close(fd);
	return err;
}

int custode_mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0) {
		struct stat st;
		if (errno != EEXIST)
			return -errno;
		if (stat(buf, &st) < 0)
			return -errno;
		if (!S_ISDIR(st.st_mode))
			return -ENOTDIR;
	}
	return 0;
}

static int rm_rf_at(int dfd, const char *name, int depth)
{
	struct stat st;
	int fd, err = 0;
	DIR *d;
	struct dirent *de;

	if (depth > 256)
		return -ELOOP;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		err = -errno;
		close(fd);
		return err;
	}
	while ((de = readdir(d))) {
		int r;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		r = rm_rf_at(fd, de->d_name, depth + 1);
		if (r < 0 && !err)
			err = r;
	}
	closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT && !err)
		err = -errno;
	return err;
}

int custode_rm_rf(const char *path)
{
	return rm_rf_at(AT_FDCWD, path, 0);
}
