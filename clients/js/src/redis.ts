// Fenced writes to data kept in Redis or Valkey: the Lua script of
// fenceview's Go redisguard, with the same hash-tagged keys, so Go and Node
// writers can guard the same resources side by side.
//
//   {inventory:42}:fence_token   the mark, a decimal token
//   {inventory:42}:stock         the value named "stock"

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { accessOf, refusedFor, signatureRefusal, verifierOf, type Checker, type SignatureOptions } from './guard.js';
import { InvalidInputError, REASON_STALE, toToken, validateResourceId, type Access, type Decision } from './token.js';
import type { Verifier } from './verifier.js';

/**
 * The few commands the guard needs, as ioredis names them (a Redis,
 * Cluster or Valkey client of ioredis is one). Another client needs an
 * adapter of two methods.
 */
export interface RedisScripting {
  evalsha(sha1: string, numKeys: number, ...args: string[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...args: string[]): Promise<unknown>;
}

// The scripts are the Go guard's own files (guard/redisguard/*.lua), which
// the build copies into dist/redisguard/: the same bytes, so Go and Node
// writers share one cached script on the server. The write: KEYS[1] the
// mark, KEYS[2..n] the values' keys; ARGV[1] the token, ARGV[2..n] the
// values; tokens are compared as canonical decimal strings (Lua's numbers
// are doubles, which cannot tell 2^53 from 2^53+1). The read: the mark ("0"
// when none), then a flag and the value of each of KEYS[2..n], all from one
// moment.
const script = (name: string) => readFileSync(new URL(`./redisguard/${name}`, import.meta.url), 'utf8');
const WRITE_SCRIPT = script('write.lua');
const READ_SCRIPT = script('read.lua');

const sha1 = (s: string) => createHash('sha1').update(s).digest('hex');
const WRITE_SHA = sha1(WRITE_SCRIPT);
const READ_SHA = sha1(READ_SCRIPT);

/** The name the mark is kept under; no value may use it. */
export const MARK_NAME = 'fence_token';
/** The most values one write may carry. */
export const MAX_VALUES = 256;
const MAX_NAME_BYTES = 200;
const MAX_PREFIX_BYTES = 100;
const decimalToken = /^[1-9][0-9]{0,18}$/;

export interface RedisGuardOptions extends SignatureOptions {
  /** A namespace before every key: "shop:" gives "shop:{inventory:42}:stock". No braces. */
  prefix?: string;
}

/** RedisGuard fences writes to resources kept in Redis, one atomic script per write. */
export class RedisGuard implements Checker {
  readonly #redis: RedisScripting;
  readonly #prefix: string;
  readonly #verifier: Verifier | undefined;

  constructor(redis: RedisScripting, opts: RedisGuardOptions = {}) {
    const prefix = opts.prefix ?? '';
    if (Buffer.byteLength(prefix) > MAX_PREFIX_BYTES || /[{}]/.test(prefix)) {
      throw new InvalidInputError(`redis guard: prefix must be at most ${MAX_PREFIX_BYTES} bytes without '{' or '}'`);
    }
    this.#redis = redis;
    this.#prefix = prefix;
    this.#verifier = verifierOf(opts);
  }

  #tag(resource: string): string {
    validateResourceId(resource);
    // A hash tag ends at the first '}': such an id would share a slot with others.
    if (resource.includes('}')) throw new InvalidInputError("invalid resource id: '}' would end the Redis hash tag early");
    return `${this.#prefix}{${resource}}:`;
  }

  /** markKey is the key of resource's mark. */
  markKey(resource: string): string {
    return this.#tag(resource) + MARK_NAME;
  }

  /** key is the key of value name of resource, for reading it with your own client. */
  key(resource: string, name: string): string {
    checkName(name);
    return this.#tag(resource) + name;
  }

