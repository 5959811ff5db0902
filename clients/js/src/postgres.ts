// Fenced writes to PostgreSQL rows: the check and the write are one
// conditional UPDATE, so a paused holder that wakes up with an old token
// matches no row.
//
//   UPDATE inventory SET stock = $1, fence_token = $2
//    WHERE product_id = $3 AND fence_token <= $2

import { accessOf, refusedFor, signatureRefusal, verifierOf, type Checker, type SignatureOptions } from './guard.js';
import { InvalidInputError, REASON_STALE, toToken, validateResourceId, type Access, type Decision } from './token.js';
import type { Verifier } from './verifier.js';

/** What the package needs of node-postgres: a pg.Pool, pg.Client or PoolClient. */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rowCount: number | null; rows: Record<string, unknown>[] }>;
}

const ident = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** quoteIdent quotes a plain identifier, or schema.name; anything else is refused, never escaped into SQL. */
function quoteIdent(name: string, what: string): string {
  const parts = typeof name === 'string' ? name.split('.') : [];
  if (parts.length < 1 || parts.length > 2 || !parts.every((p) => ident.test(p))) {
    throw new InvalidInputError(`${what} ${JSON.stringify(name)} must be a plain SQL identifier (letters, digits, _)`);
  }
  return parts.map((p) => `"${p}"`).join('.');
}

function param(v: unknown): unknown {
  return typeof v === 'bigint' ? v.toString() : v;
}

function markOf(v: unknown): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'string' && /^(0|[1-9][0-9]{0,18})$/.test(v)) return BigInt(v);
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return BigInt(v);
  throw new Error(`fenced resource: the stored mark ${String(v)} is not a token`);
}

/** The seed's answer of FencedResource.apply. */
export type ApplyResult = { accepted: true; token: bigint } | { accepted: false; reason: string; presented: bigint; required: bigint };

export interface FencedResourceOptions extends SignatureOptions {
  /** The table (plain or schema-qualified). */
  table: string;
  /** The key column the rows are found by. */
  key: string;
  /** The column holding each row's mark; default "fence_token" (BIGINT NOT NULL DEFAULT 0). */
  tokenColumn?: string;
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
export class FencedResource {
  readonly #db: Queryable;
  readonly #table: string;
  readonly #key: string;
  readonly #mark: string;
  readonly #verifier: Verifier | undefined;
  readonly #resourceOf: (key: unknown) => string;

  constructor(db: Queryable, opts: FencedResourceOptions) {
    this.#db = db;
    this.#table = quoteIdent(opts.table, 'table');
    this.#key = quoteIdent(opts.key, 'key column');
    this.#mark = quoteIdent(opts.tokenColumn ?? 'fence_token', 'token column');
    this.#verifier = verifierOf(opts);
    this.#resourceOf = opts.resourceOf ?? ((k) => String(k));
  }

  /**
   * apply sets the mutation's columns and the mark on the row with key id
   * when token >= the row's mark: {accepted: true, token}. Otherwise
   * nothing is written: {accepted: false, reason, presented, required},
   * required the mark that beat it. A row that does not exist is an error.
   */
  async apply(id: unknown, mutation: Record<string, unknown>, token: bigint, opts: { signature?: string } = {}): Promise<ApplyResult> {
    // A write: a signed resource refuses a shared (reader's) token.
    const t = toToken(token);
    const cols = Object.keys(mutation);
    const sets = cols.map((c, i) => {
      const q = quoteIdent(c, 'column');
      if (q === this.#mark) throw new InvalidInputError(`column ${c} is the mark's; apply sets it`);
      return `${q} = $${i + 1}`;
    });
    if (this.#verifier !== undefined) {
      const resource = validateResourceId(this.#resourceOf(id));
      const why = await signatureRefusal(this.#verifier, resource, t, opts.signature, 'write');
      if (why !== null) {
        const d = refusedFor(why, t, await this.#read(id));
        return { accepted: false, reason: d.reason!, presented: t, required: d.required };
      }
    }
    const tok = `$${cols.length + 1}`;
    const keyParam = `$${cols.length + 2}`;
    sets.push(`${this.#mark} = ${tok}`);
    const sql = `UPDATE ${this.#table} SET ${sets.join(', ')} WHERE ${this.#key} = ${keyParam} AND ${this.#mark} <= ${tok}`;
    const r = await this.#db.query(sql, [...cols.map((c) => param(mutation[c])), t.toString(), param(id)]);
    if ((r.rowCount ?? 0) > 0) return { accepted: true, token: t };
    // Marks only rise, so the mark read now is at least the one that beat
    // this token: the token to beat.
    return { accepted: false, reason: REASON_STALE, presented: t, required: await this.#read(id) };
  }

  async #read(id: unknown): Promise<bigint> {
    const r = await this.#db.query(`SELECT ${this.#mark} AS mark FROM ${this.#table} WHERE ${this.#key} = $1`, [param(id)]);
    if (r.rows.length === 0) throw new Error(`fenced resource: no row with key ${String(id)}`);
    return markOf(r.rows[0]!.mark);
  }

  /** readToken is the row's mark (the seed's store.readToken). */
  readToken(id: unknown): Promise<bigint> {
    return this.#read(id);
  }
}

/**
 * PgMarks keeps high-water marks by resource id in a table of their own,
 * the same table Go's sqlguard.Marks uses (resource_id TEXT PRIMARY KEY,
 * high_water BIGINT NOT NULL): a Checker for the middleware and for
 * callUnfenceable's pending tokens. A check is one conditional upsert.
 */
export class PgMarks implements Checker {
  readonly #db: Queryable;
  readonly #table: string;
  readonly #verifier: Verifier | undefined;

  constructor(db: Queryable, opts: { table?: string } & SignatureOptions = {}) {
    this.#db = db;
    this.#table = quoteIdent(opts.table ?? 'fence_marks', 'table');
    this.#verifier = verifierOf(opts);
  }

  /** createTable makes the table if it is missing. */
  async createTable(): Promise<void> {
    await this.#db.query(`CREATE TABLE IF NOT EXISTS ${this.#table} (resource_id TEXT PRIMARY KEY, high_water BIGINT NOT NULL)`);
  }

  async check(resource: string, token: bigint, signature?: string, access?: Access): Promise<Decision> {
    validateResourceId(resource);
    const t = toToken(token);
    const why = await signatureRefusal(this.#verifier, resource, t, signature, accessOf(access));
    if (why !== null) return refusedFor(why, t, await this.highWater(resource));
    const r = await this.#db.query(
      `INSERT INTO ${this.#table} AS m (resource_id, high_water) VALUES ($1, $2) ` +
        `ON CONFLICT (resource_id) DO UPDATE SET high_water = excluded.high_water WHERE m.high_water <= excluded.high_water`,
      [resource, t.toString()],
    );
    if ((r.rowCount ?? 0) > 0) return { accepted: true, presented: t, required: 0n };
    return { accepted: false, reason: REASON_STALE, presented: t, required: await this.highWater(resource) };
  }

  /** highWater is the resource's mark, 0n when none. */
  async highWater(resource: string): Promise<bigint> {
    const r = await this.#db.query(`SELECT high_water FROM ${this.#table} WHERE resource_id = $1`, [validateResourceId(resource)]);
    return r.rows.length === 0 ? 0n : markOf(r.rows[0]!.high_water);
  }
}
