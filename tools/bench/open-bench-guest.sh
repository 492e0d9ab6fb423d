#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs inside the guest (tools/bench/open-bench starts it under icount):
# open()+close() of one file, same boot, every configuration measured from a
# cgroup at the SAME depth as a run's (memcg accounting of each struct file
# costs more the deeper the cgroup, so a base measured in the root cgroup
# flatters nothing and blames custode for depth):
#   base        no custode engine loaded
#   unconfined  engine loaded (lsm/file_open attached), process outside any run
#   confined    process inside a `read` run (path allowed, so the full lookup runs)
#   landlock    the anchor: Landlock with the same shape of rules (llbench: read+exec
#               on the system directories, read on /etc, 10 more directories)
#   llsec       that Landlock under the runs' seccomp filter (seccomponly), as a
#               custode run always has one
#   lsm floor   an LSM program on file_open that does nothing (lsmfloor: the
#               doctor's probe program), no engine: what any BPF-LSM engine
#               pays before its first instruction on this kernel; and that
#               floor under the seccomp filter (floor+seccomp), the least a
#               custode run's open could cost
#   sibling     a process below an attached run's gate but in no run, with
#               the gate up vs down (the gate check's own cost)
#   sibling2    the same two levels down (bench.slice/other/o2), with a second
#               run attached at that depth too (bench.slice/deep/attached2):
#               the gate then lists two levels, and a process below it in no
#               run looks at both (gate down: both detached)
#   attached    a process inside that attached run (profile read, moved in,
#               then exec'd: a resident, not a newcomer), vs the sibling with
#               the gate down: the attached run's lookups (gate, run cache,
#               the newcomer check) where confined/unconfined has the launched
#               run's
# Each round measures its configurations back to back and gives paired
# ratios; the figures are the median of OPENBENCH_ROUNDS rounds with their
# min..max. OPENBENCH_PARTS=gate: only the gated configurations. After
# each engine load/unload one discarded pass lets the kernel's deferred
# frees finish (icount runs one vCPU: they would steal the next measurement).
set -eu
REPO=$(cd "$(dirname "$0")/../.." && pwd)
B=$REPO/build
N=${OPENBENCH_ITERATIONS:-20000}
R=${OPENBENCH_ROUNDS:-3}
PARTS=${OPENBENCH_PARTS:-all}
FILE=/etc/passwd
CG=/sys/fs/cgroup
mkdir -p /usr/local/bin
cp "$B/tools/bench/openbench" "$B/tools/bench/llbench" "$B/tools/bench/seccomponly" "$B/tools/bench/lsmfloor" /usr/local/bin/
i=0
while [ $i -lt 10 ]; do mkdir -p /tmp/bench/d$i; i=$((i + 1)); done

"$B/custode" engine unload --force >/dev/null 2>&1 || true
# the depth of a run's cgroup, as the run itself sees it
depth=$("$B/custode" run --profile read -- /bin/cat /proc/self/cgroup | sed -n 's/^0:://p' | awk -F/ '{print NF - 1}')
[ "$depth" -ge 1 ] || { echo "open-bench: cannot tell a run's cgroup depth" >&2; exit 1; }
# bench.slice/other (depth 2) is the gated sibling; base cgroup at the run's depth
BCG=$CG/bench.slice
i=2
while [ $i -le "$depth" ]; do BCG=$BCG/l$i; i=$((i + 1)); done
[ "$depth" -ge 2 ] || BCG=$CG/bench-base
mkdir -p "$BCG" "$CG/bench.slice/attached" "$CG/bench.slice/other/o2" "$CG/bench.slice/deep/attached2"
SIB=$CG/bench.slice/other
SIB2=$CG/bench.slice/other/o2
# the controllers a run's ancestors enable, enabled down to the base cgroup too (memcg charges per level)
ctl=$(cat "$CG/custode/cgroup.subtree_control" 2>/dev/null || true)
enable() { for c in $ctl; do echo "+$c" >"$1/cgroup.subtree_control" 2>/dev/null || true; done; }
enable "$CG/bench.slice" # the sibling's parent, whatever the depth
d=$CG
for part in $(echo "${BCG#"$CG"/}" | tr / ' '); do # the base's ancestors, top down (a child enables what its parent has)
	d=$d/$part
	[ "$d" = "$BCG" ] || enable "$d"
