// The primitives, each made of ordinary fenced locks: semaphores
// (N slots, each a lock), multi-locks (all or nothing) and elections (the
// term is the token).

import type { Client, Grant } from './client.js';
import { grantOf, rawCall } from './call.js';
import { FenceviewError, HeldError, LeaseLostError, NotHeldError, errorFor } from './errors.js';
import type { FenceEvent } from './events.js';
import type { JSONValue } from './json.js';
import { Lease } from './lease.js';
import { HEADER_RESOURCE, HEADER_SIGNATURE, HEADER_TOKEN, InvalidInputError, validateHolderId, validateResourceId } from './token.js';

/** One server-side wait of a blocking call, as Lock's. */
const WAIT_CHUNK_MS = 60_000;

/** The bounds of the primitives, as the server's. */
const MAX_PERMITS = 1024;
const MAX_SEMAPHORE_NAME = 150;
const MAX_LOCK_ALL = 64;
const MAX_VALUE = 4096;

/** How to wait for and hold a permit, a multi-lock or a leadership. */
export interface HoldOptions {
  /** The lease; default the semaphore's, election's or client's. */
  leaseMs?: number;
  /** How long to wait; default until granted or signal aborts. */
  waitMs?: number;
  /** Stop waiting. */
  signal?: AbortSignal;
  /** Renew the lease while held (default true). */
  watchdog?: boolean;
}

/**
 * waitFor asks once per chunk of at most a minute until ask succeeds, or
 * the wait (waitMs, default forever) is over: then the HeldError of the
 * last answer.
 */
async function waitFor<T>(opts: HoldOptions, ask: (waitMs: number, sent: number) => Promise<T>): Promise<T> {
  const bounded = opts.waitMs !== undefined;
  if (bounded && (!Number.isSafeInteger(opts.waitMs) || opts.waitMs! < 0)) throw new InvalidInputError('waitMs must be a non-negative integer', 'waitMs');
  const until = bounded ? Date.now() + opts.waitMs! : Infinity;
  for (;;) {
    const wait = Math.max(0, Math.min(WAIT_CHUNK_MS, until - Date.now()));
    try {
      return await ask(wait, Date.now());
    } catch (err) {
      if (!(err instanceof HeldError) || (bounded && Date.now() >= until)) throw err;
      opts.signal?.throwIfAborted();
    }
  }
}

function leaseOf(ms: number): number {
  if (!Number.isSafeInteger(ms) || ms <= 0) throw new InvalidInputError('leaseMs must be a positive integer', 'leaseMs');
  return ms;
}

function headersOf(resource: string, grant: Grant): Record<string, string> {
  const h: Record<string, string> = { [HEADER_TOKEN]: grant.fencing.token.toString(), [HEADER_RESOURCE]: resource };
  if (grant.fencing.signature) h[HEADER_SIGNATURE] = grant.fencing.signature;
  return h;
}

// ---- semaphores ----

/** GET /v1/semaphores/{name}. */
export interface SemaphoreState {
  name: string;
  permits: number;
  held: { slot: number; resourceId: string; holder: string; token: bigint; expiresAt: string }[];
  free: number;
  waiters: number;
}

/**
 * Semaphore is a semaphore of permits fenced slots: slot i is the ordinary
 * lock name#i, with its own token counter, so a guard fences the work done
 * under a permit by the slot's resource id and token.
 */
export class Semaphore {
  readonly #leaseMs: number;

  constructor(
    readonly client: Client,
    readonly name: string,
    readonly permits: number,
    readonly holder: string,
    leaseMs: number,
  ) {
    validateResourceId(name, 'name');
    if (Buffer.byteLength(name) > MAX_SEMAPHORE_NAME || name.includes('#')) {
      throw new InvalidInputError(`a semaphore name is at most ${MAX_SEMAPHORE_NAME} bytes and has no '#'`, 'name');
    }
    if (!Number.isSafeInteger(permits) || permits < 1 || permits > MAX_PERMITS) throw new InvalidInputError(`permits must be between 1 and ${MAX_PERMITS}`, 'permits');
    validateHolderId(holder);
    this.#leaseMs = leaseOf(leaseMs);
  }

