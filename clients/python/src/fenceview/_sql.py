"""Fenced writes to SQL rows on any DB-API 2.0 connection (sqlite3,
psycopg2, ...): the check and the write are one conditional UPDATE, so a
paused holder that wakes up with an old token matches no row::

    UPDATE inventory SET stock = ?, fence_token = ?
     WHERE product_id = ? AND fence_token <= ?

Zero rows updated is the refusal; only then is the row's mark read, to say
which token it would have needed. The guard never commits: the fenced write
is part of the caller's transaction. Identifiers are validated and quoted;
values are always bound, never spliced into the SQL.
"""

import re
import sys
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ._client import Decision, validate_resource, validate_token
from ._errors import InvalidRequestError

if TYPE_CHECKING:  # pragma: no cover
    from ._client import Client
    from ._verify import Verifier

__all__ = ["FencedTable", "FencedMarks"]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def _quote(name: str, what: str, qualified: bool = False) -> str:
    parts = name.split(".") if isinstance(name, str) else []
    if not 1 <= len(parts) <= (2 if qualified else 1) or not all(_IDENT.match(p) for p in parts):
        raise InvalidRequestError(f"fenceview: {what} {name!r} must be a plain SQL identifier (letters, digits, _)", field=what)
    return ".".join(f'"{p}"' for p in parts)


def _paramstyle(conn: Any) -> str:
    mod = sys.modules.get(type(conn).__module__.split(".")[0])
    style = getattr(mod, "paramstyle", None)
    if style not in ("qmark", "format", "pyformat", "numeric", "named"):
        raise InvalidRequestError(
            f"fenceview: cannot tell the paramstyle of {type(conn).__module__}.{type(conn).__name__}: pass paramstyle=",
            field="paramstyle",
        )
    return style


class _Args:
    """Placeholders in the connection's paramstyle, and their values."""

    def __init__(self, style: str) -> None:
        self.style = style
        self.values: List[Any] = []

    def add(self, v: Any) -> str:
        self.values.append(v)
        n = len(self.values)
        return {"qmark": "?", "format": "%s", "pyformat": "%s", "numeric": f":{n}", "named": f":p{n}"}[self.style]

    def params(self) -> Union[Sequence[Any], Dict[str, Any]]:
        if self.style == "named":
            return {f"p{i + 1}": v for i, v in enumerate(self.values)}
        return tuple(self.values)


def _execute(conn: Any, sql: str, args: _Args) -> Tuple[int, Optional[Sequence[Any]]]:
    cur = conn.cursor()
    try:
        cur.execute(sql, args.params())
        row = cur.fetchone() if sql.startswith("SELECT") else None
        return cur.rowcount, row
    finally:
        cur.close()


def _verifier(verifier: Optional["Verifier"], client: Optional["Client"], accept_unsigned_tokens: bool) -> Optional["Verifier"]:
    # Built from a client, a guard verifies with the server's keys unless
    # told, by name, to accept unsigned tokens.
    if verifier is not None or client is None or accept_unsigned_tokens:
        return verifier
    from ._verify import Verifier

    return Verifier(client)


def _decide(conn: Any, sql: str, args: _Args, token: int, mark: Callable[[], int]) -> Decision:
    """Runs sql, a write under the condition that token is at least the
    mark: accepted when it wrote a row, else refused with mark()."""
    n, _ = _execute(conn, sql, args)
    if n > 0:
        return Decision(True, token)
    # Marks only rise: the mark read now is at least the one that beat
    # this token, so it is the token to beat.
    return Decision(False, token, mark(), "stale-token")


