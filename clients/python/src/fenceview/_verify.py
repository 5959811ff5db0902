"""Verifying fenceview's signed tokens: Ed25519 (with ``cryptography``)
over the token's own message, or over a batch's Merkle root (RFC 9162) with
the token's audit path.

Messages (UTF-8): an exclusive grant signs ``fenceview/v1 <resource>
<token>``, a shared (read) grant ``fenceview/v1 <resource> <token> shared``.
A carrier (base64url without padding) is either the 64 bytes of a signature
of that message, or ``0x02 || signature || index (u32 BE) || size (u32 BE)
|| audit path`` where the signature is of ``fenceview/batch/v2 <size>
<root hex>``. Carriers starting with 0x01 (an older message that did not bind
the batch size) are refused.
"""

import base64
import binascii
import hashlib
import re
import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

from ._client import validate_resource, validate_token
from ._errors import InvalidRequestError, MissingDependencyError

if TYPE_CHECKING:  # pragma: no cover
    from ._client import Client

__all__ = ["Verifier", "decode_carrier", "root_from_path", "leaf_hash", "message", "batch_message", "require_cryptography"]

BATCH_TAG = 0x02
BATCH_HEAD = 1 + 64 + 4 + 4
#: A tree of at most 2^32 leaves has paths of at most 32 hashes.
MAX_PATH = 32
_B64 = re.compile(r"^[A-Za-z0-9_-]+$")
_MAX_TEXT = -(-(BATCH_HEAD + 32 * MAX_PATH) * 4 // 3)

INSTALL_HINT = (
    "verifying fenceview's signed tokens needs the 'cryptography' package: "
    "pip install cryptography (on Debian and Ubuntu: apt-get install python3-cryptography)"
)


def require_cryptography() -> Tuple[Any, Any]:
    """cryptography's Ed25519PublicKey and InvalidSignature, or a
    MissingDependencyError that says how to install it."""
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    except ImportError as e:
        raise MissingDependencyError(f"fenceview: {INSTALL_HINT}") from e
    return Ed25519PublicKey, InvalidSignature


def _b64(text: Any, limit: int) -> Optional[bytes]:
    """The bytes of canonical base64url without padding, else None: lenient
    decoders let several texts stand for one value; fenceview accepts one."""
    if not isinstance(text, str) or not 0 < len(text) <= limit or not _B64.match(text):
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
    if base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii") != text:
        return None
    return raw


def decode_carrier(text: Any) -> Optional[Tuple[bytes, Optional[Tuple[int, int, List[bytes]]]]]:
    """(signature, None) for a 64-byte carrier; (signature, (index, size,
    path)) for a 0x02 batch carrier; None for anything else."""
    raw = _b64(text, _MAX_TEXT)
    if raw is None:
        return None
    if len(raw) == 64:
        return raw, None
    if len(raw) < BATCH_HEAD or raw[0] != BATCH_TAG or (len(raw) - BATCH_HEAD) % 32:
        return None
    index = int.from_bytes(raw[65:69], "big")
    size = int.from_bytes(raw[69:73], "big")
    path = [raw[o : o + 32] for o in range(BATCH_HEAD, len(raw), 32)]
    return raw[1:65], (index, size, path)


def message(resource: str, token: int, shared: bool = False) -> bytes:
    """The message a grant's key signs (a batch's leaf)."""
    return f"fenceview/v1 {resource} {token}{' shared' if shared else ''}".encode("utf-8")


def leaf_hash(msg: bytes) -> bytes:
    """RFC 9162's leaf hash: SHA-256(0x00 || message)."""
    return hashlib.sha256(b"\x00" + msg).digest()


def _node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def root_from_path(leaf: bytes, index: int, size: int, path: Sequence[bytes]) -> Optional[bytes]:
    """The root a leaf's audit path leads to (RFC 9162 §2.1.3.2), or None
    when the path does not fit index and size."""
    if not 0 <= index < size <= 0xFFFFFFFF:
        return None
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            return None  # longer than the tree is tall
        if fn % 2 == 1 or fn == sn:
            r = _node(p, r)
            if fn % 2 == 0:
                while fn % 2 == 0 and fn != 0:  # a right edge: climb past levels with no sibling
                    fn //= 2
                    sn //= 2
        else:
            r = _node(r, p)
        fn //= 2
        sn //= 2
    return r if sn == 0 else None


def batch_message(size: int, root: bytes) -> bytes:
    """What a batch's key signs: ``fenceview/batch/v2 <size> <root hex>``."""
    return f"fenceview/batch/v2 {size} {root.hex()}".encode("ascii")


class _LRU:
    """A bounded set, least recently used out first; safe across threads."""

    def __init__(self, size: int) -> None:
        self._d: "OrderedDict[Any, bool]" = OrderedDict()
        self._size = size
        self._mu = threading.Lock()

    def __contains__(self, k: Any) -> bool:
        with self._mu:
            if k in self._d:
                self._d.move_to_end(k)
                return True
            return False

    def add(self, k: Any) -> None:
        with self._mu:
            self._d[k] = True
            self._d.move_to_end(k)
            while len(self._d) > self._size:
                self._d.popitem(last=False)

    def clear(self) -> None:
        with self._mu:
            self._d.clear()


class Verifier:
    """Checks that a token was issued by a fenceview server, with the keys of
    its GET /v1/signing-keys (``Verifier(client)``, following rotation) or
    with fixed keys (``Verifier.from_keys([...])``). Verified batch roots are
    remembered (by root, size and signature), so a batch's tokens cost one
    Ed25519 verification. Needs ``cryptography``: without it the constructor
    raises MissingDependencyError saying how to install it.

    Args:
        client: where the keys come from (None with from_keys).
        max_age: seconds after which the keys are fetched again before the
            next check, so a removed key stops verifying.
        min_refresh: a signature no trusted key verifies makes the verifier
            fetch the keys again (a rotation it has not seen), at most once
            per this many seconds: a check that comes sooner waits for it, so
            forgeries cannot make it hammer the server, nor a fresh key's
            grant be refused.
    """

    def __init__(
        self,
        client: Optional["Client"] = None,
        *,
        max_age: float = 60.0,
        min_refresh: float = 1.0,
        cache_size: int = 10000,
        root_cache_size: int = 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._pub, self._invalid = require_cryptography()
        self._client = client
        self._max_age, self._min_refresh = max_age, min_refresh
        self._clock = clock
        self._mu = threading.Lock()
        self._keys: List[Tuple[str, bytes, Any]] = []
        self.issuer = ""
        self._fetched_at = float("-inf")
        self._attempted_at = float("-inf")
        self._fetches = 0
        self._refresh_mu = threading.Lock()
        self._sleep = time.sleep
        self._cache = _LRU(cache_size)
        self._roots = _LRU(root_cache_size)
        #: Ed25519 verifications made (each key tried counts one).
        self.verifications = 0
        #: Fetches of the keys that failed (the keys already trusted stayed in use).
        self.refresh_errors = 0

    @classmethod
    def from_keys(cls, public_keys: Sequence[str]) -> "Verifier":
        """A verifier of fixed keys (base64url of 32 bytes each), never refreshed."""
        v = cls(None)
        v._set_keys([{"keyId": f"key-{i}", "alg": "Ed25519", "publicKey": k} for i, k in enumerate(public_keys)], strict=True)
        return v

    @property
    def key_ids(self) -> List[str]:
        return [k[0] for k in self._keys]

    def _set_keys(self, keys: Sequence[Dict[str, Any]], strict: bool = False) -> None:
        nxt = []
        for k in sorted(keys, key=lambda k: not k.get("active")):  # the active key first: a fresh grant's
            raw = _b64(k.get("publicKey"), 43)
            if k.get("alg") != "Ed25519" or raw is None or len(raw) != 32:
                if strict:
                    raise InvalidRequestError(f"fenceview: {k.get('publicKey')!r} is not a base64url Ed25519 public key", field="publicKey")
                continue
            nxt.append((str(k.get("keyId")), raw, self._pub.from_public_bytes(raw)))
        with self._mu:
            if [k[1] for k in nxt] != [k[1] for k in self._keys]:
                self._cache.clear()  # a removed key takes its verifications with it
                self._roots.clear()
            self._keys = nxt

    def refresh(self) -> None:
        """Fetch the keys now."""
        if self._client is None:
            return
        b = self._client.signing_keys()
        self._set_keys(b.get("keys") or [])
        self.issuer = b.get("issuer", "")
        self._fetched_at = self._clock()
        self._fetches += 1

    def _try_refresh(self, seen: int) -> bool:
        """Fetch the keys again after a signature none of them verified
        (seen: the fetches counted before that check), at most once per
        min_refresh: a caller within it waits the rest out rather than
        refuse a token a key it has not seen yet signed, so forgeries cost
        their senders time, not the server fetches. Reports whether the keys
        may have changed since seen; an unreachable server keeps the keys."""
        with self._refresh_mu:
            if self._fetches != seen:
                return True  # another caller fetched meanwhile
            left = self._min_refresh - (self._clock() - self._attempted_at)
            if left > 0:
                self._sleep(left)
            self._attempted_at = self._clock()
            try:
                self.refresh()
                return True
            except Exception:  # noqa: BLE001 - an unreachable server keeps the keys we have
                self.refresh_errors += 1
                return False

    def _signed(self, msg: bytes, sig: bytes) -> bool:
        for _, _, key in self._keys:
            self.verifications += 1
            try:
                key.verify(sig, msg)
                return True
            except self._invalid:
                continue
        return False

    def _verifies(self, msg: bytes, carrier: Tuple[bytes, Optional[Tuple[int, int, List[bytes]]]]) -> bool:
        sig, batch = carrier
        if batch is None:
            return self._signed(msg, sig)
        index, size, path = batch
        root = root_from_path(leaf_hash(msg), index, size, path)
        if root is None:
            return False
        k = (root, size, sig)
        if k in self._roots:
            return True
        if not self._signed(batch_message(size, root), sig):
            return False
        self._roots.add(k)
        return True

    def check(self, resource: str, token: int, signature: Optional[str], access: str = "write") -> Optional[str]:
        """None when signature proves token was granted for resource in a
        mode that allows access; else the refusal's reason:
        ``"shared-token"`` for a write with a shared grant's signature,
        ``"bad-signature"`` for anything else (none, malformed, forged,
        another resource's or token's)."""
        validate_resource(resource)
        validate_token(token)
        if access not in ("write", "read"):
            raise InvalidRequestError(f"fenceview: access is 'write' or 'read', not {access!r}", field="access")
        carrier = decode_carrier(signature)
        if carrier is None:
            return "bad-signature"
        if self._client is not None and self._fetched_at == float("-inf"):
            self.refresh()  # the first keys: no answer, no verification (the error says why)
        elif self._client is not None and self._clock() - self._fetched_at > self._max_age:
            self._try_refresh(self._fetches)
        for attempt in range(2):
            seen = self._fetches
            found = self._mode(resource, token, signature, carrier)
            if found is None and attempt == 0 and self._client is not None and self._try_refresh(seen):
                continue
            break
        if found is None:
            return "bad-signature"
        if found == "shared" and access == "write":
            return "shared-token"
        return None

    def _mode(self, resource: str, token: int, signature: Any, carrier: Any) -> Optional[str]:
        for mode in ("exclusive", "shared"):
            k = (resource, token, signature, mode)
            if k in self._cache:
                return mode
            if self._verifies(message(resource, token, mode == "shared"), carrier):
                self._cache.add(k)
                return mode
        return None

    def verify(self, resource: str, token: int, signature: Optional[str], access: str = "write") -> bool:
        """Whether signature proves token for resource and access (see check)."""
        return self.check(resource, token, signature, access) is None
