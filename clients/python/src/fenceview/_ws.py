"""A websocket client (RFC 6455) on the standard library: the opening
handshake, masked frames, fragmentation both ways, ping/pong and the closing
handshake. No extensions and no subprotocols are negotiated, so a frame with
a reserved bit set is a protocol error.

One thread may read (:meth:`WebSocket.recv`) while others send: data
messages are written whole under one lock, frames under another, so the
reader's pongs may go between the fragments of a message (which RFC 6455
allows) but two messages never interleave.
"""

import base64
import hashlib
import os
import socket
import ssl
import struct
import threading
from typing import Callable, Dict, List, Mapping, Optional, Tuple
from urllib.parse import urlsplit

__all__ = ["WebSocket", "HandshakeError", "WebSocketClosed", "ProtocolError"]

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA

#: The most bytes of response head read during the handshake.
MAX_HEAD = 16 << 10
#: The most bytes of a refused handshake's body read.
MAX_REFUSAL_BODY = 64 << 10


class HandshakeError(OSError):
    """The server answered the upgrade with something other than 101 (or an
    invalid 101): ``status``, ``headers`` (lowercase names) and ``body``."""

    def __init__(self, message: str, status: int = 0, headers: Optional[Dict[str, str]] = None, body: bytes = b"") -> None:
        super().__init__(message)
        self.status = status
        self.headers = headers or {}
        self.body = body


class WebSocketClosed(OSError):
    """The connection is closed: ``code`` and ``reason`` of the close frame
    (1006 when the connection ended without one)."""

    def __init__(self, code: int = 1006, reason: str = "") -> None:
        super().__init__(f"websocket closed ({code}{': ' + reason if reason else ''})")
        self.code = code
        self.reason = reason


class ProtocolError(WebSocketClosed):
    """The peer broke the protocol; the connection was closed with ``code``
    (1002 protocol error, 1007 invalid UTF-8, 1009 too big)."""


def mask(key: bytes, data: bytes) -> bytes:
    """XOR data with the 4-byte key repeated (RFC 6455 §5.3), as one big
    integer operation: far faster in Python than a loop over bytes."""
    n = len(data)
    if n == 0:
        return b""
    k = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(data, "little") ^ int.from_bytes(k, "little")).to_bytes(n, "little")


def frame(opcode: int, payload: bytes, fin: bool = True, key: Optional[bytes] = None) -> bytes:
    """One frame; masked with key when given (a client's frames must be)."""
    n = len(payload)
    head = bytearray([(0x80 if fin else 0) | opcode])
    mbit = 0x80 if key is not None else 0
    if n < 126:
        head.append(mbit | n)
    elif n < 1 << 16:
        head.append(mbit | 126)
        head += struct.pack("!H", n)
    else:
        head.append(mbit | 127)
        head += struct.pack("!Q", n)
    if key is None:
        return bytes(head) + payload
    return bytes(head) + key + mask(key, payload)


def accept_key(key: str) -> str:
    """Sec-WebSocket-Accept for the request's Sec-WebSocket-Key."""
    return base64.b64encode(hashlib.sha1(key.encode("ascii") + _GUID).digest()).decode("ascii")


