// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Egress policy: cgroup socket hooks attached at the root of the cgroup v2
 * hierarchy, so every socket on the host passes through them — including a
 * socket created outside a run and passed into it. The run is found from the
 * calling task (not from the socket's cgroup), so such a socket is checked
 * against the policy of the run that uses it. docs/egress.md.
 *
 * DNS: every query of a run goes to custode's resolver, its destination
 * rewritten to the run's own token address; replies and peer names get the
 * original server back (recvmsg/getpeername). docs/resolver.md.
 */
#include "net_maps.bpf.h"
#include "custode/addr.h"
#include "route.bpf.h"

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
	struct custode_event *ev = custode_event_reserve(hook, reason, run, enforced);

	if (!ev)
		return;
	ev->object = CUSTODE_OBJECT_NET;
	if (addr)
		__builtin_memcpy(ev->obj.net.addr, addr, 16);
	ev->obj.net.port = port;
	ev->obj.net.family = family;
	ev->obj.net.proto = proto;
	ev->obj.net.sock_type = type;
	ev->obj.net.addr_class = cls;
	custode_event_submit(ev);
}

/* Record a denial and say whether to deny (audit mode allows: custode_enforced). */
static __always_inline int net_deny(__u64 run_cgid, struct custode_run *run, __u16 hook, __u32 reason, __u16 family,
				    __u16 type, __u16 proto, const __u8 *addr, __u16 port, int cls)
{
	__u32 enforced = custode_enforced(run, reason);

	if (custode_record(run_cgid, hook, reason, run, enforced))
		net_event(hook, reason, run, enforced, family, type, proto, addr, port, cls);
	/*
	 * A cgroup program returns exactly 0 or 1, and the verifier checks it:
	 * without this, clang turns the choice into `enforced ^ 1`, a value
	 * the verifier can't bound (custode_enforced's reason tests).
	 */
	asm volatile("" : "+r"(enforced));
	return enforced ? DENY : ALLOW;
}

/* ::ffff:127.x.y.z: where the resolver listens (include/custode/resolver.h). */
static __always_inline bool is_v4_loopback(const __u8 *addr)
{
	return !(addr[0] | addr[1] | addr[2] | addr[3] | addr[4] | addr[5] | addr[6] | addr[7] | addr[8] | addr[9]) &&
	       addr[10] == 0xff && addr[11] == 0xff && addr[12] == 127;
}

/* A DNS query: port 53 to any address, or the resolver's own port on 127/8. */
static __always_inline bool is_dns(const __u8 *addr, __u16 port)
{
	return port == 53 || (port == CUSTODE_RESOLVER_PORT && is_v4_loopback(addr));
}

/*
 * The run's DNS token, allocated on first use: a random free token is claimed
 * in the reverse map with BPF_NOEXIST (so no two runs share one), then
 * published for the run, also with BPF_NOEXIST; a thread of the same run that
 * published first wins. The loser's claim stays (it names this run too):
 * only the resolver ever deletes a token, once the run is gone, so the
 * resolver may cache what a token means. 0: none (deny).
 */
static __always_inline __u32 dns_token(__u64 run_cgid)
{
	__u32 *t = bpf_map_lookup_elem(&custode_dns_run_token, &run_cgid);

	if (t)
		return *t;
#pragma unroll
	for (int i = 0; i < 4; i++) {
		__u32 tok = bpf_get_prandom_u32() & 0xffffff;

		if (tok < CUSTODE_DNS_TOKEN_MIN || tok > CUSTODE_DNS_TOKEN_MAX)
			continue;
		if (bpf_map_update_elem(&custode_dns_token_run, &tok, &run_cgid, BPF_NOEXIST))
			continue; /* taken (or the map is full) */
		if (!bpf_map_update_elem(&custode_dns_run_token, &run_cgid, &tok, BPF_NOEXIST))
			return tok;
		t = bpf_map_lookup_elem(&custode_dns_run_token, &run_cgid);
		return t ? *t : 0;
	}
	return 0;
}

/*
 * Does the live resolver listen in this socket's network namespace: its own,
 * or one it registered in custode_dns_netns under its generation? If not,
 * wake it (once per CUSTODE_DNS_WAKE_NS per namespace): it enters the
 * namespace of the calling process and listens there; this query is denied.
 */
