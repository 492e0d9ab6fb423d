// SPDX-License-Identifier: Apache-2.0
/*
 * Where a policy comes from: a built-in profile, a policy file, a named policy
 * among verified bundles, a bundle file (source.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <jansson.h>

#include "bundle/jcs.h"
#include "bundle/source.h"
#include "policy/profiles.h"
#include "util/fsutil.h"
#include "util/time.h"

/* sha256 of the JCS form of the document's content (what contentDigest means). */
void custode_policy_content_digest(const char *text, size_t len, char out[80])
{
	json_t *doc = json_loadb(text, len, 0, NULL);

	out[0] = 0;
	if (doc && custode_jcs_sha256(json_object_get(doc, "content"), out, NULL, 0) < 0)
		out[0] = 0;
	json_decref(doc);
}

/* A local policy file is trusted like a built-in only if nobody but root could have written it. */
static int read_policy_file(const char *path, char **text, size_t *len, struct custode_refusal *why)
{
	struct stat st;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st) < 0) {
		err = errno;
		if (fd >= 0)
			close(fd);
		return custode_refuse(why, err, CUSTODE_REASON_POLICY_INVALID, "--policy %s: %s", path, strerror(err));
	}
	close(fd);
	if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022))
		return custode_refuse(why, EPERM, CUSTODE_REASON_POLICY_FILE_UNSAFE,
				      "--policy %s: must be a regular file owned by root and writable only by root", path);
	err = custode_read_file(path, CUSTODE_POLICY_MAX_BYTES, text, len);
	if (err)
		return custode_refuse(why, -err, CUSTODE_REASON_POLICY_INVALID, "--policy %s: %s", path,
				      err == -EFBIG ? "too large" : strerror(-err));
	return 0;
}

int custode_source_file(const char *path, struct custode_resolved_policy *r, struct custode_refusal *why)
{
	char *text = NULL;
	size_t len = 0;
	int err;

	if ((err = read_policy_file(path, &text, &len, why)))
		return err;
	err = custode_policy_parse(text, len, &r->p, why);
	if (!err) {
		snprintf(r->source, sizeof(r->source), "file");
		snprintf(r->ref, sizeof(r->ref), "%s", path);
		custode_policy_content_digest(text, len, r->digest);
	}
	free(text);
	return err;
}

int custode_source_profile(const char *name, struct custode_resolved_policy *r, struct custode_refusal *why)
{
	const struct custode_builtin_profile *bp = custode_profile_find(name);
	int err;

	if (!bp)
		return custode_refuse(why, ENOENT, CUSTODE_REASON_POLICY_UNKNOWN_PROFILE,
				      "no built-in profile named '%s' (see `custode profiles`)", name);
	if ((err = custode_policy_parse(bp->text, bp->len, &r->p, why)))
		return err;
	snprintf(r->source, sizeof(r->source), "profile");
	snprintf(r->ref, sizeof(r->ref), "%s", bp->name);
	/* computed at build time: hashing here (and starting OpenSSL for it) was half the launcher's work */
	for (const struct custode_profile_digest *d = custode_profile_digests; d->name; d++)
		if (!strcmp(d->name, bp->name)) {
			snprintf(r->digest, sizeof(r->digest), "%s", d->digest);
			return 0;
		}
	custode_policy_content_digest(bp->text, bp->len, r->digest);
	return 0;
}

const char *custode_source_floor_dir(const struct custode_policy_source *src)
{
	return src->state_dir ? src->state_dir : CUSTODE_BUNDLE_STATE_DIR;
}

