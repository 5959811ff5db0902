// Shared by the suites: the servers the Go test (js_test.go) started, and
// small waiting helpers. Without FENCEVIEW_URL every suite that needs a
// server skips (the Go test fails on any skip).
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import http from 'node:http';
import assert from 'node:assert/strict';
import { Client } from '../dist/index.js';

export const env = {
  url: process.env.FENCEVIEW_URL,
  admin: process.env.FENCEVIEW_ADMIN_TOKEN,
  pg: process.env.FENCEVIEW_PG_URL,
  redis: process.env.FENCEVIEW_REDIS_URL,
  s3: process.env.FENCEVIEW_S3_URL,
  s3Bucket: process.env.FENCEVIEW_S3_BUCKET,
  s3AccessKey: process.env.FENCEVIEW_S3_ACCESS_KEY,
  s3SecretKey: process.env.FENCEVIEW_S3_SECRET_KEY,
  // Fronts of the server that close the first RPC stream with 1012 once it
  // has read a call (servertest.ClosingFronts): for the server's service's
  // end, and for another reason.
  ended: process.env.FENCEVIEW_ENDED_URL,
  restarted: process.env.FENCEVIEW_RESTARTED_URL,
};

/** Options for describe/test that skip when the servers are not there. */
export const needServer = { skip: env.url ? false : 'FENCEVIEW_URL not set: run through go test ./clients/js' };
export const needPg = { skip: env.url && env.pg ? false : 'FENCEVIEW_PG_URL not set' };
export const needRedis = { skip: env.url && env.redis ? false : 'FENCEVIEW_REDIS_URL not set' };
export const needFronts = { skip: env.url && env.ended && env.restarted ? false : 'FENCEVIEW_ENDED_URL not set' };
export const needS3 = { skip: env.url && env.s3 ? false : 'FENCEVIEW_S3_URL not set' };

/** client returns a client of the test server with the admin token (opts may add rpc: true). */
export function client(opts = {}) {
  return new Client(env.url, { key: env.admin, ...opts });
}

/** unique returns a resource id no other test uses. */
export function unique(what) {
  return `${what}-${randomBytes(6).toString('hex')}`;
}

/**
 * until polls probe until it returns a truthy value, and returns it. It
 * waits on the server's state, not on a guess of how long something takes;
 * the bound only turns a hang into a failure.
 */
export async function until(probe, what, limitMs = 30_000) {
  const end = Date.now() + limitMs;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await delay(10);
  }
}

/** listen serves handler on 127.0.0.1:0 and returns its base URL and a close function. */
export async function listen(handler) {
  const server = http.createServer(handler);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}

export const TWO_53_PLUS_1 = 2n ** 53n + 1n;
export const TWO_63_MINUS_2 = 2n ** 63n - 2n;

/** grantAt resets a fresh resource's counter so its next grant is exactly token. */
export async function grantAt(c, token, holder = 'big') {
  const r = unique('big');
  await c.reset(r, token - 1n);
  const lock = c.lock(r, { holder, leaseMs: 30_000 });
  await lock.acquire();
  return lock;
}

/**
 * paused opens the paused-client story on resource r: A locks with a short
 * lease and no watchdog (it stalls, and a stalled process renews nothing);
 * B waits on the server until A's lease has run out, and is granted a
 * larger token. holders names A and B; leaseMs is B's lease.
 */
export async function paused(c, r, { holders = ['client-a', 'client-b'], leaseMs } = {}) {
  const a = c.lock(r, { holder: holders[0], leaseMs: 300 });
  const ta = await a.acquire({ watchdog: false });
  const b = c.lock(r, leaseMs === undefined ? { holder: holders[1] } : { holder: holders[1], leaseMs });
  const tb = await b.acquire({ waitMs: 20_000 });
  assert.ok(tb > ta, `B's token ${tb} after A's ${ta}`);
  return { a, b, ta, tb };
}
