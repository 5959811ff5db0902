/** One public key of GET /v1/signing-keys. */
export interface SigningKey {
    keyId: string;
    alg: string;
    /** base64url of the raw 32-byte Ed25519 public key. */
    publicKey: string;
    createdAt?: string;
    active?: boolean;
}
/** Where a Verifier gets its keys from: Client.signingKeys does this. */
export interface KeySource {
    signingKeys(): Promise<{
        issuer: string;
        keys: SigningKey[];
    }>;
}
export interface VerifierOptions {
    /**
     * After this long (default 60 s) the keys are fetched again before the
     * next verification, so a removed key stops verifying.
     */
    maxAgeMs?: number;
    /**
     * A signature no trusted key verifies makes the verifier fetch the keys
     * again (a rotation it has not seen), at most once per this long
     * (default 1 s), so forgeries cannot make it hammer the server.
     */
    minRefreshMs?: number;
    /** Verified (resource, token, signature) remembered; default 10,000. */
    cacheSize?: number;
    /** The time source, for tests; default Date.now. */
    now?: () => number;
}
/**
 * decodeSignature returns the 64 raw bytes of a signature's text, or null
 * when the text is not exactly the canonical base64url without padding.
 * Lenient decoders let several texts stand for one signature; fenceview's
 * guards accept exactly one, and so does this.
 */
export declare function decodeSignature(text: string | undefined | null): Buffer | null;
/** decodePublicKey returns the 32 raw bytes of a public key's text, or null. */
export declare function decodePublicKey(text: string): Buffer | null;
/**
 * Verifier checks that a token was issued by a fenceview server: its
 * signature is Ed25519 over "fenceview/v1 <resource> <token>" by one of the
 * keys of GET /v1/signing-keys. It follows rotation: a signature none of
 * its keys verifies makes it fetch the keys again (rate-limited) before it
 * answers no, and keys older than maxAgeMs are fetched again first.
 */
export declare class Verifier {
    #private;
    /** Fetches of the keys that failed (the keys already trusted stayed in use). */
    refreshErrors: number;
    /** A verifier of the keys source serves; call refresh() or verify() to load them. */
    constructor(source: KeySource | null, opts?: VerifierOptions);
    /** fromKeys is a verifier of fixed keys (base64url text), never refreshed. */
    static fromKeys(publicKeys: string[]): Verifier;
    /** The issuer id the keys were published under ('' before the first fetch). */
    get issuer(): string;
    /** The ids of the keys trusted now. */
    get keyIds(): string[];
    /** The raw 32-byte public keys trusted now (what guard_trust_key takes). */
    get rawKeys(): Buffer[];
    /** refresh fetches the keys now (one fetch at a time). */
    refresh(): Promise<void>;
    /**
     * verify reports whether signature is a valid signature of token for
     * resource by a trusted key. A missing or malformed signature is false.
     */
    verify(resource: string, token: bigint, signature: string | undefined | null): Promise<boolean>;
}