  /**
   * acquire waits for a free slot (first come first served) and returns
   * its permit; with waitMs, a HeldError ("no permit free") once the wait
   * is over. A holder may hold several permits, one slot each. A permits
   * count other than the semaphore's is a FenceviewError (409 "permits
   * mismatch", body.permits the semaphore's).
   */
  async acquire(opts: HoldOptions & { lockDelayMs?: number } = {}): Promise<Permit> {
    const lease = leaseOf(opts.leaseMs ?? this.#leaseMs);
    return waitFor(opts, async (waitMs, sent) => {
      const a = await this.client[rawCall]('semaphore-acquire', 'POST', `/v1/semaphores/${encodeURIComponent(this.name)}/acquire`,
        { name: this.name, holder: this.holder, permits: this.permits, leaseMs: lease, waitMs: waitMs > 0 ? waitMs : undefined, lockDelayMs: opts.lockDelayMs || undefined }, opts.signal);
      if (a.status === 200) return new Permit(this.client, this.name, grantOf(a.body), Number((a.body as { slot?: unknown }).slot), lease, opts.watchdog ?? true, sent);
      throw errorFor(a.status, a.body, { resource: this.name, conflict: 'lock-held', permits: this.permits });
    });
  }

  /** tryAcquire is acquire waiting at most waitMs (default 0): the permit, or null when none came free. */
  async tryAcquire(opts: HoldOptions & { lockDelayMs?: number } = {}): Promise<Permit | null> {
    try {
      return await this.acquire({ ...opts, waitMs: opts.waitMs ?? 0 });
    } catch (err) {
      if (err instanceof HeldError) return null;
      throw err;
    }
  }

  /** state is the semaphore's slots as the server sees them, null when it was never acquired. */
  state(signal?: AbortSignal): Promise<SemaphoreState | null> {
    return this.client.semaphoreState(this.name, signal);
  }
}

/**
 * Permit is one slot of a semaphore, held: renewed by a watchdog on the
 * slot's lock until released; signal aborts when its lease is lost.
 */
export class Permit {
  /** The slot's lock, e.g. "jobs#3": the resource a guard fences by. */
  readonly resource: string;
  #grant: Grant;
  readonly #lease: Lease;

  constructor(
    readonly client: Client,
    readonly semaphore: string,
    grant: Grant,
    readonly slot: number,
    leaseMs: number,
    watchdog: boolean,
    sent: number,
  ) {
    this.resource = grant.resourceId;
    this.#grant = grant;
    this.#lease = new Lease(this.resource, () => this.token, leaseMs, watchdog ? async (ms, signal) => {
      this.#grant = await this.client.renewGrant(this.resource, this.holder, ms, signal);
    } : null, sent);
  }

  get holder(): string {
    return this.#grant.holder;
  }

  /** The slot's token for this permit (a bigint). */
  get token(): bigint {
    return this.#grant.fencing.token;
  }

  get grant(): Grant {
    return this.#grant;
  }

  /** Aborted the moment the lease is lost or the permit released. */
  get signal(): AbortSignal {
    return this.#lease.signal;
  }

  get held(): boolean {
    return this.#lease.held;
  }

  /** The fencing headers of a request made under the permit. */
  headers(): Record<string, string> {
    return headersOf(this.resource, this.#grant);
  }

  /** release gives the slot back; the watchdog stops and signal aborts with ReleasedError. */
  async release(): Promise<void> {
    const a = await this.client[rawCall]('semaphore-release', 'POST', `/v1/semaphores/${encodeURIComponent(this.semaphore)}/release`,
      { name: this.semaphore, holder: this.holder, slot: this.slot });
    if (a.status !== 200) {
      const err = errorFor(a.status, a.body, { resource: this.resource, conflict: 'not-held' });
      if (err instanceof NotHeldError) this.#lease.lose('it was not held when released');
      throw err;
    }
    this.#lease.released();
  }
}

// ---- multi-locks ----

export interface LockAllOptions extends HoldOptions {
  holder: string;
  /** The lock-delay of every lock (see AcquireOptions.lockDelayMs). */
  lockDelayMs?: number;
}

/**
 * MultiLock holds several locks taken in one atomic change (Redisson's
 * RedissonMultiLock, fenced): each with its own token, renewed together;
 * signal aborts when any of their leases is lost.
 */
export class MultiLock {
  readonly #lease: Lease;
  #grants: Grant[];

