#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Attaching systemd units (issue 17, item 3). Runs in the systemd guest of
# tools/vmrun, as root, with systemd as PID 1:
#
#   (cd build && cpack -G DEB)
#   tools/vmrun --rootfs systemd -- selftests/systemd/test-attach-unit.sh
#
# It installs build/custode_*.deb (unless installed: it may run after
# test-package.sh in the same guest, selftests/systemd/run-all.sh), starts
# custode.service, and writes a test service, custode-victim.service: a
# shell loop that, every 0.2 s, tries to read /etc/ssh/sshd_config (readable
# by root without custode, denied by the profile) and /etc/hostname (its
# control, allowed) and appends the outcome, with its pid and a counter, to
# /var/lib/custode-victim/log (the run's workspace). Checked:
#   (a) unattached, the service reads both (the control);
#   (b) `custode attach --unit` of the running service: its next read of the
#       secret is denied, the control still read;
#   (c) `custode detach`: allowed again;
#   (d) with deploy/systemd/custode-attach.conf as its drop-in
#       (ExecStartPre=+custode attach --unit %n): the main process is denied
#       from its first read, and again after `systemctl restart` (a new
#       cgroup, attached anew); `systemctl stop` leaves no attached run.
#   (e) a unit with PrivateNetwork=yes attached with a network policy: the
#       daemon's resolver answers its DNS inside the unit's namespace
#       (RestrictNamespaces=net; with =yes the attach is refused, the control);
#   (f) the same unit with the drop-in: its first lookup is answered.
# Plus the refusals: unknown unit, unit without a cgroup, no systemctl.
# Output: TAP. Exit 0 all passed, 1 a check failed, 77 not in the systemd guest.
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"

# ------------------------------------------------- the package, the daemon
install_and_start

# ------------------------------------------------------- the test service
unit=custode-victim.service
ws=/var/lib/custode-victim
log=$ws/log
cg=/sys/fs/cgroup/system.slice/$unit
mkdir -p "$ws"
# in /usr (read and exec allowed by the profiles), not in the repository
cat >/usr/local/bin/custode-victim <<'EOF'
#!/bin/sh
# try the secret and the control, append the outcome; every 0.2 s
i=0
while :; do
	i=$((i + 1))
	if cat /etc/ssh/sshd_config >/dev/null 2>&1; then s=read; else s=denied; fi
	if cat /etc/hostname >/dev/null 2>&1; then c=read; else c=denied; fi
	echo "pid=$$ i=$i secret=$s control=$c" >>/var/lib/custode-victim/log
	sleep 0.2
done
EOF
chmod 0755 /usr/local/bin/custode-victim
# No sandboxing options: systemd would mount for them in the attached cgroup
# (deploy/systemd/custode-attach.conf). stdout/stderr to /dev/null: the
# outcome goes to the log in the workspace.
cat >/etc/systemd/system/$unit <<EOF
[Unit]
Description=custode test service: reads a secret and a control file in a loop
[Service]
ExecStart=/usr/local/bin/custode-victim
StandardOutput=null
StandardError=null
EOF
systemctl daemon-reload

main_pid() { systemctl show -P MainPID "$unit"; }
# the last line of the log written by pid $1, or nothing
last_of() { grep "^pid=$1 " "$log" 2>/dev/null | tail -n 1; }
iter_of() { sed -n 's/.* i=\([0-9]*\) .*/\1/p' <<<"$1"; }
# has pid $1 written an iteration numbered at least $2?
reached() { local l; l=$(last_of "$1"); [[ -n $l ]] && (($(iter_of "$l") >= $2)); }
# the line of pid $1's iteration $2
line_of() { grep "^pid=$1 i=$2 " "$log" 2>/dev/null | head -n 1; }
# the runs listed for the unit's cgroup (the last column of `custode runs`; no jq in the guest)
run_ids_of_cg() { custode runs 2>/dev/null | awk -v cg="$cg" 'NR > 1 && $NF == cg { print $1 }'; }
runs_of_cg() { run_ids_of_cg | wc -l; }
no_run_of_cg() { [[ $(runs_of_cg) == 0 ]]; }
# After an event at iteration $2 of pid $1 (the last one written when it
# happened), the iteration after next began after it (the next may have been
# under way): $2 + 2. Prints that line.
after_event() {
	local pid=$1 want=$(($2 + 2))
	wait_for 30 reached "$pid" "$want" || return 1
	line_of "$pid" "$want"
}

