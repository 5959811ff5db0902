// The event stream (GET /v1/events): one JSON event per websocket message,
// every token field a bigint.

import WebSocket from 'ws';
import { parse } from './json.js';
import { ConnectionError } from './errors.js';

/** One event of the stream; which members are present depends on type. */
export interface FenceEvent {
  seq: bigint;
  type: string;
  resourceId: string;
  token?: bigint;
  holder?: string;
  presented?: bigint;
  required?: bigint;
  reason?: string;
  source?: string;
  at: string;
  /** An election's leader value (its grants and proclaims). */
  value?: string;
  /** The lock-delay an expire starts. */
  lockDelayMs?: number;
  /** A semaphore's new permits (a permits event). */
  permits?: number;
}

/** Events read but not yet taken: beyond this the stream is closed as too slow, not buffered without bound. */
const MAX_BUFFERED = 10_000;

/**
 * EventStream is one websocket to /v1/events. next() resolves with the next
 * event, or null once the stream has ended (close(), or the server closed
 * it: then error says why).
 */
export class EventStream {
  readonly opened: Promise<void>;
  #ws: WebSocket;
  #buffer: FenceEvent[] = [];
  #waiting: ((e: FenceEvent | null) => void) | null = null;
  #ended = false;
  #error: Error | null = null;

  constructor(base: string, query: URLSearchParams, headers: Record<string, string>) {
    const u = new URL('/v1/events', base);
    u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
    u.search = query.toString();
    this.#ws = new WebSocket(u, { headers, maxPayload: 1 << 20, perMessageDeflate: false });
    this.opened = new Promise((resolve, reject) => {
      this.#ws.once('open', () => resolve());
      this.#ws.once('unexpected-response', (_req, res) => {
        const err = new ConnectionError(`fenceview: event stream: HTTP ${res.statusCode}`);
        reject(err);
        this.#end(err);
      });
      this.#ws.once('error', (err) => reject(new ConnectionError(`fenceview: event stream: ${err.message}`, { cause: err })));
    });
    this.opened.catch(() => {}); // also seen by next()
    this.#ws.on('message', (data) => {
      let e: FenceEvent;
      try {
        e = parse(data.toString()) as unknown as FenceEvent;
      } catch (err) {
        this.#end(new ConnectionError(`fenceview: event stream: an event that is not JSON: ${(err as Error).message}`));
        return;
      }
      if (this.#waiting !== null) {
        const w = this.#waiting;
        this.#waiting = null;
        w(e);
      } else if (this.#buffer.length >= MAX_BUFFERED) {
        this.#end(new ConnectionError(`fenceview: event stream: ${MAX_BUFFERED} events unread`));
      } else {
        this.#buffer.push(e);
      }
    });
    this.#ws.on('error', (err) => this.#end(new ConnectionError(`fenceview: event stream: ${err.message}`, { cause: err })));
    this.#ws.on('close', (code, reason) => this.#end(code === 1000 ? null : new ConnectionError(`fenceview: event stream closed (${code} ${reason.toString()})`)));
  }

  /** Why the stream ended, when it was not closed by the client; null otherwise. */
  get error(): Error | null {
    return this.#error;
  }

  /** next is the next event, or null when the stream has ended. */
  next(): Promise<FenceEvent | null> {
    const e = this.#buffer.shift();
    if (e !== undefined) return Promise.resolve(e);
    if (this.#ended) return Promise.resolve(null);
    return new Promise((resolve) => {
      this.#waiting = resolve;
    });
  }

  #end(err: Error | null): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#error = err;
    this.#ws.terminate();
    const w = this.#waiting;
    this.#waiting = null;
    w?.(null);
  }

  /** close ends the stream; a waiting next() resolves with null. */
  close(): void {
    this.#end(null);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<FenceEvent> {
    try {
      for (let e = await this.next(); e !== null; e = await this.next()) yield e;
      if (this.#error !== null) throw this.#error;
    } finally {
      this.close();
    }
  }
}
