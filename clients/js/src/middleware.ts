// The resource side of an HTTP service: every request carries
// X-Fencing-Token (and X-Fencing-Signature) for the resource named by
// X-Resource-Id; the middleware checks and records it in one step through
// a Checker before the handler runs. A stale token is 409 with
// X-Required-Token, a missing or malformed one 400. GET and HEAD are reads
// (a shared lock's reader may make them), other methods writes, unless
// X-Fencing-Access says "read" or "write".

import type { IncomingMessage, ServerResponse } from 'node:http';
import { stringify } from './json.js';
import type { Checker } from './guard.js';
import {
  HEADER_ACCESS,
  HEADER_REQUIRED,
  HEADER_RESOURCE,
  HEADER_SIGNATURE,
  HEADER_TOKEN,
  InvalidInputError,
  REASON_BAD_SIGNATURE,
  REASON_STALE,
  parseToken,
  validateResourceId,
  type Access,
  type Decision,
} from './token.js';

/** What the middleware attaches to an accepted request as req.fencing. */
export interface Fence {
  resource: string;
  token: bigint;
  /** What the request was checked for: a read (GET, HEAD, or X-Fencing-Access: read) or a write. */
  access: Access;
  signature?: string;
  decision: Decision;
}

export interface FencingOptions {
  /** The resource a request writes; default its one X-Resource-Id header. Throwing makes it a 400. */
  resource?: (req: IncomingMessage) => string;
  /**
   * Hold the resource until the response is finished (default true), so
   * a request that passed the check cannot write after a newer token's
   * request. Turn it off only when the handler fences its own write.
   */
  serialize?: boolean;
  /** Called with every decision (metrics, logs). */
  onDecision?: (req: IncomingMessage, resource: string, decision: Decision) => void;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The one value of a header, or undefined when it is missing or repeated. */
function single(req: IncomingMessage, name: string): string | undefined {
  const all = req.headersDistinct?.[name];
  if (all !== undefined) return all.length === 1 ? all[0] : undefined;
  const v = req.headers[name];
  return typeof v === 'string' ? v : undefined;
}

/** accessOfRequest is what req does: its X-Fencing-Access, else read for GET and HEAD, else write; null for a bad header. */
function accessOfRequest(req: IncomingMessage): Access | null {
  const all = req.headersDistinct?.[HEADER_ACCESS.toLowerCase()];
  if (all !== undefined) {
    if (all.length !== 1) return null;
    const v = all[0]!.trim().toLowerCase();
    return v === 'read' || v === 'write' ? v : null;
  }
  return req.method === 'GET' || req.method === 'HEAD' ? 'read' : 'write';
}

function headerResource(req: IncomingMessage): string {
  const raw = single(req, HEADER_RESOURCE.toLowerCase());
  if (raw === undefined) throw new InvalidInputError(`need exactly one ${HEADER_RESOURCE}`);
  // Node reads header bytes as latin1; the id is their UTF-8.
  return utf8.decode(Buffer.from(raw, 'latin1'));
}

/** refusalBody is the 409 body of a refused decision, as fenceview's server and Go middleware write it. */
export function refusalBody(d: Decision): { error: string; code: string; accepted: false; reason: string; presented: bigint; required: bigint } {
  const reason = d.reason ?? REASON_STALE;
  const error =
    {
      [REASON_STALE]: 'stale fencing token',
      [REASON_BAD_SIGNATURE]: 'missing or invalid token signature',
      'foreign-issuer': 'token from another issuer',
      'scope-mismatch': 'token issued for another scope',
      'unissued-token': 'token above any this server issued for the resource',
      'shared-token': "a shared lock's token presented for a write",
    }[reason] ?? 'fencing token refused';
  return { error, code: reason, accepted: false, reason, presented: d.presented, required: d.required };
}

interface Outcome {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** keyed one-at-a-time locks by resource id, dropped when nobody holds or waits. */
class KeyedLocks {
  #tails = new Map<string, Promise<void>>();

  async lock(key: string): Promise<() => void> {
    const prev = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = prev.then(() => mine);
    this.#tails.set(key, tail);
    await prev;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    };
  }

