// Refusal codes end to end: the real server's refusals, over HTTP and over
// the RPC stream, come out as the error classes of their codes.
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { HeldError, NotHeldError, LeaseExpiredError, NotOwnerError, FenceRefusedError, InvalidRequestError, errorFor } from '../dist/index.js';
import { client, unique, needServer, env } from './helpers.mjs';

for (const transport of ['http', 'rpc']) {
  describe(`the server's refusal codes over ${transport}`, needServer, () => {
    const c = client({ rpc: transport === 'rpc' });
    after(() => c.close());

    test('lock-held', async () => {
      const r = unique('held');
      const a = c.lock(r, { holder: 'a' });
      await a.acquire();
      await assert.rejects(c.lock(r, { holder: 'b' }).acquire({ waitMs: 0 }),
        (e) => e instanceof HeldError && e.code === 'lock-held' && e.body.code === 'lock-held' && e.holder === 'a' && typeof e.expiresAt === 'string');
      await a.release();
    });

    test('lease-expired: a release after the lease was force-expired', async () => {
      const r = unique('expired');
      const a = c.lock(r, { holder: 'a' });
      await a.acquire({ watchdog: false });
      await c.forceExpire(r);
      await assert.rejects(a.release(), (e) => e instanceof LeaseExpiredError && e.code === 'lease-expired' && typeof e.expiredAt === 'string');
      assert.equal(a.held, false);
    });

    test('not-owner and not-held', async () => {
      const r = unique('owner');
      const b = c.lock(r, { holder: 'b' });
      await b.acquire();
      await assert.rejects(c.renewGrant(r, 'a'), (e) => e instanceof NotOwnerError && e.code === 'not-owner');
      await assert.rejects(c.releaseHold(r, 'a'), (e) => e instanceof NotOwnerError && e.code === 'not-owner');
      await b.release();
      await assert.rejects(c.releaseHold(unique('free'), 'a'), (e) => e.constructor === NotHeldError && e.code === 'not-held');
    });

    test('a fence reason: stale-token', async () => {
      const r = unique('fence');
      const a = c.lock(r, { holder: 'a' });
      const t = await a.acquire();
      await a.release();
      const b = c.lock(r, { holder: 'b' });
      await b.acquire();
      assert.equal((await c.fence(r, b.token, { signature: b.signature })).accepted, true);
      const d = await c.fence(r, t);
      assert.deepEqual([d.accepted, d.reason, d.required], [false, 'stale-token', b.token]);
      await assert.rejects(c.fence(r, t, { throwOnRefusal: true }), (e) => e instanceof FenceRefusedError && e.code === 'stale-token' && e.body.code === 'stale-token' && e.required === b.token);
      await b.release();
    });
  });
}

describe('strict input over HTTP', needServer, () => {
  test('an unknown field is unknown-field, naming it', async () => {
    const res = await fetch(`${env.url}/v1/locks/${unique('strict')}/acquire`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ holder: 'a', lease: 5000 }),
    });
    const e = errorFor(res.status, await res.json());
    assert.ok(e instanceof InvalidRequestError && e.code === 'unknown-field', String(e));
  });
});