class WebSocket:
    """One client connection. Make it with :meth:`connect`."""

    def __init__(
        self,
        sock: socket.socket,
        buffered: bytes = b"",
        max_message: int = 16 << 20,
        random: Callable[[int], bytes] = os.urandom,
    ) -> None:
        self._sock = sock
        self._buf = bytearray(buffered)
        self._max = max_message
        self._random = random
        self._msg_lock = threading.Lock()  # one data message at a time
        self._wlock = threading.Lock()  # one frame at a time
        self._close_sent = False
        self._closed: Optional[WebSocketClosed] = None
        self._parts: Optional[List[bytes]] = None
        self._kind = 0
        self._size = 0
        #: Pings answered and pongs received (for tests and metrics).
        self.pings = 0
        self.pongs = 0

    @classmethod
    def connect(
        cls,
        url: str,
        headers: Optional[Mapping[str, str]] = None,
        ssl_context: Optional[ssl.SSLContext] = None,
        timeout: Optional[float] = 10.0,
        max_message: int = 16 << 20,
        random: Callable[[int], bytes] = os.urandom,
    ) -> "WebSocket":
        """Open url (ws:// or wss://, or http(s):// of the same place) and
        complete the opening handshake within timeout seconds. A refusal
        (any status but 101) is a :class:`HandshakeError` carrying the
        answer; a failure to connect is the socket's OSError."""
        u = urlsplit(url)
        secure = u.scheme in ("wss", "https")
        if u.scheme not in ("ws", "wss", "http", "https") or not u.hostname:
            raise ValueError(f"not a websocket URL: {url!r}")
        port = u.port or (443 if secure else 80)
        sock = socket.create_connection((u.hostname, port), timeout=timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if secure:
                ctx = ssl_context or ssl.create_default_context()
                sock = ctx.wrap_socket(sock, server_hostname=u.hostname)
            key = base64.b64encode(os.urandom(16)).decode("ascii")
            host = u.hostname if ":" not in u.hostname else f"[{u.hostname}]"
            if u.port is not None:
                host += f":{u.port}"
            target = (u.path or "/") + (f"?{u.query}" if u.query else "")
            lines = [
                f"GET {target} HTTP/1.1",
                f"Host: {host}",
                "Upgrade: websocket",
                "Connection: Upgrade",
                f"Sec-WebSocket-Key: {key}",
                "Sec-WebSocket-Version: 13",
            ]
            for k, v in (headers or {}).items():
                if "\r" in k + v or "\n" in k + v:
                    raise ValueError("a header with a line break")
                lines.append(f"{k}: {v}")
            sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
            status, hdrs, rest = _read_head(sock)
            if status != 101:
                body = _read_refusal_body(sock, hdrs, rest)
                raise HandshakeError(f"websocket handshake refused: status {status}", status, hdrs, body)
            if hdrs.get("upgrade", "").lower() != "websocket" or "upgrade" not in hdrs.get("connection", "").lower():
                raise HandshakeError("websocket handshake: the answer does not upgrade to websocket", status, hdrs)
            if hdrs.get("sec-websocket-accept") != accept_key(key):
                raise HandshakeError("websocket handshake: wrong Sec-WebSocket-Accept", status, hdrs)
            if hdrs.get("sec-websocket-extensions") or hdrs.get("sec-websocket-protocol"):
                raise HandshakeError("websocket handshake: the server chose an extension or protocol not asked for", status, hdrs)
        except BaseException:
            sock.close()
            raise
        return cls(sock, bytes(rest), max_message, random)

    # Reading.

    def _fill(self, n: int) -> None:
        """Read until the buffer holds n bytes. A socket timeout leaves what
        was read in the buffer, so the reader may simply call again."""
        while len(self._buf) < n:
            chunk = self._sock.recv(max(65536, n - len(self._buf)))
            if not chunk:
                raise WebSocketClosed(1006, "the connection ended")
            self._buf += chunk

    def _take(self, n: int) -> bytes:
        self._fill(n)
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def _read_frame(self) -> Tuple[bool, int, bytes]:
        # The whole frame is buffered before any of it is consumed, so a
        # timeout in the middle loses nothing.
        self._fill(2)
        b0, b1 = self._buf[0], self._buf[1]
        fin, rsv, opcode = bool(b0 & 0x80), b0 & 0x70, b0 & 0x0F
        n = b1 & 0x7F
        head = 2
        if n == 126:
            self._fill(4)
            n = struct.unpack_from("!H", self._buf, 2)[0]
            head = 4
        elif n == 127:
            self._fill(10)
            n = struct.unpack_from("!Q", self._buf, 2)[0]
            head = 10
        if rsv:
            self._fail(1002, "a reserved bit is set")
        if b1 & 0x80:
            self._fail(1002, "a server frame is masked")
        if opcode >= 0x8:
            if opcode not in (OP_CLOSE, OP_PING, OP_PONG):
                self._fail(1002, f"unknown control opcode {opcode}")
            if not fin or n > 125:
                self._fail(1002, "a control frame fragmented or over 125 bytes")
        elif opcode not in (OP_CONT, OP_TEXT, OP_BINARY):
            self._fail(1002, f"unknown data opcode {opcode}")
        if n > self._max:
            self._fail(1009, f"a frame of {n} bytes")
        self._fill(head + n)
        payload = bytes(self._buf[head : head + n])
        del self._buf[: head + n]
        return fin, opcode, payload

    def recv(self) -> Tuple[int, bytes]:
        """The next data message, (OP_TEXT or OP_BINARY, payload), its
        fragments joined. Pings are answered and pongs counted on the way.
        A close frame is answered and raises :class:`WebSocketClosed`; a
        protocol error closes the connection and raises
        :class:`ProtocolError`. A text message is checked to be UTF-8."""
        if self._closed is not None:
            raise self._closed
        # The message being joined lives on self, so a socket timeout
        # between its fragments loses nothing: the caller calls again.
        while True:
            parts, kind, size = self._parts, self._kind, self._size
            fin, opcode, payload = self._read_frame()
            if opcode == OP_PING:
                self.pings += 1
                self._send_frame(OP_PONG, payload)
                continue
            if opcode == OP_PONG:
                self.pongs += 1
                continue
            if opcode == OP_CLOSE:
                self._on_close(payload)
            if opcode == OP_CONT:
                if parts is None:
                    self._fail(1002, "a continuation frame with no message to continue")
            else:
                if parts is not None:
                    self._fail(1002, "a new message before the last one's final fragment")
                parts, kind, size = [], opcode, 0
            assert parts is not None
            size += len(payload)
            if size > self._max:
                self._fail(1009, f"a message over {self._max} bytes")
            parts.append(payload)
            self._parts, self._kind, self._size = parts, kind, size
            if fin:
                self._parts = None
                msg = b"".join(parts)
                if kind == OP_TEXT:
                    try:
                        msg.decode("utf-8")
                    except UnicodeDecodeError:
                        self._fail(1007, "a text message that is not UTF-8")
                return kind, msg

    def _on_close(self, payload: bytes) -> None:
        code, reason = 1005, ""
        if len(payload) == 1:
            self._fail(1002, "a close frame of one byte")
        if len(payload) >= 2:
            code = struct.unpack("!H", payload[:2])[0]
            try:
                reason = payload[2:].decode("utf-8")
            except UnicodeDecodeError:
                self._fail(1007, "a close reason that is not UTF-8")
        try:
            self._send_close(1000 if code == 1005 else code)
        except OSError:
            pass
        self._closed = WebSocketClosed(code, reason)
        self._shut()
        raise self._closed

    def _fail(self, code: int, why: str) -> None:
        try:
            self._send_close(code, why)
        except OSError:
            pass
        self._closed = ProtocolError(code, why)
        self._shut()
        raise self._closed

    # Writing.

    def _send_frame(self, opcode: int, payload: bytes, fin: bool = True) -> None:
        data = frame(opcode, payload, fin, self._random(4))
        with self._wlock:
            self._sock.sendall(data)

    def send(self, data: bytes, text: bool = True, fragment: Optional[int] = None) -> None:
        """Send one message (text by default), in fragments of at most
        fragment bytes when given. Safe to call from several threads."""
        if self._closed is not None or self._close_sent:
            raise self._closed or WebSocketClosed(1000, "closed by this side")
        op = OP_TEXT if text else OP_BINARY
        with self._msg_lock:
            if not fragment or len(data) <= fragment:
                self._send_frame(op, data)
                return
            for i in range(0, len(data), fragment):
                last = i + fragment >= len(data)
                self._send_frame(op if i == 0 else OP_CONT, data[i : i + fragment], last)

    def ping(self, payload: bytes = b"") -> None:
        """Send a ping (at most 125 bytes); its pong is counted in pongs."""
        if len(payload) > 125:
            raise ValueError("a ping of more than 125 bytes")
        self._send_frame(OP_PING, payload)

    def _send_close(self, code: int, reason: str = "") -> None:
        if self._close_sent:
            return
        self._close_sent = True
        self._send_frame(OP_CLOSE, struct.pack("!H", code) + reason.encode("utf-8")[:123])

    def close(self, code: int = 1000, reason: str = "", wait: Optional[float] = None) -> None:
        """Start the closing handshake. With wait (seconds), read until the
        server's close frame comes (or wait runs out) and then close the
        socket; without it, the reader (which gets the server's close
        frame) is expected to call :meth:`abort`."""
        try:
            self._send_close(code, reason)
        except OSError:
            self.abort()
            return
        if wait is None:
            return
        self._sock.settimeout(wait)
        try:
            while True:
                self.recv()
        except (OSError, ValueError):
            pass
        self.abort()

    def _shut(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def abort(self) -> None:
        """Close the socket now."""
        if self._closed is None:
            self._closed = WebSocketClosed(1006, "closed by this side")
        self._shut()
        try:
            self._sock.close()
        except OSError:
            pass

    def settimeout(self, t: Optional[float]) -> None:
        self._sock.settimeout(t)


def _read_head(sock: socket.socket) -> Tuple[int, Dict[str, str], bytes]:
    buf = b""
    while b"\r\n\r\n" not in buf:
        if len(buf) > MAX_HEAD:
            raise HandshakeError("websocket handshake: an answer head over 16 KiB")
        chunk = sock.recv(4096)
        if not chunk:
            raise HandshakeError("websocket handshake: the connection ended before the answer")
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise HandshakeError(f"websocket handshake: not an HTTP answer: {lines[0][:80]!r}")
    hdrs: Dict[str, str] = {}
    for line in lines[1:]:
        k, sep, v = line.partition(":")
        if sep:
            name = k.strip().lower()
            hdrs[name] = (hdrs[name] + ", " if name in hdrs else "") + v.strip()
    return int(parts[1]), hdrs, rest


def _read_refusal_body(sock: socket.socket, hdrs: Mapping[str, str], rest: bytes) -> bytes:
    try:
        want = min(int(hdrs.get("content-length", "0")), MAX_REFUSAL_BODY)
    except ValueError:
        want = 0
    body = rest
    try:
        while len(body) < want:
            chunk = sock.recv(want - len(body))
            if not chunk:
                break
            body += chunk
    except OSError:
        pass
    return body[:want]
