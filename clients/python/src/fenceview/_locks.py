"""Locks in threading.Lock's shape, kept alive by a daemon thread."""

import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from ._client import _acquire_timeout, _ms, _Waiting, default_holder, validate_holder, validate_resource
from ._errors import FenceviewError, InvalidRequestError, LockHeldError, NotHeldError, NotLeaderError

if TYPE_CHECKING:  # pragma: no cover
    from ._client import Client

__all__ = ["Lease", "Lock", "MultiLock"]


class Lease:
    """What every held thing shares: a lease renewed by a daemon thread every
    third of it, and ``lost``, a threading.Event set the moment the lease is
    lost (the server refused a renewal, or it ran out with no renewal
    answered). ``lost`` is cleared by the next grant."""

    def __init__(self, client: "Client", lease: float, renew: bool = True) -> None:
        self._client = client
        self._renew = renew
        self._lease_ms = _ms(lease, "lease")
        self.lost = threading.Event()
        #: Why the lease was lost (None while it was not).
        self.lost_reason: Optional[str] = None
        self._mu = threading.RLock()
        self._held = False
        self._gen = 0  # counts hold periods: a renewal of an earlier one changes nothing
        self._stop = threading.Event()
        self._deadline = 0.0
        self._thread: Optional[threading.Thread] = None
        #: The latest refusal of a wait that ran out.
        self._refusal: Optional[FenceviewError] = None

    @property
    def lease(self) -> float:
        """The lease, in seconds."""
        return self._lease_ms / 1000.0

    def locked(self) -> bool:
        """Whether this holder holds it, as far as this client knows."""
        return self._held

    # To be provided by each kind of lease.

    def _renew_once(self, timeout: float) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _what(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def _wait_for_grant(self, timeout: Optional[float], send: Callable[[float], Any]) -> Optional[Tuple[float, Any]]:
        """Calls send(wait) again, a chunk of server-side wait at a time,
        until it answers: (when it was sent, its answer); None when the
        lock stayed held past timeout (the refusal kept in _refusal)."""
        c = self._client
        waiting = _Waiting(c, timeout)
        while True:
            left = waiting.left()
            sent = c._monotonic()
            try:
                return sent, send(left)
            except LockHeldError as e:
                self._refusal = e
                if waiting.over():
                    return None

    #: An election's: its second resign is not-leader, not not-held.
    _ends_leadership = False

    # The hold period.

    def _granted(self, sent: float) -> None:
        """A grant answered, to a request sent at sent (monotonic): the lease
        runs until sent + lease at the latest (the server's clock started no
        earlier). Starts the renewing thread for a new hold period."""
        with self._mu:
            self._deadline = sent + self._lease_ms / 1000.0
            if self._held:
                return
            self._held = True
            self._gen += 1
            self.lost.clear()
            self.lost_reason = None
            self._stop = threading.Event()
            self._thread = threading.Thread(
                target=self._watch, args=(self._gen, self._stop), name=f"fenceview-lease {self._what()}", daemon=True
            )
            self._thread.start()

    def _watch(self, gen: int, stop: threading.Event) -> None:
        now = self._client._monotonic
        # Without renewals the thread only watches the deadline.
        interval = self._lease_ms / 3000.0 if self._renew else float("inf")
        next_renew = now() + interval
        while True:
            with self._mu:
                if gen != self._gen or not self._held:
                    return
                deadline = self._deadline
            t = now()
            if t >= deadline:
                self._lose(gen, "its lease ran out with no renewal answered" if self._renew else "its lease ran out (not renewed)")
                return
            if stop.wait(max(0.0, min(next_renew, deadline) - t)):
                return
            if now() < next_renew:
                continue  # woke for the deadline: check it
            sent = now()
            try:
                self._renew_once(max(0.001, deadline - sent))
            except NotHeldError as e:
                self._lose(gen, f"the server refused to renew it ({e.code})")
                return
            except FenceviewError:
                # Unreachable or shed: try again soon; the deadline ends the
                # lease if no renewal gets through in time.
                next_renew = now() + min(interval, 0.25)
                continue
            with self._mu:
                if gen == self._gen and self._held:
                    self._deadline = sent + self._lease_ms / 1000.0
            next_renew = sent + interval

    def _lose(self, gen: int, why: str) -> None:
        with self._mu:
            if gen != self._gen or not self._held:
                return
            self._held = False
            self.lost_reason = why
            self._stop.set()
        self.lost.set()

    def _ended(self) -> None:
        """The last hold was released: stop renewing."""
        with self._mu:
            self._held = False
            self._stop.set()

    def _release_quietly(self, call: Any) -> None:
        """release's common part: quiet when the lease was already lost (the
        server's not-held family then marks the loss too)."""
        with self._mu:
            was_held, gen = self._held, self._gen
        if not was_held and not self.lost.is_set():
            # A second release (or one never acquired) is refused here, not
            # sent: another object of the same holder may hold it.
            cls = NotLeaderError if self._ends_leadership else NotHeldError
            raise cls(f"fenceview: {self._what()}: not held by this {type(self).__name__.lower()} (released already, or never acquired)", None, {}, cls.code)
        try:
            remaining = call()
        except NotHeldError as e:
            self._lose(gen, f"it was not held when released ({e.code})")
            return
        if was_held and not remaining:
            self._ended()


class _Granted(Lease):
    """A lease of one resource, ``name``, fenced by its latest grant's
    token."""

    name: str
    grant: Optional[Dict[str, Any]]

    def _what(self) -> str:
        return self.name

    @property
    def token(self) -> int:
        """The latest grant's token (0 before the first); kept after loss."""
        return int(self.grant["fencing"]["token"]) if self.grant else 0

    @property
    def signature(self) -> Optional[str]:
        """The latest grant's signature (base64url), if the server signs."""
        return self.grant["fencing"].get("signature") if self.grant else None


class Lock(_Granted):
    """A fenced lock on one resource for one holder, in threading.Lock's
    shape (and kazoo's, redis-py's)::

        lock = c.lock("orders:42", holder="worker-7", lease=30.0, wait=None)
        with lock:              # waits up to wait (None: until granted)
            write(lock.token)   # an int: pass it with every write

    While held, a daemon thread renews the lease every third of it;
    ``lock.lost`` is set the moment the lease is lost. ``token`` keeps the
    last grant's token after loss and release. Every grant takes a new token,
    re-entrant ones too.
    """

    def __init__(
        self,
        client: "Client",
        name: str,
        holder: Optional[str],
        lease: float,
        wait: Optional[float],
        shared: bool = False,
        lock_delay: float = 0.0,
        renew: bool = True,
    ) -> None:
        super().__init__(client, lease, renew)
        self.name = validate_resource(name)
        self.holder = validate_holder(holder) if holder is not None else default_holder()
        self.wait = wait
        if wait is not None:
            _ms(wait, "wait", lo=0)
        self.shared = shared
        self._lock_delay_ms = _ms(lock_delay, "lock_delay", lo=0, hi=60000)
        #: The latest grant, as the server sent it (None before the first).
        self.grant: Optional[Dict[str, Any]] = None
        self._hold_count = 0

    @property
    def hold_count(self) -> int:
        """The holds of the current period (re-entrant grants count)."""
        return self._hold_count if self._held else 0

    def headers(self) -> Dict[str, str]:
        """The fencing headers for an HTTP request made under the lock."""
        h = {"X-Fencing-Token": str(self.token), "X-Resource-Id": self.name}
        if self.signature:
            h["X-Fencing-Signature"] = self.signature
        if self.shared:
            h["X-Fencing-Access"] = "read"
        return h

    def acquire(self, blocking: bool = True, timeout: Optional[float] = None) -> bool:
        """Take the lock: True once granted, False when it stayed held by
        another (threading.Lock's shape). blocking=False asks once; timeout
        (seconds; None or -1: the lock's ``wait``, and None there: until
        granted) bounds the wait. Waiting happens on the server, first come
        first served. Errors other than lock-held raise."""
        if not blocking and timeout is not None and timeout != -1:
            raise ValueError("can't specify a timeout for a non-blocking call")

        def send(left: float) -> Any:
            fields: Dict[str, Any] = {"holder": self.holder, "leaseMs": self._lease_ms, "waitMs": int(left * 1000)}
            if self._lock_delay_ms:
                fields["lockDelayMs"] = self._lock_delay_ms
            if self.shared:
                fields["shared"] = True
            return self._client._call("acquire", self.name, fields, wait=left)[1]

        got = self._wait_for_grant(_acquire_timeout(blocking, timeout, self.wait), send)
        if got is None:
            return False
        sent, g = got
        with self._mu:
            self.grant = g
            self._hold_count = int(g.get("holdCount") or 1)
            self._granted(sent)
        self._refusal = None
        return True

    def __enter__(self) -> "Lock":
        if not self.acquire():
            err = self._refusal
            if err is not None:
                raise err
            raise LockHeldError(f"fenceview: {self.name}: not granted within {self.wait}s", None, {}, "lock-held")
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def renew(self, lease: Optional[float] = None) -> Dict[str, Any]:
        """Renew the lease now (the daemon thread does this on its own). A
        lease already lost raises NotHeldError (LeaseExpiredError, ...) and
        sets ``lost``."""
        fields: Dict[str, Any] = {"holder": self.holder}
        if lease is not None:
            fields["leaseMs"] = _ms(lease, "lease")
        gen = self._gen
        sent = self._client._monotonic()
        try:
            _, g = self._client._call("renew", self.name, fields, conflict="not-held")
        except NotHeldError as e:
            self._lose(gen, f"the server refused to renew it ({e.code})")
            raise
        with self._mu:
            if lease is not None:
                self._lease_ms = fields["leaseMs"]
            self.grant = g
            if self._held and gen == self._gen:
                self._deadline = sent + self._lease_ms / 1000.0
        return g

    def _renew_once(self, timeout: float) -> None:
        _, g = self._client._call("renew", self.name, {"holder": self.holder, "leaseMs": self._lease_ms}, timeout=timeout, conflict="not-held")
        with self._mu:
            self.grant = g

    def release(self) -> None:
        """Release one hold; at the last, the daemon thread stops. Quiet when
        the lease was already lost; NotHeldError (a RuntimeError, as
        threading.Lock's) when this object does not hold it."""

        def call() -> int:
            _, b = self._client._call("release", self.name, {"holder": self.holder}, conflict="not-held")
            self._hold_count = int((b or {}).get("holdCount") or 0)
            return self._hold_count  # re-entrant holds remain: keep renewing

        self._release_quietly(call)

    def __repr__(self) -> str:
        mode = "read " if self.shared else ""
        state = "held" if self._held else ("lost" if self.lost.is_set() else "free")
        return f"<fenceview {mode}lock {self.name!r} holder={self.holder!r} token={self.token} {state}>"


class MultiLock(Lease):
    """Several locks granted at once, or none (waiting holds nothing, so two
    multi-locks cannot deadlock), renewed together by one daemon thread.
    ``tokens`` maps each resource to its token."""

    def __init__(self, client: "Client", names: List[str], holder: Optional[str], lease: float, wait: Optional[float]) -> None:
        super().__init__(client, lease)
        if not 1 <= len(names) <= 64 or len(set(names)) != len(names):
            raise InvalidRequestError("fenceview: a multi-lock takes 1..64 distinct resources", field="resources")
        self.names = [validate_resource(n) for n in names]
        self.holder = validate_holder(holder) if holder is not None else default_holder()
        self.wait = wait
        #: The grants of the latest acquire, in the order of names.
        self.grants: List[Dict[str, Any]] = []

    def _what(self) -> str:
        return ",".join(self.names)

    @property
    def tokens(self) -> Dict[str, int]:
        """Each resource's token (kept after loss)."""
        return {g["resourceId"]: int(g["fencing"]["token"]) for g in self.grants}

    @property
    def signatures(self) -> Dict[str, Optional[str]]:
        return {g["resourceId"]: g["fencing"].get("signature") for g in self.grants}

    def acquire(self, blocking: bool = True, timeout: Optional[float] = None) -> bool:
        """As Lock.acquire, for all of the locks at once."""

        def send(left: float) -> Any:
            fields = {"resources": self.names, "holder": self.holder, "leaseMs": self._lease_ms, "waitMs": int(left * 1000)}
            return self._client._call("acquire-all", "", fields, wait=left, what=self._what())[1]

        got = self._wait_for_grant(_acquire_timeout(blocking, timeout, self.wait), send)
        if got is None:
            return False
        sent, b = got
        with self._mu:
            self.grants = list(b.get("grants") or [])
            self._granted(sent)
        return True

    def __enter__(self) -> "MultiLock":
        if not self.acquire():
            raise self._refusal or LockHeldError(f"fenceview: {self._what()}: not granted", None, {}, "lock-held")
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def _renew_once(self, timeout: float) -> None:
        for n in self.names:
            self._client._call("renew", n, {"holder": self.holder, "leaseMs": self._lease_ms}, timeout=timeout, conflict="not-held")

    def release(self) -> None:
        """Release every lock of the set; quiet when the lease was lost."""
        def call() -> int:
            self._client._call("release-all", "", {"resources": self.names, "holder": self.holder}, what=self._what())
            return 0

        self._release_quietly(call)
