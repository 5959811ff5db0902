import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HeldError, WasmGuard } from '../dist/index.js';
import { client, unique, needServer } from './helpers.mjs';

// client.readLock: readers of one phase hold together and share a token;
// a writer waits for them and takes a larger one. A reader's token is
// signed as shared: fit for reads, refused for writes.
for (const rpc of [false, true]) {
  test(`read and write locks (${rpc ? 'RPC stream' : 'HTTP'})`, needServer, async () => {
    const c = client({ rpc });
    const r = unique('rw');
    const a = c.readLock(r, { holder: 'reader-a' });
    const b = c.readLock(r, { holder: 'reader-b' });
    const ta = await a.acquire({ watchdog: false });
    const tb = await b.acquire({ watchdog: false });
    assert.equal(tb, ta, 'readers of one phase share its token');
    assert.equal(a.grant.shared, true);
    assert.equal(await a.acquire({ watchdog: false }), ta, 'a re-entrant read keeps the token');
    await a.release();
    const w = c.lock(r, { holder: 'writer' });
    await assert.rejects(w.acquire({ waitMs: 0 }), HeldError);
    await assert.rejects(c.lock(r, { holder: 'reader-a' }).acquire({ waitMs: 0 }), HeldError, 'no upgrade: a reader asking for the write side is held');

    const v = await c.verifier();
    assert.equal(await v.verifyShared(r, ta, a.signature), true);
    assert.equal(await v.verify(r, ta, a.signature), false, "a reader's token is no writer's");
    assert.equal(a.headers()['X-Fencing-Access'], 'read');
    const read = await c.fence(r, ta, { signature: a.signature, access: 'read' });
    assert.equal(read.accepted, true);
    const write = await c.fence(r, ta, { signature: a.signature });
    assert.equal(write.accepted, false);
    assert.equal(write.reason, 'shared-token');

    const guard = await WasmGuard.load({ client: c, restore: false, report: false });
    assert.equal((await guard.check(r, ta, a.signature)).reason, 'shared-token');
    assert.equal((await guard.check(r, ta, a.signature, 'read')).accepted, true);

    await a.release();
    await b.release();
    const tw = await w.acquire({ watchdog: false });
    assert.ok(tw > ta, `the writer's ${tw} after the readers' ${ta}`);
    assert.equal((await guard.check(r, tw, w.signature)).accepted, true);
    assert.equal((await guard.check(r, ta, a.signature, 'read')).reason, 'stale-token', 'a reader whose phase ended is refused once the writer wrote');
    await w.release();
    c.close();
  });
}
