import { type JSONValue } from './json.js';
import { FenceviewError, HeldError } from './errors.js';
import { EventStream } from './events.js';
import { Election, MultiLock, Semaphore, type ElectionOptions, type LockAllOptions, type Leader, type SemaphoreState } from './primitives.js';
import { type Decision } from './token.js';
import { Verifier, type SigningKey, type VerifierOptions } from './verifier.js';
export interface ClientOptions {
    /** A key's secret (or the admin token), sent as Authorization: Bearer. */
    key?: string;
    /** More base URLs of the same cluster, tried in turn when one cannot be reached or has no leader (503). */
    urls?: string[];
    /** The fetch to use; default node:http over keep-alive connections, which served about four times the requests per second of the global fetch here. */
    fetch?: typeof fetch;
    /** Carry lock operations and fences over the RPC stream (one websocket) instead of one HTTP request each. */
    rpc?: boolean;
    /** The lease of locks that do not set their own; default 30 s. */
    leaseMs?: number;
}
/** The fencing envelope of a grant: the seed's token scope, signed. */
export interface Fencing {
    token: bigint;
    issuer: string;
    scope: string;
    issuedAt: string;
    keyId?: string;
    signature?: string;
}
/** A grant of acquire or renew. */
export interface Grant {
    resourceId: string;
    holder: string;
    holdCount: number;
    expiresAt: string;
    leaseMs?: number;
    fencing: Fencing;
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
/** busyError is the error of a 409 to an acquire: a lock-delay, or held. */
export declare function busyError(resource: string, body: JSONValue): HeldError;
export declare function errorOf(status: number, body: JSONValue): FenceviewError;
/**
 * Client talks to one fenceview server (or the nodes of one cluster).
 *
 *   const client = new Client('http://127.0.0.1:8080', { key });
 *   const lock = client.lock('inventory:42', { holder: 'worker-7' });
 *   const token = await lock.acquire();      // a bigint; a watchdog renews
 *   await fetch(url, { signal: lock.signal, headers: lock.headers() });
 *   await lock.release();
 */
export declare class Client {
    #private;
    readonly urls: string[];
    readonly leaseMs: number;
    constructor(url: string, opts?: ClientOptions);
    /** Whether lock operations go over the RPC stream. */
    get usesRpc(): boolean;
    /**
     * v3 carries one of contract v3's operations: over the RPC stream as op
     * (the route's {name} in fields), else as the route.
     */
    v3(op: string, method: string, path: string, fields: Record<string, unknown>, signal?: AbortSignal): Promise<{
        status: number;
        body: JSONValue;
    }>;
    /** semaphore returns the semaphore name of permits slots (name#0 .. name#<permits-1>), whose permits go to holder (default a random id). */
    semaphore(name: string, permits: number, opts?: {
        holder?: string;
        leaseMs?: number;
    }): Semaphore;
    /** semaphoreState is GET /v1/semaphores/{name}, or null when it was never acquired. */
    semaphoreState(name: string, signal?: AbortSignal): Promise<SemaphoreState | null>;
    /** setPermits changes a semaphore's permits (admin); held slots above the new count stay held until released. */
    setPermits(name: string, permits: number): Promise<SemaphoreState>;
    /**
     * lockAll takes every lock of resources for holder at once, or none,
     * waiting (without holding any) until all are free together; with waitMs,
     * a HeldError listing the held ones when the wait runs out. One watchdog
     * renews them all; the handle's signal aborts when any lease is lost.
     */
    lockAll(resources: string[], opts: LockAllOptions): Promise<MultiLock>;
    /** tryLockAll is lockAll waiting at most waitMs (default 0): null when one of the locks stayed held. */
    tryLockAll(resources: string[], opts: LockAllOptions): Promise<MultiLock | null>;
    /** election returns the election name (its lock is the resource name) for candidate (default a random id). */
    election(name: string, opts?: ElectionOptions): Election;
    /** leader is the election's leader now, or null when nobody leads (GET /v1/elections/{name}). */
    leader(name: string, signal?: AbortSignal): Promise<Leader | null>;
    /**
     * events opens the event stream (/v1/events), optionally of one resource
     * and resumed after the event numbered since; read it with next() and
     * close it when done. Its opened promise resolves once the server
     * subscribed it: every event committed after that comes.
     */
    events(opts?: {
        resource?: string;
        since?: bigint;
    }): EventStream;
    /** lock returns the lock on resource for holder. Ids are checked here. */
    lock(resource: string, opts: {
        holder: string;
        leaseMs?: number;
    }): Lock;
    /** grant asks for the lock once: a Grant, or HeldError (LockDelayError in a lock-delay) when it stayed held through waitMs. */
    grant(resource: string, holder: string, leaseMs: number, waitMs: number, signal?: AbortSignal, lockDelayMs?: number): Promise<Grant>;
    /** renewGrant extends holder's lease; NotHeldError when it is no longer held. */
    renewGrant(resource: string, holder: string, leaseMs?: number, signal?: AbortSignal): Promise<Grant>;
    /** releaseHold releases one hold of holder and returns the holds left. */
    releaseHold(resource: string, holder: string, signal?: AbortSignal): Promise<number>;
    /** state is the lock's state (GET /v1/locks/{resource}). */
    state(resource: string, signal?: AbortSignal): Promise<LockState>;
    /**
     * fence presents a token to the server's own guard. A refusal is a
     * FenceResult with accepted false (409), not an error.
     */
    fence(resource: string, token: bigint, opts?: {
        signature?: string;
        source?: string;
        signal?: AbortSignal;
    }): Promise<FenceResult>;
    /** report records decisions made by guards elsewhere (POST /v1/decisions); returns how many were recorded. */
    report(decisions: DecisionReport[], signal?: AbortSignal): Promise<number>;
    /** resource is GET /v1/resources/{resource}, or null when the server never saw it. */
    resource(resource: string, signal?: AbortSignal): Promise<ResourceInfo | null>;
    /** resources walks GET /v1/resources page by page. */
    resources(opts?: {
        prefix?: string;
        pageSize?: number;
        signal?: AbortSignal;
    }): AsyncGenerator<ResourceInfo>;
    /** highWaterMarks maps every resource the server knows (with prefix) to its mark, for seeding a guard. */
    highWaterMarks(opts?: {
        prefix?: string;
        signal?: AbortSignal;
    }): Promise<Map<string, bigint>>;
    /** rejections is one page of refused writes, newest first (GET /v1/rejections). */
    rejections(q?: {
        resource?: string;
        reason?: string;
        source?: string;
        limit?: number;
        cursor?: string;
    }, signal?: AbortSignal): Promise<{
        rejections: Rejection[];
        next: string | null;
    }>;
    /** signingKeys is GET /v1/signing-keys. */
    signingKeys(signal?: AbortSignal): Promise<{
        issuer: string;
        keys: SigningKey[];
    }>;
    /** verifier returns a Verifier of this server's signing keys, loaded. */
    verifier(opts?: VerifierOptions): Promise<Verifier>;
    /** guardModule fetches the server's WebAssembly guard (GET /guard.wasm). */
    guardModule(signal?: AbortSignal): Promise<Uint8Array>;
    /** forceExpire frees the lock whatever its state (admin). */
    forceExpire(resource: string): Promise<void>;
    /** reset raises resource's token counter to at least floor (admin): the next grant takes floor+1. */
    reset(resource: string, floor: bigint): Promise<{
        lastToken: bigint;
        highWaterMark: bigint;
        nextToken: bigint;
    }>;
    /** rotateSigningKey makes a new active signing key (admin). */
    rotateSigningKey(): Promise<SigningKey>;
    /** removeSigningKey removes an inactive key: what it signed stops verifying (admin). */
    removeSigningKey(keyId: string): Promise<void>;
    /** close ends the RPC stream; the client makes no more calls. */
    close(): void;
}
export declare function grantOf(body: JSONValue): Grant;
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
export declare class Lock {
    #private;
    readonly client: Client;
    readonly resource: string;
    readonly holder: string;
    constructor(client: Client, resource: string, holder: string, leaseMs: number);
    /** The latest grant's token (0n before the first). */
    get token(): bigint;
    /** The latest grant's signature (base64url), if the server signs. */
    get signature(): string | undefined;
    /** The latest grant. */
    get grant(): Grant | null;
    /** Whether the lock is held, as far as this client knows. */
    get held(): boolean;
    /** Aborted the moment the lease is lost or the lock released; the reason says which. */
    get signal(): AbortSignal;
    /** The fencing headers for a request made under the lock. */
    headers(): Record<string, string>;
    /**
     * acquire waits until the lock is granted and returns its token. With
     * waitMs it waits at most that long and then throws HeldError. Waiting
     * happens on the server, first come first served, in chunks of a minute.
     */
    acquire(opts?: AcquireOptions): Promise<bigint>;
    /** tryAcquire asks once, waiting on the server up to waitMs (default 0): the token, or null when the lock stayed held. */
    tryAcquire(opts?: AcquireOptions): Promise<bigint | null>;
    /** renew extends the lease now (the watchdog does this on its own); NotHeldError, and the signal aborted, when it is lost. */
    renew(opts?: {
        leaseMs?: number;
    }): Promise<Grant>;
    /** release releases one hold; at the last the watchdog stops and signal aborts with ReleasedError. */
    release(): Promise<number>;
    /** The holds of the current grant period (re-entrant grants count). */
    get holdCount(): number;
}
