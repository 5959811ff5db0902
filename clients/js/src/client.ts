// The lock client: fenceview's HTTP API and RPC stream, with every token a
// bigint read losslessly from the JSON.

import { randomUUID } from 'node:crypto';
import { parse, stringify, type JSONValue } from './json.js';
import { ConnectionError, FenceRefusedError, FenceviewError, HeldError, LeaseLostError, NotHeldError, ReleasedError, errorFor, type ErrorContext } from './errors.js';
import { EventStream } from './events.js';
import { Election, MultiLock, Semaphore, type ElectionOptions, type LockAllOptions, type Leader, type SemaphoreState } from './primitives.js';
import { NotTakenError, RpcSession } from './rpc.js';
import { grantOf, onClose, rawCall } from './call.js';
import type { Grant } from './types.js';

export type { Fencing, Grant } from './types.js';
import { viaFetch, viaNodeHttp, type Requester } from './transport.js';
import { accessOf } from './guard.js';
import {
  HEADER_ACCESS,
  HEADER_RESOURCE,
  HEADER_SIGNATURE,
  HEADER_TOKEN,
  InvalidInputError,
  toToken,
  validateHolderId,
  validateResourceId,
  type Access,
  type Decision,
} from './token.js';
import { Verifier, type SigningKey, type VerifierOptions } from './verifier.js';

export interface ClientOptions {
  /** A key's secret (or the admin token), sent as Authorization: Bearer. */
  key?: string;
  /** More base URLs of the same cluster, tried in turn when one cannot be reached or has no leader (503). */
  urls?: string[];
  /** The fetch to use; default node:http over keep-alive connections, which served about four times the requests per second of the global fetch here. */
  fetch?: typeof fetch;
  /**
   * Carry locks, fences, semaphores, multi-locks and elections over the RPC
   * stream (one websocket) instead of one HTTP request each; default true.
   * When the websocket cannot be opened (a proxy that refuses upgrades, a
   * server without the stream), calls go over HTTP, log is told once, and
   * the stream is tried again after rpcRetryMs.
   */
  rpc?: boolean;
  /** How long calls go over HTTP after the RPC stream could not be opened, before it is tried again; default 30 000. */
  rpcRetryMs?: number;
  /** Where the client says what it does on its own (the RPC stream could not be opened); default console.warn. */
  log?: (message: string) => void;
  /** The lease of locks that do not set their own; default 30 s. */
  leaseMs?: number;
  /**
   * How many times a call the server shed (429 overloaded, or 503 with a
   * Retry-After: nothing was changed) is sent again, after the wait the
   * server asked for plus jitter, before its error is thrown; default 5.
   * A call's signal stops the waiting.
   */
  overloadRetries?: number;
}

/** GET /v1/locks/{resource}. */
export interface LockState {
  resourceId: string;
  locked: boolean;
  holder: string | null;
  holdCount: number;
  /** The last token issued, 0n if none. */
  token: bigint;
  expiresAt: string | null;
  remainingMs: number;
  /** When a running lock-delay ends (RFC 3339); null when none runs. */
  availableAt: string | null;
  /** Held in shared mode (by readers). */
  shared?: boolean;
  /** While shared holds are live: each reader's hold. */
  holders?: { holder: string; holdCount: number; expiresAt: string; remainingMs: number }[];
}

/** GET /v1/resources/{resource}. */
export interface ResourceInfo {
  resourceId: string;
  highWaterMark: bigint;
  lastToken: bigint;
  holder: string | null;
  expiresAt: string | null;
  accepted: number;
  rejected: number;
  lastRejectionAt: string | null;
  counterAlarm?: unknown;
}

/** One refused write of GET /v1/rejections. */
export interface Rejection {
  id: number | bigint;
  resourceId: string;
  presented: bigint;
  required: bigint;
  reason: string;
  source: string;
  at: string;
}

/** The answer of the server's own fence. */
export interface FenceResult extends Decision {
  idempotencyKey?: string;
}

/** A decision made by a guard elsewhere, for POST /v1/decisions. */
export interface DecisionReport {
  resourceId: string;
  token: bigint;
  accepted: boolean;
  required?: bigint;
  reason?: string;
  source: string;
  at?: string;
  signature?: string;
}

interface Answer {
  status: number;
  headers: { get(name: string): string | null } | null;
  body: JSONValue;
}

/** The largest answer body the client reads (decisions, long pages). */
const MAX_BODY = 8 << 20;

/** The longest wait between retries of a shed call, whatever the server asked. */
const MAX_RETRY_WAIT_MS = 30_000;

/**
 * shedWait is how long to wait before sending again a call the server
 * shed, or null when the answer is not one: 429, or 503 with a
 * Retry-After (a header, or retryAfterMs in the body as the RPC stream
 * carries it). The wait is the server's (retryAfterMs, else Retry-After),
 * else a backoff doubling from 50 ms, plus up to half of it again at
 * random, so clients shed together do not come back together.
 */
