package io.fenceview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/**
 * What the tests run against, from system properties the Go driver
 * (clients/java/java_test.go) sets: a real fenceview server with auth on, a
 * client key, the admin token, and JDBC URLs of real databases. Without them the
 * tests are skipped (the driver fails on any skipped test).
 */
final class Env {
    private Env() {}

    static String prop(String name) {
        String v = System.getProperty("fenceview." + name);
        assumeTrue(v != null && !v.isEmpty(), "system property fenceview." + name + " not set (run through go test ./clients/java)");
        return v;
    }

    static String url() {
        return prop("url");
    }

    /** A client with the client-role key and a short watchdog lease. */
    static FenceviewClient client(Duration watchdog) {
        return FenceviewClient.builder().url(url()).apiKey(prop("key")).adminToken(prop("admin"))
                .lockWatchdogTimeout(watchdog).build();
    }

    static FenceviewClient client() {
        return client(Duration.ofSeconds(30));
    }

    /** A resource id no other test uses. */
    static String resource(String name) {
        return "java-" + name + "-" + UUID.randomUUID();
    }

    /** An http URL on a loopback port nothing listens on (taken, then given back). */
    static String deadUrl() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return "http://127.0.0.1:" + s.getLocalPort();
        }
    }

    /** An admin call to the server, answering status and body. */
    static Map.Entry<Integer, Map<String, Object>> admin(String method, String path) throws IOException, InterruptedException {
        HttpRequest req = HttpRequest.newBuilder(URI.create(url() + path))
                .header("Authorization", "Bearer " + prop("admin"))
                .method(method, HttpRequest.BodyPublishers.noBody()).build();
        HttpResponse<String> r = HttpClient.newHttpClient().send(req, HttpResponse.BodyHandlers.ofString());
        return Map.entry(r.statusCode(), r.body().isBlank() ? Map.of() : Json.parseObject(r.body()));
    }

    /** A lock's state as the admin API answers it. */
    static Map<String, Object> lockState(String r) throws IOException, InterruptedException {
        return admin("GET", "/v1/locks/" + FenceviewClient.segment(r)).getValue();
    }

    /** Force-expires the lease on r as an admin, without telling its holder. */
    static void forceExpire(String r) throws IOException, InterruptedException {
        var expired = admin("POST", "/v1/locks/" + FenceviewClient.segment(r) + "/expire");
        assertEquals(200, expired.getKey(), "force-expire: " + expired.getValue());
    }

    /** Polls probe until it is true; the deadline only turns a hang into a failure. */
    static void until(String what, Callable<Boolean> probe) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!probe.call()) {
            assertTrue(System.nanoTime() < deadline, "gave up waiting for " + what);
            Thread.onSpinWait();
        }
    }

    /** Waits, by the server's own state, until someone waits on resource r. */
    static void awaitWaiter(String r) throws Exception {
        until("a waiter on " + r, () -> lockState(r).get("waiters") instanceof Long w && w > 0);
    }
}
