// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "custode/abi.h"
#include "engine/self.h"
#include "util/fsutil.h"

#define XSTR(x) STR(x)
#define STR(x) #x

/*
 * This binary's engine ABI marker (include/custode/abi.h): what the daemon
 * looks for in a binary before admitting it (engine/admit.c). Defined here,
 * in the object every loader links, so every custode binary carries it.
 */
__attribute__((used)) const char custode_abi_marker[] = CUSTODE_ABI_MARKER XSTR(CUSTODE_ABI_VERSION) "\n";

/* The value after "name:\t" on a line of an fdinfo text. */
static int fdinfo_field(const char *text, const char *name, unsigned long long *out)
{
	size_t n = strlen(name);

	for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		const char *v = line + n + 1;
		char *end;

		if (strncmp(line, name, n) || line[n] != ':')
			continue;
		while (*v == '\t' || *v == ' ')
			v++;
		/* digits on this line only: strtoull would skip newlines and take a sign */
		if (*v < '0' || *v > '9')
			return -EINVAL;
		errno = 0;
		*out = strtoull(v, &end, 10);
		if (errno || (*end && *end != '\n'))
			return -EINVAL;
		return 0;
	}
	return -ENOENT;
}

int custode_exe_identity_parse(const char *fdinfo, const char *mountinfo, __u64 *dev, __u64 *ino)
{
	unsigned long long mnt_id, i;
	int err;

	if ((err = fdinfo_field(fdinfo, "mnt_id", &mnt_id)) || (err = fdinfo_field(fdinfo, "ino", &i)))
		return err;
	/* mountinfo: "ID PARENT MAJOR:MINOR ROOT MOUNTPOINT ..." — MAJOR:MINOR is the superblock's s_dev */
	for (const char *line = mountinfo; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		unsigned long long id, parent;
		unsigned major, minor;
		int used = 0;

		/* the fields of this line only (sscanf's white space would match a newline) */
		if (*line < '0' || *line > '9' ||
		    sscanf(line, "%llu %llu %u:%u%n", &id, &parent, &major, &minor, &used) != 4 ||
		    memchr(line, '\n', (size_t)used) || id != mnt_id)
			continue;
		if (major >= (1u << 12) || minor >= (1u << 20))
			return -ERANGE;
		*dev = (__u64)major << 20 | minor;
		*ino = i;
		return 0;
	}
	return -ENOENT;
}

int custode_fd_identity(int fd, int mount_pid, __u64 *dev, __u64 *ino)
{
	char path[64], mi[64], *fdinfo = NULL, *mountinfo = NULL;
	int err;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	if (mount_pid > 0)
		snprintf(mi, sizeof(mi), "/proc/%d/mountinfo", mount_pid);
	else
		snprintf(mi, sizeof(mi), "/proc/self/mountinfo");
	err = custode_read_file(path, 1u << 16, &fdinfo, NULL);
	if (!err)
		err = custode_read_file(mi, 16u << 20, &mountinfo, NULL);
	if (!err)
		err = custode_exe_identity_parse(fdinfo, mountinfo, dev, ino);
	free(fdinfo);
	free(mountinfo);
	return err;
}

int custode_self_exe_identity(__u64 *dev, __u64 *ino)
{
	int fd, err;

	fd = open("/proc/self/exe", O_PATH | O_CLOEXEC); /* identity only: never an open of the file (enrich.c) */
	if (fd < 0)
		return -errno;
	err = custode_fd_identity(fd, 0, dev, ino);
	close(fd);
	return err;
}
