"""Semaphores, multi-locks and elections against the real server."""

import threading
import unittest

import fenceview

from .helpers import ADMIN, URL, Cuttable, OneClient, need_server, over_both_transports, unique, until


class Primitives(OneClient):
    def test_semaphore_permits_are_slots_with_their_own_tokens(self) -> None:
        name = unique("exports")
        sem = self.c.semaphore(name, 2, holder="w")
        p0 = sem.acquire()
        p1 = sem.acquire()
        assert p0 is not None and p1 is not None
        self.assertEqual({p0.name, p1.name}, {f"{name}#0", f"{name}#1"})
        self.assertEqual({p0.slot, p1.slot}, {0, 1})
        self.assertTrue(self.c.fence(p0.name, p0.token).accepted)
        self.assertIsNone(sem.acquire(blocking=False))
        self.assertIsNone(self.c.semaphore(name, 2, holder="other").acquire(timeout=0.05))
        st = sem.state()
        assert st is not None
        self.assertEqual((st["permits"], st["free"]), (2, 0))
        p0.release()
        with sem as p:
            self.assertEqual(p.slot, p0.slot)
            self.assertGreater(p.token, p0.token)
        p1.release()
        self.assertEqual(sem.state()["free"], 2)  # type: ignore[index]

    def test_semaphore_errors(self) -> None:
        name = unique("sem")
        with self.c.semaphore(name, 1, holder="a"):
            with self.assertRaises(fenceview.NoPermitError) as cm:
                with self.c.semaphore(name, 1, holder="b", wait=0.05):
                    self.fail("entered a full semaphore")
            self.assertIsInstance(cm.exception, fenceview.LockHeldError)
            with self.assertRaises(fenceview.PermitsMismatchError) as cm2:
                self.c.semaphore(name, 3).acquire(blocking=False)
            self.assertEqual(cm2.exception.permits, 1)
        for bad in ("a#b", "x" * 151):
            with self.assertRaises(fenceview.InvalidRequestError):
                self.c.semaphore(bad, 1)
        with self.assertRaises(fenceview.InvalidRequestError):
            self.c.semaphore(name, 0)
        self.assertIsNone(self.c.semaphore(unique("never"), 1).state())

    def test_a_lost_permit_is_noticed_and_released_quietly(self) -> None:
        name = unique("lostsem")
        p = self.c.semaphore(name, 1, holder="a", lease=0.6).acquire()
        assert p is not None
        self.assertLostWhenExpired(p, p.name)
        p.release()

    def test_multi_lock_all_or_nothing(self) -> None:
        a, b = unique("a"), unique("b")
        with self.c.lock(b, holder="other") as other:
            m = self.c.lock_all([a, b], holder="me")
            self.assertFalse(m.acquire(blocking=False))
            self.assertFalse(self.c.lock_state(a).locked, "a multi-lock held part of its set")
            with self.assertRaises(fenceview.LockHeldError) as cm:
                with self.c.lock_all([a, b], holder="me", wait=0.05):
                    self.fail("entered")
            self.assertEqual([h["resourceId"] for h in cm.exception.held], [b])
            self.assertEqual(cm.exception.holder, "other")
            self.assertGreater(other.token, 0)
        with self.c.lock_all([a, b], holder="me") as m:
            self.assertEqual(set(m.tokens), {a, b})
            for r, t in m.tokens.items():
                self.assertTrue(self.c.fence(r, t).accepted)
                self.assertEqual(self.c.lock_state(r).holder, "me")
        self.assertFalse(self.c.lock_state(a).locked)
        with self.assertRaises(fenceview.InvalidRequestError):
            self.c.lock_all([a, a])

    def test_multi_lock_waits_until_all_are_free(self) -> None:
        a, b = unique("a"), unique("b")
        held = self.c.lock(a, holder="other")
        held.acquire()
        got = threading.Event()
        m = self.c.lock_all([a, b], holder="me")
        t = threading.Thread(target=lambda: (m.acquire(), got.set()), daemon=True)
        t.start()
        # Waiting or not yet arrived, the multi-lock holds none of its set.
        self.assertFalse(self.c.lock_state(b).locked)
        self.assertFalse(got.is_set())
        held.release()
        self.assertTrue(got.wait(30))
        m.release()

    def test_election_the_term_is_the_token(self) -> None:
        name = unique("leader")
        e1 = self.c.election(name, candidate="n1")
        term = e1.campaign("http://n1")
        self.assertGreater(term, 0)
        leader = e1.leader()
        assert leader is not None
        self.assertEqual((leader["candidate"], leader["value"], leader["term"]), ("n1", "http://n1", term))
        e1.proclaim("http://n1/v2")
        self.assertEqual(e1.leader()["value"], "http://n1/v2")  # type: ignore[index]
        e2 = self.c.election(name, candidate="n2")
        with self.assertRaises(fenceview.LockHeldError) as cm:
            e2.campaign("http://n2", timeout=0.05)
        self.assertEqual(cm.exception.holder, "n1")
        with self.assertRaises(fenceview.NotLeaderError):
            e2.proclaim("nope")
        e1.resign()
        self.assertEqual(e2.campaign("http://n2"), e2.term)
        self.assertGreater(e2.term, term)
        # The deposed leader's writes, fenced with its term, are refused.
        self.assertTrue(self.c.fence(name, e2.term).accepted)
        self.assertEqual(self.c.fence(name, term).reason, "stale-token")
        e2.resign()
        self.assertIsNone(e2.leader())
        with self.assertRaises(fenceview.NotLeaderError):  # a second resign
            e2.resign()
        with self.assertRaises(fenceview.NotLeaderError):  # one without a campaign won
            self.c.election(name, candidate="n3").resign()

    def test_a_lost_leadership_sets_lost(self) -> None:
        name = unique("depose")
        e = self.c.election(name, candidate="n1", lease=0.6)
        e.campaign()
        self.assertLostWhenExpired(e, name)
        e.resign()  # quiet


