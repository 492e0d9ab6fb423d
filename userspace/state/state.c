// SPDX-License-Identifier: Apache-2.0
/* The state directory and a run's files in it (state.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "state/state.h"

void custode_run_id_format(__u64 id, char out[17])
{
	snprintf(out, 17, "%016" PRIx64, (uint64_t)id);
}

int custode_run_id_parse(const char *s, __u64 *id)
{
	__u64 v = 0;

	if (strncmp(s, "run-", 4) == 0)
		s += 4;
	if (strlen(s) != 16)
		return -EINVAL;
	for (int i = 0; i < 16; i++) {
		char c = s[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (d < 0)
			return -EINVAL;
		v = v << 4 | (__u64)d;
	}
	*id = v;
	return 0;
}

static const char *kind_suffix(enum custode_state_kind kind)
{
	switch (kind) {
	case CUSTODE_STATE_RUN:
		return "json";
	case CUSTODE_STATE_LOCK:
		return "lock";
	case CUSTODE_STATE_ATTACH:
		return "attach.json";
	case CUSTODE_STATE_NAMES:
		return "names.json";
	case CUSTODE_STATE_UNBOUND_WORKSPACE:
		return "unbound/workspace";
	case CUSTODE_STATE_UNBOUND_TMP:
		return "unbound/tmp";
	}
	return "invalid";
}

void custode_state_path(__u64 run_id, enum custode_state_kind kind, char *out, size_t len)
{
	char hex[17];

	custode_run_id_format(run_id, hex);
	snprintf(out, len, "%s/%s.%s", CUSTODE_RUNS_DIR, hex, kind_suffix(kind));
}

DIR *custode_state_list_open(void)
{
	return opendir(CUSTODE_RUNS_DIR);
}

bool custode_state_list_next(DIR *d, enum custode_state_kind kind, __u64 *run_id)
{
	const char *suffix = kind_suffix(kind);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		char hex[17];

		/* exactly "<16 hex digits>.<suffix>" */
		if (strlen(de->d_name) != 17 + strlen(suffix) || de->d_name[16] != '.' ||
		    strcmp(de->d_name + 17, suffix))
			continue;
		snprintf(hex, sizeof(hex), "%.16s", de->d_name);
		if (custode_run_id_parse(hex, run_id) == 0)
			return true;
	}
	return false;
}

/*
 * The run's lock file, opened (made if missing) and flock'ed. Opening and
 * locking are two steps: gc may lock the file between them, take the run for
 * one whose launcher died setting up, and unlink it; a lock then held on
 * the unlinked file would hide a live launcher from every later gc. So the
 * path must still name the locked file, else it is opened again.
 */
static int lock_open(__u64 run_id, int how)
{
	char path[PATH_MAX];

	custode_state_path(run_id, CUSTODE_STATE_LOCK, path, sizeof(path));
	for (int tries = 0; tries < 100; tries++) {
		struct stat held, named;
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600), err;

		if (fd < 0)
			return -errno;
		if (flock(fd, how) < 0) {
			err = -errno;
			close(fd);
			return err;
		}
		if (fstat(fd, &held) == 0 && stat(path, &named) == 0 && held.st_dev == named.st_dev &&
		    held.st_ino == named.st_ino)
			return fd;
		close(fd); /* unlinked (or replaced) under us: not the run's lock any more */
	}
	return -EAGAIN;
}

int custode_runlock_take(__u64 run_id)
{
	return lock_open(run_id, LOCK_EX | LOCK_NB);
}

int custode_runlock_try(__u64 run_id)
{
	return lock_open(run_id, LOCK_EX | LOCK_NB);
}

bool custode_runlock_held(__u64 run_id)
{
	char path[PATH_MAX];
	int fd;

	custode_state_path(run_id, CUSTODE_STATE_LOCK, path, sizeof(path));
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		close(fd);
		return false;
	}
	close(fd);
	return true;
}

bool custode_runlock_exists(__u64 run_id)
{
	char path[PATH_MAX];

	custode_state_path(run_id, CUSTODE_STATE_LOCK, path, sizeof(path));
	return access(path, F_OK) == 0;
}
