import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { FencedResource, PgMarks, callUnfenceable, fencingMiddleware, callFencedService, InvalidInputError } from '../dist/index.js';
import { client, unique, listen, needPg, env, TWO_53_PLUS_1, TWO_63_MINUS_2, grantAt, paused } from './helpers.mjs';

describe('FencedResource over PostgreSQL', needPg, () => {
  let pool, inventory, table;
  const c = client();
  before(async () => {
    pool = new pg.Pool({ connectionString: env.pg, max: 4 });
    table = unique('inventory').replace('-', '_');
    await pool.query(`CREATE TABLE ${table} (product_id TEXT PRIMARY KEY, stock INT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0)`);
    inventory = new FencedResource(pool, { table, key: 'product_id' });
  });
  after(async () => {
    await pool.end();
    c.close();
  });
  const row = async (id) => (await pool.query(`SELECT stock, fence_token::text AS mark FROM ${table} WHERE product_id = $1`, [id])).rows[0];

  test('the paused client: its stale write matches no row and is refused', async () => {
    const id = unique('product');
    await pool.query(`INSERT INTO ${table} (product_id, stock) VALUES ($1, 10)`, [id]);
    const { b, ta, tb } = await paused(c, `inventory:${id}`); // B granted once A's lease runs out
    assert.deepEqual(await inventory.apply(id, { stock: 7 }, tb), { accepted: true, token: tb });
    const stale = await inventory.apply(id, { stock: 99 }, ta);
    assert.deepEqual(stale, { accepted: false, reason: 'stale-token', presented: ta, required: tb });
    assert.deepEqual(await row(id), { stock: 7, mark: String(tb) });
    await b.release();
  });

  test("the seed's verification: a lower token after a higher is refused; equal tokens are accepted", async () => {
    const id = unique('res');
    await pool.query(`INSERT INTO ${table} (product_id, stock) VALUES ($1, 0)`, [id]);
    await inventory.apply(id, { stock: 2 }, 42n);
    const stale = await inventory.apply(id, { stock: 1 }, 41n);
    assert.equal(stale.accepted, false);
    assert.equal(stale.required, 42n);
    assert.equal((await inventory.apply(id, { stock: 5 }, 50n)).accepted, true);
    assert.equal((await inventory.apply(id, { stock: 6 }, 50n)).accepted, true);
    assert.deepEqual(await row(id), { stock: 6, mark: '50' });
  });

  test('tokens at 2^53+1 and 2^63-2 from real grants are written and compared exactly', async () => {
    for (const big of [TWO_53_PLUS_1, TWO_63_MINUS_2]) {
      const lock = await grantAt(c, big);
      assert.equal(lock.token, big);
      const id = unique('big');
      await pool.query(`INSERT INTO ${table} (product_id, stock) VALUES ($1, 0)`, [id]);
      assert.deepEqual(await inventory.apply(id, { stock: 1 }, lock.token), { accepted: true, token: big });
      assert.deepEqual(await inventory.apply(id, { stock: 2 }, big - 1n), { accepted: false, reason: 'stale-token', presented: big - 1n, required: big });
      assert.deepEqual(await row(id), { stock: 1, mark: big.toString() });
      assert.equal(await inventory.readToken(id), big);
      await lock.release();
    }
  });

  test('bad input is refused before any SQL and changes nothing', async () => {
    const id = unique('bad');
    await pool.query(`INSERT INTO ${table} (product_id, stock) VALUES ($1, 3)`, [id]);
    await assert.rejects(inventory.apply(id, { 'stock; DROP TABLE x': 1 }, 5n), InvalidInputError);
    await assert.rejects(inventory.apply(id, { fence_token: 1 }, 5n), InvalidInputError);
    await assert.rejects(inventory.apply(id, { stock: 1 }, 0n), InvalidInputError);
    await assert.rejects(inventory.apply(id, { stock: 1 }, 2 ** 60), InvalidInputError); // a rounded number, not a token
    assert.throws(() => new FencedResource(pool, { table: 'a"b', key: 'k' }), InvalidInputError);
    await assert.rejects(inventory.apply(unique('missing'), { stock: 1 }, 5n), /no row/);
    assert.deepEqual(await row(id), { stock: 3, mark: '0' });
  });
});

describe('PgMarks: a store for the middleware and for callUnfenceable', needPg, () => {
  let pool, marks;
  before(async () => {
    pool = new pg.Pool({ connectionString: env.pg, max: 4 });
    marks = new PgMarks(pool, { table: unique('marks').replace('-', '_') });
    await marks.createTable();
  });
  after(() => pool.end());

  test('callUnfenceable records the pending token first, then calls with <resource>:<token>', async () => {
    const r = unique('payment');
    const calls = [];
    const gateway = async (key) => {
      // The pending token is already recorded when the external call runs.
      calls.push({ key, mark: await marks.highWater(r) });
      return 'charged';
    };
    const ok = await callUnfenceable(marks, r, TWO_53_PLUS_1, gateway);
    assert.deepEqual(ok, { accepted: true, idempotencyKey: `${r}:9007199254740993`, result: 'charged' });
    assert.deepEqual(calls, [{ key: `${r}:9007199254740993`, mark: TWO_53_PLUS_1 }]);
    // A retry of the same grant is allowed and carries the same key.
    assert.equal((await callUnfenceable(marks, r, TWO_53_PLUS_1, gateway)).idempotencyKey, `${r}:9007199254740993`);
    // A stale holder is stopped before the external system sees it.
    const stale = await callUnfenceable(marks, r, TWO_53_PLUS_1 - 1n, gateway);
    assert.deepEqual(stale, { accepted: false, reason: 'stale-token', presented: TWO_53_PLUS_1 - 1n, required: TWO_53_PLUS_1 });
    assert.equal(calls.length, 2);
  });

  test('the middleware over a PostgreSQL store', async () => {
    const mw = fencingMiddleware(marks);
    const svc = await listen((req, res) => mw(req, res, () => res.end('{}')));
    try {
      const r = unique('pgmw');
      assert.equal((await callFencedService(svc.url, { resourceId: r }, TWO_63_MINUS_2)).accepted, true);
      const stale = await callFencedService(svc.url, { resourceId: r }, TWO_63_MINUS_2 - 1n);
      assert.deepEqual([stale.accepted, stale.required], [false, TWO_63_MINUS_2]);
      assert.equal(await marks.highWater(r), TWO_63_MINUS_2);
    } finally {
      await svc.close();
    }
  });
});

describe('PgMarks reads', needPg, () => {
  test("a reader's token reads but does not write; a later writer's fences the reader out", async () => {
    const pool = new pg.Pool({ connectionString: env.pg, max: 2 });
    const c = client();
    try {
      const marks = new PgMarks(pool, { table: unique('rmarks').replace('-', '_'), client: c });
      await marks.createTable();
      const r = unique('rw-pg');
      const reader = c.readLock(r, { holder: 'reader' });
      const t = await reader.acquire({ watchdog: false });
      assert.equal((await marks.check(r, t, reader.signature)).reason, 'shared-token');
      assert.equal(await marks.highWater(r), 0n, 'a refused write moved the mark');
      assert.equal((await marks.check(r, t, reader.signature, 'read')).accepted, true);
      await reader.release();
      const writer = c.lock(r, { holder: 'writer' });
      const w = await writer.acquire({ watchdog: false });
      assert.equal((await marks.check(r, w, writer.signature)).accepted, true);
      assert.equal((await marks.check(r, t, reader.signature, 'read')).reason, 'stale-token');
      await writer.release();
    } finally {
      c.close();
      await pool.end();
    }
  });
});
