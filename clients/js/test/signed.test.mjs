import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign } from 'node:crypto';
import pg from 'pg';
import Redis from 'ioredis';
import { Verifier, WasmGuard, RedisGuard, FencedResource, PgMarks, callUnfenceable, fencingMiddleware, callFencedService } from '../dist/index.js';
import { client, unique, listen, needServer, needPg, needRedis, env } from './helpers.mjs';

/** Forgeries of a genuine (resource, token, signature), each of which every guard must refuse. */
function forgeries(resource, token, signature) {
  const other = generateKeyPairSync('ed25519').privateKey;
  const raw = Buffer.from(signature, 'base64url');
  const flipped = Buffer.from(raw);
  flipped[10] ^= 0x40;
  return {
    'another key': { token, signature: sign(null, Buffer.from(`fenceview/v1 ${resource} ${token}`), other).toString('base64url') },
    'the signature of another token': { token: token + 1n, signature },
    'a corrupted signature': { token, signature: flipped.toString('base64url') },
    'truncated': { token, signature: signature.slice(0, signature.length - 1) },
    'padded': { token, signature: signature + '==' },
    'the +/ alphabet': { token, signature: raw.toString('base64') },
    'zeros': { token, signature: Buffer.alloc(64).toString('base64url') },
    'missing': { token, signature: undefined },
  };
}

describe('signed tokens', needServer, () => {
  const c = client();
  let verifier;
  before(async () => {
    verifier = await c.verifier({ minRefreshMs: 0 });
  });
  after(() => c.close());

  test('a grant verifies; forgeries do not', async () => {
    const r = unique('signed');
    const lock = c.lock(r, { holder: 'h' });
    await lock.acquire();
    // A batch carrier (98 characters and up), or a lone signature (86).
    assert.ok(lock.signature.length === 86 || lock.signature.length >= 98, lock.signature);
    assert.ok(await verifier.verify(r, lock.token, lock.signature));
    assert.equal(await verifier.verify(unique('elsewhere'), lock.token, lock.signature), false);
    for (const [name, f] of Object.entries(forgeries(r, lock.token, lock.signature))) {
      assert.equal(await verifier.verify(r, f.token, f.signature), false, name);
    }
    await lock.release();
  });

  test('the WebAssembly middleware refuses forgeries as bad-signature and keeps its mark', async () => {
    const guard = await WasmGuard.load({ module: await c.guardModule(), verifier });
    const mw = fencingMiddleware(guard);
    const svc = await listen((req, res) => mw(req, res, () => res.end('{}')));
    try {
      const r = unique('mw-signed');
      const lock = c.lock(r, { holder: 'h' });
      await lock.acquire();
      assert.equal((await callFencedService(svc.url, { resourceId: r }, lock)).accepted, true);
      for (const [name, f] of Object.entries(forgeries(r, lock.token, lock.signature))) {
        const d = await callFencedService(svc.url, { resourceId: r }, f);
        assert.equal(d.accepted, false, name);
        assert.equal(d.reason, 'bad-signature', name);
        assert.equal(d.response.status, 409, name);
        assert.equal(d.response.headers.get('x-required-token'), null, name); // only a stale token names the token to beat
        assert.equal(d.required, lock.token, name);
      }
      // With a verifier, the synchronous unsigned check refuses every token, as guard.wasm does once a key is trusted.
      assert.equal(guard.checkUnsigned(r, lock.token + 1n).reason, 'bad-signature');
      assert.equal(guard.highWater(r), lock.token);
      await lock.release();
    } finally {
      await svc.close();
    }
  });

  test('rotation: new grants verify at once, old ones until their key is removed', async () => {
    const r = unique('rotate');
    const before = c.lock(r, { holder: 'early' });
    await before.acquire();
    await before.release();
    const oldKey = (await c.signingKeys()).keys.find((k) => k.active).keyId;
    const fresh = await c.rotateSigningKey();
    assert.notEqual(fresh.keyId, oldKey);
    const after = c.lock(r, { holder: 'late' });
    await after.acquire();
    assert.equal(after.grant.fencing.keyId, fresh.keyId);
    // The verifier has not seen the new key: the miss makes it fetch the keys again.
    assert.ok(!verifier.keyIds.includes(fresh.keyId));
    assert.ok(await verifier.verify(r, after.token, after.signature));
    assert.ok(verifier.keyIds.includes(fresh.keyId));
    assert.ok(await verifier.verify(r, before.token, before.signature));
    await c.removeSigningKey(oldKey);
    await verifier.refresh();
    assert.equal(await verifier.verify(r, before.token, before.signature), false);
    assert.ok(await verifier.verify(r, after.token, after.signature));
    await after.release();
  });

  test('a verifier of fixed keys never calls out', async () => {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const x = publicKey.export({ format: 'jwk' }).x;
    const v = Verifier.fromKeys([x]);
    const sig = sign(null, Buffer.from('fenceview/v1 a 5'), privateKey).toString('base64url');
    assert.ok(await v.verify('a', 5n, sig));
    assert.equal(await v.verify('a', 6n, sig), false);
  });
});

