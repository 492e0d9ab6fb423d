#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs inside the guest (tools/bench/open-bench starts it under icount):
# open()+close() of one file, same boot, three configurations:
#   base        no custode engine loaded
#   unconfined  engine loaded (lsm/file_open attached), process outside any run
#   confined    process inside a `read` run (path allowed, so the full lookup runs)
set -eu
REPO=$(cd "$(dirname "$0")/../.." && pwd)
B=$REPO/build
N=${OPENBENCH_ITERATIONS:-20000}
FILE=/etc/passwd
# the read profile may exec only system directories
cp "$B/tools/bench/openbench" /usr/local/bin/openbench 2>/dev/null || { mkdir -p /usr/local/bin; cp "$B/tools/bench/openbench" /usr/local/bin/openbench; }

"$B/custode" engine unload --force >/dev/null 2>&1 || true
base1=$(openbench "$N" "$FILE")
"$B/custode" engine load >/dev/null
unconf1=$(openbench "$N" "$FILE")
conf1=$("$B/custode" run --profile read -- /usr/local/bin/openbench "$N" "$FILE")
# second round, reverse order, to show the figures are stable
conf2=$("$B/custode" run --profile read -- /usr/local/bin/openbench "$N" "$FILE")
unconf2=$(openbench "$N" "$FILE")
# attached runs elsewhere (issue 8): with the daemon up and an (empty) cgroup
# attached under bench.slice, a process outside every run pays the gate check:
#   gated/outside  a process in the root cgroup (its top ancestor is no gate)
#   gated/sibling  a process in bench.slice/other (below the gate, in no run)
CG=/sys/fs/cgroup
mkdir -p "$CG/bench.slice/attached" "$CG/bench.slice/other"
"$B/custode" daemon --no-resolver --stream none 2>/tmp/bench-daemon.log &
dpid=$!
i=0
until grep -q 'custode daemon: ready' /tmp/bench-daemon.log 2>/dev/null; do
	i=$((i + 1)); [ $i -lt 600 ] || { cat /tmp/bench-daemon.log >&2; exit 1; }; sleep 0.1
done
rid=00000000000be0c1
"$B/custode" attach --cgroup "$CG/bench.slice/attached" --profile read --run-id $rid >/dev/null
gout1=$(openbench "$N" "$FILE")
gsib1=$(sh -c 'echo $$ > '"$CG"'/bench.slice/other/cgroup.procs && exec openbench '"$N $FILE")
gsib2=$(sh -c 'echo $$ > '"$CG"'/bench.slice/other/cgroup.procs && exec openbench '"$N $FILE")
gout2=$(openbench "$N" "$FILE")
"$B/custode" detach "$rid" >/dev/null
kill "$dpid"; wait "$dpid" 2>/dev/null || true
rmdir "$CG/bench.slice/attached" "$CG/bench.slice/other" "$CG/bench.slice"

"$B/custode" engine unload >/dev/null
base2=$(openbench "$N" "$FILE")

awk -v b1="$base1" -v b2="$base2" -v u1="$unconf1" -v u2="$unconf2" -v c1="$conf1" -v c2="$conf2" -v n="$N" \
    -v go1="$gout1" -v go2="$gout2" -v gs1="$gsib1" -v gs2="$gsib2" 'BEGIN {
	b = (b1 + b2) / 2; u = (u1 + u2) / 2; c = (c1 + c2) / 2; go = (go1 + go2) / 2; gs = (gs1 + gs2) / 2;
	printf "open()+close(), %d iterations, ns/op (guest clock)\n", n;
	printf "  base (no custode)       %9.1f %9.1f\n", b1, b2;
	printf "  custode, unconfined     %9.1f %9.1f\n", u1, u2;
	printf "  custode, confined       %9.1f %9.1f\n", c1, c2;
	printf "  gated, outside          %9.1f %9.1f\n", go1, go2;
	printf "  gated, sibling          %9.1f %9.1f\n", gs1, gs2;
	printf "ratio unconfined/base  %.4f\n", u / b;
	printf "ratio confined/base    %.4f\n", c / b;
	printf "ratio gated-outside/base  %.4f\n", go / b;
	printf "ratio gated-sibling/base  %.4f\n", gs / b;
}'
