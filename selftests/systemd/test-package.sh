#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The Debian package under real systemd (issue 17, item 2). Runs in the systemd
# guest of tools/vmrun, as root, with systemd as PID 1:
#
#   (cd build && cpack -G DEB)
#   tools/vmrun --rootfs systemd -- selftests/systemd/test-package.sh
#
# It installs build/custode_*.deb with apt (no network in the guest: the
# root file system holds every package it Depends on), enables and starts
# custode.service, and checks what the unit's hardening could break: the
# engine pinned in bpffs, custode's cgroup root, the control socket; a run is
# confined (an attack with its control), stays confined across `systemctl
# restart`, and is adopted again after `systemctl stop` + `start`.
# Output: TAP. Exit 0 all passed, 1 a check failed, 77 not in the systemd guest.
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"

# ---------------------------------------------------------------- install
find_deb
if apt-get install -y -q "$deb" >/tmp/apt.log 2>&1; then
	ok "apt-get install ./${deb##*/} (offline, dependencies from the root file system)"
else
	not_ok "apt-get install ./${deb##*/}"
	diag </tmp/apt.log
	echo "Bail out! the package did not install"
	exit 1
fi
check "dpkg: custode is installed" test "$(dpkg-query -W -f='${Status}' custode)" = "install ok installed"
check "/usr/bin/custode from the package" test -x /usr/bin/custode
check "unit installed at /usr/lib/systemd/system/custode.service" test -s /usr/lib/systemd/system/custode.service
check "the installed unit's ExecStart names /usr/bin/custode" grep -q '^ExecStart=/usr/bin/custode daemon' /usr/lib/systemd/system/custode.service
check "the package leaves the unit disabled and stopped" \
	test "$(systemctl is-enabled custode 2>/dev/null)" = disabled -a "$(systemctl is-active custode 2>/dev/null)" = inactive
echo "# installed at $(elapsed) s"

# ----------------------------------------------------------------- start
t1=$(date +%s.%N)
if systemctl enable --now custode >/tmp/enable.log 2>&1; then
	ok "systemctl enable --now custode (took $(elapsed "$t1") s)"
else
	not_ok "systemctl enable --now custode"
	diag </tmp/enable.log
	systemctl status --no-pager custode 2>&1 | diag
	journalctl -b -u custode --no-pager 2>&1 | tail -n 40 | diag
	echo "Bail out! the service did not start"
	exit 1
fi
check "systemctl is-active custode" systemctl -q is-active custode
check "systemctl is-enabled custode" systemctl -q is-enabled custode
check "Type=notify" test "$(show_unit Type)" = notify
# Type=notify: `start` returned, so READY=1 arrived; the status text says so
status_text=$(show_unit StatusText)
check "ready: StatusText \"$status_text\"" grep -q 'enforcing' <<<"$status_text"
main_pid=$(show_unit MainPID)
check "the main process is custode daemon (pid $main_pid)" grep -q 'custode' "/proc/$main_pid/comm"
check "no_new_privs in the daemon (NoNewPrivileges=)" grep -q '^NoNewPrivs:[[:space:]]*1' "/proc/$main_pid/status"
check "the daemon's capability bounding set is not full (CapabilityBoundingSet=)" \
	test "$(awk '/^CapBnd:/ { print $2 }' "/proc/$main_pid/status")" != "$(awk '/^CapBnd:/ { print $2 }' /proc/self/status)"
check "engine pinned in the host's bpffs: /sys/fs/bpf/custode" test -d /sys/fs/bpf/custode
check "custode's cgroup root: /sys/fs/cgroup/custode" test -d /sys/fs/cgroup/custode
check "control socket /run/custode/control.sock" test -S /run/custode/control.sock
check "RuntimeDirectory: /run/custode is 0700" test "$(stat -c %a /run/custode)" = 700
check "LogsDirectory: /var/log/custode exists" test -d /var/log/custode
if custode runs >/tmp/runs.log 2>&1; then ok "custode runs answers (through the control socket)"; else
	not_ok "custode runs answers"
	diag </tmp/runs.log
fi
journalctl -b -u custode --no-pager -o cat >/tmp/journal.log 2>&1
diag </tmp/journal.log
# the unit's sandbox must leave the daemon every socket family it uses
# (RestrictAddressFamilies= once lacked AF_NETLINK: "host addresses: run.setup_failed")
check "the daemon reported no setup failure in the journal" \
	bash -c '! grep -e "run.setup_failed" -e "not supported" -e "Operation not permitted" /tmp/journal.log'

# ------------------------------------------------------- a confined run
# Each attack has its control. /etc/shadow is 0640 root:shadow, closed to the
# run's user (nobody) by file modes as well; /etc/ssh/sshd_config is readable
# by nobody, so only custode's policy (read: /etc/ssh denied) closes it.
nobody_reads() { setpriv --reuid=65534 --regid=65534 --clear-groups cat "$1" >/dev/null; }
check "control: nobody reads /etc/ssh/sshd_config without custode" nobody_reads /etc/ssh/sshd_config
out=$(cd /tmp && custode run --profile read -- cat /etc/hostname 2>/tmp/run1.err)
if [[ $out == custode-vm ]]; then ok "control: custode run --profile read -- cat /etc/hostname works"; else
	not_ok "control: custode run --profile read -- cat /etc/hostname (got '$out')"
	diag </tmp/run1.err
fi
if (cd /tmp && custode run --profile read -- cat /etc/shadow) >/dev/null 2>/tmp/run2.err; then
	not_ok "custode run --profile read -- cat /etc/shadow is denied"