  get size(): number {
    return this.#tails.size;
  }
}

/** The fencing check shared by every framework's form; ok carries the fence, else the answer to send. */
function makeCheck(checker: Checker, opts: FencingOptions) {
  const resourceOf = opts.resource ?? headerResource;
  const serialize = opts.serialize ?? true;
  const locks = new KeyedLocks();
  const bad = (error: string, code = 'invalid-token'): Outcome => ({ status: 400, headers: {}, body: { error, code } });
  const run = async (req: IncomingMessage, onDone: (release: () => void) => void): Promise<{ fence: Fence } | { answer: Outcome }> => {
    let token: bigint;
    try {
      token = parseToken(single(req, HEADER_TOKEN.toLowerCase()));
    } catch {
      return { answer: bad(`missing or invalid ${HEADER_TOKEN}`) };
    }
    const sigs = req.headersDistinct?.[HEADER_SIGNATURE.toLowerCase()];
    if (sigs !== undefined && sigs.length > 1) return { answer: bad(`missing or invalid ${HEADER_TOKEN}`) };
    const signature = sigs?.[0];
    let resource: string;
    try {
      resource = validateResourceId(resourceOf(req));
    } catch {
      return { answer: bad(`missing or invalid ${HEADER_RESOURCE}`, 'invalid-request') };
    }
    const access = accessOfRequest(req);
    if (access === null) return { answer: bad(`${HEADER_ACCESS} must be "read" or "write"`, 'invalid-request') };
    let release: (() => void) | null = null;
    if (serialize) {
      release = await locks.lock(resource);
      onDone(release);
    }
    let d: Decision;
    try {
      d = await checker.check(resource, token, signature, access);
    } catch (err) {
      release?.();
      if (err instanceof InvalidInputError) return { answer: bad(`missing or invalid ${HEADER_TOKEN}`) };
      return { answer: { status: 500, headers: {}, body: { error: 'fencing check failed', code: 'internal' } } };
    }
    opts.onDecision?.(req, resource, d);
    if (!d.accepted) {
      release?.();
      const body = refusalBody(d);
      const headers: Record<string, string> = body.reason === REASON_STALE ? { [HEADER_REQUIRED]: d.required.toString() } : {};
      return { answer: { status: 409, headers, body } };
    }
    const fence: Fence = { resource, token, access, decision: d };
    if (signature !== undefined) fence.signature = signature;
    return { fence };
  };
  return { run, locks };
}

function whenFinished(res: ServerResponse, release: () => void): void {
  // A client that went away while this request waited its turn: its
  // 'close' has been and gone, so release now or the resource stays held.
  if (res.destroyed || res.writableFinished || res.closed) {
    release();
    return;
  }
  res.once('finish', release);
  res.once('close', release);
}

function send(res: ServerResponse, o: Outcome): void {
  res.statusCode = o.status;
  for (const [k, v] of Object.entries(o.headers)) res.setHeader(k, v);
  res.setHeader('content-type', 'application/json');
  res.end(stringify(o.body) + '\n');
}

/** A request the middleware accepted: req.fencing is set. */
export type FencedRequest = IncomingMessage & { fencing?: Fence };

/**
 * fencingMiddleware is the seed's middleware done right: the check and the
 * record are one atomic step of checker, a bad token is 400, a stale one
 * 409 with X-Required-Token, and an accepted request runs next() with
 * req.fencing set. It is Express's (req, res, next) and works on Node's own
 * http server as well:
 *
 *   app.use(fencingMiddleware(guard));                        // Express
 *   http.createServer((req, res) => mw(req, res, () => handler(req, res)));
 *   fastify.addHook('onRequest', fencingMiddleware.fastify(guard));
 */
export function fencingMiddleware(checker: Checker, opts: FencingOptions = {}) {
  const { run } = makeCheck(checker, opts);
  return async function fencing(req: FencedRequest, res: ServerResponse, next: (err?: unknown) => void): Promise<void> {
    let r: Awaited<ReturnType<typeof run>>;
    try {
      r = await run(req, (release) => whenFinished(res, release));
    } catch (err) {
      next(err);
      return;
    }
    if ('answer' in r) {
      send(res, r.answer);
      return;
    }
    req.fencing = r.fence;
    next();
  };
}

/** The parts of Fastify's request and reply the hook uses. */
interface FastifyRequestLike {
  raw: IncomingMessage;
  fencing?: Fence;
}
interface FastifyReplyLike {
  raw: ServerResponse;
  code(status: number): FastifyReplyLike;
  header(name: string, value: string): FastifyReplyLike;
  type(contentType: string): FastifyReplyLike;
  send(payload: string): unknown;
}

/**
 * fencingMiddleware.fastify is the same check as a Fastify onRequest (or
 * preHandler) hook: fastify.addHook('onRequest', fencingMiddleware.fastify(guard)).
 * request.fencing is set on an accepted request.
 */
fencingMiddleware.fastify = function fastifyFencing(checker: Checker, opts: FencingOptions = {}) {
  const { run } = makeCheck(checker, opts);
  return async function fencing(request: FastifyRequestLike, reply: FastifyReplyLike): Promise<void> {
    const r = await run(request.raw, (release) => whenFinished(reply.raw, release));
    if ('answer' in r) {
      reply.code(r.answer.status);
      for (const [k, v] of Object.entries(r.answer.headers)) reply.header(k, v);
      // Serialised here: Fastify's own JSON would throw on bigint.
      await reply.type('application/json').send(stringify(r.answer.body) + '\n');
      return;
    }
    request.fencing = r.fence;
  };
};