export function shedWait(a: { status: number; body: JSONValue; headers?: { get(name: string): string | null } | null }, attempt: number, random: () => number = Math.random): number | null {
  const b = a.body as { retryAfterMs?: unknown; code?: unknown } | null;
  const bodyMs = typeof b?.retryAfterMs === 'number' && b.retryAfterMs >= 0 ? b.retryAfterMs : typeof b?.retryAfterMs === 'bigint' && b.retryAfterMs >= 0n ? Number(b.retryAfterMs) : null;
  const headerMs = retryAfterOf(a.headers ?? null);
  if (a.status !== 429 && !(a.status === 503 && (headerMs !== null || bodyMs !== null || b?.code === 'unavailable'))) return null;
  const base = bodyMs ?? headerMs ?? Math.min(50 * 2 ** attempt, 2_000);
  return Math.min(MAX_RETRY_WAIT_MS, Math.round(base + random() * (base / 2)));
}

/** pause waits ms, or until signal aborts (then throws its reason). */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** One server-side wait of a blocking acquire: long enough to be cheap, short enough for proxies that cut idle requests. */
const WAIT_CHUNK_MS = 60_000;

/**
 * refusal is the typed error of an answer that is not a success, chosen by
 * its code (see errorFor), with its Retry-After when it had one.
 */
export function refusal(a: { status: number; body: JSONValue; headers?: { get(name: string): string | null } | null }, ctx: ErrorContext = {}): FenceviewError {
  return errorFor(a.status, a.body, { ...ctx, retryAfterMs: retryAfterOf(a.headers ?? null) });
}

/** retryAfterOf reads Retry-After in whole seconds (the form fenceview writes), in ms; null when absent or another form. */
export function retryAfterOf(headers: { get(name: string): string | null } | null): number | null {
  const v = headers?.get('retry-after');
  if (v == null || !/^[0-9]{1,6}$/.test(v.trim())) return null;
  return Number(v.trim()) * 1000;
}

/**
 * Client talks to one fenceview server (or the nodes of one cluster).
 *
 *   const client = new Client('http://127.0.0.1:8080', { key });
 *   const lock = client.lock('inventory:42', { holder: 'worker-7' });
 *   const token = await lock.acquire();      // a bigint; a watchdog renews
 *   await fetch(url, { signal: lock.signal, headers: lock.headers() });
 *   await lock.release();
 */
export class Client {
  readonly urls: string[];
  readonly leaseMs: number;
  #key: string | undefined;
  #fetch: typeof fetch;
  #request: Requester;
  #rpc: boolean;
  #session: RpcSession | null = null;
  #rpcRetryMs: number;
  #rpcUntil = 0; // after a stream that could not be opened: until when (Date.now()) calls go over HTTP
  #rpcTold = false;
  #log: (message: string) => void;
  #current = 0; // index in urls of the node that answered last
  #closed = false;
  #closing: Promise<void> | null = null;
  #beforeClose = new Set<() => Promise<void>>();
  #retries: number;