PrimitivesOverRPC, PrimitivesOverJSON = over_both_transports(Primitives, "Primitives")


@need_server
class Observing(OneClient, unittest.TestCase):
    def test_the_event_stream_carries_grants_and_decisions(self) -> None:
        r = unique("events")
        with self.c.events(resource=r) as stream:
            with self.c.lock(r, holder="h") as lock:
                self.c.fence(r, lock.token)
            seen = []
            for ev in stream:
                seen.append(ev)
                if ev["type"] == "release":
                    break
        self.assertEqual([e["type"] for e in seen], ["grant", "accept", "release"])
        self.assertTrue(all(e["resourceId"] == r for e in seen))
        self.assertEqual(seen[0]["token"], lock.token)
        # Resumable: from the first event's seq, the rest again.
        with self.c.events(resource=r, since=seen[0]["seq"]) as again:
            self.assertEqual(next(again)["seq"], seen[1]["seq"])

    def test_observe_sees_every_leader_and_value(self) -> None:
        name = unique("observed")
        e = self.c.election(name, candidate="n1")
        watcher = self.c.election(name, candidate="watcher")
        seen: list = []
        ready = threading.Event()

        def watch() -> None:
            gen = watcher.observe()
            for leader in gen:
                seen.append(None if leader is None else (leader["candidate"], leader["value"]))
                ready.set()
                if len(seen) == 4:
                    gen.close()
                    return

        t = threading.Thread(target=watch, daemon=True)
        t.start()
        self.assertTrue(ready.wait(30))
        e.campaign("v1")
        until(lambda: len(seen) >= 2, "the first leader")
        e.proclaim("v2")
        until(lambda: len(seen) >= 3, "the new value")
        e.resign()
        t.join(30)
        self.assertEqual(seen, [None, ("n1", "v1"), ("n1", "v2"), None])

    def test_run_leads_then_resigns(self) -> None:
        name = unique("run")
        e = self.c.election(name, candidate="n1")
        out = e.run(lambda x: (x, e.term, e.leader()["candidate"]), 7, value="v")  # type: ignore[index]
        self.assertEqual(out[0], 7)
        self.assertGreater(out[1], 0)
        self.assertEqual(out[2], "n1")
        self.assertIsNone(e.leader())

    def test_observe_resumes_after_the_stream_breaks(self) -> None:
        proxy = Cuttable(URL)
        self.addCleanup(proxy.cut)
        watching = fenceview.Client(proxy.url, key=ADMIN, rpc=False)
        self.addCleanup(watching.close)
        name = unique("resumed")
        e = self.c.election(name, candidate="n1")
        seen: list = []
        gen = watching.election(name, candidate="watcher").observe()

        def watch() -> None:
            for leader in gen:
                seen.append(None if leader is None else leader["value"])
                if len(seen) == 3:
                    return

        t = threading.Thread(target=watch, daemon=True)
        t.start()
        until(lambda: seen == [None], "the first answer")
        e.campaign("v1")
        until(lambda: len(seen) >= 2, "the first leader")
        proxy.drop()  # the stream breaks; the observer opens another
        e.proclaim("v2")
        t.join(30)
        self.assertEqual(seen, [None, "v1", "v2"])
        e.resign()
