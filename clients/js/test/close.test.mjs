import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WasmGuard } from '../dist/index.js';
import { client, unique, needServer } from './helpers.mjs';

// client.close() sends the reports its guards queued before it closes, so
// a script that closes its client loses no decision of its WasmGuard.
test('client.close() flushes a WasmGuard\'s queued reports', needServer, async () => {
  const c = client();
  const r = unique('close-flush');
  const lock = c.lock(r, { holder: 'a', leaseMs: 60_000 });
  const first = await lock.acquire({ watchdog: false });
  await lock.release();
  const token = await lock.acquire({ watchdog: false });
  await lock.release();
  assert.ok(token > first);
  // A flush interval no test outlives: only close() can send the batch.
  const guard = await WasmGuard.load({ client: c, restore: false, source: 'close-test', flushMs: 3_600_000, acceptUnsignedTokens: true });
  assert.equal((await guard.check(r, token)).accepted, true);
  assert.equal((await guard.check(r, first)).accepted, false);
  assert.equal(guard.pending, 2);
  await c.close();
  assert.equal(guard.pending, 0, 'the batch went out');

  const reader = client();
  const reported = (await reader.rejections({ resource: r })).rejections.filter((x) => x.source.endsWith('close-test'));
  assert.equal(reported.length, 1);
  assert.equal(reported[0].presented, first);
  await assert.rejects(c.state(r), /closed/);
  reader.close();
});
