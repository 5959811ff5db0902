// The lease of a grant period of the primitives (a permit, a
// multi-lock, a leadership): its watchdog and the signal aborted when it
// is lost, as Lock keeps its own.

import { LeaseLostError, NotHeldError, ReleasedError } from './errors.js';

/** renew extends the lease once; it throws NotHeldError when the server refuses (the lease is gone). */
export type Renewal = (leaseMs: number, signal: AbortSignal) => Promise<void>;

export class Lease {
  readonly #what: string;
  readonly #token: () => bigint;
  readonly #renew: Renewal | null;
  readonly #controller = new AbortController();
  readonly #leaseMs: number;
  #tick: NodeJS.Timeout | null = null;
  #deadline: NodeJS.Timeout | null = null;
  #renewing = false;
  #ended = false;

  /**
   * A lease of leaseMs granted by a request sent at sent (Date.now()),
   * renewed every third of it by renew, or, with renew null, held until it
   * runs out.
   */
  constructor(what: string, token: () => bigint, leaseMs: number, renew: Renewal | null, sent: number) {
    this.#what = what;
    this.#token = token;
    this.#leaseMs = leaseMs;
    this.#renew = renew;
    this.#arm(sent);
    this.#schedule();
  }

  /** Aborted the moment the lease is lost (LeaseLostError) or released (ReleasedError). */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Whether the lease is held, as far as this client knows. */
  get held(): boolean {
    return !this.#ended;
  }

  // The lease ends leaseMs after the request that set it was sent: the
  // server's clock started no earlier.
  #arm(sent: number): void {
    if (this.#deadline !== null) clearTimeout(this.#deadline);
    this.#deadline = setTimeout(() => this.lose('its lease ran out'), Math.max(0, sent + this.#leaseMs - Date.now()));
    this.#deadline.unref();
  }

  #schedule(): void {
    if (this.#renew === null || this.#ended) return;
    this.#tick = setTimeout(() => void this.#renewOnce(), Math.max(1, Math.floor(this.#leaseMs / 3)));
    this.#tick.unref();
  }

  async #renewOnce(): Promise<void> {
    if (this.#ended || this.#renewing) return;
    this.#renewing = true;
    const sent = Date.now();
    try {
      await this.#renew!(this.#leaseMs, this.signal);
      if (!this.#ended) this.#arm(sent);
    } catch (err) {
      if (err instanceof NotHeldError) this.lose(`the server refused to renew it: ${err.message}`);
      // Otherwise unreachable for now: the next tick tries again, and the
      // deadline ends the lease if none gets through in time.
    } finally {
      this.#renewing = false;
      this.#schedule();
    }
  }

  /** lose ends the lease as lost: the signal aborts with LeaseLostError. */
  lose(why: string): void {
    this.#end(new LeaseLostError(this.#what, this.#token(), why));
  }

  /** released ends the lease after its release: the signal aborts with ReleasedError. */
  released(): void {
    this.#end(new ReleasedError(this.#what));
  }

  #end(reason: Error): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#tick !== null) clearTimeout(this.#tick);
    if (this.#deadline !== null) clearTimeout(this.#deadline);
    this.#tick = this.#deadline = null;
    this.#controller.abort(reason);
  }
}
