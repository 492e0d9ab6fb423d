#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Usage errors of the commands, GNU style: one line naming the bad option or
# argument, then "Try 'custode CMD --help' for more information.", on stderr,
# nothing on stdout, exit 2 (125 for `custode run`, whose 2 may be its
# command's). Also what the help promises where the code once disagreed
# (gc with no engine), and `custode daemon` refusing bad flags before it
# opens anything.
#   selftests/cli/test-cli-usage.sh        uses build/custode, or $CUSTODE_BIN
# Nothing here touches the engine: every case ends in option parsing, and the
# daemon's cases run as nobody when run as root (a daemon that got past its
# checks would be refused privilege.required, exit 125, and fail the test
# instead of starting). Exit 0 all passed, 1 otherwise.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
custode=${CUSTODE_BIN:-$root/build/custode}
[ -x "$custode" ] || { echo "test-cli-usage: $custode not built" >&2; exit 1; }
work=$(mktemp -d /tmp/custode-cli-usage.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 1777 "$work" # the daemon's cases write here as nobody
cd "$work"

pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# as_user CMD...: CMD as nobody when we are root (the daemon's cases), else as we are
as_user() {
	if [ "$(id -u)" = 0 ]; then
		setpriv --reuid 65534 --regid 65534 --clear-groups -- "$@"
	else
		"$@"
	fi
}

# usage CODE 'FIRST LINE' CMD ARGS...: exit CODE, stdout empty, stderr exactly
# "custode CMD: FIRST LINE" and the --help pointer
usage() {
	want=$1
	line=$2
	cmd=$3
	shift 3
	set +e
	$runner "$custode" "$@" >out 2>err
	code=$?
	set -e
	printf 'custode %s: %s\nTry '\''custode %s --help'\'' for more information.\n' "$cmd" "$line" "$cmd" >want
	if [ $code != "$want" ]; then
		bad "custode $* -> exit $code, want $want: $(head -c 300 err)"
	elif [ -s out ]; then
		bad "custode $* -> wrote on stdout: $(head -c 300 out)"
	elif ! cmp -s err want; then
		bad "custode $* -> stderr: $(head -c 600 err) | want: $(cat want)"
	else
		ok
	fi
}

runner=
# ---- an unknown option: every command, the same two lines ----
for cmd in engine gc attach detach runs profiles; do
	usage 2 "unrecognized option '--bogus'" $cmd $cmd --bogus
done
usage 125 "unrecognized option '--bogus'" run run --bogus -- /bin/true
usage 2 "invalid option -- 'x'" gc gc -x
usage 2 "option '--cgroup' requires an argument" attach attach --cgroup
usage 2 "option '--json' doesn't allow an argument" detach detach --json=yes

# ---- a stray argument is named ----
usage 2 "unexpected argument 'read'" profiles profiles read
usage 2 "unexpected argument 'extra'" runs runs extra
usage 2 "unexpected argument 'extra'" gc gc extra
usage 2 "unknown action 'frob'" engine engine frob
usage 2 "needs an action: status, load or unload" engine engine
usage 2 "unexpected argument 'now'" engine engine load now

# ---- the daemon: every flag checked before anything is opened ----
runner=as_user
usage 2 "unrecognized option '--bogus'" daemon daemon --bogus
usage 2 "daemon.usage: --metrics-listen garbage: needs ADDR:PORT, a numeric IPv4 or [IPv6] address and a port 1-65535 (e.g. 127.0.0.1:9464)" \
	daemon daemon --no-resolver --metrics-listen garbage
usage 2 "daemon.usage: --metrics-file /nonexistent/x.prom: No such file or directory" \
	daemon daemon --no-resolver --metrics-file /nonexistent/x.prom
usage 2 "daemon.usage: --events-file /nonexistent/events.jsonl: No such file or directory" \
	daemon daemon --no-resolver --events-file /nonexistent/events.jsonl
# a directory is no events file: a destination error, not run.setup_failed (issue 16)
usage 2 "daemon.usage: --events-file /tmp: Is a directory" daemon daemon --no-resolver --events-file /tmp
usage 2 "daemon.usage: --trust $work/missing.pub: No such file or directory" \
	daemon daemon --no-resolver --bundles "$work" --trust "$work/missing.pub"
usage 2 "daemon.usage: --ttl-min: '99999999' must be a number in 0..86400" \
	daemon daemon --no-resolver --ttl-min 99999999
# a good command line gets past the checks: refused for want of root, not for usage
set +e
as_user "$custode" daemon --no-resolver --metrics-listen 127.0.0.1:9464 --metrics-file "$work/m.prom" \
	--events-file "$work/events.jsonl" >out 2>err
code=$?
set -e
if [ "$(id -u)" = 0 ] || [ -n "${CUSTODE_CLI_NOT_ROOT:-}" ]; then
	if [ $code = 125 ] && grep -q 'privilege.required' err; then ok; else bad "daemon, good flags, not root -> exit $code: $(head -c 300 err)"; fi
fi
runner=

# ---- help says what the code does ----
"$custode" gc --help >out
if grep -q '^Exit: 0 done (nothing to reap, or no engine loaded),' out && ! grep -q '125.*no engine' out; then
	ok
else
	bad "gc --help: exit 0 with no engine loaded not said: $(grep -A3 '^Exit' out)"
fi
"$custode" engine --help >out
if grep -q 'every class this host supports' out && grep -q 'not loaded' out; then ok; else bad "engine --help: $(cat out)"; fi

echo "test-cli-usage: $pass passed, $fail failed"
[ $fail = 0 ]
