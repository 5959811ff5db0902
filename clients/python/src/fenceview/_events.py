"""The event stream (GET /v1/events, a websocket): every grant, renewal,
release, expiry, fence decision and proclaim, in order, resumable by seq."""

import json
import threading
from typing import TYPE_CHECKING, Any, Dict, Iterator, Optional
from urllib.parse import urlencode

from ._errors import UnreachableError, error_for
from ._ws import HandshakeError, WebSocket, WebSocketClosed

if TYPE_CHECKING:  # pragma: no cover
    from ._client import Client

__all__ = ["EventStream"]


class EventStream:
    """An iterator of events (dicts: ``seq``, ``type``, ``resourceId``,
    ``token``, ``holder``, ``at``, ...), every event committed after it
    opened, or after ``since`` (a seq) first. ``close()`` (from any thread,
    or ``with``) ends the iteration; a stream the server ended raises
    UnreachableError."""

    def __init__(self, client: "Client", resource: Optional[str] = None, since: Optional[int] = None) -> None:
        q: Dict[str, Any] = {}
        if resource is not None:
            q["resource"] = resource
        if since is not None:
            q["since"] = since
        hdrs = {"Authorization": f"Bearer {client._key}"} if client._key is not None else {}
        try:
            self._ws = client._open_ws("/v1/events" + (f"?{urlencode(q)}" if q else ""), hdrs)
        except HandshakeError as e:
            try:
                body = json.loads(e.body)
            except ValueError:
                body = {}
            raise error_for(e.status, body, "event stream") from e
        except (OSError, ValueError) as e:
            raise UnreachableError(f"fenceview: event stream: {e}") from e
        self._ws.settimeout(None)  # the server pings; close() unblocks the reader
        self._closed = threading.Event()

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        return self

    def __next__(self) -> Dict[str, Any]:
        while True:
            try:
                _, msg = self._ws.recv()
            except (WebSocketClosed, OSError) as e:
                if self._closed.is_set():
                    raise StopIteration from None
                raise UnreachableError(f"fenceview: event stream: {e}") from e
            ev = json.loads(msg)
            if isinstance(ev, dict):
                return ev

    def close(self) -> None:
        self._closed.set()
        self._ws.abort()

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
