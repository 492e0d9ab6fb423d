// SPDX-License-Identifier: Apache-2.0
/*
 * Version floors: <state_dir>/<name>.json per policy name, where '/' in the
 * name is written '%' (policy names are [a-z0-9._/-]{1,128}, so the mapping
 * is one-to-one, never yields "." or "..", and stays far below NAME_MAX).
 *
 *   {"schema":"custode.bundle-floor/v1","name":"agents/default","version":7,
 *    "digest":"sha256:...","acceptedAt":"2026-12-01T00:00:00Z"}
 *
 * A floor file that is unreadable, malformed, of another schema, for another
 * name, or a symlink is refused (bundle.state) and never reset: resetting
 * would re-open every rolled-back version. So is a state directory that
 * someone other than its owner (root or us) could write.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <jansson.h>

#include "bundle/bundle.h"
#include "util/time.h"
#include "util/fsutil.h"

#define FLOOR_SCHEMA "custode.bundle-floor/v1"
#define FLOOR_MAX_BYTES 4096
#define STATE(why, err, ...) custode_refuse(why, err, CUSTODE_REASON_BUNDLE_STATE, __VA_ARGS__)

static bool valid_digest(const char *d)
{
	if (strncmp(d, "sha256:", 7) || strlen(d) != 71)
		return false;
	for (d += 7; *d; d++)
		if (!isdigit((unsigned char)*d) && !(*d >= 'a' && *d <= 'f'))
			return false;
	return true;
}

static int floor_file_name(const char *name, char *buf, size_t len)
{
	size_t n = strlen(name);

	if (!custode_policy_name_valid(name) || n + sizeof(".json") > len)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		buf[i] = name[i] == '/' ? '%' : name[i];
	memcpy(buf + n, ".json", sizeof(".json"));
	return 0;
}

/*
 * Open state_dir (creating it 0700 when create). 1 when it does not exist and
 * !create. Refuses a directory that is not ours or root's, or that group or
 * others may write: whoever can write it can delete a floor.
 */
static int open_dir(const char *dir, bool create, int *dfd, struct custode_refusal *why)
{
	struct stat st;
	int fd, err;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		if (!create)
			return 1;
		if ((err = custode_mkdir_p(dir, 0700)))
			return STATE(why, -err, "state directory %s: cannot create: %s", dir, strerror(-err));
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0)
		return STATE(why, errno, "state directory %s: %s", dir, strerror(errno));
	if (fstat(fd, &st) < 0) {
		err = errno;
		close(fd);
		return STATE(why, err, "state directory %s: %s", dir, strerror(err));
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		close(fd);
		return STATE(why, EPERM, "state directory %s: owned by uid %u, not by root or uid %u", dir,
			     (unsigned)st.st_uid, (unsigned)geteuid());
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		close(fd);
		return STATE(why, EPERM, "state directory %s: writable by group or others (mode %04o)", dir,
			     (unsigned)(st.st_mode & 07777));
	}
	*dfd = fd;
	return 0;
}

/* 0 and *out, 1 when no floor file, or bundle.state. */
static int read_floor(int dfd, const char *dir, const char *fname, const char *name, struct custode_bundle_floor *out,
		      struct custode_refusal *why)
{
	static const char *const fields[] = {"schema", "name", "version", "digest", "acceptedAt", NULL};
	char buf[FLOOR_MAX_BYTES + 1];
	size_t len = 0;
	struct stat st;
	json_error_t jerr;
	json_t *doc, *v;
	const char *key;
	int fd, err = 0;

	fd = openat(dfd, fname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT)
		return 1;
	if (fd < 0)
		return STATE(why, errno, "%s/%s: %s%s", dir, fname, strerror(errno),
			     errno == ELOOP ? " (a symlink; refusing it)" : "");
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return STATE(why, EINVAL, "%s/%s: not a regular file", dir, fname);
	}
	while (len < sizeof(buf)) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			close(fd);
			return STATE(why, err, "%s/%s: %s", dir, fname, strerror(err));
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (len > FLOOR_MAX_BYTES)
		return STATE(why, EFBIG, "%s/%s: corrupt: larger than %d bytes", dir, fname, FLOOR_MAX_BYTES);
	doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc)
		return STATE(why, EBADMSG, "%s/%s: corrupt: %s", dir, fname, jerr.text);
#define CORRUPT(...)                                                                                          \
	do {                                                                                                 \
		err = STATE(why, EBADMSG, "%s/%s: corrupt: " __VA_ARGS__);                                    \
		goto out;                                                                                    \
	} while (0)
	if (!json_is_object(doc))
		CORRUPT("not an object", dir, fname);
	json_object_foreach(doc, key, v) {
		bool known = false;
		for (const char *const *f = fields; *f; f++)
			known |= !strcmp(key, *f);
		if (!known)
			CORRUPT("unknown field \"%.40s\"", dir, fname, key);
	}
	v = json_object_get(doc, "schema");
	if (!json_is_string(v) || strcmp(json_string_value(v), FLOOR_SCHEMA))
		CORRUPT("schema is not %s", dir, fname, FLOOR_SCHEMA);
	v = json_object_get(doc, "name");
	if (!json_is_string(v) || strcmp(json_string_value(v), name))
		CORRUPT("it records another policy name than \"%s\"", dir, fname, name);
	v = json_object_get(doc, "version");
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		CORRUPT("version is not an integer >= 0", dir, fname);
	out->version = (uint64_t)json_integer_value(v);
	v = json_object_get(doc, "digest");
	if (!json_is_string(v) || !valid_digest(json_string_value(v)))
		CORRUPT("digest is not sha256:<64 hex>", dir, fname);
	snprintf(out->digest, sizeof(out->digest), "%s", json_string_value(v));
	v = json_object_get(doc, "acceptedAt");
	if (!json_is_string(v) || custode_time_parse(json_string_value(v), 0, &out->accepted_at, NULL) < 0)
		CORRUPT("acceptedAt is not an RFC 3339 UTC time", dir, fname);
	snprintf(out->name, sizeof(out->name), "%s", name);
