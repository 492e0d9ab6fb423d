// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Probes for `custode doctor`: the smallest program of each class custode
 * needs. Loading (not attaching) each one tells whether the host allows it.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("lsm/file_open")
int BPF_PROG(probe_lsm, struct file *file, int ret)
{
	return ret;
}

SEC("cgroup/connect4")
int probe_cgroup_sock_addr(struct bpf_sock_addr *ctx)
{
	return 1;
}
