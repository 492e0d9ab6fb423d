#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs inside the guest (tools/bench/cachemem-bench starts it).
# Kernel memory that a run's file decisions take, and whether it goes with the
# run. CACHEMEM_FILES files are made afresh each round in one directory, /tmp/cm/x, whose rule
# has a narrower one below it (/tmp/cm/x/deny): every file there is decided on
# its own, the case a directory decision can't cover. Each round:
#   base    the files exist, the engine is loaded, no run
#   during  a run (as nobody, custode run --policy) has opened every file once
#           and is still alive
#   after   the run ended, its table freed (engine status shows none; an
#           engine of before ABI 9 has no tables to wait for)
# Kernel memory = SUnreclaim + VmallocUsed from /proc/meminfo (BPF local
# storage is slab, BPF arrays this size are vmalloc). The figures are the
# deltas from base, median [min-max] over rounds, with the per-file share.
set -eu
REPO=$(cd "$(dirname "$0")/../.." && pwd)
B=$REPO/build
N=${CACHEMEM_FILES:-20000}
R=${CACHEMEM_ROUNDS:-3}
mkdir -p /tmp/cm /tmp/cmsync
chmod 0777 /tmp/cmsync
chmod 0755 /tmp/cm
# fresh files (new inodes) for every round: nothing a run left on the last round's inodes is reused
files() {
	rm -rf /tmp/cm/x
	mkdir -m 0755 /tmp/cm/x
	i=0
	while [ $i -lt "$N" ]; do
		: >/tmp/cm/x/f$i
		i=$((i + 1))
	done
	chmod 0644 /tmp/cm/x/*
}
P=/tmp/cm-policy.json
printf '{"schema":"custode.policy/v1","name":"bench/cachemem","version":1,"content":{"filesystem":[%s]}}' \
	'{"path":"/usr","allow":["read","exec"]},{"path":"/bin","allow":["read","exec"]},{"path":"/lib","allow":["read","exec"]},{"path":"/lib64","allow":["read","exec"]},{"path":"/etc","allow":["read"]},{"path":"/tmp/cm","allow":["read"]},{"path":"/tmp/cm/x/deny","allow":[]},{"path":"/tmp/cmsync","allow":["read","write","create","delete"]},{"path":"/dev/null","allow":["read","write"]}' >"$P"
chmod 0644 "$P"

kmem() { awk '/^SUnreclaim:|^VmallocUsed:/ {s += $2} END {print s}' /proc/meminfo; }
settle() { sync; echo 1 >/proc/sys/vm/drop_caches; sleep 1; }
tables() { "$B/custode" engine status --json | sed -n 's/.*"tables": *\([0-9]*\).*/\1/p' | head -n 1; }

"$B/custode" run --profile read -- /bin/true >/dev/null # loads the engine
out=$(mktemp)
r=1
while [ $r -le "$R" ]; do
	rm -f /tmp/cmsync/done /tmp/cmsync/go
	files
	settle
	base=$(kmem)
	"$B/custode" run --user nobody --policy "$P" -- /bin/sh -c \
		'cat /tmp/cm/x/f* >/dev/null && : >/tmp/cmsync/done; while [ ! -e /tmp/cmsync/go ]; do sleep 0.05; done' &
	pid=$!
	while [ ! -e /tmp/cmsync/done ]; do sleep 0.05; done
	settle
	during=$(kmem)
	: >/tmp/cmsync/go
	wait $pid
	while t=$(tables) && [ -n "$t" ] && [ "$t" != 0 ]; do sleep 0.05; done
	settle
	after=$(kmem)
	echo "$r $((during - base)) $((after - base))" >>"$out"
	echo "round $r: base $base KiB, during +$((during - base)) KiB, after +$((after - base)) KiB" >&2
	r=$((r + 1))
done
echo "cachemem-bench: $N files decided one by one, kernel memory (SUnreclaim + VmallocUsed) over base, KiB"
for col in 2 3; do
	name=$([ $col = 2 ] && echo "while the run lives" || echo "after the run ended")
	sort -n -k$col "$out" | awk -v c=$col -v n="$N" -v name="$name" '
		{ v[NR] = $c } END {
			m = v[int((NR + 1) / 2)]
			printf "  %-22s %8d  [%d..%d]  (%.1f bytes per file)\n", name, m, v[1], v[NR], m * 1024 / n
		}'
done
rm -f "$out"
