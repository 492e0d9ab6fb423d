// SPDX-License-Identifier: Apache-2.0
/*
 * What a reader of the stream adds to a record: the run's policy name (the
 * kernel records the version only) and the executable's path. The kernel
 * records the executable by identity (superblock dev, inode: direct loads in
 * every hook, no d_path per event); the path is read here from /proc/TGID/exe
 * and kept only if that file is the one the kernel recorded.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/self.h"
#include "events/events.h"
#include "state/runstate.h"
#include "util/fsutil.h"

/*
 * Direct-mapped caches, not tables (util/table.h): one slot per hash, a new
 * key overwrites whatever held it, and a miss costs only a re-read (the
 * run's state file, /proc/TGID/exe). Memory stays fixed and nothing is ever
 * refused or deleted: a table's grow or refuse-when-full is not wanted here.
 */
#define POLICY_SLOTS 1024
#define EXE_SLOTS 256
#define NEGATIVE_SECONDS 5

struct policy_slot {
	__u64 run_id;
	char name[128]; /* "" : not known (negative entry until retry) */
	time_t retry;
	bool used;
};

struct exe_slot {
	int tgid;
	__u64 dev, ino;
	char path[PATH_MAX];
	bool used, ok;
};

struct custode_event_enricher {
	struct policy_slot pol[POLICY_SLOTS];
	struct exe_slot exe[EXE_SLOTS];
};

struct custode_event_enricher *custode_event_enricher_new(void)
{
	return calloc(1, sizeof(struct custode_event_enricher));
}

void custode_event_enricher_free(struct custode_event_enricher *en)
{
	free(en);
}

static struct policy_slot *policy_slot(struct custode_event_enricher *en, __u64 run_id)
{
	return &en->pol[(run_id ^ (run_id >> 29)) % POLICY_SLOTS];
}

void custode_event_enricher_set_policy(struct custode_event_enricher *en, __u64 run_id, const char *name)
{
	struct policy_slot *s;

	if (!en || !name)
		return;
	s = policy_slot(en, run_id);
	s->used = true;
	s->run_id = run_id;
	snprintf(s->name, sizeof(s->name), "%s", name);
}

static const char *policy_name(struct custode_event_enricher *en, __u64 run_id)
{
	struct policy_slot *s = policy_slot(en, run_id);
	struct custode_runstate *st;
	time_t now = time(NULL);

	if (s->used && s->run_id == run_id && (s->name[0] || now < s->retry))
		return s->name[0] ? s->name : NULL;
	st = malloc(sizeof(*st));
	if (!st)
		return NULL;
	s->used = true;
	s->run_id = run_id;
	s->name[0] = 0;
	s->retry = now + NEGATIVE_SECONDS;
	if (custode_runstate_read(run_id, st) == 0)
		snprintf(s->name, sizeof(s->name), "%s", st->policy);
	free(st);
	return s->name[0] ? s->name : NULL;
}

int custode_proc_exe(int pid, __u64 *dev, __u64 *ino, char *path, size_t len)
{
	char p[64], *fdinfo = NULL, *mountinfo = NULL, link[PATH_MAX];
	ssize_t n;
	int fd, err;

	snprintf(p, sizeof(p), "/proc/%d/exe", pid);
	/*
	 * O_PATH: a reference to the file, never an open of it (no ->open, no
	 * fsnotify open event). An open for reading would go to the file
	 * system: one served by a process (FUSE, possibly the very one we
	 * report on) or a dead hard NFS mount could hold the event loop there
	 * for good. The fd's link and fdinfo (mnt_id, ino) are all we use, and
	 * the kernel gives both for an O_PATH fd.
	 */
	fd = open(p, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* the path of the file this fd holds: no race with an exec in between */
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	n = readlink(p, link, sizeof(link) - 1);
	if (n <= 0) {
		err = n < 0 ? -errno : -ENOENT;
		goto out;
	}
	link[n] = 0;
	snprintf(p, sizeof(p), "/proc/self/fdinfo/%d", fd);
	err = custode_read_file(p, 1u << 16, &fdinfo, NULL);
	if (!err) {
		snprintf(p, sizeof(p), "/proc/%d/mountinfo", pid);
		err = custode_read_file(p, 16u << 20, &mountinfo, NULL);
	}
	if (!err)
		err = custode_exe_identity_parse(fdinfo, mountinfo, dev, ino);
	if (!err) {
		if ((size_t)n >= len)
			err = -ENAMETOOLONG;
		else
			memcpy(path, link, (size_t)n + 1);
	}
out:
	free(fdinfo);
	free(mountinfo);
	close(fd);
	return err;
}

static const char *exe_path(struct custode_event_enricher *en, int tgid, __u64 dev, __u64 ino)
{
	struct exe_slot *s = &en->exe[((unsigned)tgid * 2654435761u ^ (unsigned)ino) % EXE_SLOTS];
	__u64 d = 0, i = 0;

	if (s->used && s->tgid == tgid && s->dev == dev && s->ino == ino)
		return s->ok ? s->path : NULL;
	s->used = true;
	s->tgid = tgid;
	s->dev = dev;
	s->ino = ino;
	s->ok = custode_proc_exe(tgid, &d, &i, s->path, sizeof(s->path)) == 0 && d == dev && i == ino;
	return s->ok ? s->path : NULL;
}

void custode_event_enrich(struct custode_event_enricher *en, json_t *ev)
{
	const char *rid = json_string_value(json_object_get(ev, "run_id"));
	json_t *pol = json_object_get(ev, "policy"), *exe = json_object_get(ev, "exe");
	__u64 run_id;

	if (!en)
		return;
	if (json_is_object(pol) && !json_object_get(pol, "name") && rid && custode_run_id_parse(rid, &run_id) == 0 &&
	    run_id) {
		const char *name = policy_name(en, run_id);
		if (name)
			json_object_set_new(pol, "name", json_string(name));
	}
	if (json_is_object(exe) && !json_object_get(exe, "path")) {
		json_int_t tgid = json_integer_value(json_object_get(ev, "tgid"));
		const char *path = tgid > 0 ? exe_path(en, (int)tgid, (__u64)json_integer_value(json_object_get(exe, "dev")),
						       (__u64)json_integer_value(json_object_get(exe, "ino")))
					    : NULL;
		if (path)
			json_object_set_new(exe, "path", json_string(path));
	}
}
