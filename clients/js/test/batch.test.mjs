// Batch signatures: one Ed25519 signature over a Merkle root (RFC 9162)
// covers a batch of grants; each token carries its index, the batch's size
// and its audit path. The trees here are built by an implementation of the
// RFC's recursive MTH and PATH written in this file, independent of the
// package's iterative verifier, signed as the server signs: the key signs
// "fenceview/batch/v2 <size> <root>", the carrier's first byte is 0x02, and
// shared grants' leaves ("... shared") are mixed with exclusive ones. No
// server is needed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Verifier, WasmGuard, decodeCarrier, decodeSignature } from '../dist/index.js';

const sha256 = (...parts) => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};

/** RFC 9162 §2.1.1: MTH of the leaves' messages. */
function mth(msgs) {
  if (msgs.length === 1) return sha256(Buffer.of(0), msgs[0]);
  const k = split(msgs.length);
  return sha256(Buffer.of(1), mth(msgs.slice(0, k)), mth(msgs.slice(k)));
}

/** The largest power of two smaller than n (n > 1). */
function split(n) {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** RFC 9162 §2.1.3.1: PATH(m, D[n]), the siblings from the leaf up. */
function auditPath(m, msgs) {
  if (msgs.length === 1) return [];
  const k = split(msgs.length);
  return m < k ? [...auditPath(m, msgs.slice(0, k)), mth(msgs.slice(k))] : [...auditPath(m - k, msgs.slice(k)), mth(msgs.slice(0, k))];
}

function carrier(sig, index, size, path, version = 0x02) {
  const head = Buffer.alloc(9);
  head[0] = version;
  head.writeUInt32BE(index, 1);
  head.writeUInt32BE(size, 5);
  return Buffer.concat([head.subarray(0, 1), sig, head.subarray(1), ...path]).toString('base64url');
}

const { publicKey, privateKey } = generateKeyPairSync('ed25519');
const pub = publicKey.export({ format: 'jwk' }).x;

/**
 * batch signs n grants of resources r-0.. r-(n-1), tokens 100.., as one
 * batch: their carriers. Every third grant (i % 3 == 1) is a shared one.
 */
function batch(n, key = privateKey) {
  const grants = Array.from({ length: n }, (_, i) => ({ resource: `r-${i % 7}`, token: BigInt(100 + i), shared: i % 3 === 1 }));
  const msgs = grants.map((g) => Buffer.from(`fenceview/v1 ${g.resource} ${g.token}${g.shared ? ' shared' : ''}`, 'utf8'));
  const root = mth(msgs);
  const sig = sign(null, Buffer.from(`fenceview/batch/v2 ${n} ${root.toString('hex')}`, 'utf8'), key);
  return grants.map((g, i) => ({ ...g, sig, path: auditPath(i, msgs), signature: carrier(sig, i, n, auditPath(i, msgs)) }));
}

/** verifyAs verifies g in its own mode. */
const verifyAs = (v, g, sig = g.signature) => (g.shared ? v.verifyShared(g.resource, g.token, sig) : v.verify(g.resource, g.token, sig));

test('every token of every batch of 1..70 grants, shared and exclusive, verifies in its mode only, one Ed25519 verification a batch', async () => {
  for (let n = 1; n <= 70; n++) {
    const v = Verifier.fromKeys([pub]);
    const b = batch(n);
    for (const g of b) {
      assert.equal(await verifyAs(v, g), true, `size ${n} token ${g.token}`);
      assert.equal(decodeSignature(g.signature), null, 'a batch carrier is not a token signature');
    }
    assert.equal(v.verifications, 1, `size ${n}: the root is verified once`);
    for (const g of [b[0], b[1], b[n - 1]].filter(Boolean)) {
      // A reader's token never verifies as a writer's, nor the reverse; mode tells them apart.
      assert.equal(await (g.shared ? v.verify(g.resource, g.token, g.signature) : v.verifyShared(g.resource, g.token, g.signature)), false, `size ${n} token ${g.token}: the other mode`);
      assert.equal(await v.mode(g.resource, g.token, g.signature), g.shared ? 'shared' : 'exclusive');
      assert.equal(await v.mode(g.resource, g.token, g.signature, true), g.shared ? 'shared' : 'exclusive');
    }
  }
});

test('the 64-byte carrier of a token signed alone still verifies', async () => {
  const v = Verifier.fromKeys([pub]);
  const sig = sign(null, Buffer.from('fenceview/v1 alone 42', 'utf8'), privateKey).toString('base64url');
  assert.equal(decodeCarrier(sig).kind, 'token');
  assert.equal(await v.verify('alone', 42n, sig), true);
  assert.equal(await v.verify('alone', 43n, sig), false);
});

/** The ways a carrier of batch b's token i can be tampered with, each a bad signature. */
function tampered(b, i) {
  const g = b[i];
  const n = b.length;
  const out = {};
  if (g.path.length > 0) {
    const flipped = g.path.map((p) => Buffer.from(p));
    flipped[0][5] ^= 0x01;
    out['a flipped path byte'] = carrier(g.sig, i, n, flipped);
    out['a path one hash short'] = carrier(g.sig, i, n, g.path.slice(0, -1));
    const other = (i + 1) % n;
    out['another index'] = carrier(g.sig, other, n, g.path);
    out["a sibling's proof"] = b[other].signature;
  }
  out['a path one hash long'] = carrier(g.sig, i, n, [...g.path, Buffer.alloc(32)]);
  // Another size, even one whose tree gives this leaf the same path and
  // root: the key signed the size with the root.
  for (let size = Math.max(i + 1, n - 3); size <= n + 3; size++) if (size !== n) out[`size ${size}`] = carrier(g.sig, i, size, g.path);
  out['the version whose signature did not cover the size (0x01)'] = carrier(g.sig, i, n, g.path, 0x01);
  out['an index outside the tree'] = carrier(g.sig, n, n, g.path);
  const sig = Buffer.from(g.sig);
  sig[0] ^= 0x80;
  out['a flipped signature byte'] = carrier(sig, i, n, g.path);
  out['another key'] = batch(n, generateKeyPairSync('ed25519').privateKey)[i].signature;
  out['a padded text'] = g.signature + '=';
  out['the leaf signature tag missing'] = Buffer.from(g.signature, 'base64url').subarray(1).toString('base64url');
  return out;
}

test('a tampered carrier is bad-signature and the guard mark stays', async () => {
  const module = await readFile(new URL('../../../internal/modules/guard.wasm', import.meta.url));
  for (const n of [2, 3, 5, 8, 13, 70]) {
    const b = batch(n);
    for (const i of [0, 1, n - 1, Math.floor(n / 2)]) {
      const g = b[i];
      const access = g.shared ? 'read' : 'write';
      for (const [what, sig] of Object.entries(tampered(b, i))) {
        const v = Verifier.fromKeys([pub]);
        assert.equal(await verifyAs(v, g, sig), false, `size ${n} index ${i}: ${what}`);
        const guard = await WasmGuard.load({ module, verifier: v });
        guard.seed(g.resource, 50n);
        const d = await guard.check(g.resource, g.token, sig, access);
        assert.deepEqual({ accepted: d.accepted, reason: d.reason }, { accepted: false, reason: 'bad-signature' }, `size ${n} index ${i}: ${what}`);
        assert.equal(guard.highWater(g.resource), 50n, `size ${n} index ${i}: ${what} moved the mark`);
        // The honest carrier is accepted by the same guard.
        assert.equal((await guard.check(g.resource, g.token, g.signature, access)).accepted, true);
        assert.equal(guard.highWater(g.resource), g.token);
      }
    }
  }
});

test('a remembered root does not admit a token that is not in it', async () => {
  const v = Verifier.fromKeys([pub]);
  const b = batch(9);
  assert.equal(await v.verify(b[3].resource, b[3].token, b[3].signature), true);
  // Token 4's path with token 3's place: the root differs, nothing cached helps.
  assert.equal(await v.verify(b[4].resource, b[4].token, b[3].signature), false);
  assert.equal(await v.verify(b[3].resource, b[3].token + 1000n, b[3].signature), false);
});

test("a shared grant's token reads but does not write: shared-token, and the mark stays", async () => {
  const module = await readFile(new URL('../../../internal/modules/guard.wasm', import.meta.url));
  const b = batch(5);
  const reader = b[1];
  assert.equal(reader.shared, true);
  const guard = await WasmGuard.load({ module, verifier: Verifier.fromKeys([pub]) });
  guard.seed(reader.resource, 50n);
  const w = await guard.check(reader.resource, reader.token, reader.signature);
  assert.deepEqual({ accepted: w.accepted, reason: w.reason }, { accepted: false, reason: 'shared-token' });
  assert.equal(guard.highWater(reader.resource), 50n);
  assert.equal((await guard.check(reader.resource, reader.token, reader.signature, 'read')).accepted, true);
  assert.equal(guard.highWater(reader.resource), reader.token);
  // A writer's token is fit for a read too.
  const writer = b[2];
  assert.equal((await guard.check(writer.resource, writer.token, writer.signature, 'read')).accepted, true);
  await assert.rejects(async () => guard.check(writer.resource, writer.token, writer.signature, 'append'), /access/);
});

test('the middleware: GET and HEAD are reads, other methods writes, unless X-Fencing-Access says', async () => {
  const { fencingMiddleware } = await import('../dist/index.js');
  const http = await import('node:http');
  const module = await readFile(new URL('../../../internal/modules/guard.wasm', import.meta.url));
  const guard = await WasmGuard.load({ module, verifier: Verifier.fromKeys([pub]) });
  const mw = fencingMiddleware(guard);
  const seen = [];
  const server = http.createServer((req, res) => mw(req, res, () => {
    seen.push(req.fencing.access);
    res.end('ok');
  }));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}/`;
  const reader = batch(5)[1];
  const headers = { 'x-fencing-token': String(reader.token), 'x-fencing-signature': reader.signature, 'x-resource-id': reader.resource };
  try {
    const post = await fetch(url, { method: 'POST', headers });
    assert.equal(post.status, 409);
    assert.equal((await post.json()).code, 'shared-token');
    assert.equal((await fetch(url, { headers })).status, 200, 'a GET is a read');
    assert.equal((await fetch(url, { method: 'HEAD', headers })).status, 200, 'a HEAD is a read');
    assert.equal((await fetch(url, { method: 'POST', headers: { ...headers, 'x-fencing-access': 'read' } })).status, 200, 'a POST said to be a read');
    const bad = await fetch(url, { method: 'POST', headers: { ...headers, 'x-fencing-access': 'append' } });
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).code, 'invalid-request');
    assert.deepEqual(seen, ['read', 'read', 'read']);
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
