#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs inside the guest (tools/bench/create-bench starts it under icount).
# Each iteration creates a file on tmpfs (a new inode given a dentry:
# security_d_instantiate), closes and unlinks it, from a cgroup at the depth
# of a run's, outside every run:
#   base        no custode engine loaded
#   unconfined  the engine loaded (every class), the process in no run
# Each round measures both back to back (a discarded pass after each engine
# load/unload); paired ratios, median [min-max] over CREATEBENCH_ROUNDS.
set -eu
REPO=$(cd "$(dirname "$0")/../.." && pwd)
B=$REPO/build
N=${CREATEBENCH_ITERATIONS:-20000}
R=${CREATEBENCH_ROUNDS:-5}
CG=/sys/fs/cgroup
mkdir -p /usr/local/bin /tmp/cb
chmod 1777 /tmp/cb
cp "$B/tools/bench/openbench" /usr/local/bin/openbench
. "$REPO/tools/bench/guest-cgroup.sh"
bench_base_cgroup create-bench
one() { incg openbench "$N" /tmp/cb/f create; }
out=$(mktemp)
r=1
while [ $r -le "$R" ]; do
	"$B/custode" engine unload --force >/dev/null 2>&1 || true
	one >/dev/null
	base=$(one)
	"$B/custode" engine load >/dev/null
	one >/dev/null
	unc=$(one)
	echo "$r $base $unc" >>"$out"
	echo "round $r base $base unconfined $unc" >&2
	r=$((r + 1))
done
"$B/custode" engine unload >/dev/null 2>&1 || true
echo "create-bench: create+close+unlink on tmpfs outside every run, $N iterations, $R rounds, $(uname -r)"
sort -n -k2 "$out" | awk '{ b[NR] = $2 } END { printf "  base        %10.1f ns (median)\n", b[int((NR + 1) / 2)] }'
sort -n -k3 "$out" | awk '{ u[NR] = $3 } END { printf "  unconfined  %10.1f ns (median)\n", u[int((NR + 1) / 2)] }'
awk '{ print $3 / $2 }' "$out" | sort -n | awk '{ v[NR] = $1 } END { printf "  unconfined/base %.4f [%.4f-%.4f]\n", v[int((NR + 1) / 2)], v[1], v[NR] }'
rm -f "$out"
