"""Shared by the suites: the servers the Go test (python_test.go) started,
unique names, and small real servers for what fenceview itself never does
(shed every call, refuse websocket upgrades, fragment its messages).

Without FENCEVIEW_URL every test that needs a server skips; the Go test
fails on any skip, so under go test every suite runs.
"""

import base64
import hashlib
import http.client
import http.server
import json
import os
import socket
import socketserver
import struct
import threading
import time
import unittest
import uuid
from typing import Any, Callable, Dict, List, Optional, Tuple

import fenceview

URL = os.environ.get("FENCEVIEW_URL")
ADMIN = os.environ.get("FENCEVIEW_ADMIN_TOKEN")
SIGNED_URL = os.environ.get("FENCEVIEW_SIGNED_URL")
TLS_URL = os.environ.get("FENCEVIEW_TLS_URL")
TLS_CA = os.environ.get("FENCEVIEW_TLS_CA")
TLS_CLIENT_CERT = os.environ.get("FENCEVIEW_TLS_CLIENT_CERT")
TLS_CLIENT_KEY = os.environ.get("FENCEVIEW_TLS_CLIENT_KEY")
PG_DSN = os.environ.get("FENCEVIEW_PG_DSN")
# Fronts of the server that close the first RPC stream with 1012 once it has
# read a call (servertest.ClosingFronts): for the server's service's end,
# and for another reason.
ENDED_URL = os.environ.get("FENCEVIEW_ENDED_URL")
RESTARTED_URL = os.environ.get("FENCEVIEW_RESTARTED_URL")

need_server = unittest.skipUnless(URL and ADMIN, "FENCEVIEW_URL not set: run through go test ./clients/python")


def client(**kw: Any) -> fenceview.Client:
    """A client of the test server with the admin token."""
    return fenceview.Client(URL, key=ADMIN, **kw)


class OneClient:
    """Gives each test self.c, a client of the test server over the RPC
    stream (rpc, the default) or over the JSON API."""

    rpc = True

    def setUp(self) -> None:
        self.c = client(rpc=self.rpc)
        self.addCleanup(self.c.close)  # type: ignore[attr-defined]

    def assertLostWhenExpired(self, lease: fenceview.Lease, resource: str, msg: Optional[str] = None) -> None:
        """Expires resource's lease on the server: lease.lost must be set."""
        self.c.force_expire(resource)
        self.assertTrue(lease.lost.wait(30), msg)  # type: ignore[attr-defined]


def over_both_transports(suite: type, name: str) -> Tuple[type, type]:
    """suite's tests as two TestCases needing the test server, <name>OverRPC
    and <name>OverJSON: every behaviour holds on either transport."""
    made = [
        need_server(type(name + over, (suite, unittest.TestCase), {"rpc": rpc, "__module__": suite.__module__}))
        for over, rpc in (("OverRPC", True), ("OverJSON", False))
    ]
    return made[0], made[1]


def unique(what: str) -> str:
    """A resource id no other test uses."""
    return f"{what}-{uuid.uuid4().hex[:12]}"


def until(probe: Callable[[], Any], what: str, limit: float = 30.0) -> Any:
    """Poll probe until it returns something truthy, and return it: the
    test waits on the server's state, not on a guess of how long something
    takes; the bound only turns a hang into a failure."""
    end = time.monotonic() + limit
    while True:
        v = probe()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.01)


class _Background:
    """A socketserver on 127.0.0.1 serving from its own daemon thread
    until close."""

    server: socketserver.BaseServer

    def _serve(self, server: socketserver.TCPServer) -> None:
        self.server = server
        server.daemon_threads = True  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Served(_Background):
    """A threading HTTP server on 127.0.0.1:0 running handler."""

    def __init__(self, handler: type) -> None:
        self._serve(http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler))


