#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs inside the guest (tools/bench/firstopen-bench starts it under icount).
# The FIRST open() of each file: custode's per-inode cache can't answer it,
# so it pays the full decision (bpf_d_path, the LPM lookups, the inode
# storage allocation for the cache slot). For each configuration of each
# round a fresh tree is created (fobench mk: FIRSTOPEN_FILES empty files in
# one directory at each depth of FIRSTOPEN_DEPTHS, /tmp/fo/<set>/d<D>/x/.../f<i>,
# D directories below the rule's /tmp/fo), opened once each (the first
# open), then a second time (the cached open), then removed. tmpfs keeps
# every dentry and inode in memory, so "first" means first open by the
# measured process and first decision for that inode, not a cold dcache.
#   base        no custode engine loaded
#   seccomp     the runs' seccomp filter alone (build/tools/bench/seccomponly)
#   landlock N  Landlock, system rules + /tmp/fo + N unrelated directory rules
#   llsec N     Landlock N under the runs' seccomp filter too (a Landlock sandbox with
#               custode's syscall filter: any seccomp filter puts every syscall on the
#               kernel's slower entry path)
#   unconfined  engine loaded, process in no run
#   custode N   inside a run whose policy has the same rules (custode run --policy),
#               and /etc/shadow denied, as the built-in profiles do: a restricting
#               identity, so the identity filter is in use as on a real host
# Every configuration runs as nobody (a run's CMD does) from a cgroup at the
# depth of a run's. Each round measures its configurations back to back and
# gives paired ratios; the figures are the median [min-max] over rounds.
set -eu
REPO=$(cd "$(dirname "$0")/../.." && pwd)
B=$REPO/build
N=${FIRSTOPEN_FILES:-200}
R=${FIRSTOPEN_ROUNDS:-3}
DEPTHS=${FIRSTOPEN_DEPTHS:-2 4 8 32}
RULES=${FIRSTOPEN_RULES:-10 1000}
CG=/sys/fs/cgroup
mkdir -p /usr/local/bin /tmp/fo /tmp/fosync /tmp/bench
cp "$B/tools/bench/fobench" "$B/tools/bench/seccomponly" /usr/local/bin/
max=0
for n in $RULES; do [ "$n" -le "$max" ] || max=$n; done
fobench dirs /tmp/bench/d "$max"

policy() { # N → a policy file: the system rules, the tree, the fifos, N extra directories
	f=/tmp/bench/policy-$1.json
	{
		printf '{"schema":"custode.policy/v1","name":"bench/fo%s","version":1,"content":{"filesystem":[' "$1"
		printf '{"path":"/usr","allow":["read","exec"]},{"path":"/bin","allow":["read","exec"]},'
		printf '{"path":"/sbin","allow":["read","exec"]},{"path":"/lib","allow":["read","exec"]},'
		printf '{"path":"/lib64","allow":["read","exec"]},{"path":"/etc","allow":["read"]},'
		printf '{"path":"/etc/shadow","allow":[]},'
		printf '{"path":"/tmp/fo","allow":["read"]},{"path":"/tmp/fosync","allow":["read","write"]}'
		j=0
		while [ $j -lt "$1" ]; do printf ',{"path":"/tmp/bench/d%s","allow":["read"]}' $j; j=$((j + 1)); done
		printf ']}}'
	} >"$f"
	echo "$f"
}
for n in $RULES; do policy "$n" >/dev/null; done

# the base cgroup at the depth of a run's (guest-cgroup.sh)
. "$REPO/tools/bench/guest-cgroup.sh"
bench_base_cgroup firstopen-bench

out=$(mktemp)
set -- $DEPTHS
nd=$#
# meas ROUND TAG CMD...: a fresh tree, CMD ROOT N DEPTHS, the tree removed
meas() {
	root=/tmp/fo/r$1-$2
	tag=$2
	rnd=$1
	shift 2
	fobench mk "$root" "$N" $DEPTHS
	v=$("$@" "$root" "$N" $DEPTHS)
	rm -rf "$root"
	echo "$rnd $tag $v" >>"$out"
	echo "round $rnd $tag $v" >&2
}
discard() { # after an engine load/unload: one pass on a throwaway tree (deferred frees)
	fobench mk /tmp/fo/discard "$N" $DEPTHS
	incg fobench open --uid 65534 /tmp/fo/discard "$N" $DEPTHS >/dev/null
	rm -rf /tmp/fo/discard
}