  private constructor(
    readonly client: Client,
    readonly resources: readonly string[],
    readonly holder: string,
    grants: Grant[],
    leaseMs: number,
    watchdog: boolean,
    sent: number,
  ) {
    this.#grants = grants;
    this.#lease = new Lease(resources.join(', '), () => grants[0]!.fencing.token, leaseMs, watchdog ? (ms, signal) => this.#renew(ms, signal) : null, sent);
  }

  static async acquire(client: Client, resources: string[], opts: LockAllOptions): Promise<MultiLock> {
    if (!Array.isArray(resources) || resources.length < 1 || resources.length > MAX_LOCK_ALL) throw new InvalidInputError(`lockAll takes 1 to ${MAX_LOCK_ALL} resources`, 'resources');
    const ids = resources.map((r) => validateResourceId(r, 'resources'));
    if (new Set(ids).size !== ids.length) throw new InvalidInputError('lockAll: a resource is listed twice', 'resources');
    const holder = validateHolderId(opts.holder);
    const lease = leaseOf(opts.leaseMs ?? client.leaseMs);
    return waitFor(opts, async (waitMs, sent) => {
      const a = await client[rawCall]('acquire-all', 'POST', '/v1/locks/acquire-all',
        { resources: ids, holder, leaseMs: lease, waitMs: waitMs > 0 ? waitMs : undefined, lockDelayMs: opts.lockDelayMs || undefined }, opts.signal);
      if (a.status === 200) {
        const grants = ((a.body as { grants?: JSONValue[] }).grants ?? []).map(grantOf);
        if (grants.length !== ids.length) throw new FenceviewError('fenceview: acquire-all answered another number of grants', 200, a.body);
        return new MultiLock(client, ids, holder, grants, lease, opts.watchdog ?? true, sent);
      }
      throw errorFor(a.status, a.body, { resource: ids.join(', '), conflict: 'lock-held' });
    });
  }

