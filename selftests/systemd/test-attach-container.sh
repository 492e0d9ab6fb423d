#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Attaching containers of a real runtime (issue 17, item 4). Runs in the
# systemd guest of tools/vmrun, as root, with systemd as PID 1 and podman,
# crun and conmon installed (tools/vmrun's systemd root file system):
#
#   (cd build && cpack -G DEB)
#   tools/vmrun --rootfs systemd -- selftests/systemd/test-attach-container.sh
#
# No registry: the image is a tarball of busybox-static fed to `podman
# import`. The containers run in their own network namespace
# (custode-ctr, a veth pair 192.0.2.2 <-> 192.0.2.1 to the host, whose busybox
# httpd serves /ok on 192.0.2.1:8080) and get the host's /etc/ssh (a host
# secret: a dummy sshd_config) as a volume. Each container's own entrypoint,
# every 0.2 s, tries to read /etc/ssh/sshd_config (the secret), /etc/hostname
# (the control: allowed by the policy) and to fetch http://192.0.2.1:8080/ok
# with nc (undeclared egress), and prints the outcome with a counter; the test reads
# it with `podman logs`. Two containers, A and B. Checked:
#   (a) unattached, both read the secret and reach the listener, and
#       `podman exec A cat` reads the secret (controls);
#   (b) `custode attach --container A` (by name) with the builtin profile
#       `read`: A's next attempts are denied (secret and egress), its control
#       still read; the denials are A's run's (`custode events --run`); B is
#       untouched; `podman exec` into A works and its command is confined;
#   (c) `custode detach --container` (A's short id): A reads and connects again;
#   (d) attach by full id without podman in PATH (the cgroup tree is
#       searched for libpod-<id>.scope): confined again; detach by name.
# Plus the refusals: unknown name, an ambiguous id prefix, a stopped (exited)
# container, a name without podman, usage errors.
# Output: TAP. Exit 0 all passed, 1 a check failed, 77 not in the systemd guest.
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname -- "${BASH_SOURCE[0]}")/podman.sh"

# ------------------------------------------------- the package, the daemon
install_and_start
check "podman is installed (tools/vmrun's systemd root)" command -v podman
podman --version | diag

# ------------------------------------------------ the image, the network
img=localhost/custode-busybox:test
podman_image "$img"
ns=custode-ctr
podman_net "$ns"

