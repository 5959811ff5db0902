"""Signed tokens: 64-byte carriers and 0x02 batch carriers over
"fenceview/batch/v2 <size> <root>", the shared leaf message, and a verifier
that names the package it needs when cryptography is missing.

The batches here are built by an RFC 9162 tree written in this file, apart
from the client's verifier, and signed with cryptography's Ed25519."""

import base64
import hashlib
import os
import subprocess
import sys
import unittest
from typing import List, Optional, Sequence, Tuple

import fenceview

from .helpers import OneClient, need_server, unique

try:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
except ImportError:  # the Go test requires it; run alone, say so
    Ed25519PrivateKey = None  # type: ignore[misc,assignment]

need_crypto = unittest.skipIf(Ed25519PrivateKey is None, "cryptography is not installed (apt-get install python3-cryptography)")


def b64(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def msg(resource: str, token: int, shared: bool = False) -> bytes:
    return f"fenceview/v1 {resource} {token}{' shared' if shared else ''}".encode()


def leaf(m: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + m).digest()


def mth(leaves: Sequence[bytes]) -> bytes:
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return hashlib.sha256(b"\x01" + mth(leaves[:k]) + mth(leaves[k:])).digest()


def path(m: int, leaves: Sequence[bytes]) -> List[bytes]:
    if len(leaves) == 1:
        return []
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    if m < k:
        return path(m, leaves[:k]) + [mth(leaves[k:])]
    return path(m - k, leaves[k:]) + [mth(leaves[:k])]


class Key:
    def __init__(self) -> None:
        self.priv = Ed25519PrivateKey.generate()
        self.public = b64(self.priv.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))

    def sign(self, resource: str, token: int, shared: bool = False) -> str:
        return b64(self.priv.sign(msg(resource, token, shared)))

    def batch(self, grants: Sequence[Tuple[str, int, bool]], tag: int = 2) -> List[str]:
        leaves = [leaf(msg(*g)) for g in grants]
        root = mth(leaves)
        n = len(grants)
        signed = f"fenceview/batch/v2 {n} {root.hex()}" if tag == 2 else f"fenceview/batch/v1 {root.hex()}"
        sig = self.priv.sign(signed.encode())
        return [b64(bytes([tag]) + sig + i.to_bytes(4, "big") + n.to_bytes(4, "big") + b"".join(path(i, leaves))) for i in range(n)]


def tamper(carrier: str, change) -> str:  # type: ignore[no-untyped-def]
    raw = bytearray(base64.urlsafe_b64decode(carrier + "=" * (-len(carrier) % 4)))
    out = change(raw)
    return b64(bytes(out if out is not None else raw))


