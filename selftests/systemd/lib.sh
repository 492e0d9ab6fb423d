# SPDX-License-Identifier: Apache-2.0
# Sourced by every test of the systemd guest (selftests/systemd/test-*.sh):
# the guest check, TAP output, polling, and the package under test.
#   . "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
# Sets: repo (the repository), n and failed (TAP counters), t0 (start time).

set -u
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
repo=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)

if [[ ${CUSTODE_IN_GUEST:-} != 1 || $(cat /proc/1/comm 2>/dev/null) != systemd ]]; then
	echo "1..0 # SKIP needs the systemd guest: tools/vmrun --rootfs systemd -- $0"
	exit 77
fi

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
check() { # check DESCRIPTION CMD...: ok when CMD exits 0
	local d=$1
	shift
	if "$@"; then ok "$d"; else not_ok "$d"; fi
}
diag() { sed 's/^/# /'; }
t0=$(date +%s.%N)
elapsed() { awk -v a="${1:-$t0}" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
wait_for() { # wait_for SECONDS CMD...: poll CMD every 0.2 s
	local end=$(($(date +%s) + $1))
	shift
	until "$@"; do
		(($(date +%s) < end)) || return 1
		sleep 0.2
	done
}
show_unit() { systemctl show -p "$1" --value custode; }

# The package the host built ((cd build && cpack -G DEB)), copied where apt's _apt
# user can read it: sets deb. Bails out when there is none.
find_deb() {
	local debs=("$repo"/build/custode_*.deb)
	if [[ ! -s ${debs[0]} ]]; then
		echo "Bail out! no build/custode_*.deb: run (cd build && cpack -G DEB) on the host first"
		exit 1
	fi
	cp -- "${debs[-1]}" /tmp/ && deb=/tmp/${debs[-1]##*/}
	chmod 0644 "$deb"
}

# Install the package unless a previous script of run-all.sh did. Bails out on failure.
ensure_installed() {
	[[ $(dpkg-query -W -f='${Status}' custode 2>/dev/null) == "install ok installed" ]] && return 0
	find_deb
	if ! apt-get install -y -q "$deb" >/tmp/apt.log 2>&1; then
		diag </tmp/apt.log
		echo "Bail out! the package did not install"
		exit 1
	fi
}

# Install the package (ensure_installed) and start custode.service: two TAP
# lines. Bails out when the daemon does not start.
install_and_start() {
	ensure_installed
	ok "custode is installed"
	if systemctl start custode >/tmp/start.log 2>&1; then ok "systemctl start custode"; else
		diag </tmp/start.log
		journalctl -b -u custode --no-pager -o cat 2>&1 | tail -n 30 | diag
		echo "Bail out! the daemon did not start"
		exit 1
	fi
}

# The summary line and the exit status of a script.
finish() {
	echo "1..$n"
	echo "# $((n - failed)) passed, $failed failed, $(elapsed) s in the guest"
	((failed == 0))
}
