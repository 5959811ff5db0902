import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { generateKeyPairSync, sign } from 'node:crypto';
import { S3Client, PutObjectCommand, GetObjectCommand, HeadObjectCommand, DeleteObjectCommand } from '@aws-sdk/client-s3';
import { S3Guard, Verifier, InvalidInputError, ContendedError, NotReportedError, FENCE_TOKEN_METADATA, TOMBSTONE_METADATA } from '../dist/index.js';
import { client, unique, needS3, env } from './helpers.mjs';

describe('S3Guard', needS3, () => {
  let s3, guard;
  const Bucket = env.s3Bucket;
  before(() => {
    s3 = new S3Client({
      endpoint: env.s3,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: env.s3AccessKey, secretAccessKey: env.s3SecretKey },
    });
    guard = new S3Guard(s3, Bucket);
  });
  after(() => s3.destroy());

  /** The object as the store has it, bypassing the guard; null when absent. */
  async function object(Key) {
    try {
      const out = await s3.send(new GetObjectCommand({ Bucket, Key }));
      return { body: await out.Body.transformToString(), meta: out.Metadata ?? {}, etag: out.ETag };
    } catch (err) {
      if (err.name === 'NoSuchKey' || err.$metadata?.httpStatusCode === 404) return null;
      throw err;
    }
  }

  /** A write that goes around the guard. */
  const rawPut = (Key, Body, Metadata = {}) => s3.send(new PutObjectCommand({ Bucket, Key, Body, Metadata }));

  /**
   * interposed is the store as a guard under test sees it: before its first
   * conditional write (PutObject, CompleteMultipartUpload, DeleteObject),
   * other() runs, so another writer lands between the guard's read and its
   * write. writes lists the guard's conditional writes.
   */
  function interposed(other) {
    const writes = [];
    const sender = {
      async send(cmd, opts) {
        const name = cmd.constructor.name.replace(/Command$/, '');
        if (['PutObject', 'CompleteMultipartUpload', 'DeleteObject'].includes(name)) {
          writes.push(name);
          if (writes.length === 1) await other();
        }
        return s3.send(cmd, opts);
      },
    };
    return { sender, writes };
  }

  test("the mark is the Go guard's: x-amz-meta-fence-token; higher and equal accepted, lower refused", async () => {
    const key = unique('orders/42') + '.json';
    assert.deepEqual(await guard.put(key, '{"by":"A"}', 5n), { accepted: true, presented: 5n, required: 0n });
    assert.deepEqual(await guard.put(key, '{"by":"A again"}', 5n), { accepted: true, presented: 5n, required: 5n });
    assert.deepEqual(await guard.put(key, '{"by":"B"}', 7n), { accepted: true, presented: 7n, required: 5n });
    const before = await object(key);
    assert.deepEqual(await guard.put(key, '{"by":"A, late"}', 5n), { accepted: false, reason: 'stale-token', presented: 5n, required: 7n });
    const after = await object(key);
    assert.equal(after.body, '{"by":"B"}');
    assert.equal(after.meta[FENCE_TOKEN_METADATA], '7');
    assert.equal(after.etag, before.etag);
    assert.equal(await guard.mark(key), 7n);
    assert.equal(await guard.mark(unique('absent')), 0n);
  });

  test('16 concurrent writers with distinct tokens: exactly the highest wins, each gets a decision', async () => {
    const key = unique('race');
    const g = new S3Guard(s3, Bucket, { maxAttempts: 16 });
    const tokens = Array.from({ length: 16 }, (_, i) => 100n + BigInt(((i * 5) % 16) * 7));
    const ds = await Promise.all(tokens.map((t) => g.put(key, `body of ${t}`, t)));
    const highest = 100n + 15n * 7n;
    ds.forEach((d, i) => {
      if (tokens[i] === highest) assert.equal(d.accepted, true);
      if (!d.accepted) assert.ok(d.required > d.presented && d.reason === 'stale-token', JSON.stringify(d, (_, v) => (typeof v === 'bigint' ? String(v) : v)));
    });
    const o = await object(key);
    assert.equal(o.body, `body of ${highest}`);
    assert.equal(o.meta[FENCE_TOKEN_METADATA], String(highest));
  });

  test('a writer that bypasses the guard and raises the mark is respected; marks are per object', async () => {
    const key = unique('bypass');
    await guard.put(key, 'guarded', 10n);
    await rawPut(key, 'around the guard', { 'fence-token': '50' });
    assert.deepEqual(await guard.put(key, 'stale', 40n), { accepted: false, reason: 'stale-token', presented: 40n, required: 50n });
    assert.equal((await object(key)).body, 'around the guard');
    const other = unique('other');
    assert.equal((await guard.put(other, 'low token elsewhere', 1n)).accepted, true);
    const foreign = unique('foreign');
    await rawPut(foreign, 'theirs', { 'fence-token': '1e3' });
    await assert.rejects(guard.put(foreign, 'ours', 5000n), /not a fencing token/);
    assert.equal((await object(foreign)).body, 'theirs');
  });

  test('every 412 path: the guard reads again and decides again', async () => {
    const cases = [
      { name: 'If-Match meets a newer write', setup: (k) => rawPut(k, 'old', { 'fence-token': '5' }), other: (k) => rawPut(k, 'newer', { 'fence-token': '9' }), call: (g, k) => g.put(k, 'mine', 7n), accepted: false, required: 9n, writes: ['PutObject'], body: 'newer' },
      { name: "If-Match meets an older holder's write", setup: (k) => rawPut(k, 'old', { 'fence-token': '5' }), other: (k) => rawPut(k, 'between', { 'fence-token': '6' }), call: (g, k) => g.put(k, 'mine', 7n), accepted: true, required: 6n, writes: ['PutObject', 'PutObject'], body: 'mine' },
      { name: 'If-None-Match: * meets a creation', setup: async () => {}, other: (k) => rawPut(k, 'created', { 'fence-token': '8' }), call: (g, k) => g.put(k, 'mine', 7n), accepted: false, required: 8n, writes: ['PutObject'], body: 'created' },
      { name: 'If-Match meets a delete (404)', setup: (k) => rawPut(k, 'old', { 'fence-token': '5' }), other: (k) => s3.send(new DeleteObjectCommand({ Bucket, Key: k })), call: (g, k) => g.put(k, 'mine', 7n), accepted: true, required: 0n, writes: ['PutObject', 'PutObject'], body: 'mine' },
      { name: 'the same bytes go as a multipart upload, whose If-Match meets a newer write', setup: (k) => rawPut(k, 'same', { 'fence-token': '5' }), other: (k) => rawPut(k, 'newer', { 'fence-token': '9' }), call: (g, k) => g.put(k, 'same', 7n), accepted: false, required: 9n, writes: ['CompleteMultipartUpload'], body: 'newer' },
      { name: 'a conditional delete meets a newer write', setup: (k) => rawPut(k, 'old', { 'fence-token': '5' }), other: (k) => rawPut(k, 'newer', { 'fence-token': '9' }), call: (g, k) => g.purge(k, 7n), accepted: false, required: 9n, writes: ['DeleteObject'], body: 'newer' },
      { name: 'a read that raises the mark meets a newer write', setup: (k) => rawPut(k, 'old', { 'fence-token': '5' }), other: (k) => rawPut(k, 'newer', { 'fence-token': '9' }), call: (g, k) => g.get(k, 7n), accepted: false, required: 9n, writes: ['CompleteMultipartUpload'], body: 'newer' },
    ];
    for (const c of cases) {
      const key = unique('412');
      await c.setup(key);
      const { sender, writes } = interposed(() => c.other(key));
      const d = await c.call(new S3Guard(sender, Bucket), key);
      assert.equal(d.accepted, c.accepted, c.name);
      assert.equal(d.required, c.required, c.name);
      assert.deepEqual(writes, c.writes, c.name);
      assert.equal((await object(key))?.body, c.body, c.name);
    }
  });

  test('the same bytes under a newer token change the ETag, so a zombie that read the old one is refused', async () => {
    const key = unique('same-bytes');
    await guard.put(key, 'state: idle', 1n);
    const { sender } = interposed(() => guard.put(key, 'state: idle', 2n));
    assert.deepEqual(await new S3Guard(sender, Bucket).put(key, 'state: busy (zombie)', 1n), { accepted: false, reason: 'stale-token', presented: 1n, required: 2n });
    const o = await object(key);
    assert.equal(o.body, 'state: idle');
    assert.equal(o.meta[FENCE_TOKEN_METADATA], '2');
  });

  test('a streamed body is opened again after a 412; content type and metadata are kept', async () => {
    const key = unique('stream');
    const big = Buffer.alloc(3 << 20, 'abcdefgh');
    await rawPut(key, 'small', { 'fence-token': '1' });
    let opened = 0;
    const body = { size: big.length, open: () => (opened++, Readable.from([big.subarray(0, 1 << 20), big.subarray(1 << 20)])) };
    const { sender, writes } = interposed(() => rawPut(key, 'between', { 'fence-token': '2' }));
    const d = await new S3Guard(sender, Bucket).putObject({ key, body, contentType: 'application/octet-stream', metadata: { Origin: 'node' } }, 3n);
    assert.equal(d.accepted, true);
    assert.deepEqual(writes, ['PutObject', 'PutObject']);
    assert.equal(opened, 2);
    const head = await s3.send(new HeadObjectCommand({ Bucket, Key: key }));
    assert.equal(head.ContentLength, big.length);
    assert.equal(head.ContentType, 'application/octet-stream');
    assert.equal(head.Metadata.origin, 'node');
    assert.equal(head.Metadata[FENCE_TOKEN_METADATA], '3');
  });

  test('reads raise the mark; delete leaves a tombstone; purge deletes', async () => {
    const key = unique('read');
    await guard.putObject({ key, body: 'a,b\n', contentType: 'text/csv' }, 4n);
    const r = await guard.get(key, 6n);
    assert.equal(r.accepted, true);
    assert.equal(r.found, true);
    assert.equal(Buffer.from(r.body).toString(), 'a,b\n');
    assert.equal(r.contentType, 'text/csv');
    assert.equal(await guard.mark(key), 6n);
    assert.equal((await guard.put(key, 'late', 5n)).accepted, false);
    assert.equal((await guard.get(key, 5n)).accepted, false);

    assert.equal((await guard.delete(key, 6n)).accepted, true);
    const tomb = await object(key);
    assert.equal(tomb.body, '');
    assert.equal(tomb.meta[TOMBSTONE_METADATA], 'true');
    assert.equal((await guard.get(key, 6n)).found, false);
    assert.deepEqual(await guard.put(key, 'resurrected', 5n), { accepted: false, reason: 'stale-token', presented: 5n, required: 6n });
    assert.equal((await guard.purge(key, 5n)).accepted, false);
    assert.equal((await guard.purge(key, 6n)).accepted, true);
    assert.equal(await object(key), null);
    // An absent object read under a token keeps the mark in a tombstone.
    const absent = unique('absent');
    assert.equal((await guard.get(absent, 3n)).found, false);
    assert.equal((await guard.put(absent, 'late', 2n)).accepted, false);
  });

  test('built from a client: verifies with the server keys by default and reports refusals', async () => {
    const c = client();
    try {
      const key = unique('signed/orders') + '.json';
      const g = new S3Guard(s3, Bucket, { client: c, source: 'node-s3' });
      assert.equal(g.signed, true);
      const a = c.lock(key, { holder: 'a' });
      await a.acquire();
      assert.equal((await g.put(key, 'bare', a.token)).reason, 'bad-signature');
      assert.equal((await g.put(key, 'A', a)).accepted, true);
      assert.equal((await g.put(key, 'forged', { token: a.token + 5n, signature: a.signature })).reason, 'bad-signature');
      assert.equal((await g.put(key, 'other lock', { token: a.token, signature: a.signature, resource: 'billing' })).reason, 'scope-mismatch');
      const stale = { token: a.token, signature: a.signature, resource: key };
      await a.release();
      const b = c.lock(key, { holder: 'b' });
      await b.acquire();
      assert.equal((await g.put(key, 'B', b)).accepted, true);
      assert.deepEqual(await g.put(key, 'A, late', stale), { accepted: false, reason: 'stale-token', presented: stale.token, required: b.token });
      await b.release();
      const { rejections } = await c.rejections({ resource: key });
      assert.deepEqual(rejections.map((r) => r.reason), ['stale-token', 'scope-mismatch', 'bad-signature', 'bad-signature']);
      // With auth on, the server puts the reporting key's name before the source.
      for (const r of rejections) assert.match(r.source, /(^|\/)node-s3$/);
      assert.equal((await object(key)).body, 'B');
      const loose = new S3Guard(s3, Bucket, { client: c, acceptUnsignedTokens: true });
      assert.equal(loose.signed, false);
      assert.equal((await loose.put(key, 'bare, accepted', b.token)).accepted, true);
    } finally {
      c.close();
    }
  });

  test("a shared lock's token reads (and raises the mark), never writes", async () => {
    // Grants signed here with one key, as the issuer signs them: a writer's
    // of 19 and 21, and the shared grant of the read phase 20 (its message
    // ends in " shared").
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
    const keys = { signingKeys: async () => ({ issuer: 'test', keys: [{ keyId: 'k', alg: 'Ed25519', publicKey: raw.toString('base64url') }] }) };
    const g = new S3Guard(s3, Bucket, { verifier: new Verifier(keys) });
    const key = unique('reports/daily') + '.csv';
    const grant = (token, shared = false) => ({ token, resource: key, signature: sign(null, Buffer.from(`fenceview/v1 ${key} ${token}${shared ? ' shared' : ''}`), privateKey).toString('base64url') });
    const writer19 = grant(19n);
    const reader20 = grant(20n, true);
    const writer21 = grant(21n);
    assert.equal((await g.put(key, 'v1', writer19)).accepted, true);
    assert.deepEqual(await g.put(key, 'by a reader', reader20), { accepted: false, reason: 'shared-token', presented: 20n, required: 19n });
    const read = await g.get(key, reader20);
    assert.equal(read.accepted, true);
    assert.equal(Buffer.from(read.body).toString(), 'v1');
    assert.equal(await g.mark(key), 20n);
    // The writer of the phase before cannot write after the reader read.
    assert.deepEqual(await g.put(key, 'late', writer19), { accepted: false, reason: 'stale-token', presented: 19n, required: 20n });
    assert.equal((await g.put(key, 'v2', writer21)).accepted, true);
    assert.equal((await g.get(key, reader20)).reason, 'stale-token');
    assert.equal((await object(key)).body, 'v2');
  });

  test('a refusal the server cannot record is still a refusal', async () => {
    const key = unique('unreported');
    const failing = { signingKeys: async () => ({ issuer: 'x', keys: [] }), report: async () => { throw new Error('server down'); } };
    const g = new S3Guard(s3, Bucket, { client: failing, acceptUnsignedTokens: true });
    await g.put(key, 'kept', 5n);
    await assert.rejects(g.put(key, 'stale', 4n), (err) => err instanceof NotReportedError && err.decision.required === 5n);
    assert.equal((await object(key)).body, 'kept');
  });

  test('bad input is refused and sends nothing', async () => {
    const key = unique('bad');
    await guard.put(key, 'kept', 9n);
    const bad = [
      () => guard.put('', 'x', 10n),
      () => guard.put(key, 'x', -1n),
      () => guard.put(key, 'x', 0n),
      () => guard.put('k'.repeat(1025), 'x', 10n),
      () => guard.put('a\nb', 'x', 10n),
      () => guard.putObject({ key, body: 'x', metadata: { note: 'x'.repeat(1 << 20) } }, 10n),
      () => guard.putObject({ key, body: 'x', metadata: { 'Fence-Token': '99' } }, 10n),
      () => guard.putObject({ key, body: 'x', metadata: { note: 'a\r\nx-amz-meta-fence-token: 99' } }, 10n),
      () => guard.putObject({ key, body: 'x', metadata: { A: '1', a: '2' } }, 10n),
      () => guard.putObject({ key, body: 'x', contentType: 'text/plain\r' }, 10n),
      () => guard.putObject({ key, body: { size: -1, open: () => Readable.from([]) } }, 10n),
      () => guard.get(key, 0n),
      () => guard.delete(key, -5n),
    ];
    for (const [i, call] of bad.entries()) await assert.rejects(call(), InvalidInputError, `bad call ${i}`);
    assert.throws(() => new S3Guard(s3, ''), InvalidInputError);
    assert.throws(() => new S3Guard(s3, Bucket, { maxAttempts: 3 }), InvalidInputError);
    assert.throws(() => new S3Guard(null, Bucket), InvalidInputError);
    const o = await object(key);
    assert.equal(o.body, 'kept');
    assert.equal(o.meta[FENCE_TOKEN_METADATA], '9');
  });

  test('checkStore: versitygw refuses every stale condition; a store that ignores them is named', async () => {
    const key = unique('check');
    assert.deepEqual(await guard.checkStore(key), []);
    assert.equal(await object(key), null);
    await guard.put(key, 'taken', 1n);
    await assert.rejects(guard.checkStore(key), InvalidInputError);
    assert.equal((await object(key)).body, 'taken');
    // A store that drops every condition (the real one, its headers stripped).
    const careless = {
      send(cmd, opts) {
        delete cmd.input.IfMatch;
        delete cmd.input.IfNoneMatch;
        return s3.send(cmd, opts);
      },
    };
    const other = unique('check');
    const ignored = await new S3Guard(careless, Bucket).checkStore(other);
    assert.deepEqual(ignored, ['PutObject If-None-Match: *', 'PutObject If-Match', 'CompleteMultipartUpload If-Match', 'DeleteObject If-Match']);
    assert.equal(await object(other), null);
  });

  test('a writer that always loses stops at maxAttempts', async () => {
    const key = unique('contended');
    await guard.put(key, 'start', 2n);
    let n = 0;
    const sender = {
      async send(cmd, opts) {
        if (cmd.constructor.name === 'PutObjectCommand' && cmd.input.IfMatch !== undefined) await guard.put(key, `other ${++n}`, 2n);
        return s3.send(cmd, opts);
      },
    };
    await assert.rejects(new S3Guard(sender, Bucket, { maxAttempts: 16 }).put(key, 'mine', 2n), ContendedError);
    assert.equal(n, 16);
  });
});
