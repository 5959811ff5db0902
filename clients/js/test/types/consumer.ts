// Compiled (never run) by `npm run typecheck:consumer`: the package's
// declarations as a TypeScript user sees them, with Node's http and
// Fastify's own types.
import http from 'node:http';
import Fastify from 'fastify';
import { Client, WasmGuard, fencingMiddleware, callFencedService, type Decision, type FencedHttpRequest } from 'fenceview';

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