#undef CORRUPT
out:
	json_decref(doc);
	return err;
}

int custode_bundle_floor_get(const char *state_dir, const char *name, struct custode_bundle_floor *out,
			     struct custode_refusal *why)
{
	struct custode_bundle_floor f = {0};
	char fname[CUSTODE_POLICY_MAX_NAME + 8];
	int dfd, r;

	if (floor_file_name(name, fname, sizeof(fname)) < 0)
		return STATE(why, EINVAL, "policy name \"%.*s\" is not valid", CUSTODE_POLICY_MAX_NAME, name);
	if ((r = open_dir(state_dir, false, &dfd, why)))
		return r;
	r = read_floor(dfd, state_dir, fname, name, &f, why);
	close(dfd);
	if (r == 0)
		*out = f;
	return r;
}

/* bundle.rollback when info may not replace floor f; 0 when it may (equal: *same). */
static int compare(const struct custode_bundle_floor *f, const struct custode_bundle_info *info, bool *same,
		   struct custode_refusal *why)
{
	char ts[32];

	*same = false;
	if (info->version < f->version)
		return custode_refuse(why, EKEYREVOKED, CUSTODE_REASON_BUNDLE_ROLLBACK,
				      "%s version %llu is below the accepted floor %llu (accepted %s)", info->name,
				      (unsigned long long)info->version, (unsigned long long)f->version,
				      custode_time_show_sec(f->accepted_at, ts, sizeof(ts)));
	if (info->version == f->version) {
		if (strcmp(info->digest, f->digest))
			return custode_refuse(why, EKEYREVOKED, CUSTODE_REASON_BUNDLE_ROLLBACK,
					      "%s version %llu was accepted with content %s; this bundle has %s: "
					      "a changed policy needs a new version",
					      info->name, (unsigned long long)info->version, f->digest, info->digest);
		*same = true;
	}
	return 0;
}

static int check_info(const struct custode_bundle_info *info, struct custode_refusal *why)
{
	if (!custode_policy_name_valid(info->name) || !valid_digest(info->digest))
		return STATE(why, EINVAL, "not a verified bundle (name or digest missing)");
	if (info->version > (uint64_t)INT64_MAX)
		return STATE(why, ERANGE, "version out of range");
	return 0;
}

int custode_bundle_floor_check(const char *state_dir, const struct custode_bundle_info *info,
			       struct custode_refusal *why)
{
	struct custode_bundle_floor f;
	bool same;
	int r;

	if ((r = check_info(info, why)))
		return r;
	r = custode_bundle_floor_get(state_dir, info->name, &f, why);
	if (r == 1)
		return 0;
	if (r)
		return r;
	return compare(&f, info, &same, why);
}

int custode_bundle_accept(const char *state_dir, const struct custode_bundle_info *info, bool *raised,
			  struct custode_refusal *why)
{
	struct custode_bundle_floor f = {0};
	char fname[CUSTODE_POLICY_MAX_NAME + 8], path[PATH_MAX], ts[32];
	char *text = NULL;
	bool same = false;
	int dfd, lock = -1, r;
	json_t *doc = NULL;

	if ((r = check_info(info, why)))
		return r;
	if (floor_file_name(info->name, fname, sizeof(fname)) < 0)
		return STATE(why, EINVAL, "policy name is not valid");
	if (snprintf(path, sizeof(path), "%s/%s", state_dir, fname) >= (int)sizeof(path))
		return STATE(why, ENAMETOOLONG, "%s: path too long", state_dir);
	if ((r = open_dir(state_dir, true, &dfd, why)))
		return r;
	/* Check and write under one lock: two acceptors must not both pass the check. */
	lock = openat(dfd, ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lock < 0 || flock(lock, LOCK_EX) < 0) {
		r = STATE(why, errno, "%s/.lock: %s", state_dir, strerror(errno));
		goto out;
	}
	r = read_floor(dfd, state_dir, fname, info->name, &f, why);
	if (r < 0)
		goto out;
	if (r == 0 && (r = compare(&f, info, &same, why)))
		goto out;
	if (same) {
		if (raised)
			*raised = false;
		r = 0;
		goto out;
	}
	doc = json_pack("{s:s, s:s, s:I, s:s, s:s}", "schema", FLOOR_SCHEMA, "name", info->name, "version",
			(json_int_t)info->version, "digest", info->digest, "acceptedAt",
			custode_time_format(info->verified_at, ts, sizeof(ts)));
	text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	if (!text) {
		r = STATE(why, ENOMEM, "out of memory");
		goto out;
	}
	{
		size_t n = strlen(text);
		char *nt = realloc(text, n + 2);
		if (!nt) {
			r = STATE(why, ENOMEM, "out of memory");
			goto out;
		}
		text = nt;
		memcpy(text + n, "\n", 2);
	}
	/* temp file, fsync, rename, fsync dir: the floor is durable before anyone applies the policy */
	if ((r = custode_write_file_atomic(path, text, strlen(text), 0600))) {
		r = STATE(why, -r, "%s: cannot write: %s", path, strerror(-r));
		goto out;
	}
	if (raised)
		*raised = true;
	r = 0;
out:
	free(text);
	json_decref(doc);
	if (lock >= 0)
		close(lock);
	close(dfd);
	return r;
}