# ------------------------------------------------------------ refusals
attach_out() { # attach_out ARGS...: run custode attach, stdout+stderr in /tmp/attach.out, its exit printed
	custode attach "$@" >/tmp/attach.out 2>&1
	echo $?
}
rc=$(attach_out --unit custode-no-such-unit --profile read)
check "attach --unit of an unknown unit: exit 125 (got $rc)" test "$rc" = 125
check "... reason unit.unknown" grep -q 'unit.unknown' /tmp/attach.out
diag </tmp/attach.out
rc=$(attach_out --unit custode-victim --profile read)
check "attach --unit of a stopped unit: exit 125 (got $rc)" test "$rc" = 125
check "... reason unit.no_cgroup" grep -q 'unit.no_cgroup' /tmp/attach.out
diag </tmp/attach.out
rc=$(PATH=/nonexistent /usr/bin/custode attach --unit custode-victim --profile read 2>&1 >/dev/null | tee /tmp/attach.out >/dev/null; echo "${PIPESTATUS[0]}")
check "attach --unit without systemctl in PATH: exit 125 (got $rc)" test "$rc" = 125
check "... reason unit.no_systemd" grep -q 'unit.no_systemd' /tmp/attach.out
diag </tmp/attach.out
rc=$(attach_out --unit 'custode-*' --profile read)
check "attach --unit with a glob: usage, exit 2 (got $rc)" test "$rc" = 2
rc=$(attach_out --unit custode-victim --cgroup "$cg" --profile read)
check "attach --unit and --cgroup together: usage, exit 2 (got $rc)" test "$rc" = 2

# ---------------------------------------------- (a) unattached: the control
rm -f "$log"
check "systemctl start $unit" systemctl start "$unit"
pid=$(main_pid)
check "(a) the service writes its log (pid $pid)" wait_for 30 reached "$pid" 2
line=$(line_of "$pid" 2)
echo "# $line"
check "(a) control: unattached, the service reads /etc/ssh/sshd_config" grep -q 'secret=read control=read' <<<"$line"

# ------------------------------------------------------- (b) attach --unit
# the attach takes seconds (it may load engine classes): "next" counts from its return
if custode attach --unit custode-victim --profile workspace-write --workspace "$ws" >/tmp/attach.out 2>&1; then
	ok "custode attach --unit custode-victim --profile workspace-write"
else not_ok "custode attach --unit custode-victim --profile workspace-write"; fi
now=$(iter_of "$(last_of "$pid")")
diag </tmp/attach.out
check "the run's cgroup is the unit's: $cg" grep -q "$cg" /tmp/attach.out
line=$(after_event "$pid" "$now")
echo "# $line"
check "(b) attached: the service's next read of /etc/ssh/sshd_config is denied" grep -q 'secret=denied' <<<"$line"
check "(b) attached: it still reads /etc/hostname (control)" grep -q 'control=read' <<<"$line"
check "(b) the same process (confined while running)" test "$(main_pid)" = "$pid"

# ------------------------------------------------------------ (c) detach
if custode detach --cgroup "$cg" >/tmp/detach.out 2>&1; then ok "custode detach --cgroup $cg"; else
	not_ok "custode detach --cgroup $cg"
fi
now=$(iter_of "$(last_of "$pid")")
diag </tmp/detach.out
check "the detach counted denials" grep -qE 'detached run .*: [1-9][0-9]* denial' /tmp/detach.out
line=$(after_event "$pid" "$now")
echo "# $line"
check "(c) detached: the service reads /etc/ssh/sshd_config again" grep -q 'secret=read control=read' <<<"$line"
check "systemctl stop $unit" systemctl stop "$unit"

# ----------------------------------------------------- (d) the drop-in
mkdir -p "/etc/systemd/system/$unit.d"
# the shipped example, with a profile that lets the service write its log
sed -e 's|--profile read$|--profile workspace-write --workspace /var/lib/custode-victim|' \
	"$repo/deploy/systemd/custode-attach.conf" >"/etc/systemd/system/$unit.d/custode-attach.conf"
check "the drop-in's ExecStartPre attaches %n" \
	grep -q '^ExecStartPre=+/usr/bin/custode attach --unit %n --profile workspace-write' "/etc/systemd/system/$unit.d/custode-attach.conf"
