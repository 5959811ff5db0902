// What every guard of the package is to the middleware and to
// callUnfenceable: something that checks a token for a resource and
// records it, in one atomic step.

import { REASON_BAD_SIGNATURE, type Decision } from './token.js';
import type { Verifier } from './verifier.js';

/**
 * Checker applies the rule for one resource: accept token >= mark (and
 * raise the mark to it), refuse token < mark, atomically. A refusal is a
 * Decision; invalid input throws InvalidInputError and changes nothing.
 * A checker given a verifier refuses a token whose signature does not
 * verify (reason 'bad-signature') before comparing, and does not move its
 * mark for it.
 */
export interface Checker {
  check(resource: string, token: bigint, signature?: string): Decision | Promise<Decision>;
}

/** badSignature is the refusal of a token whose signature did not verify. */
export function badSignature(token: bigint, required: bigint): Decision {
  return { accepted: false, reason: REASON_BAD_SIGNATURE, presented: token, required };
}

/** verified is true when no verifier is set, or the signature verifies. */
export async function verified(v: Verifier | undefined, resource: string, token: bigint, signature: string | undefined): Promise<boolean> {
  return v === undefined || (await v.verify(resource, token, signature));
}
