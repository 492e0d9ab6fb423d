#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Usage errors of the commands, GNU style: one line naming the bad option or
# argument, then "Try 'custode CMD --help' for more information.", on stderr,
# nothing on stdout, exit 2 (125 for `custode run`, whose 2 may be its
# command's). Also what the help promises where the code once disagreed
# (gc with no engine), and `custode daemon` refusing bad flags before it
# opens anything. The one exit scheme of docs/cli.md: each --help names
# exactly the statuses its command uses, and every command run as nobody is
# refused 125 privilege.required (doctor: 1), with no daemon and with a
# daemon socket nobody cannot reach.
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
for cmd in engine gc attach detach runs profiles reasons doctor events; do
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
usage 2 "needs an action: status, load, unload or admit" engine engine
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
	# the daemon's one log prefix, as its readiness line ("custode daemon: ready")
	if grep -q '^custode daemon: refused: privilege.required: ' err; then ok; else bad "daemon refusal prefix: $(head -c 300 err)"; fi
fi
# ... and no line of the daemon's code uses another
if grep -rn '"custode: daemon:' "$root/userspace/daemon" >out; then bad "daemon log prefix 'custode: daemon:': $(cat out)"; else ok; fi
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

# ---- one exit scheme (docs/cli.md): each --help names exactly the codes its command uses ----
# help_codes CMD...: the statuses of the help's "Exit:" paragraph, sorted
help_codes() {
	"$custode" "$@" --help | tr '\n' ' ' | sed -n 's/.*Exit: //p' | grep -oE '(^|[;,]) *[0-9]+' |
		grep -oE '[0-9]+' | sort -n | tr '\n' ' '
}
for line in "run:124 125 126 127" "doctor:0 1 2 3" "events:0 2 125" "runs:0 2 125" "engine:0 2 125" \
	"gc:0 1 2 125" "daemon:0 1 2 125" "attach:0 2 125" "detach:0 2 125" "profiles:0 2" "reasons:0 2" \
	"bundle keygen:0 1 2" "bundle sign:0 1 2" "bundle verify:0 1 2" "bundle inspect:0 1 2"; do
	cmd=${line%%:*}
	want="${line#*:} "
	# shellcheck disable=SC2086 # "bundle sign" is two words
	got=$(help_codes $cmd)
	if [ "$got" = "$want" ]; then ok; else bad "custode $cmd --help: Exit: codes '$got', want '$want'"; fi
done

# ---- not root: refused 125 with privilege.required, doctor 1 (DESIGN.md) ----
# not_root CODE CMD ARGS...: as nobody (or as we are, when not root), with the
# control socket at $sock: exit CODE, and privilege.required on stderr unless doctor
not_root() {
	want=$1
	shift
	set +e
	CUSTODE_CONTROL_SOCKET=$sock as_user "$custode" "$@" >out 2>err </dev/null
	code=$?
	set -e
	if [ $code != "$want" ]; then
		bad "not root, socket $sock: custode $* -> exit $code, want $want: $(head -c 300 err)"
	elif [ "$1" != doctor ] && ! grep -q 'privilege.required' err; then
		bad "not root, socket $sock: custode $* -> no privilege.required: $(head -c 300 err)"
	else
		ok
	fi
}
if [ "$(id -u)" = 0 ] || [ -n "${CUSTODE_CLI_NOT_ROOT:-}" ]; then
	mkdir -m 0700 "$work/private" # as /run/custode: a socket nobody cannot reach
	# no daemon (the commands fall back to the engine), then a daemon's socket nobody can't reach
	for sock in "$work/no-daemon.sock" "$work/private/control.sock"; do
		not_root 125 runs
		not_root 125 events
	done
	# attach and detach need the daemon: a socket nobody cannot reach is privilege.required
	not_root 125 attach --cgroup /sys/fs/cgroup/custode-cli-test --profile read
	not_root 125 detach 0123456789abcdef
	sock=$work/no-daemon.sock
	not_root 125 run --profile read -- /bin/true
	not_root 125 engine status
	not_root 125 gc
	not_root 125 daemon --no-resolver
	not_root 1 doctor
fi
usage 2 "unexpected argument 'extra'" doctor doctor extra
usage 2 "unexpected argument 'extra'" events events extra
usage 2 "--run: 'xyz' is not a run id (16 hex digits)" events events --run xyz
usage 2 "--reason: 'no.such' is no reason code (and matches none)" events events --reason no.such

echo "test-cli-usage: $pass passed, $fail failed"
[ $fail = 0 ]
