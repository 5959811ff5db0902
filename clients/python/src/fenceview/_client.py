"""The client: fenceview's RPC stream by default, its JSON API as fallback."""

import http.client
import json
import logging
import os
import random
import socket
import ssl
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import quote, urlencode, urlsplit

from ._errors import (
    FENCE_REASONS,
    FenceviewError,
    InvalidRequestError,
    UnreachableError,
    error_for,
)
from ._rpc import RPCSession, term_ended
from ._ws import HandshakeError, WebSocket

if TYPE_CHECKING:  # pragma: no cover
    from ._events import EventStream
    from ._locks import Lock, MultiLock
    from ._primitives import Election, Semaphore
    from ._sql import FencedMarks, FencedTable
    from ._verify import Verifier

__all__ = ["Client", "Decision", "LockState", "validate_resource", "validate_holder", "validate_token"]

log = logging.getLogger("fenceview")

MAX_TOKEN = (1 << 63) - 1
#: The largest answer body read (decisions, long pages).
MAX_BODY = 8 << 20
#: Sends of one call the server sheds, at most.
MAX_ATTEMPTS = 8
#: The backoff of a shed call whose answer said not when to come back.
RETRY_BASE, RETRY_CAP = 0.05, 2.0
#: One server-side wait of a blocking acquire: long enough to be cheap,
#: short enough for proxies that cut idle requests.
WAIT_CHUNK = 60.0
#: How long a client that could not open the RPC stream uses the JSON API
#: before it tries the stream again.
RPC_RETRY = 30.0


class _Waiting:
    """The server-side waits of a call sent again, a chunk at a time, until
    timeout seconds have passed (None: until it succeeds)."""

    def __init__(self, c: "Client", timeout: Optional[float]) -> None:
        self._c = c
        self._until = None if timeout is None else c._monotonic() + timeout

    def left(self) -> float:
        """The next send's wait: a chunk, or what is left of the timeout."""
        if self._until is None:
            return WAIT_CHUNK
        return max(0.0, min(WAIT_CHUNK, self._until - self._c._monotonic()))

    def over(self) -> bool:
        """Whether the timeout has passed."""
        return self._until is not None and self._c._monotonic() >= self._until


def _acquire_timeout(blocking: bool, timeout: Optional[float], wait: Optional[float]) -> Optional[float]:
    """An acquire's timeout in threading.Lock's terms: blocking=False asks
    once; timeout None or negative is the object's wait (None: no end)."""
    if not blocking:
        return 0.0
    if timeout is None or timeout < 0:
        return wait
    return timeout


def validate_resource(name: str, what: str = "resource id") -> str:
    """name, when it is a valid resource id (1..160 bytes of UTF-8, no
    control characters); else InvalidRequestError."""
    return _ident(name, what, 160)


def validate_holder(name: str, what: str = "holder") -> str:
    """name, when it is a valid holder id (1..80 bytes, same rules)."""
    return _ident(name, what, 80)


def _ident(name: Any, what: str, limit: int) -> str:
    if not isinstance(name, str):
        raise InvalidRequestError(f"fenceview: {what} must be a str, not {type(name).__name__}", field=what)
    n = len(name.encode("utf-8", "surrogatepass"))
    if not 1 <= n <= limit:
        raise InvalidRequestError(f"fenceview: {what} {name[:40]!r} must be 1..{limit} bytes of UTF-8, not {n}", field=what)
    if any(ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 or 0xD800 <= ord(ch) < 0xE000 for ch in name):
        raise InvalidRequestError(f"fenceview: {what} {name[:40]!r} has a control character or is not UTF-8", field=what)
    return name


def validate_token(token: Any) -> int:
    """token, when it is a fencing token (an int in 1..2^63-1); else
    InvalidRequestError (code invalid-token)."""
    from ._errors import InvalidTokenError

    if isinstance(token, bool) or not isinstance(token, int) or not 1 <= token <= MAX_TOKEN:
        raise InvalidTokenError(f"fenceview: a fencing token is an int in 1..2^63-1, not {token!r}", field="token")
    return token


def _ms(seconds: Optional[float], what: str, lo: int = 1, hi: int = 24 * 3600 * 1000) -> int:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise InvalidRequestError(f"fenceview: {what} is a number of seconds, not {seconds!r}", field=what)
    ms = int(round(seconds * 1000))
    if not lo <= ms <= hi or seconds != seconds:
        raise InvalidRequestError(f"fenceview: {what} {seconds!r}s is out of bounds ({lo / 1000:g}..{hi / 1000:g}s)", field=what)
    return ms


