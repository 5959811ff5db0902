"""The standard-library websocket: framing fuzzed against the real server
(gorilla/websocket behind GET /v1/rpc), and what the server never does
(fragmented messages, pings, closes, broken frames) from a small server here.

The fuzz is seeded: FENCEVIEW_WS_SEED replays a run, FENCEVIEW_WS_ROUNDS
sets its length (default 60)."""

import json
import os
import random
import struct
import threading
import time
import unittest
from typing import Any, Dict, List

import fenceview
from fenceview._ws import OP_TEXT, ProtocolError, WebSocket, WebSocketClosed, frame, mask

from .helpers import ADMIN, URL, WSServer, answer_calls, client, need_server, unique


def ws_url(base: str) -> str:
    return base.replace("http", "ws", 1) + "/v1/rpc"


class Masking(unittest.TestCase):
    def test_mask_is_its_own_inverse_and_matches_the_rfc(self) -> None:
        rng = random.Random(7)
        for n in (0, 1, 3, 4, 5, 125, 126, 1000, 65536):
            data = bytes(rng.randrange(256) for _ in range(n))
            key = bytes(rng.randrange(256) for _ in range(4))
            m = mask(key, data)
            self.assertEqual(m, bytes(b ^ key[i % 4] for i, b in enumerate(data)))
            self.assertEqual(mask(key, m), data)

    def test_frame_lengths(self) -> None:
        for n, head in ((0, 2), (125, 2), (126, 4), (65535, 4), (65536, 10)):
            f = frame(OP_TEXT, b"x" * n, key=b"abcd")
            self.assertEqual(len(f), head + 4 + n)
            self.assertEqual(f[1] & 0x80, 0x80, "a client frame is masked")


