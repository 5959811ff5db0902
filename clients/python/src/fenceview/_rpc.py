"""The RPC stream (GET /v1/rpc): many threads' calls over one websocket.

A message holds requests, one JSON object per line, each with an ``id``;
the server answers ``{"id","status","body"}`` lines, in any order, the body
being what the JSON API would answer. Calls made while another thread is
writing join its next message, so a busy client sends few messages.
"""

import json
import socket
import threading
from typing import Any, Dict, List, Optional, Tuple

from ._errors import UnreachableError
from ._ws import WebSocket, WebSocketClosed

__all__ = ["RPCSession"]

#: The largest message sent: well under the server's 1 MiB.
MAX_MESSAGE = 256 << 10
#: Seconds a message may take to be written.
WRITE_TIMEOUT = 30.0

#: Close code 1012, service restart: with SERVICE_ENDED, the server's service ended.
SERVICE_RESTART = 1012
#: The reason of the close (code 1012) with which the server ends an RPC
#: stream whose service ended, as a cluster leader's does with its term: the
#: same string as the server's wire.ServiceEnded (internal/wire/rpcclose.go).
#: Every request the stream took was answered before that close, so one left
#: without an answer was not taken, changed nothing, and may be sent again on
#: a new stream. The reason is matched exactly: a 1012 from something else on
#: the way (a proxy restarting) says nothing of what the server took.
SERVICE_ENDED = "the service ended (a cluster leader's term ended); reconnect: requests left unanswered were not taken"

#: The answer of a call the server's service ended without taking: its
#: refusal of a call it did not do, which term_ended recognises.
NOT_TAKEN = (503, {"error": "the server's service ended before it read the request; nothing was changed", "code": "unavailable"})


def term_ended(status: int, body: Any) -> bool:
    """Whether an answer says the server stopped serving this connection: a
    503 unavailable without a time to retry (shutting down, or, in a
    cluster, the term that served the connection ended while it lives on).
    Every later call on it would get the same, so the session ends and the
    next call opens a new one."""
    return status == 503 and isinstance(body, dict) and body.get("code") == "unavailable" and not body.get("retryAfterMs")


class _Slot:
    __slots__ = ("done", "status", "body", "err")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.status = 0
        self.body: Any = None
        self.err: Optional[BaseException] = None