done
incg() { sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec openbench "$@"' sh "$1" "$N" "$FILE"; }
inbase() { incg "$BCG"; }
inlf() { sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$BCG" lsmfloor "$@" openbench "$N" "$FILE"; }
inll() { sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$BCG" "$@" llbench "$N" "$FILE" 10; }
insib() { incg "$SIB"; }
insib2() { incg "$SIB2"; }
inatt() { incg "$CG/bench.slice/attached"; }
confined() { "$B/custode" run --profile read -- /usr/local/bin/openbench "$N" "$FILE"; }

out=$(mktemp)
echo "open()+close(), $N iterations, $R rounds, cgroup depth $depth (base: $BCG), ns/op (guest clock)" >&2
r=1
[ "$PARTS" = all ] || r=$((R + 1))
while [ $r -le "$R" ]; do
	"$B/custode" engine unload --force >/dev/null 2>&1 || true
	inbase >/dev/null
	b=$(inbase)
	l=$(inll)
	ls=$(inll seccomponly)
	lf=$(inlf)
	lfs=$(inlf seccomponly)
	"$B/custode" engine load >/dev/null
	inbase >/dev/null
	u=$(inbase)
	c=$(confined)
	echo "round $r base $b unconfined $u confined $c landlock $l llsec $ls lsm-floor $lf floor+seccomp $lfs" >&2
	echo "R $b $u $c $l $ls $lf $lfs" >>"$out"
	r=$((r + 1))
done
# the gate: an attached (empty) cgroup under bench.slice, the daemon up
"$B/custode" engine load >/dev/null
"$B/custode" daemon --no-resolver --stream none 2>/tmp/bench-daemon.log &
dpid=$!
i=0
until grep -q 'custode daemon: ready' /tmp/bench-daemon.log 2>/dev/null; do
	i=$((i + 1)); [ $i -lt 6000 ] || { cat /tmp/bench-daemon.log >&2; exit 1; }; sleep 0.1
done
rid=00000000000be0c1
rid2=00000000000be0c2
r=1
while [ $r -le "$R" ]; do
	# the daemon is stopped while a pass runs: its timers would land in some passes, not others
	kill -STOP "$dpid"
	down=$(insib)
	down2=$(insib2)
	kill -CONT "$dpid"
	"$B/custode" attach --cgroup "$CG/bench.slice/attached" --profile read --run-id $rid >/dev/null
	kill -STOP "$dpid"
	insib >/dev/null
	up=$(insib)
	inatt >/dev/null
	att=$(inatt)
	kill -CONT "$dpid"
	"$B/custode" attach --cgroup "$CG/bench.slice/deep/attached2" --profile read --run-id $rid2 >/dev/null
	kill -STOP "$dpid"
	insib2 >/dev/null
	up2=$(insib2)
	kill -CONT "$dpid"
	"$B/custode" detach "$rid2" >/dev/null
	"$B/custode" detach "$rid" >/dev/null
	echo "round $r sibling gate-down $down gate-up $up attached $att; two levels gate-down $down2 gate-up $up2" >&2
	echo "G $down $up $att $down2 $up2" >>"$out"
	r=$((r + 1))
done
kill "$dpid"; wait "$dpid" 2>/dev/null || true
"$B/custode" engine unload >/dev/null 2>&1 || true
rmdir "$CG/bench.slice/attached" "$SIB2" "$SIB" "$CG/bench.slice/deep/attached2" "$CG/bench.slice/deep" 2>/dev/null || true
d=$BCG
while [ "$d" != "$CG" ]; do rmdir "$d" 2>/dev/null || true; d=$(dirname "$d"); done

# median and spread of each paired ratio
ratio() { # $1: awk expression over the fields of lines tagged $2
	awk -v tag="$2" '$1 == tag { print '"$1"' }' "$out" | sort -g |
		awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
			printf "%.4f (min %.4f, max %.4f, %d rounds)\n", m, v[1], v[NR], NR }'
}
median() {
	awk -v tag="$2" '$1 == tag { print '"$1"' }' "$out" | sort -g |
		awk '{ v[NR] = $1 } END { printf "%.1f\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
echo "open()+close(), $N iterations x $R rounds, cgroup depth $depth, median ns/op (guest clock)"
[ "$PARTS" != all ] || echo "  base (no custode)       $(median '$2' R)"
[ "$PARTS" != all ] || echo "  custode, unconfined     $(median '$3' R)"
[ "$PARTS" != all ] || echo "  custode, confined       $(median '$4' R)"
[ "$PARTS" != all ] || echo "  Landlock (10 rules)     $(median '$5' R)"
[ "$PARTS" != all ] || echo "  Landlock + seccomp      $(median '$6' R)"
[ "$PARTS" != all ] || echo "  lsm floor (empty prog)  $(median '$7' R)"
[ "$PARTS" != all ] || echo "  lsm floor + seccomp     $(median '$8' R)"
echo "  sibling, gate down      $(median '$2' G)"
echo "  sibling, gate up        $(median '$3' G)"
echo "  attached run, confined  $(median '$4' G)"
echo "  sibling2, gates down    $(median '$5' G)"
echo "  sibling2, two levels up $(median '$6' G)"
[ "$PARTS" != all ] || echo "ratio unconfined/base  $(ratio '$3 / $2' R)"
[ "$PARTS" != all ] || echo "ratio confined/base    $(ratio '$4 / $2' R)"
[ "$PARTS" != all ] || echo "ratio confined/unconfined     $(ratio '$4 / $3' R)"
[ "$PARTS" != all ] || echo "ratio landlock/base    $(ratio '$5 / $2' R)"
[ "$PARTS" != all ] || echo "ratio confined/landlock      $(ratio '$4 / $5' R)"
[ "$PARTS" != all ] || echo "ratio confined/landlock+seccomp  $(ratio '$4 / $6' R)"
[ "$PARTS" != all ] || echo "ratio lsm-floor/base   $(ratio '$7 / $2' R)"
[ "$PARTS" != all ] || echo "ratio floor+seccomp/base  $(ratio '$8 / $2' R)"
[ "$PARTS" != all ] || echo "ratio confined/floor+seccomp  $(ratio '$4 / $8' R)"
[ "$PARTS" != all ] || echo "ratio llsec/floor+seccomp     $(ratio '$6 / $8' R)"
echo "ratio gated-sibling/gate-down  $(ratio '$3 / $2' G)"
echo "ratio attached/gate-down       $(ratio '$4 / $2' G)"
echo "ratio gated-sibling2/gates-down $(ratio '$6 / $5' G)"
rm -f "$out"
