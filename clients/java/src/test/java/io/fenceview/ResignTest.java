package io.fenceview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * One rule in every client: a second resign is refused as a second unlock is, by the
 * server (409 {@code not-leader}); so is a resign of a leadership never won.
 */
class ResignTest {
    @Test
    void aSecondResignIsNotLeader() {
        for (boolean rpc : new boolean[] {false, true}) {
            try (FenceviewClient c = FenceviewClient.builder().url(Env.url()).apiKey(Env.prop("key")).rpc(rpc).build()) {
                LeaderElection e = c.getLeaderElection(Env.resource("resign"));
                NotLeaderException never = assertThrows(NotLeaderException.class, e::resign);
                assertEquals("not-leader", never.getCode());
                assertTrue(e.campaign("v") > 0);
                e.resign();
                NotLeaderException twice = assertThrows(NotLeaderException.class, e::resign, "rpc " + rpc);
                assertEquals("not-leader", twice.getCode());
                assertEquals(409, twice.status());
            }
        }
    }
}
