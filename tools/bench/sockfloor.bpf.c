// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The floor under any cgroup egress engine (tools/bench/sockfloor.c): the
 * hooks custode's egress class attaches for UDP connect() and sendto(),
 * each a program that allows and does nothing else. Benchmark only.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("cgroup/connect4")
int floor_connect4(struct bpf_sock_addr *ctx)
{
	return 1;
}

SEC("cgroup/connect6")
int floor_connect6(struct bpf_sock_addr *ctx)
{
	return 1;
}

SEC("cgroup/sendmsg4")
int floor_sendmsg4(struct bpf_sock_addr *ctx)
{
	return 1;
}

SEC("cgroup/sendmsg6")
int floor_sendmsg6(struct bpf_sock_addr *ctx)
{
	return 1;
}
