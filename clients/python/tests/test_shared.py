"""Shared (read-write) locks: readers hold together with one token per
read phase, writers wait for them and come after them, and a write with a
reader's token is refused."""

import threading

import fenceview

from .helpers import OneClient, over_both_transports, unique, until


class Shared(OneClient):
    def test_readers_share_a_phase_and_its_token(self) -> None:
        r = unique("rw")
        # wait bounds a regression (readers kept apart) to a failure, not a hang.
        a = self.c.read_lock(r, holder="reader-a", wait=30.0)
        b = self.c.read_lock(r, holder="reader-b", wait=30.0)
        with a, b:
            self.assertEqual(a.token, b.token)
            st = self.c.lock_state(r)
            self.assertTrue(st.shared)
            self.assertEqual({h["holder"] for h in st.holders}, {"reader-a", "reader-b"})
            w = self.c.lock(r, holder="writer")
            self.assertFalse(w.acquire(blocking=False))
            self.assertTrue(self.c.fence(r, a.token, access="read").accepted)
            d = self.c.fence(r, a.token)  # a write with a reader's token
            self.assertEqual((d.accepted, d.reason), (False, "shared-token"))
        with self.c.lock(r, holder="writer") as w:
            self.assertGreater(w.token, a.token)
            self.assertTrue(self.c.fence(r, w.token).accepted)
            self.assertEqual(self.c.fence(r, a.token, access="read").reason, "stale-token")

    def test_a_waiting_writer_goes_before_later_readers(self) -> None:
        r = unique("fair")
        first = self.c.read_lock(r, holder="r1")
        first.acquire()
        writer = self.c.lock(r, holder="w")
        got = threading.Event()
        t = threading.Thread(target=lambda: (writer.acquire(), got.set()), daemon=True)
        t.start()
        until(lambda: self.c.lock_state(r).waiters == 1, "the writer waiting on the server")
        late = self.c.read_lock(r, holder="r2")
        self.assertFalse(late.acquire(timeout=0.05), "a reader went before a waiting writer")
        first.release()
        self.assertTrue(got.wait(30))
        self.assertGreater(writer.token, first.token)
        writer.release()
        with late:
            self.assertGreater(late.token, writer.token)

    def test_no_upgrade(self) -> None:
        r = unique("upgrade")
        with self.c.read_lock(r, holder="h"):
            self.assertFalse(self.c.lock(r, holder="h").acquire(blocking=False))

    def test_a_reader_loses_its_lease_like_anyone(self) -> None:
        r = unique("readlost")
        lock = self.c.read_lock(r, holder="h", lease=0.6)
        lock.acquire()
        self.assertLostWhenExpired(lock, r)
        lock.release()
        self.assertEqual(lock.headers()["X-Fencing-Access"], "read")


SharedOverRPC, SharedOverJSON = over_both_transports(Shared, "Shared")
