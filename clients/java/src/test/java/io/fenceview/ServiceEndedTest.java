package io.fenceview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * A stream closed under a call with code 1012, through fronts of the test server
 * (servertest.ClosingFronts, started by clients/java/java_test.go) that close the first
 * stream once it has read the call, without answering or passing it on, and relay later
 * streams to the server.
 */
class ServiceEndedTest {
    private static FenceviewClient client(String front) {
        return FenceviewClient.builder().url(Env.prop(front)).apiKey(Env.prop("key")).rpc(true).build();
    }

    /** Closed with the server's reason for its service's end (a leader's term): the call was not taken, and is sent again on a new stream. */
    @Test
    void aCallLeftByAnEndedServiceIsSentAgain() throws Exception {
        String r = Env.resource("service-ended");
        try (FenceviewClient c = client("ended.url")) {
            FencedLock lock = c.getFencedLock(r);
            Long token = lock.tryLockAndGetToken();
            assertNotNull(token, "granted on the second stream");
            assertEquals(token, Env.lockState(r).get("token"));
            assertEquals(1, c.rpcIfOpened().answered(), "the grant came over the new stream");
            lock.unlock();
        }
    }

    /** Closed with 1012 for another reason (a proxy restarting): nothing says the call was not taken, so it is not sent again. */
    @Test
    void aCallLeftByAnotherRestartIsNotSentAgain() {
        String r = Env.resource("restarted");
        try (FenceviewClient c = client("restarted.url")) {
            FenceviewException e = assertThrows(FenceviewException.class, () -> c.getFencedLock(r).tryLockAndGetToken());
            assertEquals(0, e.status(), "no answer: " + e);
            assertTrue(e.getMessage().contains("1012"), e.getMessage());
        }
    }
}
