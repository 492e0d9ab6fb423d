/* SPDX-License-Identifier: Apache-2.0 */
/* The Landlock anchor's one rule kind, for llbench and fobench: PATH_BENEATH path with access; a missing path is skipped. */
#ifndef CUSTODE_BENCH_LANDLOCK_RULE_H
#define CUSTODE_BENCH_LANDLOCK_RULE_H
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline int add_rule(int ruleset, const char *path, __u64 access)
{
	struct landlock_path_beneath_attr pb = {.allowed_access = access};
	int err;

	pb.parent_fd = open(path, O_PATH | O_CLOEXEC);
	if (pb.parent_fd < 0)
		return errno == ENOENT ? 0 : -1;
	err = (int)syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
	close(pb.parent_fd);
	return err;
}

#define LL_RD (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)

/*
 * The benches' Landlock ruleset: the handled accesses, read+execute on the
 * system directories and read on /etc. A ruleset fd to add more to, or -1.
 */
static inline int landlock_system_ruleset(void)
{
	struct landlock_ruleset_attr attr = {
		.handled_access_fs = LL_RD | LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
				     LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
				     LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG,
	};
	static const char *const sys[] = {"/usr", "/bin", "/sbin", "/lib", "/lib64"};
	int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);

	if (ruleset < 0)
		return perror("landlock_create_ruleset"), -1;
	for (size_t i = 0; i < sizeof(sys) / sizeof(sys[0]); i++)
		if (add_rule(ruleset, sys[i], LL_RD | LANDLOCK_ACCESS_FS_EXECUTE) < 0)
			return perror(sys[i]), close(ruleset), -1;
	if (add_rule(ruleset, "/etc", LL_RD) < 0)
		return perror("/etc"), close(ruleset), -1;
	return ruleset;
}

/* no_new_privs, then restrict the process to ruleset (closed): 0, or -1. */
static inline int landlock_enforce(int ruleset)
{
	int err = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || syscall(SYS_landlock_restrict_self, ruleset, 0);

	if (err)
		perror("landlock_restrict_self");
	close(ruleset);
	return err ? -1 : 0;
}
#endif
