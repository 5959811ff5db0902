// Compiled (never run) by `npm run typecheck:consumer`: the package's
// declarations as a TypeScript user sees them, with Node's http and
// Fastify's own types.
import http from 'node:http';
import Fastify from 'fastify';
import { Client, WasmGuard, PgMarks, fencingMiddleware, callFencedService, LockDelayError, LeaseExpiredError, FenceviewError, errorFor, type ErrorCode, type Queryable, type Decision, type FencedHttpRequest, type Leader, type MultiLock, type Permit } from 'fenceview';

export async function consumer(): Promise<bigint> {
  const client = new Client('http://127.0.0.1:8080', { key: 'k', rpc: true });
  const lock = client.lock('r', { holder: 'h' });
  const token: bigint = await lock.acquire({ leaseMs: 1000, waitMs: 10, signal: AbortSignal.timeout(5) });
  const signal: AbortSignal = lock.signal;
  const guard = await WasmGuard.load({ client });
  const mw = fencingMiddleware(guard);
  http.createServer((req: FencedHttpRequest, res) => mw(req, res, () => res.end(String(req.fencing?.token))));
  const app = Fastify();
  app.addHook('onRequest', fencingMiddleware.fastify(guard));
  const r = await callFencedService('http://x', { resourceId: 'r' }, lock);
  if (!r.accepted) {
    const required: bigint = r.required;
    void required;
  }
  const d: Decision = await guard.check('r', token);
  void signal;
  void d;
  return token;
}

// Lock-delay, semaphores, multi-locks, elections.
export async function consumerPrimitives(client: Client): Promise<bigint> {
  await client.lock('r', { holder: 'h' }).acquire({ lockDelayMs: 5000 }).catch((e: unknown) => {
    if (e instanceof LockDelayError) {
      const at: string = e.availableAt;
      void at;
    }
  });
  const permit: Permit = await client.semaphore('jobs', 4, { holder: 'w' }).acquire({ waitMs: 100 });
  const slot: number = permit.slot;
  const slotToken: bigint = permit.token;
  const all: MultiLock = await client.lockAll(['a', 'b'], { holder: 'h' });
  const tokens: Map<string, bigint> = all.tokens;
  const election = client.election('leader', { candidate: 'me' });
  const term: bigint = await election.campaign('value');
  for await (const l of election.observe({ signal: AbortSignal.timeout(5) })) {
    const who: Leader | null = l;
    void who;
  }
  void slot;
  void slotToken;
  void tokens;
  return term;
}

// Typed errors, lock(name) without options, the signature options.
export async function consumerErrors(client: Client, db: Queryable): Promise<string> {
  const lock = client.lock('r');
  await lock.acquire();
  const unsigned = await WasmGuard.load({ client, acceptUnsignedTokens: true });
  const marks = new PgMarks(db, { client });
  void unsigned;
  void marks;
  try {
    await lock.release();
  } catch (e: unknown) {
    if (e instanceof LeaseExpiredError) {
      const at: string | null = e.expiredAt;
      void at;
    }
  }
  const code: ErrorCode = 'lease-expired';
  const err: FenceviewError = errorFor(409, { code });
  const retry: number | null = err.retryAfterMs;
  void retry;
  client.close();
  return err.code;
}

// The S3 guard, over the SDK's own client type.
export async function consumerS3(client: Client, s3: import('@aws-sdk/client-s3').S3Client): Promise<boolean> {
  const { S3Guard } = await import('fenceview');
  const g = new S3Guard(s3, 'orders', { client, resource: (key: string) => key.split('/')[0]! });
  const lock = client.lock('orders', { holder: 'h' });
  const d: Decision = await g.put('orders/42.json', '{}', lock);
  const r = await g.get('orders/42.json', 7n);
  const found: boolean = r.found;
  return d.accepted && found;
}