else ok "custode run --profile read -- cat /etc/shadow is denied"; fi
diag </tmp/run2.err
if (cd /tmp && custode run --profile read -- cat /etc/ssh/sshd_config) >/dev/null 2>/tmp/run3.err; then
	not_ok "custode run --profile read -- cat /etc/ssh/sshd_config is denied (by policy, not file modes)"
else ok "custode run --profile read -- cat /etc/ssh/sshd_config is denied (by policy, not file modes)"; fi
diag </tmp/run3.err
check "the daemon streamed the denial to /var/log/custode/events.jsonl" \
	wait_for 10 grep -q 'sshd_config' /var/log/custode/events.jsonl

# --------------------------------------------- restart, stop and start
# A long-running run waits on a FIFO in its workspace, then tries the secret
# and the control. $1: its name; the FIFO is /tmp/ws-$1/go.
start_long_run() {
	local ws=/tmp/ws-$1
	mkdir -p "$ws" && chmod 0777 "$ws"
	mkfifo -m 0666 "$ws/go"
	(cd "$ws" && exec custode run --profile read --workspace "$ws" -- \
		sh -c 'read -r x <go; cat /etc/hostname; cat /etc/ssh/sshd_config >/dev/null 2>&1; echo "secret=$?"') \
		>"/tmp/$1.out" 2>"/tmp/$1.err" &
	eval "${1}_pid=$!"
}
live_run() { # the one live run's id
	custode runs 2>/dev/null | awk 'NR > 1 && $3 == "live" { print $1 }'
}
some_live_run() { [[ -n $(live_run) ]]; }
run_listed() { # run_listed ID: the daemon lists run ID as live
	[[ -n $1 ]] && custode runs 2>/dev/null | awk -v id="$1" '$1 == id && $3 == "live" { f = 1 } END { exit !f }'
}
finish_long_run() { # $1 name: release it, wait, print its output
	echo go >"/tmp/ws-$1/go"
	local pid_var=${1}_pid
	wait "${!pid_var}"
	echo "# $1: exit $?; stdout: $(tr '\n' ' ' <"/tmp/$1.out")"
	diag <"/tmp/$1.err"
}

start_long_run restart
check "a long-running run is listed by the daemon" wait_for 60 some_live_run
custode runs 2>&1 | diag
id=$(live_run)
t1=$(date +%s.%N)
check "systemctl restart custode" systemctl restart custode
echo "# restart took $(elapsed "$t1") s"
check "active again after the restart" systemctl -q is-active custode
check "a new main process" test "$(show_unit MainPID)" != "$main_pid"
check "run $id is still listed, live, after the restart" run_listed "$id"
finish_long_run restart
check "after the restart the run still reads /etc/hostname (control)" grep -qx custode-vm /tmp/restart.out
check "after the restart the run is still denied /etc/ssh/sshd_config" grep -qx 'secret=1' /tmp/restart.out

start_long_run stopstart
check "a second long-running run is listed" wait_for 60 some_live_run
id=$(live_run)
check "systemctl stop custode" systemctl stop custode
check "inactive after stop" test "$(systemctl is-active custode)" = inactive
check "engine still pinned while stopped" test -d /sys/fs/bpf/custode
check "systemctl start custode" systemctl start custode
check "active after start" systemctl -q is-active custode
check "run $id is listed, live, after stop + start" run_listed "$id"
check "the new daemon adopted run $id (journal)" \
	bash -c "journalctl -b -u custode --no-pager -o cat | grep -q 'adopted run $id'"
finish_long_run stopstart
check "after stop + start the run still reads /etc/hostname (control)" grep -qx custode-vm /tmp/stopstart.out
check "after stop + start the run is still denied /etc/ssh/sshd_config" grep -qx 'secret=1' /tmp/stopstart.out

# Restart=always: a daemon killed by SIGKILL comes back (RestartSec=5s)
pid=$(show_unit MainPID)
check "systemctl kill -s KILL custode" systemctl kill -s KILL custode
restarted() { # a main process other than $1, and active
	local now
	now=$(show_unit MainPID)
	[[ $now != 0 && $now != "$1" ]] && systemctl -q is-active custode
}
check "Restart=always: a new daemon is active within 30 s" wait_for 30 restarted "$pid"
runs_answers() { custode runs >/dev/null; }
check "custode runs answers after the crash restart" runs_answers

# ----------------------------------------- an orphan, reaped by the daemon
# Its launcher killed, the run is reaped by the daemon's 2 s timer, under the
# unit's sandbox: cgroup, state and its private tmp (/tmp read-only to the
# daemon once left every such tmp behind: ReadWritePaths=/tmp).
start_long_run orphan
check "an orphan-to-be is listed" wait_for 60 some_live_run
id=$(live_run)
check "its private tmp /tmp/custode-$id exists" test -d "/tmp/custode-$id"
kill -KILL "$orphan_pid"
wait "$orphan_pid" 2>/dev/null
reaped() { [[ -n $1 && ! -e /tmp/custode-$1 && ! -e /run/custode/runs/$1.lock && ! -e /run/custode/runs/$1.json ]]; }
check "the daemon reaped orphan $id: its tmp, lock and state gone" wait_for 60 reaped "$id"
check "and its cgroup" test ! -e "/sys/fs/cgroup/custode/run-$id"

# ----------------------------------------------------------------- end
check "systemctl stop custode at the end" systemctl stop custode
check "no unit failed" test -z "$(systemctl list-units --failed --plain --no-legend)"
systemctl list-units --failed --plain --no-legend | diag
finish