systemctl daemon-reload
rm -f "$log"
if systemctl start "$unit" >/tmp/start.out 2>&1; then ok "systemctl start $unit (with the drop-in)"; else
	not_ok "systemctl start $unit (with the drop-in)"
	diag </tmp/start.out
	journalctl -b -u "$unit" --no-pager -o cat | tail -n 20 | diag
fi
pid=$(main_pid)
check "(d) the service writes its log (pid $pid)" wait_for 30 reached "$pid" 1
line=$(line_of "$pid" 1)
echo "# $line"
check "(d) confined from its first exec: the first read of /etc/ssh/sshd_config is denied" \
	grep -q 'secret=denied control=read' <<<"$line"
check "(d) one run for the unit's cgroup" test "$(runs_of_cg)" = 1
custode runs | diag
old_id=$(run_ids_of_cg)

t1=$(date +%s.%N)
check "systemctl restart $unit" systemctl restart "$unit"
echo "# restart took $(awk -v a="$t1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
new=$(main_pid)
check "(d) a new main process after the restart ($pid -> $new)" test "$new" != "$pid"
check "(d) the restarted service writes its log" wait_for 30 reached "$new" 1
line=$(line_of "$new" 1)
echo "# $line"
check "(d) after systemctl restart: confined from its first exec again" grep -q 'secret=denied control=read' <<<"$line"
new_id=$(run_ids_of_cg)
check "(d) one run for the new cgroup, a new run ($old_id -> $new_id)" \
	test "$(runs_of_cg)" = 1 -a -n "$new_id" -a "$new_id" != "$old_id"
check "(d) the old run was reaped (journal)" \
	bash -c "journalctl -b -u custode --no-pager -o cat | grep -q 'reaped run $old_id'"

check "systemctl stop $unit" systemctl stop "$unit"
check "(d) after stop no run is left for the unit's cgroup (reaped)" wait_for 10 no_run_of_cg
journalctl -b -u custode --no-pager -o cat | grep -e "$old_id" -e "$new_id" | diag
journalctl -b -u "$unit" --no-pager -o cat | tail -n 10 | diag

# ------------------------------- (e) DNS in a unit's own network namespace
# A unit with PrivateNetwork=yes (a network namespace of its own, loopback only)
# looking a name up in a loop, attached with builtin/net-only (a network section,
# no name granted). The daemon's resolver listens in the unit's namespace, so the
# unit's queries reach it there (refused: dns.name.denied, in the stream with the
# run's id) instead of being denied in the kernel. Control: with the daemon's
# unit at RestrictNamespaces=yes it cannot enter the namespace, and the attach is
# refused. Then detaching closes the resolver's sockets there.
dunit=custode-dns.service
cat >/usr/local/bin/custode-dns <<'EOF'
#!/bin/sh
while :; do
	# gethostbyname (getent hosts): getaddrinfo's AI_ADDRCONFIG asks nothing with loopback only
	getent hosts custode-dns.test >/dev/null 2>&1
	sleep 0.2
done
EOF
chmod 0755 /usr/local/bin/custode-dns
cat >/etc/systemd/system/$dunit <<EOF
[Unit]
Description=custode test service: looks a name up in a loop, in a network namespace of its own
[Service]
ExecStart=/usr/local/bin/custode-dns
PrivateNetwork=yes
StandardOutput=null
StandardError=null
EOF
events=/var/log/custode/events.jsonl
run_ids_of_dns() { custode runs 2>/dev/null | awk -v cg="/sys/fs/cgroup/system.slice/$dunit" 'NR > 1 && $NF == cg { print $1 }'; }
journal_has() { journalctl -b -u custode --no-pager -o cat | grep -q "$1"; }
dns_record_of() { grep -E '"type": ?"dns"' "$events" 2>/dev/null | grep "$1" | grep -q 'dns.name.denied'; }
mkdir -p /etc/systemd/system/custode.service.d
printf '[Service]\nRestrictNamespaces=yes\n' >/etc/systemd/system/custode.service.d/ns.conf
systemctl daemon-reload
check "(e) control: custode restarted with RestrictNamespaces=yes" systemctl restart custode
check "systemctl start $dunit" systemctl start "$dunit"
rc=$(attach_out --unit custode-dns --profile net-only)
diag </tmp/attach.out
check "(e) control: at RestrictNamespaces=yes the unit's namespace can't be entered: attach refused (exit $rc)" test "$rc" = 125
rm -rf /etc/systemd/system/custode.service.d
systemctl daemon-reload
check "(e) custode restarted with the shipped unit" systemctl restart custode
check "(e) the shipped unit says RestrictNamespaces=net" \
	bash -c "systemctl cat custode | grep -q '^RestrictNamespaces=net$'"
