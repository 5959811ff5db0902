"""One error class per refusal code, chosen by the code alone."""

import os
import unittest

import fenceview
from fenceview._errors import FENCE_REASONS


class Codes(unittest.TestCase):
    def test_every_code_of_the_server_has_its_class(self) -> None:
        # The Go test passes the server's own list (internal/httpapi's Codes).
        listed = os.environ.get("FENCEVIEW_CODES")
        if not listed:
            self.skipTest("FENCEVIEW_CODES not set: run through go test ./clients/python")
        for pair in listed.split(","):
            code, status = pair.split("=")
            cls = fenceview.ERROR_CLASSES.get(code)
            self.assertIsNotNone(cls, f"no error class for {code}")
            assert cls is not None
            self.assertEqual(cls.code, code)
            self.assertIn(cls.__name__, fenceview.__all__)
            e = fenceview.error_for(int(status), {"error": "x", "code": code})
            self.assertIs(type(e), cls)
            self.assertEqual((e.code, e.status), (code, int(status)))
            self.assertIsInstance(e, fenceview.FenceviewError)

    def test_shared_token_is_a_fence_reason(self) -> None:
        self.assertIn("shared-token", FENCE_REASONS)
        self.assertIs(type(fenceview.error_for(409, {"code": "shared-token"})), fenceview.SharedTokenError)

    def test_families(self) -> None:
        self.assertTrue(issubclass(fenceview.LeaseExpiredError, fenceview.NotHeldError))
        self.assertTrue(issubclass(fenceview.NotOwnerError, fenceview.NotHeldError))
        self.assertTrue(issubclass(fenceview.NotLeaderError, fenceview.NotHeldError))
        self.assertTrue(issubclass(fenceview.LockDelayError, fenceview.LockHeldError))
        self.assertTrue(issubclass(fenceview.NoPermitError, fenceview.LockHeldError))
        self.assertTrue(issubclass(fenceview.UnknownFieldError, fenceview.InvalidRequestError))
        self.assertTrue(issubclass(fenceview.StaleTokenError, fenceview.FenceRefusedError))
        self.assertTrue(issubclass(fenceview.UnreachableError, ConnectionError))

    def test_extra_fields_and_unknown_codes(self) -> None:
        e = fenceview.error_for(409, {"error": "held", "code": "lock-held", "holder": "a", "expiresAt": "t"})
        self.assertEqual((e.holder, e.expires_at), ("a", "t"))
        e = fenceview.error_for(400, {"error": "bad", "code": "unknown-field", "field": "lease"})
        self.assertEqual(e.field, "lease")
        e = fenceview.error_for(429, {"code": "overloaded", "retryAfterMs": 1500})
        self.assertEqual(e.retry_after, 1.5)
        e = fenceview.error_for(409, {"code": "a-newer-code"})
        self.assertIs(type(e), fenceview.FenceviewError)
        self.assertEqual(e.code, "a-newer-code")
        # A body without a code (a proxy's page) is read by its status.
        self.assertIs(type(fenceview.error_for(503, "<html>")), fenceview.UnavailableError)
        self.assertIs(type(fenceview.error_for(409, {}, conflict="not-held")), fenceview.NotHeldError)
