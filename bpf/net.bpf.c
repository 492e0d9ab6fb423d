// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * Egress policy: cgroup socket hooks attached at the root of the cgroup v2
 * hierarchy, so every socket on the host passes through them — including a
 * socket created outside a run and passed into it. The run is found from the
 * calling task (not from the socket's cgroup), so such a socket is checked
 * against the policy of the run that uses it. docs/egress.md.
 */
#include "net_maps.bpf.h"
#include "custode/addr.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define AF_INET 2
#define AF_INET6 10
#define SOCK_STREAM 1
#define SOCK_DGRAM 2
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#define ALLOW 1
#define DENY 0

static __always_inline __u16 net_port(__u32 user_port)
{
	return bpf_ntohs((__u16)user_port);
}

static __always_inline void net_event(__u16 hook, __u32 reason, struct custode_run *run, __u32 enforced,
				      __u16 family, __u16 type, __u16 proto, const __u8 *addr, __u16 port, int cls)
{
	struct custode_event *ev;

	ev = bpf_ringbuf_reserve(&custode_events, sizeof(*ev), 0);
	if (!ev) {
		custode_count_stat(1);
		return;
	}
	custode_event_init(ev, hook, reason, run, enforced);
	ev->object = CUSTODE_OBJECT_NET;
	if (addr)
		__builtin_memcpy(ev->obj.net.addr, addr, 16);
	ev->obj.net.port = port;
	ev->obj.net.family = family;
	ev->obj.net.proto = proto;
	ev->obj.net.sock_type = type;
	ev->obj.net.addr_class = cls;
	bpf_ringbuf_submit(ev, 0);
	custode_count_stat(0);
}

/* Record a denial and say whether to deny (audit mode allows). */
static __always_inline int net_deny(__u64 run_cgid, struct custode_run *run, __u16 hook, __u32 reason, __u16 family,
				    __u16 type, __u16 proto, const __u8 *addr, __u16 port, int cls)
{
	__u32 enforced = !run || !(run->flags & CUSTODE_RUN_AUDIT) || (run->flags & CUSTODE_RUN_CANCELLED);

	custode_count(run_cgid, reason);
	net_event(hook, reason, run, enforced, family, type, proto, addr, port, cls);
	return enforced ? DENY : ALLOW;
}

/*
 * The egress decision for a destination in 16-byte form. Order: the
 * classifier's veto (unless granted as a literal), DNS only to the resolver,
 * then a rule, then a live pin.
 */
static __always_inline int egress_decide(__u16 hook, struct bpf_sock_addr *ctx, __u8 *addr, __u16 family)
{
	struct custode_run *run = NULL;
	struct custode_net_key key;
	struct custode_net_rule *rule;
	struct custode_pin_key pk;
	struct custode_pin *pin;
	__u64 run_cgid = 0;
	__u16 port = net_port(ctx->user_port);
	__u16 proto = (__u16)ctx->protocol, type = (__u16)ctx->type;
	int where, cls;

	where = custode_current_run(&run, &run_cgid);
	if (where == CUSTODE_NOT_IN_RUN)
		return ALLOW;
	if (where == CUSTODE_UNREGISTERED || !run)
		return net_deny(run_cgid, NULL, hook, CUSTODE_REASON_RUN_UNREGISTERED, family, type, proto, addr, port, 0);
	if (run->flags & CUSTODE_RUN_CANCELLED)
		return net_deny(run_cgid, run, hook, CUSTODE_REASON_RUN_CANCELLED, family, type, proto, addr, port, 0);
	if (!(run->flags & CUSTODE_RUN_NET))
		return ALLOW;

	cls = custode_addr_classify(addr);
	__builtin_memset(&key, 0, sizeof(key));
	key.prefixlen = CUSTODE_NET_KEY_PREFIX_BITS + 128;
	key.ruleset = run->ruleset;
	key.proto = (__u8)proto;
	key.port = port;
	__builtin_memcpy(key.addr, addr, 16);
	rule = bpf_map_lookup_elem(&custode_net_rules, &key);

	if (cls != CUSTODE_ADDR_ORDINARY) {
		struct custode_private_key priv;

		priv.prefixlen = 32 + 128;
		priv.ruleset = run->ruleset;
		__builtin_memcpy(priv.addr, addr, 16);
		if (!(rule && (rule->flags & CUSTODE_NET_RULE_LITERAL)) && !bpf_map_lookup_elem(&custode_net_private, &priv))
			return net_deny(run_cgid, run, hook, custode_addr_reason(cls), family, type, proto, addr, port, cls);
	}
	if (port == 53)
		return net_deny(run_cgid, run, hook, CUSTODE_REASON_NET_DNS_DENIED, family, type, proto, addr, port, cls);
	if (rule)
		return ALLOW;

	__builtin_memset(&pk, 0, sizeof(pk));
	pk.run_cgid = run_cgid;
	pk.proto = (__u8)proto;
	pk.port = port;
	__builtin_memcpy(pk.addr, addr, 16);
	pin = bpf_map_lookup_elem(&custode_pins, &pk);
	if (pin && pin->expires_ns > bpf_ktime_get_boot_ns())
		return ALLOW;
	return net_deny(run_cgid, run, hook, CUSTODE_REASON_NET_EGRESS_DENIED, family, type, proto, addr, port, cls);
}

static __always_inline int egress4(__u16 hook, struct bpf_sock_addr *ctx)
{
	__u8 addr[16] = {0};
	__u32 ip = ctx->user_ip4; /* network order */

	addr[10] = 0xff;
	addr[11] = 0xff;
	__builtin_memcpy(&addr[12], &ip, 4);
	return egress_decide(hook, ctx, addr, AF_INET);
}

static __always_inline int egress6(__u16 hook, struct bpf_sock_addr *ctx)
{
	__u8 addr[16];
	__u32 w;

	/* ctx fields must be read with 4-byte loads */
	w = ctx->user_ip6[0];
	__builtin_memcpy(&addr[0], &w, 4);
	w = ctx->user_ip6[1];
	__builtin_memcpy(&addr[4], &w, 4);
	w = ctx->user_ip6[2];
	__builtin_memcpy(&addr[8], &w, 4);
	w = ctx->user_ip6[3];
	__builtin_memcpy(&addr[12], &w, 4);
	return egress_decide(hook, ctx, addr, AF_INET6);
}

SEC("cgroup/connect4")
int custode_connect4(struct bpf_sock_addr *ctx)
{
	return egress4(CUSTODE_HOOK_CONNECT4, ctx);
}

SEC("cgroup/connect6")
int custode_connect6(struct bpf_sock_addr *ctx)
{
	return egress6(CUSTODE_HOOK_CONNECT6, ctx);
}

SEC("cgroup/sendmsg4")
int custode_sendmsg4(struct bpf_sock_addr *ctx)
{
	return egress4(CUSTODE_HOOK_SENDMSG4, ctx);
}

SEC("cgroup/sendmsg6")
int custode_sendmsg6(struct bpf_sock_addr *ctx)
{
	return egress6(CUSTODE_HOOK_SENDMSG6, ctx);
}

/* Only TCP and UDP sockets: no raw, ICMP (ping), SCTP, MPTCP, UDP-Lite. */
SEC("cgroup/sock_create")
int custode_sock_create(struct bpf_sock *sk)
{
	struct custode_run *run = NULL;
	__u64 run_cgid = 0;
	__u16 family = (__u16)sk->family, type = (__u16)sk->type, proto = (__u16)sk->protocol;
	int where;

	where = custode_current_run(&run, &run_cgid);
	if (where == CUSTODE_NOT_IN_RUN)
		return ALLOW;
	if (where == CUSTODE_UNREGISTERED || !run)
		return net_deny(run_cgid, NULL, CUSTODE_HOOK_SOCK_CREATE, CUSTODE_REASON_RUN_UNREGISTERED, family, type,
				proto, NULL, 0, 0);
	if (run->flags & CUSTODE_RUN_CANCELLED)
		return net_deny(run_cgid, run, CUSTODE_HOOK_SOCK_CREATE, CUSTODE_REASON_RUN_CANCELLED, family, type, proto,
				NULL, 0, 0);
	if (!(run->flags & CUSTODE_RUN_NET))
		return ALLOW;
	if ((type == SOCK_STREAM && proto == IPPROTO_TCP) || (type == SOCK_DGRAM && proto == IPPROTO_UDP))
		return ALLOW;
	return net_deny(run_cgid, run, CUSTODE_HOOK_SOCK_CREATE, CUSTODE_REASON_NET_SOCKET_DENIED, family, type, proto,
			NULL, 0, 0);
}

static __always_inline int bind_decide(__u16 hook, struct bpf_sock_addr *ctx, __u16 family)
{
	struct custode_run *run = NULL;
	__u64 run_cgid = 0;
	__u16 port = net_port(ctx->user_port);
	int where;

	if (port == 0)
		return ALLOW; /* an ephemeral port: not listening on a chosen one */
	where = custode_current_run(&run, &run_cgid);
	if (where == CUSTODE_NOT_IN_RUN)
		return ALLOW;
	if (where == CUSTODE_UNREGISTERED || !run)
		return net_deny(run_cgid, NULL, hook, CUSTODE_REASON_RUN_UNREGISTERED, family, (__u16)ctx->type,
				(__u16)ctx->protocol, NULL, port, 0);
	if (!(run->flags & CUSTODE_RUN_NO_LISTEN) && !(run->flags & CUSTODE_RUN_CANCELLED))
		return ALLOW;
	return net_deny(run_cgid, run, hook,
			run->flags & CUSTODE_RUN_CANCELLED ? CUSTODE_REASON_RUN_CANCELLED : CUSTODE_REASON_NET_BIND_DENIED,
			family, (__u16)ctx->type, (__u16)ctx->protocol, NULL, port, 0);
}

SEC("cgroup/bind4")
int custode_bind4(struct bpf_sock_addr *ctx)
{
	return bind_decide(CUSTODE_HOOK_BIND4, ctx, AF_INET);
}

SEC("cgroup/bind6")
int custode_bind6(struct bpf_sock_addr *ctx)
{
	return bind_decide(CUSTODE_HOOK_BIND6, ctx, AF_INET6);
}
