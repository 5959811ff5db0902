// The mapping from a refusal to its error class, over the JSON API and the
// RPC stream alike, against a small real server (node:http and ws) that
// answers each operation with the refusal a test gives it. No fenceview
// server is needed: these run everywhere.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocketServer } from 'ws';
import {
  Client,
  errorFor,
  ERROR_CLASSES,
  FenceviewError,
  HeldError,
  LockDelayError,
  NotHeldError,
  LeaseExpiredError,
  NotOwnerError,
  NotLeaderError,
  PermitsMismatchError,
  FenceRefusedError,
  OverloadedError,
  LimitError,
  UnavailableError,
  InvalidRequestError,
  UnauthenticatedError,
  ForbiddenError,
  NotFoundError,
  parse,
  stringify,
} from '../dist/index.js';
import { listen } from './helpers.mjs';

/** Every fixed code of the contract and the class it maps to. */
const classes = {
  'invalid-request': InvalidRequestError,
  'unknown-field': InvalidRequestError,
  'invalid-token': InvalidRequestError,
  'too-large': InvalidRequestError,
  unauthenticated: UnauthenticatedError,
  forbidden: ForbiddenError,
  'not-found': NotFoundError,
  'method-not-allowed': FenceviewError,
  'lock-held': HeldError,
  'lock-delay': LockDelayError,
  'lease-expired': LeaseExpiredError,
  'not-owner': NotOwnerError,
  'not-held': NotHeldError,
  'no-permit': HeldError,
  'permits-mismatch': PermitsMismatchError,
  'not-leader': NotLeaderError,
  'stale-token': FenceRefusedError,
  superseded: FenceRefusedError,
  'bad-signature': FenceRefusedError,
  'unissued-token': FenceRefusedError,
  'foreign-issuer': FenceRefusedError,
  'scope-mismatch': FenceRefusedError,
  overloaded: OverloadedError,
  limit: LimitError,
  unavailable: UnavailableError,
  internal: FenceviewError,
};

test('errorFor chooses the class by code alone, whatever the status and the sentence', () => {
  for (const [code, cls] of Object.entries(classes)) {
    // A sentence that names another refusal must not matter.
    const e = errorFor(409, { error: 'lock held; not lock owner; lock delay; permits mismatch', code });
    assert.equal(e.constructor, cls, code);
    assert.equal(e.code, code);
    assert.equal(e.status, 409);
    assert.ok(e instanceof FenceviewError);
    if (cls !== FenceviewError) assert.equal(ERROR_CLASSES.get(code), cls);
  }
  // Kinds: a lock-delay is a kind of held, the not-held refusals one kind.
  assert.ok(errorFor(409, { code: 'lock-delay' }) instanceof HeldError);
  for (const c of ['lease-expired', 'not-owner', 'not-leader']) assert.ok(errorFor(409, { code: c }) instanceof NotHeldError, c);
  // A code this client does not know is a FenceviewError with that code.
  const e = errorFor(409, { error: 'lock held', code: 'a-newer-refusal' });
  assert.equal(e.constructor, FenceviewError);
  assert.equal(e.code, 'a-newer-refusal');
});

test('errorFor reads the extra fields', () => {
  const held = errorFor(409, { code: 'lock-held', holder: 'a', expiresAt: '2026-01-01T00:00:00.000Z' });
  assert.equal(held.holder, 'a');
  assert.equal(held.expiresAt, '2026-01-01T00:00:00.000Z');
  const delay = errorFor(409, { code: 'lock-delay', holder: null, availableAt: '2026-01-01T00:00:05.000Z' });
  assert.equal(delay.availableAt, '2026-01-01T00:00:05.000Z');
  assert.equal(errorFor(409, { code: 'lease-expired', expiredAt: '2026-01-01T00:00:01.000Z' }).expiredAt, '2026-01-01T00:00:01.000Z');
  assert.equal(errorFor(409, { code: 'permits-mismatch', permits: 3 }).permits, 3);
  const fence = errorFor(409, { code: 'superseded', reason: 'superseded', presented: 4n, required: 7n });
  assert.equal(fence.reason, 'superseded');
  assert.equal(fence.required, 7n);
  assert.equal(fence.presented, 4n);
  assert.equal(errorFor(429, { code: 'overloaded', retryAfterMs: 250 }).retryAfterMs, 250);
  assert.equal(errorFor(503, { code: 'unavailable' }, { retryAfterMs: 1000 }).retryAfterMs, 1000);
  assert.equal(errorFor(400, { code: 'unknown-field', field: 'lease' }).field, 'lease');
  const multi = errorFor(409, { code: 'lock-held', held: [{ resourceId: 'y', holder: 'b' }] });
  assert.deepEqual(multi.held, [{ resourceId: 'y', holder: 'b' }]);
  assert.equal(multi.holder, 'b');
  const leader = errorFor(409, { code: 'lock-held', leader: { candidate: 'c1', expiresAt: 'x' } });
  assert.equal(leader.holder, 'c1');
});

