// The RPC stream (GET /v1/rpc): many callers' lock operations over one
// websocket. Requests are one JSON object per line, every request made in
// the same turn of the event loop sent as one message; answers come back as
// {"id","status","body"} lines, in any order.

import type { Socket } from 'node:net';
import WebSocket from 'ws';
import { parse, stringify, type JSONValue } from './json.js';
import { ConnectionError } from './errors.js';

export interface RpcAnswer {
  status: number;
  body: JSONValue;
}

interface Pending {
  resolve: (a: RpcAnswer) => void;
  reject: (e: Error) => void;
}

/** The largest message sent: well under the server's 1 MiB (lengths are counted in UTF-16 units, up to 3 bytes each). */
const MAX_MESSAGE = 256 << 10;

/** How long the websocket may take to open, as an HTTP connection may. */
const HANDSHAKE_TIMEOUT_MS = 10_000;

/** untilAborted is p, or signal's reason once it aborts first. */
async function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted();
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([p, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort!);
  }
}

/** The most requests waiting for their answers on one stream. */
const MAX_PENDING = 100_000;

/** Close code 1012, service restart: with SERVICE_ENDED, the server's service ended. */
export const SERVICE_RESTART = 1012;

/**
 * The reason of the close (code 1012) with which the server ends an RPC
 * stream whose service ended, as a cluster leader's does with its term: the
 * same string as the server's wire.ServiceEnded (internal/wire/rpcclose.go).
 * Every request the stream took was answered before that close, so one left
 * without an answer was not taken, changed nothing, and may be sent again on
 * a new stream. The reason is matched exactly: a 1012 from something else on
 * the way (a proxy restarting) says nothing of what the server took.
 */
export const SERVICE_ENDED = "the service ended (a cluster leader's term ended); reconnect: requests left unanswered were not taken";

/**
 * NotTakenError fails the calls a stream left unanswered when the server
 * closed it for its service's end: none was taken, so the client sends each
 * once more on a new stream. A ConnectionError, should it reach the caller.
 */
export class NotTakenError extends ConnectionError {}

/**
 * One websocket to /v1/rpc. When it breaks, every waiting call fails with
 * ConnectionError: NotTakenError when the server closed it for its
 * service's end.
 */
export class RpcSession {
  #ws: WebSocket;
  #open: Promise<void>;
  #pending = new Map<number, Pending>();
  #nextId = 1;
  #queue: string[] = [];
  #scheduled = false;
  #dead: Error | null = null;
  #opened = false;
  #refusedWith = 0;
  #rejectOpen: (err: Error) => void = () => {};
  // The connection keeps the process alive only while calls wait on it:
  // an idle client must not stop a script from exiting.
  #socket: Socket | null = null;
  #active = 0;

