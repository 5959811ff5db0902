package io.fenceview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * Input the client refuses before sending is the {@link InvalidRequestException} the
 * server would answer: status 400, its code and the field at fault. No server is
 * needed: nothing is sent.
 */
class InputRefusalTest {
    private static void refused(String code, String field, Executable call) {
        InvalidRequestException e = assertThrows(InvalidRequestException.class, call);
        assertEquals(400, e.status());
        assertEquals(code, e.getCode());
        assertEquals(field, e.field());
        assertFalse(e.isTemporary());
    }

    @Test
    void everyInputTheClientChecksIsRefusedAsTheServerWould() throws Exception {
        try (FenceviewClient c = FenceviewClient.create(Env.deadUrl())) {
            refused("invalid-request", "candidate", () -> c.getLeaderElection("e", "h".repeat(100)));
            refused("invalid-request", "name", () -> c.getLeaderElection("x".repeat(161)));
            refused("invalid-request", "resource", () -> c.getFencedLock("x".repeat(161)));
            refused("invalid-token", "token", () -> new FencingToken("r", -3, "", "", "", ""));
            refused("invalid-request", "permits", () -> c.getSemaphore("jobs", 0));
            refused("invalid-request", "name", () -> c.getSemaphore("a#b", 2));
            refused("invalid-request", "resources", () -> c.getMultiLock("a", "a"));
            refused("invalid-request", "lockDelayMs", () -> c.getFencedLock("r").withLockDelay(Duration.ofSeconds(61)));
            refused("invalid-request", "value", () -> c.getLeaderElection("e").campaign("v".repeat(5000)));
        }
    }
}
