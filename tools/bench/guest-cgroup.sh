# SPDX-License-Identifier: Apache-2.0
# Sourced by the guest bench scripts (firstopen-bench-guest.sh, churn-bench-guest.sh):
#   bench_base_cgroup WHO   unload the engine; set BCG to a cgroup at the depth of a
#                           run's (CG/bench.slice/l2/...), its ancestors enabling the
#                           controllers a run's ancestors do (memcg charges per level)
#   incg CMD...             run CMD in BCG
# Needs B (the build) and CG (the cgroup v2 mount); WHO names the bench in errors.
bench_base_cgroup() {
	"$B/custode" engine unload --force >/dev/null 2>&1 || true
	depth=$("$B/custode" run --profile read -- /bin/cat /proc/self/cgroup | sed -n 's/^0:://p' | awk -F/ '{print NF - 1}')
	[ "$depth" -ge 1 ] || { echo "$1: cannot tell a run's cgroup depth" >&2; exit 1; }
	BCG=$CG/bench.slice
	i=2
	while [ $i -le "$depth" ]; do BCG=$BCG/l$i; i=$((i + 1)); done
	[ "$depth" -ge 2 ] || BCG=$CG/bench-base
	mkdir -p "$BCG"
	ctl=$(cat "$CG/custode/cgroup.subtree_control" 2>/dev/null || true)
	d=$CG
	for part in $(echo "${BCG#"$CG"/}" | tr / ' '); do
		d=$d/$part
		[ "$d" = "$BCG" ] || for c in $ctl; do echo "+$c" >"$d/cgroup.subtree_control" 2>/dev/null || true; done
	done
}
incg() { sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$BCG" "$@"; }
