"""fenceview: fenced locks for Python.

A lock whose holder pauses (a GC pause, a stalled VM, a retried Airflow task
whose first attempt is still alive) can lose its lease while it still thinks
it holds the lock. fenceview hands out a fencing token with every grant, and
the resource refuses writes whose token is older than one it has seen::

    import fenceview

    c = fenceview.Client("http://127.0.0.1:8080")
    with c.lock("orders:42", holder="worker-7") as lock:
        d = c.fence("orders:42", lock.token)   # or a guard where the data is
        if not d.accepted:
            ...                                 # d.reason: "stale-token"

Standard library only; signature checks use ``cryptography`` when installed.
"""

from ._client import Client, Decision, LockState, validate_holder, validate_resource, validate_token
from ._errors import *  # noqa: F401,F403  (the error classes, one per refusal code)
from ._errors import ERROR_CLASSES, FenceviewError, error_for
from ._events import EventStream
from ._locks import Lease, Lock, MultiLock
from ._primitives import Election, Permit, Semaphore
from ._sql import FencedMarks, FencedTable
from ._verify import Verifier

__version__ = "0.1.0"

from . import _errors as _e

__all__ = [
    "Client", "Decision", "LockState", "Lease", "Lock", "MultiLock", "Semaphore", "Permit", "Election",
    "Verifier", "EventStream", "FencedTable", "FencedMarks", "validate_resource", "validate_holder", "validate_token",
    *_e.__all__,
]
