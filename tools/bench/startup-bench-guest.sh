#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Runs inside the guest (tools/bench/startup-bench starts it under icount).
# Each round times STARTUPBENCH_RUNS (default 10) of each, interleaved, the
# engine loaded, wall time from the guest's clock (bash's EPOCHREALTIME):
#   true      /bin/true (fork+exec, the floor)
#   net-only  custode run --profile net-only -- /bin/true   (no file class: no table)
#   read      custode run --profile read --workspace W -- /bin/true (a file policy:
#             the run's decision table made at register, dropped at the end)
# Prints ms per run as median [min-max] over STARTUPBENCH_ROUNDS (default 7),
# and the paired per-round differences read - net-only and net-only - true.
set -eu
REPO=$(cd "$(dirname "$0")/../.." && pwd)
B=$REPO/build
N=${STARTUPBENCH_RUNS:-10}
R=${STARTUPBENCH_ROUNDS:-7}
W=/tmp/sb-ws
mkdir -p "$W"
"$B/custode" engine load >/dev/null
# each once first (the engine's own first-time costs)
"$B/custode" run --profile net-only -- /bin/true
"$B/custode" run --profile read --workspace "$W" -- /bin/true
us() { local t=${EPOCHREALTIME/./}; echo "${t#0}"; }
many() {
	local t0 t1 i
	t0=$(us)
	for ((i = 0; i < N; i++)); do "$@" >/dev/null; done
	t1=$(us)
	echo $(((t1 - t0) / N))
}
out=$(mktemp)
for ((r = 1; r <= R; r++)); do
	t=$(many /bin/true)
	n=$(many "$B/custode" run --profile net-only -- /bin/true)
	f=$(many "$B/custode" run --profile read --workspace "$W" -- /bin/true)
	echo "$r $t $n $f" >>"$out"
	echo "round $r: true $t us, net-only $n us, read $f us" >&2
done
"$B/custode" engine unload >/dev/null 2>&1 || true
echo "startup-bench: $N runs per kind per round, $R rounds, $(uname -r); ms per run, median [min-max]"
col() { awk -v c="$1" '{ print $c / 1000 }' "$out" | sort -n | awk -v name="$2" '{ v[NR] = $1 } END { printf "  %-28s %8.2f [%.2f-%.2f]\n", name, v[int((NR + 1) / 2)], v[1], v[NR] }'; }
col 2 "/bin/true"
col 3 "run --profile net-only"
col 4 "run --profile read"
awk '{ print ($4 - $3) / 1000 }' "$out" | sort -n | awk '{ v[NR] = $1 } END { printf "  read - net-only (paired)     %8.2f [%.2f-%.2f]\n", v[int((NR + 1) / 2)], v[1], v[NR] }'
awk '{ print ($3 - $2) / 1000 }' "$out" | sort -n | awk '{ v[NR] = $1 } END { printf "  net-only - true (paired)     %8.2f [%.2f-%.2f]\n", v[int((NR + 1) / 2)], v[1], v[NR] }'
rm -f "$out"
