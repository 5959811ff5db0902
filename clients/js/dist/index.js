// fenceview for Node.js: fenced locks with bigint tokens, and the guards
// that enforce them where the data lives.
export { Client, Lock } from './client.js';
export { Semaphore, Permit, MultiLock, Election } from './primitives.js';
export { EventStream } from './events.js';
export { fencingMiddleware, refusalBody } from './middleware.js';
export { FencedResource, PgMarks } from './postgres.js';
export { RedisGuard, MARK_NAME } from './redis.js';
export { WasmGuard } from './wasm.js';
export { callFencedService, callUnfenceable } from './calls.js';
export { Verifier, decodeSignature, decodePublicKey } from './verifier.js';
export { parse, stringify, TOKEN_FIELDS, JSONSyntaxError } from './json.js';
export { MAX_TOKEN, HEADER_TOKEN, HEADER_SIGNATURE, HEADER_RESOURCE, HEADER_REQUIRED, HEADER_IDEMPOTENCY_KEY, REASON_STALE, REASON_BAD_SIGNATURE, InvalidInputError, parseToken, toToken, idempotencyKey, validateResourceId, validateHolderId, } from './token.js';
export { FenceviewError, HeldError, LockDelayError, NotHeldError, LeaseLostError, ReleasedError, ConnectionError } from './errors.js';