if custode attach --unit custode-dns --profile net-only >/tmp/attach.out 2>&1; then
	ok "(e) custode attach --unit custode-dns --profile net-only"
else not_ok "(e) custode attach --unit custode-dns --profile net-only"; fi
diag </tmp/attach.out
dns_id=$(sed -n 's/^custode: attached run \([0-9a-f]*\):.*/\1/p' /tmp/attach.out)
check "(e) no warning: the resolver listens in the unit's namespace" bash -c "! grep -q 'not served' /tmp/attach.out"
check "(e) the daemon listens in the unit's network namespace (journal)" wait_for 10 journal_has 'listening in network namespace'
check "(e) the unit's queries reach the resolver there: refused for run ${dns_id:-?} (stream)" \
	wait_for 30 dns_record_of "${dns_id:-no-run-id}"
if ! dns_record_of "${dns_id:-no-run-id}"; then
	grep "${dns_id:-no-run-id}" "$events" 2>/dev/null | tail -n 5 | diag
	journalctl -b -u custode --no-pager -o cat | tail -n 15 | diag
	cat /etc/resolv.conf /etc/nsswitch.conf 2>&1 | diag
else
	grep -E '"type": ?"dns"' "$events" | grep "$dns_id" | tail -n 1 | diag
fi
check "(e) custode detach --cgroup" custode detach --cgroup "/sys/fs/cgroup/system.slice/$dunit"
check "(e) after detach the resolver stops listening there (journal)" wait_for 30 journal_has 'no run left in network namespace'
check "systemctl stop $dunit" systemctl stop "$dunit"

# ------------------- (f) the drop-in and PrivateNetwork=: DNS from the first query
# With deploy/systemd/custode-attach.conf (ExecStartPre=+custode attach --unit %n)
# the attach runs in the unit's own network namespace already (systemd makes it
# before the first ExecStartPre, '+' or not), so the resolver listens there before
# the main process starts: its very first lookup is answered by the resolver (a
# dns record of the run), none is denied in the kernel (no net.dns.denied).
cat >/usr/local/bin/custode-dns <<'EOF'
#!/bin/sh
getent hosts custode-dns-first.test >/dev/null 2>&1
exec sleep 1000
EOF
chmod 0755 /usr/local/bin/custode-dns
mkdir -p "/etc/systemd/system/$dunit.d"
sed -e 's|--profile read$|--profile net-only|' "$repo/deploy/systemd/custode-attach.conf" \
	>"/etc/systemd/system/$dunit.d/custode-attach.conf"
systemctl daemon-reload
check "(f) systemctl start $dunit (PrivateNetwork=yes, with the drop-in)" systemctl start "$dunit"
first_id=$(run_ids_of_dns)
first_record() { grep -E '"type": ?"dns"' "$events" 2>/dev/null | grep "${first_id:-no-run-id}" | grep -q 'custode-dns-first.test'; }
check "(f) the main process's first lookup is answered by the resolver (run ${first_id:-?})" wait_for 30 first_record
check "(f) no DNS of the run was denied in the kernel (net.dns.denied)" \
	bash -c "! grep '${first_id:-no-run-id}' '$events' | grep -q 'net.dns.denied'"
check "systemctl stop $dunit" systemctl stop "$dunit"
rm -rf "/etc/systemd/system/$dunit.d" "/etc/systemd/system/$dunit" /usr/local/bin/custode-dns
systemctl daemon-reload

# ----------------------------------------------------------------- end
rm -rf "/etc/systemd/system/$unit.d" "/etc/systemd/system/$unit"
systemctl daemon-reload
check "systemctl stop custode at the end" systemctl stop custode
check "no unit failed" test -z "$(systemctl list-units --failed --plain --no-legend)"
systemctl list-units --failed --plain --no-legend | diag
finish