def forwarding_handler(target: str, upgrade_status: int = 400) -> type:
    """A handler that forwards plain HTTP requests to target and refuses
    every websocket upgrade with upgrade_status, as some proxies do."""
    host, port = target.split("//", 1)[1].split(":")

    class Forward(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a: Any) -> None:
            pass

        def _go(self) -> None:
            if self.headers.get("Upgrade", "").lower() == "websocket":
                body = b"no websockets here"
                self.send_response(upgrade_status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else None
            c = http.client.HTTPConnection(host, int(port), timeout=30)
            hdrs = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
            c.request(self.command, self.path, body=body, headers=hdrs)
            r = c.getresponse()
            data = r.read()
            self.send_response(r.status)
            for k, v in r.getheaders():
                if k.lower() not in ("content-length", "connection", "transfer-encoding"):
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            c.close()

        do_GET = do_POST = do_PUT = do_DELETE = _go

    return Forward


class Cuttable:
    """A TCP proxy on 127.0.0.1:0 to the test server that can be cut:
    its connections close and new ones are refused, as when a network
    partition or a dead node leaves a holder unable to renew."""

    def __init__(self, target: str) -> None:
        host, port = target.split("//", 1)[1].split(":")
        self._target = (host, int(port))
        self._ln = socket.socket()
        self._ln.bind(("127.0.0.1", 0))
        self._ln.listen(64)
        self.url = f"http://127.0.0.1:{self._ln.getsockname()[1]}"
        self._conns: List[socket.socket] = []
        self._mu = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                a, _ = self._ln.accept()
            except OSError:
                return
            b = socket.create_connection(self._target)
            with self._mu:
                self._conns += [a, b]
            for x, y in ((a, b), (b, a)):
                threading.Thread(target=self._pipe, args=(x, y), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                d = src.recv(65536)
                if not d:
                    break
                dst.sendall(d)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        src.close()  # dst is closed by the other direction's pipe

    def drop(self) -> None:
        """Close the connections open now; new ones are still made."""
        with self._mu:
            conns, self._conns = self._conns, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass

    def cut(self) -> None:
        try:
            self._ln.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread; close alone would not
        except OSError:
            pass
        self._ln.close()
        with self._mu:
            for s in self._conns:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                    s.close()
                except OSError:
                    pass


# A websocket server side, for what the fenceview server never does: send
# fragmented messages, ping, close with a code, break the protocol.

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class WSConn:
    """The server side of one websocket connection (frames unmasked)."""

    def __init__(self, sock: socket.socket, rest: bytes) -> None:
        self.sock = sock
        self.buf = bytearray(rest)

    def _need(self, n: int) -> None:
        while len(self.buf) < n:
            d = self.sock.recv(65536)
            if not d:
                raise EOFError
            self.buf += d

    def read_frame(self) -> Tuple[bool, int, bytes]:
        self._need(2)
        b0, b1 = self.buf[0], self.buf[1]
        n, head = b1 & 0x7F, 2
        if n == 126:
            self._need(4)
            n, head = struct.unpack_from("!H", self.buf, 2)[0], 4
        elif n == 127:
            self._need(10)
            n, head = struct.unpack_from("!Q", self.buf, 2)[0], 10
        assert b1 & 0x80, "a client frame that is not masked"
        self._need(head + 4 + n)
        key = bytes(self.buf[head : head + 4])
        data = bytes(b ^ key[i % 4] for i, b in enumerate(self.buf[head + 4 : head + 4 + n]))
        del self.buf[: head + 4 + n]
        return bool(b0 & 0x80), b0 & 0x0F, data

    def read_message(self) -> Tuple[int, bytes]:
        """The next data message; pings are answered, control frames noted in self.control."""
        parts: List[bytes] = []
        op = 0
        while True:
            fin, opcode, data = self.read_frame()
            if opcode >= 8:
                self.control.append((opcode, data))
                if opcode == 0x9:
                    self.send_raw(bytes([0x8A, len(data)]) + data)
                if opcode == 0x8:
                    return 0x8, data
                continue
            if opcode:
                op = opcode
            parts.append(data)
            if fin:
                return op, b"".join(parts)

    control: List[Tuple[int, bytes]]

    def send_raw(self, b: bytes) -> None:
        self.sock.sendall(b)

    def send_frame(self, opcode: int, data: bytes, fin: bool = True, rsv: int = 0) -> None:
        n = len(data)
        head = bytes([(0x80 if fin else 0) | rsv | opcode])
        if n < 126:
            head += bytes([n])
        elif n < 65536:
            head += bytes([126]) + struct.pack("!H", n)
        else:
            head += bytes([127]) + struct.pack("!Q", n)
        self.sock.sendall(head + data)


def answer_calls(conn: WSConn, answer: Callable[[Dict[str, Any]], Dict[str, Any]]) -> None:
    """Answers each call of each message on conn, as the RPC stream does,
    with answer(call), until the client closes."""
    while True:
        op, msg = conn.read_message()
        if op == 0x8:
            return
        for ln in msg.split(b"\n"):
            conn.send_frame(0x1, json.dumps(answer(json.loads(ln))).encode())


class WSServer(_Background):
    """A websocket server on 127.0.0.1:0; handle(conn, path, headers) runs
    per connection in its own thread. refuse, when set, answers the upgrade
    with that (status, body) instead."""

    def __init__(self, handle: Callable[[WSConn, str, Dict[str, str]], None], refuse: Optional[Tuple[int, bytes]] = None) -> None:
        self.handle = handle
        self.refuse = refuse
        outer = self

        class H(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                sock: socket.socket = self.request
                buf = b""
                while b"\r\n\r\n" not in buf:
                    d = sock.recv(4096)
                    if not d:
                        return
                    buf += d
                head, rest = buf.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                hdrs = {}
                for ln in lines[1:]:
                    k, _, v = ln.partition(":")
                    hdrs[k.strip().lower()] = v.strip()
                if outer.refuse is not None:
                    status, body = outer.refuse
                    sock.sendall(f"HTTP/1.1 {status} No\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
                    return
                acc = base64.b64encode(hashlib.sha1(hdrs["sec-websocket-key"].encode() + _GUID).digest()).decode()
                sock.sendall(f"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {acc}\r\n\r\n".encode())
                conn = WSConn(sock, rest)
                conn.control = []
                try:
                    outer.handle(conn, path, hdrs)
                except (EOFError, OSError):
                    pass

        self._serve(socketserver.ThreadingTCPServer(("127.0.0.1", 0), H))
