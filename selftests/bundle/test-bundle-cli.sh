#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `custode bundle keygen|sign|verify|inspect` end to end: files, modes, exit
# codes (0 ok, 1 refused, 2 usage) and reason codes.
#   selftests/bundle/test-bundle-cli.sh        uses build/custode, or $CUSTODE_BIN
# Needs openssl(1) for the --signer-cmd cases. Exit 0 all passed, 1 otherwise.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
custode=${CUSTODE_BIN:-$root/build/custode}
[ -x "$custode" ] || { echo "test-bundle-cli: $custode not built" >&2; exit 1; }
work=$(mktemp -d /tmp/custode-bundle-cli.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
umask 022

pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect CODE [REASON] -- custode ARGS...: exit status CODE, and REASON in stderr when given
expect() {
	want=$1
	shift
	reason=
	if [ "$1" != -- ]; then
		reason=$1
		shift
	fi
	shift
	set +e
	"$custode" "$@" >out 2>err
	code=$?
	set -e
	if [ $code != "$want" ]; then
		bad "custode $* -> exit $code, want $want: $(head -c 400 err)"
	elif [ -n "$reason" ] && ! grep -q "refused: $reason:" err; then
		bad "custode $* -> exit $code but not $reason: $(head -c 400 err)"
	else
		ok
	fi
}
check() { # check DESCRIPTION COMMAND...: the command succeeds
	what=$1
	shift
	if "$@"; then ok; else bad "$what"; fi
}
mode_of() { stat -c %a "$1"; }

policy=$root/policies/read.json
cat >doc.json <<'EOF'
{"schema":"custode.policy/v1","name":"cli/test","version":3,
 "content":{"mode":"enforce","filesystem":[{"path":"/usr","allow":["read","exec"]}]}}
EOF

# ---- help and usage ----
expect 0 -- bundle --help
expect 2 -- bundle
expect 2 -- bundle frobnicate
for verb in keygen sign verify inspect; do
	expect 0 -- bundle $verb --help
	check "$verb --help prints usage" grep -q "usage: custode bundle $verb" out
	expect 2 -- bundle $verb --no-such-option
done
check "custode --help lists bundle" sh -c "'$custode' --help | grep -q '^  bundle'"

# ---- keygen ----
expect 0 -- bundle keygen --out ed
check "private key mode 0600" [ "$(mode_of ed)" = 600 ]
check "public key mode 0644" [ "$(mode_of ed.pub)" = 644 ]
check "keygen prints the key id" grep -Eq '^key id [0-9a-f]{64}$' out
check "key id is sha256 of the DER public key" sh -c \
	"[ \"\$(sed -n 's/^key id //p' out)\" = \"\$(openssl pkey -pubin -in ed.pub -outform DER | sha256sum | cut -d' ' -f1)\" ]"
cp ed ed.before
expect 1 bundle.key -- bundle keygen --out ed
check "keygen never overwrites" cmp -s ed ed.before
expect 0 -- bundle keygen --out p256 --p256
check "P-256 key" sh -c "openssl pkey -in p256 -noout -text 2>/dev/null | grep -q 'prime256v1\|P-256'"
expect 0 -- bundle keygen --out ed2
expect 2 -- bundle keygen
expect 2 -- bundle keygen --out x extra

# ---- sign ----
expect 2 -- bundle sign "$policy"                                  # no key
expect 2 -- bundle sign --key ed "$policy"                         # read.json has no window: --valid-for
check "sign says --valid-for is needed" grep -q -- --valid-for err
expect 2 -- bundle sign --key ed --valid-for 30 "$policy"          # no unit
expect 2 -- bundle sign --key ed --valid-for 0d "$policy"
expect 2 -- bundle sign --key ed --valid-for 1d --version -1 "$policy"
expect 2 -- bundle sign --key ed --valid-for 1d --not-before yesterday "$policy"
expect 2 -- bundle sign --key ed --key ed2 --keyid x --valid-for 1d "$policy"
expect 0 -- bundle sign --key ed --valid-for 30d "$policy"
cp out read.dsse.json
check "sign writes the envelope to stdout" grep -q '"payloadType":"application/vnd.custode.policy+json"' read.dsse.json
expect 0 -- bundle sign --key ed --valid-for 12h --profile read --out profile.dsse.json
check "--out writes the file" [ -s profile.dsse.json ]
expect 2 -- bundle sign --key ed doc.json                            # no window in the document either
expect 0 -- bundle sign --key ed --valid-for 1d --version 7 --keyid ops-2026 doc.json
cp out v7.dsse.json
check "--keyid is the hint" grep -q '"keyid":"ops-2026"' v7.dsse.json
expect 0 -- bundle sign --key ed --valid-for 1d --version 5 doc.json
cp out v5.dsse.json
expect 0 -- bundle sign --key ed --valid-for 1d --version 8 - <doc.json
cp out v8.dsse.json
expect 0 -- bundle sign --key ed --key p256 --valid-for 1d --version 9 doc.json
cp out two.dsse.json
expect 0 -- bundle sign --key ed --not-before 2020-01-01T00:00:00Z --valid-for 1d doc.json
cp out expired.dsse.json
check "sign warns about an expired window" grep -q "already expired" err
check "sign shows the window in the one time form" grep -q "2020-01-01T00:00:00.000000Z" err
expect 0 -- bundle sign --key ed --not-before 2999-01-01T00:00:00Z --valid-for 1d doc.json
cp out future.dsse.json
expect 1 bundle.key -- bundle sign --key ed.pub --valid-for 1d doc.json
expect 1 bundle.key -- bundle sign --key missing --valid-for 1d doc.json
echo '{"schema":"custode.policy/v1","name":"cli/test","version":1,"content":{"mode":"strict"}}' >invalid.json
expect 1 policy.invalid -- bundle sign --key ed --valid-for 1d invalid.json
expect 1 policy.invalid -- bundle sign --key ed --valid-for 1d /nonexistent.json

# --signer-cmd: custode hands the PAE to a command and never sees the key
expect 0 -- bundle sign --signer-cmd "openssl dgst -sha256 -sign '$work/p256'" --pub p256.pub --valid-for 1d --version 11 doc.json
cp out signer-p256.dsse.json
expect 0 -- bundle sign --signer-cmd "t=\$(mktemp) && cat >\"\$t\" && openssl pkeyutl -sign -inkey '$work/ed' -rawin -in \"\$t\"; s=\$?; rm -f \"\$t\"; exit \$s" \
	--pub ed.pub --valid-for 1d --version 12 doc.json
cp out signer-ed.dsse.json
expect 1 bundle.signer -- bundle sign --signer-cmd "cat >/dev/null; exit 4" --valid-for 1d doc.json
expect 1 bundle.signer -- bundle sign --signer-cmd "openssl dgst -sha256 -sign '$work/p256'" --pub ed.pub --valid-for 1d doc.json
expect 2 -- bundle sign --pub ed.pub --key ed --valid-for 1d doc.json

# ---- verify ----
state=$work/state
expect 0 -- bundle verify --trust ed.pub --state-dir "$state" --accept read.dsse.json
check "verify names the policy" grep -q "bundle verified: builtin/read version 1" out
check "verify shows the window in the one time form" \
	grep -Eq "^  valid     [0-9T:.Z-]{27} \.\. [0-9T:.Z-]{27}\$" out
check "floor raised" grep -q "floor     raised to 1" out
check "state dir is private" [ "$(mode_of "$state")" = 700 ]
expect 0 -- bundle verify --trust ed.pub --state-dir "$state" --accept --json v7.dsse.json
check "--json output" grep -q '"verified":true,"name":"cli/test","version":7' out
check "--json names the signer's key file" grep -q '"keyFile":"ed.pub"' out
check "--json keyid hint" grep -q '"keyidHint":"ops-2026"' out
# every shown time in the one form (docs/output.md): RFC 3339 UTC, six fraction digits
rfc3339='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z'
check "verify --json: notBefore in the one time form" \
	grep -Eq "\"notBefore\":\"$rfc3339\",\"notAfter\":\"$rfc3339\"" out
expect 1 bundle.rollback -- bundle verify --trust ed.pub --state-dir "$state" v5.dsse.json
check "rollback: when the floor was accepted, in the one time form" grep -Eq "\(accepted $rfc3339\)" err
expect 0 -- bundle verify --trust ed.pub --state-dir "$state" --no-update v8.dsse.json
check "--no-update leaves the floor" grep -q '"version":7' "$state/cli%test.json"
expect 0 -- bundle verify --trust ed.pub --no-state v5.dsse.json   # no floor consulted
check "--no-state says so" grep -q "not checked (--no-state)" out
expect 1 bundle.rollback -- bundle verify --trust ed.pub --state-dir "$state" --no-update v5.dsse.json
expect 0 -- bundle verify --trust ed.pub --state-dir "$state" --accept v8.dsse.json
expect 0 -- bundle verify --trust ed.pub --state-dir "$state" --accept v8.dsse.json
check "same version again: unchanged" grep -q "unchanged" out
# same version, other content
sed 's/"exec"/"write"/' doc.json >doc2.json
expect 0 -- bundle sign --key ed --valid-for 1d --version 8 doc2.json
cp out v8-other.dsse.json
expect 1 bundle.rollback -- bundle verify --trust ed.pub --state-dir "$state" v8-other.dsse.json
expect 1 bundle.signature -- bundle verify --trust ed2.pub --no-state read.dsse.json
expect 1 bundle.expired -- bundle verify --trust ed.pub --no-state expired.dsse.json
check "expired: the times in the one form" grep -Eq "notAfter 2020-01-02T00:00:00.000000Z has passed \(now $rfc3339," err
expect 1 bundle.not_yet_valid -- bundle verify --trust ed.pub --no-state future.dsse.json
check "not yet valid: the times in the one form" grep -Eq "notBefore 2999-01-01T00:00:00.000000Z is in the future \(now $rfc3339," err
expect 0 -- bundle verify --trust ed.pub --trust p256.pub --threshold 2 --no-state two.dsse.json
expect 1 bundle.signature -- bundle verify --trust ed.pub --trust ed2.pub --threshold 2 --no-state two.dsse.json
cp ed.pub ed-copy.pub
expect 1 bundle.signature -- bundle verify --trust ed.pub --trust ed-copy.pub --threshold 2 --no-state v7.dsse.json
expect 0 -- bundle verify --trust p256.pub --no-state signer-p256.dsse.json
expect 0 -- bundle verify --trust ed.pub --no-state signer-ed.dsse.json
expect 1 bundle.key -- bundle verify --trust ed --no-state v7.dsse.json     # a private key is not a trust anchor
expect 1 bundle.malformed -- bundle verify --trust ed.pub --no-state /nonexistent.dsse.json
# a tampered payload byte: the payload is JCS, so it starts '{"c' = "eyJj"; "fyJj" changes the first byte
sed 's/"payload":"eyJj/"payload":"fyJj/' v7.dsse.json >tampered.dsse.json
check "tampered" sh -c '! cmp -s v7.dsse.json tampered.dsse.json'
expect 1 bundle.signature -- bundle verify --trust ed.pub --no-state tampered.dsse.json
printf 'not json' >garbage.dsse.json
expect 1 bundle.malformed -- bundle verify --trust ed.pub --no-state garbage.dsse.json
head -c 5000000 /dev/zero >big.dsse.json
expect 1 bundle.too_large -- bundle verify --trust ed.pub --no-state big.dsse.json
# a corrupt floor is refused loudly and left as it is
printf '{"broken' >"$state/cli%test.json"
expect 1 bundle.state -- bundle verify --trust ed.pub --state-dir "$state" v8.dsse.json
check "corrupt floor not reset" [ "$(cat "$state/cli%test.json")" = '{"broken' ]
expect 0 -- bundle verify --trust ed.pub --state-dir "$state" --json --no-update read.dsse.json
expect 1 bundle.state -- bundle verify --trust ed.pub --state-dir "$state" --json v8.dsse.json
check "--json refusal" grep -q '"verified":false,"reason":"bundle.state"' out
# usage
expect 2 -- bundle verify v7.dsse.json
expect 2 -- bundle verify --trust ed.pub
expect 2 -- bundle verify --trust ed.pub --threshold 0 v7.dsse.json
expect 2 -- bundle verify --trust ed.pub --skew 301 v7.dsse.json
expect 2 -- bundle verify --trust ed.pub --no-state --state-dir "$state" v7.dsse.json
expect 0 -- bundle verify --trust ed.pub --skew 300 --no-state v7.dsse.json

# ---- inspect ----
expect 0 -- bundle inspect v7.dsse.json
check "inspect says UNVERIFIED" grep -q "^UNVERIFIED" out
check "inspect shows the digest check" grep -q "matches the content" out
check "inspect shows the keyid" grep -q 'keyid "ops-2026"' out
expect 0 -- bundle inspect --json expired.dsse.json
check "inspect --json" grep -q '"verified":false' out
check "inspect --json window" grep -q '"window":"expired"' out
check "inspect --json: the window in the one time form" \
	grep -q '"notBefore":"2020-01-01T00:00:00.000000Z","notAfter":"2020-01-02T00:00:00.000000Z"' out
expect 0 -- bundle inspect expired.dsse.json
check "inspect: the window in the one time form" \
	grep -q '^validity       2020-01-01T00:00:00.000000Z .. 2020-01-02T00:00:00.000000Z (expired)' out
expect 0 -- bundle inspect tampered.dsse.json
expect 1 bundle.malformed -- bundle inspect garbage.dsse.json
expect 2 -- bundle inspect

# ---- issue 16: custode never produces (or verifies) a bundle it would refuse to run ----
# raw_bundle DOC OUT: DOC's bytes as the payload, signed with ed by openssl, not by custode
raw_bundle() {
	type=application/vnd.custode.policy+json
	{ printf 'DSSEv1 %d %s %d ' ${#type} "$type" "$(wc -c <"$1")"; cat "$1"; } >pae.bin
	openssl pkeyutl -sign -inkey ed -rawin -in pae.bin -out sig.bin
	printf '{"payload":"%s","payloadType":"%s","signatures":[{"sig":"%s"}]}' \
		"$(base64 -w0 <"$1")" "$type" "$(base64 -w0 <sig.bin)" >"$2"
}
# path_doc PATH: a windowed document with one rule for PATH, its contentDigest right
path_doc() {
	content=$(printf '{"filesystem":[{"allow":["read"],"path":"%s"}]}' "$1")
	digest=$(printf '%s' "$content" | sha256sum | cut -d' ' -f1)
	printf '{"content":%s,"contentDigest":"sha256:%s","name":"cli/paths","notAfter":"2999-01-01T00:00:00Z","notBefore":"2020-01-01T00:00:00Z","schema":"custode.policy/v1","version":1}' \
		"$content" "$digest"
}
path_doc /etc >path-ok.json
raw_bundle path-ok.json path-ok.dsse.json
expect 0 -- bundle verify --trust ed.pub --no-state path-ok.dsse.json   # the control: such a bundle verifies
i=0
for bad in etc '${workspace}/../etc' '${home}/x' '/a/${tmp}'; do
	i=$((i + 1))
	path_doc "$bad" >path-bad$i.json
	expect 1 policy.invalid -- bundle sign --key ed --valid-for 1d path-bad$i.json
	check "sign names the rule ($bad)" grep -q 'content.filesystem\[0\].path' err
	raw_bundle path-bad$i.json path-bad$i.dsse.json
	expect 1 bundle.schema -- bundle verify --trust ed.pub --no-state path-bad$i.dsse.json
	check "verify names the rule ($bad)" grep -q 'content.filesystem\[0\].path' err
done

# ---- issue 16: verify is read-only; --accept raises the floor ----
ro=$work/ro-state
expect 0 -- bundle verify --trust ed.pub --state-dir "$ro" v8.dsse.json
check "read-only verify says so" grep -q "checked, not raised" out
expect 0 -- bundle verify --trust ed.pub --state-dir "$ro" v5.dsse.json   # lower, after a higher: still verifies
expect 0 -- bundle verify --trust ed.pub --state-dir "$ro" --json v5.dsse.json
check "--json floor checked" grep -q '"floor":"checked"' out
check "read-only verify creates no state dir" [ ! -e "$ro" ]
mkdir -m 700 "$ro"
expect 0 -- bundle verify --trust ed.pub --state-dir "$ro" v8.dsse.json
check "read-only verify writes nothing" [ -z "$(ls -A "$ro")" ]
expect 0 -- bundle verify --trust ed.pub --state-dir "$ro" --accept v8.dsse.json
check "--accept raises the floor" grep -q '"version":8' "$ro/cli%test.json"
expect 1 bundle.rollback -- bundle verify --trust ed.pub --state-dir "$ro" v5.dsse.json
check "a refusal for the floor names --no-state only when the state is unusable" sh -c '! grep -q -- --no-state err'
expect 2 -- bundle verify --trust ed.pub --accept --no-state v8.dsse.json
expect 2 -- bundle verify --trust ed.pub --accept --no-update v8.dsse.json
expect 0 -- bundle verify --help
check "verify --help documents --accept" grep -q -- "--accept" out
chmod 000 "$ro"
if [ "$(id -u)" != 0 ]; then
	expect 1 bundle.state -- bundle verify --trust ed.pub --state-dir "$ro" v8.dsse.json
	check "an unreadable floor gets a hint" grep -q -- "--no-state verifies without it" err
fi
chmod 700 "$ro"

# ---- issue 16: a refused `run --bundle` leaves the version floor where it was ----
# (root, with the engine pinned: a net-only bundle runs natively; its floor is the host's own)
if [ "$(id -u)" = 0 ] && [ -d /sys/fs/bpf/custode ]; then
	runfloor="/var/lib/custode/bundles/h16test%run-$$.json"
	trap 'rm -rf "$work"; rm -f "$runfloor"' EXIT
	sed "s|\"name\": *\"[^\"]*\"|\"name\":\"h16test/run-$$\"|" "$root/policies/net-only.json" >run-doc.json
	expect 0 -- bundle sign --key ed --valid-for 1d --version 3 --out run-v3.dsse.json run-doc.json
	expect 0 -- bundle sign --key ed --valid-for 1d --version 2 --out run-v2.dsse.json run-doc.json
	expect 125 -- run --bundle run-v3.dsse.json --trust ed.pub --workspace "$work/nonexistent" -- true
	check "refused run: run.workspace" grep -q "refused: run.workspace" err
	check "refused run: floor not raised" [ ! -e "$runfloor" ]
	expect 0 -- run --bundle run-v2.dsse.json --trust ed.pub -- true
	check "run: floor raised to 2" grep -q '"version":2' "$runfloor"
	expect 0 -- run --bundle run-v3.dsse.json --trust ed.pub -- true
	expect 125 -- run --bundle run-v2.dsse.json --trust ed.pub -- true
	check "run below the floor: bundle.rollback" grep -q "refused: bundle.rollback" err
else
	echo "test-bundle-cli: run --bundle floor cases skipped (need root and a pinned engine)"
fi

# ---- issue 16: profiles show ----
expect 0 -- profiles show read
check "show prints the profile's document" cmp -s out "$root/policies/read.json"
expect 0 -- profiles show net-only
check "show net-only" cmp -s out "$root/policies/net-only.json"
expect 2 -- profiles show no-such-profile
check "show names the unknown profile" grep -q "no built-in profile named 'no-such-profile'" err
expect 2 -- profiles show
expect 2 -- profiles show read extra
expect 0 -- profiles --help
check "profiles --help mentions show" grep -q "profiles show NAME" out

# ---- issue 16: --receipt destinations that can't be written refuse the run before the command ----
if [ "$(id -u)" = 0 ] && [ -d /sys/fs/bpf/custode ]; then
	rrun() { expect "$1" ${3:-} -- run --profile net-only --receipt "$2" -- echo ran; }
	rrun 125 "$work" run.usage
	check "a directory: refused, named" grep -q -- "--receipt $work: is a directory" err
	rrun 125 "$work/missing/r.json" run.usage
	rrun 125 /dev/fd/7 run.usage
	check "an unopened fd: refused" grep -q "fd 7 is not open" err
	check "the command never ran" [ ! -s out ]
	set +e
	"$custode" run --profile net-only --receipt /dev/fd/3 -- true 3>fd.json 2>err
	code=$?
	"$custode" run --profile net-only --receipt /dev/fd/3 -- true 3<fd.json 2>err-ro
	code_ro=$?
	set -e
	check "an open fd: exit 0 ($code)" [ "$code" = 0 ]
	check "an open fd gets the receipt" grep -q '"receipt_version": 1' fd.json
	check "a read-only fd: refused ($code_ro)" [ "$code_ro" = 125 ]
	rrun 0 "$work/r.json"
	check "a file gets the receipt" grep -q '"receipt_version": 1' r.json
	check "the command ran" grep -qx ran out
	# a limit without its controller: loud, or refused with --require-limits (on hosts whose runs lack one)
	printf '{"schema":"custode.policy/v1","name":"h16/limits","version":1,"content":{"network":{"egress":[]},"limits":{"memoryBytes":67108864,"pids":64}}}' >limits.json
	chmod 644 limits.json
	expect 0 -- run --policy "$work/limits.json" --receipt "$work/limits-receipt.json" -- true
	if grep -q '"no controller"' limits-receipt.json; then
		check "each limit not enforced is a warning on stderr" grep -q "warning: limits.* NOT enforced" err
		expect 125 limit.unavailable -- run --policy "$work/limits.json" --require-limits -- echo ran
		check "--require-limits: the command never ran" [ ! -s out ]
	else
		echo "test-bundle-cli: --require-limits cases skipped (this host's runs have the memory and pids controllers)"
	fi
else
	echo "test-bundle-cli: --receipt and limits run cases skipped (need root and a pinned engine)"
fi

# ---- libcrypto is opened on first use (bundle/crypto.h), not at every start ----
loaded() { # loaded ARGS...: did the loader open libcrypto for `custode ARGS`?
	set +e
	LD_DEBUG=files "$custode" "$@" >/dev/null 2>ld.txt
	set -e
	grep -q 'file=[^ ]*libcrypto\.so' ld.txt
}
if loaded --version; then bad "custode --version loaded libcrypto"; else ok; fi
if loaded profiles show read; then bad "profiles show loaded libcrypto"; else ok; fi
if loaded bundle verify --trust ed.pub --no-state read.dsse.json; then ok; else bad "bundle verify did not load libcrypto"; fi
if [ "$(id -u)" = 0 ] && [ -d /sys/fs/bpf/custode ]; then
	if loaded run --profile net-only -- true; then bad "run --profile loaded libcrypto"; else ok; fi
fi
# a libcrypto.so.3 without OpenSSL's functions first in the search path: keys refused, named, nothing written
if command -v cc >/dev/null; then
	mkdir fakelib
	echo 'int custode_not_openssl;' >fakelib/fake.c
	cc -shared -fPIC -Wl,-soname,libcrypto.so.3 -o fakelib/libcrypto.so.3 fakelib/fake.c
	set +e
	LD_LIBRARY_PATH=$work/fakelib "$custode" bundle keygen --out nolib >out 2>err
	code=$?
	set -e
	check "keygen without libcrypto's functions: exit 1 ($code)" [ "$code" = 1 ]
	check "... refused as bundle.key, naming what is missing" grep -q 'refused: bundle.key: .*libcrypto.so.3 has no' err
	check "... no key file written" [ ! -e nolib ] && [ ! -e nolib.pub ]
	set +e
	LD_LIBRARY_PATH=$work/fakelib "$custode" bundle verify --trust ed.pub --no-state read.dsse.json >out 2>err
	code=$?
	set -e
	check "verify without libcrypto's functions: exit 1 ($code)" [ "$code" = 1 ]
	check "... refused as bundle.key" grep -q 'refused: bundle.key: .*OpenSSL is needed for keys' err
else
	echo "test-bundle-cli: the missing-libcrypto cases skipped (no cc)"
fi

echo "test-bundle-cli: $pass passed, $fail failed"
[ $fail = 0 ]
