import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NotLeaderError, LeaseLostError } from '../dist/index.js';
import { client, unique, needServer } from './helpers.mjs';

// One rule in every client: a second resign is refused as a second release
// is, by the server (409 not-leader); so is a resign of a leadership never
// won. A leadership lost while held has nothing left to give up.
for (const rpc of [false, true]) {
  test(`a second resign is NotLeaderError (${rpc ? 'RPC stream' : 'HTTP'})`, needServer, async () => {
    const c = client({ rpc });
    const e = c.election(unique('resign'));
    await assert.rejects(e.resign(), (err) => err instanceof NotLeaderError && err.code === 'not-leader' && err.status === 409);
    await e.campaign('v', { watchdog: false });
    await e.resign();
    await assert.rejects(e.resign(), (err) => err instanceof NotLeaderError && err.code === 'not-leader' && err.status === 409);

    const lost = c.election(unique('resign-lost'), { leaseMs: 50 });
    await lost.campaign('v', { watchdog: false });
    // The lease's own timers do not keep the process alive: this does, until the loss.
    const alive = setInterval(() => {}, 1_000);
    await new Promise((resolve) => lost.signal.addEventListener('abort', resolve, { once: true }));
    clearInterval(alive);
    assert.ok(lost.signal.reason instanceof LeaseLostError);
    await lost.resign(); // quiet: nothing left to give up
    c.close();
  });
}
