/* SPDX-License-Identifier: Apache-2.0 */
/* The Landlock anchor's one rule kind, for llbench and fobench: PATH_BENEATH path with access; a missing path is skipped. */
#ifndef CUSTODE_BENCH_LANDLOCK_RULE_H
#define CUSTODE_BENCH_LANDLOCK_RULE_H
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
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
#endif
