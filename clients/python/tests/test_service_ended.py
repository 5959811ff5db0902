"""A stream closed with 1012 under a call, through fronts of the server that
close the first stream once it has read the call, without answering or
passing it on, and relay later streams to the server."""

import unittest

import fenceview

from .helpers import ADMIN, ENDED_URL, RESTARTED_URL, URL, client, unique


@unittest.skipUnless(URL and ADMIN and ENDED_URL and RESTARTED_URL, "FENCEVIEW_ENDED_URL not set: run through go test ./clients/python")
class AStreamClosedUnderACall(unittest.TestCase):
    def test_for_the_end_of_the_service_the_call_is_sent_again_on_a_new_stream(self) -> None:
        # The server's reason (a cluster leader's term ended): the call was not taken.
        r = unique("service-ended")
        with fenceview.Client(ENDED_URL, key=ADMIN) as c, client(rpc=False) as direct:
            lock = c.lock(r, holder="h", renew=False)
            self.assertTrue(lock.acquire(blocking=False))
            self.assertEqual(direct.lock_state(r).token, lock.token)
            lock.release()

    def test_for_another_reason_the_call_is_not_sent_again(self) -> None:
        # A 1012 from something on the way (a proxy restarting) says nothing of what the server took.
        r = unique("restarted")
        with fenceview.Client(RESTARTED_URL, key=ADMIN) as c:
            with self.assertRaises(fenceview.UnreachableError) as cm:
                c.lock(r, holder="h", renew=False).acquire(blocking=False)
            self.assertIn("1012", str(cm.exception))
