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
/**
 * EventStream is one websocket to /v1/events. next() resolves with the next
 * event, or null once the stream has ended (close(), or the server closed
 * it: then error says why).
 */
export declare class EventStream {
    #private;
    readonly opened: Promise<void>;
    constructor(base: string, query: URLSearchParams, headers: Record<string, string>);
    /** Why the stream ended, when it was not closed by the client; null otherwise. */
    get error(): Error | null;
    /** next is the next event, or null when the stream has ended. */
    next(): Promise<FenceEvent | null>;
    /** close ends the stream; a waiting next() resolves with null. */
    close(): void;
    [Symbol.asyncIterator](): AsyncGenerator<FenceEvent>;
}
