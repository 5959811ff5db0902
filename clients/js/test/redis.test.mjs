import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Redis from 'ioredis';
import { RedisGuard, fencingMiddleware, callFencedService, InvalidInputError } from '../dist/index.js';
import { client, unique, listen, needRedis, env, TWO_53_PLUS_1, TWO_63_MINUS_2, grantAt } from './helpers.mjs';

describe('RedisGuard', needRedis, () => {
  let redis, guard;
  before(() => {
    redis = new Redis(env.redis, { lazyConnect: false, maxRetriesPerRequest: 2 });
    guard = new RedisGuard(redis);
  });
  after(() => redis.quit());

  test("keys are the Go guard's: the resource id as the hash tag", async () => {
    const r = unique('inventory:42');
    const d = await guard.write(r, 5n, { stock: '7', reserved: '2' });
    assert.deepEqual(d, { accepted: true, presented: 5n, required: 0n });
    assert.equal(await redis.get(`{${r}}:fence_token`), '5');
    assert.equal(await redis.get(`{${r}}:stock`), '7');
    assert.equal(await redis.get(`{${r}}:reserved`), '2');
    assert.equal(guard.key(r, 'stock'), `{${r}}:stock`);
    assert.equal(new RedisGuard(redis, { prefix: 'shop:' }).markKey(r), `shop:{${r}}:fence_token`);
    assert.deepEqual(await guard.read(r, ['stock', 'absent']), { mark: 5n, values: { stock: '7' } });
    // The script is byte for byte guard/redisguard's: the server caches it
    // under the SHA-1 the Go guard sends.
    assert.deepEqual(await redis.script('EXISTS', 'a7066e761377efc79dcd563974627989003c1000', '6e4c2c15dbaa2c81d2153b625f615ed7db8eec52'), [1, 1]);
  });

  test('accept higher and equal, refuse lower with the mark that beat it', async () => {
    const r = unique('rule');
    assert.equal((await guard.write(r, 42n, { v: 'B' })).accepted, true);
    assert.equal((await guard.write(r, 42n, { v: 'B2' })).accepted, true);
    assert.deepEqual(await guard.write(r, 41n, { v: 'A' }), { accepted: false, reason: 'stale-token', presented: 41n, required: 42n });
    assert.deepEqual(await guard.read(r, ['v']), { mark: 42n, values: { v: 'B2' } });
  });

  test('concurrent writers: exactly the highest wins', async () => {
    const r = unique('race');
    await guard.write(r, 1000n, { v: 'start' });
    const tokens = Array.from({ length: 24 }, (_, i) => 1001n + BigInt(i));
    const ds = await Promise.all([...tokens, 999n].map((t) => guard.write(r, t, { v: String(t) })));
    assert.equal(ds.at(-1).accepted, false);
    for (const d of ds) if (!d.accepted) assert.ok(d.required > d.presented);
    assert.deepEqual(await guard.read(r, ['v']), { mark: 1024n, values: { v: '1024' } });
  });

  test('tokens at 2^53+1 and 2^63-2 from real grants compare exactly (no Lua doubles)', async () => {
    const c = client();
    try {
      for (const big of [TWO_53_PLUS_1, TWO_63_MINUS_2]) {
        const lock = await grantAt(c, big);
        const r = lock.resource;
        assert.equal((await guard.write(r, lock.token, { v: 'big' })).accepted, true);
        assert.deepEqual(await guard.write(r, big - 1n, { v: 'stale' }), { accepted: false, reason: 'stale-token', presented: big - 1n, required: big });
        assert.equal(await redis.get(guard.markKey(r)), big.toString());
        assert.equal((await guard.read(r)).mark, big);
        await lock.release();
      }
    } finally {
      c.close();
    }
  });

  test('bad input is refused and sends nothing', async () => {
    const r = unique('bad');
    await guard.write(r, 9n, { v: 'nine' });
    await assert.rejects(guard.write('a}b', 10n), InvalidInputError);
    await assert.rejects(guard.write(r, 0n), InvalidInputError);
    await assert.rejects(guard.write(r, 10n, { fence_token: 'x' }), InvalidInputError);
    await assert.rejects(guard.write(r, 10n, { '': 'x' }), InvalidInputError);
    assert.throws(() => new RedisGuard(redis, { prefix: 'a{' }), InvalidInputError);
    assert.deepEqual(await guard.read(r, ['v']), { mark: 9n, values: { v: 'nine' } });
    // A mark someone else wrote that is not a token: the script refuses to guess.
    const other = unique('foreign');
    await redis.set(`{${other}}:fence_token`, '1e3');
    await assert.rejects(guard.write(other, 5n), /not a fencing token/);
  });

  test('the middleware over Redis', async () => {
    const mw = fencingMiddleware(guard);
    const svc = await listen((req, res) => mw(req, res, () => res.end('{}')));
    try {
      const r = unique('redismw');
      assert.equal((await callFencedService(svc.url, { resourceId: r }, 12n)).accepted, true);
      const stale = await callFencedService(svc.url, { resourceId: r }, 11n);
      assert.deepEqual([stale.accepted, stale.reason, stale.required], [false, 'stale-token', 12n]);
    } finally {
      await svc.close();
    }
  });
});

describe('RedisGuard reads', needRedis, () => {
  test("a reader's token reads but does not write; a later writer's fences the reader out", async () => {
    const redis = new Redis(env.redis, { lazyConnect: false, maxRetriesPerRequest: 2 });
    const c = client();
    try {
      const guard = new RedisGuard(redis, { client: c });
      const r = unique('rw-redis');
      const reader = c.readLock(r, { holder: 'reader' });
      const t = await reader.acquire({ watchdog: false });
      assert.equal((await guard.check(r, t, reader.signature)).reason, 'shared-token');
      assert.equal((await guard.read(r)).mark, 0n, 'a refused write moved the mark');
      assert.equal((await guard.check(r, t, reader.signature, 'read')).accepted, true);
      await assert.rejects(guard.write(r, t, { stock: '1' }, { signature: reader.signature, access: 'read' }), InvalidInputError);
      await reader.release();
      const writer = c.lock(r, { holder: 'writer' });
      const w = await writer.acquire({ watchdog: false });
      assert.equal((await guard.write(r, w, { stock: '7' }, { signature: writer.signature })).accepted, true);
      assert.equal((await guard.check(r, t, reader.signature, 'read')).reason, 'stale-token');
      await writer.release();
    } finally {
      c.close();
      await redis.quit();
    }
  });
});
