// What every guard of the package is to the middleware and to
// callUnfenceable: something that checks a token for a resource and
// records it, in one atomic step.
import { REASON_BAD_SIGNATURE } from './token.js';
/** badSignature is the refusal of a token whose signature did not verify. */
export function badSignature(token, required) {
    return { accepted: false, reason: REASON_BAD_SIGNATURE, presented: token, required };
}
/** verified is true when no verifier is set, or the signature verifies. */
export async function verified(v, resource, token, signature) {
    return v === undefined || (await v.verify(resource, token, signature));
}
