// A call the server shed (429 overloaded, 503 with Retry-After: nothing
// was changed) is sent again after the wait the server asked for, with
// jitter, within the caller's signal. Against a small real server
// (node:http, and ws for the RPC stream) that sheds a given number of
// times before it answers.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocketServer } from 'ws';
import { Client, OverloadedError, UnavailableError, parse, stringify } from '../dist/index.js';
import { listen } from './helpers.mjs';

const lockState = { resourceId: 'x', locked: false, holder: null, holdCount: 0, token: 0n, expiresAt: null, remainingMs: 0, availableAt: null };

/** shedding answers GET /v1/locks/x (and the RPC op lock): plan.shed refusals, then the lock's state. */
async function shedding(plan) {
  const srv = await listen((req, res) => {
    plan.seen++;
    if (plan.seen <= plan.shed) {
      res.writeHead(plan.status, { 'content-type': 'application/json', ...plan.headers });
      res.end(stringify(plan.body));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(stringify(lockState));
  });
  const wss = new WebSocketServer({ noServer: true });
  srv.server.on('upgrade', (req, socket, head) =>
    wss.handleUpgrade(req, socket, head, (ws) =>
      ws.on('message', (data) => {
        for (const line of data.toString().split('\n')) {
          const r = parse(line);
          plan.seen++;
          const a = plan.seen <= plan.shed ? { status: plan.status, body: plan.body } : { status: 200, body: lockState };
          ws.send(stringify({ id: r.id, ...a }));
        }
      }),
    ),
  );
  return {
    url: srv.url,
    close: async () => {
      for (const ws of wss.clients) ws.terminate();
      wss.close();
      await srv.close();
    },
  };
}

for (const rpc of [false, true]) {
  describe(`shed calls are retried ${rpc ? 'over the RPC stream' : 'over HTTP'}`, () => {
    const plan = { seen: 0, shed: 0, status: 429, headers: {}, body: {} };
    let srv;
    before(async () => {
      srv = await shedding(plan);
    });
    after(() => srv.close());
    const reset = (p) => Object.assign(plan, { seen: 0, headers: {}, ...p });

    test('429 overloaded twice, then 200: the call succeeds on the third attempt', async () => {
      reset({ shed: 2, status: 429, headers: { 'retry-after': '0' }, body: { error: 'shed', code: 'overloaded', retryAfterMs: 5 } });
      const c = new Client(srv.url, { rpc });
      try {
        const st = await c.state('x');
        assert.equal(st.locked, false);
        assert.equal(plan.seen, 3);
      } finally {
        c.close();
      }
    });

    if (!rpc) {
      test('503 with Retry-After, then 200', async () => {
        reset({ shed: 1, status: 503, headers: { 'retry-after': '0' }, body: { error: 'no leader', code: 'unavailable' } });
        const c = new Client(srv.url, { rpc });
        try {
          assert.equal((await c.state('x')).locked, false);
          assert.equal(plan.seen, 2);
        } finally {
          c.close();
        }
      });

      test('503 without Retry-After or a code is not retried', async () => {
        reset({ shed: 5, status: 503, body: { error: 'down' } });
        const c = new Client(srv.url, { rpc });
        try {
          await assert.rejects(c.state('x'), UnavailableError);
          assert.equal(plan.seen, 1);
        } finally {
          c.close();
        }
      });
    }

    test('past overloadRetries, the OverloadedError with its retryAfterMs', async () => {
      reset({ shed: 100, status: 429, body: { error: 'shed', code: 'overloaded', retryAfterMs: 1 } });
      const c = new Client(srv.url, { rpc, overloadRetries: 2 });
      try {
        await assert.rejects(c.state('x'), (e) => e instanceof OverloadedError && e.retryAfterMs === 1 && e.status === 429);
        assert.equal(plan.seen, 3);
      } finally {
        c.close();
      }
    });

    test("the caller's signal ends the wait the server asked for", async () => {
      reset({ shed: 100, status: 429, body: { error: 'shed', code: 'overloaded', retryAfterMs: 600_000 } });
      const c = new Client(srv.url, { rpc });
      try {
        const ac = new AbortController();
        const why = new Error('the caller gave up');
        const call = c.state('x', ac.signal);
        // Aborted once the first answer came back and the client waits.
        await new Promise((resolve) => {
          const poll = () => (plan.seen >= 1 ? resolve() : setImmediate(poll));
          poll();
        });
        ac.abort(why);
        await assert.rejects(call, (e) => e === why);
        assert.equal(plan.seen, 1);
      } finally {
        c.close();
      }
    });
  });
}

test('the wait honours the server, with jitter on top', async () => {
  const { shedWait } = await import('../dist/client.js');
  const at = (r) => () => r;
  assert.equal(shedWait({ status: 429, body: { retryAfterMs: 200 } }, 0, at(0)), 200);
  assert.equal(shedWait({ status: 429, body: { retryAfterMs: 200 } }, 0, at(0.999)), 300);
  const headers = { get: (n) => (n === 'retry-after' ? '2' : null) };
  assert.equal(shedWait({ status: 503, body: {}, headers }, 0, at(0)), 2000);
  assert.equal(shedWait({ status: 429, body: {} }, 3, at(0)), 400); // no word from the server: a doubling backoff
  assert.equal(shedWait({ status: 409, body: { retryAfterMs: 5 } }, 0, at(0)), null);
  assert.equal(shedWait({ status: 200, body: {} }, 0, at(0)), null);
  assert.equal(shedWait({ status: 429, body: { retryAfterMs: 10 ** 9 } }, 0, at(0)), 30_000); // bounded
});