def encode(obj: Dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class RPCSession:
    """One websocket to /v1/rpc, with a daemon thread reading answers. When
    it breaks, every waiting call fails with :class:`UnreachableError`;
    but when the server closes it for its service's end (SERVICE_ENDED),
    every waiting call is answered NOT_TAKEN, which the client sends once
    more on a new stream."""

    def __init__(self, ws: WebSocket, fragment: Optional[int] = None) -> None:
        self._ws = ws
        self._fragment = fragment
        self._mu = threading.Lock()
        self._next = 0
        self._pending: Dict[int, _Slot] = {}
        self._queue: List[bytes] = []
        self._writing = False
        self._dead: Optional[UnreachableError] = None
        self._not_taken = False  # set with _dead when the server's service ended
        # A write that cannot finish in WRITE_TIMEOUT (a server that stopped
        # reading) ends the stream; the reader's recv just tries again when
        # nothing came in that long (the websocket keeps what it read).
        ws.settimeout(WRITE_TIMEOUT)
        self._reader = threading.Thread(target=self._read_loop, name="fenceview-rpc-reader", daemon=True)
        self._reader.start()

    @property
    def alive(self) -> bool:
        return self._dead is None

    @property
    def websocket(self) -> WebSocket:
        return self._ws

    def call(self, req: Dict[str, Any], timeout: Optional[float]) -> Tuple[int, Any]:
        """Send req (op, resource or name, fields) and wait at most timeout
        seconds for its answer: (status, body). A broken stream, or no answer
        in time, is an UnreachableError: the call may have been carried out."""
        slot = _Slot()
        with self._mu:
            if self._dead is not None:
                if self._not_taken:
                    return NOT_TAKEN[0], dict(NOT_TAKEN[1])
                raise self._dead
            self._next += 1
            rid = self._next
            self._pending[rid] = slot
            self._queue.append(encode({"id": rid, **req}))
            write = not self._writing
            if write:
                self._writing = True
        if write:
            self._drain()
        if not slot.done.wait(timeout):
            with self._mu:
                self._pending.pop(rid, None)
            raise UnreachableError(
                f"fenceview: rpc stream: no answer to {req.get('op')} within {timeout:.3g}s (it may have been carried out)"
            )
        if slot.err is not None:
            raise slot.err
        return slot.status, slot.body

    def _drain(self) -> None:
        # This thread writes every queued request, in messages of at most
        # MAX_MESSAGE bytes, until the queue stays empty; calls queued
        # meanwhile go in its next message.
        while True:
            with self._mu:
                batch, self._queue = self._queue, []
                if not batch or self._dead is not None:
                    self._writing = False
                    return
            msgs: List[bytes] = []
            cur: List[bytes] = []
            size = 0
            for line in batch:
                if cur and size + len(line) + 1 > MAX_MESSAGE:
                    msgs.append(b"\n".join(cur))
                    cur, size = [], 0
                cur.append(line)
                size += len(line) + 1
            msgs.append(b"\n".join(cur))
            try:
                for m in msgs:
                    self._ws.send(m, fragment=self._fragment)
            except (OSError, ValueError) as e:
                self._fail(UnreachableError(f"fenceview: rpc stream: {e}"))
                with self._mu:
                    self._writing = False
                return

    def _read_loop(self) -> None:
        try:
            while True:
                try:
                    _, msg = self._ws.recv()
                except socket.timeout:
                    if self._dead is not None:
                        return
                    continue
                stale = False
                for line in msg.split(b"\n"):
                    if not line.strip():
                        continue
                    a = json.loads(line)
                    rid, status = a.get("id"), a.get("status")
                    if not isinstance(rid, int) or not isinstance(status, int):
                        continue  # not one of ours: every request this session writes has an id
                    stale = stale or term_ended(status, a.get("body"))
                    with self._mu:
                        slot = self._pending.pop(rid, None)
                    if slot is not None:  # None: its caller gave up
                        slot.status, slot.body = status, a.get("body")
                        slot.done.set()
                if stale:
                    self._fail(UnreachableError("fenceview: rpc stream: the server stopped serving this connection (shutting down, or a cluster leader's term ended)"))
                    return
        except WebSocketClosed as e:
            ended = e.code == SERVICE_RESTART and e.reason == SERVICE_ENDED
            self._fail(UnreachableError(f"fenceview: rpc stream closed ({e.code}{': ' + e.reason if e.reason else ''})"), not_taken=ended)
        except (OSError, ValueError, AttributeError) as e:  # a broken socket, an answer that is not JSON
            self._fail(UnreachableError(f"fenceview: rpc stream: {e}"))
        finally:
            self._ws.abort()

    def _fail(self, err: UnreachableError, not_taken: bool = False) -> None:
        """End the session: every waiting call fails with err, or, when the
        server closed it for its service's end, is answered NOT_TAKEN."""
        with self._mu:
            if self._dead is not None:
                return
            self._dead = err
            self._not_taken = not_taken
            pending, self._pending = self._pending, {}
        for slot in pending.values():
            if not_taken:
                slot.status, slot.body = NOT_TAKEN[0], dict(NOT_TAKEN[1])
            else:
                slot.err = err
            slot.done.set()

    def close(self, wait: float = 2.0) -> None:
        """End the stream: the closing handshake, then the socket; waiting
        calls fail."""
        self._fail(UnreachableError("fenceview: rpc stream closed by the client"))
        try:
            self._ws.close()
        except OSError:
            pass
        self._reader.join(wait)
        self._ws.abort()
