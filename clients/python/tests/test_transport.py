"""The RPC stream by default, the JSON API as fallback, and the same typed
errors over both."""

import logging
import threading
import unittest

import fenceview

from .helpers import ADMIN, URL, OneClient, Served, WSServer, client, forwarding_handler, need_server, over_both_transports, unique


@need_server
class Transport(unittest.TestCase):
    def test_rpc_by_default_and_off_with_one_option(self) -> None:
        with client() as c:
            self.assertTrue(c.uses_rpc)
            with c.lock(unique("rpc")) as lock:
                self.assertGreater(lock.token, 0)
            self.assertIsNotNone(c._session)
        with client(rpc=False) as c:
            self.assertFalse(c.uses_rpc)
            with c.lock(unique("json")) as lock:
                self.assertGreater(lock.token, 0)
            self.assertIsNone(c._session)

    def test_falls_back_to_json_when_the_websocket_cannot_be_opened_logged_once(self) -> None:
        proxy = Served(forwarding_handler(URL))
        self.addCleanup(proxy.close)
        with self.assertLogs("fenceview", logging.WARNING) as logs:
            with fenceview.Client(proxy.url, key=ADMIN) as c:
                r = unique("fallback")
                for _ in range(3):
                    with c.lock(r, holder="h") as lock:
                        self.assertTrue(c.fence(r, lock.token).accepted)
                self.assertFalse(c.uses_rpc)
        self.assertEqual(len(logs.records), 1, logs.output)
        self.assertIn("JSON API", logs.output[0])

    def test_many_threads_share_one_stream(self) -> None:
        with client() as c:
            r = unique("many")
            tokens = []
            mu = threading.Lock()

            def work(i: int) -> None:
                lock = c.lock(f"{r}-{i % 4}", holder=f"t{i}")
                for _ in range(5):
                    with lock:
                        d = c.fence(lock.name, lock.token)
                        with mu:
                            tokens.append((lock.name, lock.token, d.accepted))

            ts = [threading.Thread(target=work, args=(i,)) for i in range(16)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            self.assertEqual(len(tokens), 80)
            self.assertTrue(all(ok for _, _, ok in tokens))
            for name in {n for n, _, _ in tokens}:
                seen = [t for n, t, _ in tokens if n == name]
                self.assertEqual(len(seen), len(set(seen)), "a token granted twice")

    def test_a_broken_stream_is_reopened_for_the_next_call(self) -> None:
        with client() as c:
            r = unique("reopen")
            with c.lock(r, holder="h"):
                pass
            first = c._session
            first.websocket.abort()
            until_dead = first._reader.join(10)
            self.assertFalse(first.alive)
            with c.lock(r, holder="h") as lock:
                self.assertGreater(lock.token, 1)
            self.assertIsNot(c._session, first)
            self.assertIsNone(until_dead)


class Errors(OneClient):
    def test_unknown_field_names_the_field(self) -> None:
        with self.assertRaises(fenceview.UnknownFieldError) as cm:
            self.c._call("acquire", unique("u"), {"holder": "h", "lease": 5000})
        e = cm.exception
        self.assertEqual((e.code, e.status, e.field), ("unknown-field", 400, "lease"))
        self.assertIsInstance(e, fenceview.InvalidRequestError)
        self.assertIsInstance(e, ValueError)

    def test_invalid_request_names_the_field(self) -> None:
        with self.assertRaises(fenceview.InvalidRequestError) as cm:
            self.c._call("acquire", unique("u"), {"holder": "h", "leaseMs": -5})
        self.assertEqual((cm.exception.code, cm.exception.status, cm.exception.field), ("invalid-request", 400, "leaseMs"))

    def test_not_owner_and_not_held(self) -> None:
        r = unique("owner")
        with self.c.lock(r, holder="a"):
            with self.assertRaises(fenceview.NotOwnerError) as cm:
                self.c.lock(r, holder="b").renew()
            self.assertEqual(cm.exception.code, "not-owner")
        with self.assertRaises(fenceview.NotHeldError) as cm2:
            self.c.lock(r, holder="b").renew()
        self.assertEqual(cm2.exception.code, "not-held")

    def test_keys_roles_and_revocation(self) -> None:
        r = unique("keys")
        viewer = self.c.create_key(unique("viewer"), "viewer")
        with fenceview.Client(URL, key=viewer["secret"], rpc=self.rpc) as v:
            self.assertFalse(v.lock_state(r).locked)
            with self.assertRaises(fenceview.ForbiddenError) as cm:
                v.lock(r, holder="h").acquire()
            self.assertEqual((cm.exception.code, cm.exception.status), ("forbidden", 403))
        prefixed = self.c.create_key(unique("client"), "client", ["mine:"])
        with fenceview.Client(URL, key=prefixed["secret"], rpc=self.rpc) as p:
            with p.lock(unique("mine:"), holder="h") as lock:
                self.assertGreater(lock.token, 0)
            with self.assertRaises(fenceview.ForbiddenError):
                p.lock(unique("theirs:"), holder="h").acquire()
        self.c.revoke_key(prefixed["id"])
        with fenceview.Client(URL, key=prefixed["secret"], rpc=self.rpc) as p:
            with self.assertRaises(fenceview.UnauthenticatedError) as cm2:
                p.lock(unique("mine:"), holder="h").acquire()
            self.assertEqual(cm2.exception.status, 401)
        with fenceview.Client(URL, key="not-a-key", rpc=self.rpc) as bad:
            with self.assertRaises(fenceview.UnauthenticatedError):
                bad.lock_state(r)

    def test_another_keys_lock_is_not_owned(self) -> None:
        r = unique("two-keys")
        k1 = self.c.create_key(unique("k1"), "client")
        k2 = self.c.create_key(unique("k2"), "client")
        with fenceview.Client(URL, key=k1["secret"], rpc=self.rpc) as c1, fenceview.Client(URL, key=k2["secret"], rpc=self.rpc) as c2:
            with c1.lock(r, holder="same"):
                with self.assertRaises(fenceview.NotOwnerError):
                    c2.lock(r, holder="same").renew()


ErrorsOverRPC, ErrorsOverJSON = over_both_transports(Errors, "Errors")


class RefusedUpgrade(unittest.TestCase):
    def test_a_refusal_with_a_code_is_raised_not_fallen_back_from(self) -> None:
        srv = WSServer(lambda *a: None, refuse=(401, b'{"error":"no key","code":"unauthenticated"}'))
        self.addCleanup(srv.close)
        with fenceview.Client(srv.url, key="k") as c:
            with self.assertRaises(fenceview.UnauthenticatedError):
                c.lock_state("x")


def leaderless() -> type:
    """A node of a cluster with no leader: 503 unavailable to everything."""
    import http.server

    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a: object) -> None:
            pass

        def _no(self) -> None:
            n = int(self.headers.get("Content-Length") or 0)
            if n:
                self.rfile.read(n)
            body = b'{"error":"no leader","code":"unavailable"}'
            self.send_response(503)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _no

    return H


