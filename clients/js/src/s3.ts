// Fenced writes to objects in S3 and S3-compatible stores, over
// @aws-sdk/client-s3 (an optional peer dependency, loaded on first use):
// the Go guard/s3guard's protocol, so Go and Node writers can guard the
// same objects side by side.
//
//   x-amz-meta-fence-token      the object's mark, a decimal token
//   x-amz-meta-fence-tombstone  "true" on the empty object delete() leaves
//
// A write HEADs the object (mark, ETag), refuses a lower token, and
// otherwise PUTs the body and the new mark with If-Match: <etag> (If-None-
// Match: * for a new object). A 412 means another write came first: read
// and decide again, until decided.

import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { signatureRefusal, verifierOf, type SignatureOptions } from './guard.js';
import { InvalidInputError, REASON_STALE, toToken, validateResourceId, type Decision } from './token.js';
import type { Verifier } from './verifier.js';
import type { DecisionReport } from './client.js';

/** The user metadata names the guard keeps on an object. */
export const FENCE_TOKEN_METADATA = 'fence-token';
export const TOMBSTONE_METADATA = 'fence-tombstone';
/** The least maxAttempts takes: 16 writers racing for one object must all get a decision. */
export const MIN_ATTEMPTS = 16;

const MAX_KEY_BYTES = 1024;
const MAX_METADATA_BYTES = 2048;
const MAX_PUT_BYTES = 5 * 1024 ** 3;
const MAX_CONTENT_TYPE_BYTES = 256;
const DEFAULT_MAX_READ_BYTES = 64 * 1024 * 1024;
const MAX_SAME = 3;
const decimalToken = /^[1-9][0-9]{0,18}$/;
const SCOPE_MISMATCH = 'scope-mismatch';

/**
 * The S3 client, as the guard uses it: an S3Client of @aws-sdk/client-s3
 * (its send). The guard builds the commands itself.
 */
export interface S3Sender {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  send(command: any, options?: { abortSignal?: AbortSignal }): Promise<any>;
}

/** Where reports go: the fenceview Client (its report). */
interface Reporter {
  report(decisions: DecisionReport[], signal?: AbortSignal): Promise<number>;
}

/**
 * A token as a guard takes it: a bigint, or a lock (or anything with its
 * token, signature and resource).
 */
export type S3Token = bigint | { token: bigint; signature?: string | undefined; resource?: string | undefined };

/** A body read again from its start on every attempt: open() gives a fresh stream of size bytes. */
export interface S3Stream {
  size: number;
  open(): Readable;
}

/** One write: the key, the body and what the store keeps beside it. */
export interface S3PutObject {
  key: string;
  body?: Uint8Array | string | S3Stream;
  contentType?: string;
  /** User metadata beside the mark: names of [a-z0-9._-], values of printable ASCII, 2 KB in all. */
  metadata?: Record<string, string>;
}

export interface S3GuardOptions extends SignatureOptions {
  /** Which lock governs an object (signatures, reports); default: the key itself. */
  resource?: (key: string) => string;
  /** The source of the reports; default "s3guard". */
  source?: string;
  /** Report refusals to the client's server; default true when a client is given. */
  report?: boolean;
  /** A bound on the conditional writes of one call (at least 16); default: none but the signal. */
  maxAttempts?: number;
  /** The largest body get() reads; default 64 MiB. */
  maxReadBytes?: number;
}

/** What a fenced read found. */
export interface S3Read extends Decision {
  /** The object is there (not absent, not a tombstone). */
  found: boolean;
  body?: Uint8Array;
  contentType?: string;
  metadata?: Record<string, string>;
}

interface State {
  exists: boolean;
  etag: string;
  mark: bigint;
  tombstone: boolean;
  size: number; // -1: not said
}

interface Write {
  key: string;
  body: Body;
  contentType: string | undefined;
  metadata: Record<string, string>;
  tombstone: boolean;
  extra?: Record<string, unknown>; // headers kept when a read rewrites the object
}

type SDK = typeof import('@aws-sdk/client-s3');
let sdk: Promise<SDK> | undefined;