  #keys(resource: string, names: string[]): string[] {
    const tag = this.#tag(resource);
    if (names.length > MAX_VALUES) throw new InvalidInputError(`redis guard: ${names.length} values, at most ${MAX_VALUES}`);
    const seen = new Set<string>();
    const keys = [tag + MARK_NAME];
    for (const n of names) {
      checkName(n);
      if (seen.has(n)) throw new InvalidInputError(`redis guard: value ${JSON.stringify(n)} given twice`);
      seen.add(n);
      keys.push(tag + n);
    }
    return keys;
  }

  async #run(sha: string, src: string, keys: string[], args: string[]): Promise<string[]> {
    let reply: unknown;
    try {
      reply = await this.#redis.evalsha(sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!String((err as Error)?.message).startsWith('NOSCRIPT')) throw err;
      reply = await this.#redis.eval(src, keys.length, ...keys, ...args);
    }
    if (!Array.isArray(reply)) throw new Error(`redis guard: unexpected reply ${String(reply)}`);
    return reply.map((x) => (Buffer.isBuffer(x) ? x.toString('utf8') : String(x)));
  }

  /**
   * write stores values only if token is at least the resource's mark and
   * records token as the mark, in one script. A refusal is a Decision with
   * the mark that beat it; nothing was written. With access 'read' (and
   * no values) it is a guarded read: the same rule, and a shared (reader's)
   * token is fit for it; a write refuses one ('shared-token').
   */
  async write(resource: string, token: bigint, values: Record<string, string> = {}, opts: { signature?: string; access?: Access } = {}): Promise<Decision> {
    const t = toToken(token);
    const names = Object.keys(values);
    const access = accessOf(opts.access);
    if (access === 'read' && names.length > 0) throw new InvalidInputError('a read writes no values', 'access');
    const keys = this.#keys(resource, names);
    const why = await signatureRefusal(this.#verifier, resource, t, opts.signature, access);
    if (why !== null) return refusedFor(why, t, (await this.read(resource)).mark);
    const reply = await this.#run(WRITE_SHA, WRITE_SCRIPT, keys, [t.toString(), ...names.map((n) => String(values[n]))]);
    if (reply.length !== 2 || (reply[0] !== 'accepted' && reply[0] !== 'refused') || !(reply[1] === '0' || decimalToken.test(reply[1]!))) {
      throw new Error(`redis guard: unexpected reply ${JSON.stringify(reply)}`);
    }
    const mark = BigInt(reply[1]!);
    const accepted = reply[0] === 'accepted';
    // Never report a decision the server did not make.
    if (accepted !== t >= mark) throw new Error(`redis guard: script answered ${reply[0]} with mark ${mark} for token ${t}`);
    return accepted ? { accepted, presented: t, required: mark } : { accepted, reason: REASON_STALE, presented: t, required: mark };
  }

  /** check is write without values: check and record the token (for the middleware and callUnfenceable); access 'read' for a guarded read. */
  check(resource: string, token: bigint, signature?: string, access?: Access): Promise<Decision> {
    return this.write(resource, token, {}, signature === undefined ? { access: accessOf(access) } : { signature, access: accessOf(access) });
  }

  /** read returns the mark (0n when none) and the named values present, from one moment. */
  async read(resource: string, names: string[] = []): Promise<{ mark: bigint; values: Record<string, string> }> {
    const keys = this.#keys(resource, names);
    const reply = await this.#run(READ_SHA, READ_SCRIPT, keys, []);
    const m = reply[0] ?? '';
    if (m !== '0' && !decimalToken.test(m)) throw new Error(`redis guard: the mark at ${keys[0]} is not a fencing token`);
    const values: Record<string, string> = {};
    names.forEach((n, i) => {
      if (reply[1 + 2 * i] === '1') values[n] = reply[2 + 2 * i]!;
    });
    return { mark: BigInt(m), values };
  }
}

function checkName(name: string): void {
  if (typeof name !== 'string' || name === '') throw new InvalidInputError('redis guard: empty value name');
  if (Buffer.byteLength(name) > MAX_NAME_BYTES) throw new InvalidInputError(`redis guard: value name over ${MAX_NAME_BYTES} bytes`);
  if (name === MARK_NAME) throw new InvalidInputError(`redis guard: value name ${MARK_NAME} is the mark's`);
}
