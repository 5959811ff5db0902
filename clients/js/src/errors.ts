// The errors the client throws. A refusal by a guard is a Decision, not an
// error; these are for calls that did not do what they were asked.
//
// Every refusal of the server carries a stable `code` (JSON bodies and RPC
// answers alike); the class of the error thrown is chosen by that code
// alone, never by the English `error` sentence, which is for people and
// changes freely. A server too old to send codes is read by status only
// (and by the fields its bodies carry), as errorFor documents.

/** The refusal codes fenceview's server sends (docs/errors.md); a newer server may send others. */
export type ErrorCode =
  | 'invalid-request'
  | 'unknown-field'
  | 'invalid-token'
  | 'too-large'
  | 'unauthenticated'
  | 'forbidden'
  | 'not-found'
  | 'method-not-allowed'
  | 'lock-held'
  | 'lock-delay'
  | 'lease-expired'
  | 'not-owner'
  | 'not-held'
  | 'no-permit'
  | 'permits-mismatch'
  | 'not-leader'
  | 'stale-token'
  | 'superseded'
  | 'bad-signature'
  | 'shared-token'
  | 'unissued-token'
  | 'foreign-issuer'
  | 'scope-mismatch'
  | 'overloaded'
  | 'limit'
  | 'unavailable'
  | 'internal';

/** The codes of a refused fence: the code is the decision's reason. */
export const FENCE_CODES: ReadonlySet<string> = new Set(['stale-token', 'superseded', 'bad-signature', 'unissued-token', 'foreign-issuer', 'scope-mismatch', 'shared-token']);

type Body = Record<string, unknown>;

function str(b: Body, k: string): string | null {
  const v = b[k];
  return typeof v === 'string' ? v : null;
}

