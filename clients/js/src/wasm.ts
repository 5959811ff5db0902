// The WebAssembly guard (guard.wasm, fenceview's Go guard built for WASI)
// hosted with node:wasi: the same decisions as every other fenceview guard,
// in process, with its marks restored from the server on start and its
// decisions reported back to it.

import { createRequire } from 'node:module';
import type { Client, DecisionReport } from './client.js';
import { onClose } from './call.js';
import { accessOf, badSignature, refusedFor, signatureRefusal, type Checker } from './guard.js';
import { InvalidInputError, REASON_STALE, toToken, type Access, type Decision } from './token.js';
import type { Verifier } from './verifier.js';

export interface WasmGuardOptions {
  /** The module's bytes, or a compiled WebAssembly.Module; default: GET /guard.wasm of client. */
  module?: Uint8Array | object;
  /** The server to restore marks from and report decisions to. */
  client?: Client;
  /** Seed the marks from the server's GET /v1/resources on start (default true with a client); a prefix restores only those ids. */
  restore?: boolean | { prefix: string };
  /** Report every decision to POST /v1/decisions (default true with a client). */
  report?: boolean;
  /** The source the reports carry; default "wasm-guard". */
  source?: string;
  /** How often queued reports are sent; default 1000 ms. */
  flushMs?: number;
  /**
   * Refuse tokens whose signature this verifier does not accept
   * (bad-signature). Default with a client: a verifier of the server's
   * signing keys (GET /v1/signing-keys), so unsigned and forged tokens are
   * refused.
   */
  verifier?: Verifier;
  /**
   * Accept unsigned tokens from a guard loaded with a client: no verifier
   * is made, and anyone who can reach the guard can present any token
   * (a forged high one locks the honest holder out). Default false.
   */
  acceptUnsignedTokens?: boolean;
}

interface Exports {
  memory: { buffer: ArrayBuffer };
  guard_alloc(size: number): number;
  guard_free(ptr: number): void;
  guard_check(ptr: number, len: number, token: bigint): bigint;
  guard_high_water(ptr: number, len: number): bigint;
  guard_seed(ptr: number, len: number, token: bigint): bigint;
  guard_last_required_ptr(): number;
}

// @types/node leaves the WebAssembly namespace to the DOM library; the
// package needs three of its calls, typed here.
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  compile(bytes: Uint8Array): Promise<object>;
  instantiate(module: object, imports: object): Promise<{ exports: unknown }>;
}
const WA = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

/** ABI codes of invalid input (docs/wasm-abi.md). */
const CODE_INVALID_RESOURCE = -1n;
const CODE_INVALID_TOKEN = -2n;

/** Ids are at most 160 bytes: one scratch buffer of that size serves every call. */
const SCRATCH = 160;
/** Reports queued beyond this are dropped (counted in dropped) rather than grow without bound while the server is away. */
const MAX_QUEUE = 100_000;
/** POST /v1/decisions takes at most this many at once. */
const MAX_BATCH = 1000;

const utf8 = new TextEncoder();

type WasiClass = typeof import('node:wasi').WASI;
let wasiLoaded: WasiClass | null = null;

/**
 * wasiClass loads node:wasi when a guard is first loaded, not with the
 * package, and without the ExperimentalWarning Node prints when it loads:
 * that one warning, and only while it loads (synchronously, so no other
 * code runs meanwhile), is kept from process.emitWarning.
 */
function wasiClass(): WasiClass {
  if (wasiLoaded !== null) return wasiLoaded;
  const emit = process.emitWarning;
  process.emitWarning = function (this: unknown, warning: string | Error, ...rest: unknown[]) {
    const opt = rest[0] as string | { type?: string } | undefined;
    const type = typeof opt === 'string' ? opt : opt?.type ?? (warning instanceof Error ? warning.name : undefined);
    const text = typeof warning === 'string' ? warning : warning.message;
    if (type === 'ExperimentalWarning' && text.startsWith('WASI ')) return;
    return (emit as (...a: unknown[]) => void).call(this, warning, ...rest);
  } as typeof process.emitWarning;
  try {
    wasiLoaded = (createRequire(import.meta.url)('node:wasi') as typeof import('node:wasi')).WASI;
  } finally {
    process.emitWarning = emit;
  }
  return wasiLoaded;
}