def default_holder() -> str:
    """A holder id naming this process: host, pid and a random part."""
    return f"{socket.gethostname()[:40]}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class Decision:
    """A guard's or the server's fence's answer. A refusal is a Decision,
    not an exception: ``accepted`` is False and ``reason`` says why
    (``stale-token``, ``superseded``, ``bad-signature``, ``shared-token``,
    ...); ``required`` is the token to beat (the high-water mark)."""

    accepted: bool
    presented: int
    required: int = 0
    reason: Optional[str] = None
    #: The server fence's ``<resource>:<token>`` key for idempotent side effects.
    idempotency_key: Optional[str] = None

    def raise_for_refusal(self, what: str = "") -> "Decision":
        """Raise the refusal's error (StaleTokenError, ...) unless accepted;
        return self when accepted."""
        if self.accepted:
            return self
        body = {"code": self.reason, "reason": self.reason, "presented": self.presented, "required": self.required,
                "accepted": False, "error": f"token {self.presented} refused: {self.reason}, required {self.required}"}
        raise error_for(409, body, what)


@dataclass(frozen=True)
class LockState:
    """GET /v1/locks/{resource}: whether the lock is held, by whom, and the
    last token issued (0 if none)."""

    resource_id: str
    locked: bool
    holder: Optional[str]
    hold_count: int
    token: int
    expires_at: Optional[str]
    remaining_ms: int
    available_at: Optional[str] = None
    #: Acquires waiting for the lock on the server.
    waiters: int = 0
    shared: bool = False
    #: The holds of a shared lock: [{"holder","holdCount","expiresAt","remainingMs"}].
    holders: List[Dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(cls, b: Mapping[str, Any]) -> "LockState":
        return cls(
            resource_id=b.get("resourceId", ""), locked=bool(b.get("locked")), holder=b.get("holder"),
            hold_count=int(b.get("holdCount") or 0), token=int(b.get("token") or 0), expires_at=b.get("expiresAt"),
            remaining_ms=int(b.get("remainingMs") or 0), available_at=b.get("availableAt"), waiters=int(b.get("waiters") or 0),
            shared=bool(b.get("shared")), holders=list(b.get("holders") or []),
        )


# The operations the client makes: the RPC stream's op, the JSON API's
# method and route, whether the stream names it by "name" (the primitives)
# or "resource" (a lock), and whether sending it twice does what sending it
# once does (then it may be sent again after a 503 with Retry-After).
@dataclass(frozen=True)
class _Op:
    rpc: str
    method: str
    route: str  # with {} for the quoted name
    named: bool = False
    idempotent: bool = False


OPS = {
    "acquire": _Op("acquire", "POST", "/v1/locks/{}/acquire"),
    "renew": _Op("renew", "POST", "/v1/locks/{}/renew", idempotent=True),
    "release": _Op("release", "POST", "/v1/locks/{}/release"),
    "fence": _Op("fence", "POST", "/v1/fence/{}", idempotent=True),
    "lock": _Op("lock", "GET", "/v1/locks/{}", idempotent=True),
    "semaphore-acquire": _Op("semaphore-acquire", "POST", "/v1/semaphores/{}/acquire", named=True),
    "semaphore-release": _Op("semaphore-release", "POST", "/v1/semaphores/{}/release", named=True),
    "semaphore": _Op("semaphore", "GET", "/v1/semaphores/{}", named=True, idempotent=True),
    "acquire-all": _Op("acquire-all", "POST", "/v1/locks/acquire-all", named=True),
    "release-all": _Op("release-all", "POST", "/v1/locks/release-all", named=True),
    "campaign": _Op("campaign", "POST", "/v1/elections/{}/campaign", named=True),
    "proclaim": _Op("proclaim", "POST", "/v1/elections/{}/proclaim", named=True, idempotent=True),
    "resign": _Op("resign", "POST", "/v1/elections/{}/resign", named=True),
    "election-renew": _Op("election-renew", "POST", "/v1/elections/{}/renew", named=True, idempotent=True),
    "election": _Op("election", "GET", "/v1/elections/{}", named=True, idempotent=True),
}


class _HTTP:
    """Keep-alive HTTP/1.1 connections to one server, reused across calls
    and threads (http.client's, one request at a time each)."""

    def __init__(self, scheme: str, host: str, port: int, tls: Optional[ssl.SSLContext]) -> None:
        self._scheme, self._host, self._port, self._tls = scheme, host, port, tls
        self._idle: List[http.client.HTTPConnection] = []
        self._mu = threading.Lock()
        self._closed = False

    def _conn(self, timeout: Optional[float]) -> Tuple[http.client.HTTPConnection, bool]:
        with self._mu:
            if self._idle:
                c = self._idle.pop()
                c.timeout = timeout
                if c.sock is not None:
                    c.sock.settimeout(timeout)
                return c, True
        if self._scheme == "https":
            ctx = self._tls or ssl.create_default_context()
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout, context=ctx), False
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout), False

    def request(self, method: str, path: str, body: Optional[bytes], headers: Dict[str, str], timeout: Optional[float]) -> Tuple[int, Dict[str, str], bytes]:
        for attempt in range(2):
            c, reused = self._conn(timeout)
            if c.sock is None:
                try:
                    c.connect()
                except OSError as e:
                    c.close()
                    err = UnreachableError(f"fenceview: {self._scheme}://{self._host}:{self._port}: {e}")
                    err.unsent = True  # nothing was sent: another node may take it
                    raise err from e
            try:
                c.request(method, path, body=body, headers=headers)
                res = c.getresponse()
                data = res.read(MAX_BODY + 1)
                if len(data) > MAX_BODY:
                    c.close()
                    raise UnreachableError(f"fenceview: {method} {path}: an answer over {MAX_BODY} bytes")
                hdrs = {k.lower(): v for k, v in res.getheaders()}
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as e:
                c.close()
                # A kept-alive connection the server had closed: the request
                # was not read, so it is sent once more on a new connection.
                if reused and attempt == 0:
                    continue
                raise UnreachableError(f"fenceview: {method} {path}: {e}") from e
            except (OSError, http.client.HTTPException) as e:
                c.close()
                raise UnreachableError(f"fenceview: {method} {path}: {e}") from e
            if res.will_close:
                c.close()
            else:
                with self._mu:
                    if self._closed:
                        c.close()
                    else:
                        self._idle.append(c)
            return res.status, hdrs, data
        raise AssertionError("unreachable")

    def close(self) -> None:
        with self._mu:
            self._closed = True
            idle, self._idle = self._idle, []
        for c in idle:
            c.close()


