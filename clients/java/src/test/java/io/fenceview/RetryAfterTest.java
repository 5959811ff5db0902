package io.fenceview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Shed calls (429, 503 with Retry-After) are tried again as the server asks, within the caller's deadline. */
class RetryAfterTest {
    private HttpServer server;
    /** The answers still to give, in order; after them, 200 with a free lock. */
    private final Deque<Object[]> script = new ArrayDeque<>();
    private int calls;

    @BeforeEach
    void setUp() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", this::answer);
        server.start();
    }

    @AfterEach
    void tearDown() {
        server.stop(0);
    }

    private void answer(HttpExchange ex) throws IOException {
        Object[] next;
        synchronized (this) {
            calls++;
            next = script.isEmpty() ? new Object[] {200, "{\"resourceId\":\"x\",\"locked\":false,\"token\":7}", null} : script.poll();
        }
        byte[] b = ((String) next[1]).getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        if (next[2] != null) {
            ex.getResponseHeaders().set("Retry-After", (String) next[2]);
        }
        ex.sendResponseHeaders((int) next[0], b.length);
        ex.getResponseBody().write(b);
        ex.close();
    }

    private synchronized int calls() {
        return calls;
    }

    private FenceviewClient client(Duration requestTimeout) {
        return FenceviewClient.builder().url("http://127.0.0.1:" + server.getAddress().getPort()).rpc(false).requestTimeout(requestTimeout).build();
    }

    private static Object[] overloaded(long retryAfterMs) {
        return new Object[] {429, "{\"error\":\"shed\",\"code\":\"overloaded\",\"retryAfterMs\":" + retryAfterMs + "}", "1"};
    }

    @Test
    void twoShedAnswersThenTheCallSucceeds() {
        script.addAll(List.of(overloaded(20), overloaded(20)));
        try (FenceviewClient c = client(Duration.ofSeconds(30))) {
            assertEquals(7, c.getLockState("x").token());
        }
        assertEquals(3, calls(), "two shed tries and the good one");
    }

    @Test
    void unavailableWithRetryAfterIsTriedAgainButWithoutItIsNot() {
        script.add(new Object[] {503, "{\"error\":\"no leader\",\"code\":\"unavailable\"}", "0"});
        try (FenceviewClient c = client(Duration.ofSeconds(30))) {
            assertEquals(7, c.getLockState("x").token());
            assertEquals(2, calls());
            script.add(new Object[] {503, "{\"error\":\"down\"}", null});
            FenceviewException e = assertThrows(FenceviewException.class, () -> c.getLockState("x"));
            assertEquals("unavailable", e.getCode());
            assertEquals(3, calls(), "no Retry-After: no second try");
        }
    }

    /** A Retry-After beyond the caller's deadline: no wait, the refusal at once. */
    @Test
    void aWaitPastTheDeadlineGivesUp() {
        script.add(overloaded(60_000));
        try (FenceviewClient c = client(Duration.ofSeconds(5))) {
            OverloadedException e = assertThrows(OverloadedException.class, () -> c.getLockState("x"));
            assertEquals(Duration.ofMinutes(1), e.retryAfter());
            assertEquals("overloaded", e.getCode());
            assertTrue(e.isTemporary());
        }
        assertEquals(1, calls());
    }

    /** An old server's 429 without a body's retryAfterMs: the header's seconds count. */
    @Test
    void theHeaderAloneIsHonoured() {
        script.add(new Object[] {429, "{\"error\":\"slow down\"}", "30"});
        try (FenceviewClient c = client(Duration.ofSeconds(2))) {
            OverloadedException e = assertThrows(OverloadedException.class, () -> c.getLockState("x"));
            assertEquals(Duration.ofSeconds(30), e.retryAfter());
        }
        assertEquals(1, calls(), "30 s does not fit in a 2 s deadline");
    }
}
