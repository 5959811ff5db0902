// Verifying fenceview's signed tokens with node:crypto's Ed25519: a
// signature over the token's own message, or one over a batch's Merkle
// root (RFC 9162) with the token's audit path.

import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
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
  /** Verified batch roots (root and signature) remembered, so a batch's tokens cost one Ed25519 verification; default 1024. */
  rootCacheSize?: number;
  /** The time source, for tests; default Date.now. */
  now?: () => number;
}

const sigText = /^[A-Za-z0-9_-]{86}$/;
const keyText = /^[A-Za-z0-9_-]{43}$/;

/**
 * The batch carrier: 0x02, the signature, index and size (u32 big-endian),
 * then the audit path. (0x01 carriers, whose signature did not cover the
 * size, are refused: their size could be rewritten and still verify.)
 */
const BATCH_TAG = 0x02;
const BATCH_HEAD = 1 + 64 + 4 + 4;
/** A tree of at most 2^32 leaves has paths of at most 32 hashes. */
const MAX_PATH = 32;
const carrierText = new RegExp(`^[A-Za-z0-9_-]{1,${Math.ceil(((BATCH_HEAD + 32 * MAX_PATH) * 4) / 3)}}$`);

/**
 * decodeSignature returns the 64 raw bytes of a signature over the token's
 * own message, or null when the text is not exactly the canonical
 * base64url without padding of 64 bytes (a batch carrier is null here:
 * see decodeCarrier). Lenient decoders let several texts stand for one
 * signature; fenceview's guards accept exactly one, and so does this.
 */
export function decodeSignature(text: string | undefined | null): Buffer | null {
  if (typeof text !== 'string' || !sigText.test(text)) return null;
  const raw = Buffer.from(text, 'base64url');
  if (raw.length !== 64 || raw.toString('base64url') !== text) return null;
  return raw;
}

/** A decoded signature carrier: a token's own signature, or a batch root's with the token's place in the batch. */
export type Carrier =
  | { kind: 'token'; signature: Buffer }
  | { kind: 'batch'; signature: Buffer; index: number; size: number; path: Buffer[] };

/**
 * decodeCarrier reads a signature carrier: 64 bytes (a signature of the
 * token's message), or 0x02 || signature || index || size || audit path
 * (a signature of the batch's root). Anything else, and any text that is
 * not the canonical base64url without padding, is null. Whether the path
 * has the right length for index and size is the verifier's to say.
 */
export function decodeCarrier(text: string | undefined | null): Carrier | null {
  if (typeof text !== 'string' || !carrierText.test(text)) return null;
  const raw = Buffer.from(text, 'base64url');
  if (raw.toString('base64url') !== text) return null;
  if (raw.length === 64) return { kind: 'token', signature: raw };
  if (raw.length < BATCH_HEAD || raw[0] !== BATCH_TAG || (raw.length - BATCH_HEAD) % 32 !== 0) return null;
  const path: Buffer[] = [];
  for (let o = BATCH_HEAD; o < raw.length; o += 32) path.push(raw.subarray(o, o + 32));
  return { kind: 'batch', signature: raw.subarray(1, 65), index: raw.readUInt32BE(65), size: raw.readUInt32BE(69), path };
}

/** leafHash is RFC 9162's hash of a leaf: SHA-256(0x00 || message). */
export function leafHash(message: Buffer): Buffer {
  return createHash('sha256').update(Buffer.of(0x00)).update(message).digest();
}

function nodeHash(left: Buffer, right: Buffer): Buffer {
  return createHash('sha256').update(Buffer.of(0x01)).update(left).update(right).digest();
}

/**
 * rootFromPath recomputes a tree's root from a leaf's hash, its index,
 * the tree's size and the audit path (RFC 9162 §2.1.3.2), or null when
 * the path does not fit index and size (too short, too long, index out of
 * the tree).
 */
export function rootFromPath(leaf: Buffer, index: number, size: number, path: Buffer[]): Buffer | null {
  if (!Number.isInteger(index) || !Number.isInteger(size) || index < 0 || index >= size || size > 0xffffffff) return null;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of path) {
    if (sn === 0) return null; // the path is longer than the tree is tall
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        // A right edge: climb past the levels where this node has no sibling.
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : null; // sn > 0: the path is too short
}

