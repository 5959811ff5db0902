// The errors the client throws. A refusal by a guard is a Decision, not an
// error; these are for calls that did not do what they were asked.

/** An answer of the server that is not a success: status and its JSON body. */
export class FenceviewError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly body: unknown,
  ) {
    super(message);
    this.name = 'FenceviewError';
  }
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
export class HeldError extends FenceviewError {
  /** The holder that has it, when the server said. */
  readonly holder: string | null;
  /** When its lease runs out (RFC 3339), when the server said. */
  readonly expiresAt: string | null;
  /** A multi-lock's locks held by others, in the server's order; [] otherwise. */
  readonly held: HeldLock[];
  constructor(resource: string, body: unknown, message?: string) {
    const b = (body ?? {}) as { holder?: unknown; expiresAt?: unknown; held?: unknown; leader?: { candidate?: unknown; expiresAt?: unknown } };
    const held = Array.isArray(b.held) ? (b.held as HeldLock[]) : [];
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
  readonly availableAt: string;
  constructor(resource: string, body: unknown) {
    const at = (body as { availableAt?: unknown } | null)?.availableAt;
    const availableAt = typeof at === 'string' ? at : '';
    super(resource, body, `fenceview: ${resource} is in its lock-delay until ${availableAt}`);
    this.name = 'LockDelayError';
    this.availableAt = availableAt;
  }
}

/** renew or release by a holder that does not hold the lock (any more). */
export class NotHeldError extends FenceviewError {
  constructor(resource: string, body: unknown) {
    const msg = (body as { error?: unknown } | null)?.error;
    super(`fenceview: ${resource}: ${typeof msg === 'string' ? msg : 'lock not held'}`, 409, body);
    this.name = 'NotHeldError';
  }
}

/** The reason of lock.signal when the lease was lost: expired, force-expired, or not renewable. */
export class LeaseLostError extends Error {
  constructor(
    readonly resource: string,
    readonly token: bigint,
    why: string,
  ) {
    super(`fenceview: the lease of ${resource} (token ${token}) is lost: ${why}`);
    this.name = 'LeaseLostError';
  }
}

/** The reason of lock.signal after the last release. */
export class ReleasedError extends Error {
  constructor(readonly resource: string) {
    super(`fenceview: ${resource} was released`);
    this.name = 'ReleasedError';
  }
}

/** The server could not be reached, or the RPC stream broke before an answer. */
export class ConnectionError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ConnectionError';
  }
}
