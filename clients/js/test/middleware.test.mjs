import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import express from 'express';
import Fastify from 'fastify';
import { WasmGuard, fencingMiddleware, callFencedService, validateResourceId, parse, stringify } from '../dist/index.js';
import { client, client as c0, unique, listen, needServer, paused } from './helpers.mjs';

/** A downstream service behind the middleware: it stores the last accepted value per resource. */
function service(guard, store) {
  const mw = fencingMiddleware(guard);
  return (req, res) =>
    mw(req, res, async () => {
      let body = '';
      for await (const chunk of req) body += chunk;
      store.set(req.fencing.resource, parse(body).value);
      res.setHeader('content-type', 'application/json');
      res.end(stringify({ applied: true, token: req.fencing.token }));
    });
}

describe('fencingMiddleware on node:http, backed by the WebAssembly guard', needServer, () => {
  const c = client();
  let guard, svc;
  const store = new Map();
  before(async () => {
    // These cases present bare tokens: the unsigned opt-out, said out loud.
    guard = await WasmGuard.load({ client: c, source: 'node-test', acceptUnsignedTokens: true });
    svc = await listen(service(guard, store));
  });
  after(async () => {
    await svc.close();
    await guard.close();
    c.close();
  });

  test('the paused client: its stale write is refused with the token that beat it', async () => {
    const r = unique('order');
    // A takes the lock with a short lease and stalls: no watchdog renews it.
    // B waits on the server until A's lease has run out, and is granted.
    const { a, b, ta, tb } = await paused(c, r, { leaseMs: 10_000 });
    const ok = await callFencedService(svc.url + '/apply', { resourceId: r, payload: { value: 'B' } }, b);
    assert.equal(ok.accepted, true);
    assert.equal(ok.status, 200);
    assert.equal(ok.body.token, tb);
    // A wakes up believing it still holds the lock, and writes.
    const stale = await callFencedService(svc.url + '/apply', { resourceId: r, payload: { value: 'A' } }, { token: ta, signature: a.signature });
    assert.equal(stale.accepted, false);
    assert.equal(stale.reason, 'stale-token');
    assert.equal(stale.presented, ta);
    assert.equal(stale.required, tb);
    assert.equal(stale.response.status, 409);
    assert.equal(stale.response.headers.get('x-required-token'), String(tb));
    assert.equal(store.get(r), 'B');
    assert.equal(guard.highWater(r), tb);
    // The decisions reach the server's history.
    await guard.flush();
    const { rejections } = await c.rejections({ resource: r });
    assert.equal(rejections.length, 1);
    assert.equal(rejections[0].presented, ta);
    assert.equal(rejections[0].required, tb);
    assert.equal(rejections[0].reason, 'stale-token');
    assert.match(rejections[0].source, /node-test/);
    const info = await c.resource(r);
    assert.equal(info.highWaterMark, tb);
    await b.release();

    // A guard started afresh restores its marks from the server: the stale
    // token is still refused.
    const restarted = await WasmGuard.load({ client: c, report: false, restore: { prefix: r } });
    assert.equal(restarted.highWater(r), tb);
    assert.equal(restarted.checkUnsigned(r, ta).accepted, false);
    await restarted.close();
  });

  test('a missing or malformed token is 400 and changes nothing', async () => {
    const r = unique('bad');
    const good = await fetch(svc.url, { method: 'POST', headers: { 'x-fencing-token': '7', 'x-resource-id': r }, body: '{"value":"seven"}' });
    assert.equal(good.status, 200);
    const cases = [
      { 'x-resource-id': r },
      { 'x-fencing-token': 'abc', 'x-resource-id': r },
      { 'x-fencing-token': '0', 'x-resource-id': r },
      { 'x-fencing-token': '-8', 'x-resource-id': r },
      { 'x-fencing-token': '08', 'x-resource-id': r },
      { 'x-fencing-token': '8.0', 'x-resource-id': r },
      { 'x-fencing-token': '9223372036854775808', 'x-resource-id': r },
      { 'x-fencing-token': '8' },
      { 'x-fencing-token': '8', 'x-resource-id': 'x'.repeat(161) },
    ];
    for (const headers of cases) {
      const res = await fetch(svc.url, { method: 'POST', headers, body: '{"value":"bad"}' });
      assert.equal(res.status, 400, JSON.stringify(headers));
      const refusal = await res.json();
      // The refusal names the header at fault, and its code says which.
      const token = headers['x-resource-id'] !== undefined && headers['x-resource-id'].length <= 160;
      assert.match(refusal.error, token ? /X-Fencing-Token/ : /X-Resource-Id/);
      assert.equal(refusal.code, token ? 'invalid-token' : 'invalid-request');
    }
    // Two token headers are refused too.
    const h = new Headers({ 'x-resource-id': r });
    h.append('x-fencing-token', '9');
    h.append('x-fencing-token', '10');
    assert.equal((await fetch(svc.url, { method: 'POST', headers: h, body: '{}' })).status, 400);
    assert.equal(guard.highWater(r), 7n);
    assert.equal(store.get(r), 'seven');
  });

  test('requests of one resource are decided one at a time, and in order', async () => {
    const r = unique('order');
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        fetch(svc.url, { method: 'POST', headers: { 'x-fencing-token': String(100 + i), 'x-resource-id': r }, body: stringify({ value: i }) }),
      ),
    );
    // Whatever the interleaving, the highest token is the last value written.
    const accepted = results.filter((res) => res.status === 200).length;
    assert.ok(accepted >= 1);
    assert.equal(results.filter((res) => res.status !== 200 && res.status !== 409).length, 0);
    assert.equal(guard.highWater(r), 119n);
    assert.equal(store.get(r), 19);
  });
});