echo "first open()+close(), $N files per depth ($DEPTHS), rules $RULES, $R rounds, cgroup depth $depth (base: $BCG), ns/op (guest clock)" >&2
r=1
while [ $r -le "$R" ]; do
	"$B/custode" engine unload --force >/dev/null 2>&1 || true
	discard
	meas $r base incg fobench open --uid 65534
	meas $r seccomp incg seccomponly fobench open --uid 65534
	for n in $RULES; do meas $r "landlock$n" incg fobench open --uid 65534 --landlock "$n"; done
	for n in $RULES; do meas $r "llsec$n" incg seccomponly fobench open --uid 65534 --landlock "$n"; done
	"$B/custode" engine load >/dev/null
	discard
	meas $r unconfined incg fobench open --uid 65534
	for n in $RULES; do meas $r "custode$n" "$B/custode" run --policy "/tmp/bench/policy-$n.json" -- /usr/local/bin/fobench open; done
	r=$((r + 1))
done
"$B/custode" engine unload >/dev/null 2>&1 || true
d=$BCG
while [ "$d" != "$CG" ]; do rmdir "$d" 2>/dev/null || true; d=$(dirname "$d"); done

# table PASS TITLE: rows of median ns, then of paired ratios, one column per depth
# (fields: round tag first-open x nd, second-open x nd)
table() {
	awk -v pass="$1" -v nd="$nd" -v depths="$DEPTHS" -v rules="$RULES" -v title="$2" '
	{ for (i = 1; i <= nd; i++) v[$1, $2, i] = $(2 + pass * nd + i); if ($1 > R) R = $1; seen[$2] = 1 }
	function sorted(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t } }
	function med(a, n) { return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
	function ns(tag,   i, r, a, s) { s = sprintf("  %-22s", tag); for (i = 1; i <= nd; i++) { for (r = 1; r <= R; r++) a[r] = v[r, tag, i]; sorted(a, R); s = s sprintf(" %22.1f", med(a, R)) } print s }
	function ratio(num, den,   i, r, a, s) { if (!(num in seen) || !(den in seen)) return; s = sprintf("  %-22s", num "/" den); for (i = 1; i <= nd; i++) { for (r = 1; r <= R; r++) a[r] = v[r, num, i] / v[r, den, i]; sorted(a, R); s = s sprintf(" %8.4f [%.4f-%.4f]", med(a, R), a[1], a[R]) } print s }
	END {
		nr = split(rules, rl, " "); split(depths, dl, " ");
		print title; s = sprintf("  %-22s", "depth"); for (i = 1; i <= nd; i++) s = s sprintf(" %22s", dl[i]); print s;
		print " median ns/op"; ns("base"); ns("seccomp"); ns("unconfined");
		for (k = 1; k <= nr; k++) { ns("custode" rl[k]); ns("landlock" rl[k]); ns("llsec" rl[k]) }
		print " paired ratios, median [min-max] over " R " rounds";
		ratio("seccomp", "base"); ratio("unconfined", "base");
		for (k = 1; k <= nr; k++) { ratio("custode" rl[k], "base"); ratio("landlock" rl[k], "base"); ratio("custode" rl[k], "landlock" rl[k]); ratio("custode" rl[k], "llsec" rl[k]); ratio("custode" rl[k], "seccomp") }
	}' "$out"
}
echo "firstopen-bench: $N files per depth, $R rounds, rules $RULES, run cgroup depth $depth, $(uname -r)"
table 0 "FIRST open()+close() of each file"
table 1 "SECOND open()+close() of the same files (custode: the per-inode cache)"
rm -f "$out"
