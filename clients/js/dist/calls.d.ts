import { type JSONValue } from './json.js';
import type { Checker } from './guard.js';
import { type Decision } from './token.js';
/** A token to send: a lock (its token, signature and signal), or a bigint with an optional signature. */
export type TokenSource = bigint | {
    token: bigint;
    signature?: string | undefined;
    signal?: AbortSignal;
};
export interface FencedRequest {
    resourceId: string;
    /** The JSON body (bigints written exactly); undefined sends none. */
    payload?: unknown;
    method?: string;
    headers?: Record<string, string>;
}
export type FencedCallResult = {
    accepted: true;
    status: number;
    body: JSONValue;
    response: Response;
} | {
    accepted: false;
    reason: string;
    presented: bigint;
    required: bigint;
    response: Response;
};
/**
 * callFencedService sends request to url with the fencing headers
 * (X-Fencing-Token, X-Fencing-Signature, X-Resource-Id) and turns a 409 of
 * the downstream guard into a refusal: the seed's callFencedService. Given
 * a lock, the call is aborted with the lock's signal when its lease is lost.
 * Other statuses are the caller's to judge (accepted: true says only that
 * the guard let it through).
 */
export declare function callFencedService(url: string | URL, request: FencedRequest, token: TokenSource, opts?: {
    fetch?: typeof fetch;
    signal?: AbortSignal;
}): Promise<FencedCallResult>;
export type UnfenceableResult<T> = {
    accepted: true;
    idempotencyKey: string;
    result: T;
} | ({
    accepted: false;
} & Decision);
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
export declare function callUnfenceable<T>(recorder: Checker, resource: string, token: TokenSource, call: (idempotencyKey: string, signal?: AbortSignal) => Promise<T>): Promise<UnfenceableResult<T>>;
