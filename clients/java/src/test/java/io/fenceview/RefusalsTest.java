package io.fenceview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.http.HttpHeaders;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Error answers to typed exceptions: by code, never by the English text; by status from servers without codes. */
class RefusalsTest {
    private static FenceviewClient.Answer answer(int status, String json, String... headers) {
        Map<String, List<String>> h = new java.util.HashMap<>();
        for (int i = 0; i + 1 < headers.length; i += 2) {
            h.put(headers[i], List.of(headers[i + 1]));
        }
        return new FenceviewClient.Answer(status, Json.parseObject(json), HttpHeaders.of(h, (a, b) -> true));
    }

    private static RuntimeException map(int status, String json, Refusals.Op op, String... headers) {
        return Refusals.exception(answer(status, json, headers), op, 0, "r", "call r");
    }

    /** The code of any exception the mapping gives. */
    private static String code(RuntimeException e) {
        if (e instanceof FenceviewException) {
            return ((FenceviewException) e).getCode();
        }
        if (e instanceof LockOwnershipException) {
            return ((LockOwnershipException) e).getCode();
        }
        return ((FencedOutException) e).getCode();
    }

    @Test
    void everyCodeHasItsClass() {
        Object[][] cases = {
            {409, "lock-held", LockHeldException.class},
            {409, "no-permit", LockHeldException.class},
            {409, "lock-delay", LockDelayException.class},
            {409, "lease-expired", LeaseExpiredException.class},
            {409, "not-owner", NotOwnerException.class},
            {409, "not-held", NotHeldException.class},
            {409, "not-leader", NotLeaderException.class},
            {409, "permits-mismatch", PermitsMismatchException.class},
            {409, "stale-token", FencedOutException.class},
            {409, "superseded", FencedOutException.class},
            {409, "bad-signature", FencedOutException.class},
            {409, "unissued-token", FencedOutException.class},
            {409, "foreign-issuer", FencedOutException.class},
            {409, "scope-mismatch", FencedOutException.class},
            {429, "overloaded", OverloadedException.class},
            {429, "limit", OverloadedException.class},
            {503, "limit", OverloadedException.class},
            {503, "unavailable", FenceviewException.class},
            {400, "invalid-request", InvalidRequestException.class},
            {400, "unknown-field", InvalidRequestException.class},
            {400, "invalid-token", InvalidRequestException.class},
            {413, "too-large", InvalidRequestException.class},
            {401, "unauthenticated", AccessDeniedException.class},
            {403, "forbidden", AccessDeniedException.class},
            {404, "not-found", NotFoundException.class},
            {405, "method-not-allowed", FenceviewException.class},
            {500, "internal", FenceviewException.class},
            {409, "a-code-from-the-future", FenceviewException.class},
        };
        for (Object[] c : cases) {
            for (Refusals.Op op : Refusals.Op.values()) {
                // The error text says something else: only the code counts.
                RuntimeException e = map((int) c[0], "{\"error\":\"lock held\",\"code\":\"" + c[1] + "\",\"availableAt\":\"2030-01-01T00:00:00.000Z\"}", op);
                assertEquals(c[2], e.getClass(), c[1] + " on " + op);
                assertEquals(c[1], code(e), c[1] + " on " + op);
            }
        }
    }

    @Test
    void refusalsCarryTheirFields() {
        LockHeldException held = (LockHeldException) map(409,
                "{\"error\":\"x\",\"code\":\"lock-held\",\"holder\":\"h1\",\"expiresAt\":\"2030-01-01T00:00:00.000Z\"}", Refusals.Op.ACQUIRE);
        assertEquals("h1", held.holder());
        assertEquals(Instant.parse("2030-01-01T00:00:00Z"), held.expiresAt());
        LockDelayException delay = (LockDelayException) map(409,
                "{\"error\":\"x\",\"code\":\"lock-delay\",\"availableAt\":\"2030-01-01T00:00:05.000Z\"}", Refusals.Op.ACQUIRE);
        assertEquals(Instant.parse("2030-01-01T00:00:05Z"), delay.availableAt());
        assertEquals(3, ((PermitsMismatchException) map(409, "{\"code\":\"permits-mismatch\",\"permits\":3}", Refusals.Op.ACQUIRE)).permits());
        FencedOutException out = (FencedOutException) map(409,
                "{\"code\":\"superseded\",\"reason\":\"superseded\",\"presented\":7,\"required\":9}", Refusals.Op.OTHER);
        assertEquals(new Decision(false, "superseded", 7, 9), out.decision());
        assertEquals("r", out.resource());
        OverloadedException over = (OverloadedException) map(429, "{\"code\":\"overloaded\",\"retryAfterMs\":250}",
                Refusals.Op.OTHER, "Retry-After", "1");
        assertEquals(Duration.ofMillis(250), over.retryAfter(), "the body's milliseconds beat the header's seconds");
        assertTrue(over.isTemporary());
        assertEquals("lease", ((InvalidRequestException) map(400, "{\"code\":\"unknown-field\",\"field\":\"lease\"}", Refusals.Op.OTHER)).field());
        LeaseExpiredException expired = (LeaseExpiredException) map(409, "{\"code\":\"lease-expired\"}", Refusals.Op.OWNERSHIP);
        assertInstanceOf(IllegalMonitorStateException.class, expired, "Lock.unlock's promise");
        assertEquals("r", expired.resource());
        assertEquals(409, expired.status());
    }

