import { type Checker } from './guard.js';
import { type Decision } from './token.js';
import type { Verifier } from './verifier.js';
/** What the package needs of node-postgres: a pg.Pool, pg.Client or PoolClient. */
export interface Queryable {
    query(text: string, values?: unknown[]): Promise<{
        rowCount: number | null;
        rows: Record<string, unknown>[];
    }>;
}
/** The seed's answer of FencedResource.apply. */
export type ApplyResult = {
    accepted: true;
    token: bigint;
} | {
    accepted: false;
    reason: string;
    presented: bigint;
    required: bigint;
};
export interface FencedResourceOptions {
    /** The table (plain or schema-qualified). */
    table: string;
    /** The key column the rows are found by. */
    key: string;
    /** The column holding each row's mark; default "fence_token" (BIGINT NOT NULL DEFAULT 0). */
    tokenColumn?: string;
    /** Refuse tokens whose signature this verifier does not accept (bad-signature). */
    verifier?: Verifier;
    /**
     * The lock's resource id for a row's key, which signatures are checked
     * against; default String(key).
     */
    resourceOf?: (key: unknown) => string;
}
/**
 * FencedResource is the seed's FencedResource over PostgreSQL: apply
 * writes a mutation to one row only if the token is at least the row's
 * mark, and records the token, in one statement.
 */
export declare class FencedResource {
    #private;
    constructor(db: Queryable, opts: FencedResourceOptions);
    /**
     * apply sets the mutation's columns and the mark on the row with key id
     * when token >= the row's mark: {accepted: true, token}. Otherwise
     * nothing is written: {accepted: false, reason, presented, required},
     * required the mark that beat it. A row that does not exist is an error.
     */
    apply(id: unknown, mutation: Record<string, unknown>, token: bigint, opts?: {
        signature?: string;
    }): Promise<ApplyResult>;
    /** readToken is the row's mark (the seed's store.readToken). */
    readToken(id: unknown): Promise<bigint>;
}
/**
 * PgMarks keeps high-water marks by resource id in a table of their own,
 * the same table Go's sqlguard.Marks uses (resource_id TEXT PRIMARY KEY,
 * high_water BIGINT NOT NULL): a Checker for the middleware and for
 * callUnfenceable's pending tokens. A check is one conditional upsert.
 */
export declare class PgMarks implements Checker {
    #private;
    constructor(db: Queryable, opts?: {
        table?: string;
        verifier?: Verifier;
    });
    /** createTable makes the table if it is missing. */
    createTable(): Promise<void>;
    check(resource: string, token: bigint, signature?: string): Promise<Decision>;
    /** highWater is the resource's mark, 0n when none. */
    highWater(resource: string): Promise<bigint>;
}
