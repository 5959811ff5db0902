/** renew extends the lease once; it throws NotHeldError when the server refuses (the lease is gone). */
export type Renewal = (leaseMs: number, signal: AbortSignal) => Promise<void>;
export declare class Lease {
    #private;
    /**
     * A lease of leaseMs granted by a request sent at sent (Date.now()),
     * renewed every third of it by renew, or, with renew null, held until it
     * runs out.
     */
    constructor(what: string, token: () => bigint, leaseMs: number, renew: Renewal | null, sent: number);
    /** Aborted the moment the lease is lost (LeaseLostError) or released (ReleasedError). */
    get signal(): AbortSignal;
    /** Whether the lease is held, as far as this client knows. */
    get held(): boolean;
    /** lose ends the lease as lost: the signal aborts with LeaseLostError. */
    lose(why: string): void;
    /** released ends the lease after its release: the signal aborts with ReleasedError. */
    released(): void;
}