static __always_inline bool dns_netns_served(struct bpf_sock_addr *ctx, const struct custode_dns_cfg *cfg,
					     __u64 run_cgid)
{
	__u64 cookie = bpf_get_netns_cookie(ctx), now, *seen;
	struct custode_dns_netns *ns;
	struct custode_dns_wake *w;

	if (cookie == cfg->netns_cookie)
		return true;
	ns = bpf_map_lookup_elem(&custode_dns_netns, &cookie);
	if (ns && ns->gen == cfg->gen)
		return true;
	now = bpf_ktime_get_boot_ns();
	seen = bpf_map_lookup_elem(&custode_dns_netns_seen, &cookie);
	if (seen && now - *seen < CUSTODE_DNS_WAKE_NS)
		return false;
	bpf_map_update_elem(&custode_dns_netns_seen, &cookie, &now, BPF_ANY);
	w = bpf_ringbuf_reserve(&custode_dns_wake, sizeof(*w), 0);
	if (w) {
		w->netns_cookie = cookie;
		w->run_cgid = run_cgid;
		w->tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
		w->_pad0 = 0;
		bpf_ringbuf_submit(w, 0);
	}
	return false;
}

/*
 * Send a run's DNS query to the resolver: destination 127.T.T.T (T: the run's
 * token; ::ffff:127.T.T.T on IPv6 sockets) at the resolver's port. The
 * original server is kept by socket cookie for the recvmsg/getpeername hooks.
 * No live resolver serving this network namespace (it is woken), or no token: denied.
 */
static __always_inline int dns_redirect(__u16 hook, struct bpf_sock_addr *ctx, __u64 run_cgid, struct custode_run *run,
					__u8 *addr, __u16 family, __u16 port)
{
	__u16 proto = (__u16)ctx->protocol, type = (__u16)ctx->type;
	struct custode_dns_orig orig;
	struct custode_dns_cfg *cfg;
	__u32 zero = 0, tok;
	__u64 cookie;

	cfg = bpf_map_lookup_elem(&custode_dns_cfg, &zero);
	if (!cfg || !(cfg->flags & CUSTODE_DNS_UP) || cfg->alive_until_ns <= bpf_ktime_get_boot_ns() ||
	    !dns_netns_served(ctx, cfg, run_cgid))
		return net_deny(run_cgid, run, hook, CUSTODE_REASON_NET_DNS_DENIED, family, type, proto, addr, port,
				custode_addr_classify(addr));
	tok = dns_token(run_cgid);
	if (!tok)
		return net_deny(run_cgid, run, hook, CUSTODE_REASON_NET_DNS_DENIED, family, type, proto, addr, port,
				custode_addr_classify(addr));
	/*
	 * Already the run's own resolver address: nothing to rewrite, and the
	 * server this socket first addressed stays recorded. (Newer kernels run
	 * connect4 again after connect6 rewrote to an IPv4-mapped address.)
	 */
	if (port == CUSTODE_RESOLVER_PORT && addr[13] == ((tok >> 16) & 0xff) && addr[14] == ((tok >> 8) & 0xff) &&
	    addr[15] == (tok & 0xff))
		return ALLOW;
	__builtin_memset(&orig, 0, sizeof(orig));
	__builtin_memcpy(orig.addr, addr, 16);
	orig.port = (__u16)ctx->user_port;
	orig.family = family;
	cookie = bpf_get_socket_cookie(ctx);
	bpf_map_update_elem(&custode_dns_orig, &cookie, &orig, BPF_ANY);
	if (family == AF_INET) {
		ctx->user_ip4 = bpf_htonl(0x7f000000 | tok);
	} else {
		ctx->user_ip6[0] = 0;
		ctx->user_ip6[1] = 0;
		ctx->user_ip6[2] = bpf_htonl(0xffff);
		ctx->user_ip6[3] = bpf_htonl(0x7f000000 | tok);
	}
	ctx->user_port = bpf_htons(CUSTODE_RESOLVER_PORT);
	return ALLOW;
}

