#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs inside the guest (tools/bench/file-bench starts it under icount):
# open()+close() of /etc/passwd, same boot, the process
#   - with no custode engine loaded (base)
#   - outside any run with the engine loaded (unconfined)
#   - inside a run whose policy has N = 10, 1,000, 10,000 filesystem rules
#   - under Landlock with the equivalent N + 6 rules (the anchor)
# Confined opens of one file repeat the same decision, which custode caches
# on the inode (bpf/file.bpf.c); the first open of each file pays the full
# lookup — see docs/file-policy.md.
# custode's policy is the file section only (no network, no seccomp filter),
# the same shape as the Landlock ruleset.
set -eu
REPO=$(cd "$(dirname "$0")/../.." && pwd)
B=$REPO/build
N=${FILEBENCH_ITERATIONS:-20000}
FILE=/etc/passwd
mkdir -p /usr/local/bin
cp "$B/tools/bench/openbench" "$B/tools/bench/llbench" /usr/local/bin/
mkdir -p /tmp/bench
i=0
while [ $i -lt 10000 ]; do mkdir -p /tmp/bench/d$i; i=$((i + 1)); done

policy() { # N → a policy file with the system rules and N extra directories
	f=/tmp/bench/policy-$1.json
	{
		printf '{"schema":"custode.policy/v1","name":"bench/n%s","version":1,"content":{"filesystem":[' "$1"
		printf '{"path":"/usr","allow":["read","exec"]},{"path":"/bin","allow":["read","exec"]},'
		printf '{"path":"/sbin","allow":["read","exec"]},{"path":"/lib","allow":["read","exec"]},'
		printf '{"path":"/lib64","allow":["read","exec"]},{"path":"/etc","allow":["read"]}'
		j=0
		while [ $j -lt "$1" ]; do printf ',{"path":"/tmp/bench/d%s","allow":["read"]}' $j; j=$((j + 1)); done
		printf ']}}'
	} >"$f"
	echo "$f"
}
P10=$(policy 10); P1K=$(policy 1000); P10K=$(policy 10000)

# A confined process sits in a cgroup below the root, which by itself costs an
# open() some memory-cgroup accounting: base and Landlock run in a plain child
# cgroup too, so every figure pays it alike.
mkdir -p /sys/fs/cgroup/bench && echo $$ >/sys/fs/cgroup/bench/cgroup.procs
"$B/custode" engine unload --force >/dev/null 2>&1 || true
base=$(openbench "$N" "$FILE")
ll10=$(llbench "$N" "$FILE" 10); ll1k=$(llbench "$N" "$FILE" 1000); ll10k=$(llbench "$N" "$FILE" 10000)
"$B/custode" engine load >/dev/null
unconf=$(openbench "$N" "$FILE")
c10=$("$B/custode" run --policy "$P10" -- /usr/local/bin/openbench "$N" "$FILE")
c1k=$("$B/custode" run --policy "$P1K" -- /usr/local/bin/openbench "$N" "$FILE")
c10k=$("$B/custode" run --policy "$P10K" -- /usr/local/bin/openbench "$N" "$FILE")
"$B/custode" engine unload >/dev/null
base2=$(openbench "$N" "$FILE")

awk -v b1="$base" -v b2="$base2" -v u="$unconf" -v c10="$c10" -v c1k="$c1k" -v c10k="$c10k" \
    -v l10="$ll10" -v l1k="$ll1k" -v l10k="$ll10k" -v n="$N" 'BEGIN {
	b = (b1 + b2) / 2;
	printf "open()+close() of /etc/passwd, %d iterations, ns/op (guest clock, icount), base %.1f / %.1f\n", n, b1, b2;
	printf "%-28s %10s %8s\n", "", "ns/op", "ratio";
	printf "%-28s %10.1f %8.4f\n", "custode loaded, unconfined", u, u / b;
	printf "%-28s %10.1f %8.4f\n", "custode, 10 rules", c10, c10 / b;
	printf "%-28s %10.1f %8.4f\n", "custode, 1,000 rules", c1k, c1k / b;
	printf "%-28s %10.1f %8.4f\n", "custode, 10,000 rules", c10k, c10k / b;
	printf "%-28s %10.1f %8.4f\n", "Landlock, 10 rules", l10, l10 / b;
	printf "%-28s %10.1f %8.4f\n", "Landlock, 1,000 rules", l1k, l1k / b;
	printf "%-28s %10.1f %8.4f\n", "Landlock, 10,000 rules", l10k, l10k / b;
	printf "custode/Landlock at 10, 1,000, 10,000 rules: %.4f %.4f %.4f\n", c10 / l10, c1k / l1k, c10k / l10k;
}'
