/** An answer of the server that is not a success: status and its JSON body. */
export declare class FenceviewError extends Error {
    readonly status: number;
    readonly body: unknown;
    constructor(message: string, status: number, body: unknown);
}
/** acquire found the lock held by another holder (409 "lock held"). */
export declare class HeldError extends FenceviewError {
    /** The holder that has it, when the server said. */
    readonly holder: string | null;
    /** When its lease runs out (RFC 3339), when the server said. */
    readonly expiresAt: string | null;
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
