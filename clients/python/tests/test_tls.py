"""HTTPS and WSS with the server's CA, and the client certificate a server
with --tls-client-ca requires."""

import ssl
import unittest

import fenceview

from .helpers import TLS_CA, TLS_CLIENT_CERT, TLS_CLIENT_KEY, TLS_URL, unique


@unittest.skipUnless(TLS_URL and TLS_CA and TLS_CLIENT_CERT and TLS_CLIENT_KEY, "FENCEVIEW_TLS_URL not set: run through go test ./clients/python")
class TLS(unittest.TestCase):
    def context(self, with_cert: bool = True) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=TLS_CA)
        if with_cert:
            ctx.load_cert_chain(TLS_CLIENT_CERT, TLS_CLIENT_KEY)  # type: ignore[arg-type]
        return ctx

    def test_locks_over_wss_and_https(self) -> None:
        for rpc in (True, False):
            with fenceview.Client(TLS_URL, tls=self.context(), rpc=rpc) as c:  # type: ignore[arg-type]
                r = unique("tls")
                with c.lock(r, holder="h") as lock:
                    self.assertTrue(c.fence(r, lock.token).accepted)
                self.assertEqual(c.uses_rpc, rpc)

    def test_no_client_certificate_no_answer(self) -> None:
        with fenceview.Client(TLS_URL, tls=self.context(with_cert=False), rpc=False) as c:  # type: ignore[arg-type]
            with self.assertRaises(fenceview.UnreachableError):
                c.lock_state("x")

    def test_an_unknown_ca_is_refused(self) -> None:
        with fenceview.Client(TLS_URL, rpc=False) as c:  # type: ignore[arg-type]
            with self.assertRaises(fenceview.UnreachableError) as cm:
                c.lock_state("x")
            self.assertIn("CERTIFICATE", str(cm.exception).upper())