  constructor(url: string, headers: Record<string, string>) {
    const u = new URL('/v1/rpc', url);
    u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
    this.#ws = new WebSocket(u, { headers, maxPayload: 64 << 20, perMessageDeflate: false, handshakeTimeout: HANDSHAKE_TIMEOUT_MS });
    this.#open = new Promise((resolve, reject) => {
      this.#rejectOpen = reject;
      this.#ws.once('open', () => {
        this.#opened = true;
        resolve();
      });
      this.#ws.once('error', (err) => reject(new ConnectionError(`fenceview: rpc stream: ${err.message}`, { cause: err })));
    });
    this.#open.catch(() => {}); // reported to callers through #fail
    this.#ws.once('unexpected-response', (_req, res) => {
      // Answered, but not with an upgrade: a proxy's refusal, a server
      // without the stream, or the server's own refusal (a bad key).
      this.#refusedWith = res.statusCode ?? 0;
      res.resume();
      const err = new ConnectionError(`fenceview: rpc stream: the upgrade was answered ${res.statusCode}`);
      this.#fail(err);
      this.#rejectOpen(err);
    });
    this.#ws.once('upgrade', (res) => {
      this.#socket = res.socket;
      this.#hold();
    });
    this.#ws.on('message', (data) => this.#receive(data.toString()));
    this.#ws.on('error', (err) => this.#fail(new ConnectionError(`fenceview: rpc stream: ${err.message}`, { cause: err })));
    this.#ws.on('close', (code, reason) => {
      const text = reason.toString();
      const msg = `fenceview: rpc stream closed (${code}${text === '' ? '' : ` ${text}`})`;
      this.#fail(code === SERVICE_RESTART && text === SERVICE_ENDED ? new NotTakenError(msg) : new ConnectionError(msg));
    });
  }

  /** Whether the stream ever opened: a call that failed on one that did not was never sent. */
  get opened(): boolean {
    return this.#opened;
  }

  /** The status that answered the upgrade instead of 101, 0 when none did. */
  get refusedWith(): number {
    return this.#refusedWith;
  }

  /** Whether answer says the server stopped serving the stream: 503 unavailable, with no time to come back. */
  stoppedBy(answer: RpcAnswer): boolean {
    const b = answer.body as { code?: unknown; retryAfterMs?: unknown } | null;
    return answer.status === 503 && b?.code === 'unavailable' && b.retryAfterMs === undefined;
  }

  /** Whether the stream can still carry calls. */
  get alive(): boolean {
    return this.#dead === null;
  }

  /** hold refs the socket while calls wait, and unrefs it when none does. */
  #hold(): void {
    if (this.#active > 0) this.#socket?.ref();
    else this.#socket?.unref();
  }

  #fail(err: Error): void {
    if (this.#dead !== null) return;
    this.#dead = err;
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) p.reject(err);
    this.#ws.terminate();
  }

  #receive(text: string): void {
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      let a: { id?: unknown; status?: unknown; body?: JSONValue };
      try {
        a = parse(line) as typeof a;
      } catch (err) {
        this.#fail(new ConnectionError(`fenceview: rpc stream: an answer that is not JSON: ${(err as Error).message}`));
        return;
      }
      // An answer without our id (a request the server could not read at
      // all) cannot be matched; every request this session writes is valid
      // JSON with an id, so that does not happen.
      if (typeof a.id !== 'number' || typeof a.status !== 'number') continue;
      const p = this.#pending.get(a.id);
      if (p === undefined) continue; // its caller gave up
      this.#pending.delete(a.id);
      p.resolve({ status: a.status, body: a.body ?? null });
      if (this.stoppedBy({ status: a.status, body: a.body ?? null })) {
        // The server stopped serving this connection (shutting down, or a
        // cluster leader's term ended under it): every later call would get
        // the same, so the next one opens a new stream.
        this.#fail(new ConnectionError('fenceview: rpc stream: the server stopped serving this connection'));
        return;
      }
    }
  }

  #flush(): void {
    this.#scheduled = false;
    if (this.#dead !== null || this.#queue.length === 0) return;
    // The server reads at most 1 MiB per message: a big turn's requests go
    // as several messages.
    let batch: string[] = [];
    let size = 0;
    for (const line of this.#queue) {
      if (size + line.length + 1 > MAX_MESSAGE && batch.length > 0) {
        this.#ws.send(batch.join('\n'));
        batch = [];
        size = 0;
      }
      batch.push(line);
      size += line.length + 1;
    }
    this.#ws.send(batch.join('\n'));
    this.#queue = [];
  }

  /**
   * call sends one request ({op, resource, ...}) and resolves with the
   * status and body the JSON API would give. Aborting signal stops waiting
   * for the answer; the server may still carry the request out.
   */
  async call(req: Record<string, unknown>, signal?: AbortSignal): Promise<RpcAnswer> {
    if (this.#dead !== null) throw this.#dead;
    this.#active++;
    if (this.#active === 1) this.#hold();
    try {
      return await this.#call(req, signal);
    } finally {
      this.#active--;
      if (this.#active === 0) this.#hold();
    }
  }

  async #call(req: Record<string, unknown>, signal?: AbortSignal): Promise<RpcAnswer> {
    signal?.throwIfAborted();
    if (this.#pending.size >= MAX_PENDING) throw new ConnectionError(`fenceview: rpc stream: ${MAX_PENDING} calls already waiting`);
    const open = this.#open.catch((err) => {
      this.#fail(err);
      throw err;
    });
    // A stream still opening (a cluster node waiting for its leader) is
    // waited for only as long as the caller waits.
    if (this.#opened || signal === undefined) await open;
    else await untilAborted(open, signal);
    if (this.#dead !== null) throw this.#dead;
    const id = this.#nextId++;
    const answer = new Promise<RpcAnswer>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
    });
    this.#queue.push(stringify({ id, ...req }));
    if (!this.#scheduled) {
      this.#scheduled = true;
      queueMicrotask(() => this.#flush());
    }
    if (signal === undefined) return answer;
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => {
        this.#pending.delete(id);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([answer, aborted]);
    } finally {
      signal.removeEventListener('abort', onAbort!);
    }
  }

  /** close ends the stream; waiting calls fail. */
  close(): void {
    this.#fail(new ConnectionError('fenceview: rpc stream closed by the client'));
  }
}
