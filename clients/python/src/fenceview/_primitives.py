"""Semaphores and elections, each made of the server's fenced locks."""

import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional

from ._client import _acquire_timeout, _ms, _Waiting, default_holder, validate_holder, validate_resource
from ._errors import FenceviewError, InvalidRequestError, LockHeldError, NoPermitError, UnreachableError
from ._locks import _Granted

if TYPE_CHECKING:  # pragma: no cover
    from ._client import Client

__all__ = ["Semaphore", "Permit", "Election"]


def _name(name: str, what: str) -> str:
    validate_resource(name, what)
    if len(name.encode("utf-8")) > 150 or "#" in name:
        raise InvalidRequestError(f"fenceview: a {what} is 1..150 bytes with no '#': {name[:40]!r}", field="name")
    return name


class Permit(_Granted):
    """One permit of a semaphore: the lock of one slot (``name`` is the
    slot's resource id, ``name#3``), with its own ``token``. Renewed by a
    daemon thread while held; ``lost`` is set when its lease is lost."""

    def __init__(self, sem: "Semaphore", grant: Dict[str, Any], sent: float) -> None:
        super().__init__(sem._client, sem._lease_ms / 1000.0)
        self._sem = sem
        self.grant = grant
        self.slot = int(grant["slot"])
        self.name: str = grant["resourceId"]
        self._granted(sent)

    def _renew_once(self, timeout: float) -> None:
        _, g = self._client._call("renew", self.name, {"holder": self._sem.holder, "leaseMs": self._lease_ms}, timeout=timeout, conflict="not-held")
        self.grant = g | {"slot": self.slot} if isinstance(g, dict) else self.grant

    def release(self) -> None:
        """Give the permit back; quiet when its lease was already lost."""

        def call() -> int:
            self._client._call("semaphore-release", self._sem.name, {"holder": self._sem.holder, "slot": self.slot}, conflict="not-held")
            return 0

        self._release_quietly(call)

    def __enter__(self) -> "Permit":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"<fenceview permit {self.name!r} token={self.token}>"


class Semaphore:
    """A semaphore of ``permits`` fenced slots, in threading.Semaphore's
    shape, except that ``acquire`` returns the :class:`Permit` (truthy) or
    None, since each permit has its own token::

        sem = c.semaphore("exports", 3)
        with sem as permit:
            export(permit.name, permit.token)
    """

    def __init__(self, client: "Client", name: str, permits: int, holder: Optional[str], lease: float, wait: Optional[float]) -> None:
        self._client = client
        self.name = _name(name, "semaphore name")
        if isinstance(permits, bool) or not isinstance(permits, int) or not 1 <= permits <= 1024:
            raise InvalidRequestError(f"fenceview: permits is an int in 1..1024, not {permits!r}", field="permits")
        self.permits = permits
        self.holder = validate_holder(holder) if holder is not None else default_holder()
        self._lease_ms = _ms(lease, "lease")
        self.wait = wait
        self._entered = threading.local()

    def acquire(self, blocking: bool = True, timeout: Optional[float] = None) -> Optional[Permit]:
        """The lowest free slot's permit, or None when no permit came free
        in time (blocking=False: at once; timeout None or -1: the
        semaphore's ``wait``, and None there: until one does)."""
        c = self._client
        waiting = _Waiting(c, _acquire_timeout(blocking, timeout, self.wait))
        while True:
            left = waiting.left()
            fields = {"holder": self.holder, "permits": self.permits, "leaseMs": self._lease_ms, "waitMs": int(left * 1000)}
            sent = c._monotonic()
            try:
                _, g = c._call("semaphore-acquire", self.name, fields, wait=left)
            except NoPermitError as e:
                self._entered.refusal = e
                if waiting.over():
                    return None
                continue
            return Permit(self, g, sent)

    def state(self) -> Optional[Dict[str, Any]]:
        """GET /v1/semaphores/{name}: permits, held slots, free, waiters;
        None when it was never acquired."""
        try:
            return self._client._call("semaphore", self.name, {})[1]
        except FenceviewError as e:
            if e.code == "not-found":
                return None
            raise

    def __enter__(self) -> Permit:
        p = self.acquire()
        if p is None:
            raise getattr(self._entered, "refusal", None) or NoPermitError(f"fenceview: {self.name}: no permit free", None, {}, "no-permit")
        stack: List[Permit] = self._entered.__dict__.setdefault("stack", [])
        stack.append(p)
        return p

    def __exit__(self, *exc: Any) -> None:
        self._entered.stack.pop().release()


