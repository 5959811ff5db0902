// Verifying fenceview's signed tokens with node:crypto's Ed25519.

import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { signedMessage } from './token.js';

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
  signingKeys(): Promise<{ issuer: string; keys: SigningKey[] }>;
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

const sigText = /^[A-Za-z0-9_-]{86}$/;
const keyText = /^[A-Za-z0-9_-]{43}$/;

/**
 * decodeSignature returns the 64 raw bytes of a signature's text, or null
 * when the text is not exactly the canonical base64url without padding.
 * Lenient decoders let several texts stand for one signature; fenceview's
 * guards accept exactly one, and so does this.
 */
export function decodeSignature(text: string | undefined | null): Buffer | null {
  if (typeof text !== 'string' || !sigText.test(text)) return null;
  const raw = Buffer.from(text, 'base64url');
  if (raw.length !== 64 || raw.toString('base64url') !== text) return null;
  return raw;
}

/** decodePublicKey returns the 32 raw bytes of a public key's text, or null. */
export function decodePublicKey(text: string): Buffer | null {
  if (typeof text !== 'string' || !keyText.test(text)) return null;
  const raw = Buffer.from(text, 'base64url');
  if (raw.length !== 32 || raw.toString('base64url') !== text) return null;
  return raw;
}

interface Trusted {
  keyId: string;
  raw: Buffer;
  key: KeyObject;
}

/**
 * Verifier checks that a token was issued by a fenceview server: its
 * signature is Ed25519 over "fenceview/v1 <resource> <token>" by one of the
 * keys of GET /v1/signing-keys. It follows rotation: a signature none of
 * its keys verifies makes it fetch the keys again (rate-limited) before it
 * answers no, and keys older than maxAgeMs are fetched again first.
 */
export class Verifier {
  #source: KeySource | null;
  #keys: Trusted[] = [];
  #issuer = '';
  #fetchedAt = -Infinity;
  #attemptedAt = -Infinity;
  /** Fetches of the keys that failed (the keys already trusted stayed in use). */
  refreshErrors = 0;
  #refreshing: Promise<void> | null = null;
  #cache = new Map<string, true>();
  readonly #maxAge: number;
  readonly #minRefresh: number;
  readonly #cacheSize: number;
  readonly #now: () => number;

  /** A verifier of the keys source serves; call refresh() or verify() to load them. */
  constructor(source: KeySource | null, opts: VerifierOptions = {}) {
    this.#source = source;
    this.#maxAge = opts.maxAgeMs ?? 60_000;
    this.#minRefresh = opts.minRefreshMs ?? 1_000;
    this.#cacheSize = opts.cacheSize ?? 10_000;
    this.#now = opts.now ?? Date.now;
  }

  /** fromKeys is a verifier of fixed keys (base64url text), never refreshed. */
  static fromKeys(publicKeys: string[]): Verifier {
    const v = new Verifier(null);
    v.#setKeys(publicKeys.map((k, i) => ({ keyId: `key-${i}`, alg: 'Ed25519', publicKey: k })));
    return v;
  }

  /** The issuer id the keys were published under ('' before the first fetch). */
  get issuer(): string {
    return this.#issuer;
  }

  /** The ids of the keys trusted now. */
  get keyIds(): string[] {
    return this.#keys.map((k) => k.keyId);
  }

  /** The raw 32-byte public keys trusted now (what guard_trust_key takes). */
  get rawKeys(): Buffer[] {
    return this.#keys.map((k) => k.raw);
  }

  #setKeys(keys: SigningKey[]): void {
    const next: Trusted[] = [];
    for (const k of keys) {
      if (k.alg !== 'Ed25519') continue;
      const raw = decodePublicKey(k.publicKey);
      if (raw === null) continue;
      const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: k.publicKey }, format: 'jwk' });
      next.push({ keyId: k.keyId, raw, key });
    }
    // The active key first: a fresh grant is verified by the first key tried.
    const active = new Set(keys.filter((k) => k.active).map((k) => k.keyId));
    next.sort((a, b) => Number(active.has(b.keyId)) - Number(active.has(a.keyId)));
    const same = next.length === this.#keys.length && next.every((k, i) => k.raw.equals(this.#keys[i]!.raw));
    if (!same) this.#cache.clear(); // a removed key takes its verifications with it
    this.#keys = next;
  }

  /** refresh fetches the keys now (one fetch at a time). */
  async refresh(): Promise<void> {
    if (this.#source === null) return;
    if (this.#refreshing === null) {
      const src = this.#source;
      this.#refreshing = (async () => {
        try {
          const { issuer, keys } = await src.signingKeys();
          this.#issuer = issuer;
          this.#setKeys(keys);
          this.#fetchedAt = this.#now();
        } finally {
          this.#refreshing = null;
        }
      })();
    }
    return this.#refreshing;
  }

  /**
   * tryRefresh refreshes at most once per minRefreshMs, attempts that
   * failed included, and keeps the keys it has when the server cannot be
   * reached: an unreachable server must not turn every check into an error.
   * It reports whether the keys were fetched.
   */
  async #tryRefresh(): Promise<boolean> {
    if (this.#now() - this.#attemptedAt < this.#minRefresh) return false;
    this.#attemptedAt = this.#now();
    try {
      await this.refresh();
      return true;
    } catch {
      this.refreshErrors++;
      return false;
    }
  }

  #check(resource: string, token: bigint, sig: Buffer): boolean {
    const msg = signedMessage(resource, token);
    return this.#keys.some((k) => verify(null, msg, k.key, sig));
  }

  /**
   * verify reports whether signature is a valid signature of token for
   * resource by a trusted key. A missing or malformed signature is false.
   */
  async verify(resource: string, token: bigint, signature: string | undefined | null): Promise<boolean> {
    const sig = decodeSignature(signature);
    if (sig === null) return false;
    const cacheKey = `${resource}\n${token}\n${signature}`;
    if (this.#source !== null && this.#now() - this.#fetchedAt > this.#maxAge) await this.#tryRefresh();
    if (this.#cache.has(cacheKey)) return true;
    let ok = this.#check(resource, token, sig);
    if (!ok && this.#source !== null && (await this.#tryRefresh())) ok = this.#check(resource, token, sig);
    if (ok) {
      if (this.#cache.size >= this.#cacheSize) {
        const oldest = this.#cache.keys().next();
        if (!oldest.done) this.#cache.delete(oldest.value);
      }
      this.#cache.set(cacheKey, true);
    }
    return ok;
  }
}
