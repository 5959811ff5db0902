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

/** acquire found the lock held by another holder (409 "lock held"). */
export class HeldError extends FenceviewError {
  /** The holder that has it, when the server said. */
  readonly holder: string | null;
  /** When its lease runs out (RFC 3339), when the server said. */
  readonly expiresAt: string | null;
  constructor(resource: string, body: unknown) {
    const b = (body ?? {}) as { holder?: unknown; expiresAt?: unknown };
    const holder = typeof b.holder === 'string' ? b.holder : null;
    super(`fenceview: ${resource} is held${holder ? ` by ${holder}` : ''}`, 409, body);
    this.name = 'HeldError';
    this.holder = holder;
    this.expiresAt = typeof b.expiresAt === 'string' ? b.expiresAt : null;
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
