"""The DB-API guard: one conditional UPDATE decides, on a real SQLite file
and, when FENCEVIEW_PG_DSN is set, a real PostgreSQL through psycopg2."""

import os
import sqlite3
import tempfile
import threading
import unittest
import uuid
from typing import Any

import fenceview

from .helpers import PG_DSN, client, need_server, unique

try:
    import psycopg2
except ImportError:
    psycopg2 = None

from .test_verify import Key, need_crypto


class Guard:
    def connect(self) -> Any:
        raise NotImplementedError

    def setUp(self) -> None:
        self.conn = self.connect()
        self.table = "inventory_" + uuid.uuid4().hex[:8]
        with self.conn:
            cur = self.conn.cursor()
            cur.execute(f"CREATE TABLE {self.table} (product_id TEXT PRIMARY KEY, stock INT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0)")
            cur.execute(f"INSERT INTO {self.table} (product_id, stock) VALUES ('42', 10)")
            cur.close()

    def stock(self) -> Any:
        cur = self.conn.cursor()
        cur.execute(f"SELECT stock, fence_token FROM {self.table} WHERE product_id = '42'")
        row = cur.fetchone()
        cur.close()
        return tuple(row)

    def test_the_rule_is_one_conditional_update(self) -> None:
        t = fenceview.FencedTable(self.conn, self.table, key="product_id")
        with self.conn:
            d = t.update("42", {"stock": 7}, 5)
        self.assertEqual((d.accepted, d.presented), (True, 5))
        self.assertEqual(self.stock(), (7, 5))
        with self.conn:
            self.assertTrue(t.update("42", {"stock": 6}, 5).accepted, "the same holder writing twice")
            d = t.update("42", {"stock": 1}, 4)
        self.assertEqual((d.accepted, d.reason, d.presented, d.required), (False, "stale-token", 4, 5))
        self.assertEqual(self.stock(), (6, 5), "a refused write changed the row")
        with self.conn:
            self.assertTrue(t.check("42", 9).accepted)  # a read at a later phase
            self.assertEqual(t.update("42", {"stock": 0}, 8).required, 9)
        self.assertEqual(t.mark("42"), 9)
        with self.assertRaises(LookupError):
            t.update("43", {"stock": 1}, 10)
        self.conn.rollback()

    def test_bad_input_changes_nothing(self) -> None:
        t = fenceview.FencedTable(self.conn, self.table, key="product_id")
        with self.assertRaises(fenceview.InvalidTokenError):
            t.update("42", {"stock": 1}, 0)
        with self.assertRaises(fenceview.InvalidRequestError):
            t.update("42", {"stock; DROP TABLE x": 1}, 3)
        with self.assertRaises(fenceview.InvalidRequestError):
            t.update("42", {"fence_token": 99}, 3)
        with self.assertRaises(fenceview.InvalidRequestError):
            t.update("42", {}, 3)
        with self.assertRaises(fenceview.InvalidRequestError):
            fenceview.FencedTable(self.conn, 'x"; --', key="id")
        self.assertEqual(self.stock(), (10, 0))

    def test_marks_table(self) -> None:
        m = fenceview.FencedMarks(self.conn, "marks_" + uuid.uuid4().hex[:8])
        with self.conn:
            m.create_table()
            self.assertTrue(m.check("files/a", 3).accepted)
            self.assertTrue(m.check("files/a", 3).accepted)
            d = m.check("files/a", 2)
            self.assertEqual((d.accepted, d.reason, d.required), (False, "stale-token", 3))
            self.assertEqual(m.high_water("files/a"), 3)
            self.assertEqual(m.high_water("files/b"), 0)
        other = self.connect()
        with other:
            self.assertEqual(m.on(other).check("files/a", 1).required, 3)

    @need_crypto
    def test_signed_mode(self) -> None:
        key = Key()
        v = fenceview.Verifier.from_keys([key.public])
        t = fenceview.FencedTable(self.conn, self.table, key="product_id", verifier=v)
        r = f"{self.table}:42"
        with self.conn:
            d = t.update("42", {"stock": 1}, 5)  # unsigned
            self.assertEqual((d.accepted, d.reason), (False, "bad-signature"))
            d = t.update("42", {"stock": 1}, 5, key.sign(r, 6))
            self.assertEqual(d.reason, "bad-signature")
            d = t.update("42", {"stock": 1}, 5, key.sign(r, 5, shared=True))
            self.assertEqual(d.reason, "shared-token")
            self.assertTrue(t.check("42", 5, key.sign(r, 5, shared=True)).accepted)
            self.assertTrue(t.update("42", {"stock": 2}, 6, key.sign(r, 6)).accepted)
        self.assertEqual(self.stock(), (2, 6))

    def test_concurrent_writers_each_get_a_decision(self) -> None:
        t = fenceview.FencedTable(self.conn, self.table, key="product_id")
        results = {}

        def write(token: int) -> None:
            c = self.connect()
            with c:
                results[token] = t.on(c).update("42", {"stock": token}, token)

        ts = [threading.Thread(target=write, args=(i,)) for i in range(1, 9)]
        for th in ts:
            th.start()
        for th in ts:
            th.join()
        stock, mark = self.stock()
        self.assertEqual(mark, 8)
        self.assertTrue(results[8].accepted)
        self.assertEqual(stock, mark, "the row holds another writer's stock than its mark's")
        for tok, d in results.items():
            if not d.accepted:
                self.assertGreater(d.required, tok)


class SQLite(Guard, unittest.TestCase):
    def connect(self) -> Any:
        if not hasattr(self, "dir"):
            self.dir = tempfile.TemporaryDirectory()
            self.addCleanup(self.dir.cleanup)
        conn = sqlite3.connect(os.path.join(self.dir.name, "shop.db"), timeout=30, check_same_thread=False)
        self.addCleanup(conn.close)
        return conn


@unittest.skipUnless(PG_DSN and psycopg2, "FENCEVIEW_PG_DSN and psycopg2 (python3-psycopg2) are needed for PostgreSQL")
class PostgreSQL(Guard, unittest.TestCase):
    def connect(self) -> Any:
        conn = psycopg2.connect(PG_DSN)
        self.addCleanup(conn.close)
        return conn


@need_server
@need_crypto
class BuiltFromAClient(unittest.TestCase):
    def test_verifies_by_default_with_the_servers_keys(self) -> None:
        conn = sqlite3.connect(":memory:")
        self.addCleanup(conn.close)
        conn.execute("CREATE TABLE inventory (product_id TEXT PRIMARY KEY, stock INT, fence_token BIGINT NOT NULL DEFAULT 0)")
        conn.execute("INSERT INTO inventory VALUES ('42', 10, 0)")
        with client() as c:
            t = c.fenced_table(conn, "inventory", key="product_id")
            self.assertIsNotNone(t.verifier)
            r = unique("inventory")
            t2 = c.fenced_table(conn, "inventory", key="product_id", resource=lambda k: r)
            self.assertEqual(t2.update("42", {"stock": 1}, 1).reason, "bad-signature")
            with c.lock(r, holder="h") as lock:
                self.assertTrue(t2.update("42", {"stock": 9}, lock.token, lock.signature).accepted)
            unsigned = c.fenced_table(conn, "inventory", key="product_id", accept_unsigned_tokens=True)
            self.assertIsNone(unsigned.verifier)
