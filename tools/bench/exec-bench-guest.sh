#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs inside the guest (tools/bench/exec-bench starts it under icount).
# execbench forks and execs a dynamically linked program (exectarget: the
# binary and its interpreter through bprm_check and file_open, libc mapped
# PROT_EXEC through mmap_file) and waits for it:
#   first  N copies of the program in a fresh directory, each exec'd once:
#          decisions never taken before (a fresh set per configuration)
#   same   one program exec'd N times (decisions kept by the run's table)
# Configurations, each as nobody (a run's CMD is) from a cgroup at the depth
# of a run's:
#   base        no custode engine loaded
#   seccomp     the runs' seccomp filter alone (seccomponly)
#   landlock    Landlock: read+execute on /usr /bin /sbin /lib /lib64, read on /etc
#   llsec       that Landlock under the runs' seccomp filter too
#   unconfined  the engine loaded, the process in no run
#   custode     in a run whose policy has the same rules (and /etc/shadow
#               denied, as the built-in profiles do)
# Paired ratios per round; median [min-max] over EXECBENCH_ROUNDS.
set -eu
REPO=$(cd "$(dirname "$0")/../.." && pwd)
B=$REPO/build
N=${EXECBENCH_ITERATIONS:-300}
R=${EXECBENCH_ROUNDS:-3}
CG=/sys/fs/cgroup
X=/usr/xb
mkdir -p /usr/local/bin /tmp/bench "$X"
cp "$B/tools/bench/execbench" "$B/tools/bench/seccomponly" /usr/local/bin/
cp "$B/tools/bench/exectarget" /usr/local/bin/exectarget
P=/tmp/bench/exec-policy.json
{
	printf '{"schema":"custode.policy/v1","name":"bench/exec","version":1,"content":{"filesystem":['
	printf '{"path":"/usr","allow":["read","exec"]},{"path":"/bin","allow":["read","exec"]},'
	printf '{"path":"/sbin","allow":["read","exec"]},{"path":"/lib","allow":["read","exec"]},'
	printf '{"path":"/lib64","allow":["read","exec"]},{"path":"/etc","allow":["read"]},'
	printf '{"path":"/etc/shadow","allow":[]}]}}'
} >"$P"
. "$REPO/tools/bench/guest-cgroup.sh"
bench_base_cgroup exec-bench

out=$(mktemp)
copies() { # a fresh directory of N copies (and the warm-up one), world-readable
	rm -rf "$X/set"
	mkdir -p "$X/set"
	i=0
	while [ $i -lt "$N" ]; do cp /usr/local/bin/exectarget "$X/set/t$i"; i=$((i + 1)); done
	cp /usr/local/bin/exectarget "$X/set/warm"
	chmod -R a+rX "$X"
}
# meas ROUND TAG CMD...: CMD N TARGET, first on fresh copies then the same program
meas() {
	rnd=$1 tag=$2
	shift 2
	copies
	f=$("$@" "$N" "$X/set")
	s=$("$@" "$N" /usr/local/bin/exectarget)
	echo "$rnd $tag $f $s" >>"$out"
	echo "round $rnd $tag first $f same $s" >&2
}
discard() { incg execbench --uid 65534 "$N" /usr/local/bin/exectarget >/dev/null; }

echo "exec of a dynamically linked program, $N per pass, $R rounds, cgroup depth $depth, ns/op (guest clock)" >&2
r=1
while [ $r -le "$R" ]; do
	"$B/custode" engine unload --force >/dev/null 2>&1 || true
	discard
	meas $r base incg execbench --uid 65534
	meas $r seccomp incg seccomponly execbench --uid 65534
	meas $r landlock incg execbench --uid 65534 --landlock
	meas $r llsec incg seccomponly execbench --uid 65534 --landlock
	"$B/custode" engine load >/dev/null
	discard
	meas $r unconfined incg execbench --uid 65534
	meas $r custode "$B/custode" run --policy "$P" -- /usr/local/bin/execbench
	r=$((r + 1))
done
"$B/custode" engine unload >/dev/null 2>&1 || true
rm -rf "$X"
d=$BCG
while [ "$d" != "$CG" ]; do rmdir "$d" 2>/dev/null || true; d=$(dirname "$d"); done

echo "exec-bench: fork+exec+exit+wait of a dynamically linked program, $N per pass, $R rounds, run cgroup depth $depth, $(uname -r)"
awk '
{ v[$1, $2, 1] = $3; v[$1, $2, 2] = $4; if ($1 > R) R = $1; seen[$2] = 1 }
function sorted(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t } }
function med(a, n) { return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
function ns(tag,   i, r, a, s) { s = sprintf("  %-22s", tag); for (i = 1; i <= 2; i++) { for (r = 1; r <= R; r++) a[r] = v[r, tag, i]; sorted(a, R); s = s sprintf(" %22.1f", med(a, R)) } print s }
function ratio(num, den,   i, r, a, s) { s = sprintf("  %-22s", num "/" den); for (i = 1; i <= 2; i++) { for (r = 1; r <= R; r++) a[r] = v[r, num, i] / v[r, den, i]; sorted(a, R); s = s sprintf(" %8.4f [%.4f-%.4f]", med(a, R), a[1], a[R]) } print s }
END {
	printf "  %-22s %22s %22s\n", "", "first exec", "same program";
	print " median ns/op"; ns("base"); ns("seccomp"); ns("landlock"); ns("llsec"); ns("unconfined"); ns("custode");
	print " paired ratios, median [min-max] over " R " rounds";
	ratio("seccomp", "base"); ratio("unconfined", "base"); ratio("landlock", "base"); ratio("custode", "base");
	ratio("custode", "landlock"); ratio("custode", "llsec"); ratio("custode", "seccomp")
}' "$out"
rm -f "$out"
