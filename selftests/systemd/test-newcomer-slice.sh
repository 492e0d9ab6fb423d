#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Services started below an attached slice come up confined (issue 17, item 5;
# docs/operations.md "Containers below an attached cgroup: newcomers"), with
# systemd as the runtime. Runs in the systemd guest of tools/vmrun:
#
#   (cd build && cpack -G DEB)
#   tools/vmrun --rootfs systemd -- selftests/systemd/test-newcomer-slice.sh
#
# A slice, custode-pod.slice, is attached with the read profile. systemd
# (Debian 12's 252: PID 1 forks, the child enters the unit's cgroup itself,
# sets the unit up, execs ExecStart) starts transient services in it with
# PrivateTmp= and ProtectSystem= (mounts in the unit's mount namespace, made
# inside the attached slice). Checked:
#   (a) before attach (the control): the service reads the secret
#       (/etc/ssh/sshd_config) and the control file (/etc/hostname);
#   (b) attached: the set-up succeeds (no 226/NAMESPACE), the control file is
#       read, the secret is denied to ExecStart (exit 1, cat's EACCES);
#   (c) attached, the resident itself may not mount (unshare -m + mount: EPERM
#       from the engine, mount exits non-zero), while the same command
#       before attach worked;
#   (d) a unit with PrivateTmp=/ProtectSystem= under the attach drop-in
#       (ExecStartPre=+custode attach --unit %n) starts, and its ExecStart is
#       confined from its exec.
# Output: TAP. Exit 0 all passed, 1 a check failed, 77 not in the systemd guest.
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"

ensure_installed
ok "custode is installed"
if systemctl start custode >/tmp/start.log 2>&1; then ok "systemctl start custode"; else
	diag </tmp/start.log
	echo "Bail out! the daemon did not start"
	exit 1
fi

slice=custode-pod.slice
cat >/etc/systemd/system/$slice <<EOF
[Unit]
Description=custode test: a pod-like slice
EOF
systemctl daemon-reload
# a holder keeps the slice's cgroup in place (it becomes a resident at attach)
systemd-run -q --unit=custode-pod-holder --slice=$slice sleep infinity
cg=/sys/fs/cgroup$(systemctl show -P ControlGroup $slice) # custode.slice/custode-pod.slice: "-" nests
check "the slice's cgroup exists ($cg)" wait_for 30 test -d "$cg" -a "$cg" != /sys/fs/cgroup

# svc NAME CMD...: a transient service in the slice with set-up that mounts; prints its exit status
svc() {
	local name=$1
	shift
	systemd-run -q --wait --collect --unit="$name" --slice=$slice -p PrivateTmp=yes -p ProtectSystem=full \
		-p StandardOutput=null -p StandardError=null "$@" >/dev/null 2>&1
	echo $?
}

# (a) the controls
check "before attach: a service with PrivateTmp/ProtectSystem reads the control file" \
	test "$(svc custode-nc-a1 cat /etc/hostname)" = 0
check "before attach: and the secret" test "$(svc custode-nc-a2 cat /etc/ssh/sshd_config)" = 0
check "before attach: a service may mount in a namespace of its own" \
	test "$(svc custode-nc-a3 unshare -m mount -t tmpfs none /mnt)" = 0

# attach the slice
if custode attach --cgroup "$cg" --profile read >/tmp/attach.out 2>&1; then ok "custode attach --cgroup $cg"; else
	diag </tmp/attach.out
	not_ok "custode attach --cgroup $cg"
fi
rid=$(custode runs 2>/dev/null | awk -v cg="$cg" 'NR > 1 && $NF == cg { print $1 }')

# (b) started below the attached slice: set-up done by systemd, ExecStart confined
rc=$(svc custode-nc-b1 cat /etc/hostname)
check "attached: the service's set-up mounts succeed and it reads the control file (exit $rc)" test "$rc" = 0
rc=$(svc custode-nc-b2 cat /etc/ssh/sshd_config)
check "attached: the secret is denied to ExecStart (exit $rc: 1 is cat's, 226 would be a refused set-up)" \
	test "$rc" = 1
# (c) the service itself, a resident, may not mount
rc=$(svc custode-nc-b3 unshare -m mount -t tmpfs none /mnt)
check "attached: ExecStart may not mount (exit $rc)" test "$rc" != 0 -a "$rc" != 226

if [[ -n $rid ]] && custode detach "$rid" >/dev/null 2>&1; then ok "detach"; else not_ok "detach ($rid)"; fi
systemctl stop custode-pod-holder.service $slice >/dev/null 2>&1

# (d) a sandboxed unit under the attach drop-in (deploy/systemd/custode-attach.conf):
# ExecStartPre attaches the unit's own cgroup, then PID 1's child for ExecStart
# enters it (a newcomer), mounts for PrivateTmp=/ProtectSystem= and execs
# ExecStart, which reads the control file and is denied the secret (exit 0 only then).
unit=custode-nc-dropin.service
cat >/etc/systemd/system/$unit <<EOF
[Unit]
Wants=custode.service
After=custode.service
[Service]
Type=oneshot
ExecStartPre=+/usr/bin/custode attach --unit %n --profile read
PrivateTmp=yes
ProtectSystem=full
ExecStart=/bin/sh -c 'cat /etc/hostname >/dev/null || exit 3; cat /etc/ssh/sshd_config >/dev/null 2>&1 && exit 4; exit 0'
EOF
systemctl daemon-reload
systemctl start $unit >/dev/null 2>&1
st=$(systemctl show -P ExecMainStatus $unit) res=$(systemctl show -P Result $unit)
check "a sandboxed unit under the attach drop-in starts, reads the control, is denied the secret (status $st, $res)" \
	test "$st" = 0 -a "$res" = success
finish