    /** A server without codes: the status decides, and for a 409 what was asked and the answer's fields. */
    @Test
    void serversWithoutCodesAreReadByStatus() {
        assertEquals("lock-held", code(map(409, "{\"error\":\"not lock owner\"}", Refusals.Op.ACQUIRE)));
        assertInstanceOf(LockDelayException.class, map(409, "{\"error\":\"?\",\"availableAt\":\"2030-01-01T00:00:05.000Z\"}", Refusals.Op.ACQUIRE));
        FenceviewClient.Answer full = answer(409, "{\"error\":\"?\",\"permits\":4}");
        FenceviewClient.Answer other = answer(409, "{\"error\":\"?\",\"permits\":2}");
        assertEquals("no-permit", code(Refusals.exception(full, Refusals.Op.ACQUIRE, 4, "s", "acquire")));
        PermitsMismatchException pm = (PermitsMismatchException) Refusals.exception(other, Refusals.Op.ACQUIRE, 4, "s", "acquire");
        assertEquals(2, pm.permits());
        // A refused release: not-owner, not-held or lease-expired, the status cannot say which.
        RuntimeException release = map(409, "{\"error\":\"lease expired\"}", Refusals.Op.OWNERSHIP);
        assertEquals(LockOwnershipException.class, release.getClass());
        assertNull(code(release));
        assertEquals(new Decision(false, "bad-signature", 0, 3),
                ((FencedOutException) map(409, "{\"reason\":\"bad-signature\",\"required\":3}", Refusals.Op.FENCE)).decision());
        assertEquals("stale-token", code(map(409, "{\"reason\":\"no such reason\"}", Refusals.Op.FENCE)));
        assertEquals(FenceviewException.class, map(409, "{\"error\":\"lock held\"}", Refusals.Op.OTHER).getClass());
        Object[][] byStatus = {
            {400, InvalidRequestException.class, "invalid-request"},
            {413, InvalidRequestException.class, "too-large"},
            {401, AccessDeniedException.class, "unauthenticated"},
            {403, AccessDeniedException.class, "forbidden"},
            {404, NotFoundException.class, "not-found"},
            {429, OverloadedException.class, "overloaded"},
            {500, FenceviewException.class, "internal"},
            {503, FenceviewException.class, "unavailable"},
            {502, FenceviewException.class, null},
        };
        for (Object[] c : byStatus) {
            RuntimeException e = map((int) c[0], "{\"error\":\"lock held\"}", Refusals.Op.ACQUIRE);
            assertEquals(c[1], e.getClass(), "status " + c[0]);
            assertEquals(c[2], code(e), "status " + c[0]);
        }
        assertTrue(((FenceviewException) map(502, "{}", Refusals.Op.OTHER)).isTemporary());
        assertFalse(((FenceviewException) map(400, "{}", Refusals.Op.OTHER)).isTemporary());
    }

    @Test
    void malformedCodesAreIgnored() {
        for (String bad : new String[] {"\"Lock-Held\"", "\"lock held\"", "5", "\"\"", "\"" + "a".repeat(65) + "\"", "\"-x\""}) {
            RuntimeException e = map(409, "{\"code\":" + bad + "}", Refusals.Op.ACQUIRE);
            assertEquals("lock-held", code(e), bad);
        }
    }

    @Test
    void busyIsHeldDelayedOrNoPermit() {
        assertTrue(Refusals.busy(answer(409, "{\"code\":\"lock-held\"}"), 0));
        assertTrue(Refusals.busy(answer(409, "{\"code\":\"lock-delay\"}"), 0));
        assertTrue(Refusals.busy(answer(409, "{\"code\":\"no-permit\"}"), 3));
        assertTrue(Refusals.busy(answer(409, "{\"error\":\"anything\"}"), 0), "an old server's refused acquire");
        assertFalse(Refusals.busy(answer(409, "{\"code\":\"permits-mismatch\"}"), 3));
        assertFalse(Refusals.busy(answer(409, "{\"permits\":2}"), 3));
        assertFalse(Refusals.busy(answer(429, "{\"code\":\"lock-held\"}"), 0), "only a 409 is a refusal to wait on");
    }

    @Test
    void retryAfterIsBounded() {
        assertEquals(Duration.ofSeconds(2), Refusals.retryAfter(Map.of(), HttpHeaders.of(Map.of("Retry-After", List.of("2")), (a, b) -> true)));
        assertEquals(Refusals.MAX_RETRY_AFTER, Refusals.retryAfter(Map.of("retryAfterMs", Long.MAX_VALUE), null));
        assertEquals(Refusals.MAX_RETRY_AFTER, Refusals.retryAfter(Map.of(), HttpHeaders.of(Map.of("Retry-After", List.of("999999999")), (a, b) -> true)));
        for (String bad : new String[] {"-1", "1.5", "Wed, 21 Oct 2015 07:28:00 GMT", "", "9999999999"}) {
            assertNull(Refusals.retryAfter(Map.of(), HttpHeaders.of(Map.of("Retry-After", List.of(bad)), (a, b) -> true)), bad);
        }
        assertNull(Refusals.retryAfter(Map.of("retryAfterMs", -5L), null));
    }
}
