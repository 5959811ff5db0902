"""Locks in threading.Lock's shape, against the real server, over the RPC
stream (the default) and over the JSON API."""

import threading

import fenceview

from .helpers import URL, Cuttable, OneClient, over_both_transports, unique, until


class LockTests(OneClient):
    def test_with_gives_an_int_token_and_releases(self) -> None:
        r = unique("with")
        lock = self.c.lock(r, holder="worker-7", lease=30.0)
        with lock as held:
            self.assertIs(held, lock)
            self.assertIsInstance(lock.token, int)
            self.assertGreater(lock.token, 0)
            self.assertTrue(lock.locked())
            st = self.c.lock_state(r)
            self.assertEqual((st.locked, st.holder, st.token), (True, "worker-7", lock.token))
        self.assertFalse(lock.locked())
        self.assertFalse(self.c.lock_state(r).locked)
        self.assertGreater(lock.token, 0, "the token is kept after release")
        self.assertEqual(self.c.uses_rpc, self.rpc)

    def test_acquire_has_threading_locks_shape(self) -> None:
        r = unique("shape")
        a = self.c.lock(r, holder="a")
        b = self.c.lock(r, holder="b")
        self.assertTrue(a.acquire())
        self.assertFalse(b.acquire(blocking=False))
        self.assertFalse(b.acquire(timeout=0.05))
        self.assertFalse(self.c.lock(r, holder="b", wait=60.0).acquire(blocking=False), "blocking=False waited")
        with self.assertRaises(ValueError):
            b.acquire(blocking=False, timeout=1)
        a.release()
        self.assertTrue(b.acquire(blocking=False))
        self.assertGreater(b.token, a.token)
        b.release()
        with self.assertRaises(RuntimeError):  # threading.Lock's error for a second release ...
            b.release()
        with self.assertRaises(fenceview.NotHeldError) as cm:  # ... with the server's code for it
            b.release()
        self.assertEqual((cm.exception.code, cm.exception.status), ("not-held", None))

    def test_with_raises_lock_held_naming_the_holder(self) -> None:
        r = unique("held")
        with self.c.lock(r, holder="first"):
            with self.assertRaises(fenceview.LockHeldError) as cm:
                with self.c.lock(r, holder="second", wait=0.05):
                    self.fail("entered a held lock")
        self.assertEqual(cm.exception.code, "lock-held")
        self.assertEqual(cm.exception.status, 409)
        self.assertEqual(cm.exception.holder, "first")

    def test_a_waiting_acquire_is_granted_at_release(self) -> None:
        r = unique("wait")
        a = self.c.lock(r, holder="a")
        a.acquire()
        got = threading.Event()
        b = self.c.lock(r, holder="b")

        def take() -> None:
            b.acquire()
            got.set()

        t = threading.Thread(target=take, daemon=True)
        t.start()
        until(lambda: self.c.lock_state(r).waiters == 1, "b waiting on the server")
        self.assertFalse(got.is_set())
        a.release()
        self.assertTrue(got.wait(30))
        self.assertGreater(b.token, a.token)
        b.release()

    def test_reentrant_grants_take_new_tokens_and_count_holds(self) -> None:
        r = unique("re")
        lock = self.c.lock(r, holder="h")
        lock.acquire()
        first = lock.token
        lock.acquire()
        self.assertGreater(lock.token, first)
        self.assertEqual(lock.hold_count, 2)
        lock.release()
        self.assertTrue(lock.locked())
        self.assertTrue(self.c.lock_state(r).locked)
        lock.release()
        self.assertFalse(self.c.lock_state(r).locked)

    def test_the_paused_worker_is_fenced_out(self) -> None:
        r = unique("orders")
        a = self.c.lock(r, holder="worker-7")
        a.acquire()
        # worker-7 stalls; its lease ends (an admin's force-expire here, a
        # lease running out in life) and worker-8 takes the lock.
        self.c.force_expire(r)
        b = self.c.lock(r, holder="worker-8")
        b.acquire()
        self.assertTrue(self.c.fence(r, b.token).accepted)
        d = self.c.fence(r, a.token)
        self.assertIsInstance(d, fenceview.Decision)
        self.assertEqual((d.accepted, d.reason, d.presented, d.required), (False, "stale-token", a.token, b.token))
        with self.assertRaises(fenceview.StaleTokenError) as cm:
            d.raise_for_refusal(r)
        self.assertEqual(cm.exception.required, b.token)
        # worker-7 learns it lost the lease at its next renewal, and its
        # release is quiet; the token stays what it was.
        with self.assertRaises(fenceview.NotHeldError):
            a.renew()
        self.assertTrue(a.lost.is_set())
        a.release()
        self.assertEqual(a.token, d.presented)
        b.release()

    def test_the_daemon_thread_sets_lost_when_the_server_refuses_renewal(self) -> None:
        r = unique("lost")
        lock = self.c.lock(r, holder="h", lease=0.6)  # renewed every 0.2 s
        lock.acquire()
        token = lock.token
        self.assertLostWhenExpired(lock, r, "lost was never set")
        self.assertIn("refused", lock.lost_reason)
        self.assertFalse(lock.locked())
        self.assertEqual(lock.token, token)
        lock.release()  # quiet

    def test_the_daemon_thread_keeps_the_lease(self) -> None:
        r = unique("kept")
        lock = self.c.lock(r, holder="h", lease=0.6)
        lock.acquire()
        first = self.c.lock_state(r).expires_at
        # Renewals move expiresAt; wait for two of them.
        seen = {first}
        until(lambda: seen.add(self.c.lock_state(r).expires_at) or len(seen) >= 3, "two renewals")
        self.assertFalse(lock.lost.is_set())
        self.assertTrue(self.c.lock_state(r).locked)
        lock.release()

    def test_lost_when_no_renewal_is_answered_before_the_lease_ends(self) -> None:
        proxy = Cuttable(URL)
        c = fenceview.Client(proxy.url, key=self.c._key, rpc=self.rpc, timeout=0.5)
        self.addCleanup(c.close)
        lock = c.lock(unique("cut"), holder="h", lease=0.9)
        lock.acquire()
        proxy.cut()
        self.assertTrue(lock.lost.wait(30), "lost was never set")
        self.assertIn("ran out", lock.lost_reason)

    def test_lost_is_cleared_by_the_next_grant(self) -> None:
        r = unique("again")
        lock = self.c.lock(r, holder="h")
        lock.acquire()
        self.c.force_expire(r)
        with self.assertRaises(fenceview.LeaseExpiredError) as cm:
            lock.renew()
        self.assertIsNotNone(cm.exception.expired_at)
        self.assertTrue(lock.lost.is_set())
        old = lock.token
        with lock:
            self.assertFalse(lock.lost.is_set())
            self.assertGreater(lock.token, old)

    def test_lock_delay(self) -> None:
        r = unique("delay")
        a = self.c.lock(r, holder="a", lock_delay=30.0)
        a.acquire()
        self.c.force_expire(r)  # a force-expire frees at once, delay or not
        b = self.c.lock(r, holder="b")
        self.assertTrue(b.acquire(blocking=False))
        b.release()

    def test_bad_input_is_refused_before_sending(self) -> None:
        for bad in ("", "x" * 161, "a\nb", 42):
            with self.assertRaises(fenceview.InvalidRequestError):
                self.c.lock(bad)  # type: ignore[arg-type]
        with self.assertRaises(fenceview.InvalidRequestError):
            self.c.lock("ok", holder="h" * 81)
        with self.assertRaises(fenceview.InvalidRequestError):
            self.c.lock("ok", lease=0)
        for bad in (0, -1, 2**63, True, 1.5, "7"):
            with self.assertRaises(fenceview.InvalidTokenError):
                self.c.fence("ok", bad)  # type: ignore[arg-type]

    def test_tokens_above_2_to_the_53_are_exact(self) -> None:
        r = unique("big")
        self.c.reset(r, 2**53)
        lock = self.c.lock(r, holder="h")
        with lock:
            self.assertEqual(lock.token, 2**53 + 1)
            self.assertTrue(self.c.fence(r, 2**53 + 1).accepted)
            self.assertEqual(self.c.fence(r, 2**53).required, 2**53 + 1)
        r2 = unique("top")
        self.c.reset(r2, 2**63 - 3)
        with self.c.lock(r2, holder="h") as top:
            self.assertEqual(top.token, 2**63 - 2)


LockOverRPC, LockOverJSON = over_both_transports(LockTests, "Lock")
