// SPDX-License-Identifier: Apache-2.0
/*
 * lsmfloor COMMAND [ARG...]: run COMMAND while an LSM program on file_open
 * that does nothing is attached (custode doctor's probe program, the same
 * build): the floor under any BPF-LSM engine's open() cost on this kernel —
 * the hook's trampoline and one program call, for every process on the
 * host. The "lsm floor" column of open-bench. Benchmark helper only.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <bpf/libbpf.h>

#include "probe.skel.h"

int main(int argc, char **argv)
{
	struct bpf_link *link;
	struct probe_bpf *s;
	int status = 0;
	pid_t pid;

	if (argc < 2) {
		fprintf(stderr, "usage: lsmfloor COMMAND [ARG...]\n");
		return 2;
	}
	s = probe_bpf__open();
	if (!s) {
		fprintf(stderr, "lsmfloor: open: %s\n", strerror(errno));
		return 1;
	}
	bpf_program__set_autoload(s->progs.probe_cgroup_sock_addr, false);
	if (probe_bpf__load(s) || !(link = bpf_program__attach_lsm(s->progs.probe_lsm))) {
		fprintf(stderr, "lsmfloor: load and attach lsm/file_open: %s\n", strerror(errno));
		probe_bpf__destroy(s);
		return 1;
	}
	pid = fork();
	if (pid == 0) {
		execvp(argv[1], argv + 1);
		fprintf(stderr, "lsmfloor: %s: %s\n", argv[1], strerror(errno));
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		status = 1 << 8;
	bpf_link__destroy(link);
	probe_bpf__destroy(s);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