test('an old server without codes is read by status and the call, never by its sentence', () => {
  const cases = [
    [400, {}, undefined, InvalidRequestError, 'invalid-request'],
    [401, {}, undefined, UnauthenticatedError, 'unauthenticated'],
    [403, {}, undefined, ForbiddenError, 'forbidden'],
    [404, {}, undefined, NotFoundError, 'not-found'],
    [413, {}, undefined, InvalidRequestError, 'too-large'],
    [429, {}, undefined, OverloadedError, 'overloaded'],
    [503, {}, undefined, UnavailableError, 'unavailable'],
    [500, {}, undefined, FenceviewError, 'internal'],
    [409, { holder: 'a' }, { conflict: 'lock-held' }, HeldError, 'lock-held'],
    [409, { holder: null, availableAt: 't' }, { conflict: 'lock-held' }, LockDelayError, 'lock-delay'],
    [409, {}, { conflict: 'not-held' }, NotHeldError, 'not-held'],
    [409, {}, { conflict: 'not-leader' }, NotLeaderError, 'not-leader'],
    [409, { permits: 3 }, { conflict: 'lock-held', permits: 3 }, HeldError, 'no-permit'],
    [409, { permits: 3 }, { conflict: 'lock-held', permits: 2 }, PermitsMismatchError, 'permits-mismatch'],
    [409, { accepted: false, reason: 'superseded' }, { conflict: 'stale-token' }, FenceRefusedError, 'superseded'],
  ];
  for (const [status, body, ctx, cls, code] of cases) {
    // The sentences an old server wrote, swapped around: they must not count.
    for (const error of ['not lock owner', 'lock delay', 'permits mismatch', 'lock held']) {
      const e = errorFor(status, { error, ...body }, ctx);
      assert.equal(e.constructor, cls, `${status} ${JSON.stringify(body)} ${error}`);
      assert.equal(e.code, code);
    }
  }
});

/**
 * scripted serves the routes the tests use and the RPC stream, answering
 * each operation with answers[op] ({status, body}); it records the ops.
 */
async function scripted(answers) {
  const seen = [];
  const srv = await listen((req, res) => {
    const m = /^\/v1\/(?:locks\/[^/]+\/(acquire|renew|release)|(fence)\/[^/]+)$/.exec(req.url);
    const op = m ? (m[1] ?? m[2]) : 'unknown';
    seen.push(`http ${op}`);
    const a = answers[op] ?? { status: 404, body: { error: 'no route', code: 'not-found' } };
    res.writeHead(a.status, { 'content-type': 'application/json', ...(a.headers ?? {}) });
    res.end(stringify(a.body));
  });
  const wss = new WebSocketServer({ noServer: true });
  srv.server.on('upgrade', (req, socket, head) => {
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on('message', (data) => {
        const out = [];
        for (const line of data.toString().split('\n')) {
          const r = parse(line);
          seen.push(`rpc ${r.op}`);
          const a = answers[r.op] ?? { status: 404, body: { error: 'no op', code: 'not-found' } };
          out.push(stringify({ id: r.id, status: a.status, body: a.body }));
        }
        ws.send(out.join('\n'));
      });
    });
  });
  return {
    url: srv.url,
    seen,
    close: async () => {
      for (const ws of wss.clients) ws.terminate();
      wss.close();
      await srv.close();
    },
  };
}

