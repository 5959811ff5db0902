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
/**
 * acquire found the lock held by another holder (409 "lock held"); also a
 * semaphore with no permit free, a multi-lock with one of its locks held
 * (held lists them) and a campaign while another leads (holder is the
 * leader).
 */
export class HeldError extends FenceviewError {
    /** The holder that has it, when the server said. */
    holder;
    /** When its lease runs out (RFC 3339), when the server said. */
    expiresAt;
    /** A multi-lock's locks held by others, in the server's order; [] otherwise. */
    held;
    constructor(resource, body, message) {
        const b = (body ?? {});
        const held = Array.isArray(b.held) ? b.held : [];
        const who = b.holder ?? b.leader?.candidate ?? held[0]?.holder;
        const until = b.expiresAt ?? b.leader?.expiresAt ?? held[0]?.expiresAt;
        const holder = typeof who === 'string' ? who : null;
        super(message ?? `fenceview: ${resource} is held${holder ? ` by ${holder}` : ''}`, 409, body);
        this.name = 'HeldError';
        this.holder = holder;
        this.expiresAt = typeof until === 'string' ? until : null;
        this.held = held;
    }
}
/**
 * acquire found the lock free but in its lock-delay (409 "lock delay"): a
 * lease granted with lockDelayMs ran out without a release, and nobody may
 * take the lock before availableAt. A HeldError, so tryAcquire answers null
 * and a waiting acquire keeps waiting.
 */
export class LockDelayError extends HeldError {
    /** When the delay ends (RFC 3339). */
    availableAt;
    constructor(resource, body) {
        const at = body?.availableAt;
        const availableAt = typeof at === 'string' ? at : '';
        super(resource, body, `fenceview: ${resource} is in its lock-delay until ${availableAt}`);
        this.name = 'LockDelayError';
        this.availableAt = availableAt;
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
