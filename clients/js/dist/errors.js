// The errors the client throws. A refusal by a guard is a Decision, not an
// error; these are for calls that did not do what they were asked.
/** An answer of the server that is not a success: status and its JSON body. */
export class FenceviewError extends Error {
    status;
    body;
    constructor(message, status, body) {
        super(message);
        this.status = status;
        this.body = body;
        this.name = 'FenceviewError';
    }
}
/** acquire found the lock held by another holder (409 "lock held"). */
export class HeldError extends FenceviewError {
    /** The holder that has it, when the server said. */
    holder;
    /** When its lease runs out (RFC 3339), when the server said. */
    expiresAt;
    constructor(resource, body) {
        const b = (body ?? {});
        const holder = typeof b.holder === 'string' ? b.holder : null;
        super(`fenceview: ${resource} is held${holder ? ` by ${holder}` : ''}`, 409, body);
        this.name = 'HeldError';
        this.holder = holder;
        this.expiresAt = typeof b.expiresAt === 'string' ? b.expiresAt : null;
    }
}
/** renew or release by a holder that does not hold the lock (any more). */
export class NotHeldError extends FenceviewError {
    constructor(resource, body) {
        const msg = body?.error;
        super(`fenceview: ${resource}: ${typeof msg === 'string' ? msg : 'lock not held'}`, 409, body);
        this.name = 'NotHeldError';
    }
}
/** The reason of lock.signal when the lease was lost: expired, force-expired, or not renewable. */
export class LeaseLostError extends Error {
    resource;
    token;
    constructor(resource, token, why) {
        super(`fenceview: the lease of ${resource} (token ${token}) is lost: ${why}`);
        this.resource = resource;
        this.token = token;
        this.name = 'LeaseLostError';
    }
}
/** The reason of lock.signal after the last release. */
export class ReleasedError extends Error {
    resource;
    constructor(resource) {
        super(`fenceview: ${resource} was released`);
        this.resource = resource;
        this.name = 'ReleasedError';
    }
}
/** The server could not be reached, or the RPC stream broke before an answer. */
export class ConnectionError extends Error {
    constructor(message, options) {
        super(message, options);
        this.name = 'ConnectionError';
    }
}