describe("the README's middleware example, as written", needServer, () => {
  test('a forged X-Fencing-Token: 99 is refused and the honest holder keeps writing', async () => {
    const client = c0();
    // The README's words: a guard loaded from the client, behind express.
    const guard = await WasmGuard.load({ client, source: 'orders-api' });
    const app = express();
    app.use(fencingMiddleware(guard));
    const written = [];
    app.post('/apply', (req, res) => {
      const { resource, token } = req.fencing;
      written.push([resource, token]);
      res.json({ applied: true });
    });
    const svc = await listen(app);
    try {
      const r = unique('orders');
      const lock = client.lock(r, { holder: 'honest' });
      const token = await lock.acquire();
      assert.ok(token < 99n, 'the forger goes above the honest token');
      const write = (headers) => fetch(svc.url + '/apply', { method: 'POST', headers });
      assert.equal((await write(lock.headers())).status, 200);
      // Forged: a higher token without a signature, then with a made-up one.
      for (const forged of [{}, { 'x-fencing-signature': 'A'.repeat(86) }]) {
        const res = await write({ 'x-fencing-token': '99', 'x-resource-id': r, ...forged });
        assert.equal(res.status, 409);
        const body = parse(await res.text());
        assert.deepEqual([body.code, body.reason, body.presented], ['bad-signature', 'bad-signature', 99n]);
        assert.equal(guard.highWater(r), token, 'the forgery moved no mark');
      }
      // The honest holder keeps writing, its renewed lease and all.
      assert.equal((await write(lock.headers())).status, 200);
      await lock.renew();
      assert.equal((await write(lock.headers())).status, 200);
      assert.deepEqual(written.map(([, t]) => t), [token, token, token]);
      await lock.release();
    } finally {
      await svc.close();
      await guard.close();
      client.close();
    }
  });
});

describe('fencingMiddleware serialisation', () => {
  test('a request that gives up while waiting its turn does not keep the resource', { timeout: 30_000 }, async () => {
    const guard = await WasmGuard.load({ module: await readFile(new URL('../../../internal/modules/guard.wasm', import.meta.url)) });
    const events = new EventTarget();
    const mw = fencingMiddleware(guard, {
      resource: (req) => {
        req.socket.once('close', () => events.dispatchEvent(new Event('closed')));
        events.dispatchEvent(new Event('arrived'));
        return 'shared';
      },
    });
    let finishFirst;
    const firstHeld = new Promise((r) => (finishFirst = r));
    const svc = await listen((req, res) =>
      mw(req, res, async () => {
        if (req.headers['x-fencing-token'] === '1') await firstHeld;
        res.end('{}');
      }),
    );
    const once = (name) => new Promise((r) => events.addEventListener(name, r, { once: true }));
    try {
      const post = (token, signal) => fetch(svc.url, { method: 'POST', headers: { 'x-fencing-token': token, connection: 'close' }, signal });
      let arrived = once('arrived');
      const first = post('1');
      await arrived; // holds 'shared' until finishFirst
      arrived = once('arrived');
      const closed = once('closed');
      const ac = new AbortController();
      const second = post('2', ac.signal);
      second.catch(() => {});
      await arrived; // waiting behind the first
      ac.abort();
      await closed; // the server saw it go
      finishFirst();
      assert.equal((await first).status, 200);
      // Without the release of the abandoned request this one would wait forever.
      assert.equal((await post('3')).status, 200);
      assert.equal(guard.highWater('shared'), 3n);
    } finally {
      await svc.close();
    }
  });
});