describe('signed tokens at the PostgreSQL and Redis guards', { skip: needPg.skip || needRedis.skip }, () => {
  const c = client();
  let pool, redis, verifier;
  before(async () => {
    verifier = await c.verifier({ minRefreshMs: 0 });
    pool = new pg.Pool({ connectionString: env.pg, max: 2 });
    redis = new Redis(env.redis);
  });
  after(async () => {
    await pool.end();
    await redis.quit();
    c.close();
  });

  // Given a verifier, or built from the client: safe by default, the
  // client's guards fetch the server's keys themselves.
  for (const how of ['a verifier', 'the client']) test(`FencedResource, PgMarks, RedisGuard and callUnfenceable given ${how} refuse forgeries and move no mark`, async () => {
    const signed = how === 'the client' ? { client: c } : { verifier };
    const table = unique('signed_rows').replace('-', '_');
    await pool.query(`CREATE TABLE ${table} (id TEXT PRIMARY KEY, v TEXT, fence_token BIGINT NOT NULL DEFAULT 0)`);
    const r = unique('signed-row');
    await pool.query(`INSERT INTO ${table} (id, v) VALUES ($1, 'start')`, [r]);
    const rows = new FencedResource(pool, { table, key: 'id', ...signed });
    const marks = new PgMarks(pool, { table: unique('signed_marks').replace('-', '_'), ...signed });
    await marks.createTable();
    const kv = new RedisGuard(redis, signed);
    const lock = c.lock(r, { holder: 'h' });
    await lock.acquire();
    let called = 0;
    for (const [name, f] of Object.entries(forgeries(r, lock.token, lock.signature))) {
      const sig = f.signature === undefined ? {} : { signature: f.signature };
      assert.equal((await rows.apply(r, { v: 'forged' }, f.token, sig)).reason, 'bad-signature', `rows: ${name}`);
      assert.equal((await marks.check(r, f.token, f.signature)).reason, 'bad-signature', `marks: ${name}`);
      assert.equal((await kv.write(r, f.token, { v: 'forged' }, sig)).reason, 'bad-signature', `redis: ${name}`);
      const u = await callUnfenceable(marks, r, f, async () => called++);
      assert.equal(u.reason, 'bad-signature', `unfenceable: ${name}`);
    }
    assert.equal(called, 0);
    assert.equal((await pool.query(`SELECT v, fence_token::text AS t FROM ${table} WHERE id = $1`, [r])).rows[0].t, '0');
    assert.equal(await marks.highWater(r), 0n);
    assert.equal((await kv.read(r)).mark, 0n);
    // The genuine token passes everywhere.
    assert.deepEqual(await rows.apply(r, { v: 'real' }, lock.token, { signature: lock.signature }), { accepted: true, token: lock.token });
    assert.equal((await kv.write(r, lock.token, { v: 'real' }, { signature: lock.signature })).accepted, true);
    assert.equal((await callUnfenceable(marks, r, lock, async (key) => key)).result, `${r}:${lock.token}`);
    await lock.release();
  });
});

test('a verifier whose server is away keeps the keys it has, and asks again at most once per minRefreshMs', async () => {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const key = { keyId: 'k1', alg: 'Ed25519', publicKey: publicKey.export({ format: 'jwk' }).x, active: true };
  let up = true;
  let asked = 0;
  const source = {
    async signingKeys() {
      asked++;
      if (!up) throw new Error('connection refused');
      return { issuer: 'test', keys: [key] };
    },
  };
  let now = 0;
  const v = new Verifier(source, { maxAgeMs: 100, minRefreshMs: 50, now: () => now });
  const sig = (t) => sign(null, Buffer.from(`fenceview/v1 r ${t}`), privateKey).toString('base64url');
  assert.ok(await v.verify('r', 1n, sig(1n)));
  assert.equal(asked, 1);
  up = false;
  now = 1000; // past maxAge: the next verification asks first, fails, and goes on with the key it has
  assert.ok(await v.verify('r', 2n, sig(2n)));
  assert.equal(v.refreshErrors, 1);
  // Forgeries ask again only once per minRefreshMs.
  for (let i = 0; i < 10; i++) assert.equal(await v.verify('r', 3n, sig(4n)), false);
  assert.equal(asked, 2);
  now += 50;
  assert.equal(await v.verify('r', 3n, sig(4n)), false);
  assert.equal(asked, 3);
});
