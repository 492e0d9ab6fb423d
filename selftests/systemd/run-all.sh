#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Every test of the systemd guest in one boot (tools/test's systemd section):
#   tools/vmrun --rootfs systemd -- selftests/systemd/run-all.sh
# Each script prints its own TAP; the exit is 0 only if every one passed.
set -u
dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
rc=0
for t in test-package.sh test-attach-unit.sh test-attach-container.sh test-newcomer-slice.sh test-container-restart.sh test-upgrade.sh; do
	echo "# ---- selftests/systemd/$t"
	"$dir/$t" || { echo "# selftests/systemd/$t: exit $?"; rc=1; }
done
exit $rc