/**
 * verifierOf is the guard's verifier: the one given, else with a client
 * (unless acceptUnsignedTokens) one of the server's keys, fetched now.
 */
async function verifierOf(opts: WasmGuardOptions): Promise<Verifier | undefined> {
  if (opts.verifier !== undefined || opts.client === undefined || opts.acceptUnsignedTokens === true) return opts.verifier;
  const v = await opts.client.verifier();
  if (v.keyIds.length === 0) {
    throw new InvalidInputError('fenceview: the server publishes no signing keys, so every token would be refused: pass acceptUnsignedTokens: true to accept unsigned tokens');
  }
  return v;
}

/**
 * WasmGuard is one instance of guard.wasm: one set of marks, checked
 * synchronously, so a check and its record are one step no other request
 * can come between.
 */
export class WasmGuard implements Checker {
  #g: Exports;
  #scratch: number;
  #client: Client | undefined;
  #report: boolean;
  #source: string;
  #verifier: Verifier | undefined;
  #queue: DecisionReport[] = [];
  #timer: NodeJS.Timeout | null = null;
  #flushing: Promise<void> | null = null;
  #offClose: (() => void) | null = null;
  /** Reports dropped because the queue was full. */
  dropped = 0;

  private constructor(g: Exports, opts: WasmGuardOptions) {
    this.#g = g;
    this.#scratch = g.guard_alloc(SCRATCH) >>> 0;
    if (this.#scratch === 0) throw new Error('fenceview: guard_alloc failed');
    this.#client = opts.client;
    this.#report = opts.report ?? opts.client !== undefined;
    if (this.#report && this.#client === undefined) throw new InvalidInputError('fenceview: reporting needs a client');
    this.#source = opts.source ?? 'wasm-guard';
    this.#verifier = opts.verifier;
    if (this.#report) {
      this.#timer = setInterval(() => void this.flush().catch(() => {}), opts.flushMs ?? 1000);
      this.#timer.unref();
      // The client's close() sends what is queued, as this guard's close() does.
      this.#offClose = this.#client![onClose](() => this.close());
    }
  }

  /** load instantiates the module, seeds its marks from the server (unless restore is false) and starts reporting. */
  static async load(opts: WasmGuardOptions = {}): Promise<WasmGuard> {
    let mod = opts.module;
    if (mod === undefined) {
      if (opts.client === undefined) throw new InvalidInputError('fenceview: WasmGuard.load needs a module or a client');
      mod = await opts.client.guardModule();
    }
    const compiled = mod instanceof WA.Module ? mod : await WA.compile(mod as Uint8Array);
    const WASI = wasiClass();
    const wasi = new WASI({ version: 'preview1', args: [], env: {} });
    const instance = await WA.instantiate(compiled, wasi.getImportObject());
    wasi.initialize(instance); // _initialize: every export traps before it
    const g = new WasmGuard(instance.exports as unknown as Exports, { ...opts, verifier: await verifierOf(opts) });
    const restore = opts.restore ?? opts.client !== undefined;
    if (restore && opts.client !== undefined) await g.restore(typeof restore === 'object' ? restore.prefix : undefined);
    return g;
  }

  #withId(resource: string, fn: (ptr: number, len: number) => bigint): bigint {
    if (typeof resource !== 'string' || !resource.isWellFormed()) return CODE_INVALID_RESOURCE;
    const bytes = utf8.encode(resource);
    if (bytes.length === 0 || bytes.length > SCRATCH) return CODE_INVALID_RESOURCE; // the guard says the same without reading memory
    // A fresh view each time: memory may have grown, detaching old ones.
    new Uint8Array(this.#g.memory.buffer, this.#scratch, bytes.length).set(bytes);
    return fn(this.#scratch, bytes.length);
  }

  #lastRequired(): bigint {
    return new DataView(this.#g.memory.buffer).getBigInt64(this.#g.guard_last_required_ptr() >>> 0, true);
  }

  /**
   * checkUnsigned applies the rule, synchronously. Invalid input throws
   * InvalidInputError. A guard with a verifier refuses every token here
   * (bad-signature), as guard.wasm does once a key is trusted: use check.
   */
  checkUnsigned(resource: string, token: bigint): Decision {
    const t = toToken(token);
    if (this.#verifier !== undefined) {
      const d = badSignature(t, this.highWater(resource));
      this.#queueReport(resource, d, undefined);
      return d;
    }
    const code = this.#withId(resource, (p, n) => this.#g.guard_check(p, n, t));
    return this.#decided(resource, t, code, undefined);
  }

  #decided(resource: string, token: bigint, code: bigint, signature: string | undefined): Decision {
    if (code === CODE_INVALID_RESOURCE) throw new InvalidInputError('invalid resource id');
    if (code === CODE_INVALID_TOKEN) throw new InvalidInputError('missing or invalid fencing token');
    if (code < 0n) throw new Error(`fenceview: guard.wasm failed (code ${code})`);
    const d: Decision =
      code === 0n
        ? { accepted: true, presented: token, required: this.#lastRequired() }
        : { accepted: false, reason: REASON_STALE, presented: token, required: code };
    this.#queueReport(resource, d, signature);
    return d;
  }

  /**
   * check applies the rule (a read's as a write's); with a verifier, a
   * token whose signature does not verify is refused as bad-signature
   * first, a write shown a shared (reader's) token as shared-token, and
   * the mark stays.
   */
  async check(resource: string, token: bigint, signature?: string, access?: Access): Promise<Decision> {
    const a = accessOf(access);
    if (this.#verifier === undefined) return this.checkUnsigned(resource, token);
    const t = toToken(token);
    const mark = this.highWater(resource); // validates the id before any verification
    const why = await signatureRefusal(this.#verifier, resource, t, signature, a);
    if (why !== null) {
      const d = refusedFor(why, t, mark);
      this.#queueReport(resource, d, signature);
      return d;
    }
    // No await between here and the check: nothing else runs in between.
    const code = this.#withId(resource, (p, n) => this.#g.guard_check(p, n, t));
    return this.#decided(resource, t, code, signature);
  }

  /** highWater is the resource's mark, 0n when none. */
  highWater(resource: string): bigint {
    const v = this.#withId(resource, (p, n) => this.#g.guard_high_water(p, n));
    if (v < 0n) throw new InvalidInputError('invalid resource id');
    return v;
  }

  /** seed raises the mark to at least token without a decision (restoring state) and returns the mark. */
  seed(resource: string, token: bigint): bigint {
    const t = toToken(token);
    const v = this.#withId(resource, (p, n) => this.#g.guard_seed(p, n, t));
    if (v === CODE_INVALID_RESOURCE) throw new InvalidInputError('invalid resource id');
    if (v < 0n) throw new InvalidInputError('missing or invalid fencing token');
    return v;
  }

  /** restore seeds every mark the server knows (with prefix); returns how many it seeded. */
  async restore(prefix?: string): Promise<number> {
    if (this.#client === undefined) throw new InvalidInputError('fenceview: restore needs a client');
    let n = 0;
    const marks = await this.#client.highWaterMarks(prefix === undefined ? {} : { prefix });
    for (const [id, mark] of marks) {
      try {
        this.seed(id, mark);
        n++;
      } catch {
        // An id this guard cannot hold (never expected from the server): skip it.
      }
    }
    return n;
  }

  #queueReport(resource: string, d: Decision, signature: string | undefined): void {
    if (!this.#report) return;
    if (this.#queue.length >= MAX_QUEUE) {
      this.#queue.shift();
      this.dropped++;
    }
    const r: DecisionReport = { resourceId: resource, token: d.presented, accepted: d.accepted, source: this.#source, at: new Date().toISOString() };
    if (!d.accepted) {
      r.required = d.required;
      if (d.reason !== undefined) r.reason = d.reason;
    }
    if (signature !== undefined && signature !== '') r.signature = signature;
    this.#queue.push(r);
  }

  /** The reports waiting to be sent. */
  get pending(): number {
    return this.#queue.length;
  }

  /** flush sends the queued reports now; on failure they stay queued for the next flush. */
  async flush(): Promise<void> {
    if (this.#client === undefined) return;
    while (this.#flushing !== null) await this.#flushing;
    const client = this.#client;
    this.#flushing = (async () => {
      while (this.#queue.length > 0) {
        const batch = this.#queue.slice(0, MAX_BATCH);
        await client.report(batch);
        this.#queue.splice(0, batch.length);
      }
    })().finally(() => {
      this.#flushing = null;
    });
    return this.#flushing;
  }

  /** close sends what is queued and stops the reporting timer; the client's close() does it too. */
  async close(): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    this.#offClose?.();
    this.#offClose = null;
    await this.flush();
  }
}
