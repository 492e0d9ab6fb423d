#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The output conventions of docs/output.md where they need no engine: a
# command's --json is one document (a single JSON value on one line) unless it
# is a stream (`events`: JSON lines); text by default.
#   selftests/cli/test-cli-output.sh        uses build/custode, or $CUSTODE_BIN
# The bundle commands' times are checked in selftests/bundle/test-bundle-cli.sh,
# `engine status` and receipts in the unit tests (selftests/unit/test_output.c).
# Exit 0 all passed, 1 otherwise.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
custode=${CUSTODE_BIN:-$root/build/custode}
[ -x "$custode" ] || { echo "test-cli-output: $custode not built" >&2; exit 1; }
command -v jq >/dev/null || { echo "test-cli-output: needs jq" >&2; exit 1; }
work=$(mktemp -d /tmp/custode-cli-output.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"

pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
check() { # check DESCRIPTION COMMAND...: the command succeeds
	what=$1
	shift
	if "$@"; then ok; else bad "$what"; fi
}
jqe() { jq -e "$1" out >/dev/null 2>&1; } # jqe FILTER: true of out
# document: out holds exactly one JSON value, on one line
document() {
	[ "$(wc -l <out)" = 1 ] && jq -se 'length == 1' out >/dev/null 2>&1
}

"$custode" profiles --json >out
check "profiles --json: one document" document
check "profiles --json: an array of the built-ins" jqe 'type == "array" and length >= 4'
check "profiles --json: the fields" \
	jqe 'all(.[]; (.name | type) == "string" and (.policy | type) == "string" and
		      (.version | type) == "number" and (.rules | type) == "number")'
check "profiles --json: read is listed" jqe 'any(.[]; .name == "read" and .policy == "builtin/read")'
"$custode" profiles >out
check "profiles: text, one line each" grep -Eq '^read +builtin/read v[0-9]+, [0-9]+ filesystem rules$' out
check "profiles: no JSON by default" sh -c '! grep -q "{" out'

echo "test-cli-output: $pass passed, $fail failed"
[ "$fail" = 0 ]
