// SPDX-License-Identifier: Apache-2.0
/*
 * The engine's state in bpffs (engine_int.h): meta, the description of what
 * is pinned, and the removal of every pin, links first.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "engine/engine.h"
#include "engine/engine_int.h"
#include "engine/maps.h"

int engine_meta_read(int fd, struct custode_meta *m)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(fd, &zero, m) ? -errno : 0;
}

int engine_meta_write(int fd, const struct custode_meta *m)
{
	__u32 zero = 0;
	return bpf_map_update_elem(fd, &zero, m, BPF_ANY) ? -errno : 0;
}

static int unlink_dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int err = 0;

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		char path[PATH_MAX];
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (unlink(path) < 0 && errno != ENOENT && !err)
			err = -errno;
	}
	closedir(d);
	return err;
}

/* The ids of the programs behind the pinned links (as many as fit in ids[max]). */
static size_t pinned_prog_ids(__u32 *ids, size_t max)
{
	DIR *d = opendir(CUSTODE_PIN_LINKS);
	struct dirent *de;
	size_t n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max) {
		struct bpf_link_info info;
		__u32 len = sizeof(info);
		int fd;

		if (de->d_name[0] == '.')
			continue;
		fd = custode_link_open(de->d_name);
		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && info.prog_id)
			ids[n++] = info.prog_id;
		close(fd);
	}
	closedir(d);
	return n;
}

/*
 * Wait until none of these programs runs any more. Dropping a link's last
 * reference detaches it later, not at once (the bpffs inode is freed after
 * an RCU grace period, an LSM trampoline is rebuilt after an RCU tasks grace
 * period): measured on 6.12 under TCG, an unpinned file_open program kept
 * deciding for seconds, with maps the next engine no longer fills. A
 * program's id goes away only once it is detached and freed.
 */
#define UNPIN_WAIT_MS 60000

static int wait_progs_gone(const __u32 *ids, size_t n)
{
	for (int waited = 0;; waited += 10) {
		size_t alive = 0;

		for (size_t i = 0; i < n; i++) {
			int fd = bpf_prog_get_fd_by_id(ids[i]);

			if (fd >= 0) {
				close(fd);
				alive++;
			} else if (errno != ENOENT) {
				alive++; /* can't tell: keep waiting */
			}
		}
		if (!alive)
			return 0;
		if (waited >= UNPIN_WAIT_MS)
			return -ETIMEDOUT;
		usleep(10000);
	}
}

int engine_unpin_all(void)
{
	__u32 ids[256];
	size_t n = pinned_prog_ids(ids, sizeof(ids) / sizeof(ids[0]));
	int err = 0, r;

	/* Links first: their programs stop running before the maps go. */
	r = unlink_dir_entries(CUSTODE_PIN_LINKS);
	if (r)
		err = r;
	if ((r = wait_progs_gone(ids, n)) && !err)
		err = r;
	if (unlink(CUSTODE_PIN_META) < 0 && errno != ENOENT && !err)
		err = -errno;
	r = unlink_dir_entries(CUSTODE_PIN_MAPS);
	if (r && !err)
		err = r;
	return err;
}

void engine_rmdir_empty_pins(const char *root)
{
	static const char *const subdirs[] = {"links", "maps"};
	char path[PATH_MAX];

	for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", root, subdirs[i]);
		rmdir(path); /* ENOTEMPTY, ENOENT: kept, or not there */
	}
	rmdir(root);
}

void engine_clear_unrecorded(void)
{
	engine_unpin_all(); /* on failure, what stays is cleared by the next load's start_fresh */
	engine_rmdir_empty_pins(CUSTODE_PIN_ROOT);
}