/* The highest version of a named policy among the verified bundles of dir (path and info out). */
int custode_source_find_named(const char *dir, const char *name, __u64 want_version,
			      const struct custode_policy_source *src, struct custode_policy **out,
			      struct custode_bundle_info *info, char *path_out, size_t path_len,
			      struct custode_refusal *why)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int64_t now = (int64_t)time(NULL);
	bool found = false;

	if (!d)
		return custode_refuse(why, errno, CUSTODE_REASON_POLICY_UNKNOWN_PROFILE, "bundles %s: %s", dir,
				      strerror(errno));
	while ((de = readdir(d))) {
		struct custode_refusal w = {0};
		struct custode_policy *p = NULL;
		struct custode_bundle_info i;
		char path[PATH_MAX];
		struct stat st;

		if (de->d_name[0] == '.') /* ".", "..", a ConfigMap's "..data" internals */
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (custode_bundle_verify_file(path, src->trust, now, &p, &i, &w) < 0)
			continue;
		if (strcmp(i.name, name) || (want_version != (__u64)-1 && i.version != want_version) ||
		    (found && i.version <= info->version) || custode_bundle_floor_check(custode_source_floor_dir(src), &i, &w) < 0) {
			custode_policy_free(p);
			continue;
		}
		if (found)
			custode_policy_free(*out);
		*out = p;
		*info = i;
		snprintf(path_out, path_len, "%s", path);
		found = true;
	}
	closedir(d);
	if (!found)
		return custode_refuse(why, ENOENT, CUSTODE_REASON_POLICY_UNKNOWN_PROFILE,
				      "no bundle in %s verifies as policy '%s'%s", dir, name,
				      want_version != (__u64)-1 ? " at that version" : "");
	return 0;
}

/* A bundle file verified and compared with its floor, which stays as it is. */
static int bundle_checked(const char *path, const struct custode_policy_source *src, struct custode_policy **out,
			  struct custode_bundle_info *info, struct custode_refusal *why)
{
	struct custode_policy *p = NULL;
	int err;

	if ((err = custode_bundle_verify_file(path, src->trust, (int64_t)time(NULL), &p, info, why)) ||
	    (err = custode_bundle_floor_check(custode_source_floor_dir(src), info, why))) {
		custode_policy_free(p);
		return err;
	}
	*out = p;
	return 0;
}

int custode_source_bundle(const char *path, const char *name, const struct custode_policy_source *src,
			  struct custode_resolved_policy *r, struct custode_bundle_info *info_out,
			  struct custode_refusal *why)
{
	struct custode_bundle_info info;
	int err;

	if (!src || !src->trust)
		return custode_refuse(why, EPERM, CUSTODE_REASON_BUNDLE_KEY,
				      "the daemon has no trusted keys (start it with --bundles DIR --trust KEY)");
	if (name) {
		if (!src->bundles_dir)
			return custode_refuse(why, ENOENT, CUSTODE_REASON_POLICY_UNKNOWN_PROFILE,
					      "the daemon watches no bundles (--bundles DIR) to find policy '%s' in", name);
		if ((err = custode_source_find_named(src->bundles_dir, name, (__u64)-1, src, &r->p, &info, r->ref, sizeof(r->ref), why)))
			return err;
		/* find_named compared it with the floor; accept raises it (with check_floor_only, the caller does) */
		if (!src->check_floor_only && (err = custode_bundle_accept(custode_source_floor_dir(src), &info, NULL, why))) {
			custode_policy_free(r->p);
			r->p = NULL;
			return err;
		}
	} else {
		if ((err = src->check_floor_only ? bundle_checked(path, src, &r->p, &info, why)
						 : custode_bundle_load(path, src->trust, (int64_t)time(NULL), src->state_dir,
								       &r->p, &info, why)))
			return err;
		if (!realpath(path, r->ref))
			snprintf(r->ref, sizeof(r->ref), "%s", path);
	}
	snprintf(r->source, sizeof(r->source), "bundle");
	snprintf(r->digest, sizeof(r->digest), "%s", info.digest);
	r->not_before = info.not_before;
	r->not_after = info.not_after;
	if (info_out)
		*info_out = info;
	return 0;
}

int custode_source_accept(const struct custode_policy_source *src, const struct custode_bundle_info *info,
			  struct custode_refusal *why)
{
	return custode_bundle_accept(custode_source_floor_dir(src), info, NULL, why);
}

int custode_bundle_window_json(json_t *o, int64_t not_before, int64_t not_after)
{
	char a[CUSTODE_TIME_LEN], b[CUSTODE_TIME_LEN];

	if (json_object_set_new(o, "not_before_time", json_string(custode_time_show_sec(not_before, a, sizeof(a)))) ||
	    json_object_set_new(o, "not_after_time", json_string(custode_time_show_sec(not_after, b, sizeof(b)))) ||
	    json_object_set_new(o, "not_before", json_integer(not_before)) ||
	    json_object_set_new(o, "not_after", json_integer(not_after)))
		return -ENOMEM;
	return 0;
}
