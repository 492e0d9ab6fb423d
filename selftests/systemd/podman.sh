# SPDX-License-Identifier: Apache-2.0
# Sourced after lib.sh by the podman tests of the systemd guest
# (test-attach-container.sh, test-container-restart.sh): the image, the
# containers' network with the host's listener, and the entrypoint that
# tries the attacks.

# podman_image IMG: a tarball of busybox-static through `podman import` (no registry). One TAP line.
podman_image() {
	local d t1
	t1=$(date +%s.%N)
	d=$(mktemp -d)
	mkdir -p "$d/bin" "$d/etc" "$d/tmp" "$d/proc" "$d/sys" "$d/dev" "$d/run"
	cp /bin/busybox "$d/bin/busybox"
	for a in sh cat echo printf sleep nc true; do ln -s busybox "$d/bin/$a"; done
	if tar -C "$d" -c . | podman import --quiet - "$1" >/tmp/import.out 2>&1; then
		ok "podman import of a busybox-static tarball (no registry)"
	else
		not_ok "podman import of a busybox-static tarball (no registry)"
		diag </tmp/import.out
	fi
	rm -rf -- "$d"
	echo "# image imported in $(elapsed "$t1") s"
}

# (busybox-static's wget crashes in Debian 12: nc speaks HTTP/1.0 instead)
fetch_ok() { printf 'GET /ok HTTP/1.0\r\n\r\n' | busybox nc -w 2 192.0.2.1 8080 2>/dev/null | grep -q '^hello'; }

# podman_net NS: network namespace NS for the containers, a veth pair
# 192.0.2.2 (NS) <-> 192.0.2.1 (the host), and the host's listener: busybox
# httpd serving /ok ("hello") on 192.0.2.1:8080 (unit custode-www). Three TAP lines.
podman_net() {
	ip netns del "$1" 2>/dev/null
	ip link del ctr-host 2>/dev/null
	ip netns add "$1" &&
		ip link add ctr-host type veth peer name ctr-guest netns "$1" &&
		ip addr add 192.0.2.1/24 dev ctr-host && ip link set ctr-host up &&
		ip -n "$1" addr add 192.0.2.2/24 dev ctr-guest && ip -n "$1" link set ctr-guest up &&
		ip -n "$1" link set lo up
	check "a network namespace for the containers, veth 192.0.2.2 -> 192.0.2.1" ip -n "$1" addr show ctr-guest
	mkdir -p /srv/custode-www && echo hello >/srv/custode-www/ok
	systemctl stop custode-www 2>/dev/null
	check "the host's listener: busybox httpd on 192.0.2.1:8080" \
		systemd-run --quiet --unit custode-www busybox httpd -f -p 192.0.2.1:8080 -h /srv/custode-www
	check "the listener answers on the host" wait_for 30 fetch_ok
}

# podman_net_end NS: the listener stopped, the namespace (and its veth pair) gone.
podman_net_end() {
	systemctl stop custode-www 2>/dev/null
	ip netns del "$1" 2>/dev/null
	ip link del ctr-host 2>/dev/null
	return 0
}

# The entrypoint: "boot" once per start (the round counter restarts), then
# every 0.2 s one line: the host's secret (/etc/ssh/sshd_config, a volume),
# the control (/etc/hostname, allowed by the policy), the egress to the
# host's listener.
attack_loop='echo boot
i=0
while :; do
	i=$((i + 1))
	if cat /etc/ssh/sshd_config >/dev/null 2>&1; then s=read; else s=denied; fi
	if cat /etc/hostname >/dev/null 2>&1; then c=read; else c=denied; fi
	case "$(printf "GET /ok HTTP/1.0\r\n\r\n" | nc -w 2 192.0.2.1 8080 2>/dev/null)" in
	*hello*) e=ok ;;
	*) e=denied ;;
	esac
	echo "i=$i secret=$s control=$c egress=$e"
	sleep 0.2
done'
