import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, ConnectionError } from '../dist/index.js';
import { env, unique, needFronts } from './helpers.mjs';

// A stream closed with 1012 under a call, through fronts of the server
// that close the first stream once it has read the call, without answering
// or passing it on, and relay later streams to the server.

describe('a stream closed under a call with 1012', needFronts, () => {
  test("for the server's service's end (a leader's term): the call was not taken and is sent again on a new stream", async () => {
    const c = new Client(env.ended, { key: env.admin });
    const direct = new Client(env.url, { key: env.admin, rpc: false });
    try {
      const r = unique('service-ended');
      const token = await c.lock(r, { holder: 'a' }).acquire({ watchdog: false });
      assert.equal((await direct.state(r)).token, token);
    } finally {
      c.close();
      direct.close();
    }
  });

  test('for another reason (a proxy restarting): the call is not sent again', async () => {
    const c = new Client(env.restarted, { key: env.admin });
    try {
      const r = unique('restarted');
      await assert.rejects(c.lock(r, { holder: 'a' }).acquire({ watchdog: false }), (err) => {
        assert.ok(err instanceof ConnectionError, String(err));
        assert.match(err.message, /rpc stream closed \(1012 /);
        return true;
      });
    } finally {
      c.close();
    }
  });
});
