/** The largest token: 2^63-1. Tokens are 1..MAX_TOKEN. */
export declare const MAX_TOKEN: bigint;
/** Headers of the fencing protocol, as fenceview's server and Go guards use them. */
export declare const HEADER_TOKEN = "X-Fencing-Token";
export declare const HEADER_SIGNATURE = "X-Fencing-Signature";
export declare const HEADER_RESOURCE = "X-Resource-Id";
export declare const HEADER_REQUIRED = "X-Required-Token";
export declare const HEADER_IDEMPOTENCY_KEY = "Idempotency-Key";
/** Refusal reasons, as fenceview names them. */
export declare const REASON_STALE = "stale-token";
export declare const REASON_BAD_SIGNATURE = "bad-signature";
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
export declare class InvalidInputError extends Error {
    constructor(message: string);
}
/**
 * parseToken reads a token from text (a header, a path): a positive
 * decimal integer up to 2^63-1, no sign, no leading zeros, no spaces.
 * Anything else throws InvalidInputError.
 */
export declare function parseToken(text: string | null | undefined): bigint;
/**
 * toToken accepts a token as a bigint, or as a decimal string, and checks
 * it is 1..2^63-1. A JS number is accepted only when it is a safe integer:
 * above 2^53 a number has already been rounded, and guessing is how
 * fencing goes wrong.
 */
export declare function toToken(t: bigint | string | number): bigint;
/** validateResourceId checks a resource id: 1..160 bytes of UTF-8, no control characters. */
export declare function validateResourceId(id: unknown): string;
/** validateHolderId checks a holder id: 1..80 bytes of UTF-8, no control characters. */
export declare function validateHolderId(id: unknown): string;
/** idempotencyKey is "<resource>:<token>", the key of one grant's external effect. */
export declare function idempotencyKey(resource: string, token: bigint): string;
/** signedMessage is the text fenceview signs for a token: "fenceview/v1 <resource> <token>". */
export declare function signedMessage(resource: string, token: bigint): Buffer;