@need_crypto
class Carriers(unittest.TestCase):
    def setUp(self) -> None:
        self.key = Key()
        self.v = fenceview.Verifier.from_keys([self.key.public])

    def test_every_grant_of_batches_of_one_to_nine(self) -> None:
        for n in range(1, 10):
            grants = [(f"orders:{i % 3}", 10 + i, False) for i in range(n)]
            for (r, t, _), c in zip(grants, self.key.batch(grants)):
                self.assertTrue(self.v.verify(r, t, c), (n, r, t))
                self.assertFalse(self.v.verify(r, t + 1, c))
                self.assertFalse(self.v.verify(r + "x", t, c))

    def test_a_batch_costs_one_verification_and_a_new_signature_another(self) -> None:
        grants = [(f"r{i}", i + 1, False) for i in range(8)]
        cs = self.key.batch(grants)
        before = self.v.verifications
        for (r, t, _), c in zip(grants, cs):
            self.assertTrue(self.v.verify(r, t, c))
        self.assertEqual(self.v.verifications - before, 1)
        forged = tamper(cs[0], lambda b: b.__setitem__(5, b[5] ^ 1))
        self.assertFalse(self.v.verify("r0", 1, forged), "a cache by root alone accepts any signature")

    def test_tampered_carriers_are_refused(self) -> None:
        grants = [("orders", 10, False), ("orders", 11, False), ("заказ 42 α", 12, False), ("billing", 13, False), ("orders x", 14, False)]
        cs = self.key.batch(grants)
        third = cs[2]
        self.assertTrue(self.v.verify("заказ 42 α", 12, third))
        bad = {
            "a flipped path byte": tamper(third, lambda b: b.__setitem__(80, b[80] ^ 1)),
            "another index": tamper(third, lambda b: b.__setitem__(68, 3)),
            "a path one hash short": tamper(third, lambda b: b[:-32]),
            "a path one hash long": tamper(third, lambda b: b + b"\0" * 32),
            "a flipped signature byte": tamper(third, lambda b: b.__setitem__(5, b[5] ^ 1)),
            "size 0": tamper(third, lambda b: b.__setitem__(72, 0)),
            "size rewritten": tamper(third, lambda b: b.__setitem__(72, 6)),
            "index = size": tamper(third, lambda b: b.__setitem__(68, 5)),
            "a sibling's proof": cs[3],
            "padded": third + "==",
            "not base64url": third[:-1] + "+",
            "the 0x01 carrier": self.key.batch(grants, tag=1)[2],
            "0x01 over the v2 message": tamper(third, lambda b: b.__setitem__(0, 1)),
            "empty": "",
        }
        for name, c in bad.items():
            self.assertFalse(self.v.verify("заказ 42 α", 12, c), name)
        self.assertFalse(self.v.verify("заказ 42 α", 12, None))
        self.assertFalse(fenceview.Verifier.from_keys([Key().public]).verify("заказ 42 α", 12, third), "another key")

    def test_the_64_byte_carrier(self) -> None:
        s = self.key.sign("orders:42", 7)
        self.assertTrue(self.v.verify("orders:42", 7, s))
        self.assertFalse(self.v.verify("orders:42", 8, s))
        non_canonical = s[:-1] + chr(ord(s[-1]) + 1)
        self.assertFalse(self.v.verify("orders:42", 7, non_canonical))

    def test_a_shared_token_reads_but_never_writes(self) -> None:
        shared = self.key.sign("orders:42", 7, shared=True)
        self.assertIsNone(self.v.check("orders:42", 7, shared, access="read"))
        self.assertEqual(self.v.check("orders:42", 7, shared, access="write"), "shared-token")
        exclusive = self.key.sign("orders:42", 7)
        self.assertIsNone(self.v.check("orders:42", 7, exclusive, access="read"))
        self.assertIsNone(self.v.check("orders:42", 7, exclusive, access="write"))
        grants = [("orders:42", 7, True), ("orders:43", 8, False), ("orders:42", 7, False)]
        cs = self.key.batch(grants)
        self.assertEqual(self.v.check("orders:42", 7, cs[0], access="write"), "shared-token")
        self.assertIsNone(self.v.check("orders:42", 7, cs[0], access="read"))
        self.assertIsNone(self.v.check("orders:42", 7, cs[2], access="write"))
        self.assertEqual(self.v.check("orders:42", 7, cs[1], access="read"), "bad-signature")

    def test_bad_keys_are_refused(self) -> None:
        with self.assertRaises(fenceview.InvalidRequestError):
            fenceview.Verifier.from_keys(["not a key"])


@need_server
@need_crypto
class ServerGrants(OneClient, unittest.TestCase):
    def test_a_real_grant_verifies_and_follows_rotation(self) -> None:
        v = self.c.verifier()
        r = unique("signed")
        with self.c.lock(r, holder="h") as lock:
            self.assertTrue(v.verify(r, lock.token, lock.signature))
            self.assertFalse(v.verify(r, lock.token + 1, lock.signature))
        self.c._plain("POST", "/v1/signing-keys", ok=(201,))
        with self.c.lock(r, holder="h") as lock:
            self.assertTrue(v.verify(r, lock.token, lock.signature), "a new key's grant: the verifier fetches the keys again")

    def test_a_read_locks_grant_is_refused_for_a_write(self) -> None:
        v = self.c.verifier()
        r = unique("shared-signed")
        with self.c.read_lock(r, holder="reader") as lock:
            self.assertTrue(v.verify(r, lock.token, lock.signature, access="read"))
            self.assertEqual(v.check(r, lock.token, lock.signature, access="write"), "shared-token")


class WithoutCryptography(unittest.TestCase):
    def test_a_verifying_guard_refuses_to_start_and_names_the_package(self) -> None:
        src = os.path.join(os.path.dirname(__file__), "..", "src")
        code = """
import sqlite3, sys
sys.modules['cryptography'] = None  # as if it were not installed
import fenceview
c = fenceview.Client('http://127.0.0.1:1')
for make in (lambda: fenceview.Verifier.from_keys([]), lambda: c.fenced_table(sqlite3.connect(':memory:'), 'inventory', key='id')):
    try:
        make()
        print('started')
    except fenceview.MissingDependencyError as e:
        print('refused:', e)
t = c.fenced_table(sqlite3.connect(':memory:'), 'inventory', key='id', accept_unsigned_tokens=True)
print('unsigned:', t.verifier)
"""
        out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": src}, capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertEqual(len(lines), 3, out.stdout)
        for ln in lines[:2]:
            self.assertTrue(ln.startswith("refused:"), ln)
            self.assertIn("cryptography", ln)
            self.assertIn("python3-cryptography", ln)
        self.assertEqual(lines[2], "unsigned: None")
