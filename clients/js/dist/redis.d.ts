import { type Checker } from './guard.js';
import { type Decision } from './token.js';
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
/** The name the mark is kept under; no value may use it. */
export declare const MARK_NAME = "fence_token";
/** The most values one write may carry. */
export declare const MAX_VALUES = 256;
export interface RedisGuardOptions {
    /** A namespace before every key: "shop:" gives "shop:{inventory:42}:stock". No braces. */
    prefix?: string;
    /** Refuse tokens whose signature this verifier does not accept (bad-signature). */
    verifier?: Verifier;
}
/** RedisGuard fences writes to resources kept in Redis, one atomic script per write. */
export declare class RedisGuard implements Checker {
    #private;
    constructor(redis: RedisScripting, opts?: RedisGuardOptions);
    /** markKey is the key of resource's mark. */
    markKey(resource: string): string;
    /** key is the key of value name of resource, for reading it with your own client. */
    key(resource: string, name: string): string;
    /**
     * write stores values only if token is at least the resource's mark and
     * records token as the mark, in one script. A refusal is a Decision with
     * the mark that beat it; nothing was written.
     */
    write(resource: string, token: bigint, values?: Record<string, string>, opts?: {
        signature?: string;
    }): Promise<Decision>;
    /** check is write without values: check and record the token (for the middleware and callUnfenceable). */
    check(resource: string, token: bigint, signature?: string): Promise<Decision>;
    /** read returns the mark (0n when none) and the named values present, from one moment. */
    read(resource: string, names?: string[]): Promise<{
        mark: bigint;
        values: Record<string, string>;
    }>;
}
