// What the primitives need of the client, apart from it so that neither
// module imports the other: the keys of the client's raw call and of its
// close registry (symbols the package does not export, so they are not
// part of its API), the client as the primitives see it (Caller), and the
// reading of a grant.

import { FenceviewError } from './errors.js';
import type { EventStream } from './events.js';
import type { JSONValue } from './json.js';
import type { Grant, Leader, SemaphoreState } from './types.js';

/** The key of Client's raw call: one operation over the RPC stream as op, else as its route. */
export const rawCall: unique symbol = Symbol('fenceview.rawCall');

/**
 * The key of Client's registry of work its close() awaits first (a
 * guard's queued reports): called with that work, it returns the function
 * that takes it off again.
 */
export const onClose: unique symbol = Symbol('fenceview.onClose');

/** grantOf reads a grant from an answer's body; a body without a token is an error. */
export function grantOf(body: JSONValue): Grant {
  const g = body as unknown as Grant;
  if (g === null || typeof g !== 'object' || typeof g.fencing?.token !== 'bigint') {
    throw new FenceviewError('fenceview: a grant without a token', 200, body, 'internal');
  }
  return g;
}

/** Caller is the client as the primitives (semaphores, multi-locks, elections) and guards use it; Client is one. */
export interface Caller {
  readonly leaseMs: number;
  [rawCall](op: string, method: string, path: string, fields: Record<string, unknown>, signal?: AbortSignal): Promise<{ status: number; body: JSONValue }>;
  [onClose](work: () => Promise<void>): () => void;
  renewGrant(resource: string, holder: string, leaseMs?: number, signal?: AbortSignal): Promise<Grant>;
  semaphoreState(name: string, signal?: AbortSignal): Promise<SemaphoreState | null>;
  leader(name: string, signal?: AbortSignal): Promise<Leader | null>;
  events(opts?: { resource?: string; since?: bigint }): EventStream;
}
