/** An answer of the server that is not a success: status and its JSON body. */
export declare class FenceviewError extends Error {
    readonly status: number;
    readonly body: unknown;
    constructor(message: string, status: number, body: unknown);
}
/** One lock of a multi-lock that another holder has (or that is in its lock-delay). */
export interface HeldLock {
    resourceId: string;
    holder: string | null;
    expiresAt?: string;
    availableAt?: string;
}
/**
 * acquire found the lock held by another holder (409 "lock held"); also a
 * semaphore with no permit free, a multi-lock with one of its locks held
 * (held lists them) and a campaign while another leads (holder is the
 * leader).
 */
export declare class HeldError extends FenceviewError {
    /** The holder that has it, when the server said. */
    readonly holder: string | null;
    /** When its lease runs out (RFC 3339), when the server said. */
    readonly expiresAt: string | null;
    /** A multi-lock's locks held by others, in the server's order; [] otherwise. */
    readonly held: HeldLock[];
    constructor(resource: string, body: unknown, message?: string);
}
/**
 * acquire found the lock free but in its lock-delay (409 "lock delay"): a
 * lease granted with lockDelayMs ran out without a release, and nobody may
 * take the lock before availableAt. A HeldError, so tryAcquire answers null
 * and a waiting acquire keeps waiting.
 */
export declare class LockDelayError extends HeldError {
    /** When the delay ends (RFC 3339). */
    readonly availableAt: string;
    constructor(resource: string, body: unknown);
}
/** renew or release by a holder that does not hold the lock (any more). */
export declare class NotHeldError extends FenceviewError {
    constructor(resource: string, body: unknown);
}
/** The reason of lock.signal when the lease was lost: expired, force-expired, or not renewable. */
export declare class LeaseLostError extends Error {
    readonly resource: string;
    readonly token: bigint;
    constructor(resource: string, token: bigint, why: string);
}
/** The reason of lock.signal after the last release. */
export declare class ReleasedError extends Error {
    readonly resource: string;
    constructor(resource: string);
}
/** The server could not be reached, or the RPC stream broke before an answer. */
export declare class ConnectionError extends Error {
    constructor(message: string, options?: {
        cause?: unknown;
    });
}