# ------------------------------------------------------- the containers
start_ctr() { # start_ctr NAME: podman run -d, its id printed
	podman run -d --name "$1" --network "ns:/run/netns/$ns" -v /etc/ssh:/etc/ssh:ro "$img" /bin/sh -c "$attack_loop" \
		2>/tmp/run-"$1".err
}
podman rm -f -i custode-a custode-b custode-stopped >/dev/null 2>&1
t1=$(date +%s.%N)
id_a=$(start_ctr custode-a)
check "podman run -d custode-a ($id_a)" test ${#id_a} = 64
diag </tmp/run-custode-a.err
id_b=$(start_ctr custode-b)
check "podman run -d custode-b ($id_b)" test ${#id_b} = 64
diag </tmp/run-custode-b.err
echo "# two containers started in $(elapsed "$t1") s"
cg_a=/sys/fs/cgroup/machine.slice/libpod-$id_a.scope
check "A's cgroup is podman's libpod-<id>.scope" test -d "$cg_a"
podman ps --no-trunc | diag

# the last line of container $1's log, its round number
last_of() { podman logs "$1" 2>/dev/null | grep '^i=' | tail -n 1; }
iter_of() { sed -n 's/^i=\([0-9]*\) .*/\1/p' <<<"$1"; }
reached() { local l; l=$(last_of "$1"); [[ -n $l ]] && (($(iter_of "$l") >= $2)); }
line_of() { podman logs "$1" 2>/dev/null | grep "^i=$2 " | head -n 1; }
# the round of container $1 that began after an event seen at round $2 (the next may have been under way)
after_event() {
	local want=$(($2 + 2))
	wait_for 60 reached "$1" "$want" || return 1
	line_of "$1" "$want"
}
now_of() { iter_of "$(last_of "$1")"; }

# ---------------------------------------------- (a) unattached: the controls
check "(a) A runs its loop" wait_for 60 reached custode-a 2
check "(a) B runs its loop" wait_for 60 reached custode-b 2
line=$(line_of custode-a 2)
echo "# A: $line"
check "(a) control: unattached, A reads the host's secret and reaches 192.0.2.1:8080" \
	grep -q 'secret=read control=read egress=ok' <<<"$line"
line=$(line_of custode-b 2)
echo "# B: $line"
check "(a) control: unattached, B reads the host's secret and reaches 192.0.2.1:8080" \
	grep -q 'secret=read control=read egress=ok' <<<"$line"
check "(a) control: unattached, podman exec A cat reads the secret" \
	bash -c 'timeout 120 podman exec custode-a /bin/cat /etc/ssh/sshd_config | grep -q dummy'

# ------------------------------------------------------------ refusals
attach_out() { # attach_out ARGS...: custode attach, stdout+stderr in /tmp/attach.out, its exit printed
	custode attach "$@" >/tmp/attach.out 2>&1
	echo $?
}
rc=$(attach_out --container custode-no-such --profile read)
check "attach --container of an unknown name: exit 125 (got $rc)" test "$rc" = 125
check "... reason container.unknown" grep -q 'container.unknown' /tmp/attach.out
diag </tmp/attach.out
podman run --name custode-stopped "$img" /bin/true >/dev/null 2>&1 # runs, exits
rc=$(attach_out --container custode-stopped --profile read)
check "attach --container of a stopped (exited) container: exit 125 (got $rc)" test "$rc" = 125
check "... reason container.not_running" grep -q 'container.not_running' /tmp/attach.out
diag </tmp/attach.out
# an ambiguous prefix: create containers until two ids share their first digit (at most 17)
amb=
for i in $(seq 1 16); do
	amb=$(podman ps -a --no-trunc --format '{{.ID}}' | cut -c1 | sort | uniq -d | head -n 1)
	[[ -n $amb ]] && break
	podman create --name "custode-extra-$i" "$img" /bin/true >/dev/null 2>&1
done
rc=$(attach_out --container "$amb" --profile read)
check "attach --container '$amb' (the first digit of two ids): exit 125 (got $rc)" test "$rc" = 125
check "... reason container.ambiguous" grep -q 'container.ambiguous' /tmp/attach.out
diag </tmp/attach.out
rc=$(PATH=/nonexistent /usr/bin/custode attach --container custode-a --profile read >/tmp/attach.out 2>&1; echo $?)
check "attach --container by name without podman in PATH: exit 125 (got $rc)" test "$rc" = 125
check "... reason container.no_runtime" grep -q 'container.no_runtime' /tmp/attach.out
diag </tmp/attach.out
rc=$(attach_out --container 'custode-*' --profile read)
check "attach --container with a glob: usage, exit 2 (got $rc)" test "$rc" = 2
rc=$(attach_out --container custode-a --cgroup "$cg_a" --profile read)
check "attach --container and --cgroup together: usage, exit 2 (got $rc)" test "$rc" = 2
check "no run was registered by the refusals" test "$(custode runs | awk 'NR > 1' | wc -l)" = 0
podman rm -f custode-stopped $(podman ps -a --format '{{.Names}}' | grep '^custode-extra-') >/dev/null 2>&1

# ---------------------------------------------- (b) attach --container NAME
if custode attach --container custode-a --profile read --json >/tmp/attach.out 2>&1; then
	ok "custode attach --container custode-a --profile read"
else not_ok "custode attach --container custode-a --profile read"; fi
now_a=$(now_of custode-a) now_b=$(now_of custode-b)
diag </tmp/attach.out
check "the run's cgroup is A's libpod-<id>.scope" grep -q "\"cgroup\":\"$cg_a\"" /tmp/attach.out
check "the answer names the container" grep -q "\"container\":{\"id\":\"$id_a\",\"name\":\"custode-a\",\"runtime\":\"podman\"}" /tmp/attach.out
run_a=$(sed -n 's/.*"run_id":"\([0-9a-f]*\)".*/\1/p' /tmp/attach.out)
line=$(after_event custode-a "$now_a")
echo "# A: $line"
check "(b) attached: A's next read of the host's secret is denied" grep -q 'secret=denied' <<<"$line"
check "(b) attached: A's next connection to 192.0.2.1:8080 is denied" grep -q 'egress=denied' <<<"$line"
check "(b) attached: A still reads /etc/hostname (control)" grep -q 'control=read' <<<"$line"
line=$(after_event custode-b "$now_b")
echo "# B: $line"
check "(b) sibling untouched: B still reads the secret and reaches the listener" \
	grep -q 'secret=read control=read egress=ok' <<<"$line"
events_have() { custode events --run "$run_a" --json >/tmp/events.out 2>&1 && grep -q -- "$1" /tmp/events.out; }
check "(b) A's run recorded the read of /etc/ssh/sshd_config (custode events --run)" wait_for 10 events_have /etc/ssh/sshd_config
check "(b) A's run recorded the connection to 192.0.2.1" wait_for 10 events_have '"192.0.2.1"'
head -n 4 /tmp/events.out | diag
# podman exec into the attached container: crun's exec process is placed
# into the container's cgroup from outside (conmon's crun is outside the
# run), forks after joining its namespaces; both are newcomers until the
# command's exec, which is then confined like the entrypoint
# (docs/operations.md, "newcomers")
timeout 120 podman exec custode-a /bin/cat /etc/hostname >/tmp/exec.out 2>&1
rc=$?
diag </tmp/exec.out
check "(b) podman exec into the attached container works (cat /etc/hostname: exit $rc)" test "$rc" = 0
timeout 120 podman exec custode-a /bin/cat /etc/ssh/sshd_config >/tmp/exec.out 2>&1
rc=$?
diag </tmp/exec.out
check "(b) ... and the exec'd command is confined: the secret is denied (exit $rc)" \
	test "$rc" != 0 -a "$(grep -c dummy /tmp/exec.out)" = 0

# ------------------------------------------- (c) detach --container SHORT-ID
if custode detach --container "${id_a:0:12}" >/tmp/detach.out 2>&1; then
	ok "custode detach --container ${id_a:0:12} (A's short id)"
else not_ok "custode detach --container ${id_a:0:12} (A's short id)"; fi
now_a=$(now_of custode-a)
diag </tmp/detach.out
check "the detach counted A's denials" grep -qE "detached run $run_a .*: [1-9][0-9]* denial" /tmp/detach.out
line=$(after_event custode-a "$now_a")
echo "# A: $line"
check "(c) detached: A reads the secret and reaches the listener again" \
	grep -q 'secret=read control=read egress=ok' <<<"$line"

# ---------------------- (d) attach by full id, without podman: the cgroup search
if PATH=/nonexistent /usr/bin/custode attach --container "$id_a" --profile read >/tmp/attach.out 2>&1; then
	ok "attach --container <full id> without podman in PATH (cgroup search)"
else not_ok "attach --container <full id> without podman in PATH (cgroup search)"; fi
now_a=$(now_of custode-a) now_b=$(now_of custode-b)
diag </tmp/attach.out
check "... found libpod-<id>.scope" grep -q "$cg_a" /tmp/attach.out
line=$(after_event custode-a "$now_a")
echo "# A: $line"
check "(d) attached again: A denied the secret and the egress" grep -q 'secret=denied control=read egress=denied' <<<"$line"
line=$(after_event custode-b "$now_b")
check "(d) B still untouched" grep -q 'secret=read control=read egress=ok' <<<"$line"
rc=$(attach_out --container custode-a --profile read)
check "attach --container of an attached container: exit 125 (got $rc)" test "$rc" = 125
check "... reason attach.exists" grep -q 'attach.exists' /tmp/attach.out
if custode detach --container custode-a >/tmp/detach.out 2>&1; then ok "custode detach --container custode-a"; else
	not_ok "custode detach --container custode-a"
fi
diag </tmp/detach.out
now_a=$(now_of custode-a)
line=$(after_event custode-a "$now_a")
echo "# A: $line"
check "(d) detached: A allowed again" grep -q 'secret=read control=read egress=ok' <<<"$line"
rc=$(custode detach --container custode-b >/tmp/detach.out 2>&1; echo $?)
check "detach --container of a container never attached: exit 125 (got $rc)" test "$rc" = 125
diag </tmp/detach.out

# ----------------------------------------------------------------- end
t1=$(date +%s.%N)
check "podman rm -f the containers" podman rm -f -t 0 custode-a custode-b
echo "# removed in $(elapsed "$t1") s"
check "no run is left" wait_for 10 test "$(custode runs | awk 'NR > 1' | wc -l)" = 0
podman_net_end "$ns"
podman rmi -f "$img" >/dev/null 2>&1
journalctl -b -u custode --no-pager -o cat | grep -e "${id_a:0:12}" -e "$run_a" | tail -n 10 | diag
check "systemctl stop custode at the end" systemctl stop custode
check "no unit failed" test -z "$(systemctl list-units --failed --plain --no-legend)"
systemctl list-units --failed --plain --no-legend | diag
finish