@need_server
class Nodes(unittest.TestCase):
    def test_an_unreachable_node_is_passed_over(self) -> None:
        for rpc in (True, False):
            with fenceview.Client("http://127.0.0.1:1", key=ADMIN, urls=[URL], rpc=rpc) as c:
                r = unique("nodes")
                with c.lock(r, holder="h") as lock:
                    self.assertTrue(c.fence(r, lock.token).accepted)
                self.assertEqual(c.url, URL)
                self.assertEqual(c.uses_rpc, rpc)
                with c.events(resource=r) as stream:
                    c.lock_state(r)
                    self.assertIsNotNone(stream)

    def test_a_node_without_a_leader_is_passed_over(self) -> None:
        down = Served(leaderless())
        self.addCleanup(down.close)
        with fenceview.Client(down.url, key=ADMIN, urls=[URL], rpc=False) as c:
            r = unique("leaderless")
            with c.lock(r, holder="h") as lock:
                self.assertGreater(lock.token, 0)
            self.assertEqual(c.url, URL)

    def test_with_every_node_unreachable_the_error_is_unreachable(self) -> None:
        with fenceview.Client("http://127.0.0.1:1", urls=["http://127.0.0.1:2"], rpc=False) as c:
            with self.assertRaises(fenceview.UnreachableError):
                c.lock_state("x")