function int(b: Body, k: string): number | null {
  const v = b[k];
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  if (typeof v === 'bigint' && v >= 0n && v <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(v);
  return null;
}

/**
 * An answer of the server that is not a success: its code, status and
 * JSON body, with the body's documented extra fields read out (null when
 * the answer did not carry them).
 */
export class FenceviewError extends Error {
  /** The refusal's code (the body's, or for an old server one read from the status). */
  readonly code: string;
  /** The HTTP status (the RPC answer's status on the stream). */
  readonly status: number;
  /** The whole JSON body. */
  readonly body: unknown;
  /** The holder of the lock (lock-held; a campaign's leader). */
  readonly holder: string | null;
  /** When the holder's lease runs out (lock-held), RFC 3339. */
  readonly expiresAt: string | null;
  /** When a lock-delay ends (lock-delay), RFC 3339. */
  readonly availableAt: string | null;
  /** When this holder's lease ran out (lease-expired), RFC 3339. */
  readonly expiredAt: string | null;
  /** The semaphore's permits (permits-mismatch, no-permit). */
  readonly permits: number | null;
  /** The token to beat (a fence refusal). */
  readonly required: bigint | null;
  /** How long to wait before trying again (overloaded, unavailable), from retryAfterMs or Retry-After. */
  readonly retryAfterMs: number | null;
  /** The field at fault (invalid-request, unknown-field). */
  readonly field: string | null;

  constructor(message: string, status: number, body: unknown, code?: string, retryAfterMs?: number | null) {
    super(message);
    this.name = 'FenceviewError';
    const b = (body !== null && typeof body === 'object' && !Array.isArray(body) ? body : {}) as Body;
    const leader = (b.leader !== null && typeof b.leader === 'object' ? b.leader : {}) as Body;
    const held = Array.isArray(b.held) ? (b.held as Body[]) : [];
    this.code = code ?? str(b, 'code') ?? codeOfStatus(status);
    this.status = status;
    this.body = body;
    this.holder = str(b, 'holder') ?? str(leader, 'candidate') ?? (held[0] ? str(held[0], 'holder') : null);
    this.expiresAt = str(b, 'expiresAt') ?? str(leader, 'expiresAt') ?? (held[0] ? str(held[0], 'expiresAt') : null);
    this.availableAt = str(b, 'availableAt') ?? (held[0] ? str(held[0], 'availableAt') : null);
    this.expiredAt = str(b, 'expiredAt');
    this.permits = int(b, 'permits');
    this.required = typeof b.required === 'bigint' ? b.required : null;
    this.retryAfterMs = int(b, 'retryAfterMs') ?? retryAfterMs ?? null;
    this.field = str(b, 'field');
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
 * lock-held: acquire found the lock held by another holder; also no-permit
 * (a semaphore with no permit free), a multi-lock with one of its locks
 * held (held lists them) and a campaign while another leads (holder is the
 * leader). tryAcquire answers null for it; a waiting acquire keeps waiting.
 */
export class HeldError extends FenceviewError {
  /** A multi-lock's locks held by others, in the server's order; [] otherwise. */
  readonly held: HeldLock[];
  constructor(message: string, status: number, body: unknown, code?: string, retryAfterMs?: number | null) {
    super(message, status, body, code, retryAfterMs);
    this.name = 'HeldError';
    const held = (body as { held?: unknown } | null)?.held;
    this.held = Array.isArray(held) ? (held as HeldLock[]) : [];
  }
}

/**
 * lock-delay: acquire found the lock free but in its lock-delay (a lease
 * granted with lockDelayMs ran out without a release), and nobody may take
 * it before availableAt. A HeldError, so tryAcquire answers null and a
 * waiting acquire keeps waiting.
 */
export class LockDelayError extends HeldError {
  /** When the delay ends (RFC 3339; '' when the server did not say). */
  declare readonly availableAt: string;
  constructor(message: string, status: number, body: unknown, code?: string, retryAfterMs?: number | null) {
    super(message, status, body, code, retryAfterMs);
    this.name = 'LockDelayError';
    (this as { availableAt: string | null }).availableAt ??= '';
  }
}

/**
 * not-held: renew or release of a lock this holder does not hold. Its
 * kinds say why when the server does: LeaseExpiredError (this holder's
 * lease ran out or was force-expired), NotOwnerError (another holds it),
 * NotLeaderError (an election's non-leader).
 */
export class NotHeldError extends FenceviewError {
  constructor(message: string, status: number, body: unknown, code?: string, retryAfterMs?: number | null) {
    super(message, status, body, code, retryAfterMs);
    this.name = 'NotHeldError';
  }
}

/** lease-expired: this holder's lease ran out (expiredAt says when) or was force-expired, and was not released since. */
export class LeaseExpiredError extends NotHeldError {
  constructor(message: string, status: number, body: unknown, code?: string, retryAfterMs?: number | null) {
    super(message, status, body, code, retryAfterMs);
    this.name = 'LeaseExpiredError';
  }
}

/** not-owner: another holder (or key) holds the lock. */
export class NotOwnerError extends NotHeldError {
  constructor(message: string, status: number, body: unknown, code?: string, retryAfterMs?: number | null) {
    super(message, status, body, code, retryAfterMs);
    this.name = 'NotOwnerError';
  }
}

/** not-leader: proclaim, resign or renew of an election by a candidate that does not lead. */
export class NotLeaderError extends NotHeldError {
  constructor(message: string, status: number, body: unknown, code?: string, retryAfterMs?: number | null) {
    super(message, status, body, code, retryAfterMs);
    this.name = 'NotLeaderError';
  }
}

/** permits-mismatch: a semaphore acquired with another permits count than its own (permits says its own). */
export class PermitsMismatchError extends FenceviewError {
  constructor(message: string, status: number, body: unknown, code?: string, retryAfterMs?: number | null) {
    super(message, status, body, code, retryAfterMs);
    this.name = 'PermitsMismatchError';
  }
}

/** A refused fence: code is the reason (stale-token, superseded, bad-signature, unissued-token, foreign-issuer, scope-mismatch, shared-token). */
export class FenceRefusedError extends FenceviewError {
  /** The reason, the same word as code. */
  readonly reason: string;
  /** The token presented, when the server said. */
  readonly presented: bigint | null;
  constructor(message: string, status: number, body: unknown, code?: string, retryAfterMs?: number | null) {
    super(message, status, body, code, retryAfterMs);
    this.name = 'FenceRefusedError';
    this.reason = this.code;
    const p = (body as { presented?: unknown } | null)?.presented;
    this.presented = typeof p === 'bigint' ? p : null;
  }
}

/** overloaded: the server shed the request (nothing changed); retryAfterMs says when to try again. The client retries these itself first. */
export class OverloadedError extends FenceviewError {
  constructor(message: string, status: number, body: unknown, code?: string, retryAfterMs?: number | null) {
    super(message, status, body, code, retryAfterMs);
    this.name = 'OverloadedError';
  }
}

/** limit: a server limit was reached (resources, waiters, connections). */
export class LimitError extends FenceviewError {
  constructor(message: string, status: number, body: unknown, code?: string, retryAfterMs?: number | null) {
    super(message, status, body, code, retryAfterMs);
    this.name = 'LimitError';
  }
}

/** unavailable: no leader, or the durable record cannot be written (503); nothing changed. */
export class UnavailableError extends FenceviewError {
  constructor(message: string, status: number, body: unknown, code?: string, retryAfterMs?: number | null) {
    super(message, status, body, code, retryAfterMs);
    this.name = 'UnavailableError';
  }
}

/** invalid-request, unknown-field, invalid-token, too-large: the request itself is wrong (field names the field at fault). */
export class InvalidRequestError extends FenceviewError {
  constructor(message: string, status: number, body: unknown, code?: string, retryAfterMs?: number | null) {
    super(message, status, body, code, retryAfterMs);
    this.name = 'InvalidRequestError';
  }
}

/** unauthenticated: the key is missing, unknown or revoked. */
export class UnauthenticatedError extends FenceviewError {
  constructor(message: string, status: number, body: unknown, code?: string, retryAfterMs?: number | null) {
    super(message, status, body, code, retryAfterMs);
    this.name = 'UnauthenticatedError';
  }
}

/** forbidden: the key's role or prefixes do not allow the call. */
export class ForbiddenError extends FenceviewError {
  constructor(message: string, status: number, body: unknown, code?: string, retryAfterMs?: number | null) {
    super(message, status, body, code, retryAfterMs);
    this.name = 'ForbiddenError';
  }
}

/** not-found: no such route or thing. */
export class NotFoundError extends FenceviewError {
  constructor(message: string, status: number, body: unknown, code?: string, retryAfterMs?: number | null) {
    super(message, status, body, code, retryAfterMs);
    this.name = 'NotFoundError';
  }
}

type ErrorClass = new (message: string, status: number, body: unknown, code?: string, retryAfterMs?: number | null) => FenceviewError;

/** The class of each code; a code not listed (method-not-allowed, internal, a newer server's) is a plain FenceviewError. */
export const ERROR_CLASSES: ReadonlyMap<string, ErrorClass> = new Map<string, ErrorClass>([
  ['lock-held', HeldError],
  ['no-permit', HeldError],
  ['lock-delay', LockDelayError],
  ['not-held', NotHeldError],
  ['lease-expired', LeaseExpiredError],
  ['not-owner', NotOwnerError],
  ['not-leader', NotLeaderError],
  ['permits-mismatch', PermitsMismatchError],
  ...[...FENCE_CODES].map((c): [string, ErrorClass] => [c, FenceRefusedError]),
  ['overloaded', OverloadedError],
  ['limit', LimitError],
  ['unavailable', UnavailableError],
  ['invalid-request', InvalidRequestError],
  ['unknown-field', InvalidRequestError],
  ['invalid-token', InvalidRequestError],
  ['too-large', InvalidRequestError],
  ['unauthenticated', UnauthenticatedError],
  ['forbidden', ForbiddenError],
  ['not-found', NotFoundError],
]);

/** codeOfStatus is an old server's code, read from its status alone (409 has no one answer: see errorFor). */
export function codeOfStatus(status: number): string {
  switch (status) {
    case 400: return 'invalid-request';
    case 401: return 'unauthenticated';
    case 403: return 'forbidden';
    case 404: return 'not-found';
    case 405: return 'method-not-allowed';
    case 409: return 'lock-held';
    case 413: return 'too-large';
    case 429: return 'overloaded';
    case 503: return 'unavailable';
    default: return 'internal';
  }
}

/** What the caller was doing, for the message and for an old server's 409. */
export interface ErrorContext {
  /** The resource (or resources, semaphore, election) the call was about. */
  resource?: string;
  /**
   * The code a 409 without one means for this call (an old server's):
   * lock-held for acquires, not-held for renew and release, not-leader for
   * an election's leader calls. Default lock-held.
   */
  conflict?: ErrorCode;
  /** The answer's Retry-After, in ms, when it had one. */
  retryAfterMs?: number | null;
  /** A semaphore acquire's permits: an old server's 409 naming other permits is a permits-mismatch. */
  permits?: number;
}

/**
 * errorFor is the error of a refusal: status and JSON body as the JSON API
 * or the RPC stream gave them. The class is chosen by the body's code.
 * A body without a code (a server older than refusal codes) is read by
 * status, a 409 by what the call was (ctx.conflict) and by the fields the
 * old bodies carried: a fence's reason, a lock-delay's availableAt with no
 * holder, a permits mismatch's permits. The English error is never read
 * for anything but the message.
 */
export function errorFor(status: number, body: unknown, ctx: ErrorContext = {}): FenceviewError {
  const b = (body !== null && typeof body === 'object' && !Array.isArray(body) ? body : {}) as Body;
  let code = str(b, 'code');
  if (code === null || code === '') code = oldCode(status, b, ctx);
  const sentence = str(b, 'error');
  const what = ctx.resource !== undefined ? `${ctx.resource}: ` : '';
  const message = `fenceview: ${what}${sentence ?? `status ${status}`} (${code})`;
  const Cls = ERROR_CLASSES.get(code) ?? FenceviewError;
  return new Cls(message, status, body, code, ctx.retryAfterMs ?? null);
}

function oldCode(status: number, b: Body, ctx: ErrorContext): string {
  if (status !== 409) return codeOfStatus(status);
  const reason = str(b, 'reason');
  if (reason !== null && FENCE_CODES.has(reason)) return reason;
  const conflict = ctx.conflict;
  if (conflict === undefined || conflict === 'lock-held') {
    const permits = int(b, 'permits');
    if (permits !== null && ctx.permits !== undefined) return permits === ctx.permits ? 'no-permit' : 'permits-mismatch';
    if (str(b, 'availableAt') !== null && typeof b.holder !== 'string') return 'lock-delay';
    return 'lock-held';
  }
  return conflict;
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