@need_server
class FuzzAgainstTheServer(unittest.TestCase):
    """Random messages, random fragmentations, pings between fragments:
    every request must be answered exactly as the JSON API would."""

    def test_random_framings_are_answered(self) -> None:
        seed = int(os.environ.get("FENCEVIEW_WS_SEED") or random.SystemRandom().randrange(1 << 32))
        rounds = int(os.environ.get("FENCEVIEW_WS_ROUNDS") or 60)
        print(f"\nwebsocket fuzz: FENCEVIEW_WS_SEED={seed}")
        rng = random.Random(seed)
        ws = WebSocket.connect(ws_url(URL), {"Authorization": f"Bearer {ADMIN}"}, random=rng.randbytes)
        self.addCleanup(ws.abort)
        ws.settimeout(30)
        c = client(rpc=False)
        self.addCleanup(c.close)
        r = unique("fuzz")
        with c.lock(r, holder="fuzz") as lock:
            token = lock.token
        next_id = 0
        for round_no in range(rounds):
            # Lines of a few kinds, so the message's length falls on each
            # side of 125 and 65535 bytes (the length encodings).
            want: Dict[int, Any] = {}
            lines: List[bytes] = []
            target = rng.choice([1, 100, 125, 126, 127, 4000, 65535, 65536, 70000, 200000])
            size = 0
            while size < target or not lines:
                next_id += 1
                kind = rng.randrange(3)
                if kind == 0:
                    req = {"id": next_id, "op": "fence", "resource": r, "token": token}
                    want[next_id] = (200, True)
                elif kind == 1:
                    req = {"id": next_id, "op": "lock", "resource": r}
                    want[next_id] = (200, None)
                else:  # a refusal, named by its code
                    req = {"id": next_id, "op": "acquire", "resource": r, "holder": "x" * rng.randrange(1, 81), "lease": 1}
                    want[next_id] = (400, "unknown-field")
                line = json.dumps(req, separators=(",", ":")).encode()
                pad = target - size - len(line) - 1
                if pad > 0 and kind == 1 and rng.random() < 0.5:
                    line = line[:-1] + b" " * min(pad, 60000) + b"}"  # JSON whitespace: still the same request
                lines.append(line)
                size += len(line) + 1
            msg = b"\n".join(lines)
            fragment = rng.choice([None, 1, 2, 7, 125, 126, 1000, 65536, max(1, len(msg) // 3)])
            if fragment is not None and len(msg) // fragment > 5000:
                fragment = len(msg) // 5000 + 1  # a bound on the frames of one message, for the run's time
            self._send(ws, msg, fragment, rng)
            got: Dict[int, Any] = {}
            while len(got) < len(want):
                _, data = ws.recv()
                for ln in data.split(b"\n"):
                    if ln.strip():
                        a = json.loads(ln)
                        got[a["id"]] = a
            for rid, (status, what) in want.items():
                a = got[rid]
                self.assertEqual(a["status"], status, f"round {round_no} (seed {seed}): {a}")
                if what is True:
                    self.assertTrue(a["body"]["accepted"])
                elif isinstance(what, str):
                    self.assertEqual(a["body"]["code"], what)
                    self.assertEqual(a["body"]["field"], "lease")
                else:
                    self.assertEqual(a["body"]["resourceId"], r)
        ws.ping(b"last")
        deadline = time.monotonic() + 30
        while ws.pongs == 0 and time.monotonic() < deadline:
            # The pong arrives with the next answer read.
            ws.send(json.dumps({"id": 0, "op": "lock", "resource": r}).encode())
            ws.recv()
        self.assertGreater(ws.pongs, 0, "the server never answered a ping")
        ws.close(wait=10)

    @staticmethod
    def _send(ws: WebSocket, msg: bytes, fragment: Any, rng: random.Random) -> None:
        if fragment is None or rng.random() < 0.5:
            ws.send(msg, fragment=fragment)
            return
        # By hand: pings between the fragments, as RFC 6455 allows.
        with ws._msg_lock:
            parts = [msg[i : i + fragment] for i in range(0, len(msg), fragment)]
            for i, p in enumerate(parts):
                if rng.random() < 0.2:
                    ws.ping(bytes(rng.randrange(256) for _ in range(rng.randrange(126))))
                ws._send_frame(OP_TEXT if i == 0 else 0, p, fin=i == len(parts) - 1)

    def connect(self) -> WebSocket:
        """A websocket to the test server, aborted at cleanup."""
        ws = WebSocket.connect(ws_url(URL), {"Authorization": f"Bearer {ADMIN}"})
        self.addCleanup(ws.abort)
        ws.settimeout(30)
        return ws

    def assertClosedWith(self, ws: WebSocket, codes: Any) -> None:
        """Reads ws until the server closes it, with one of codes."""
        with self.assertRaises(WebSocketClosed) as cm:
            while True:
                ws.recv()
        self.assertIn(cm.exception.code, codes)

    def test_the_server_closes_on_a_frame_that_is_not_masked(self) -> None:
        ws = self.connect()
        ws._sock.sendall(frame(OP_TEXT, b'{"id":1,"op":"lock","resource":"x"}'))  # no key: unmasked
        self.assertClosedWith(ws, (1002, 1006))

    def test_the_server_closes_on_a_message_over_its_limit(self) -> None:
        ws = self.connect()
        try:
            ws.send(b" " * ((1 << 20) + 1), fragment=65536)
        except OSError:
            pass  # the server may close before the last fragment
        self.assertClosedWith(ws, (1009, 1006))

    def test_closing_handshake(self) -> None:
        ws = WebSocket.connect(ws_url(URL), {"Authorization": f"Bearer {ADMIN}"})
        ws.close(1000, "bye", wait=10)
        with self.assertRaises(WebSocketClosed) as cm:
            ws.recv()
        self.assertIn(cm.exception.code, (1000, 1006))


class FromAServerThatFragments(unittest.TestCase):
    """The client side of what gorilla never sends."""

    def serve(self, handle: Any) -> WebSocket:
        srv = WSServer(handle)
        self.addCleanup(srv.close)
        ws = WebSocket.connect(ws_url(srv.url))
        ws.settimeout(30)
        self.addCleanup(ws.abort)
        return ws

    def test_fragments_are_joined_and_interleaved_pings_answered(self) -> None:
        seen: List[Any] = []
        done = threading.Event()

        def handle(conn: Any, path: str, hdrs: Any) -> None:
            conn.send_frame(0x1, b"hel", fin=False)
            conn.send_frame(0x9, b"are you there")
            conn.send_frame(0x0, b"lo ", fin=False)
            conn.send_frame(0x0, "wörld".encode(), fin=True)
            seen.append(conn.read_frame())  # the pong
            conn.send_frame(0x8, struct.pack("!H", 1001) + b"going away")
            seen.append(conn.read_frame())  # the close echoed
            done.set()

        ws = self.serve(handle)
        self.assertEqual(ws.recv(), (OP_TEXT, "hello wörld".encode()))
        with self.assertRaises(WebSocketClosed) as cm:
            ws.recv()
        self.assertEqual((cm.exception.code, cm.exception.reason), (1001, "going away"))
        self.assertTrue(done.wait(30))
        self.assertEqual(seen[0], (True, 0xA, b"are you there"))
        self.assertEqual(seen[1][1], 0x8)
        self.assertEqual(struct.unpack("!H", seen[1][2][:2])[0], 1001)
        self.assertEqual(ws.pings, 1)

    def protocol_error(self, send: Any, code: int) -> None:
        closes: List[Any] = []

        def handle(conn: Any, path: str, hdrs: Any) -> None:
            send(conn)
            closes.append(conn.read_frame())

        ws = self.serve(handle)
        with self.assertRaises(ProtocolError) as cm:
            ws.recv()
        self.assertEqual(cm.exception.code, code)
        deadline = time.monotonic() + 30
        while not closes and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertEqual(closes[0][1], 0x8, "the client closed without a close frame")
        self.assertEqual(struct.unpack("!H", closes[0][2][:2])[0], code)

    def test_a_masked_server_frame(self) -> None:
        self.protocol_error(lambda c: c.send_raw(bytes([0x81, 0x82]) + b"abcd" + mask(b"abcd", b"hi")), 1002)

    def test_a_reserved_bit(self) -> None:
        self.protocol_error(lambda c: c.send_frame(0x1, b"x", rsv=0x40), 1002)

    def test_a_continuation_with_nothing_to_continue(self) -> None:
        self.protocol_error(lambda c: c.send_frame(0x0, b"x"), 1002)

    def test_a_new_message_inside_a_fragmented_one(self) -> None:
        self.protocol_error(lambda c: (c.send_frame(0x1, b"a", fin=False), c.send_frame(0x1, b"b")), 1002)

    def test_a_fragmented_control_frame(self) -> None:
        self.protocol_error(lambda c: c.send_frame(0x9, b"x", fin=False), 1002)

    def test_an_unknown_opcode(self) -> None:
        self.protocol_error(lambda c: c.send_frame(0x3, b"x"), 1002)

    def test_text_that_is_not_utf8(self) -> None:
        self.protocol_error(lambda c: c.send_frame(0x1, b"\xff\xfe"), 1007)

    def test_a_message_over_the_limit(self) -> None:
        srv = WSServer(lambda conn, p, h: (conn.send_frame(0x1, b"x" * 100), conn.read_frame()))
        self.addCleanup(srv.close)
        ws = WebSocket.connect(ws_url(srv.url), max_message=99)
        self.addCleanup(ws.abort)
        ws.settimeout(30)
        with self.assertRaises(ProtocolError) as cm:
            ws.recv()
        self.assertEqual(cm.exception.code, 1009)

    def test_the_rpc_session_fails_waiting_calls_when_the_server_closes(self) -> None:
        def handle(conn: Any, path: str, hdrs: Any) -> None:
            conn.read_message()
            conn.send_frame(0x8, struct.pack("!H", 1011) + b"bye")

        srv = WSServer(handle)
        self.addCleanup(srv.close)
        with fenceview.Client(srv.url) as c:
            with self.assertRaises(fenceview.UnreachableError) as cm:
                c.lock_state("x")
            self.assertIn("1011", str(cm.exception))

    def test_rpc_answers_come_back_in_any_order_and_fragmented(self) -> None:
        def handle(conn: Any, path: str, hdrs: Any) -> None:
            got: List[Any] = []
            while len(got) < 3:
                _, msg = conn.read_message()
                got += [json.loads(ln) for ln in msg.split(b"\n") if ln.strip()]
            answers = b"\n".join(
                json.dumps({"id": q["id"], "status": 200, "body": {"resourceId": q["resource"], "locked": False, "token": 2**60}}).encode()
                for q in reversed(got)
            )
            for i in range(0, len(answers), 10):
                conn.send_frame(0x1 if i == 0 else 0x0, answers[i : i + 10], fin=i + 10 >= len(answers))
            conn.read_message()

        srv = WSServer(handle)
        self.addCleanup(srv.close)
        with fenceview.Client(srv.url) as c:
            out: Dict[str, Any] = {}
            ts = [threading.Thread(target=lambda n=n: out.__setitem__(n, c.lock_state(n))) for n in ("a", "b", "c")]
            for t in ts:
                t.start()
            for t in ts:
                t.join(30)
            self.assertEqual({n: s.resource_id for n, s in out.items()}, {"a": "a", "b": "b", "c": "c"})
            self.assertEqual(out["a"].token, 2**60)


class AStreamTheServerStoppedServing(unittest.TestCase):
    def test_is_left_for_a_new_one_and_the_call_sent_once_more(self) -> None:
        conns: List[str] = []

        def handle(conn: Any, path: str, hdrs: Any) -> None:
            conns.append(path)
            first = len(conns) == 1

            def answer(q: Dict[str, Any]) -> Dict[str, Any]:
                if first:
                    return {"id": q["id"], "status": 503, "body": {"error": "shutting down", "code": "unavailable"}}
                return {"id": q["id"], "status": 200, "body": {"resourceId": q["resource"], "locked": False, "token": 5}}

            answer_calls(conn, answer)

        srv = WSServer(handle)
        self.addCleanup(srv.close)
        with fenceview.Client(srv.url) as c:
            self.assertEqual(c.lock_state("x").token, 5)
            self.assertEqual(len(conns), 2)
            self.assertEqual(c.lock_state("x").token, 5)
            self.assertEqual(len(conns), 2, "a healthy stream was replaced")
