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
"$B/custode" engine unload >/dev/null
base2=$(openbench "$N" "$FILE")

awk -v b1="$base1" -v b2="$base2" -v u1="$unconf1" -v u2="$unconf2" -v c1="$conf1" -v c2="$conf2" -v n="$N" 'BEGIN {
	b = (b1 + b2) / 2; u = (u1 + u2) / 2; c = (c1 + c2) / 2;
	printf "open()+close(), %d iterations, ns/op (guest clock)\n", n;
	printf "  base (no custode)       %9.1f %9.1f\n", b1, b2;
	printf "  custode, unconfined     %9.1f %9.1f\n", u1, u2;
	printf "  custode, confined       %9.1f %9.1f\n", c1, c2;
	printf "ratio unconfined/base  %.4f\n", u / b;
	printf "ratio confined/base    %.4f\n", c / b;
}'
