// SPDX-License-Identifier: Apache-2.0
// The other direction: verify a bundle custode signed, independently of custode.
//
//   node check-custode.mjs BUNDLE PUBKEY.pem
//
// Checks the envelope shape, the signature over @sigstore/core's PAE with
// node:crypto (the key's own algorithm: Ed25519, or ECDSA P-256/SHA-256 DER),
// the payload type, and contentDigest against `canonicalize` (RFC 8785).
// Also checks that the payload is itself the RFC 8785 form of the document,
// as `custode bundle sign` promises. Exit 0 when all hold.
import { createHash, createPublicKey, verify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dsse } from '@sigstore/core';
import canonicalize from 'canonicalize';

const [file, pubFile] = process.argv.slice(2);
const fail = (msg) => {
  console.error(`check-custode: ${file}: ${msg}`);
  process.exit(1);
};
const env = JSON.parse(readFileSync(file, 'utf8'));
const pub = createPublicKey(readFileSync(pubFile));
if (typeof env.payload !== 'string' || typeof env.payloadType !== 'string' || !Array.isArray(env.signatures))
  fail('not a DSSE envelope');
if (env.payloadType !== 'application/vnd.custode.policy+json') fail(`payloadType ${env.payloadType}`);
const payload = Buffer.from(env.payload, 'base64');
if (payload.toString('base64') !== env.payload) fail('payload is not canonical standard base64');
const pae = dsse.preAuthEncoding(env.payloadType, payload);
const ok = env.signatures.some((s) => {
  const sig = Buffer.from(s.sig, 'base64');
  return pub.asymmetricKeyType === 'ed25519' ? verify(null, pae, pub, sig) : verify('sha256', pae, pub, sig);
});
if (!ok) fail('no signature verifies with the key');
const doc = JSON.parse(payload.toString('utf8'));
const digest = 'sha256:' + createHash('sha256').update(canonicalize(doc.content)).digest('hex');
if (doc.contentDigest !== digest) fail(`contentDigest ${doc.contentDigest}, canonicalize says ${digest}`);
if (payload.toString('utf8') !== canonicalize(doc)) fail('the payload is not the RFC 8785 form of the document');
console.log(`check-custode: ${file}: verified (${pub.asymmetricKeyType}), ${doc.name} v${doc.version}, ${digest}`);
