// What every guard of the package is to the middleware and to
// callUnfenceable: something that checks a token for a resource and
// records it, in one atomic step.

import { InvalidInputError, REASON_BAD_SIGNATURE, REASON_SHARED_TOKEN, type Access, type Decision } from './token.js';
import { Verifier, type KeySource } from './verifier.js';

/**
 * Checker applies the rule for one resource: accept token >= mark (and
 * raise the mark to it), refuse token < mark, atomically. A refusal is a
 * Decision; invalid input throws InvalidInputError and changes nothing.
 * A checker given a verifier refuses a token whose signature does not
 * verify (reason 'bad-signature') before comparing, and does not move its
 * mark for it. access says what the check guards: a 'write' (the
 * default) or a 'read'. The rule is the same for both; a signed checker
 * also refuses a write presented with a shared (reader's) grant's token
 * ('shared-token'). An unsigned token cannot prove its mode.
 */
export interface Checker {
  check(resource: string, token: bigint, signature?: string, access?: Access): Decision | Promise<Decision>;
}

/** badSignature is the refusal of a token whose signature did not verify. */
export function badSignature(token: bigint, required: bigint): Decision {
  return { accepted: false, reason: REASON_BAD_SIGNATURE, presented: token, required };
}

/** sharedToken is the refusal of a write presented with a shared grant's token. */
export function sharedToken(token: bigint, required: bigint): Decision {
  return { accepted: false, reason: REASON_SHARED_TOKEN, presented: token, required };
}

/**
 * signatureRefusal is why a signed checker refuses token before comparing:
 * REASON_BAD_SIGNATURE when no trusted key signed it, REASON_SHARED_TOKEN
 * for a write shown a shared grant's signature; null when it may be
 * compared (no verifier set, or a signature fit for access).
 */
export async function signatureRefusal(v: Verifier | undefined, resource: string, token: bigint, signature: string | undefined, access: Access = 'write'): Promise<string | null> {
  if (v === undefined) return null;
  const m = await v.mode(resource, token, signature, access === 'read');
  if (m === null) return REASON_BAD_SIGNATURE;
  if (m === 'shared' && access !== 'read') return REASON_SHARED_TOKEN;
  return null;
}

/** refusedFor is the Decision of a signatureRefusal. */
export function refusedFor(reason: string, token: bigint, required: bigint): Decision {
  return reason === REASON_SHARED_TOKEN ? sharedToken(token, required) : badSignature(token, required);
}

/** accessOf checks an access given by a caller: 'read' or 'write' (undefined: 'write'). */
export function accessOf(access: unknown): Access {
  if (access === undefined || access === 'write') return 'write';
  if (access === 'read') return 'read';
  throw new InvalidInputError(`access must be 'read' or 'write', not ${JSON.stringify(access)}`, 'access');
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