for (const transport of ['http', 'rpc']) {
  describe(`refusals over ${transport} are typed by code`, () => {
    let srv, c;
    const answers = {};
    before(async () => {
      srv = await scripted(answers);
      c = new Client(srv.url, { rpc: transport === 'rpc' });
    });
    after(async () => {
      c.close();
      await srv.close();
    });

    test('lock-held, lock-delay', async () => {
      answers.acquire = { status: 409, body: { error: 'held', code: 'lock-held', holder: 'other', expiresAt: '2026-01-01T00:00:00.000Z' } };
      const lock = c.lock('r1', { holder: 'me' });
      await assert.rejects(lock.acquire({ waitMs: 0 }), (e) => e instanceof HeldError && e.code === 'lock-held' && e.holder === 'other');
      assert.equal(await lock.tryAcquire(), null);
      answers.acquire = { status: 409, body: { error: 'wait', code: 'lock-delay', holder: null, availableAt: '2026-01-01T00:00:05.000Z' } };
      await assert.rejects(lock.acquire({ waitMs: 0 }), (e) => e instanceof LockDelayError && e.availableAt === '2026-01-01T00:00:05.000Z');
      assert.ok(srv.seen.includes(`${transport} acquire`), srv.seen.join());
    });

    test('lease-expired, not-owner, not-held on renew and release', async () => {
      answers.renew = { status: 409, body: { error: 'your lease ran out', code: 'lease-expired', expiredAt: '2026-01-01T00:00:01.000Z' } };
      answers.release = { status: 409, body: { error: 'someone else', code: 'not-owner' } };
      await assert.rejects(c.renewGrant('r2', 'me'), (e) => e instanceof LeaseExpiredError && e.expiredAt === '2026-01-01T00:00:01.000Z' && e instanceof NotHeldError);
      await assert.rejects(c.releaseHold('r2', 'me'), (e) => e instanceof NotOwnerError && e.code === 'not-owner');
      answers.release = { status: 409, body: { error: 'free', code: 'not-held' } };
      await assert.rejects(c.releaseHold('r2', 'me'), (e) => e.constructor === NotHeldError);
    });

    test('a fence reason: a decision, or a FenceRefusedError when asked', async () => {
      answers.fence = { status: 409, body: { error: 'stale', code: 'stale-token', accepted: false, reason: 'stale-token', presented: 3n, required: 5n } };
      const d = await c.fence('r3', 3n);
      assert.deepEqual({ ...d }, { accepted: false, reason: 'stale-token', presented: 3n, required: 5n });
      await assert.rejects(c.fence('r3', 3n, { throwOnRefusal: true }), (e) => e instanceof FenceRefusedError && e.code === 'stale-token' && e.required === 5n);
      answers.fence = { status: 409, body: { error: 'forged', code: 'bad-signature', accepted: false, reason: 'bad-signature', presented: 3n, required: 5n } };
      assert.equal((await c.fence('r3', 3n)).reason, 'bad-signature');
    });

    test('a request the server refuses as invalid', async () => {
      answers.acquire = { status: 400, body: { error: 'unknown field "lease"; did you mean "leaseMs"?', code: 'unknown-field', field: 'lease' } };
      await assert.rejects(c.lock('r4', { holder: 'me' }).acquire(), (e) => e instanceof InvalidRequestError && e.field === 'lease');
    });

    test('an old server without codes: by status and the call', async () => {
      answers.acquire = { status: 409, body: { error: 'not lock owner', holder: 'other' } };
      await assert.rejects(c.lock('r5', { holder: 'me' }).acquire({ waitMs: 0 }), (e) => e instanceof HeldError && e.code === 'lock-held');
      answers.renew = { status: 409, body: { error: 'lock held' } };
      await assert.rejects(c.renewGrant('r5', 'me'), (e) => e.constructor === NotHeldError && e.code === 'not-held');
    });
  });
}
