// Tokens, ids and decisions: the values every part of the package shares.

import { InvalidRequestError } from './errors.js';

/** The largest token: 2^63-1. Tokens are 1..MAX_TOKEN. */
export const MAX_TOKEN = (1n << 63n) - 1n;

/** Headers of the fencing protocol, as fenceview's server and Go guards use them. */
export const HEADER_TOKEN = 'X-Fencing-Token';
export const HEADER_SIGNATURE = 'X-Fencing-Signature';
export const HEADER_RESOURCE = 'X-Resource-Id';
export const HEADER_REQUIRED = 'X-Required-Token';
export const HEADER_IDEMPOTENCY_KEY = 'Idempotency-Key';

/** Refusal reasons, as fenceview names them. */
export const REASON_STALE = 'stale-token';
export const REASON_BAD_SIGNATURE = 'bad-signature';
/** A write presented with a shared (reader's) token. */
export const REASON_SHARED_TOKEN = 'shared-token';

/** What a check guards: a read (a shared lock's reader may do it) or a write (the default). */
export type Access = 'read' | 'write';

/** The header saying what a fenced request does: "read", or "write" (the default). */
export const HEADER_ACCESS = 'X-Fencing-Access';

/**
 * A guard's decision on one fenced write: the seed's refusal shape. On an
 * accepted write, required is the mark the token was compared with (0n when
 * the resource had none).
 */
export interface Decision {
  accepted: boolean;
  /** Why it was refused ('stale-token', 'bad-signature', ...); absent when accepted. */
  reason?: string;
  presented: bigint;
  required: bigint;
}

/** A token with its issuer's signature, as a grant carries it. */
export interface SignedToken {
  token: bigint;
  /** base64url of the Ed25519 signature; absent for unsigned tokens. */
  signature?: string | undefined;
}

/** Bad input: a malformed token or id. Nothing was changed. */
export class InvalidInputError extends InvalidRequestError {
  /**
   * Input refused before anything was sent: the InvalidRequestError the
   * server would answer, status 400 with code ('invalid-request', or
   * 'invalid-token' for a token) and the field at fault (null for a
   * setting that is not a request's).
   */
  constructor(message: string, field: string | null = null, code = 'invalid-request') {
    super(message, 400, field === null ? { error: message, code } : { error: message, code, field }, code);
    this.name = 'InvalidInputError';
  }
}

const decimal = /^[1-9][0-9]{0,18}$/;

/**
 * parseToken reads a token from text (a header, a path): a positive
 * decimal integer up to 2^63-1, no sign, no leading zeros, no spaces.
 * Anything else throws InvalidInputError.
 */
export function parseToken(text: string | null | undefined): bigint {
  if (typeof text !== 'string' || !decimal.test(text)) {
    throw new InvalidInputError('missing or invalid fencing token', 'token', 'invalid-token');
  }
  const t = BigInt(text);
  if (t > MAX_TOKEN) throw new InvalidInputError('missing or invalid fencing token', 'token', 'invalid-token');
  return t;
}

/**
 * toToken accepts a token as a bigint, or as a decimal string, and checks
 * it is 1..2^63-1. A JS number is accepted only when it is a safe integer:
 * above 2^53 a number has already been rounded, and guessing is how
 * fencing goes wrong.
 */
export function toToken(t: bigint | string | number): bigint {
  if (typeof t === 'bigint') {
    if (t < 1n || t > MAX_TOKEN) throw new InvalidInputError(`token ${t} is not in 1..2^63-1`, 'token', 'invalid-token');
    return t;
  }
  if (typeof t === 'string') return parseToken(t);
  if (typeof t === 'number' && Number.isSafeInteger(t) && t > 0) return BigInt(t);
  throw new InvalidInputError(`token ${String(t)} is not a positive integer a JS number holds exactly; pass a bigint`, 'token', 'invalid-token');
}

const MAX_RESOURCE_BYTES = 160;
const MAX_HOLDER_BYTES = 80;
// Unicode category Cc: C0, DEL and C1.
const control = /[\u0000-\u001f\u007f-\u009f]/;

function validId(what: string, field: string, id: unknown, max: number): string {
  if (typeof id !== 'string') throw new InvalidInputError(`${what} id must be a string`, field);
  const n = Buffer.byteLength(id, 'utf8');
  if (n === 0 || n > max) throw new InvalidInputError(`${what} id must be 1..${max} bytes of UTF-8`, field);
  if (control.test(id)) throw new InvalidInputError(`${what} id must not contain control characters`, field);
  // A lone surrogate has no UTF-8 form: the id the server would see is another.
  if (!id.isWellFormed()) throw new InvalidInputError(`${what} id is not valid Unicode`, field);
  return id;
}

/** validateResourceId checks a resource id: 1..160 bytes of UTF-8, no control characters (field: the request's member it goes in). */
export function validateResourceId(id: unknown, field = 'resource'): string {
  return validId('resource', field, id, MAX_RESOURCE_BYTES);
}

/** validateHolderId checks a holder id: 1..80 bytes of UTF-8, no control characters (field: the request's member it goes in). */
export function validateHolderId(id: unknown, field = 'holder'): string {
  return validId('holder', field, id, MAX_HOLDER_BYTES);
}

/** idempotencyKey is "<resource>:<token>", the key of one grant's external effect. */
export function idempotencyKey(resource: string, token: bigint): string {
  return `${resource}:${token.toString()}`;
}

/**
 * signedMessage is the text fenceview signs for a token:
 * "fenceview/v1 <resource> <token>", and for a shared grant (a reader's)
 * the same followed by " shared", so a reader's token never verifies as
 * a writer's.
 */
export function signedMessage(resource: string, token: bigint, shared = false): Buffer {
  return Buffer.from(`fenceview/v1 ${resource} ${token.toString()}${shared ? ' shared' : ''}`, 'utf8');
}
