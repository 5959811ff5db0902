import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { Client, HeldError } from '../dist/index.js';
import { client, env, unique, needServer } from './helpers.mjs';

// The RPC stream is the default; behind a proxy that refuses websocket
// upgrades every call goes over HTTP instead, said once, and the stream is
// tried again after rpcRetryMs.

/**
 * gate is a proxy in front of the real server: it answers every websocket
 * upgrade 400 while refuse is set (as a proxy without websocket support
 * does) and passes it on otherwise, and counts what it saw.
 */
async function gate() {
  const target = new URL(env.url);
  const g = { refuse: true, refused: 0, upgrades: 0, calls: 0 };
  const server = http.createServer((req, res) => {
    if (/^\/v1\/(locks|fence|semaphores|elections)\//.test(req.url)) g.calls++;
    const up = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  server.on('upgrade', (req, socket, head) => {
    if (g.refuse) {
      g.refused++;
      socket.end('HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: 25\r\nconnection: close\r\n\r\nno websocket upgrades here');
      return;
    }
    g.upgrades++;
    const back = net.connect(Number(target.port), target.hostname, () => {
      let head0 = `${req.method} ${req.url} HTTP/1.1\r\n`;
      for (let i = 0; i < req.rawHeaders.length; i += 2) head0 += `${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}\r\n`;
      back.write(head0 + '\r\n');
      back.write(head);
      back.pipe(socket);
      socket.pipe(back);
    });
    back.on('error', () => socket.destroy());
    socket.on('error', () => back.destroy());
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  g.url = `http://127.0.0.1:${server.address().port}`;
  g.close = () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); });
  return g;
}

/** everyPrimitive takes and gives back one of each thing the RPC stream carries. */
async function everyPrimitive(c) {
  const r = unique('fallback');
  const lock = c.lock(r, { holder: 'a', leaseMs: 60_000 });
  const token = await lock.acquire({ watchdog: false });
  assert.equal((await c.fence(r, token)).accepted, true);
  await assert.rejects(c.lock(r, { holder: 'b' }).acquire({ waitMs: 0 }), HeldError);
  assert.equal((await c.state(r)).token, token);
  await lock.release();
  const sem = c.semaphore(unique('fallback-sem'), 2);
  const permit = await sem.acquire({ watchdog: false });
  await permit.release();
  const multi = await c.lockAll([unique('fallback-x'), unique('fallback-y')], { holder: 'a', watchdog: false });
  await multi.release();
  const e = c.election(unique('fallback-election'));
  await e.campaign('v', { watchdog: false });
  await e.resign();
}

describe('the RPC stream by default', needServer, () => {
  const proxies = [];
  after(async () => { for (const p of proxies) await p.close(); });
  const open = async () => { const g = await gate(); proxies.push(g); return g; };

  test('a client made with a URL alone carries every primitive over one stream; rpc: false over HTTP', async () => {
    const g = await open();
    g.refuse = false;
    const c = new Client(g.url, { key: env.admin });
    assert.equal(c.usesRpc, true);
    await everyPrimitive(c);
    c.close();
    assert.deepEqual({ upgrades: g.upgrades, calls: g.calls }, { upgrades: 1, calls: 0 });
    const off = new Client(g.url, { key: env.admin, rpc: false });
    await everyPrimitive(off);
    off.close();
    assert.equal(g.upgrades, 1, 'rpc: false asks for no upgrade');
    assert.ok(g.calls > 0);
  });

  test('a refused upgrade: everything over HTTP, said once, the stream tried again after rpcRetryMs', async () => {
    const g = await open();
    const said = [];
    const c = new Client(g.url, { key: env.admin, rpcRetryMs: 24 * 3600_000, log: (m) => said.push(m) });
    await everyPrimitive(c);
    await everyPrimitive(c);
    assert.equal(g.refused, 1, 'one upgrade asked for, then HTTP until rpcRetryMs');
    assert.ok(g.calls >= 20, `the calls went over HTTP: ${g.calls}`);
    assert.equal(said.length, 1, said.join('\n'));
    assert.match(said[0], /RPC stream .* could not be opened/);
    g.refuse = false;
    await c.state(unique('fallback'));
    assert.equal(g.upgrades, 0, 'not tried again before rpcRetryMs');
    c.close();

    // With rpcRetryMs 0 the next call tries again, and takes the stream once it opens.
    g.refuse = true;
    const said2 = [];
    const again = new Client(g.url, { key: env.admin, rpcRetryMs: 0, log: (m) => said2.push(m) });
    await again.state(unique('fallback'));
    assert.equal(g.refused, 2);
    g.refuse = false;
    const calls = g.calls;
    await everyPrimitive(again);
    again.close();
    assert.deepEqual({ upgrades: g.upgrades, calls: g.calls - calls, said: said2.length }, { upgrades: 1, calls: 0, said: 1 });
  });

  test('a refused credential at the upgrade is the JSON API\'s answer, not a fallback', async () => {
    const said = [];
    const c = new Client(env.url, { key: 'not-a-key', log: (m) => said.push(m) });
    await assert.rejects(c.state(unique('fallback')), (err) => err.code === 'unauthenticated');
    c.close();
    assert.deepEqual(said, []);
  });
});

// The admin client of the helpers is a default client too: it takes the stream.
test('the helpers\' client takes the stream', needServer, () => {
  const c = client();
  assert.equal(c.usesRpc, true);
  c.close();
});
