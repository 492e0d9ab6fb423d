// SPDX-License-Identifier: Apache-2.0
/* Admitting a new custode binary to a pinned engine (admit.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <bpf/bpf.h>

#include "custode/abi.h"
#include "engine/admit.h"
#include "engine/maps.h"
#include "engine/self.h"
#include "util/time.h"

#define ADMIT_MAX_BYTES (1ull << 30)

int custode_binary_abi_parse(const void *buf, size_t len, unsigned *abi)
{
	static const char marker[] = CUSTODE_ABI_MARKER;
	const size_t mlen = sizeof(marker) - 1;
	const char *p = buf, *end = p + len;
	bool found = false;
	unsigned seen = 0;

	while ((p = memmem(p, (size_t)(end - p), marker, mlen))) {
		const char *d = p + mlen;
		unsigned v = 0;
		int digits = 0;

		p += mlen;
		/* up to 9 digits then a newline: anything else is the pattern itself (the search string), skipped */
		while (d < end && *d >= '0' && *d <= '9' && digits < 9) {
			v = v * 10 + (unsigned)(*d - '0');
			d++;
			digits++;
		}
		if (!digits || d >= end || *d != '\n')
			continue;
		if (found && v != seen)
			return -EINVAL;
		found = true;
		seen = v;
	}
	if (!found)
		return -ENOENT;
	*abi = seen;
	return 0;
}

int custode_admit_check(int fd, unsigned engine_abi, unsigned *abi, struct custode_refusal *why)
{
	struct stat st;
	void *map;
	int err;

	if (fstat(fd, &st) < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_ENGINE_ADMIT_REFUSED, "fstat: %s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		return custode_refuse(why, EINVAL, CUSTODE_REASON_ENGINE_ADMIT_REFUSED, "not a regular file");
	if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))
		return custode_refuse(why, EPERM, CUSTODE_REASON_ENGINE_ADMIT_REFUSED,
				      "the file must be owned by root and writable by no one else (uid %u, mode %04o)",
				      (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	if (st.st_size <= 0 || (unsigned long long)st.st_size > ADMIT_MAX_BYTES)
		return custode_refuse(why, EFBIG, CUSTODE_REASON_ENGINE_ADMIT_REFUSED,
				      "not a custode binary (size %lld)", (long long)st.st_size);
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return custode_refuse(why, errno, CUSTODE_REASON_ENGINE_ADMIT_REFUSED, "mmap: %s", strerror(errno));
	err = custode_binary_abi_parse(map, (size_t)st.st_size, abi);
	munmap(map, (size_t)st.st_size);
	if (err == -ENOENT)
		return custode_refuse(why, EPERM, CUSTODE_REASON_ENGINE_ADMIT_REFUSED,
				      "not a custode binary (no engine ABI marker)");
	if (err)
		return custode_refuse(why, EINVAL, CUSTODE_REASON_ENGINE_ADMIT_REFUSED,
				      "not a custode binary (its ABI markers disagree)");
	if (*abi != engine_abi)
		return custode_refuse(why, EPROTO, CUSTODE_REASON_ENGINE_ABI_DIFFERS,
				      "the binary is of engine ABI %u, the pinned engine of ABI %u: it can take over "
				      "only once no run is registered (docs/process.md, \"Upgrades\")",
				      *abi, engine_abi);
	return 0;
}

int custode_engine_admit_fd(int fd, int mount_pid, unsigned engine_abi, int by, json_t **out,
			    struct custode_refusal *why)
{
	struct custode_exe_key key = {0}, self = {0};
	struct custode_admission val = {0}, cur;
	unsigned abi = 0;
	bool already = false;
	int map, err;

	if ((err = custode_admit_check(fd, engine_abi, &abi, why)))
		return err;
	if ((err = custode_fd_identity(fd, mount_pid, &key.dev, &key.ino)))
		return custode_refuse(why, -err, CUSTODE_REASON_ENGINE_ADMIT_REFUSED,
				      "the executable's identity (fdinfo, mountinfo): %s", strerror(-err));
	map = custode_map_open(CUSTODE_MAP_ADMITTED);
	if (map < 0 && errno == ENOENT) {
		/* no process class: the engine is reserved to no binary, any custode binary opens it */
		if (out)
			*out = json_pack("{s:I, s:I, s:i, s:b, s:b}", "dev", (json_int_t)key.dev, "ino",
					 (json_int_t)key.ino, "abi_version", (int)abi, "already", 1, "reserved", 0);
		return 1;
	}
	if (map < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_ENGINE_PROTECTED, "%s: %s",
				      custode_map_name(CUSTODE_MAP_ADMITTED), strerror(errno));
	if (custode_self_exe_identity(&self.dev, &self.ino) == 0 && self.dev == key.dev && self.ino == key.ino)
		already = true;
	else if (bpf_map_lookup_elem(map, &key, &cur) == 0)
		already = true;
	if (!already) {
		val.admitted_at = (__u64)time(NULL);
		val.abi_version = abi;
		val.by_pid = (__u32)by;
		if (bpf_map_update_elem(map, &key, &val, BPF_NOEXIST) < 0 && errno != EEXIST) {
			err = errno;
			close(map);
			if (err == E2BIG || err == ENOSPC)
				return custode_refuse(why, err, CUSTODE_REASON_ENGINE_ADMIT_REFUSED,
						      "%d binaries are admitted already (the most an engine keeps): "
						      "reload the engine once no run is registered",
						      CUSTODE_MAX_ADMITTED);
			return custode_refuse(why, err, CUSTODE_REASON_ENGINE_ADMIT_REFUSED, "%s: %s",
					      custode_map_name(CUSTODE_MAP_ADMITTED), strerror(err));
		}
	}
	close(map);
	if (out)
		*out = json_pack("{s:I, s:I, s:i, s:b, s:b}", "dev", (json_int_t)key.dev, "ino", (json_int_t)key.ino,
				 "abi_version", (int)abi, "already", already, "reserved", 1);
	return already ? 1 : 0;
}

json_t *custode_engine_admitted_json(void)
{
	struct custode_exe_key key, next, *prev = NULL;
	struct custode_admission v;
	json_t *a;
	int map = custode_map_open(CUSTODE_MAP_ADMITTED);

	if (map < 0)
		return errno == ENOENT ? json_array() : NULL;
	a = json_array();
	while (bpf_map_get_next_key(map, prev, &next) == 0) {
		char when[CUSTODE_TIME_LEN];

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(map, &key, &v) < 0)
			continue;
		json_array_append_new(a, json_pack("{s:I, s:I, s:i, s:i, s:s}", "dev", (json_int_t)key.dev, "ino",
						   (json_int_t)key.ino, "abi_version", (int)v.abi_version, "by_pid",
						   (int)v.by_pid, "admitted_at",
						   custode_time_show_sec((int64_t)v.admitted_at, when, sizeof(when))));
	}
	close(map);
	return a;
}
