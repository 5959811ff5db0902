import type { Client } from './client.js';
import { type Checker } from './guard.js';
import { type Decision } from './token.js';
import type { Verifier } from './verifier.js';
export interface WasmGuardOptions {
    /** The module's bytes, or a compiled WebAssembly.Module; default: GET /guard.wasm of client. */
    module?: Uint8Array | object;
    /** The server to restore marks from and report decisions to. */
    client?: Client;
    /** Seed the marks from the server's GET /v1/resources on start (default true with a client); a prefix restores only those ids. */
    restore?: boolean | {
        prefix: string;
    };
    /** Report every decision to POST /v1/decisions (default true with a client). */
    report?: boolean;
    /** The source the reports carry; default "wasm-guard". */
    source?: string;
    /** How often queued reports are sent; default 1000 ms. */
    flushMs?: number;
    /** Refuse tokens whose signature this verifier does not accept (bad-signature). */
    verifier?: Verifier;
}
/**
 * WasmGuard is one instance of guard.wasm: one set of marks, checked
 * synchronously, so a check and its record are one step no other request
 * can come between.
 */
export declare class WasmGuard implements Checker {
    #private;
    /** Reports dropped because the queue was full. */
    dropped: number;
    private constructor();
    /** load instantiates the module, seeds its marks from the server (unless restore is false) and starts reporting. */
    static load(opts?: WasmGuardOptions): Promise<WasmGuard>;
    /**
     * checkUnsigned applies the rule, synchronously. Invalid input throws
     * InvalidInputError. A guard with a verifier refuses every token here
     * (bad-signature), as guard.wasm does once a key is trusted: use check.
     */
    checkUnsigned(resource: string, token: bigint): Decision;
    /**
     * check applies the rule; with a verifier, a token whose signature does
     * not verify is refused as bad-signature first, and the mark stays.
     */
    check(resource: string, token: bigint, signature?: string): Promise<Decision>;
    /** highWater is the resource's mark, 0n when none. */
    highWater(resource: string): bigint;
    /** seed raises the mark to at least token without a decision (restoring state) and returns the mark. */
    seed(resource: string, token: bigint): bigint;
    /** restore seeds every mark the server knows (with prefix); returns how many it seeded. */
    restore(prefix?: string): Promise<number>;
    /** The reports waiting to be sent. */
    get pending(): number;
    /** flush sends the queued reports now; on failure they stay queued for the next flush. */
    flush(): Promise<void>;
    /** close sends what is queued and stops the reporting timer. */
    close(): Promise<void>;
}