/** The SDK's commands, loaded on first use so the package does not need it installed. */
function commands(): Promise<SDK> {
  sdk ??= import('@aws-sdk/client-s3').catch((err: unknown) => {
    sdk = undefined;
    throw new Error('fenceview: S3Guard needs @aws-sdk/client-s3 (npm install @aws-sdk/client-s3)', { cause: err });
  });
  return sdk;
}

/** S3Guard fences writes to the objects of one bucket with conditional PUTs. */
export class S3Guard {
  readonly bucket: string;
  readonly #s3: S3Sender;
  readonly #verifier: Verifier | undefined;
  readonly #reporter: Reporter | undefined;
  readonly #resource: (key: string) => string;
  readonly #source: string;
  readonly #maxAttempts: number;
  readonly #maxRead: number;

  constructor(s3: S3Sender, bucket: string, opts: S3GuardOptions = {}) {
    if (s3 === null || typeof s3 !== 'object' || typeof s3.send !== 'function') throw new InvalidInputError('s3 guard: an S3Client is required');
    if (typeof bucket !== 'string' || bucket === '' || Buffer.byteLength(bucket) > 255 || bucket.includes('/') || /[\x00-\x1f\x7f]/.test(bucket)) {
      throw new InvalidInputError(`s3 guard: bucket name ${JSON.stringify(String(bucket).slice(0, 32))}`);
    }
    if (opts.maxAttempts !== undefined && !(Number.isInteger(opts.maxAttempts) && opts.maxAttempts >= MIN_ATTEMPTS)) {
      throw new InvalidInputError(`s3 guard: maxAttempts must be an integer of at least ${MIN_ATTEMPTS}`);
    }
    if (opts.maxReadBytes !== undefined && !(Number.isSafeInteger(opts.maxReadBytes) && opts.maxReadBytes >= 0)) {
      throw new InvalidInputError('s3 guard: maxReadBytes must be a non-negative integer');
    }
    const source = opts.source ?? 's3guard';
    if (typeof source !== 'string' || source === '' || Buffer.byteLength(source) > 80) throw new InvalidInputError('s3 guard: source must be 1..80 bytes');
    this.#s3 = s3;
    this.bucket = bucket;
    this.#verifier = verifierOf(opts);
    const client = opts.client as Partial<Reporter> | undefined;
    const report = opts.report ?? typeof client?.report === 'function';
    if (report && typeof client?.report !== 'function') throw new InvalidInputError('s3 guard: reporting needs a client');
    this.#reporter = report ? (client as Reporter) : undefined;
    this.#resource = opts.resource ?? ((key) => key);
    this.#source = source;
    this.#maxAttempts = opts.maxAttempts ?? 0;
    this.#maxRead = opts.maxReadBytes ?? DEFAULT_MAX_READ_BYTES;
  }

  /** signed is true when the guard refuses tokens whose signature does not verify. */
  get signed(): boolean {
    return this.#verifier !== undefined;
  }

  /**
   * put writes body to key under token if token is at least the object's
   * mark, and records token as the mark, in one conditional PUT. A refusal
   * is a Decision with the mark that beat it; nothing was written.
   */
  async put(key: string, body: Uint8Array | string, token: S3Token, opts: { signal?: AbortSignal } = {}): Promise<Decision> {
    return this.putObject({ key, body }, token, opts);
  }

  /** putObject is put with a content type, user metadata, or a streamed body. */
  async putObject(obj: S3PutObject, token: S3Token, opts: { signal?: AbortSignal } = {}): Promise<Decision> {
    const t = presented(token);
    checkKey(obj.key);
    const body = toBody(obj.body);
    const metadata = userMetadata(obj.metadata);
    const contentType = obj.contentType;
    if (contentType !== undefined && (typeof contentType !== 'string' || Buffer.byteLength(contentType) > MAX_CONTENT_TYPE_BYTES || !/^[\x20-\x7e]*$/.test(contentType))) {
      throw new InvalidInputError(`s3 guard: content type must be at most ${MAX_CONTENT_TYPE_BYTES} bytes of printable ASCII`);
    }
    return this.#decideAndWrite({ key: obj.key, body, contentType, metadata, tombstone: false }, t, opts.signal);
  }

