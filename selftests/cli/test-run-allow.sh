#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `custode run --allow`: what the help, the refusal of a malformed grant and
# docs/egress.md, docs/resolver.md say agrees with what the code does: an
# ADDR:PORT is a literal grant, a HOST:PORT a host entry through the resolver
# (the parse itself: selftests/unit/test_net.c; the enforcement: the kernel
# tests egress_allow_flag_is_a_literal_grant and dns_allow_flag_grants_a_host).
#   selftests/cli/test-run-allow.sh        uses build/custode, or $CUSTODE_BIN
# Nothing here touches the engine: every run case ends in option parsing, run
# as nobody when we are root (a run that got past it is refused
# privilege.required and fails the test instead). Exit 0 all passed, 1 otherwise.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
custode=${CUSTODE_BIN:-$root/build/custode}
[ -x "$custode" ] || { echo "test-run-allow: $custode not built" >&2; exit 1; }
work=$(mktemp -d /tmp/custode-run-allow.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 0755 "$work"

pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
as_user() {
	if [ "$(id -u)" = 0 ]; then
		setpriv --reuid 65534 --regid 65534 --clear-groups -- "$@"
	else
		"$@"
	fi
}
# has FILE TEXT WHAT / hasnt FILE TEXT WHAT: fixed-string checks
has() { if grep -qF -- "$2" "$1"; then ok; else bad "$3: '$2' not in $1"; fi; }
hasnt() { if grep -qF -- "$2" "$1"; then bad "$3: '$2' in $1"; else ok; fi; }

# ---- the help ----
"$custode" run --help >"$work/help" 2>&1 || bad "custode run --help failed"
has "$work/help" "[--allow ADDR:PORT[/tcp|/udp] | --allow HOST:PORT[/tcp|/udp]]..." "synopsis names both forms"
has "$work/help" "  --allow HOST:PORT[/tcp|/udp]" "HOST:PORT documented as an option"
has "$work/help" "resolver" "the help says a name goes through the resolver"
has "$work/help" "dns.no_resolver" "the help names the refusal without a resolver"
hasnt "$work/help" "[--allow ADDR:PORT[/udp]]" "old synopsis"

# ---- the parse: a malformed grant names both forms; exit 125 before anything else ----
refused() { # ARG: `custode run --allow ARG -- true` is a usage refusal
	set +e
	as_user "$custode" run --profile net-only --allow "$1" -- true >"$work/out" 2>"$work/err"
	code=$?
	set -e
	if [ $code = 125 ] && grep -qF "run.usage: --allow $1: expected ADDR:PORT or HOST:PORT[/tcp|/udp]" "$work/err"; then
		ok
	else
		bad "--allow '$1': exit $code, stderr: $(cat "$work/err")"
	fi
}
refused 203.0.113.10        # no port
refused pypi.org            # a name needs a port too
refused "[pypi.org]:443"    # brackets are for IPv6 literals
refused "pypi.org:443/sctp" # tcp or udp
refused "-x.org:443"        # not a host name
refused "12.34:443"         # no letter: neither an address nor a name

# ---- the docs ----
has "$root/docs/egress.md" "--allow HOST:PORT[/tcp|/udp]" "docs/egress.md documents names"
hasnt "$root/docs/egress.md" "A host name is refused" "docs/egress.md"
has "$root/docs/resolver.md" "custode run --allow HOST:PORT[/tcp|/udp]" "docs/resolver.md documents names"
hasnt "$root/docs/resolver.md" "takes addresses only" "docs/resolver.md"

echo "test-run-allow: $pass passed, $fail failed"
[ $fail = 0 ]
