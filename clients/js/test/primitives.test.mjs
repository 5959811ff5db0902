import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { HeldError, LockDelayError, NotHeldError, LeaseLostError, ReleasedError, FenceviewError, InvalidInputError } from '../dist/index.js';
import { client, env, unique, until, needServer, TWO_53_PLUS_1 } from './helpers.mjs';

// The primitives against the real server, over both transports: lock-delay,
// semaphores, multi-locks and elections.
for (const transport of ['http', 'rpc']) {
  describe(`the primitives over ${transport}`, needServer, () => {
    const c = client({ rpc: transport === 'rpc' });
    const admin = client();
    after(() => { c.close(); admin.close(); });

    /** waiters polls the server until someone waits on resource. */
    const awaitWaiter = (resource) => until(async () => (await admin.state(resource)).waiters > 0, `a waiter on ${resource}`);
    // A waiting multi-lock is not one of its locks' waiters (it waits for
    // all of them): the server's gauge of waiting multi-locks counts it. The
    // suites run one test at a time, so the waiter is this test's.
    const awaitMultiWaiter = () => until(async () => {
      const res = await fetch(`${env.url}/metrics`, { headers: { authorization: `Bearer ${env.admin}` } });
      const m = /^fenceview_waiters_by_kind\{kind="multi"\} (\d+)$/m.exec(await res.text());
      assert.ok(m, 'no fenceview_waiters_by_kind{kind="multi"} gauge');
      return Number(m[1]) > 0;
    }, 'a waiting multi-lock');

    test('lock-delay: a lease that runs out unreleased keeps everyone out until availableAt', async () => {
      const r = unique('delay');
      const a = c.lock(r, { holder: 'vanishing', leaseMs: 200 });
      await a.acquire({ watchdog: false, lockDelayMs: 60_000 });
      const expiresAt = Date.parse(a.grant.expiresAt);
      const b = c.lock(r, { holder: 'next', leaseMs: 5_000 });
      // Held, then (once the lease ran out) in its delay; never granted.
      const err = await until(async () => {
        try {
          await b.acquire({ waitMs: 0 });
          return 'granted';
        } catch (e) {
          if (e instanceof LockDelayError) return e;
          if (e instanceof HeldError) return null;
          throw e;
        }
      }, 'the lease to run out into its delay');
      assert.ok(err instanceof LockDelayError, `b was ${err} during the delay`);
      assert.ok(err instanceof HeldError, 'a lock-delay is a kind of held');
      assert.equal(Date.parse(err.availableAt), expiresAt + 60_000, err.availableAt);
      assert.equal(err.holder, null);
      // The old holder is kept out too, and tryAcquire answers null.
      assert.equal(await a.tryAcquire(), null);
      assert.equal(await b.tryAcquire(), null);
      const st = await c.state(r);
      assert.equal(st.locked, false);
      assert.equal(Date.parse(st.availableAt), expiresAt + 60_000);
      // A force-expire ends the delay at once.
      await admin.forceExpire(r);
      assert.equal((await c.state(r)).availableAt, null);
      const t = await b.acquire({ waitMs: 0 });
      assert.ok(t > a.token);
      await b.release();
    });

    test('lock-delay: a waiter is served when the delay ends, not when the lease does', async () => {
      const r = unique('delaywait');
      const a = c.lock(r, { holder: 'vanishing', leaseMs: 200 });
      await a.acquire({ watchdog: false, lockDelayMs: 1_000 });
      const availableAt = Date.parse(a.grant.expiresAt) + 1_000;
      const b = c.lock(r, { holder: 'patient', leaseMs: 5_000 });
      await b.acquire({ waitMs: 30_000 });
      assert.ok(Date.parse(b.grant.fencing.issuedAt) >= availableAt, `granted at ${b.grant.fencing.issuedAt}, the delay ran to ${new Date(availableAt).toISOString()}`);
      assert.ok(b.token > a.token);
      await b.release();
    });

    test('semaphore: lowest free slot, each its own fenced lock, none beyond permits, a waiter served on release', async () => {
      const name = unique('sem');
      const s1 = c.semaphore(name, 2, { holder: 'w1', leaseMs: 10_000 });
      const s2 = c.semaphore(name, 2, { holder: 'w2', leaseMs: 10_000 });
      const p0 = await s1.acquire();
      const p1 = await s2.acquire();
      assert.deepEqual([p0.slot, p1.slot], [0, 1]);
      assert.deepEqual([p0.resource, p1.resource], [`${name}#0`, `${name}#1`]);
      assert.equal(typeof p0.token, 'bigint');
      assert.equal(p0.holder, 'w1');
      assert.equal(p0.headers()['X-Fencing-Token'], p0.token.toString());
      assert.ok(p0.held && !p0.signal.aborted);
      // Both slots taken: no third permit.
      const s3 = c.semaphore(name, 2, { holder: 'w3' });
      assert.equal(await s3.tryAcquire(), null);
      await assert.rejects(s3.acquire({ waitMs: 0 }), (e) => e instanceof HeldError && e.status === 409);
      const st = await s3.state();
      assert.equal(st.permits, 2);
      assert.equal(st.free, 0);
      assert.deepEqual(st.held.map((h) => [h.slot, h.holder, h.token]), [[0, 'w1', p0.token], [1, 'w2', p1.token]]);
      // A waiter takes the slot given back, with a new token of that slot.
      const waiting = s3.acquire({ waitMs: 30_000 });
      await until(async () => (await s3.state()).waiters > 0, 'the semaphore waiter');
      await p0.release();
      assert.ok(!p0.held && p0.signal.reason instanceof ReleasedError);
      const p2 = await waiting;
      assert.equal(p2.slot, 0);
      assert.ok(p2.token > p0.token, `${p2.token} after ${p0.token}`);
      // The server's fence knows the slot's token.
      assert.equal((await c.fence(p2.resource, p2.token)).accepted, true);
      assert.equal((await c.fence(p0.resource, p0.token)).accepted, false);
      await p1.release();
      await p2.release();
      assert.equal((await s3.state()).free, 2);
    });

    test('semaphore: another permits count is a mismatch, not a wait', async () => {
      const name = unique('semcount');
      const p = await c.semaphore(name, 3, { holder: 'a' }).acquire();
      await assert.rejects(c.semaphore(name, 4, { holder: 'b' }).acquire(),
        (e) => e instanceof FenceviewError && !(e instanceof HeldError) && e.status === 409 && e.body.permits === 3);
      assert.equal(await c.semaphore(name, 4, { holder: 'b' }).tryAcquire().catch((e) => e.body.error), 'permits mismatch');
      assert.throws(() => c.semaphore('a#b', 2), InvalidInputError);
      assert.throws(() => c.semaphore(name, 0), InvalidInputError);
      assert.throws(() => c.semaphore(name, 1025), InvalidInputError);
      await p.release();
    });

    test('semaphore: a slot token past 2^53 comes back exact', async () => {
      const name = unique('sembig');
      await admin.reset(`${name}#0`, TWO_53_PLUS_1 - 1n);
      const p = await c.semaphore(name, 1, { holder: 'big' }).acquire();
      assert.equal(p.token, TWO_53_PLUS_1);
      assert.equal((await c.fence(p.resource, p.token)).accepted, true);
      await p.release();
    });

    test('semaphore: the watchdog renews the slot, and a force-expire aborts the permit', async () => {
      const name = unique('semdog');
      const leaseMs = 1500;
      const p = await c.semaphore(name, 2, { holder: 'keeper', leaseMs }).acquire();
      const first = Date.parse(p.grant.expiresAt);
      await until(async () => {
        const st = await c.semaphoreState(name);
        const h = st.held.find((x) => x.slot === p.slot);
        assert.ok(h && h.holder === 'keeper' && h.token === p.token, `slot lost: ${JSON.stringify(st, (_, v) => typeof v === 'bigint' ? String(v) : v)}`);
        return Date.parse(h.expiresAt) > first + 3 * leaseMs;
      }, 'a renewal three leases after the grant', 60_000);
      assert.ok(!p.signal.aborted, String(p.signal.reason));
      await admin.forceExpire(p.resource);
      await until(() => p.signal.aborted, 'the permit to notice its slot was expired');
      assert.ok(p.signal.reason instanceof LeaseLostError, String(p.signal.reason));
      await assert.rejects(p.release(), NotHeldError);
    });

    test('lockAll: all or nothing, a token each, released together', async () => {
      const [x, y, z] = [unique('mx'), unique('my'), unique('mz')];
      const m = await c.lockAll([x, y], { holder: 'a', leaseMs: 10_000 });
      assert.deepEqual([...m.tokens.keys()], [x, y]);
      for (const t of m.tokens.values()) assert.equal(typeof t, 'bigint');
      assert.equal((await c.state(x)).holder, 'a');
      assert.equal((await c.state(y)).token, m.token(y));
      // y is held: b gets neither y nor z.
      await assert.rejects(c.lockAll([z, y], { holder: 'b', waitMs: 0 }),
        (e) => e instanceof HeldError && e.held.length === 1 && e.held[0].resourceId === y && e.held[0].holder === 'a');
      assert.equal(await c.tryLockAll([z, y], { holder: 'b' }), null);
      assert.equal((await c.state(z)).locked, false, 'nothing was taken');
      // A waiting lockAll holds nothing while it waits, and gets both at once.
      const waiting = c.lockAll([z, y], { holder: 'b', waitMs: 30_000 });
      await awaitMultiWaiter();
      assert.equal((await c.state(z)).locked, false, 'the waiter took z early');
      const rel = await m.release();
      assert.deepEqual(rel, { released: [x, y], notHeld: [] });
      assert.ok(m.signal.reason instanceof ReleasedError);
      const mb = await waiting;
      assert.ok(mb.token(y) > m.token(y));
      assert.equal((await c.state(z)).holder, 'b');
      await mb.release();
      assert.throws(() => mb.token(x), InvalidInputError);
      await assert.rejects(c.lockAll([x, x], { holder: 'a' }), InvalidInputError);
    });

    test('lockAll: one watchdog keeps every lock, and losing one aborts the handle', async () => {
      const [x, y] = [unique('mdx'), unique('mdy')];
      const leaseMs = 1500;
      const m = await c.lockAll([x, y], { holder: 'keeper', leaseMs });
      const first = Math.max(...m.grants.map((g) => Date.parse(g.expiresAt)));
      await until(async () => {
        const [sx, sy] = [await c.state(x), await c.state(y)];
        assert.ok(sx.holder === 'keeper' && sy.holder === 'keeper', 'a lock was lost');
        assert.deepEqual([sx.token, sy.token], [m.token(x), m.token(y)]);
        return Date.parse(sx.expiresAt) > first + 3 * leaseMs && Date.parse(sy.expiresAt) > first + 3 * leaseMs;
      }, 'renewals three leases after the grant', 60_000);
      assert.ok(!m.signal.aborted, String(m.signal.reason));
      await admin.forceExpire(y);
      await until(() => m.signal.aborted, 'the multi-lock to notice y was expired');
      assert.ok(m.signal.reason instanceof LeaseLostError, String(m.signal.reason));
      const rel = await m.release();
      assert.deepEqual(rel, { released: [x], notHeld: [y] });
    });

    test('election: campaign resolves when elected with the term as token; proclaim, resign, leader', async () => {
      const name = unique('elect');
      const e1 = c.election(name, { candidate: 'c1', leaseMs: 10_000 });
      const e2 = c.election(name, { candidate: 'c2', leaseMs: 10_000 });
      assert.equal(await e1.leader(), null);
      assert.ok(e1.signal.aborted, 'not leading before a campaign');
      const term = await e1.campaign('v1');
      assert.equal(typeof term, 'bigint');
      assert.equal(e1.term, term);
      assert.ok(e1.leading && !e1.signal.aborted);
      assert.equal((await c.state(name)).token, term, 'the term is the lock token');
      assert.equal((await c.fence(name, term)).accepted, true);
      const l = await e2.leader();
      assert.deepEqual([l.candidate, l.value, l.term], ['c1', 'v1', term]);
      await assert.rejects(e2.campaign('v2', { waitMs: 0 }), (e) => e instanceof HeldError && e.holder === 'c1');
      await assert.rejects(e2.proclaim('nope'), NotHeldError);
      const p = await e1.proclaim('v1b');
      assert.deepEqual([p.value, p.term], ['v1b', term]);
      // c2 waits its turn and is elected, with a new term, when c1 resigns.
      const waiting = e2.campaign('v2', { waitMs: 30_000 });
      await awaitWaiter(name);
      await e1.resign();
      assert.ok(!e1.leading && e1.signal.reason instanceof ReleasedError);
      const term2 = await waiting;
      assert.ok(term2 > term, `${term2} after ${term}`);
      assert.equal((await c.fence(name, term2)).accepted, true);
      assert.equal((await c.fence(name, term)).accepted, false, "once the new leader wrote, the deposed leader's term is refused");
      assert.equal((await e1.leader()).candidate, 'c2');
      await e2.resign();
      assert.equal(await e2.leader(), null);
    });

    test('election: observe follows every leader and value change in order, over the event stream', async () => {
      const name = unique('observe');
      const stop = new AbortController();
      const seen = c.election(name).observe({ signal: stop.signal })[Symbol.asyncIterator]();
      // Bounded, so a change that never comes fails the test instead of hanging it.
      const next = async () => {
        let timer;
        const late = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('no leader change observed')), 30_000); });
        try {
          return (await Promise.race([seen.next(), late])).value;
        } finally {
          clearTimeout(timer);
        }
      };
      assert.equal(await next(), null, 'nobody leads at first');
      const e1 = c.election(name, { candidate: 'c1' });
      const t1 = await e1.campaign('one');
      assert.deepEqual(pick(await next()), ['c1', 'one', t1]);
      await e1.proclaim('two');
      assert.deepEqual(pick(await next()), ['c1', 'two', t1]);
      await e1.resign();
      assert.equal(await next(), null);
      const e2 = c.election(name, { candidate: 'c2' });
      const t2 = await e2.campaign('three');
      assert.deepEqual(pick(await next()), ['c2', 'three', t2]);
      await admin.forceExpire(name);
      assert.equal(await next(), null, 'a forced end of the lease is no leader');
      stop.abort();
      assert.equal((await seen.next()).done, true, 'observe ends with its signal');
    });

    test("election: the leadership's signal aborts when its lease is lost", async () => {
      const name = unique('elost');
      const e = c.election(name, { candidate: 'leader', leaseMs: 1500 });
      const term = await e.campaign('x');
      await admin.forceExpire(name);
      await until(() => e.signal.aborted, 'the leader to notice it was deposed');
      assert.ok(e.signal.reason instanceof LeaseLostError, String(e.signal.reason));
      assert.ok(!e.leading);
      assert.equal(e.term, term);
      await assert.rejects(e.proclaim('y'), NotHeldError);
    });
  });
}

function pick(l) {
  return l === null ? null : [l.candidate, l.value, l.term];
}
