#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs inside the guest (tools/bench/churn-bench starts it under icount).
# The engine keeps one host-wide generation that every rename bumps
# (bpf/file.bpf.c: fs_gen_bump), and the kernel's rename_lock count moves
# with every rename: either voids every run's kept decisions (the run's
# decision table). An unlink, rmdir or link voids only its own inode's. This bench opens the same file (one per depth of
# CHURN_DEPTHS, /tmp/fo/c/d<D>/x/.../f0) CHURN_ITERATIONS times, each open
# after a round trip over two fifos with a churner process outside the run
# (in the base cgroup):
#   idle   the churner only answers
#   churn  before answering it renames /tmp/churn/a <-> b and creates and
#          unlinks /tmp/churn/u: every measured open follows one rename and
#          one unlink elsewhere on the host (the worst case: icount runs one
#          vCPU, so a free-running churner would only void the cache once
#          per time slice)
#   unlink before answering it only creates and unlinks /tmp/churn/u
#          (temporary files: builds, editors, package managers)
# Only open()+close() is timed (fobench sync). Configurations: base (no
# engine), Landlock (system rules + the tree + CHURN_RULES directories),
# unconfined (engine loaded, no run), custode (a run with the same rules);
# each as nobody, from a cgroup at the depth of a run's. Paired per-round
# ratios, median [min-max].
set -eu
REPO=$(cd "$(dirname "$0")/../.." && pwd)
B=$REPO/build
N=${CHURN_ITERATIONS:-1000}
R=${CHURN_ROUNDS:-3}
DEPTHS=${CHURN_DEPTHS:-2 32}
NR=${CHURN_RULES:-10}
CG=/sys/fs/cgroup
mkdir -p /usr/local/bin /tmp/fo /tmp/fosync /tmp/bench
cp "$B/tools/bench/fobench" /usr/local/bin/
fobench dirs /tmp/bench/d "$NR"
fobench mk /tmp/fo/c 1 $DEPTHS
FILES=
for D in $DEPTHS; do
	f=/tmp/fo/c/d$D
	i=2
	while [ $i -lt "$D" ]; do f=$f/x; i=$((i + 1)); done
	FILES="$FILES $f/f0"
done
rm -f /tmp/fosync/req /tmp/fosync/ack
mkfifo -m 0666 /tmp/fosync/req /tmp/fosync/ack
P=/tmp/bench/policy-churn.json
{
	printf '{"schema":"custode.policy/v1","name":"bench/churn","version":1,"content":{"filesystem":['
	printf '{"path":"/usr","allow":["read","exec"]},{"path":"/bin","allow":["read","exec"]},'
	printf '{"path":"/sbin","allow":["read","exec"]},{"path":"/lib","allow":["read","exec"]},'
	printf '{"path":"/lib64","allow":["read","exec"]},{"path":"/etc","allow":["read"]},'
	printf '{"path":"/tmp/fo","allow":["read"]},{"path":"/tmp/fosync","allow":["read","write"]}'
	j=0
	while [ $j -lt "$NR" ]; do printf ',{"path":"/tmp/bench/d%s","allow":["read"]}' $j; j=$((j + 1)); done
	printf ']}}'
} >"$P"

# the base cgroup at the depth of a run's (guest-cgroup.sh)
. "$REPO/tools/bench/guest-cgroup.sh"
bench_base_cgroup churn-bench

out=$(mktemp)
# meas ROUND TAG idle|churn CMD...: the churner in the base cgroup, CMD N REQ ACK FILES
meas() {
	rnd=$1 tag=$2 mode=$3
	shift 3
	incg fobench churn /tmp/churn /tmp/fosync/req /tmp/fosync/ack "$mode" &
	cpid=$!
	v=$("$@" "$N" /tmp/fosync/req /tmp/fosync/ack $FILES)
	wait "$cpid"
	echo "$rnd $tag-$mode $v" >>"$out"
	echo "round $rnd $tag-$mode $v" >&2
}
both() {
	rnd=$1 tag=$2
	shift 2
	meas "$rnd" "$tag" idle "$@"
	meas "$rnd" "$tag" churn "$@"
	meas "$rnd" "$tag" unlink "$@"
}