describe('fencingMiddleware in Express and Fastify', needServer, () => {
  test('Express: app.use(fencingMiddleware(guard))', async () => {
    const guard = await WasmGuard.load({ module: await client().guardModule() });
    const app = express();
    app.use(fencingMiddleware(guard));
    app.post('/apply', (req, res) => res.json({ resource: req.fencing.resource, token: String(req.fencing.token) }));
    const srv = await listen(app);
    try {
      const r = unique('express');
      const ok = await callFencedService(srv.url + '/apply', { resourceId: r, payload: {} }, 9007199254740993n);
      assert.equal(ok.accepted, true);
      assert.deepEqual(ok.body, { resource: r, token: '9007199254740993' });
      const stale = await callFencedService(srv.url + '/apply', { resourceId: r, payload: {} }, 9007199254740992n);
      assert.deepEqual([stale.accepted, stale.reason, stale.presented, stale.required], [false, 'stale-token', 9007199254740992n, 9007199254740993n]);
      assert.equal(stale.response.headers.get('x-required-token'), '9007199254740993');
      const bad = await fetch(srv.url + '/apply', { method: 'POST', headers: { 'x-resource-id': r } });
      assert.equal(bad.status, 400);
    } finally {
      await srv.close();
    }
  });

  test('Fastify: an onRequest hook', async () => {
    const guard = await WasmGuard.load({ module: await client().guardModule() });
    const app = Fastify();
    app.addHook('onRequest', fencingMiddleware.fastify(guard));
    app.post('/apply', async (request) => ({ resource: request.fencing.resource, token: String(request.fencing.token) }));
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const r = unique('fastify');
      const ok = await callFencedService(base + '/apply', { resourceId: r, payload: {} }, 2n ** 63n - 2n);
      assert.equal(ok.accepted, true);
      assert.deepEqual(ok.body, { resource: r, token: '9223372036854775806' });
      const stale = await callFencedService(base + '/apply', { resourceId: r, payload: {} }, 2n ** 63n - 3n);
      assert.deepEqual([stale.accepted, stale.reason, stale.required], [false, 'stale-token', 2n ** 63n - 2n]);
      assert.equal(stale.response.headers.get('x-required-token'), '9223372036854775806');
      const bad = await fetch(base + '/apply', { method: 'POST', headers: { 'x-fencing-token': 'x', 'x-resource-id': r } });
      assert.equal(bad.status, 400);
    } finally {
      await app.close();
    }
  });
});

