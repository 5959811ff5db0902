"""The errors the client raises, one class per refusal code.

Every refusal of the server carries a stable ``code`` (JSON bodies and RPC
answers alike). The class raised is chosen by that code alone, never by the
English ``error`` sentence, which is for people and changes freely. A refused
fence is not an error: :meth:`fenceview.Client.fence` returns a
:class:`fenceview.Decision`.
"""

from typing import Any, Dict, List, Mapping, Optional, Type

__all__ = [
    "FenceviewError",
    "InvalidRequestError",
    "UnknownFieldError",
    "InvalidTokenError",
    "TooLargeError",
    "UnauthenticatedError",
    "ForbiddenError",
    "NotFoundError",
    "MethodNotAllowedError",
    "LockHeldError",
    "LockDelayError",
    "NoPermitError",
    "NotHeldError",
    "LeaseExpiredError",
    "NotOwnerError",
    "NotLeaderError",
    "PermitsMismatchError",
    "ExhaustedError",
    "ConflictError",
    "FenceRefusedError",
    "StaleTokenError",
    "SupersededError",
    "BadSignatureError",
    "UnissuedTokenError",
    "ForeignIssuerError",
    "ScopeMismatchError",
    "SharedTokenError",
    "OverloadedError",
    "LimitError",
    "UnavailableError",
    "InternalError",
    "UnreachableError",
    "MissingDependencyError",
    "error_for",
    "ERROR_CLASSES",
]


def _str(b: Mapping[str, Any], k: str) -> Optional[str]:
    v = b.get(k)
    return v if isinstance(v, str) else None


def _int(b: Mapping[str, Any], k: str) -> Optional[int]:
    v = b.get(k)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


class FenceviewError(Exception):
    """A call that did not do what it was asked.

    Attributes:
        code: the refusal's code (``"lock-held"``, ``"unknown-field"``, ...);
            for errors made by the client itself, ``"invalid-request"`` or
            ``"unreachable"``.
        status: the HTTP status (the RPC answer's status on the stream);
            ``None`` when the server never answered.
        field: the request field at fault (``invalid-request``,
            ``unknown-field``), else ``None``.
        body: the whole JSON body of the refusal (``{}`` when none).
        retry_after: seconds to wait before trying again (``overloaded``,
            ``unavailable``), from ``retryAfterMs`` or ``Retry-After``.
        holder, expires_at, available_at, expired_at, permits, required:
            the documented extra fields of the refusal, when it had them.
    """

    code: str = "internal"
    status: Optional[int]

    def __init__(
        self,
        message: str,
        status: Optional[int] = None,
        body: Optional[Mapping[str, Any]] = None,
        code: Optional[str] = None,
        retry_after: Optional[float] = None,
        field: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        b: Dict[str, Any] = dict(body) if isinstance(body, Mapping) else {}
        leader = b.get("leader") if isinstance(b.get("leader"), Mapping) else {}
        held = [h for h in b.get("held", []) if isinstance(h, Mapping)] if isinstance(b.get("held"), list) else []
        self.code = code or _str(b, "code") or type(self).code
        self.status = status
        self.body = b
        self.field = field if field is not None else _str(b, "field")
        self.holder = _str(b, "holder") or _str(leader, "candidate") or (_str(held[0], "holder") if held else None)
        self.expires_at = _str(b, "expiresAt") or _str(leader, "expiresAt") or (_str(held[0], "expiresAt") if held else None)
        self.available_at = _str(b, "availableAt") or (_str(held[0], "availableAt") if held else None)
        self.expired_at = _str(b, "expiredAt")
        self.permits = _int(b, "permits")
        self.required = _int(b, "required")
        ms = _int(b, "retryAfterMs")
        self.retry_after = ms / 1000.0 if ms is not None and ms >= 0 else retry_after
        self.held: List[Dict[str, Any]] = [dict(h) for h in held]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r}, code={self.code!r}, status={self.status!r})"


class InvalidRequestError(FenceviewError, ValueError):
    """invalid-request (400): a malformed request; ``field`` names the field
    at fault. The client raises it too, before sending, for arguments that
    cannot be right (``status`` is then ``None``)."""

    code = "invalid-request"


class UnknownFieldError(InvalidRequestError):
    """unknown-field (400): a body field the operation does not define
    (``field`` names it)."""

    code = "unknown-field"


class InvalidTokenError(InvalidRequestError):
    """invalid-token (400): a missing or ill-formed fencing token."""

    code = "invalid-token"


class TooLargeError(InvalidRequestError):
    """too-large (413): a body or batch over its limit."""

    code = "too-large"


class UnauthenticatedError(FenceviewError):
    """unauthenticated (401): the key is missing, unknown or revoked."""

    code = "unauthenticated"


class ForbiddenError(FenceviewError):
    """forbidden (403): the key's role or prefixes do not allow the call."""

    code = "forbidden"


class NotFoundError(FenceviewError):
    """not-found (404): no such route or thing."""

    code = "not-found"


class MethodNotAllowedError(FenceviewError):
    """method-not-allowed (405)."""

    code = "method-not-allowed"


class LockHeldError(FenceviewError):
    """lock-held (409): another holder has the lock (``holder``,
    ``expires_at``), or one of a multi-lock's locks (``held``), or another
    candidate leads (``holder`` is the leader). ``with lock:`` raises it
    when the lock was not granted within the lock's ``wait``."""

    code = "lock-held"


class LockDelayError(LockHeldError):
    """lock-delay (409): the lock is free but in its lock-delay until
    ``available_at``."""

    code = "lock-delay"


class NoPermitError(LockHeldError):
    """no-permit (409): every slot of the semaphore is taken."""

    code = "no-permit"