/*
 * The egress decision for a destination in 16-byte form. Order: DNS to the
 * resolver (any server address, special or not), the classifier's veto
 * (unless granted as a literal), then a rule, then a live pin.
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
	__u32 denial;
	int cls;

	if (!custode_live_run(&run, &run_cgid, &denial)) /* the resolver answers runs only: nobody may pose as one */
		return port == CUSTODE_RESOLVER_PORT && is_v4_loopback(addr) ? DENY : ALLOW;
	if (denial)
		return net_deny(run_cgid, run, hook, denial, family, type, proto, addr, port, 0);
	if (!(run->flags & CUSTODE_RUN_NET))
		return ALLOW;
	if (is_dns(addr, port))
		return dns_redirect(hook, ctx, run_cgid, run, addr, family, port);

	cls = custode_addr_classify(addr);
	if (cls == CUSTODE_ADDR_ORDINARY || cls == CUSTODE_ADDR_PRIVATE) {
		/* one of this namespace's own addresses: a local service, reached without loopback */
		struct custode_host_addr_key hk;

		hk.netns = bpf_get_netns_cookie(ctx);
		__builtin_memcpy(hk.addr, addr, 16);
		if (bpf_map_lookup_elem(&custode_host_addrs, &hk))
			cls = CUSTODE_ADDR_HOST;
	}
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

/*
 * A message without an address on a connected UDP socket goes to the peer
 * decided at connect. The kernel runs these programs for it anyway when the
 * message carries control data (IP_TOS, UDP_SEGMENT: udp_sendmsg then stops
 * calling the socket connected), with an all-zero address of family
 * AF_UNSPEC: that is "no address", not 0.0.0.0. An address the caller gave
 * with AF_UNSPEC (IPv4 sends to it) always has a port: the kernel refuses
 * port 0 before these programs run.
 */
static __always_inline bool no_address(struct bpf_sock_addr *ctx, bool v6)
{
	if (ctx->user_family != 0 || ctx->user_port != 0)
		return false;
	if (!v6)
		return ctx->user_ip4 == 0;
	return !(ctx->user_ip6[0] | ctx->user_ip6[1] | ctx->user_ip6[2] | ctx->user_ip6[3]);
}

SEC("cgroup/sendmsg4")
int custode_sendmsg4(struct bpf_sock_addr *ctx)
{
	if (no_address(ctx, false))
		return 1;
	return egress4(CUSTODE_HOOK_SENDMSG4, ctx);
}

SEC("cgroup/sendmsg6")
int custode_sendmsg6(struct bpf_sock_addr *ctx)
{
	if (no_address(ctx, true))
		return 1;
	return egress6(CUSTODE_HOOK_SENDMSG6, ctx);
}

/*
 * Replies and peer names: a source of 127.x.y.z at the resolver's port (only
 * root can bind it) on a socket whose query was redirected becomes the server
 * the query was addressed to, so glibc and musl accept the reply. These
 * programs cannot deny; they return 1.
 */
static __always_inline const struct custode_dns_orig *dns_orig_of(struct bpf_sock_addr *ctx, __u16 family)
{
	const struct custode_dns_orig *o;
	__u64 cookie;

	if (ctx->user_port != bpf_htons(CUSTODE_RESOLVER_PORT))
		return NULL;
	if (family == AF_INET) {
		if ((bpf_ntohl(ctx->user_ip4) >> 24) != 127)
			return NULL;
	} else if (ctx->user_ip6[0] || ctx->user_ip6[1] || ctx->user_ip6[2] != bpf_htonl(0xffff) ||
		   (bpf_ntohl(ctx->user_ip6[3]) >> 24) != 127) {
		return NULL;
	}
	cookie = bpf_get_socket_cookie(ctx);
	o = bpf_map_lookup_elem(&custode_dns_orig, &cookie);
	/*
	 * An IPv6 socket may have addressed an IPv4 server (::ffff:a.b.c.d: the
	 * kernel then runs the IPv4 hooks, which record family AF_INET); the
	 * 16-byte form restores either way. An IPv4 socket only ever has IPv4.
	 */
	if (!o || (family == AF_INET && o->family != AF_INET))
		return NULL;
	return o;
}

static __always_inline int restore4(struct bpf_sock_addr *ctx)
{
	const struct custode_dns_orig *o = dns_orig_of(ctx, AF_INET);
	__u32 ip;

	if (o) {
		__builtin_memcpy(&ip, &o->addr[12], 4);
		ctx->user_ip4 = ip;
		ctx->user_port = o->port;
	}
	return 1;
}