class Election(_Granted):
    """Leader election: the leader holds the lock ``name``, and its
    ``term`` is that lock's token, so a deposed leader's writes fenced with
    its term are refused by every guard. ``campaign`` blocks until elected;
    a daemon thread renews the leadership and sets ``lost`` when it ends
    otherwise than by ``resign``."""

    def __init__(self, client: "Client", name: str, candidate: Optional[str], lease: float) -> None:
        super().__init__(client, lease)
        self.name = validate_resource(name, "election name")
        self.candidate = validate_holder(candidate, "candidate") if candidate is not None else default_holder()
        self.grant: Optional[Dict[str, Any]] = None

    _ends_leadership = True

    @property
    def answer(self) -> Optional[Dict[str, Any]]:
        """The latest campaign's answer ({"name","leader","fencing"}): the
        grant of the election's lock."""
        return self.grant

    @property
    def term(self) -> int:
        """The term of the latest leadership (its token; 0 before)."""
        return self.token

    def campaign(self, value: str = "", timeout: Optional[float] = None) -> int:
        """Wait until elected (at most timeout seconds; None: as long as it
        takes) and return the term. Not elected in time: LockHeldError
        naming the leader."""
        c = self._client
        waiting = _Waiting(c, timeout)
        while True:
            left = waiting.left()
            fields = {"candidate": self.candidate, "value": value, "leaseMs": self._lease_ms, "waitMs": int(left * 1000)}
            sent = c._monotonic()
            try:
                _, b = c._call("campaign", self.name, fields, wait=left)
            except LockHeldError:
                if waiting.over():
                    raise
                continue
            with self._mu:
                self.grant = b
                self._granted(sent)
            return self.term

    def proclaim(self, value: str) -> None:
        """Change the leader's value, same term (NotLeaderError otherwise)."""
        self._client._call("proclaim", self.name, {"candidate": self.candidate, "value": value}, conflict="not-leader")

    def resign(self) -> None:
        """Give up leadership; quiet when it was already lost. A second
        resign, or one without a campaign won, is NotLeaderError."""

        def call() -> int:
            self._client._call("resign", self.name, {"candidate": self.candidate}, conflict="not-leader")
            return 0

        self._release_quietly(call)

    def leader(self) -> Optional[Dict[str, Any]]:
        """The current leader ({"candidate","value","term","since","expiresAt"}), or None."""
        _, b = self._client._call("election", self.name, {})
        return (b or {}).get("leader")

    def observe(self) -> Iterator[Optional[Dict[str, Any]]]:
        """Every change of leader or value, as it happens: the leader now
        (None when nobody leads), then the leader after each new term,
        proclaim, resignation or expiry. A generator over the event stream,
        reopened after the last event seen when it breaks; close it
        (``gen.close()``) to stop."""
        last: Any = object()  # nothing yielded yet
        since: Optional[int] = None
        backoff = 0.1
        while True:
            try:
                stream = self._client.events(resource=self.name, since=since)
            except UnreachableError:
                if self._client._sleep(backoff):
                    return  # the client closed
                backoff = min(backoff * 2, 5.0)
                continue
            backoff = 0.1
            try:
                # The stream opened before the leader is read: no change
                # between the two is missed.
                cur = self.leader()
                if cur != last:
                    last = cur
                    yield cur
                for ev in stream:
                    if isinstance(ev.get("seq"), int):
                        since = ev["seq"]
                    if ev.get("type") not in ("grant", "proclaim", "release", "expire"):
                        continue
                    cur = self.leader()
                    if cur != last:
                        last = cur
                        yield cur
            except UnreachableError:
                continue  # reopened after the last event seen
            finally:
                stream.close()

    def run(self, func: Callable[..., Any], *args: Any, value: str = "", **kwargs: Any) -> Any:
        """kazoo's Election.run: campaign (blocking until elected), call
        func(*args, **kwargs) as the leader, then resign; returns what func
        returned. Fence the leader's writes with ``self.term``."""
        self.campaign(value)
        try:
            return func(*args, **kwargs)
        finally:
            self.resign()

    def _renew_once(self, timeout: float) -> None:
        self._client._call("election-renew", self.name, {"candidate": self.candidate, "leaseMs": self._lease_ms}, timeout=timeout, conflict="not-leader")

    def __enter__(self) -> "Election":
        self.campaign()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.resign()
