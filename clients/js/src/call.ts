// What the primitives need of the client, apart from it so that neither
// module imports the other at run time: the key of the client's one raw
// call (a symbol the package does not export, so the call is not part of
// its API) and the reading of a grant.

import type { Grant } from './client.js';
import { FenceviewError } from './errors.js';
import type { JSONValue } from './json.js';

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