static __always_inline int restore6(struct bpf_sock_addr *ctx)
{
	const struct custode_dns_orig *o = dns_orig_of(ctx, AF_INET6);
	__u32 w;

	if (o) {
		__builtin_memcpy(&w, &o->addr[0], 4);
		ctx->user_ip6[0] = w;
		__builtin_memcpy(&w, &o->addr[4], 4);
		ctx->user_ip6[1] = w;
		__builtin_memcpy(&w, &o->addr[8], 4);
		ctx->user_ip6[2] = w;
		__builtin_memcpy(&w, &o->addr[12], 4);
		ctx->user_ip6[3] = w;
		ctx->user_port = o->port;
	}
	return 1;
}

SEC("cgroup/recvmsg4")
int custode_recvmsg4(struct bpf_sock_addr *ctx)
{
	return restore4(ctx);
}

SEC("cgroup/recvmsg6")
int custode_recvmsg6(struct bpf_sock_addr *ctx)
{
	return restore6(ctx);
}

SEC("cgroup/getpeername4")
int custode_getpeername4(struct bpf_sock_addr *ctx)
{
	return restore4(ctx);
}

SEC("cgroup/getpeername6")
int custode_getpeername6(struct bpf_sock_addr *ctx)
{
	return restore6(ctx);
}

/* Only TCP and UDP sockets: no raw, ICMP (ping), SCTP, MPTCP, UDP-Lite. */
SEC("cgroup/sock_create")
int custode_sock_create(struct bpf_sock *sk)
{
	struct custode_run *run = NULL;
	__u64 run_cgid = 0;
	__u16 family = (__u16)sk->family, type = (__u16)sk->type, proto = (__u16)sk->protocol;
	__u32 denial;

	if (!custode_live_run(&run, &run_cgid, &denial))
		return ALLOW;
	if (denial)
		return net_deny(run_cgid, run, CUSTODE_HOOK_SOCK_CREATE, denial, family, type, proto, NULL, 0, 0);
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
	__u32 denial;

	if (port == 0)
		return ALLOW; /* an ephemeral port: not listening on a chosen one */
	if (!custode_live_run(&run, &run_cgid, &denial))
		return ALLOW;
	if (denial)
		return net_deny(run_cgid, run, hook, denial, family, (__u16)ctx->type, (__u16)ctx->protocol, NULL, port,
				0);
	/*
	 * The resolver's port: in a namespace of its own a run may hold the
	 * privilege to bind it, and squat it before the resolver listens there
	 * (then answering its neighbours' queries). Never a run's to take.
	 */
	if (!(run->flags & CUSTODE_RUN_NO_LISTEN) && port != CUSTODE_RESOLVER_PORT)
		return ALLOW;
	return net_deny(run_cgid, run, hook, CUSTODE_REASON_NET_BIND_DENIED, family, (__u16)ctx->type,
			(__u16)ctx->protocol, NULL, port, 0);
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

/* Route options (bpf/lib/route.bpf.h), for hosts without BPF-LSM too. */
#define SOCKOPT_PAGE 4096

SEC("cgroup/setsockopt")
int custode_setsockopt(struct bpf_sockopt *ctx)
{
	struct custode_run *run = NULL;
	__u64 run_cgid = 0;
	int level = ctx->level, name = ctx->optname, where;

	if (custode_route_option(level, name)) {
		where = custode_current_run(&run, &run_cgid);
		if (where == CUSTODE_UNREGISTERED || (where == CUSTODE_IN_RUN && run && (run->flags & CUSTODE_RUN_NET)))
			return net_deny(run_cgid, run, CUSTODE_HOOK_SETSOCKOPT,
					where == CUSTODE_UNREGISTERED ? CUSTODE_REASON_RUN_UNREGISTERED
								      : CUSTODE_REASON_NET_ROUTE_OPTION_DENIED,
					0, (__u16)level, (__u16)name, NULL, 0, 0);
	}
	/*
	 * Every setsockopt on the host passes here. An option value larger
	 * than a page reaches a program truncated; -1 tells the kernel to use
	 * the caller's own buffer untouched (else the call would fail).
	 */
	if (ctx->optlen > SOCKOPT_PAGE)
		ctx->optlen = -1;
	return ALLOW;
}