  /**
   * delete replaces the object with a tombstone under a token at least its
   * mark: an empty object whose metadata keeps the mark, so a writer with an
   * older token cannot create the object again. get() reports it absent.
   */
  async delete(key: string, token: S3Token, opts: { signal?: AbortSignal } = {}): Promise<Decision> {
    const t = presented(token);
    checkKey(key);
    return this.#decideAndWrite({ key, body: toBody(undefined), contentType: undefined, metadata: {}, tombstone: true }, t, opts.signal);
  }

  /**
   * purge deletes the object (tombstone or not) under a token at least its
   * mark, with DeleteObject conditional on the ETag read. The mark goes
   * with it: only for keys no fenced writer will write again.
   */
  async purge(key: string, token: S3Token, opts: { signal?: AbortSignal } = {}): Promise<Decision> {
    const t = presented(token);
    checkKey(key);
    const res = this.#resourceOf(key, t);
    const reason = await this.#refusal(res, t);
    const { DeleteObjectCommand } = await commands();
    const loop = new Loop(this.#maxAttempts);
    for (;;) {
      const st = await this.#head(key, opts.signal);
      const d = decide(st.mark, t.token, reason);
      if (!d.accepted) return this.#reported(res, d, t.signature);
      if (!st.exists) return d;
      try {
        await this.#s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key, IfMatch: st.etag }), sendOpts(opts.signal));
        return d;
      } catch (err) {
        loop.again(err, st, opts.signal);
      }
    }
  }

  /**
   * get is a fenced read: the object's body if token is at least its mark,
   * and the mark rises to token (the object is written back under the new
   * mark, or a tombstone left where there is none), so no write under an
   * older token lands after this read.
   */
  async get(key: string, token: S3Token, opts: { signal?: AbortSignal } = {}): Promise<S3Read> {
    const t = presented(token);
    checkKey(key);
    const res = this.#resourceOf(key, t);
    const reason = await this.#refusal(res, t, 'read');
    const loop = new Loop(this.#maxAttempts);
    for (;;) {
      const { read, st, w } = await this.#get(key, opts.signal);
      const d = decide(st.mark, t.token, reason);
      if (!d.accepted) return { ...(await this.#reported(res, d, t.signature)), found: false };
      if (st.exists && t.token === st.mark) return { ...d, ...read };
      try {
        await this.#putConditional(w, st, t.token, opts.signal);
        return { ...d, ...read };
      } catch (err) {
        loop.again(err, st, opts.signal);
      }
    }
  }

  /**
   * checkStore finds out whether the store refuses what the guard needs it
   * to refuse, on key, a scratch key nobody else writes (the Go guard's
   * CheckStore): it creates the object, then tries a second creation, a
   * PutObject, a multipart upload and a DeleteObject, each with a condition
   * that does not hold; each must meet a 412. It deletes the object and
   * returns the conditions the store ignored ([] for a store the guard can
   * rely on; one that ignores only DeleteObject's makes purge a plain delete).
   */
  async checkStore(key: string): Promise<string[]> {
    checkKey(key);
    const c = await commands();
    const Bucket = this.bucket;
    const stale = '"00000000000000000000000000000000"';
    const first = 's3guard store check: first';
    try {
      await this.#s3.send(new c.PutObjectCommand({ Bucket, Key: key, Body: first, IfNoneMatch: '*' }));
    } catch (err) {
      if (conflict(err)) throw new InvalidInputError(`s3 guard: ${key} exists: checkStore needs a key of its own`);
      throw err;
    }
    const ignored: string[] = [];
    const refused = async (what: string, attempt: () => Promise<unknown>) => {
      try {
        await attempt();
        ignored.push(what);
      } catch (err) {
        if (!conflict(err)) throw err;
      }
    };
    try {
      await refused('PutObject If-None-Match: *', () => this.#s3.send(new c.PutObjectCommand({ Bucket, Key: key, Body: 'second', IfNoneMatch: '*' })));
      await refused('PutObject If-Match', () => this.#s3.send(new c.PutObjectCommand({ Bucket, Key: key, Body: 'stale', IfMatch: stale })));
      await refused('CompleteMultipartUpload If-Match', async () => {
        const up = await this.#s3.send(new c.CreateMultipartUploadCommand({ Bucket, Key: key }));
        try {
          const part = await this.#s3.send(new c.UploadPartCommand({ Bucket, Key: key, UploadId: up.UploadId, PartNumber: 1, Body: 'multipart' }));
          await this.#s3.send(new c.CompleteMultipartUploadCommand({ Bucket, Key: key, UploadId: up.UploadId, IfMatch: stale, MultipartUpload: { Parts: [{ ETag: part.ETag, PartNumber: 1 }] } }));
        } catch (err) {
          await this.#s3.send(new c.AbortMultipartUploadCommand({ Bucket, Key: key, UploadId: up.UploadId })).catch(() => {});
          throw err;
        }
      });
      const out = await this.#s3.send(new c.GetObjectCommand({ Bucket, Key: key }));
      if ((await out.Body.transformToString()) !== first && ignored.length === 0) ignored.push('a write refused with a 412 (it landed anyway)');
      await refused('DeleteObject If-Match', () => this.#s3.send(new c.DeleteObjectCommand({ Bucket, Key: key, IfMatch: stale })));
    } finally {
      await this.#s3.send(new c.DeleteObjectCommand({ Bucket, Key: key })).catch(() => {});
    }
    return ignored;
  }

  /** mark is the object's mark: 0n when it is absent or was written without the guard. */
  async mark(key: string, opts: { signal?: AbortSignal } = {}): Promise<bigint> {
    checkKey(key);
    return (await this.#head(key, opts.signal)).mark;
  }

  async #decideAndWrite(w: Write, t: Presented, signal: AbortSignal | undefined): Promise<Decision> {
    const res = this.#resourceOf(w.key, t);
    const reason = await this.#refusal(res, t);
    const loop = new Loop(this.#maxAttempts);
    for (;;) {
      const st = await this.#head(w.key, signal);
      const d = decide(st.mark, t.token, reason);
      if (!d.accepted) return this.#reported(res, d, t.signature);
      try {
        await this.#putConditional(w, st, t.token, signal);
        return d;
      } catch (err) {
        loop.again(err, st, signal);
      }
    }
  }

  #resourceOf(key: string, t: Presented): string {
    const res = this.#resource(key);
    if (this.#verifier !== undefined || this.#reporter !== undefined || t.resource !== undefined) validateResourceId(res);
    return res;
  }

  /**
   * The reason t may not be compared: another lock's token; in signed mode a
   * signature that proves no grant, or a shared (reader's) grant's token
   * presented for a write. '' when it may.
   */
  async #refusal(res: string, t: Presented, access: 'read' | 'write' = 'write'): Promise<string> {
    if (t.resource !== undefined && t.resource !== res) return SCOPE_MISMATCH;
    return (await signatureRefusal(this.#verifier, res, t.token, t.signature, access)) ?? '';
  }

  async #reported(res: string, d: Decision, signature: string | undefined): Promise<Decision> {
    if (this.#reporter === undefined || d.accepted) return d;
    const r: DecisionReport = { resourceId: res, token: d.presented, accepted: false, required: d.required, reason: d.reason!, source: this.#source };
    if (signature !== undefined) r.signature = signature;
    try {
      await this.#reporter.report([r]);
    } catch (err) {
      // The refusal stands (nothing was written); the caller learns it was not recorded.
      throw new NotReportedError(d, err);
    }
    return d;
  }

  async #head(key: string, signal: AbortSignal | undefined): Promise<State> {
    const { HeadObjectCommand } = await commands();
    try {
      const out = await this.#s3.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }), sendOpts(signal));
      return stateOf(key, out.ETag, out.Metadata, out.ContentLength);
    } catch (err) {
      if (notFound(err)) return { exists: false, etag: '', mark: 0n, tombstone: false, size: -1 };
      throw err;
    }
  }

  async #get(key: string, signal: AbortSignal | undefined): Promise<{ read: Omit<S3Read, keyof Decision>; st: State; w: Write }> {
    const { GetObjectCommand } = await commands();
    let out;
    try {
      out = await this.#s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }), sendOpts(signal));
    } catch (err) {
      if (notFound(err)) {
        return { read: { found: false }, st: { exists: false, etag: '', mark: 0n, tombstone: false, size: -1 }, w: { key, body: toBody(undefined), contentType: undefined, metadata: {}, tombstone: true } };
      }
      throw err;
    }
    if (typeof out.ContentLength === 'number' && out.ContentLength > this.#maxRead) {
      out.Body?.destroy?.();
      throw new InvalidInputError(`s3 guard: ${key} is ${out.ContentLength} bytes, the guard reads at most ${this.#maxRead}`);
    }
    const data: Uint8Array = out.Body === undefined ? new Uint8Array() : await out.Body.transformToByteArray();
    if (data.length > this.#maxRead) throw new InvalidInputError(`s3 guard: ${key} is over ${this.#maxRead} bytes`);
    const st = stateOf(key, out.ETag, out.Metadata, out.ContentLength);
    const own: Record<string, string> = {};
    for (const [k, v] of Object.entries((out.Metadata ?? {}) as Record<string, string>)) {
      const n = k.toLowerCase();
      if (n !== FENCE_TOKEN_METADATA && n !== TOMBSTONE_METADATA) own[n] = v;
    }
    const extra: Record<string, unknown> = {};
    for (const h of ['CacheControl', 'ContentDisposition', 'ContentEncoding', 'ContentLanguage']) if (out[h] !== undefined) extra[h] = out[h];
    const w: Write = { key, body: toBody(data), contentType: out.ContentType, metadata: own, tombstone: st.tombstone, extra };
    const read: Omit<S3Read, keyof Decision> = st.tombstone ? { found: false } : { found: true, body: data, metadata: own, ...(out.ContentType !== undefined ? { contentType: out.ContentType } : {}) };
    return { read, st, w };
  }

  /**
   * putConditional writes w under token, conditional on the state read. A
   * write must change the ETag it is conditional on: when the body's MD5 is
   * that ETag (the same bytes again), it goes as a one-part multipart upload,
   * whose ETag has another form.
   */
  async #putConditional(w: Write, st: State, token: bigint, signal: AbortSignal | undefined): Promise<void> {
    const sdkc = await commands();
    const metadata: Record<string, string> = { ...w.metadata, [FENCE_TOKEN_METADATA]: token.toString() };
    if (w.tombstone) metadata[TOMBSTONE_METADATA] = 'true';
    const cond = st.exists ? { IfMatch: st.etag } : { IfNoneMatch: '*' };
    const head = { Bucket: this.bucket, Key: w.key, Metadata: metadata, ...(w.contentType ? { ContentType: w.contentType } : {}), ...w.extra };
    if (st.exists && (st.size < 0 || st.size === w.body.size) && sameETag(st.etag, await w.body.md5())) {
      const up = await this.#s3.send(new sdkc.CreateMultipartUploadCommand(head), sendOpts(signal));
      const uploadId: string | undefined = up.UploadId;
      if (!uploadId) throw new Error(`s3 guard: multipart upload of ${w.key}: the store gave no upload id`);
      try {
        const part = await this.#s3.send(new sdkc.UploadPartCommand({ Bucket: this.bucket, Key: w.key, UploadId: uploadId, PartNumber: 1, Body: w.body.payload(), ContentLength: w.body.size }), sendOpts(signal));
        await this.#s3.send(new sdkc.CompleteMultipartUploadCommand({ Bucket: this.bucket, Key: w.key, UploadId: uploadId, MultipartUpload: { Parts: [{ ETag: part.ETag, PartNumber: 1 }] }, ...cond }), sendOpts(signal));
      } catch (err) {
        // Best effort: an upload left behind is never visible, and a lifecycle rule removes it.
        await this.#s3.send(new sdkc.AbortMultipartUploadCommand({ Bucket: this.bucket, Key: w.key, UploadId: uploadId })).catch(() => {});
        throw err;
      }
      return;
    }
    await this.#s3.send(new sdkc.PutObjectCommand({ ...head, Body: w.body.payload(), ContentLength: w.body.size, ...cond }), sendOpts(signal));
  }
}

/** NotReportedError: a refusal the fenceview server could not record. The refusal stands: nothing was written. */
export class NotReportedError extends Error {
  readonly decision: Decision;
  constructor(decision: Decision, cause: unknown) {
    super(`s3 guard: refusal (${decision.reason}) not reported to fenceview`, { cause });
    this.name = 'NotReportedError';
    this.decision = decision;
  }
}

/** ContendedError: every attempt maxAttempts allows met a 412; nothing of the call was written. */
export class ContendedError extends Error {
  constructor(attempts: number, cause: unknown) {
    super(`s3 guard: other writes kept coming first (${attempts} attempts)`, { cause });
    this.name = 'ContendedError';
  }
}

interface Presented {
  token: bigint;
  signature: string | undefined;
  resource: string | undefined;
}

function presented(t: S3Token): Presented {
  if (typeof t === 'bigint') return { token: toToken(t), signature: undefined, resource: undefined };
  if (t === null || typeof t !== 'object') throw new InvalidInputError('s3 guard: a token is a bigint or a lock');
  return { token: toToken(t.token), signature: t.signature ?? undefined, resource: t.resource ?? undefined };
}

function decide(mark: bigint, token: bigint, reason: string): Decision {
  if (reason !== '') return { accepted: false, reason, presented: token, required: mark };
  return token >= mark ? { accepted: true, presented: token, required: mark } : { accepted: false, reason: REASON_STALE, presented: token, required: mark };
}

/** Loop counts one call's conditional writes that met a 412, and ends it when it must. */
class Loop {
  #attempts = 0;
  #same = 0;
  #broken = 0;
  #last: State | undefined;
  constructor(readonly max: number) {}

  again(err: unknown, st: State, signal: AbortSignal | undefined): void {
    if (!conflict(err)) {
      // A store may answer 412 before it has read a streamed body and close
      // the connection, which Node sees as EPIPE or ECONNRESET, not as the
      // 412. The write's outcome is unknown, and reading again tells: the
      // write is conditional, so a write that did land is read back as this
      // token's (accepted, written again), one that did not is retried.
      if (!brokenWrite(err) || ++this.#broken > MAX_SAME) throw err;
    }
    this.#attempts++;
    const l = this.#last;
    if (l !== undefined && l.exists === st.exists && l.etag === st.etag && l.mark === st.mark) {
      if (++this.#same >= MAX_SAME) throw new Error('s3 guard: the store refuses conditional writes that match', { cause: err });
    } else {
      this.#same = 0;
    }
    this.#last = st;
    if (this.max > 0 && this.#attempts >= this.max) throw new ContendedError(this.#attempts, err);
    signal?.throwIfAborted();
  }
}

function sendOpts(signal: AbortSignal | undefined): { abortSignal?: AbortSignal } {
  return signal === undefined ? {} : { abortSignal: signal };
}

function brokenWrite(err: unknown): boolean {
  const code = (err as { code?: string })?.code;
  return code === 'EPIPE' || code === 'ECONNRESET';
}

function statusOf(err: unknown): number {
  return (err as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode ?? 0;
}

function codeOf(err: unknown): string {
  const e = err as { Code?: string; name?: string };
  return e?.Code ?? e?.name ?? '';
}

function notFound(err: unknown): boolean {
  const c = codeOf(err);
  return c === 'NotFound' || c === 'NoSuchKey' || (statusOf(err) === 404 && c !== 'NoSuchBucket');
}

/** conflict: the object changed since it was read (412; 409 ConditionalRequestConflict; 404 NoSuchKey on If-Match). */
function conflict(err: unknown): boolean {
  const c = codeOf(err);
  switch (statusOf(err)) {
    case 412:
      return true;
    case 409:
      return c === 'ConditionalRequestConflict' || c === 'OperationAborted';
    case 404:
      return c === 'NoSuchKey';
  }
  return c === 'PreconditionFailed';
}

function stateOf(key: string, etag: string | undefined, meta: Record<string, string> | undefined, size: number | undefined): State {
  if (!etag) throw new Error(`s3 guard: ${key} has no ETag: the store cannot make conditional writes`);
  const st: State = { exists: true, etag, mark: 0n, tombstone: false, size: typeof size === 'number' ? size : -1 };
  const m = metaValue(meta, FENCE_TOKEN_METADATA);
  if (m !== undefined) {
    // Someone else wrote it: refuse to guess.
    if (!decimalToken.test(m) || BigInt(m) > (1n << 63n) - 1n) throw new Error(`s3 guard: the mark of ${key} (x-amz-meta-${FENCE_TOKEN_METADATA}) is not a fencing token`);
    st.mark = BigInt(m);
  }
  st.tombstone = metaValue(meta, TOMBSTONE_METADATA) === 'true';
  return st;
}

function metaValue(meta: Record<string, string> | undefined, name: string): string | undefined {
  if (meta === undefined) return undefined;
  if (meta[name] !== undefined) return meta[name];
  for (const [k, v] of Object.entries(meta)) if (k.toLowerCase() === name) return v;
  return undefined;
}

function sameETag(etag: string, md5Hex: string): boolean {
  return etag.replace(/^"|"$/g, '').toLowerCase() === md5Hex;
}

function checkKey(key: unknown): asserts key is string {
  if (typeof key !== 'string' || key === '') throw new InvalidInputError('s3 guard: empty object key');
  if (Buffer.byteLength(key) > MAX_KEY_BYTES) throw new InvalidInputError(`s3 guard: object key of ${Buffer.byteLength(key)} bytes, at most ${MAX_KEY_BYTES}`);
  if (key.isWellFormed !== undefined && !key.isWellFormed()) throw new InvalidInputError('s3 guard: object key is not UTF-8');
  if (/[\x00-\x1f\x7f]/.test(key)) throw new InvalidInputError('s3 guard: object key has a control character');
}

function userMetadata(meta: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  let size = FENCE_TOKEN_METADATA.length + 19 + TOMBSTONE_METADATA.length + 4;
  for (const k of Object.keys(meta ?? {}).sort()) {
    const v = meta![k];
    const name = k.toLowerCase();
    if (name === '') throw new InvalidInputError('s3 guard: empty metadata name');
    if (name === FENCE_TOKEN_METADATA || name === TOMBSTONE_METADATA) throw new InvalidInputError(`s3 guard: metadata name ${name} is the guard's`);
    if (!/^[a-z0-9._-]+$/.test(name)) throw new InvalidInputError(`s3 guard: metadata name ${JSON.stringify(name.slice(0, 32))}: letters, digits, '-', '_' and '.' only`);
    if (typeof v !== 'string' || !/^[\x20-\x7e]*$/.test(v)) throw new InvalidInputError(`s3 guard: metadata ${name}: the value must be printable ASCII`);
    if (name in out) throw new InvalidInputError(`s3 guard: metadata name ${name} given twice (names are not case-sensitive)`);
    size += name.length + v.length;
    if (size > MAX_METADATA_BYTES) throw new InvalidInputError(`s3 guard: user metadata of more than ${MAX_METADATA_BYTES} bytes with ${name} (${v.length} bytes): S3 keeps at most 2 KB`);
    out[name] = v;
  }
  return out;
}

/** Body is a write's body: sendable again from its start, and its MD5 once asked for. */
interface Body {
  size: number;
  payload(): Uint8Array | Readable;
  md5(): Promise<string>;
}

function toBody(b: Uint8Array | string | S3Stream | undefined): Body {
  if (b === undefined || typeof b === 'string' || b instanceof Uint8Array) {
    const bytes = b === undefined ? new Uint8Array() : typeof b === 'string' ? Buffer.from(b, 'utf8') : b;
    if (bytes.length > MAX_PUT_BYTES) throw new InvalidInputError(`s3 guard: body of ${bytes.length} bytes, at most ${MAX_PUT_BYTES} in one PUT`);
    let sum: string | undefined;
    return { size: bytes.length, payload: () => bytes, md5: async () => (sum ??= createHash('md5').update(bytes).digest('hex')) };
  }
  if (b === null || typeof b !== 'object' || typeof b.open !== 'function' || !Number.isSafeInteger(b.size) || b.size < 0 || b.size > MAX_PUT_BYTES) {
    throw new InvalidInputError(`s3 guard: a body is bytes, a string, or { size (0..${MAX_PUT_BYTES}), open() }`);
  }
  let sum: Promise<string> | undefined;
  return {
    size: b.size,
    payload: () => b.open(),
    md5: () =>
      (sum ??= (async () => {
        const h = createHash('md5');
        for await (const chunk of b.open()) h.update(chunk as Buffer);
        return h.digest('hex');
      })()),
  };
}