  // Every lock's renewal at once; the first refused one ends them all.
  async #renew(ms: number, signal: AbortSignal): Promise<void> {
    this.#grants = await Promise.all(this.resources.map((r) => this.client.renewGrant(r, this.holder, ms, signal)));
  }

  /** Each resource's token, in the order asked. */
  get tokens(): Map<string, bigint> {
    return new Map(this.#grants.map((g) => [g.resourceId, g.fencing.token]));
  }

  /** The token of one of the locks. */
  token(resource: string): bigint {
    const g = this.#grants.find((x) => x.resourceId === resource);
    if (g === undefined) throw new InvalidInputError(`${resource} is not one of this multi-lock's resources`);
    return g.fencing.token;
  }

  get grants(): readonly Grant[] {
    return this.#grants;
  }

  /** The fencing headers for a request to one of the resources. */
  headers(resource: string): Record<string, string> {
    this.token(resource);
    return headersOf(resource, this.#grants.find((x) => x.resourceId === resource)!);
  }

  /** Aborted the moment any lease is lost, or all are released. */
  get signal(): AbortSignal {
    return this.#lease.signal;
  }

  get held(): boolean {
    return this.#lease.held;
  }

  /** release gives up one hold of each lock; the watchdog stops. notHeld lists those already lost. */
  async release(): Promise<{ released: string[]; notHeld: string[] }> {
    const a = await this.client[rawCall]('release-all', 'POST', '/v1/locks/release-all', { resources: this.resources, holder: this.holder });
    if (a.status !== 200) throw errorFor(a.status, a.body, { resource: this.resources.join(', '), conflict: 'not-held' });
    const b = a.body as { released?: string[]; notHeld?: string[] };
    if ((b.notHeld ?? []).length > 0) this.#lease.lose(`not held when released: ${b.notHeld!.join(', ')}`);
    else this.#lease.released();
    return { released: b.released ?? [], notHeld: b.notHeld ?? [] };
  }
}

// ---- elections ----

export interface ElectionOptions {
  /** This candidate's id; default a random one. */
  candidate?: string;
  /** The leadership's lease; default the client's. */
  leaseMs?: number;
}

/** An election's leader. The term is the token of the election's lock. */
export interface Leader {
  candidate: string;
  value: string;
  term: bigint;
  since: string;
  expiresAt: string;
}

/**
 * Election is one candidate's view of an election (etcd's
 * concurrency.Election): the leader is the holder of the lock name, and
 * the term is its token, so a leader fences its writes with its term.
 */
export class Election {
  readonly #leaseMs: number;
  #lease: Lease | null = null;
  #leader: Leader | null = null;
  #grant: { token: bigint; signature?: string } | null = null;

  constructor(
    readonly client: Client,
    readonly name: string,
    readonly candidate: string,
    leaseMs: number,
  ) {
    this.#leaseMs = leaseOf(leaseMs);
  }

  #path(op: string): string {
    return `/v1/elections/${encodeURIComponent(this.name)}/${op}`;
  }

  /**
   * campaign waits until this candidate is elected (first come first
   * served) and returns the term; with waitMs, a HeldError naming the
   * leader once the wait is over. A watchdog renews the leadership; signal
   * aborts when it is lost. Campaigning while leading keeps the term and
   * sets the value.
   */
  async campaign(value = '', opts: HoldOptions = {}): Promise<bigint> {
    if (Buffer.byteLength(value) > MAX_VALUE) throw new InvalidInputError(`an election value is at most ${MAX_VALUE} bytes`, 'value');
    const lease = leaseOf(opts.leaseMs ?? this.#leaseMs);
    return waitFor(opts, async (waitMs, sent) => {
      const a = await this.client[rawCall]('campaign', 'POST', this.#path('campaign'),
        { name: this.name, candidate: this.candidate, value, leaseMs: lease, waitMs: waitMs > 0 ? waitMs : undefined }, opts.signal);
      if (a.status !== 200) throw errorFor(a.status, a.body, { resource: this.name, conflict: 'lock-held' });
      const b = this.#elected(a.status, a.body);
      if (this.#lease === null || !this.#lease.held) {
        this.#lease = new Lease(this.name, () => this.term, lease, (opts.watchdog ?? true) ? (ms, signal) => this.#renew(ms, signal) : null, sent);
      }
      return b.leader.term;
    });
  }

  #elected(status: number, body: JSONValue): { leader: Leader; fencing: { token: bigint; signature?: string } } {
    if (status !== 200) throw errorFor(status, body, { resource: this.name, conflict: 'not-leader' });
    const b = body as unknown as { leader: Leader; fencing: { token: bigint; signature?: string } };
    if (typeof b?.leader?.term !== 'bigint' || typeof b.fencing?.token !== 'bigint') throw new FenceviewError('fenceview: an election answer without a term', status, body);
    this.#leader = b.leader;
    this.#grant = b.fencing;
    return b;
  }

  async #renew(ms: number, signal: AbortSignal): Promise<void> {
    const a = await this.client[rawCall]('election-renew', 'POST', this.#path('renew'), { name: this.name, candidate: this.candidate, leaseMs: ms }, signal);
    this.#elected(a.status, a.body);
  }

  /** proclaim changes the leader's value, same term; NotHeldError ("not leader") for anyone else. */
  async proclaim(value: string): Promise<Leader> {
    if (Buffer.byteLength(value) > MAX_VALUE) throw new InvalidInputError(`an election value is at most ${MAX_VALUE} bytes`, 'value');
    const a = await this.client[rawCall]('proclaim', 'POST', this.#path('proclaim'), { name: this.name, candidate: this.candidate, value });
    if (a.status !== 200) throw errorFor(a.status, a.body, { resource: this.name, conflict: 'not-leader' });
    this.#leader = (a.body as unknown as { leader: Leader }).leader;
    return this.#leader;
  }

  /** resign gives up the leadership (and every hold of its lock); signal aborts with ReleasedError. A second resign is NotLeaderError; a leadership already lost is given up quietly. */
  async resign(): Promise<void> {
    // A leadership lost while held (signal already aborted with
    // LeaseLostError) has nothing left to give up. A second resign, or one
    // of a leadership never won, is the server's NotLeaderError, as a
    // second release is NotHeldError.
    if (this.#lease !== null && !this.#lease.held && this.#lease.signal.reason instanceof LeaseLostError) return;
    const a = await this.client[rawCall]('resign', 'POST', this.#path('resign'), { name: this.name, candidate: this.candidate });
    if (a.status !== 200) {
      const err = errorFor(a.status, a.body, { resource: this.name, conflict: 'not-leader' });
      if (err instanceof NotHeldError) this.#lease?.lose('it was not leading when it resigned');
      throw err;
    }
    this.#lease?.released();
  }

  /** leader is who leads now, null when nobody does. */
  leader(signal?: AbortSignal): Promise<Leader | null> {
    return this.client.leader(this.name, signal);
  }

  /** Whether this candidate leads, as far as this client knows. */
  get leading(): boolean {
    return this.#lease?.held ?? false;
  }

  /** The term of this candidate's latest leadership (0n before the first): its fencing token. */
  get term(): bigint {
    return this.#grant?.token ?? 0n;
  }

  /** The fencing headers of a write made as leader. */
  headers(): Record<string, string> {
    const h: Record<string, string> = { [HEADER_TOKEN]: this.term.toString(), [HEADER_RESOURCE]: this.name };
    if (this.#grant?.signature) h[HEADER_SIGNATURE] = this.#grant.signature;
    return h;
  }

  /** Aborted the moment the leadership is lost or resigned; already aborted before a campaign won. */
  get signal(): AbortSignal {
    return this.#lease?.signal ?? AbortSignal.abort(new Error('fenceview: not elected yet'));
  }

  /**
   * observe yields the election's leader changes in order, as etcd's
   * Observe: first the leader at the time (null when nobody leads), then a
   * Leader at every new term and every proclaimed value, and null when the
   * leader resigns or its lease runs out. It follows the event stream and,
   * when the stream breaks, resumes after the last event seen, so no change
   * is skipped. It ends when signal aborts.
   */
  async *observe(opts: { signal?: AbortSignal } = {}): AsyncGenerator<Leader | null> {
    let cur: Leader | null = null;
    let sent = false;
    let seq = 0n; // the last event seen; 0n: none yet
    let backoff = 100;
    const signal = opts.signal;
    while (!signal?.aborted) {
      const stream = this.client.events(seq === 0n ? { resource: this.name } : { resource: this.name, since: seq });
      const stop = () => stream.close();
      signal?.addEventListener('abort', stop, { once: true });
      try {
        try {
          await stream.opened;
        } catch (err) {
          if (!sent) throw err; // the first connection: bad auth, a bad name
          await new Promise((r) => setTimeout(r, backoff));
          backoff = Math.min(2 * backoff, 5_000);
          continue;
        }
        backoff = 100;
        if (seq === 0n) {
          // Subscribed first, then asked: a change after the answer comes on
          // the stream, and one before it is older than what it says.
          const l = await this.leader(signal);
          if (!sent || !sameLeader(l, cur)) {
            cur = l;
            sent = true;
            yield cur;
          }
        }
        for (let e = await stream.next(); e !== null; e = await stream.next()) {
          if (e.seq > seq) seq = e.seq;
          const next = applyEvent(cur, e);
          if (next !== undefined) {
            cur = next;
            yield cur;
          }
        }
        if (stream.error === null && !signal?.aborted) return; // closed by the server cleanly: it is shutting down
      } finally {
        signal?.removeEventListener('abort', stop);
        stream.close();
      }
      // A broken stream is resumed after a pause, so a server that keeps
      // dropping it is not called in a tight loop.
      if (!signal?.aborted) await new Promise((r) => setTimeout(r, 100));
    }
  }
}

function sameLeader(a: Leader | null, b: Leader | null): boolean {
  return a === null || b === null ? a === b : a.candidate === b.candidate && a.term === b.term && a.value === b.value;
}

/** applyEvent is the leader after e, or undefined when e changes nothing (an event older than what the observer knows). */
function applyEvent(cur: Leader | null, e: FenceEvent): Leader | null | undefined {
  const term = cur?.term ?? 0n;
  const token = e.token ?? 0n;
  switch (e.type) {
    case 'grant':
    case 'proclaim':
      if (token > term) return { candidate: e.holder ?? '', value: e.value ?? '', term: token, since: e.at, expiresAt: '' };
      if (e.type === 'proclaim' && cur !== null && token === term && (e.value ?? '') !== cur.value) return { ...cur, value: e.value ?? '' };
      return undefined;
    case 'release':
    case 'expire':
      return cur !== null && token >= term ? null : undefined;
    default:
      return undefined;
  }
}