class _Node:
    """One server (a node of a cluster): its base URL and connections."""

    def __init__(self, url: str, tls: Optional[ssl.SSLContext]) -> None:
        u = urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise InvalidRequestError(f"fenceview: {url!r} is not an http(s) URL", field="url")
        self.url = url.rstrip("/")
        self.prefix = u.path.rstrip("/")
        self.http = _HTTP(u.scheme, u.hostname, u.port or (443 if u.scheme == "https" else 80), tls)

    def ws_url(self, path: str) -> str:
        u = urlsplit(self.url)
        return ("wss" if u.scheme == "https" else "ws") + "://" + u.netloc + self.prefix + path


def _parse(data: bytes) -> Any:
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return {"error": data[:200].decode("utf-8", "replace")}


def _retry_after(headers: Mapping[str, str]) -> Optional[float]:
    v = headers.get("retry-after", "").strip()
    return float(v) if v.isdigit() and len(v) <= 6 else None


class Client:
    """A client of one fenceview server.

    Args:
        url: the server's base URL, ``http://`` or ``https://``.
        key: an API key's secret or the admin token (``Authorization: Bearer``).
        rpc: carry locks, fences, semaphores, multi-locks and elections over
            the RPC stream (one websocket); when it cannot be opened the
            client uses the JSON API instead (logged once) and tries the
            stream again later. ``rpc=False`` uses the JSON API only.
        tls: the ``ssl.SSLContext`` for ``https://`` (a private CA, client
            certificates); default the system's trust store.
        timeout: seconds each call may take (a waiting acquire's wait comes
            on top), retries after ``Retry-After`` included.
        lease: the default lease of locks, in seconds.
        urls: the other nodes of a cluster, tried in turn when one cannot be
            reached or has no leader (503); the stream reopens at the next.

    The client is safe to use from many threads. ``close()`` (or ``with``)
    ends its connections; locks still held then are not released.
    """

    def __init__(
        self,
        url: str,
        key: Optional[str] = None,
        *,
        rpc: bool = True,
        tls: Optional[ssl.SSLContext] = None,
        timeout: float = 10.0,
        lease: float = 30.0,
        urls: Sequence[str] = (),
    ) -> None:
        if key is not None and (not isinstance(key, str) or not key or any(ch in key for ch in "\r\n")):
            raise InvalidRequestError("fenceview: key must be a non-empty str on one line", field="key")
        self._nodes = [_Node(u, tls) for u in [url, *urls]]
        self._current = 0  # the node that answered last
        self._key = key
        self._tls = tls
        self._rpc = rpc
        self.timeout = float(timeout)
        self.lease = float(lease)
        _ms(self.lease, "lease")
        self._mu = threading.Lock()
        self._session: Optional[RPCSession] = None
        self._rpc_retry_at = 0.0
        self._fell_back_logged = False
        self._closed = threading.Event()
        #: The size of the fragments of RPC messages sent; None sends each
        #: message as one frame. Tests set it to exercise the server's
        #: reassembly.
        self.rpc_fragment: Optional[int] = None
        self._random = random.Random()
        # When, by time.monotonic, and how long a shed call waits: tests
        # replace them to see the waits without taking them.
        self._monotonic: Callable[[], float] = time.monotonic
        self._sleep: Callable[[float], bool] = self._closed.wait

    # Transport.

    @property
    def url(self) -> str:
        """The base URL of the node the client uses now."""
        return self._nodes[self._current].url

    @property
    def _prefix(self) -> str:
        return self._nodes[self._current].prefix

    def _request(self, method: str, path: str, data: Optional[bytes], timeout: float) -> Tuple[int, Dict[str, str], bytes]:
        """One HTTP request, to the current node, else to the others in
        turn when it cannot be reached (nothing sent) or has no leader."""
        n = len(self._nodes)
        start = self._current
        for i in range(n):
            idx = (start + i) % n
            node = self._nodes[idx]
            try:
                status, hdrs, raw = node.http.request(method, node.prefix + path, data, self._headers(data is not None), timeout)
            except UnreachableError as e:
                if not getattr(e, "unsent", False) or i + 1 == n:
                    raise
                continue
            if status == 503 and i + 1 < n:
                continue  # no leader there (nothing was done): the next node
            self._current = idx
            return status, hdrs, raw
        raise AssertionError("unreachable")

    @property
    def uses_rpc(self) -> bool:
        """Whether calls go over the RPC stream now (opening it if needed):
        False when it is off or could not be opened lately."""
        return self._rpc and self._stream() is not None

    def _headers(self, json_body: bool) -> Dict[str, str]:
        h = {"Accept": "application/json", "User-Agent": "fenceview-python/0.1"}
        if json_body:
            h["Content-Type"] = "application/json"
        if self._key is not None:
            h["Authorization"] = f"Bearer {self._key}"
        return h

    def _stream(self) -> Optional[RPCSession]:
        """The live RPC session, opened if needed; None while the client uses
        the JSON API because the stream could not be opened lately."""
        if self._closed.is_set():
            raise UnreachableError("fenceview: the client is closed")
        with self._mu:
            if self._session is not None and self._session.alive:
                return self._session
            if self._monotonic() < self._rpc_retry_at:
                return None
            if self._session is not None:
                # A broken stream is reopened at the next node, if any.
                self._current = (self._current + 1) % len(self._nodes)
                self._session = None
            hdrs = {"Authorization": f"Bearer {self._key}"} if self._key is not None else {}
            try:
                ws = self._open_ws("/v1/rpc", hdrs)
            except HandshakeError as e:
                body = _parse(e.body)
                # No key, or a revoked one, is refused by the JSON API too:
                # raised, not fallen back from. (A 403 is not: a viewer key
                # may not open the stream but may read over the JSON API.)
                if e.status == 401 and isinstance(body, dict) and body.get("code"):
                    raise error_for(e.status, body, "rpc stream") from e
                self._fall_back(e)
                return None
            except ConnectionError as e:
                # Nothing listens there: the JSON API would not be reached
                # either, so this is the call's error, not a fallback.
                raise UnreachableError(f"fenceview: {self.url}: {e}") from e
            except (OSError, ValueError) as e:  # a proxy or server that does not upgrade, TLS, a timeout
                self._fall_back(e)
                return None
            self._session = RPCSession(ws, self.rpc_fragment)
            self._rpc_retry_at = 0.0
            return self._session

    def _open_ws(self, path: str, hdrs: Dict[str, str]) -> WebSocket:
        """A websocket to path at the current node, else at the others in
        turn while nothing listens; the node that answered becomes current."""
        n = len(self._nodes)
        start = self._current
        for i in range(n):
            idx = (start + i) % n
            try:
                ws = WebSocket.connect(self._nodes[idx].ws_url(path), hdrs, self._tls, timeout=self.timeout)
            except ConnectionError:
                if i + 1 == n:
                    raise
                continue
            self._current = idx
            return ws
        raise AssertionError("unreachable")

    def _fall_back(self, why: BaseException) -> None:
        self._rpc_retry_at = self._monotonic() + RPC_RETRY
        if not self._fell_back_logged:
            self._fell_back_logged = True
            log.warning("fenceview: the RPC stream to %s could not be opened (%s): using the JSON API", self.url, why)

    def _once(self, op: _Op, name: str, fields: Dict[str, Any], timeout: float) -> Tuple[int, Any, Dict[str, str]]:
        if self._rpc:
            for attempt in range(2):
                s = self._stream()
                if s is None:
                    break
                req: Dict[str, Any] = {"op": op.rpc}
                if name:
                    req["name" if op.named else "resource"] = name
                req.update(fields)
                status, body = s.call(req, timeout)
                if attempt == 0 and term_ended(status, body):
                    # Refused without being done by a server that stopped
                    # serving that connection, or left unanswered when it
                    # closed the connection for its service's end: once
                    # more, on a new one.
                    continue
                return status, body, {}
        if self._closed.is_set():
            raise UnreachableError("fenceview: the client is closed")
        data = None if op.method == "GET" else json.dumps(fields, separators=(",", ":")).encode("utf-8")
        status, hdrs, raw = self._request(op.method, op.route.format(quote(name, safe="")), data, timeout)
        return status, _parse(raw), hdrs

    def _call(
        self,
        op_name: str,
        name: str,
        fields: Dict[str, Any],
        *,
        timeout: Optional[float] = None,
        wait: float = 0.0,
        what: str = "",
        conflict: Optional[str] = None,
        ok: Iterable[int] = (200, 201),
        refusals: Iterable[int] = (),
    ) -> Tuple[int, Any]:
        """Make one call, sent again while the server sheds it: after a 429
        overloaded, which changed nothing, and, when the op is idempotent,
        after a 503 (no leader). The wait is the server's Retry-After, else
        an exponential backoff, plus jitter; a wait that would pass the
        call's deadline (timeout, plus the server-side wait) ends the
        retries with the server's answer. A status in refusals is returned,
        not raised."""
        op = OPS[op_name]
        budget = (self.timeout if timeout is None else timeout) + wait
        deadline = self._monotonic() + budget
        for attempt in range(MAX_ATTEMPTS):
            left = max(0.001, deadline - self._monotonic())
            status, body, hdrs = self._once(op, name, fields, left)
            if status in ok or status in refusals:
                return status, body
            err = error_for(status, body, what or name, _retry_after(hdrs), conflict)
            shed = status == 429 and err.code == "overloaded"
            if status == 503 and op.idempotent and (err.retry_after is not None or err.code == "unavailable"):
                shed = True
            if not shed or attempt + 1 >= MAX_ATTEMPTS:
                raise err
            pause = err.retry_after if err.retry_after is not None else min(RETRY_BASE * 2**attempt, RETRY_CAP)
            pause += self._random.uniform(0, pause / 2)
            if self._monotonic() + pause > deadline:
                raise err
            if self._sleep(pause):  # the client closed meanwhile
                raise err
        raise AssertionError("unreachable")

    def _plain(self, method: str, path: str, body: Any = None, timeout: Optional[float] = None, ok: Iterable[int] = (200,)) -> Any:
        """A JSON API call that is not on the RPC stream (admin, history)."""
        if self._closed.is_set():
            raise UnreachableError("fenceview: the client is closed")
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode("utf-8")
        status, hdrs, raw = self._request(method, path, data, self.timeout if timeout is None else timeout)
        parsed = _parse(raw)
        if status not in ok:
            raise error_for(status, parsed, path, _retry_after(hdrs))
        return parsed

    # Locks.

    def lock(
        self,
        name: str,
        holder: Optional[str] = None,
        lease: Optional[float] = None,
        wait: Optional[float] = None,
        *,
        lock_delay: float = 0.0,
        renew: bool = True,
    ) -> "Lock":
        """An exclusive fenced lock on the resource name for holder (default:
        a new id naming this process), in threading.Lock's shape. lease is in
        seconds (default the client's); wait is how long ``with lock:`` and
        ``acquire()`` wait (None: until granted). lock_delay (seconds, at most
        60): should the lease run out without a release, nobody may take the
        lock until that long after. renew=False holds for exactly one lease
        (``lost`` is set when it runs out) instead of renewing it."""
        from ._locks import Lock

        return Lock(self, name, holder, self.lease if lease is None else lease, wait, shared=False, lock_delay=lock_delay, renew=renew)

    def read_lock(
        self, name: str, holder: Optional[str] = None, lease: Optional[float] = None, wait: Optional[float] = None, *, renew: bool = True
    ) -> "Lock":
        """A shared (read) lock on name: readers hold it together, each with
        its own lease, and all readers of one phase present the same token;
        a writer (``lock(name)``) waits for them, and readers that come after
        a waiting writer wait for it. Fence reads with ``access="read"``."""
        from ._locks import Lock

        return Lock(self, name, holder, self.lease if lease is None else lease, wait, shared=True, renew=renew)

    def lock_all(self, names: Sequence[str], holder: Optional[str] = None, lease: Optional[float] = None, wait: Optional[float] = None) -> "MultiLock":
        """A multi-lock: every lock of names granted to holder at once, or
        none (waiting holds nothing, so two multi-locks never deadlock)."""
        from ._locks import MultiLock

        return MultiLock(self, list(names), holder, self.lease if lease is None else lease, wait)

    def semaphore(self, name: str, permits: int, holder: Optional[str] = None, lease: Optional[float] = None, wait: Optional[float] = None) -> "Semaphore":
        """A semaphore of permits fenced slots (name#0 .. name#<permits-1>),
        in threading.Semaphore's shape: each permit is a slot's lock with its
        own token."""
        from ._primitives import Semaphore

        return Semaphore(self, name, permits, holder, self.lease if lease is None else lease, wait)

    def election(self, name: str, candidate: Optional[str] = None, lease: Optional[float] = None) -> "Election":
        """The election name for candidate: the leader holds the lock name,
        and the term is its token."""
        from ._primitives import Election

        return Election(self, name, candidate, self.lease if lease is None else lease)

    def lock_state(self, name: str, timeout: Optional[float] = None) -> LockState:
        """GET /v1/locks/{name}: holder, hold count, last token issued."""
        validate_resource(name)
        _, b = self._call("lock", name, {}, timeout=timeout)
        return LockState.of(b)

    def fence(
        self,
        name: str,
        token: int,
        signature: Optional[str] = None,
        access: str = "write",
        *,
        mode: Optional[str] = None,
        source: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> Decision:
        """Present token to the server's own guard for name: accepted when
        token >= the mark (and the mark rises to it). A refusal is a Decision
        (``accepted`` False, ``reason``, ``required``); errors (bad input, no
        server) raise. access is ``"write"`` or ``"read"`` (a shared lock's
        reads); mode ``"current"`` refuses every token below the last one
        issued (``superseded``)."""
        validate_resource(name)
        validate_token(token)
        if access not in ("write", "read"):
            raise InvalidRequestError(f"fenceview: access is 'write' or 'read', not {access!r}", field="access")
        fields: Dict[str, Any] = {"token": token}
        if signature is not None:
            fields["signature"] = signature
        if access == "read":
            fields["access"] = "read"
        if mode is not None:
            fields["mode"] = mode
        if source is not None:
            fields["source"] = source
        status, b = self._call("fence", name, fields, timeout=timeout, refusals=(409,))
        b = b if isinstance(b, dict) else {}
        if status == 409:
            reason = b.get("reason") or b.get("code")
            if reason not in FENCE_REASONS:
                raise error_for(409, b, name)
            return Decision(False, int(b.get("presented") or token), int(b.get("required") or 0), reason, b.get("idempotencyKey"))
        if b.get("accepted") is not True:
            raise FenceviewError(f"fenceview: {name}: a fence answer of {status} that is not an acceptance", status, b, "internal")
        return Decision(True, token, int(b.get("required") or 0), None, b.get("idempotencyKey"))

    # Guards built from this client: they verify signatures with its keys.

    def verifier(self, **opts: Any) -> "Verifier":
        """A Verifier of this server's signing keys, fetched now (needs
        ``cryptography``)."""
        from ._verify import Verifier

        v = Verifier(self, **opts)
        v.refresh()
        return v

    def fenced_table(self, conn: Any, table: str, key: str, **opts: Any) -> "FencedTable":
        """A DB-API guard of table's rows (see FencedTable) that verifies
        tokens with this server's keys, unless ``accept_unsigned_tokens=True``."""
        from ._sql import FencedTable

        return FencedTable(conn, table, key, client=self, **opts)

    def fenced_marks(self, conn: Any, table: str = "fence_marks", **opts: Any) -> "FencedMarks":
        """A DB-API table of high-water marks by resource id (see FencedMarks)
        that verifies tokens with this server's keys, unless
        ``accept_unsigned_tokens=True``."""
        from ._sql import FencedMarks

        return FencedMarks(conn, table, client=self, **opts)

    # The rest of the API: events, keys, history, admin.

    def events(self, resource: Optional[str] = None, since: Optional[int] = None) -> "EventStream":
        """The event stream (GET /v1/events): an iterator of every event
        committed from now on (of resource only, when given), after the
        stored ones past seq since. Close it (or use ``with``) when done."""
        from ._events import EventStream

        if resource is not None:
            validate_resource(resource)
        return EventStream(self, resource, since)


    def signing_keys(self) -> Dict[str, Any]:
        """GET /v1/signing-keys: ``{"issuer", "keys": [{"keyId","alg","publicKey","active",...}]}``."""
        return self._plain("GET", "/v1/signing-keys")

    def resource(self, name: str) -> Optional[Dict[str, Any]]:
        """GET /v1/resources/{name} (highWaterMark, lastToken, ...), None
        when the server never saw it."""
        try:
            return self._plain("GET", "/v1/resources/" + quote(validate_resource(name), safe=""))
        except FenceviewError as e:
            if e.code == "not-found":
                return None
            raise

    def rejections(self, **query: Any) -> Dict[str, Any]:
        """One page of refused writes, newest first: GET /v1/rejections with
        query (resource=, reason=, limit=, cursor=)."""
        q = urlencode({k: v for k, v in query.items() if v is not None})
        return self._plain("GET", "/v1/rejections" + (f"?{q}" if q else ""))

    def report(self, decisions: Sequence[Mapping[str, Any]]) -> int:
        """Record decisions made by guards elsewhere (POST /v1/decisions);
        returns how many were recorded."""
        if not decisions:
            return 0
        return int(self._plain("POST", "/v1/decisions", {"decisions": list(decisions)}).get("recorded", 0))

    def force_expire(self, name: str) -> None:
        """Free the lock whatever its state (admin)."""
        self._plain("POST", f"/v1/locks/{quote(validate_resource(name), safe='')}/expire")

    def reset(self, name: str, floor: int) -> Dict[str, Any]:
        """Raise name's token counter to at least floor (admin): the next
        grant takes floor+1."""
        return self._plain("POST", f"/v1/locks/{quote(validate_resource(name), safe='')}/reset", {"floor": floor})

    def create_key(self, name: str, role: str, resources: Optional[Sequence[str]] = None) -> Dict[str, Any]:
        """Make an API key (admin): the answer's ``secret`` is shown only here."""
        body: Dict[str, Any] = {"name": name, "role": role}
        if resources is not None:
            body["resources"] = list(resources)
        return self._plain("POST", "/v1/auth/keys", body, ok=(201,))

    def revoke_key(self, key_id: str) -> None:
        """Remove an API key (admin); it stops working at once."""
        self._plain("DELETE", "/v1/auth/keys/" + quote(key_id, safe=""))

    def close(self) -> None:
        """End the RPC stream and the HTTP connections. Locks still held are
        not released (their leases run out)."""
        self._closed.set()
        with self._mu:
            s, self._session = self._session, None
        if s is not None:
            s.close()
        for node in self._nodes:
            node.http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
