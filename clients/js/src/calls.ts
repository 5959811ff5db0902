// The caller's side: carrying a token to a fenced downstream service, and
// limiting the damage at one that cannot check tokens.

import { parse, stringify, type JSONValue } from './json.js';
import type { Checker } from './guard.js';
import {
  HEADER_REQUIRED,
  HEADER_RESOURCE,
  HEADER_SIGNATURE,
  HEADER_TOKEN,
  REASON_STALE,
  idempotencyKey,
  parseToken,
  toToken,
  validateResourceId,
  type Decision,
} from './token.js';

/** A token to send: a lock (its token, signature and signal), or a bigint with an optional signature. */
export type TokenSource = bigint | { token: bigint; signature?: string | undefined; signal?: AbortSignal };

export interface FencedRequest {
  resourceId: string;
  /** The JSON body (bigints written exactly); undefined sends none. */
  payload?: unknown;
  method?: string;
  headers?: Record<string, string>;
}

export type FencedCallResult =
  | { accepted: true; status: number; body: JSONValue; response: Response }
  | { accepted: false; reason: string; presented: bigint; required: bigint; response: Response };

/**
 * callFencedService sends request to url with the fencing headers
 * (X-Fencing-Token, X-Fencing-Signature, X-Resource-Id) and turns a 409 of
 * the downstream guard into a refusal: the seed's callFencedService. Given
 * a lock, the call is aborted with the lock's signal when its lease is lost.
 * Other statuses are the caller's to judge (accepted: true says only that
 * the guard let it through).
 */
export async function callFencedService(
  url: string | URL,
  request: FencedRequest,
  token: TokenSource,
  opts: { fetch?: typeof fetch; signal?: AbortSignal } = {},
): Promise<FencedCallResult> {
  const resource = validateResourceId(request.resourceId);
  const t = typeof token === 'bigint' ? token : token.token;
  const tok = toToken(t);
  const headers: Record<string, string> = { ...request.headers, [HEADER_TOKEN]: tok.toString(), [HEADER_RESOURCE]: encodeHeader(resource) };
  const sig = typeof token === 'bigint' ? undefined : token.signature;
  if (sig) headers[HEADER_SIGNATURE] = sig;
  if (request.payload !== undefined) headers['content-type'] ??= 'application/json';
  const signals = [opts.signal, typeof token === 'bigint' ? undefined : token.signal].filter((s): s is AbortSignal => s !== undefined);
  const response = await (opts.fetch ?? fetch)(url, {
    method: request.method ?? 'POST',
    headers,
    body: request.payload === undefined ? null : stringify(request.payload),
    signal: signals.length === 0 ? null : signals.length === 1 ? signals[0]! : AbortSignal.any(signals),
  });
  const text = await response.text();
  let body: JSONValue = null;
  try {
    body = text === '' ? null : parse(text);
  } catch {
    body = text;
  }
  if (response.status === 409) {
    const b = (body ?? {}) as Record<string, JSONValue>;
    let required = typeof b.required === 'bigint' ? b.required : 0n;
    const h = response.headers.get(HEADER_REQUIRED);
    if (h !== null) {
      try {
        required = parseToken(h);
      } catch {
        // a malformed header says nothing; keep the body's
      }
    }
    return {
      accepted: false,
      reason: typeof b.reason === 'string' ? b.reason : typeof b.code === 'string' ? b.code : REASON_STALE,
      presented: typeof b.presented === 'bigint' ? b.presented : tok,
      required,
      response,
    };
  }
  return { accepted: true, status: response.status, body, response };
}

// Header values are bytes; a resource id is UTF-8 (the middleware reads it back as such).
function encodeHeader(s: string): string {
  return Buffer.from(s, 'utf8').toString('latin1');
}

export type UnfenceableResult<T> = { accepted: true; idempotencyKey: string; result: T } | ({ accepted: false } & Decision);

/**
 * callUnfenceable is for a system that cannot check tokens (a payment
 * gateway, a mail server): it records token as pending for resource
 * through recorder (a Checker you control: PgMarks, RedisGuard, a
 * WasmGuard) first, and only if that was accepted runs call with the
 * idempotency key "<resource>:<token>", so a stale holder is stopped before
 * it reaches the external system and a retry of one grant is applied once
 * by a system that honours the key. A refusal is returned and call does
 * not run; call's error is thrown (retrying with the same token is safe).
 *
 * What remains: a holder that records, then pauses, then calls after a
 * newer holder has recorded and called still reaches the external system.
 * To close that, write the intent to an outbox under a fenced write and
 * let a relay call out.
 */
export async function callUnfenceable<T>(
  recorder: Checker,
  resource: string,
  token: TokenSource,
  call: (idempotencyKey: string, signal?: AbortSignal) => Promise<T>,
): Promise<UnfenceableResult<T>> {
  validateResourceId(resource);
  const tok = toToken(typeof token === 'bigint' ? token : token.token);
  const sig = typeof token === 'bigint' ? undefined : token.signature;
  const d = await recorder.check(resource, tok, sig);
  if (!d.accepted) return { ...d, accepted: false };
  const key = idempotencyKey(resource, tok);
  const result = await call(key, typeof token === 'bigint' ? undefined : token.signal);
  return { accepted: true, idempotencyKey: key, result };
}