// The conformance table every fenceview guard passes: the wasm package's
// conformanceTable() (wasm/conformance_test.go), written out with
// json.MarshalIndent(conformanceTable(), "", " ") into
// fixtures/guard-conformance.json; wasm.TestConformanceFixtureIsCurrent fails
// when the copy drifts (-update-conformance writes it again).
// It is replayed through the WebAssembly-backed middleware and through
// the server's own fence (POST /v1/fence): both must give the table's
// answers. Ids are made unique per run (the server keeps its marks), at
// the same byte length where the length matters. Steps the server's fence
// has no form of (seeding a mark, trusting the table's own keys) leave
// their case out, unless they are invalid input, which both refuse.
describe('the WebAssembly middleware agrees with the server on the conformance table', needServer, () => {
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  const pct = (bytes) => [...bytes].map((b) => (/[A-Za-z0-9._~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : '%' + b.toString(16).toUpperCase().padStart(2, '0'))).join('');
  const unpct = (s) => Buffer.from(s.replace(/%([0-9A-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16))), 'latin1');
  // Bytes that are not UTF-8 have no JS string; a lone surrogate stands
  // for them (it has no UTF-8 either, and the guard refuses it the same way).
  const asString = (bytes) => {
    try {
      return utf8.decode(bytes);
    } catch {
      return '\ud800';
    }
  };
  const invisible = /[\p{Cf}\p{Zl}\p{Zp}\u0085\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]/u;
  const validId = (bytes) => {
    try {
      validateResourceId(utf8.decode(bytes));
      return true;
    } catch {
      return false;
    }
  };

  test('every case', async () => {
    const table = JSON.parse(await readFile(new URL('./fixtures/guard-conformance.json', import.meta.url), 'utf8'));
    const c = client();
    const module = await WebAssembly.compile(await c.guardModule());
    let guard;
    const mw = fencingMiddleware({ check: (r, t, s) => guard.check(r, t, s) }, { resource: (req) => utf8.decode(unpct(req.url.slice('/fence/'.length))) });
    const svc = await listen((req, res) => mw(req, res, () => res.end('{"accepted":true}')));
    const run = Date.now().toString(36);
    const ran = [];
    const left = [];
    try {
      for (const [ci, kase] of table.entries()) {
        const usable = kase.steps.every((s) => ['check', 'check_handle', 'high_water'].includes(s.op) || (s.op === 'seed' && BigInt(s.want) < 0n));
        if (!usable) {
          left.push(kase.name);
          continue;
        }
        guard = await WasmGuard.load({ module });
        // The server refuses a fence above 2^62 on a resource it never
        // issued a token for (one fence of 2^63-1 would make it
        // ungrantable), so such a case is the guard's alone.
        const serverDiffers = kase.steps.some((s) => s.token !== undefined && BigInt(s.token) > 2n ** 62n);
        const ids = new Map();
        const rename = (b64) => {
          const bytes = Buffer.from(b64 ?? '', 'base64');
          if (!validId(bytes)) return bytes;
          if (!ids.has(b64)) {
            const tag = `c${ci}.${run}.${ids.size}.`;
            const name = Buffer.byteLength(tag) + bytes.length <= 160 ? Buffer.concat([Buffer.from(tag), bytes]) : Buffer.from(tag + 'x'.repeat(bytes.length - tag.length));
            ids.set(b64, name);
          }
          return ids.get(b64);
        };
        for (const [si, s] of kase.steps.entries()) {
          const id = rename(s.id);
          const want = BigInt(s.want);
          const where = `${kase.name}, step ${si} (${s.op} ${JSON.stringify(id.toString('utf8').slice(0, 40))} ${s.token})`;
          if (s.op === 'seed') {
            assert.throws(() => guard.seed(asString(id), BigInt(s.token)), where);
            continue;
          }
          if (s.op === 'high_water') {
            let mine;
            try {
              mine = guard.highWater(asString(id));
            } catch {
              mine = 'invalid';
            }
            const res = await fetch(`${c.urls[0]}/v1/resources/${pct(id)}`, { headers: { authorization: `Bearer ${process.env.FENCEVIEW_ADMIN_TOKEN}` } });
            const theirs = res.status === 200 ? parse(await res.text()).highWaterMark : res.status === 404 && validId(id) ? 0n : 'invalid';
            assert.equal(mine, want < 0n ? 'invalid' : want, `middleware's guard: ${where}`);
            if (!serverDiffers) {
              assert.equal(theirs, want < 0n ? 'invalid' : want, `server: ${where}`);
            }
            continue;
          }
          const headers = { 'x-fencing-token': s.token };
          const code = async (res) => {
            const body = await res.text();
            if (res.status === 200) return 0n;
            if (res.status === 409) return parse(body).required;
            assert.ok(res.status >= 400 && res.status < 500, `${where}: status ${res.status} ${body}`);
            return 'invalid';
          };
          const mine = await code(await fetch(`${svc.url}/fence/${pct(id)}`, { method: 'POST', headers }));
          const theirs = await code(await fetch(`${c.urls[0]}/v1/fence/${pct(id)}`, { method: 'POST', headers: { ...headers, authorization: `Bearer ${process.env.FENCEVIEW_ADMIN_TOKEN}` } }));
          const expected = want < 0n ? 'invalid' : want;
          assert.equal(mine, expected, `middleware: ${where}`);
          // The server is stricter with ids it has never seen, by design
          // (issuer.ValidateNewID): no format characters, separators or
          // non-ASCII spaces, which would not read as they compare.
          if (!serverDiffers) {
            assert.equal(theirs, invisible.test(asString(id)) ? 'invalid' : expected, `server: ${where}`);
          }
        }
        ran.push(kase.name);
      }
    } finally {
      await svc.close();
      c.close();
    }
    // Most of the table has a form at the server; the rest is listed here
    // so a change to the table that drops cases shows.
    assert.ok(ran.length >= 15, `ran only ${ran.length} cases: ${ran}`);
    assert.deepEqual(left.filter((n) => !n.startsWith('signed:')), ['seeding', 'seed never decides', 'by handle']);
  });
});
