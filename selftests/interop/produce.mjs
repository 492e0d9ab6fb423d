// SPDX-License-Identifier: Apache-2.0
// An independent DSSE producer for custode's verifier: keys from node:crypto,
// PAE from @sigstore/core (dsse.preAuthEncoding), contentDigest from the
// `canonicalize` package (RFC 8785). Writes keys, envelopes and a manifest of
// what `custode bundle verify` must say about each into DIR.
//
//   node produce.mjs DIR
//
// manifest lines: EXPECT FILE ARGS...   (EXPECT: "ok" or a reason code; the
// runner passes ARGS to `custode bundle verify --json` before FILE). Lines
// run in order: the rollback cases depend on the floor set by earlier lines.
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dsse } from '@sigstore/core';
import canonicalize from 'canonicalize';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node produce.mjs DIR');
  process.exit(2);
}
mkdirSync(dir, { recursive: true });

const TYPE = 'application/vnd.custode.policy+json';
const now = Math.floor(Date.now() / 1000);
const iso = (t) => new Date(t * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');

// ---- keys ----
const keys = {
  ed: generateKeyPairSync('ed25519'),
  ed2: generateKeyPairSync('ed25519'),
  p256: generateKeyPairSync('ec', { namedCurve: 'P-256' }),
};
for (const [name, k] of Object.entries(keys))
  writeFileSync(join(dir, `${name}.pub`), k.publicKey.export({ type: 'spki', format: 'pem' }));
// the same Ed25519 public key in a second file (DER-identical, another name)
writeFileSync(join(dir, 'ed-copy.pub'), keys.ed.publicKey.export({ type: 'spki', format: 'pem' }));

function signPae(key, type, payload, encoding = 'der') {
  const pae = dsse.preAuthEncoding(type, payload);
  if (key.asymmetricKeyType === 'ed25519') return sign(null, pae, key);
  return sign('sha256', pae, { key, dsaEncoding: encoding });
}

function envelope(type, payload, signers, { url = false, pad = true } = {}) {
  const b64 = (b) => {
    let s = b.toString(url ? 'base64url' : 'base64');
    if (url && pad) s += '='.repeat((4 - (s.length % 4)) % 4);
    return s;
  };
  return JSON.stringify({
    payload: b64(payload),
    payloadType: type,
    signatures: signers.map(({ key, keyid, encoding }) => ({
      ...(keyid ? { keyid } : {}),
      sig: b64(signPae(key, type, payload, encoding)),
    })),
  });
}

// ---- policy documents ----
function policy(name, version, content, { window = [now - 3600, now + 86400], digest, extra = {}, indent } = {}) {
  const doc = {
    schema: 'custode.policy/v1', name, version,
    notBefore: iso(window[0]), notAfter: iso(window[1]),
    contentDigest: digest ?? 'sha256:' + createHash('sha256').update(canonicalize(content)).digest('hex'),
    content, ...extra,
  };
  return Buffer.from(JSON.stringify(doc, null, indent));
}
const content = {
  // out of canonical order on purpose, with numbers and strings JCS must normalize
  mode: 'enforce',
  filesystem: [
    { path: '/usr', allow: ['read', 'exec'] },
    { path: '${workspace}/caf\u00e9 \u65e5\u672c', allow: ['read', 'write', 'create'] },
    { path: '/etc/shadow', allow: [] },
  ],
  limits: { cpu: 0.1 + 0.2, wallSeconds: 600, memoryBytes: 268435456 },
  network: { egress: [{ host: 'pypi.org', ports: [443] }, { cidr: '203.0.113.0/24', ports: [80, 443], proto: 'tcp' }] },
  env: ['PATH', 'LANG'],
};

const lines = [];
function emit(expect, file, body, args = '--trust ed.pub --no-state') {
  writeFileSync(join(dir, file), body);
  lines.push(`${expect} ${file} ${args}`);
}
const ed = { key: keys.ed.privateKey, keyid: 'interop-ed25519' };
const ed2 = { key: keys.ed2.privateKey };
const p256 = { key: keys.p256.privateKey, keyid: 'interop-p256' };
const good = policy('interop/main', 1, content);

// ---- accepted ----
emit('ok', 'ed25519.dsse.json', envelope(TYPE, good, [ed]));
emit('ok', 'p256.dsse.json', envelope(TYPE, good, [p256]), '--trust p256.pub --no-state');
emit('ok', 'urlsafe.dsse.json', envelope(TYPE, good, [ed], { url: true }));
emit('ok', 'pretty.dsse.json', envelope(TYPE, policy('interop/main', 1, content, { indent: 4 }), [ed]));
emit('ok', 'two-keys.dsse.json', envelope(TYPE, good, [ed, p256]),
  '--trust ed.pub --trust p256.pub --threshold 2 --no-state');
emit('ok', 'one-of-two.dsse.json', envelope(TYPE, good, [p256]), '--trust ed.pub --trust p256.pub --no-state');

// ---- refused ----
{
  const env = JSON.parse(envelope(TYPE, good, [ed]));
  const sig = Buffer.from(env.signatures[0].sig, 'base64');
  sig[7] ^= 0x10;
  env.signatures[0].sig = sig.toString('base64');
  emit('bundle.signature', 'forged.dsse.json', JSON.stringify(env));
}
emit('bundle.signature', 'wrong-key.dsse.json', envelope(TYPE, good, [ed2]));
emit('bundle.signature', 'swapped-type.dsse.json',
  envelope(TYPE, good, [ed]).replace(TYPE, 'application/vnd.in-toto+json'));
emit('bundle.type', 'other-type.dsse.json', envelope('application/vnd.in-toto+json', good, [ed]));
{
  const altered = Buffer.from(good);
  altered[altered.indexOf('"version":1') + 10] = '2'.charCodeAt(0);
  const env = JSON.parse(envelope(TYPE, good, [ed]));
  env.payload = altered.toString('base64');
  emit('bundle.signature', 'altered-byte.dsse.json', JSON.stringify(env));
}
emit('bundle.digest', 'digest.dsse.json', envelope(TYPE, policy('interop/main', 1,
  { ...content, mode: 'audit' }, { digest: 'sha256:' + createHash('sha256').update(canonicalize(content)).digest('hex') }), [ed]));
emit('bundle.malformed', 'dup-envelope.dsse.json',
  envelope(TYPE, good, [ed]).replace('"payloadType":', '"payloadType":"x","payloadType":'));
emit('bundle.schema', 'dup-payload.dsse.json',
  envelope(TYPE, Buffer.from(good.toString().replace('"version":1', '"version":1,"version":1')), [ed]));
emit('bundle.schema', 'schema-v2.dsse.json',
  envelope(TYPE, Buffer.from(good.toString().replace('custode.policy/v1', 'custode.policy/v2')), [ed]));
emit('bundle.schema', 'unknown-field.dsse.json', envelope(TYPE, policy('interop/main', 1, content, { extra: { owner: 'x' } }), [ed]));
emit('bundle.expired', 'expired.dsse.json',
  envelope(TYPE, policy('interop/main', 1, content, { window: [now - 7200, now - 3600] }), [ed]));
emit('bundle.not_yet_valid', 'future.dsse.json',
  envelope(TYPE, policy('interop/main', 1, content, { window: [now + 3600, now + 7200] }), [ed]));
// custode's P-256 signatures are DER (docs/bundles.md); raw r||s (IEEE P1363) is refused
emit('bundle.signature', 'p256-p1363.dsse.json', envelope(TYPE, good, [{ ...p256, encoding: 'ieee-p1363' }]),
  '--trust p256.pub --no-state');
// base64 must be padded (RFC 4648 section 3.2; DSSE names no exception)
emit('bundle.malformed', 'unpadded.dsse.json', envelope(TYPE, good, [ed], { url: true, pad: false }));
{
  const env = JSON.parse(envelope(TYPE, good, [ed]));
  env.payload = env.payload.slice(0, -3);
  emit('bundle.malformed', 'truncated.dsse.json', JSON.stringify(env));
}
// one key, two files, two signatures: still one key
emit('bundle.signature', 'same-key-twice.dsse.json', envelope(TYPE, good, [ed, ed]),
  '--trust ed.pub --trust ed-copy.pub --threshold 2 --no-state');
// A non-ASCII payloadType: @sigstore/core counts its bytes (3.2.1), so the
// signature verifies and the refusal is the type, not the signature.
emit('bundle.type', 'nonascii-type.dsse.json', envelope('application/vnd.custode.policy+json; charset=\u00fc', good, [ed]));

// ---- the version floor, in order, in one state directory ----
const state = '--trust ed.pub --state-dir state --accept';
emit('ok', 'v5.dsse.json', envelope(TYPE, policy('interop/floor', 5, content), [ed]), state);
emit('ok', 'v5-again.dsse.json', envelope(TYPE, policy('interop/floor', 5, content), [ed]), state);
emit('bundle.rollback', 'v4.dsse.json', envelope(TYPE, policy('interop/floor', 4, content), [ed]), state);
emit('bundle.rollback', 'v5-other.dsse.json',
  envelope(TYPE, policy('interop/floor', 5, { ...content, mode: 'audit' }), [ed]), state);
emit('ok', 'v6.dsse.json', envelope(TYPE, policy('interop/floor', 6, content), [ed]), state);

writeFileSync(join(dir, 'manifest'), lines.join('\n') + '\n');
console.log(`produce: ${lines.length} envelopes in ${dir}`);
