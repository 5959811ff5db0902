// Tokens past what a JS number holds exactly, through every path of the
// client: the grant, the lock's state, the server's fence and its refusal,
// the resource's mark, the rejection history, decisions reported by the
// WebAssembly guard, and the headers of callFencedService. A path that
// went through a JS number would be off by one or more here, and the
// server would refuse the rounded token.
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { WasmGuard, fencingMiddleware, callFencedService, HeldError } from '../dist/index.js';
import { client, unique, listen, needServer, TWO_53_PLUS_1, TWO_63_MINUS_2 } from './helpers.mjs';

for (const transport of ['http', 'rpc']) {
  describe(`tokens at 2^53+1 and 2^63-2 over ${transport}`, needServer, () => {
    const admin = client();
    const c = client({ rpc: transport === 'rpc' });
    after(() => { admin.close(); c.close(); });

    for (const big of [TWO_53_PLUS_1, TWO_63_MINUS_2]) {
      test(`${big}`, async () => {
        const r = unique('big');
        const reset = await admin.reset(r, big - 1n);
        assert.equal(reset.nextToken, big);
        const lock = c.lock(r, { holder: 'big-holder' });
        assert.equal(await lock.acquire(), big);
        assert.equal(lock.grant.fencing.token, big);
        assert.equal(lock.headers()['X-Fencing-Token'], big.toString());
        assert.ok(await (await admin.verifier()).verify(r, lock.token, lock.signature), 'the signature is over the exact token');
        assert.equal((await c.state(r)).token, big);

        // The server's fence: the exact token passes; the one below is stale, named exactly.
        const ok = await c.fence(r, lock.token, { signature: lock.signature });
        assert.deepEqual([ok.accepted, ok.idempotencyKey], [true, `${r}:${big}`]);
        const stale = await c.fence(r, big - 1n);
        assert.deepEqual(stale, { accepted: false, reason: 'stale-token', presented: big - 1n, required: big });
        const { rejections } = await admin.rejections({ resource: r });
        assert.deepEqual([rejections[0].presented, rejections[0].required], [big - 1n, big]);
        const info = await admin.resource(r);
        assert.deepEqual([info.highWaterMark, info.lastToken], [big, big]);

        // The WebAssembly guard behind the middleware, reporting to the server.
        const guard = await WasmGuard.load({ client: admin, restore: { prefix: r }, source: 'big-test' });
        assert.equal(guard.highWater(r), big); // restored exactly
        const mw = fencingMiddleware(guard);
        const svc = await listen((req, res) => mw(req, res, () => res.end(String(req.fencing.token))));
        try {
          const sent = await callFencedService(svc.url, { resourceId: r }, lock);
          assert.equal(sent.accepted, true);
          assert.equal(sent.body, big); // the handler saw the exact bigint
          const refused = await callFencedService(svc.url, { resourceId: r }, big - 1n);
          assert.deepEqual([refused.accepted, refused.presented, refused.required], [false, big - 1n, big]);
          await guard.close(); // sends the reports
          // Reports are recorded under the caller's key, the guard's label after it.
          const reported = (await admin.rejections({ resource: r, source: 'admin/big-test' })).rejections;
          assert.equal(reported.length, 1);
          assert.deepEqual([reported[0].presented, reported[0].required], [big - 1n, big]);
        } finally {
          await svc.close();
        }
        // Nobody else gets the lock; the holder keeps the exact token.
        await assert.rejects(c.lock(r, { holder: 'other' }).acquire({ waitMs: 0 }), HeldError);
        await lock.release();
      });
    }
  });
}
