// What every guard of the package is to the middleware and to
// callUnfenceable: something that checks a token for a resource and
// records it, in one atomic step.

import { REASON_BAD_SIGNATURE, type Decision } from './token.js';
import { Verifier, type KeySource } from './verifier.js';

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

/** The options every guard takes about signatures. */
export interface SignatureOptions {
  /** Refuse tokens whose signature this verifier does not accept (bad-signature). */
  verifier?: Verifier;
  /**
   * The fenceview client (or any source of its signing keys): the guard
   * then refuses unsigned and forged tokens with the server's keys
   * (fetched at the first check, and again as they rotate), unless
   * acceptUnsignedTokens.
   */
  client?: KeySource;
  /** With a client, accept unsigned tokens: anyone who reaches the guard can present any token. Default false. */
  acceptUnsignedTokens?: boolean;
}

/** verifierOf is a guard's verifier: the one given, else one of the client's keys unless unsigned tokens are accepted. */
export function verifierOf(opts: SignatureOptions): Verifier | undefined {
  if (opts.verifier !== undefined || opts.client === undefined || opts.acceptUnsignedTokens === true) return opts.verifier;
  return new Verifier(opts.client);
}
