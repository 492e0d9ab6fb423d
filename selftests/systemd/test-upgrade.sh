#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# An upgrade without draining (issue 16; docs/process.md, "Upgrades"), under real
# systemd in the systemd guest of tools/vmrun, after test-package.sh:
#
#   (cd build && cpack -G DEB)
#   tools/vmrun --rootfs systemd -- selftests/systemd/run-all.sh
#
# A run is live under custode.service; the package is installed again (a new
# /usr/bin/custode file, as every upgrade writes). Its postinst asks the running
# daemon to admit the new binary and restarts the service on it. Checked: the
# new binary was locked out before (control), is admitted, the new daemon runs
# it and adopted the run, and the run stayed confined throughout.
# Output: TAP. Exit 0 all passed, 1 a check failed, 77 not in the systemd guest.
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"

find_deb
ensure_installed
check "systemctl start custode" systemctl start custode

# A long-running run of the read profile (it loads the process class: from now on the
# engine answers only /usr/bin/custode's file). It waits on a FIFO, then tries the
# secret (denied by policy; readable by nobody otherwise) and a control file.
ws=/tmp/ws-upgrade
rm -rf "$ws" && mkdir -p "$ws" && chmod 0777 "$ws"
mkfifo -m 0666 "$ws/go"
(cd "$ws" && exec custode run --profile read --workspace "$ws" -- \
	sh -c 'cat /etc/ssh/sshd_config >/dev/null 2>&1; echo "before=$?"; read -r x <go; cat /etc/hostname;
	       cat /etc/ssh/sshd_config >/dev/null 2>&1; echo "after=$?"') >/tmp/upgrade.out 2>/tmp/upgrade.err &
run_pid=$!
live_run() { custode runs 2>/dev/null | awk 'NR > 1 && $3 == "live" { print $1 }'; }
some_live_run() { [[ -n $(live_run) ]]; }
check "a long-running run is listed" wait_for 60 some_live_run
id=$(live_run)
check "the run is denied /etc/ssh/sshd_config before the upgrade" wait_for 30 grep -qx 'before=1' /tmp/upgrade.out

# Control: any other file of the same binary is locked out, as the new one will be
old_ino=$(stat -c %i /usr/bin/custode)
old_pid=$(show_unit MainPID)
cp /usr/bin/custode /usr/local/sbin/custode-copy
custode_copy_refused() {
	local rc=0
	/usr/local/sbin/custode-copy engine status >/dev/null 2>/tmp/copy.err || rc=$?
	[[ $rc == 125 ]] && grep -q engine.protected /tmp/copy.err
}
check "control: another file of custode is refused (engine.protected)" custode_copy_refused
rm -f /usr/local/sbin/custode-copy

# The upgrade: the same package again writes a new /usr/bin/custode
if apt-get install -y -q --reinstall "$deb" >/tmp/apt-up.log 2>&1; then ok "apt-get install --reinstall (the upgrade)"; else
	not_ok "apt-get install --reinstall (the upgrade)"
fi
diag </tmp/apt-up.log
new_ino=$(stat -c %i /usr/bin/custode)
check "/usr/bin/custode is a new file (inode $old_ino -> $new_ino)" test "$new_ino" != "$old_ino"
check "custode.service is active after the upgrade" systemctl -q is-active custode
new_pid=$(show_unit MainPID)
check "the postinst restarted the service (main pid $old_pid -> $new_pid)" test "$new_pid" != "$old_pid"
check "the new daemon runs the new file" test "$(stat -L -c %i "/proc/$new_pid/exe")" = "$new_ino"
journalctl -b -u custode --no-pager -o cat >/tmp/journal-up.log 2>&1
check "the old daemon logged the admission" grep -q "admitted /usr/bin/custode" /tmp/journal-up.log
check "the new daemon adopted run $id" grep -q "adopted run $id" /tmp/journal-up.log
grep -e admitted -e adopted /tmp/journal-up.log | diag
admitted_lists_new() { # (no jq in the guest) the "admitted" array holds an entry with this inode
	custode engine status --json | tr -d ' \n' | grep -Eq "\"admitted\":\[[^]]*\"ino\":$new_ino[,}]"
}
check "engine status (by the new binary) lists it as admitted" admitted_lists_new
run_live() { custode runs 2>/dev/null | awk -v id="$id" '$1 == id && $3 == "live" { f = 1 } END { exit !f }'; }
check "run $id is live under the new daemon" run_live

echo go >"$ws/go"
wait "$run_pid"
echo "# the run: exit $?; $(tr '\n' ' ' </tmp/upgrade.out)"
diag </tmp/upgrade.err
check "after the upgrade the run still reads /etc/hostname (control)" grep -qx custode-vm /tmp/upgrade.out
check "after the upgrade the run is still denied /etc/ssh/sshd_config" grep -qx 'after=1' /tmp/upgrade.out
new_run_denied() { ! (cd /tmp && custode run --profile read -- cat /etc/ssh/sshd_config) >/dev/null 2>&1; }
check "a new run by the new binary is confined" new_run_denied

check "systemctl stop custode at the end" systemctl stop custode
check "no unit failed" test -z "$(systemctl list-units --failed --plain --no-legend)"
finish
