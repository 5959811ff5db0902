// fenceview for Node.js: fenced locks with bigint tokens, and the guards
// that enforce them where the data lives.

export { Client, Lock } from './client.js';
export type { ClientOptions, AcquireOptions, Grant, Fencing, LockState, ResourceInfo, FenceResult, DecisionReport, Rejection } from './client.js';
export { Semaphore, Permit, MultiLock, Election } from './primitives.js';
export type { HoldOptions, SemaphoreState, LockAllOptions, ElectionOptions, Leader } from './primitives.js';
export { EventStream } from './events.js';
export type { FenceEvent } from './events.js';
export { fencingMiddleware, refusalBody } from './middleware.js';
export type { Fence, FencedRequest as FencedHttpRequest, FencingOptions } from './middleware.js';
export { FencedResource, PgMarks } from './postgres.js';
export type { ApplyResult, FencedResourceOptions, Queryable } from './postgres.js';
export { RedisGuard, MARK_NAME } from './redis.js';
export type { RedisGuardOptions, RedisScripting } from './redis.js';
export { S3Guard, NotReportedError, ContendedError, FENCE_TOKEN_METADATA, TOMBSTONE_METADATA, MIN_ATTEMPTS } from './s3.js';
export type { S3GuardOptions, S3PutObject, S3Read, S3Sender, S3Stream, S3Token } from './s3.js';
export { WasmGuard } from './wasm.js';
export type { WasmGuardOptions } from './wasm.js';
export { callFencedService, callUnfenceable } from './calls.js';
export type { FencedRequest, FencedCallResult, TokenSource, UnfenceableResult } from './calls.js';
export { Verifier, decodeSignature, decodeCarrier, decodePublicKey, leafHash, rootFromPath, batchMessage, type Mode } from './verifier.js';
export type { SigningKey, KeySource, VerifierOptions, Carrier } from './verifier.js';
export type { Checker, SignatureOptions } from './guard.js';
export { parse, stringify, TOKEN_FIELDS, JSONSyntaxError } from './json.js';
export type { JSONValue } from './json.js';
export {
  MAX_TOKEN,
  HEADER_TOKEN,
  HEADER_SIGNATURE,
  HEADER_RESOURCE,
  HEADER_REQUIRED,
  HEADER_IDEMPOTENCY_KEY,
  REASON_STALE,
  REASON_BAD_SIGNATURE,
  REASON_SHARED_TOKEN,
  HEADER_ACCESS,
  type Access,
  InvalidInputError,
  parseToken,
  toToken,
  idempotencyKey,
  validateResourceId,
  validateHolderId,
} from './token.js';
export type { Decision, SignedToken } from './token.js';
export {
  FenceviewError,
  HeldError,
  LockDelayError,
  NotHeldError,
  LeaseExpiredError,
  NotOwnerError,
  NotLeaderError,
  PermitsMismatchError,
  FenceRefusedError,
  OverloadedError,
  LimitError,
  UnavailableError,
  InvalidRequestError,
  UnauthenticatedError,
  ForbiddenError,
  NotFoundError,
  LeaseLostError,
  ReleasedError,
  ConnectionError,
  ERROR_CLASSES,
  FENCE_CODES,
  errorFor,
} from './errors.js';
export type { HeldLock, ErrorCode, ErrorContext } from './errors.js';
