import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, HeldError, NotHeldError, LeaseLostError, ReleasedError, InvalidInputError } from '../dist/index.js';
import { client, unique, until, listen, needServer, paused } from './helpers.mjs';

for (const transport of ['http', 'rpc']) {
  describe(`lock over ${transport}`, needServer, () => {
    const c = client({ rpc: transport === 'rpc' });
    const admin = client();
    after(() => { c.close(); admin.close(); });

    test('acquire, held by another, re-entrant grants, release', async () => {
      const r = unique('basic');
      const a = c.lock(r, { holder: 'client-a', leaseMs: 10_000 });
      const b = c.lock(r, { holder: 'client-b', leaseMs: 10_000 });
      const t1 = await a.acquire();
      assert.equal(typeof t1, 'bigint');
      assert.ok(a.held && !a.signal.aborted);
      assert.equal(await b.tryAcquire(), null);
      await assert.rejects(b.acquire({ waitMs: 0 }), (err) => err instanceof HeldError && err.holder === 'client-a');
      // Every grant takes a new token, re-entrant ones too.
      const t2 = await a.acquire();
      assert.equal(t2, t1 + 1n);
      assert.equal(a.holdCount, 2);
      assert.equal(await a.release(), 1);
      assert.ok(a.held);
      assert.equal(await a.release(), 0);
      assert.ok(a.signal.aborted);
      assert.ok(a.signal.reason instanceof ReleasedError);
      const st = await c.state(r);
      assert.equal(st.locked, false);
      assert.equal(st.token, t2);
      // A waiter is granted the moment the holder releases.
      const t3 = await b.acquire();
      assert.equal(t3, t2 + 1n);
      await assert.rejects(a.release(), NotHeldError);
      await b.release();
    });

    test('tokens strictly increase across grants, forced expiry in between', async () => {
      const r = unique('monotonic');
      const tokens = [];
      for (let i = 0; i < 20; i++) {
        tokens.push(await c.lock(r, { holder: `client-${i}` }).acquire({ watchdog: false }));
        await admin.forceExpire(r);
      }
      for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i] > tokens[i - 1], `${tokens[i]} after ${tokens[i - 1]}`);
    });

    test('a waiting acquire is served when the lease runs out', async () => {
      const r = unique('wait');
      const { a, b } = await paused(c, r, { holders: ['a', 'b'], leaseMs: 5_000 });
      // a's own lease deadline aborted its signal without a watchdog.
      await until(() => a.signal.aborted, 'a to notice its lease ran out');
      assert.ok(a.signal.reason instanceof LeaseLostError);
      await b.release();
    });

    test('ids are checked before anything is sent', () => {
      assert.throws(() => c.lock('', { holder: 'x' }), InvalidInputError);
      assert.throws(() => c.lock('x'.repeat(161), { holder: 'x' }), InvalidInputError);
      assert.throws(() => c.lock('a\nb', { holder: 'x' }), InvalidInputError);
      assert.throws(() => c.lock('ok', { holder: 'h'.repeat(81) }), InvalidInputError);
      assert.throws(() => c.lock('ok', { holder: '\ud800' }), InvalidInputError);
    });

    test('the watchdog keeps the lock across three times its lease', async () => {
      const r = unique('watchdog');
      // Long enough that a loaded machine (CI runs every package at once)
      // answers a renewal within two thirds of it.
      const leaseMs = 1500;
      const lock = c.lock(r, { holder: 'keeper', leaseMs });
      const token = await lock.acquire();
      const first = Date.parse(lock.grant.expiresAt);
      // Poll the server until a renewal made more than 3 leases after the
      // grant shows; at every look the lock is still ours, same token.
      let looks = 0;
      await until(async () => {
        const st = await admin.state(r);
        looks++;
        assert.equal(st.locked, true, 'the lock was lost');
        assert.equal(st.holder, 'keeper');
        assert.equal(st.token, token);
        return Date.parse(st.expiresAt) >= first + 3 * leaseMs;
      }, 'renewals past three leases');
      assert.ok(looks > 1);
      assert.ok(!lock.signal.aborted, `signal aborted: ${lock.signal.reason}`);
      assert.equal(lock.token, token);
      await lock.release();
    });

    test('lock.signal aborts an in-flight fetch when the server force-expires the lock', async () => {
      let arrived;
      const arrivedP = new Promise((r) => (arrived = r));
      const slow = await listen(() => arrived()); // never answers
      try {
        const r = unique('abort');
        // A lease a loaded machine keeps renewing; the force-expire is noticed
        // at the next renewal, within a third of it.
        const lock = c.lock(r, { holder: 'worker', leaseMs: 3000 });
        await lock.acquire();
        const inflight = fetch(slow.url, { signal: lock.signal, headers: lock.headers() });
        inflight.catch(() => {});
        await arrivedP;
        await admin.forceExpire(r);
        await assert.rejects(inflight);
        assert.ok(lock.signal.reason instanceof LeaseLostError, String(lock.signal.reason));
        assert.match(lock.signal.reason.message, new RegExp(`token ${lock.token}`));
        await assert.rejects(lock.renew(), NotHeldError);
      } finally {
        await slow.close();
      }
    });
  });
}

describe('several nodes', needServer, () => {
  test('a node that cannot be reached is passed over, on HTTP and on the RPC stream', async () => {
    const gone = await listen(() => {});
    const dead = gone.url;
    await gone.close(); // nothing listens there now
    for (const rpc of [false, true]) {
      const c = new Client(dead, { key: process.env.FENCEVIEW_ADMIN_TOKEN, urls: [process.env.FENCEVIEW_URL], rpc });
      try {
        const lock = c.lock(unique('failover'), { holder: 'h' });
        assert.equal(await lock.acquire(), 1n);
        await lock.release();
      } finally {
        c.close();
      }
    }
  });
});

describe('RPC stream', needServer, () => {
  test('a turn of more requests than one message may carry goes as several', async () => {
    const c = client({ rpc: true });
    try {
      const r = unique('burst');
      // 20,000 fences of about 70 bytes each: over the server's 1 MiB per message.
      const ds = await Promise.all(Array.from({ length: 20_000 }, () => c.fence(r, 1n)));
      assert.equal(ds.filter((d) => d.accepted).length, 20_000);
    } finally {
      c.close();
    }
  });

  test('many concurrent locks over one websocket', async () => {
    const c = client({ rpc: true });
    try {
      const locks = Array.from({ length: 50 }, (_, i) => c.lock(unique(`many-${i}`), { holder: 'h' }));
      const tokens = await Promise.all(locks.map((l) => l.acquire()));
      assert.ok(tokens.every((t) => t === 1n));
      assert.deepEqual(await Promise.all(locks.map((l) => l.release())), locks.map(() => 0));
    } finally {
      c.close();
    }
  });
});
