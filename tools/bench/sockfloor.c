// SPDX-License-Identifier: Apache-2.0
/*
 * sockfloor CGROUP COMMAND [ARG...]: run COMMAND while programs that allow
 * and do nothing else are attached to CGROUP for connect4/6 and sendmsg4/6
 * (sockfloor.bpf.c): the floor under any cgroup egress engine's connect()
 * and sendto() on this kernel — the hook's call into BPF and one program
 * run. connect-bench's "floor" column. Benchmark helper only.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <bpf/libbpf.h>

#include "sockfloor.skel.h"

int main(int argc, char **argv)
{
	struct bpf_link *links[4] = {0};
	struct sockfloor_bpf *s;
	int status = 1 << 8, cg, n = 0;
	pid_t pid;

	if (argc < 3) {
		fprintf(stderr, "usage: sockfloor CGROUP COMMAND [ARG...]\n");
		return 2;
	}
	cg = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	s = cg < 0 ? NULL : sockfloor_bpf__open_and_load();
	if (!s) {
		fprintf(stderr, "sockfloor: %s: %s\n", cg < 0 ? argv[1] : "load", strerror(errno));
		return 1;
	}
	if (!(links[n++] = bpf_program__attach_cgroup(s->progs.floor_connect4, cg)) ||
	    !(links[n++] = bpf_program__attach_cgroup(s->progs.floor_connect6, cg)) ||
	    !(links[n++] = bpf_program__attach_cgroup(s->progs.floor_sendmsg4, cg)) ||
	    !(links[n++] = bpf_program__attach_cgroup(s->progs.floor_sendmsg6, cg))) {
		fprintf(stderr, "sockfloor: attach to %s: %s\n", argv[1], strerror(errno));
		goto out;
	}
	pid = fork();
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		fprintf(stderr, "sockfloor: %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		status = 1 << 8;
out:
	for (int i = 0; i < 4; i++)
		bpf_link__destroy(links[i]);
	sockfloor_bpf__destroy(s);
	close(cg);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
