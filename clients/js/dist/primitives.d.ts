import type { Client, Grant } from './client.js';
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
/** GET /v1/semaphores/{name}. */
export interface SemaphoreState {
    name: string;
    permits: number;
    held: {
        slot: number;
        resourceId: string;
        holder: string;
        token: bigint;
        expiresAt: string;
    }[];
    free: number;
    waiters: number;
}
/**
 * Semaphore is a semaphore of permits fenced slots: slot i is the ordinary
 * lock name#i, with its own token counter, so a guard fences the work done
 * under a permit by the slot's resource id and token.
 */
export declare class Semaphore {
    #private;
    readonly client: Client;
    readonly name: string;
    readonly permits: number;
    readonly holder: string;
    constructor(client: Client, name: string, permits: number, holder: string, leaseMs: number);
    /**
     * acquire waits for a free slot (first come first served) and returns
     * its permit; with waitMs, a HeldError ("no permit free") once the wait
     * is over. A holder may hold several permits, one slot each. A permits
     * count other than the semaphore's is a FenceviewError (409 "permits
     * mismatch", body.permits the semaphore's).
     */
    acquire(opts?: HoldOptions & {
        lockDelayMs?: number;
    }): Promise<Permit>;
    /** tryAcquire is acquire waiting at most waitMs (default 0): the permit, or null when none came free. */
    tryAcquire(opts?: HoldOptions & {
        lockDelayMs?: number;
    }): Promise<Permit | null>;
    /** state is the semaphore's slots as the server sees them, null when it was never acquired. */
    state(signal?: AbortSignal): Promise<SemaphoreState | null>;
}
/**
 * Permit is one slot of a semaphore, held: renewed by a watchdog on the
 * slot's lock until released; signal aborts when its lease is lost.
 */
export declare class Permit {
    #private;
    readonly client: Client;
    readonly semaphore: string;
    readonly slot: number;
    /** The slot's lock, e.g. "jobs#3": the resource a guard fences by. */
    readonly resource: string;
    constructor(client: Client, semaphore: string, grant: Grant, slot: number, leaseMs: number, watchdog: boolean, sent: number);
    get holder(): string;
    /** The slot's token for this permit (a bigint). */
    get token(): bigint;
    get grant(): Grant;
    /** Aborted the moment the lease is lost or the permit released. */
    get signal(): AbortSignal;
    get held(): boolean;
    /** The fencing headers of a request made under the permit. */
    headers(): Record<string, string>;
    /** release gives the slot back; the watchdog stops and signal aborts with ReleasedError. */
    release(): Promise<void>;
}
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
export declare class MultiLock {
    #private;
    readonly client: Client;
    readonly resources: readonly string[];
    readonly holder: string;
    private constructor();
    static acquire(client: Client, resources: string[], opts: LockAllOptions): Promise<MultiLock>;
    /** Each resource's token, in the order asked. */
    get tokens(): Map<string, bigint>;
    /** The token of one of the locks. */
    token(resource: string): bigint;
    get grants(): readonly Grant[];
    /** The fencing headers for a request to one of the resources. */
    headers(resource: string): Record<string, string>;
    /** Aborted the moment any lease is lost, or all are released. */
    get signal(): AbortSignal;
    get held(): boolean;
    /** release gives up one hold of each lock; the watchdog stops. notHeld lists those already lost. */
    release(): Promise<{
        released: string[];
        notHeld: string[];
    }>;
}
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
export declare class Election {
    #private;
    readonly client: Client;
    readonly name: string;
    readonly candidate: string;
    constructor(client: Client, name: string, candidate: string, leaseMs: number);
    /**
     * campaign waits until this candidate is elected (first come first
     * served) and returns the term; with waitMs, a HeldError naming the
     * leader once the wait is over. A watchdog renews the leadership; signal
     * aborts when it is lost. Campaigning while leading keeps the term and
     * sets the value.
     */
    campaign(value?: string, opts?: HoldOptions): Promise<bigint>;
    /** proclaim changes the leader's value, same term; NotHeldError ("not leader") for anyone else. */
    proclaim(value: string): Promise<Leader>;
    /** resign gives up the leadership (and every hold of its lock); signal aborts with ReleasedError. */
    resign(): Promise<void>;
    /** leader is who leads now, null when nobody does. */
    leader(signal?: AbortSignal): Promise<Leader | null>;
    /** Whether this candidate leads, as far as this client knows. */
    get leading(): boolean;
    /** The term of this candidate's latest leadership (0n before the first): its fencing token. */
    get term(): bigint;
    /** The fencing headers of a write made as leader. */
    headers(): Record<string, string>;
    /** Aborted the moment the leadership is lost or resigned; already aborted before a campaign won. */
    get signal(): AbortSignal;
    /**
     * observe yields the election's leader changes in order, as etcd's
     * Observe: first the leader at the time (null when nobody leads), then a
     * Leader at every new term and every proclaimed value, and null when the
     * leader resigns or its lease runs out. It follows the event stream and,
     * when the stream breaks, resumes after the last event seen, so no change
     * is skipped. It ends when signal aborts.
     */
    observe(opts?: {
        signal?: AbortSignal;
    }): AsyncGenerator<Leader | null>;
}
