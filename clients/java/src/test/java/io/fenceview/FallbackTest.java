package io.fenceview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The RPC stream is the default, and behind a proxy that refuses websocket upgrades
 * every call goes over HTTP instead, said once in the log.
 */
class FallbackTest {
    /**
     * A proxy in front of the real server that answers every websocket upgrade 400, as
     * a proxy without websocket support does, and passes everything else on.
     */
    static final class RefusingProxy implements AutoCloseable {
        final AtomicInteger refused = new AtomicInteger();
        final AtomicInteger calls = new AtomicInteger();
        private final HttpServer server;
        private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        private final String backend;

        RefusingProxy(String backend) throws IOException {
            this.backend = backend;
            server = HttpServer.create(new InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 0), 0);
            server.createContext("/", this::handle);
            server.start();
        }

        String url() {
            return "http://127.0.0.1:" + server.getAddress().getPort();
        }

        private void handle(HttpExchange ex) throws IOException {
            try (ex) {
                if ("websocket".equalsIgnoreCase(ex.getRequestHeaders().getFirst("Upgrade"))) {
                    refused.incrementAndGet();
                    byte[] no = "websocket upgrades are not supported here".getBytes(java.nio.charset.StandardCharsets.UTF_8);
                    ex.sendResponseHeaders(400, no.length);
                    ex.getResponseBody().write(no);
                    return;
                }
                calls.incrementAndGet();
                byte[] body;
                try (InputStream in = ex.getRequestBody()) {
                    body = in.readAllBytes();
                }
                HttpRequest.Builder rb = HttpRequest.newBuilder(URI.create(backend + ex.getRequestURI().getRawPath()
                        + (ex.getRequestURI().getRawQuery() == null ? "" : "?" + ex.getRequestURI().getRawQuery())));
                for (String h : List.of("Authorization", "Content-Type", "Accept")) {
                    String v = ex.getRequestHeaders().getFirst(h);
                    if (v != null) {
                        rb.header(h, v);
                    }
                }
                rb.method(ex.getRequestMethod(), body.length == 0 ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body));
                HttpResponse<byte[]> r;
                try {
                    r = http.send(rb.build(), HttpResponse.BodyHandlers.ofByteArray());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException(e);
                }
                for (String h : List.of("Content-Type", "Retry-After")) {
                    r.headers().firstValue(h).ifPresent(v -> ex.getResponseHeaders().set(h, v));
                }
                ex.sendResponseHeaders(r.statusCode(), r.body().length == 0 ? -1 : r.body().length);
                try (OutputStream out = ex.getResponseBody()) {
                    out.write(r.body());
                }
            }
        }

        @Override
        public void close() {
            server.stop(0);
        }
    }

    /** The io.fenceview logger's records while a test runs. */
    private final List<LogRecord> logged = new ArrayList<>();
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord r) {
            synchronized (logged) {
                logged.add(r);
            }
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    };
    private RefusingProxy proxy;

    @BeforeEach
    void setUp() throws IOException {
        Logger.getLogger("io.fenceview").addHandler(handler);
        proxy = new RefusingProxy(Env.url());
    }

    @AfterEach
    void tearDown() {
        Logger.getLogger("io.fenceview").removeHandler(handler);
        proxy.close();
    }

    private int warnings() {
        synchronized (logged) {
            return (int) logged.stream().filter(r -> r.getMessage().contains("RPC stream")).count();
        }
    }

    /** A lock, a fence, a refusal, a permit, a multi-lock and an election: each operation of the stream. */
    private static void everyPrimitive(FenceviewClient c) {
        String r = Env.resource("fallback");
        FencedLock lock = c.getFencedLock(r);
        Long token = lock.tryLockAndGetToken(0, 60, TimeUnit.SECONDS);
        assertNotNull(token);
        assertTrue(c.fence(lock.getFencingToken()).accepted());
        try (FenceviewClient other = FenceviewClient.builder().url(Env.url()).apiKey(Env.prop("key")).build()) {
            assertEquals("lock-held", assertThrows(LockHeldException.class,
                    () -> other.getFencedLock(r).tryAcquire(0, -1, TimeUnit.SECONDS)).getCode());
        }
        assertEquals((long) token, c.getLockState(r).token());
        lock.unlock();
        FencedSemaphore sem = c.getSemaphore(Env.resource("fallback-sem"), 2);
        sem.release(sem.tryAcquire());
        FencedMultiLock multi = c.getMultiLock(Env.resource("fallback-x"), Env.resource("fallback-y"));
        assertEquals(2, multi.tryLockAndGetTokens().size());
        multi.unlock();
        LeaderElection e = c.getLeaderElection(Env.resource("fallback-election"));
        assertTrue(e.campaign("v") > 0);
        e.resign();
    }

    private FenceviewClient behindProxy(FenceviewClient.Builder b) {
        return b.url(proxy.url()).apiKey(Env.prop("key")).build();
    }

    @Test
    void theStreamIsTheDefault() {
        try (FenceviewClient c = Env.client()) {
            everyPrimitive(c);
            assertNotNull(c.rpcIfOpened(), "a stream was opened");
            assertTrue(c.rpcIfOpened().answered() >= 10, "the calls went over the stream: " + c.rpcIfOpened().answered());
        }
        try (FenceviewClient c = behindProxy(FenceviewClient.builder().rpc(false))) {
            everyPrimitive(c);
            assertNull(c.rpcIfOpened(), "rpc(false) opens no stream");
            assertEquals(0, proxy.refused.get(), "rpc(false) asks for no upgrade");
        }
    }

    @Test
    void aRefusedUpgradeFallsBackToHttpAndSaysSoOnce() {
        try (FenceviewClient c = behindProxy(FenceviewClient.builder().rpcRetryAfter(Duration.ofDays(1)))) {
            everyPrimitive(c);
            everyPrimitive(c);
            assertEquals(1, proxy.refused.get(), "one upgrade asked for, then HTTP until rpcRetryAfter");
            assertTrue(proxy.calls.get() >= 20, "the calls went over HTTP: " + proxy.calls.get());
            assertEquals(1, warnings(), "said once: " + logged);
        }
    }

    @Test
    void theStreamIsTriedAgainAfterRpcRetryAfter() {
        try (FenceviewClient c = behindProxy(FenceviewClient.builder().rpcRetryAfter(Duration.ZERO))) {
            everyPrimitive(c);
            int asked = proxy.refused.get();
            assertTrue(asked >= 10, "each call asked for the stream again: " + asked);
            assertEquals(1, warnings(), "said once: " + logged);
            Map<String, Object> keys = c.signingKeys();
            assertNotNull(keys.get("keys"));
            assertEquals(asked, proxy.refused.get(), "the calls the stream does not carry ask for no upgrade");
        }
    }
}