/** batchMessage is the text a batch's key signs: "fenceview/batch/v2 <size> <root as 64 lowercase hex digits>". */
export function batchMessage(size: number, root: Buffer): Buffer {
  return Buffer.from(`fenceview/batch/v2 ${size} ${root.toString('hex')}`, 'utf8');
}

/** What a verified signature proves: an exclusive (writer's) grant or a shared (reader's) one. */
export type Mode = 'exclusive' | 'shared';

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
 * signature is Ed25519 over "fenceview/v1 <resource> <token>" (a shared
 * grant's: the same followed by " shared") by one of the keys of GET
 * /v1/signing-keys, or over "fenceview/batch/v2 <size> <root>" where root
 * is the Merkle root the token's audit path leads to; verified roots are
 * remembered (by size, root and signature), so the tokens of one batch
 * cost one verification. It
 * follows rotation: a signature none of
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
  // Verified batch roots, least recently used first.
  #roots = new Map<string, true>();
  /** Ed25519 verifications made (each key tried counts one): a batch's tokens cost one between them. */
  verifications = 0;
  readonly #rootCacheSize: number;
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
    this.#rootCacheSize = opts.rootCacheSize ?? 1024;
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
    if (!same) {
      // A removed key takes its verifications with it.
      this.#cache.clear();
      this.#roots.clear();
    }
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

  #signed(msg: Buffer, sig: Buffer): boolean {
    for (const k of this.#keys) {
      this.verifications++;
      if (verify(null, msg, k.key, sig)) return true;
    }
    return false;
  }

  #check(resource: string, token: bigint, shared: boolean, c: Carrier): boolean {
    const msg = signedMessage(resource, token, shared);
    if (c.kind === 'token') return this.#signed(msg, c.signature);
    const root = rootFromPath(leafHash(msg), c.index, c.size, c.path);
    if (root === null) return false;
    // The size is part of what was signed: a root verified for one size
    // says nothing of another.
    const key = `${c.size} ${root.toString('hex')} ${c.signature.toString('hex')}`;
    if (this.#roots.has(key)) {
      // Most recently used last: the first is the one to evict.
      this.#roots.delete(key);
      this.#roots.set(key, true);
      return true;
    }
    if (!this.#signed(batchMessage(c.size, root), c.signature)) return false;
    if (this.#roots.size >= this.#rootCacheSize) {
      const oldest = this.#roots.keys().next();
      if (!oldest.done) this.#roots.delete(oldest.value);
    }
    this.#roots.set(key, true);
    return true;
  }

  /**
   * verify reports whether signature is a valid signature of an exclusive
   * grant of token for resource by a trusted key: a signature of the
   * token's message, or of its batch's root with the token's audit path.
   * A missing or malformed signature, a path that does not lead to a
   * signed root, or a shared grant's signature is false.
   */
  async verify(resource: string, token: bigint, signature: string | undefined | null): Promise<boolean> {
    return (await this.#verifyAs(resource, token, false, signature)) === true;
  }

  /** verifyShared is verify for a shared grant (a reader's): the message ending in " shared". */
  async verifyShared(resource: string, token: bigint, signature: string | undefined | null): Promise<boolean> {
    return (await this.#verifyAs(resource, token, true, signature)) === true;
  }

  /**
   * mode is what signature proves of token on resource: 'exclusive',
   * 'shared', or null when no trusted key signed it for either. read says
   * which to try first (a read's token is usually a reader's).
   */
  async mode(resource: string, token: bigint, signature: string | undefined | null, read = false): Promise<Mode | null> {
    const order: Mode[] = read ? ['shared', 'exclusive'] : ['exclusive', 'shared'];
    for (const m of order) {
      const ok = await this.#verifyAs(resource, token, m === 'shared', signature);
      if (ok === null) return null;
      if (ok) return m;
    }
    return null;
  }

  /** verifyAs checks one mode; null when the signature is not even a well-formed carrier. */
  async #verifyAs(resource: string, token: bigint, shared: boolean, signature: string | undefined | null): Promise<boolean | null> {
    const sig = decodeCarrier(signature);
    if (sig === null) return null;
    const cacheKey = `${resource}\n${token}\n${shared ? 's' : 'x'}\n${signature}`;
    if (this.#source !== null && this.#now() - this.#fetchedAt > this.#maxAge) await this.#tryRefresh();
    if (this.#cache.has(cacheKey)) return true;
    let ok = this.#check(resource, token, shared, sig);
    if (!ok && this.#source !== null && (await this.#tryRefresh())) ok = this.#check(resource, token, shared, sig);
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