def _mark(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise InvalidRequestError(f"fenceview: the stored mark {v!r} is not a token")
    return v


class FencedTable:
    """A guard of the rows of one table, each carrying its own high-water
    mark in token_column (``BIGINT NOT NULL DEFAULT 0``).

    Args:
        conn: a DB-API connection (sqlite3, psycopg2, ...); its paramstyle is
            read from its module unless given.
        table: the table (plain or schema-qualified); key: the column rows
            are found by.
        verifier: refuse tokens whose signature it does not accept
            (``bad-signature``; ``shared-token`` for a write with a read
            lock's token) before the row is touched.
        client: verify with this server's keys (the default when built with
            ``client.fenced_table``), unless ``accept_unsigned_tokens=True``.
        resource: the lock's resource id of a row's key, which signatures are
            checked against; default ``"<table>:<key>"`` (``inventory:42``).
    """

    def __init__(
        self,
        conn: Any,
        table: str,
        key: str,
        *,
        token_column: str = "fence_token",
        paramstyle: Optional[str] = None,
        verifier: Optional["Verifier"] = None,
        client: Optional["Client"] = None,
        accept_unsigned_tokens: bool = False,
        resource: Optional[Callable[[Any], str]] = None,
    ) -> None:
        self._conn = conn
        self.table_name = table
        self._table = _quote(table, "table", qualified=True)
        self._key = _quote(key, "key column")
        self._mark = _quote(token_column, "token column")
        self._style = paramstyle or _paramstyle(conn)
        self.verifier = _verifier(verifier, client, accept_unsigned_tokens)
        self._resource = resource or (lambda k: f"{table}:{k}")

    def on(self, conn: Any) -> "FencedTable":
        """The same guard on another connection (one per thread, say)."""
        c = object.__new__(FencedTable)
        c.__dict__.update(self.__dict__)
        c._conn = conn
        return c

    def _signed(self, key: Any, token: int, signature: Optional[str], access: str) -> Optional[Decision]:
        if self.verifier is None:
            return None
        reason = self.verifier.check(validate_resource(self._resource(key)), token, signature, access)
        if reason is None:
            return None
        return Decision(False, token, self.mark(key), reason)

    def update(self, key: Any, values: Mapping[str, Any], token: int, signature: Optional[str] = None) -> Decision:
        """Set values on the row with key, and its mark to token, when token
        is at least the mark: ``Decision(accepted=True)``. Otherwise nothing
        is written and the Decision says why (``stale-token``, ``required``
        the mark that beat it). A row that does not exist is a LookupError."""
        validate_token(token)
        if not values:
            raise InvalidRequestError("fenceview: update needs at least one column to set", field="values")
        a = _Args(self._style)
        sets = []
        for col, v in values.items():
            q = _quote(col, "column")
            if q in (self._mark, self._key):
                raise InvalidRequestError(f"fenceview: column {col} is the guard's; it cannot be set", field=col)
            sets.append(f"{q} = {a.add(v)}")
        refused = self._signed(key, token, signature, "write")
        if refused is not None:
            return refused
        sets.append(f"{self._mark} = {a.add(token)}")
        sql = f"UPDATE {self._table} SET {', '.join(sets)} WHERE {self._key} = {a.add(key)} AND {self._mark} <= {a.add(token)}"
        return _decide(self._conn, sql, a, token, lambda: self.mark(key))

    def check(self, key: Any, token: int, signature: Optional[str] = None, access: str = "read") -> Decision:
        """Present token for a read (or, access="write", a write made
        otherwise) of the row: the mark rises to token when token is at least
        the mark, in one conditional UPDATE; then read in the same
        transaction. A read is refused once a later writer has written."""
        validate_token(token)
        refused = self._signed(key, token, signature, access)
        if refused is not None:
            return refused
        a = _Args(self._style)
        sql = f"UPDATE {self._table} SET {self._mark} = {a.add(token)} WHERE {self._key} = {a.add(key)} AND {self._mark} <= {a.add(token)}"
        return _decide(self._conn, sql, a, token, lambda: self.mark(key))

    def mark(self, key: Any) -> int:
        """The row's mark; LookupError when there is no such row."""
        a = _Args(self._style)
        _, row = _execute(self._conn, f"SELECT {self._mark} FROM {self._table} WHERE {self._key} = {a.add(key)}", a)
        if row is None:
            raise LookupError(f"fenceview: no row of {self.table_name} with key {key!r}")
        return _mark(row[0])


class FencedMarks:
    """High-water marks by resource id in a table of their own
    (``resource_id`` text primary key, ``high_water`` BIGINT), for resources
    without a row to carry a token column: the same table Go's sqlguard.Marks
    uses. A check is one conditional upsert (SQLite 3.24+, PostgreSQL 9.5+).
    Takes the same verifier, client and accept_unsigned_tokens as
    FencedTable."""

    def __init__(
        self,
        conn: Any,
        table: str = "fence_marks",
        *,
        paramstyle: Optional[str] = None,
        verifier: Optional["Verifier"] = None,
        client: Optional["Client"] = None,
        accept_unsigned_tokens: bool = False,
    ) -> None:
        self._conn = conn
        self._table = _quote(table, "table", qualified=True)
        self._style = paramstyle or _paramstyle(conn)
        self.verifier = _verifier(verifier, client, accept_unsigned_tokens)

    def on(self, conn: Any) -> "FencedMarks":
        """The same marks on another connection (one per thread, or the
        transaction's, so a mark commits with the write it fences)."""
        c = object.__new__(FencedMarks)
        c.__dict__.update(self.__dict__)
        c._conn = conn
        return c

    def create_table(self) -> None:
        """Create the table if it does not exist."""
        cur = self._conn.cursor()
        try:
            cur.execute(f"CREATE TABLE IF NOT EXISTS {self._table} (resource_id VARCHAR(160) PRIMARY KEY, high_water BIGINT NOT NULL)")
        finally:
            cur.close()

    def check(self, resource: str, token: int, signature: Optional[str] = None, access: str = "write") -> Decision:
        """The rule for resource: accepted (and recorded as the new mark)
        when token >= the mark, refused otherwise, in one statement."""
        validate_resource(resource)
        validate_token(token)
        if self.verifier is not None:
            reason = self.verifier.check(resource, token, signature, access)
            if reason is not None:
                return Decision(False, token, self.high_water(resource), reason)
        elif access not in ("write", "read"):
            raise InvalidRequestError(f"fenceview: access is 'write' or 'read', not {access!r}", field="access")
        a = _Args(self._style)
        sql = (
            f"INSERT INTO {self._table} AS m (resource_id, high_water) VALUES ({a.add(resource)}, {a.add(token)}) "
            "ON CONFLICT (resource_id) DO UPDATE SET high_water = excluded.high_water WHERE m.high_water <= excluded.high_water"
        )
        return _decide(self._conn, sql, a, token, lambda: self.high_water(resource))

    def high_water(self, resource: str) -> int:
        """resource's mark, 0 when none."""
        a = _Args(self._style)
        _, row = _execute(self._conn, f"SELECT high_water FROM {self._table} WHERE resource_id = {a.add(resource)}", a)
        return 0 if row is None else _mark(row[0])
