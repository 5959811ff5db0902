"""A call the server shed (429 overloaded; 503 with Retry-After for calls
that may be sent twice) is sent again after the wait the server asked for,
plus jitter, within the call's deadline. Against small real servers (HTTP,
and a websocket for the RPC stream) that shed a given number of times
before they answer: fenceview sheds only under real overload."""

import http.server
import json
import threading
import unittest
from typing import Any, Dict, List

import fenceview

from .helpers import Served, WSServer, answer_calls

LOCK_STATE = {"resourceId": "x", "locked": False, "holder": None, "holdCount": 0, "token": 0, "expiresAt": None, "remainingMs": 0}


class Plan:
    def __init__(self, shed: int, status: int, body: Dict[str, Any], headers: Dict[str, str]) -> None:
        self.shed, self.status, self.body, self.headers = shed, status, body, headers
        self.seen = 0
        self.mu = threading.Lock()

    def answer(self) -> Any:
        with self.mu:
            self.seen += 1
            if self.seen <= self.shed:
                return self.status, self.body, self.headers
        return 200, LOCK_STATE, {}


def http_server(plan: Plan) -> Served:
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.headers.get("Upgrade"):
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status, body, hdrs = plan.answer()
            data = json.dumps(body).encode()
            self.send_response(status)
            for k, v in hdrs.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Served(H)


def rpc_server(plan: Plan) -> WSServer:
    def answer(q: Dict[str, Any]) -> Dict[str, Any]:
        status, body, _ = plan.answer()
        return {"id": q["id"], "status": status, "body": body}

    return WSServer(lambda conn, path, hdrs: answer_calls(conn, answer))


class Shedding:
    rpc = True

    def client(self, plan: Plan, **kw: Any) -> fenceview.Client:
        srv = rpc_server(plan) if self.rpc else http_server(plan)
        self.addCleanup(srv.close)
        c = fenceview.Client(srv.url, rpc=self.rpc, **kw)
        self.addCleanup(c.close)
        self.waits: List[float] = []

        def sleep(s: float) -> bool:
            self.waits.append(s)
            return False

        c._sleep = sleep
        return c

    def test_overloaded_twice_then_answered(self) -> None:
        plan = Plan(2, 429, {"error": "shed", "code": "overloaded", "retryAfterMs": 1000}, {"Retry-After": "1"})
        c = self.client(plan)
        self.assertEqual(c.lock_state("x").resource_id, "x")
        self.assertEqual(plan.seen, 3)
        self.assertEqual(len(self.waits), 2)
        for w in self.waits:
            self.assertGreaterEqual(w, 1.0)  # the server's wait ...
            self.assertLessEqual(w, 1.5)  # ... plus up to half of it in jitter

    def test_without_retry_after_the_backoff_doubles(self) -> None:
        plan = Plan(3, 429, {"error": "shed", "code": "overloaded"}, {})
        c = self.client(plan)
        c.lock_state("x")
        self.assertEqual(len(self.waits), 3)
        for i, w in enumerate(self.waits):
            self.assertGreaterEqual(w, 0.05 * 2**i)
            self.assertLessEqual(w, 0.075 * 2**i)

    def test_a_wait_past_the_deadline_raises_the_servers_answer(self) -> None:
        plan = Plan(1, 429, {"error": "shed", "code": "overloaded", "retryAfterMs": 5000}, {"Retry-After": "5"})
        c = self.client(plan, timeout=1.0)
        with self.assertRaises(fenceview.OverloadedError) as cm:
            c.lock_state("x")
        self.assertEqual(cm.exception.retry_after, 5.0)
        self.assertEqual(cm.exception.status, 429)
        self.assertEqual(self.waits, [], "waited past the deadline")
        self.assertEqual(plan.seen, 1)

    def test_unavailable_is_retried_for_calls_that_may_be_sent_twice(self) -> None:
        plan = Plan(1, 503, {"error": "no leader", "code": "unavailable", "retryAfterMs": 200}, {"Retry-After": "1"})
        c = self.client(plan)
        c.lock_state("x")  # a read: sent again
        self.assertEqual(plan.seen, 2)

    def test_a_limit_is_not_retried(self) -> None:
        plan = Plan(1, 429, {"error": "too many waiters", "code": "limit"}, {})
        c = self.client(plan)
        with self.assertRaises(fenceview.LimitError):
            c.lock_state("x")
        self.assertEqual(plan.seen, 1)

    def test_at_most_eight_sends(self) -> None:
        plan = Plan(100, 429, {"error": "shed", "code": "overloaded", "retryAfterMs": 0}, {"Retry-After": "0"})
        c = self.client(plan)
        with self.assertRaises(fenceview.OverloadedError):
            c.lock_state("x")
        self.assertEqual(plan.seen, 8)


class SheddingOverRPC(Shedding, unittest.TestCase):
    rpc = True


class SheddingOverJSON(Shedding, unittest.TestCase):
    rpc = False