echo "cached open()+close() idle, under churn and under unlinks, $N iterations per file (depths $DEPTHS), $NR extra rules, $R rounds, cgroup depth $depth, ns/op (guest clock)" >&2
r=1
while [ $r -le "$R" ]; do
	"$B/custode" engine unload --force >/dev/null 2>&1 || true
	incg fobench sync 200 /tmp/fosync/req /tmp/fosync/ack $FILES >/dev/null & # discarded: deferred frees
	incg fobench churn /tmp/churn /tmp/fosync/req /tmp/fosync/ack idle; wait
	both $r base incg fobench sync --uid 65534
	both $r landlock incg fobench sync --uid 65534 --landlock "$NR"
	"$B/custode" engine load >/dev/null
	incg fobench sync 200 /tmp/fosync/req /tmp/fosync/ack $FILES >/dev/null &
	incg fobench churn /tmp/churn /tmp/fosync/req /tmp/fosync/ack idle; wait
	both $r unconfined incg fobench sync --uid 65534
	both $r custode "$B/custode" run --policy "$P" -- /usr/local/bin/fobench sync
	r=$((r + 1))
done
"$B/custode" engine unload >/dev/null 2>&1 || true
d=$BCG
while [ "$d" != "$CG" ]; do rmdir "$d" 2>/dev/null || true; d=$(dirname "$d"); done

echo "churn-bench: cached open()+close() of one file per depth, $N iterations, $R rounds, $NR extra rules, run cgroup depth $depth, $(uname -r)"
awk -v depths="$DEPTHS" '
	{ nd = NF - 2; for (i = 1; i <= nd; i++) v[$1, $2, i] = $(2 + i); if ($1 > R) R = $1; seen[$2] = 1 }
	function sorted(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t } }
	function med(a, n) { return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
	function ns(tag,   i, r, a, s) { s = sprintf("  %-30s", tag); for (i = 1; i <= nd; i++) { for (r = 1; r <= R; r++) a[r] = v[r, tag, i]; sorted(a, R); s = s sprintf(" %22.1f", med(a, R)) } print s }
	function ratio(num, den,   i, r, a, s) { s = sprintf("  %-30s", num "/" den); for (i = 1; i <= nd; i++) { for (r = 1; r <= R; r++) a[r] = v[r, num, i] / v[r, den, i]; sorted(a, R); s = s sprintf(" %8.4f [%.4f-%.4f]", med(a, R), a[1], a[R]) } print s }
	END {
		split(depths, dl, " "); s = sprintf("  %-30s", "depth"); for (i = 1; i <= nd; i++) s = s sprintf(" %22s", dl[i]); print s;
		print " median ns/op (open+close only)";
		ns("base-idle"); ns("base-churn"); ns("unconfined-idle"); ns("unconfined-churn");
		ns("custode-idle"); ns("custode-churn"); ns("landlock-idle"); ns("landlock-churn");
		ns("base-unlink"); ns("unconfined-unlink"); ns("custode-unlink"); ns("landlock-unlink");
		print " paired ratios, median [min-max] over " R " rounds";
		ratio("base-churn", "base-idle"); ratio("unconfined-idle", "base-idle"); ratio("unconfined-churn", "base-churn");
		ratio("custode-idle", "base-idle"); ratio("custode-churn", "base-churn"); ratio("custode-churn", "custode-idle");
		ratio("landlock-idle", "base-idle"); ratio("landlock-churn", "base-churn");
		ratio("custode-idle", "landlock-idle"); ratio("custode-churn", "landlock-churn");
		ratio("base-unlink", "base-idle"); ratio("custode-unlink", "base-unlink");
		ratio("custode-unlink", "custode-idle"); ratio("custode-unlink", "landlock-unlink");
	}' "$out"
rm -f "$out"