class NotHeldError(FenceviewError, RuntimeError):
    """not-held (409): renew or release of a lock this holder does not hold.
    Also a RuntimeError, as threading.Lock's release of an unlocked lock is:
    the client raises it itself, status None, for a release of a lock, permit
    or multi-lock this object does not hold (a second release)."""

    code = "not-held"


class LeaseExpiredError(NotHeldError):
    """lease-expired (409): this holder's lease ran out (``expired_at``) or
    was force-expired, and was not released since."""

    code = "lease-expired"


class NotOwnerError(NotHeldError):
    """not-owner (409): another holder (or key) holds the lock."""

    code = "not-owner"


class NotLeaderError(NotHeldError):
    """not-leader (409): proclaim, resign or renew by a non-leader; raised
    by the client itself for a second resign, or one without a campaign won."""

    code = "not-leader"


class PermitsMismatchError(FenceviewError):
    """permits-mismatch (409): the semaphore has other permits (``permits``)."""

    code = "permits-mismatch"


class ExhaustedError(FenceviewError):
    """exhausted (409): the resource's next token would pass 2^63-1."""

    code = "exhausted"


class ConflictError(FenceviewError):
    """conflict (409): an admin change the server's state refuses."""

    code = "conflict"


class FenceRefusedError(FenceviewError):
    """A refused fence, raised by :meth:`fenceview.Decision.raise_for_refusal`
    (``Client.fence`` returns the refusal as a Decision). ``code`` is the
    decision's reason; ``presented`` and ``required`` its tokens."""

    code = "stale-token"

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.reason = self.code
        self.presented = _int(self.body, "presented")


class StaleTokenError(FenceRefusedError):
    """stale-token: the token is below the resource's high-water mark."""

    code = "stale-token"


class SupersededError(FenceRefusedError):
    """superseded: a fence in mode current below the last token issued."""

    code = "superseded"


class BadSignatureError(FenceRefusedError):
    """bad-signature: the token's signature is missing or does not verify."""

    code = "bad-signature"


class UnissuedTokenError(FenceRefusedError):
    """unissued-token: a token above any the server issued for the resource."""

    code = "unissued-token"


class ForeignIssuerError(FenceRefusedError):
    """foreign-issuer: the token is another server's."""

    code = "foreign-issuer"


class ScopeMismatchError(FenceRefusedError):
    """scope-mismatch: the token was granted for another resource."""

    code = "scope-mismatch"


class SharedTokenError(FenceRefusedError):
    """shared-token: a write presented a shared (read) lock's token."""

    code = "shared-token"


class OverloadedError(FenceviewError):
    """overloaded (429): the server shed the call, nothing changed. The client
    retries it itself first, after ``retry_after`` plus jitter, within the
    call's deadline."""

    code = "overloaded"


class LimitError(FenceviewError):
    """limit (429 or 503): a server limit was reached."""

    code = "limit"


class UnavailableError(FenceviewError):
    """unavailable (503): no leader, shutting down, or the durable record
    could not be written."""

    code = "unavailable"


class InternalError(FenceviewError):
    """internal (500): a bug on the server."""

    code = "internal"


class UnreachableError(FenceviewError, ConnectionError):
    """The server could not be reached, the connection broke before an
    answer, or the client is closed (``status`` is ``None``). The call may or
    may not have been carried out."""

    code = "unreachable"


class MissingDependencyError(ImportError):
    """A feature needs a package that is not installed (signature checks
    need ``cryptography``); the message says how to install it."""


ERROR_CLASSES: Dict[str, Type[FenceviewError]] = {
    c.code: c
    for c in (
        InvalidRequestError, UnknownFieldError, InvalidTokenError, TooLargeError, UnauthenticatedError,
        ForbiddenError, NotFoundError, MethodNotAllowedError, LockHeldError, LockDelayError, NoPermitError,
        NotHeldError, LeaseExpiredError, NotOwnerError, NotLeaderError, PermitsMismatchError, ExhaustedError,
        ConflictError, StaleTokenError, SupersededError, BadSignatureError, UnissuedTokenError,
        ForeignIssuerError, ScopeMismatchError, SharedTokenError, OverloadedError, LimitError,
        UnavailableError, InternalError,
    )
}
"""The class of each refusal code the server sends (docs/errors.md)."""

FENCE_REASONS = frozenset(
    ["stale-token", "superseded", "bad-signature", "unissued-token", "foreign-issuer", "scope-mismatch", "shared-token"]
)

_STATUS_CODES = {
    400: "invalid-request", 401: "unauthenticated", 403: "forbidden", 404: "not-found",
    405: "method-not-allowed", 409: "lock-held", 413: "too-large", 429: "overloaded", 503: "unavailable",
}


def error_for(
    status: int,
    body: Any,
    what: str = "",
    retry_after: Optional[float] = None,
    conflict: Optional[str] = None,
) -> FenceviewError:
    """The error of a refusal (status and JSON body as the JSON API or the
    RPC stream gave them), its class chosen by the body's ``code``. A body
    without one (a proxy's page) is read by status; a 409 without one by
    what the call was (``conflict``)."""
    b = body if isinstance(body, Mapping) else {}
    code = _str(b, "code") or ""
    if not code:
        code = (conflict or "lock-held") if status == 409 else _STATUS_CODES.get(status, "internal")
    sentence = _str(b, "error") or f"status {status}"
    prefix = f"{what}: " if what else ""
    cls = ERROR_CLASSES.get(code, FenceviewError)
    return cls(f"fenceview: {prefix}{sentence} ({code})", status, b, code, retry_after)