  constructor(url: string, opts: ClientOptions = {}) {
    this.urls = [url, ...(opts.urls ?? [])].map((u) => {
      const parsed = new URL(u);
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new InvalidInputError(`fenceview: ${u} is not an http(s) URL`, 'url');
      return parsed.origin + parsed.pathname.replace(/\/+$/, '');
    });
    this.#key = opts.key;
    this.#fetch = opts.fetch ?? globalThis.fetch;
    this.#request = opts.fetch === undefined ? viaNodeHttp() : viaFetch(opts.fetch);
    this.#rpc = opts.rpc ?? true;
    this.#rpcRetryMs = opts.rpcRetryMs ?? 30_000;
    if (!Number.isSafeInteger(this.#rpcRetryMs) || this.#rpcRetryMs < 0) throw new InvalidInputError('rpcRetryMs must be a non-negative integer', 'rpcRetryMs');
    this.#log = opts.log ?? ((m) => console.warn(m));
    this.leaseMs = opts.leaseMs ?? 30_000;
    this.#retries = opts.overloadRetries ?? 5;
    if (!Number.isSafeInteger(this.#retries) || this.#retries < 0) throw new InvalidInputError('overloadRetries must be a non-negative integer', 'overloadRetries');
  }

  /** retrying makes a call again while the server sheds it, at most overloadRetries more times, waiting as shedWait says. */
  async #retrying<A extends { status: number; body: JSONValue; headers?: { get(name: string): string | null } | null }>(signal: AbortSignal | undefined, call: () => Promise<A>): Promise<A> {
    for (let attempt = 0; ; attempt++) {
      const a = await call();
      const wait = attempt < this.#retries ? shedWait(a, attempt) : null;
      if (wait === null) return a;
      await pause(wait, signal);
    }
  }

  /** Whether lock operations go over the RPC stream. */
  get usesRpc(): boolean {
    return this.#rpc;
  }

  #headers(json: boolean): Record<string, string> {
    const h: Record<string, string> = { accept: 'application/json' };
    if (json) h['content-type'] = 'application/json';
    if (this.#key !== undefined) h['authorization'] = `Bearer ${this.#key}`;
    return h;
  }

  /** request makes one HTTP call, trying the next node when one is unreachable or leaderless. */
  #http(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<Answer> {
    return this.#retrying(signal, () => this.#httpOnce(method, path, body, signal));
  }

  async #httpOnce(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<Answer> {
    if (this.#closed) throw new ConnectionError('fenceview: client closed');
    let lastErr: unknown;
    for (let attempt = 0; attempt < this.urls.length; attempt++) {
      const base = this.urls[(this.#current + attempt) % this.urls.length]!;
      let res;
      try {
        res = await this.#request(base + path, { method, headers: this.#headers(body !== undefined), body: body === undefined ? undefined : stringify(body), signal }, MAX_BODY);
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
        lastErr = err;
        continue;
      }
      if (res.status === 503 && attempt + 1 < this.urls.length) {
        lastErr = refusal({ status: 503, body: safeParse(res.text), headers: res.headers });
        continue;
      }
      this.#current = (this.#current + attempt) % this.urls.length;
      return { status: res.status, headers: res.headers, body: safeParse(res.text) };
    }
    throw new ConnectionError(`fenceview: no node answered: ${(lastErr as Error)?.message ?? lastErr}`, { cause: lastErr });
  }

  /** stream is the live RPC stream, opened anew after one broke; null while calls go over HTTP after one could not be opened. */
  #stream(): RpcSession | null {
    if (this.#closed) throw new ConnectionError('fenceview: client closed');
    if (this.#session !== null && this.#session.alive) return this.#session;
    if (this.#session !== null) {
      if (!this.#session.opened && Date.now() < this.#rpcUntil) return null;
      if (this.#session.opened) this.#rpcTold = false; // a stream opened since the log last heard
      // A broken stream is reopened at the next node, if there are others.
      this.#current = (this.#current + 1) % this.urls.length;
    }
    this.#session = new RpcSession(this.urls[this.#current]!, this.#key === undefined ? {} : { authorization: `Bearer ${this.#key}` });
    return this.#session;
  }

  /**
   * viaStream carries one request over the RPC stream; null when it goes
   * over HTTP instead: the stream could not be opened (lately), or its
   * opening was refused with an answer the JSON API gives too (401, 429,
   * 503), which the HTTP call then gives.
   */
  async #viaStream(req: Record<string, unknown>, signal: AbortSignal | undefined): Promise<{ status: number; body: JSONValue } | null> {
    if (!this.#rpc) return null;
    // Each try takes the stream live then: one the server stopped serving
    // (its 503 unavailable, sent again as any shed call is) is left for a
    // new one.
    for (let shed = 0; ; shed++) {
      const a = await this.#onStream(req, signal);
      if (a === null) return null;
      const wait = shed < this.#retries ? shedWait(a, shed) : null;
      if (wait === null) return a;
      await pause(wait, signal);
    }
  }

  /** onStream is one try of viaStream: the answer, or null to go over HTTP. */
  async #onStream(req: Record<string, unknown>, signal: AbortSignal | undefined): Promise<{ status: number; body: JSONValue } | null> {
    for (let attempt = 1, resent = false; ; ) {
      const s = this.#stream();
      if (s === null) return null;
      try {
        return await s.call(req, signal);
      } catch (err) {
        if (err instanceof NotTakenError && !resent) {
          // The server's service ended (a cluster leader's term) before it
          // took the call: once more, on a new stream.
          resent = true;
          continue;
        }
        if (!(err instanceof ConnectionError) || s.opened) throw err;
        // A stream that never opened sent nothing: the next node may take it, else HTTP.
        if (attempt++ < this.urls.length) continue;
        if (s.refusedWith === 401 || s.refusedWith === 429 || s.refusedWith === 503) return null;
        if (s === this.#session) this.#rpcUntil = Date.now() + this.#rpcRetryMs;
        if (!this.#rpcTold) {
          this.#rpcTold = true;
          this.#log(`fenceview: the RPC stream of ${this.urls[this.#current]} could not be opened; calls go over the JSON API until it can be (tried again after ${this.#rpcRetryMs} ms): ${(err as Error).message}`);
        }
        return null;
      }
    }
  }

  /**
   * op carries one lock operation or fence over the RPC stream when the
   * client uses it, else over HTTP; both give the same status and body.
   */
  async #op(op: 'acquire' | 'renew' | 'release' | 'fence' | 'lock', resource: string, fields: Record<string, unknown>, signal?: AbortSignal): Promise<Answer> {
    const a = await this.#viaStream({ op, resource, ...fields }, signal);
    if (a !== null) return { status: a.status, headers: null, body: a.body };
    const r = encodeURIComponent(resource);
    switch (op) {
      case 'fence':
        return this.#http('POST', `/v1/fence/${r}`, fields, signal);
      case 'lock':
        return this.#http('GET', `/v1/locks/${r}`, undefined, signal);
      default:
        return this.#http('POST', `/v1/locks/${r}/${op}`, fields, signal);
    }
  }

  /**
   * rawCall carries one operation of the semaphores, multi-locks or
   * elections: over the RPC stream as op (the route's {name} in fields),
   * else as the route. Not part of the package's API: the primitives call it.
   */
  async [rawCall](op: string, method: string, path: string, fields: Record<string, unknown>, signal?: AbortSignal): Promise<{ status: number; body: JSONValue }> {
    const a = await this.#viaStream({ op, ...fields }, signal);
    if (a !== null) return a;
    const { name: _name, ...body } = fields;
    return this.#http(method, path, method === 'GET' ? undefined : body, signal);
  }

  /** semaphore returns the semaphore name of permits slots (name#0 .. name#<permits-1>), whose permits go to holder (default a random id). */
  semaphore(name: string, permits: number, opts: { holder?: string; leaseMs?: number } = {}): Semaphore {
    return new Semaphore(this, name, permits, opts.holder ?? randomUUID(), opts.leaseMs ?? this.leaseMs);
  }

  /** semaphoreState is GET /v1/semaphores/{name}, or null when it was never acquired. */
  async semaphoreState(name: string, signal?: AbortSignal): Promise<SemaphoreState | null> {
    const a = await this[rawCall]('semaphore', 'GET', `/v1/semaphores/${encodeURIComponent(name)}`, { name }, signal);
    if (a.status === 404) return null;
    if (a.status !== 200) throw refusal(a);
    return a.body as unknown as SemaphoreState;
  }

  /** setPermits changes a semaphore's permits (admin); held slots above the new count stay held until released. */
  async setPermits(name: string, permits: number): Promise<SemaphoreState> {
    const a = await this[rawCall]('semaphore-permits', 'PUT', `/v1/semaphores/${encodeURIComponent(name)}`, { name, permits });
    if (a.status !== 200) throw refusal(a);
    return a.body as unknown as SemaphoreState;
  }

  /**
   * lockAll takes every lock of resources for holder at once, or none,
   * waiting (without holding any) until all are free together; with waitMs,
   * a HeldError listing the held ones when the wait runs out. One watchdog
   * renews them all; the handle's signal aborts when any lease is lost.
   */
  async lockAll(resources: string[], opts: LockAllOptions): Promise<MultiLock> {
    return MultiLock.acquire(this, resources, opts);
  }

  /** tryLockAll is lockAll waiting at most waitMs (default 0): null when one of the locks stayed held. */
  async tryLockAll(resources: string[], opts: LockAllOptions): Promise<MultiLock | null> {
    try {
      return await MultiLock.acquire(this, resources, { ...opts, waitMs: opts.waitMs ?? 0 });
    } catch (err) {
      if (err instanceof HeldError) return null;
      throw err;
    }
  }

  /** election returns the election name (its lock is the resource name) for candidate (default a random id). */
  election(name: string, opts: ElectionOptions = {}): Election {
    return new Election(this, validateResourceId(name, 'name'), validateHolderId(opts.candidate ?? randomUUID(), 'candidate'), opts.leaseMs ?? this.leaseMs);
  }

  /** leader is the election's leader now, or null when nobody leads (GET /v1/elections/{name}). */
  async leader(name: string, signal?: AbortSignal): Promise<Leader | null> {
    const a = await this[rawCall]('election', 'GET', `/v1/elections/${encodeURIComponent(validateResourceId(name, 'name'))}`, { name }, signal);
    if (a.status !== 200) throw refusal(a);
    return ((a.body as { leader?: Leader | null }).leader ?? null) as Leader | null;
  }

  /**
   * events opens the event stream (/v1/events), optionally of one resource
   * and resumed after the event numbered since; read it with next() and
   * close it when done. Its opened promise resolves once the server
   * subscribed it: every event committed after that comes.
   */
  events(opts: { resource?: string; since?: bigint } = {}): EventStream {
    if (this.#closed) throw new ConnectionError('fenceview: client closed');
    const q = new URLSearchParams();
    if (opts.resource !== undefined) q.set('resource', validateResourceId(opts.resource));
    if (opts.since !== undefined) q.set('since', opts.since.toString());
    return new EventStream(this.urls[this.#current]!, q, this.#key === undefined ? {} : { authorization: `Bearer ${this.#key}` });
  }

  /** lock returns the lock on resource for holder (default a random id, one per Lock). Ids are checked here. */
  lock(resource: string, opts: { holder?: string; leaseMs?: number } = {}): Lock {
    return new Lock(this, validateResourceId(resource), validateHolderId(opts.holder ?? randomUUID()), opts.leaseMs ?? this.leaseMs);
  }

  /**
   * readLock returns the shared (read) side of the lock on resource: its
   * holders hold it together, never beside a writer (client.lock), first
   * come first served so that writers do not starve. All readers of one
   * read phase share one token, above every earlier writer's and below
   * every later one's; present it with access 'read' (its headers() carry
   * X-Fencing-Access: read): a guard refuses it for a write. A re-entrant
   * read keeps the token; a holder holding one side that asks for the
   * other gets HeldError.
   */
  readLock(resource: string, opts: { holder?: string; leaseMs?: number } = {}): Lock {
    return new Lock(this, validateResourceId(resource), validateHolderId(opts.holder ?? randomUUID()), opts.leaseMs ?? this.leaseMs, true);
  }

  /** grant asks for the lock once (shared: a reader's hold): a Grant, or HeldError (LockDelayError in a lock-delay) when it stayed held through waitMs. */
  async grant(resource: string, holder: string, leaseMs: number, waitMs: number, signal?: AbortSignal, lockDelayMs?: number, shared = false): Promise<Grant> {
    const a = await this.#op('acquire', resource, { holder, leaseMs, waitMs: waitMs > 0 ? waitMs : undefined, lockDelayMs: lockDelayMs || undefined, shared: shared || undefined }, signal);
    if (a.status === 200) return grantOf(a.body);
    throw refusal(a, { resource, conflict: 'lock-held' });
  }

  /** renewGrant extends holder's lease; NotHeldError when it is no longer held. */
  async renewGrant(resource: string, holder: string, leaseMs?: number, signal?: AbortSignal): Promise<Grant> {
    const a = await this.#op('renew', resource, { holder, leaseMs }, signal);
    if (a.status === 200) return grantOf(a.body);
    throw refusal(a, { resource, conflict: 'not-held' });
  }

  /** releaseHold releases one hold of holder and returns the holds left. */
  async releaseHold(resource: string, holder: string, signal?: AbortSignal): Promise<number> {
    const a = await this.#op('release', resource, { holder }, signal);
    if (a.status === 200) return Number((a.body as { holdCount?: unknown }).holdCount ?? 0);
    throw refusal(a, { resource, conflict: 'not-held' });
  }

  /** state is the lock's state (GET /v1/locks/{resource}). */
  async state(resource: string, signal?: AbortSignal): Promise<LockState> {
    const a = await this.#op('lock', validateResourceId(resource), {}, signal);
    if (a.status !== 200) throw refusal(a);
    return a.body as unknown as LockState;
  }

  /**
   * fence presents a token to the server's own guard. A refusal is a
   * FenceResult with accepted false and its reason (409), not an error;
   * with throwOnRefusal it is a FenceRefusedError whose code is the reason.
   */
  async fence(resource: string, token: bigint, opts: { signature?: string; source?: string; signal?: AbortSignal; throwOnRefusal?: boolean; access?: Access } = {}): Promise<FenceResult> {
    validateResourceId(resource);
    const read = accessOf(opts.access) === 'read';
    const a = await this.#op('fence', resource, { token: toToken(token), signature: opts.signature, source: opts.source, access: read ? 'read' : undefined }, opts.signal);
    if (a.status === 409) {
      const err = refusal(a, { resource, conflict: 'stale-token' });
      if (!(err instanceof FenceRefusedError)) throw err;
      if (opts.throwOnRefusal) throw err;
      const d: FenceResult = { accepted: false, reason: err.reason, presented: err.presented ?? toToken(token), required: err.required ?? 0n };
      const b = a.body as Record<string, JSONValue>;
      if (typeof b.idempotencyKey === 'string') d.idempotencyKey = b.idempotencyKey;
      return d;
    }
    if (a.status !== 200) throw refusal(a, { resource });
    const b = a.body as Record<string, JSONValue>;
    if (b?.accepted !== true) throw new FenceviewError('fenceview: a fence answer of 200 that is not an acceptance', 200, a.body, 'internal');
    const d: FenceResult = {
      accepted: true,
      presented: typeof b.presented === 'bigint' ? b.presented : toToken(token),
      required: typeof b.required === 'bigint' ? b.required : 0n,
    };
    if (typeof b.idempotencyKey === 'string') d.idempotencyKey = b.idempotencyKey;
    return d;
  }

  /** report records decisions made by guards elsewhere (POST /v1/decisions); returns how many were recorded. */
  async report(decisions: DecisionReport[], signal?: AbortSignal): Promise<number> {
    if (decisions.length === 0) return 0;
    const a = await this.#http('POST', '/v1/decisions', { decisions }, signal);
    if (a.status !== 200) throw refusal(a);
    return Number((a.body as { recorded?: unknown }).recorded ?? 0);
  }

  /** resource is GET /v1/resources/{resource}, or null when the server never saw it. */
  async resource(resource: string, signal?: AbortSignal): Promise<ResourceInfo | null> {
    const a = await this.#http('GET', `/v1/resources/${encodeURIComponent(validateResourceId(resource))}`, undefined, signal);
    if (a.status === 404) return null;
    if (a.status !== 200) throw refusal(a);
    return a.body as unknown as ResourceInfo;
  }

  /** resources walks GET /v1/resources page by page. */
  async *resources(opts: { prefix?: string; pageSize?: number; signal?: AbortSignal } = {}): AsyncGenerator<ResourceInfo> {
    let cursor: string | null = null;
    do {
      const q = new URLSearchParams({ limit: String(opts.pageSize ?? 1000) });
      if (opts.prefix) q.set('prefix', opts.prefix);
      if (cursor !== null) q.set('cursor', cursor);
      const a = await this.#http('GET', `/v1/resources?${q}`, undefined, opts.signal);
      if (a.status !== 200) throw refusal(a);
      const b = a.body as { resources?: ResourceInfo[]; next?: string | null };
      for (const r of b.resources ?? []) yield r;
      cursor = typeof b.next === 'string' && b.next !== '' ? b.next : null;
    } while (cursor !== null);
  }

  /** highWaterMarks maps every resource the server knows (with prefix) to its mark, for seeding a guard. */
  async highWaterMarks(opts: { prefix?: string; signal?: AbortSignal } = {}): Promise<Map<string, bigint>> {
    const out = new Map<string, bigint>();
    for await (const r of this.resources(opts)) if (r.highWaterMark > 0n) out.set(r.resourceId, r.highWaterMark);
    return out;
  }

  /** rejections is one page of refused writes, newest first (GET /v1/rejections). */
  async rejections(q: { resource?: string; reason?: string; source?: string; limit?: number; cursor?: string } = {}, signal?: AbortSignal): Promise<{ rejections: Rejection[]; next: string | null }> {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) if (v !== undefined) params.set(k, String(v));
    const a = await this.#http('GET', `/v1/rejections?${params}`, undefined, signal);
    if (a.status !== 200) throw refusal(a);
    return a.body as unknown as { rejections: Rejection[]; next: string | null };
  }

  /** signingKeys is GET /v1/signing-keys. */
  async signingKeys(signal?: AbortSignal): Promise<{ issuer: string; keys: SigningKey[] }> {
    const a = await this.#http('GET', '/v1/signing-keys', undefined, signal);
    if (a.status !== 200) throw refusal(a);
    return a.body as unknown as { issuer: string; keys: SigningKey[] };
  }

  /** verifier returns a Verifier of this server's signing keys, loaded. */
  async verifier(opts: VerifierOptions = {}): Promise<Verifier> {
    const v = new Verifier(this, opts);
    await v.refresh();
    return v;
  }

  /** guardModule fetches the server's WebAssembly guard (GET /guard.wasm). */
  async guardModule(signal?: AbortSignal): Promise<Uint8Array> {
    const base = this.urls[this.#current]!;
    const res = await this.#fetch(base + '/guard.wasm', { signal: signal ?? null });
    if (res.status !== 200) throw new FenceviewError(`fenceview: GET /guard.wasm: ${res.status}`, res.status, null);
    return new Uint8Array(await res.arrayBuffer());
  }

  // Admin calls: the client's key must be the admin token or an admin key.

  /** forceExpire frees the lock whatever its state (admin). */
  async forceExpire(resource: string): Promise<void> {
    const a = await this.#http('POST', `/v1/locks/${encodeURIComponent(validateResourceId(resource))}/expire`);
    if (a.status !== 200) throw refusal(a);
  }

  /** reset raises resource's token counter to at least floor (admin): the next grant takes floor+1. */
  async reset(resource: string, floor: bigint): Promise<{ lastToken: bigint; highWaterMark: bigint; nextToken: bigint }> {
    const a = await this.#http('POST', `/v1/locks/${encodeURIComponent(validateResourceId(resource))}/reset`, { floor: toToken(floor) });
    if (a.status !== 200) throw refusal(a);
    return a.body as unknown as { lastToken: bigint; highWaterMark: bigint; nextToken: bigint };
  }

  /** rotateSigningKey makes a new active signing key (admin). */
  async rotateSigningKey(): Promise<SigningKey> {
    const a = await this.#http('POST', '/v1/signing-keys');
    if (a.status !== 201) throw refusal(a);
    return a.body as unknown as SigningKey;
  }

  /** removeSigningKey removes an inactive key: what it signed stops verifying (admin). */
  async removeSigningKey(keyId: string): Promise<void> {
    const a = await this.#http('DELETE', `/v1/signing-keys/${encodeURIComponent(keyId)}`);
    if (a.status !== 200) throw refusal(a);
  }

  /**
   * close ends the client: the reports its guards queued (a WasmGuard's
   * batch) are sent first, then the RPC stream ends and the client makes
   * no more calls. Await it to know the reports went out; without guards
   * it has closed when it returns.
   */
  close(): Promise<void> {
    if (this.#closing !== null) return this.#closing;
    const finish = (): void => {
      this.#closed = true;
      this.#session?.close();
      this.#session = null;
    };
    const before = [...this.#beforeClose];
    this.#beforeClose.clear();
    if (before.length === 0) {
      finish();
      this.#closing = Promise.resolve();
    } else {
      this.#closing = Promise.allSettled(before.map((f) => f())).then(finish);
    }
    return this.#closing;
  }

  /** onClose registers work close() awaits before it closes (a guard's queued reports); the function returned takes it off. Not part of the package's API. */
  [onClose](work: () => Promise<void>): () => void {
    this.#beforeClose.add(work);
    return () => this.#beforeClose.delete(work);
  }
}

function safeParse(text: string): JSONValue {
  if (text === '') return null;
  try {
    return parse(text);
  } catch {
    return { error: text.slice(0, 200) };
  }
}

export interface AcquireOptions {
  /** This grant's lease; default the lock's. */
  leaseMs?: number;
  /** How long to wait for the lock; default: until it is granted or signal aborts. */
  waitMs?: number;
  /** Stop waiting. */
  signal?: AbortSignal;
  /**
   * Renew the lease while held (default true). Without it the lease runs
   * out after leaseMs, and lock.signal aborts then.
   */
  watchdog?: boolean;
  /**
   * A lock-delay (0..60000 ms, Chubby's): should this lease run out without
   * a release, nobody may take the lock until that long after, so a write
   * still in flight from a vanished holder lands or dies first. Acquires
   * meanwhile get LockDelayError (its availableAt says until when).
   */
  lockDelayMs?: number;
}

/**
 * Lock is a fenced lock on one resource for one holder, like Redisson's
 * RFencedLock. Use one Lock per holder and resource.
 *
 * While held, a watchdog renews the lease every third of it. lock.signal is
 * an AbortSignal aborted the moment the lease is lost (the server refuses a
 * renewal, or the lease runs out with no renewal answered) or the lock is
 * released: pass it to every fetch and database call made under the lock.
 *
 * Every grant takes a new token, re-entrant ones too: read lock.token after
 * the outermost acquire and pass that down.
 */
export class Lock {
  #grant: Grant | null = null;
  // The signal is made when first asked for: most holds are never asked,
  // and an AbortController and its reason cost more than the rest of a
  // lock cycle's client work. #gen counts holds, so a renewal answered
  // after its hold ended changes nothing.
  #controller: AbortController | null = null;
  #held = false;
  #gen = 0;
  #endReason: () => Error = () => new Error('fenceview: not acquired yet');
  #holds = 0;
  #watchdog = false;
  #leaseMs: number;
  #tick: NodeJS.Timeout | null = null;
  #deadline: NodeJS.Timeout | null = null;
  #renewing = false;

  constructor(
    readonly client: Client,
    readonly resource: string,
    readonly holder: string,
    leaseMs: number,
    /** A shared (read) lock: granted beside other readers, never beside a writer (see Client.readLock). */
    readonly shared = false,
  ) {
    if (!Number.isSafeInteger(leaseMs) || leaseMs <= 0) throw new InvalidInputError('leaseMs must be a positive integer', 'leaseMs');
    this.#leaseMs = leaseMs;
  }

  /** The latest grant's token (0n before the first). */
  get token(): bigint {
    return this.#grant?.fencing.token ?? 0n;
  }

  /** The latest grant's signature (base64url), if the server signs. */
  get signature(): string | undefined {
    return this.#grant?.fencing.signature;
  }

  /** The latest grant. */
  get grant(): Grant | null {
    return this.#grant;
  }

  /** Whether the lock is held, as far as this client knows. */
  get held(): boolean {
    return this.#held;
  }

  /** Aborted the moment the lease is lost or the lock released; the reason says which. */
  get signal(): AbortSignal {
    if (this.#controller === null) {
      this.#controller = new AbortController();
      if (!this.#held) this.#controller.abort(this.#endReason());
    }
    return this.#controller.signal;
  }

  /** The fencing headers for a request made under the lock. */
  headers(): Record<string, string> {
    const h: Record<string, string> = { [HEADER_TOKEN]: this.token.toString(), [HEADER_RESOURCE]: this.resource };
    if (this.signature) h[HEADER_SIGNATURE] = this.signature;
    if (this.shared) h[HEADER_ACCESS] = 'read';
    return h;
  }

  /**
   * acquire waits until the lock is granted and returns its token. With
   * waitMs it waits at most that long and then throws HeldError. Waiting
   * happens on the server, first come first served, in chunks of a minute.
   */
  async acquire(opts: AcquireOptions = {}): Promise<bigint> {
    const lease = opts.leaseMs ?? this.#leaseMs;
    const bounded = opts.waitMs !== undefined;
    const until = bounded ? Date.now() + opts.waitMs! : Infinity;
    for (;;) {
      const wait = Math.max(0, Math.min(WAIT_CHUNK_MS, until - Date.now()));
      const sent = Date.now();
      try {
        const g = await this.client.grant(this.resource, this.holder, lease, wait, opts.signal, opts.lockDelayMs, this.shared);
        this.#granted(g, lease, opts.watchdog ?? true, sent);
        return g.fencing.token;
      } catch (err) {
        if (!(err instanceof HeldError) || (bounded && Date.now() >= until)) throw err;
        opts.signal?.throwIfAborted();
      }
    }
  }

  /** tryAcquire asks once, waiting on the server up to waitMs (default 0): the token, or null when the lock stayed held. */
  async tryAcquire(opts: AcquireOptions = {}): Promise<bigint | null> {
    try {
      return await this.acquire({ ...opts, waitMs: opts.waitMs ?? 0 });
    } catch (err) {
      if (err instanceof HeldError) return null;
      throw err;
    }
  }

  /** renew extends the lease now (the watchdog does this on its own); NotHeldError, and the signal aborted, when it is lost. */
  async renew(opts: { leaseMs?: number } = {}): Promise<Grant> {
    const sent = Date.now();
    try {
      const g = await this.client.renewGrant(this.resource, this.holder, opts.leaseMs);
      if (opts.leaseMs !== undefined) this.#leaseMs = opts.leaseMs;
      this.#grant = g;
      this.#armDeadline(sent);
      return g;
    } catch (err) {
      if (err instanceof NotHeldError) this.#lose('the server refused to renew it');
      throw err;
    }
  }

  /** release releases one hold; at the last the watchdog stops and signal aborts with ReleasedError. */
  async release(): Promise<number> {
    const left = await this.client.releaseHold(this.resource, this.holder).catch((err) => {
      if (err instanceof NotHeldError) this.#lose('it was not held when released');
      throw err;
    });
    this.#holds = left;
    if (left === 0) this.#end(() => new ReleasedError(this.resource));
    return left;
  }

  #granted(g: Grant, lease: number, watchdog: boolean, sent: number): void {
    if (!this.#held) {
      this.#held = true;
      this.#gen++;
      this.#controller = null;
      this.#holds = 0;
    }
    this.#grant = g;
    this.#holds = g.holdCount;
    this.#leaseMs = lease;
    this.#watchdog = watchdog;
    this.#armDeadline(sent);
    if (watchdog) this.#schedule();
  }

  // The lease ends leaseMs after the request that set it was sent (the
  // server's clock started no earlier); with no renewal answered by then,
  // it is lost.
  #armDeadline(sent: number): void {
    if (this.#deadline !== null) clearTimeout(this.#deadline);
    const left = sent + this.#leaseMs - Date.now();
    this.#deadline = setTimeout(() => this.#lose('its lease ran out'), Math.max(0, left));
    this.#deadline.unref();
  }

  #schedule(): void {
    if (this.#tick !== null) clearTimeout(this.#tick);
    this.#tick = setTimeout(() => void this.#renewOnce(), Math.max(1, Math.floor(this.#leaseMs / 3)));
    this.#tick.unref();
  }

  async #renewOnce(): Promise<void> {
    if (!this.held || this.#renewing) return;
    this.#renewing = true;
    const gen = this.#gen;
    const signal = this.signal;
    const sent = Date.now();
    try {
      const g = await this.client.renewGrant(this.resource, this.holder, this.#leaseMs, signal);
      if (gen !== this.#gen || !this.#held) return;
      this.#grant = g;
      this.#armDeadline(sent);
    } catch (err) {
      if (err instanceof NotHeldError) {
        this.#lose('the server refused to renew it (expired or force-expired)');
        return;
      }
      // Unreachable for now: try again at the next tick; the deadline
      // aborts the signal if no renewal gets through in time.
    } finally {
      this.#renewing = false;
      if (this.#held && this.#watchdog && gen === this.#gen) this.#schedule();
    }
  }

  #lose(why: string): void {
    if (!this.#held) return;
    const token = this.token;
    this.#end(() => new LeaseLostError(this.resource, token, why));
  }

  #end(reason: () => Error): void {
    if (this.#tick !== null) clearTimeout(this.#tick);
    if (this.#deadline !== null) clearTimeout(this.#deadline);
    this.#tick = this.#deadline = null;
    this.#holds = 0;
    this.#held = false;
    this.#endReason = reason;
    this.#controller?.abort(reason());
  }

  /** The holds of the current grant period (re-entrant grants count). */
  get holdCount(): number {
    return this.held ? this.#holds : 0;
  }
}
