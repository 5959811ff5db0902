package io.fenceview;

import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.channels.UnresolvedAddressException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Flow;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLContext;

/**
 * The client of a fenceview server: the factory of {@link FencedLock}s, as
 * {@code RedissonClient} is of {@code RFencedLock}s.
 *
 * <pre>{@code
 * try (FenceviewClient fv = FenceviewClient.create("http://127.0.0.1:8080")) {
 *     FencedLock lock = fv.getFencedLock("inventory:42");
 *     Long token = lock.tryLockAndGetToken(100, 30, TimeUnit.SECONDS);
 *     ...
 * }
 * }</pre>
 *
 * <p>One client shares one {@link HttpClient} (keep-alive connections) and one
 * watchdog thread among all its locks; make one per application and server. It is
 * safe for concurrent use. {@link #close()} stops every watchdog; locks still held
 * are left to their leases.
 */
public final class FenceviewClient implements AutoCloseable {
    /** The lease a lock without an explicit lease time asks for, and its watchdog renews. */
    public static final Duration DEFAULT_WATCHDOG_TIMEOUT = Duration.ofSeconds(30);

    /** Responses are read up to this many bytes; a longer one is an error. */
    static final int MAX_RESPONSE = 1 << 20;

    private final List<URI> bases;
    private final AtomicInteger current = new AtomicInteger();
    private final HttpClient http;
    private final String apiKey;
    private final String adminToken;
    private final Duration watchdogTimeout;
    private final Duration requestTimeout;
    private final Duration connectTimeout;
    private final String clientId = UUID.randomUUID().toString();
    final ScheduledExecutorService scheduler;
    final ConcurrentHashMap<Hold.Key, Hold> holds = new ConcurrentHashMap<>();
    private volatile boolean closed;
    private final boolean useRpc;
    private final Duration rpcRetryAfter;
    // Guarded by this: the stream (null until the first call over it) and, after one
    // could not be opened, until when (System.nanoTime) calls go over HTTP.
    private RpcSession rpc;
    private boolean rpcFallback;
    private long rpcUntil;
    private boolean rpcTold;

    private FenceviewClient(Builder b) {
        if (b.urls.isEmpty()) {
            throw new IllegalArgumentException("fenceview: no server URL");
        }
        List<URI> us = new ArrayList<>();
        String path = null;
        for (String s : b.urls) {
            URI u = parseBase(s);
            if (path == null) {
                path = u.getRawPath();
            } else if (!path.equals(u.getRawPath())) {
                throw new IllegalArgumentException("fenceview: cluster URL " + s + " must share the path prefix \"" + path + "\"");
            }
            us.add(u);
        }
        this.bases = Collections.unmodifiableList(us);
        this.apiKey = b.apiKey;
        this.adminToken = b.adminToken;
        if (b.watchdogTimeout.toMillis() < 1 || b.watchdogTimeout.compareTo(Duration.ofHours(24)) > 0) {
            throw new IllegalArgumentException("fenceview: watchdog timeout " + b.watchdogTimeout + ": want 1ms..24h");
        }
        this.watchdogTimeout = b.watchdogTimeout;
        this.useRpc = b.rpc;
        if (b.rpcRetryAfter.isNegative()) {
            throw new IllegalArgumentException("fenceview: rpcRetryAfter " + b.rpcRetryAfter + ": want zero or more");
        }
        this.rpcRetryAfter = b.rpcRetryAfter;
        this.requestTimeout = b.requestTimeout;
        this.connectTimeout = b.connectTimeout;
        HttpClient.Builder hb = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(b.connectTimeout)
                .followRedirects(HttpClient.Redirect.NEVER);
        if (b.sslContext != null) {
            hb.sslContext(b.sslContext);
        }
        if (b.executor != null) {
            hb.executor(b.executor);
        }
        this.http = hb.build();
        ScheduledThreadPoolExecutor s = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "fenceview-watchdog");
            t.setDaemon(true);
            return t;
        });
        s.setRemoveOnCancelPolicy(true);
        this.scheduler = s;
    }

    private static URI parseBase(String s) {
        Objects.requireNonNull(s, "server URL");
        String t = s;
        while (t.endsWith("/")) {
            t = t.substring(0, t.length() - 1);
        }
        URI u;
        try {
            u = URI.create(t);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("fenceview: server URL " + s + ": " + e.getMessage(), e);
        }
        if (!("http".equals(u.getScheme()) || "https".equals(u.getScheme())) || u.getHost() == null
                || u.getRawQuery() != null || u.getRawFragment() != null || u.getRawUserInfo() != null) {
            throw new IllegalArgumentException("fenceview: server URL " + s + ": want http(s)://host[:port][/prefix]");
        }
        return u;
    }

    /** A client of the server at baseUrl (e.g. {@code http://127.0.0.1:8080}) with default settings. */
    public static FenceviewClient create(String baseUrl) {
        return builder().url(baseUrl).build();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Settings of a client; each setter returns this builder. */
    public static final class Builder {
        private final List<String> urls = new ArrayList<>();
        private String apiKey;
        private String adminToken;
        private SSLContext sslContext;
        private java.util.concurrent.Executor executor;
        private Duration watchdogTimeout = DEFAULT_WATCHDOG_TIMEOUT;
        private Duration connectTimeout = Duration.ofSeconds(5);
        private Duration requestTimeout = Duration.ofSeconds(30);
        private boolean rpc = true;
        private Duration rpcRetryAfter = Duration.ofSeconds(30);

        private Builder() {}

        /**
         * Whether locks, fences, semaphores, multi-locks and elections go over one
         * websocket to the server's RPC stream ({@code /v1/rpc}) instead of an HTTP
         * request each (default true). Many threads' calls then share one connection,
         * batched per message, which costs the server about a third of the CPU per call;
         * answers, exceptions, timeouts and Retry-After are the same. Other calls
         * (reports, signing keys, force-unlock) stay on HTTP. When the websocket cannot
         * be opened (a proxy that refuses upgrades, a server without the stream), calls
         * go over HTTP, the {@code io.fenceview} logger hears of it once, and the stream
         * is tried again after {@link #rpcRetryAfter(Duration)}.
         */
        public Builder rpc(boolean on) {
            this.rpc = on;
            return this;
        }

        /** How long calls go over HTTP after the RPC stream could not be opened, before it is tried again (default 30 s). */
        public Builder rpcRetryAfter(Duration d) {
            this.rpcRetryAfter = Objects.requireNonNull(d);
            return this;
        }

        /** The server's base URL, optionally with a path prefix. Several calls add cluster nodes. */
        public Builder url(String url) {
            urls.add(url);
            return this;
        }

        /**
         * The nodes of a fenceview cluster, tried in turn: a call whose connection cannot
         * be made goes at once to the next node, and after any other failure the next
         * call starts there (the Go client's {@code Config.Peers}).
         */
        public Builder urls(String... more) {
            urls.addAll(List.of(more));
            return this;
        }

        /** An API key's secret (or the admin token), sent as {@code Authorization: Bearer} on every call. */
        public Builder apiKey(String secret) {
            this.apiKey = secret;
            return this;
        }

        /** The admin token, sent with admin calls ({@link FencedLock#forceUnlock()}). */
        public Builder adminToken(String token) {
            this.adminToken = token;
            return this;
        }

        /** The TLS context of https URLs (a private CA, a client certificate). */
        public Builder sslContext(SSLContext ctx) {
            this.sslContext = ctx;
            return this;
        }

        /**
         * The executor of the HTTP client's asynchronous work (answers, async
         * completions); default: the JDK HttpClient's own cached pool. A small fixed
         * pool costs less CPU under many concurrent calls.
         */
        public Builder executor(java.util.concurrent.Executor e) {
            this.executor = Objects.requireNonNull(e);
            return this;
        }

        /**
         * The lease of locks taken without a lease time, renewed by the watchdog at a
         * third of it (Redisson's {@code lockWatchdogTimeout}); default 30 s.
         */
        public Builder lockWatchdogTimeout(Duration d) {
            this.watchdogTimeout = Objects.requireNonNull(d);
            return this;
        }

        /** How long a connection may take to open (default 5 s) before the next node is tried. */
        public Builder connectTimeout(Duration d) {
            this.connectTimeout = Objects.requireNonNull(d);
            return this;
        }

        /** The bound of a call that does not wait for a lock (default 30 s). */
        public Builder requestTimeout(Duration d) {
            this.requestTimeout = Objects.requireNonNull(d);
            return this;
        }

        public FenceviewClient build() {
            return new FenceviewClient(this);
        }
    }

    /** The lock on resource (1..160 bytes of UTF-8, no control characters). */
    public FencedLock getFencedLock(String resource) {
        return new FencedLock(this, Ids.resource(resource));
    }

    /**
     * The read-write lock on resource, as Redisson's {@code getReadWriteLock(name)}:
     * {@code readLock()} shared by readers, {@code writeLock()} exclusive.
     */
    public FencedReadWriteLock getReadWriteLock(String resource) {
        return new FencedReadWriteLock(this, Ids.resource(resource));
    }

    /**
     * The semaphore name of permits fenced slots ({@code name#0} .. {@code name#<permits-1>}),
     * as Redisson's {@code getPermitExpirableSemaphore(name)}.
     */
    public FencedSemaphore getSemaphore(String name, int permits) {
        return new FencedSemaphore(this, name, permits, 0);
    }

    /** The multi-lock of resources (1..64, distinct): all taken at once or none, as {@code RedissonMultiLock}. */
    public FencedMultiLock getMultiLock(String... resources) {
        return new FencedMultiLock(this, List.of(resources), 0);
    }

    /** The election name (its lock is the resource name), for a candidate unique to this client. */
    public LeaderElection getLeaderElection(String name) {
        return getLeaderElection(name, clientId);
    }

    /** The election name for candidate (1..80 bytes of UTF-8). */
    public LeaderElection getLeaderElection(String name, String candidate) {
        return new LeaderElection(this, Ids.resource(name, "name"), Ids.holder(candidate, "candidate"));
    }

    /** A relay of a hold's lost future, so that a caller completing or cancelling it cannot touch the hold's own. */
    static CompletableFuture<LeaseLostException> relay(CompletableFuture<LeaseLostException> lost) {
        CompletableFuture<LeaseLostException> f = new CompletableFuture<>();
        lost.whenComplete((e, cancelled) -> {
            if (cancelled != null) {
                f.cancel(false);
            } else {
                f.complete(e);
            }
        });
        return f;
    }

    /** The holder id this client uses for a thread: unique per client and thread. */
    public String holderId(long threadId) {
        return clientId + ":" + threadId;
    }

    Duration watchdogTimeout() {
        return watchdogTimeout;
    }

    boolean isClosed() {
        return closed;
    }

    /**
     * Stops every watchdog and ends this client. Each hold still open sees its lease
     * lost future complete (the server keeps the lock until its lease runs out).
     */
    @Override
    public void close() {
        closed = true;
        synchronized (this) {
            if (rpc != null) {
                rpc.close();
            }
        }
        for (Hold h : new ArrayList<>(holds.values())) {
            h.lose("the client was closed", null);
        }
        scheduler.shutdownNow();
    }

    // ---- calls ----

    /** An answer of the server. */
    static final class Answer {
        final int status;
        final Map<String, Object> body;
        final HttpHeaders headers;

        Answer(int status, Map<String, Object> body, HttpHeaders headers) {
            this.status = status;
            this.body = body;
            this.headers = headers;
        }

        boolean ok() {
            return status == 200 || status == 201;
        }

        /** The server's sentence for people (bounded), for messages only: never matched. */
        String error() {
            Object e = body.get("error");
            String s = e instanceof String ? (String) e : "HTTP " + status;
            return s.length() > 300 ? s.substring(0, 300) + "..." : s;
        }

        /** The typed exception of this error answer to what (see {@link Refusals}). */
        RuntimeException failure(String what) {
            return Refusals.exception(this, Refusals.Op.OTHER, 0, null, what);
        }

        /** The same for a call of kind op on resource. */
        RuntimeException failure(Refusals.Op op, String resource, String what) {
            return Refusals.exception(this, op, 0, resource, what);
        }
    }

    /** Percent-encodes one path segment: every byte but the unreserved ones, dots included. */
    static String segment(String s) {
        StringBuilder b = new StringBuilder();
        for (byte x : s.getBytes(StandardCharsets.UTF_8)) {
            int c = x & 0xff;
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '~') {
                b.append((char) c);
            } else {
                b.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
                        .append(Character.toUpperCase(Character.forDigit(c & 15, 16)));
            }
        }
        return b.toString();
    }

    /** The path of action on the server's object name of kind ("locks", "semaphores", ...); "" for the object. */
    static String path(String kind, String name, String action) {
        return "/v1/" + kind + "/" + segment(name) + (action.isEmpty() ? "" : "/" + action);
    }

    static String lockPath(String resource, String action) {
        return path("locks", resource, action);
    }

    /**
     * Sends a call with the ordinary credential: over the RPC stream when it is on,
     * carries the call and can be opened, else over HTTP.
     */
    CompletableFuture<Answer> call(String method, String path, Map<String, Object> body, Duration timeout) {
        return call(method, path, body, timeout, false);
    }

    private CompletableFuture<Answer> call(String method, String path, Map<String, Object> body, Duration timeout, boolean again) {
        RpcRoute route = useRpc && !closed ? RpcRoute.of(method, path) : null;
        if (route != null) {
            RpcSession s = rpcSession();
            if (s != null) {
                Duration t = timeout == null ? requestTimeout : timeout;
                // A stream still opening when the call's time is up (a cluster node
                // waiting for its leader, a proxy that holds upgrades) lets the call
                // go over HTTP instead of waiting for it.
                return s.opened().copy().orTimeout(t.toMillis(), TimeUnit.MILLISECONDS).handle((w, err) -> {
                    if (err == null) {
                        return overloadRetry(left -> s.call(route.op, route.key, route.name, body, left), t, System.nanoTime() + t.toNanos(), 0)
                                .thenCompose(a -> a.status == 503 && RpcSession.stopped(a.body) && !again
                                        // The server stopped serving the stream and refused the call
                                        // without doing it, or closed the stream for its service's end
                                        // before it took the call: once more, on a new stream.
                                        ? call(method, path, body, timeout, true)
                                        : CompletableFuture.completedFuture(a));
                    }
                    if (!(unwrap(err) instanceof java.util.concurrent.TimeoutException)) {
                        fellBack(s, err);
                    }
                    return call(method, path, body, timeout, apiKey != null ? apiKey : adminToken);
                }).thenCompose(f -> f);
            }
        }
        return call(method, path, body, timeout, apiKey != null ? apiKey : adminToken);
    }

    /** An operation of the RPC stream, read from the route the JSON API has for it. */
    static final class RpcRoute {
        final String op;
        final String key; // "resource", "name", or null (the multi-locks)
        final String name;

        private RpcRoute(String op, String key, String name) {
            this.op = op;
            this.key = key;
            this.name = name;
        }

        /** The operation of method on path, or null when the stream does not carry it. */
        static RpcRoute of(String method, String path) {
            if ("POST".equals(method) && path.equals("/v1/locks/acquire-all")) {
                return new RpcRoute("acquire-all", null, null);
            }
            if ("POST".equals(method) && path.equals("/v1/locks/release-all")) {
                return new RpcRoute("release-all", null, null);
            }
            String[] p = path.split("/", -1); // "", "v1", kind, name[, action]
            if (p.length < 4 || p.length > 5 || !p[1].equals("v1")) {
                return null;
            }
            // The segment's every byte outside the unreserved set is %XX, so decoding is exact.
            String name = java.net.URLDecoder.decode(p[3].replace("+", "%2B"), StandardCharsets.UTF_8);
            String action = p.length == 5 ? p[4] : "";
            String op = ROUTES.get(method + " " + p[2] + " " + action);
            if (op == null) {
                return null;
            }
            return new RpcRoute(op, p[2].equals("locks") || p[2].equals("fence") ? "resource" : "name", name);
        }

        private static final Map<String, String> ROUTES = Map.ofEntries(
                Map.entry("POST locks acquire", "acquire"),
                Map.entry("POST locks renew", "renew"),
                Map.entry("POST locks release", "release"),
                Map.entry("GET locks ", "lock"),
                Map.entry("POST fence ", "fence"),
                Map.entry("POST semaphores acquire", "semaphore-acquire"),
                Map.entry("POST semaphores release", "semaphore-release"),
                Map.entry("GET semaphores ", "semaphore"),
                Map.entry("POST elections campaign", "campaign"),
                Map.entry("POST elections proclaim", "proclaim"),
                Map.entry("POST elections resign", "resign"),
                Map.entry("POST elections renew", "election-renew"),
                Map.entry("GET elections ", "election"));
    }

    private static final System.Logger LOG = System.getLogger("io.fenceview");

    /**
     * A stream that could not be opened: calls go over HTTP until rpcRetryAfter has
     * passed, and the log hears of it once (until a stream opens again). A refusal the
     * JSON API would give too (401, 429, 503) is left to the HTTP call to give.
     */
    private synchronized void fellBack(RpcSession s, Throwable err) {
        Throwable cause = unwrap(err);
        if (cause instanceof java.net.http.WebSocketHandshakeException) {
            int status = ((java.net.http.WebSocketHandshakeException) cause).getResponse().statusCode();
            if (status == 401 || status == 429 || status == 503) {
                return;
            }
        }
        if (rpc == s) {
            rpcUntil = System.nanoTime() + rpcRetryAfter.toNanos();
            rpcFallback = true;
        }
        if (!rpcTold) {
            rpcTold = true;
            LOG.log(System.Logger.Level.WARNING, "fenceview: the RPC stream of " + bases.get(0)
                    + " could not be opened; calls go over the JSON API until it can be (tried again after " + rpcRetryAfter + "): " + cause);
        }
    }

    /** The stream opened last, or null: what a test reads without opening one. */
    synchronized RpcSession rpcIfOpened() {
        return rpc;
    }

    /** The RPC stream, opened anew after the last one broke; null while calls go over HTTP after a failed open. */
    synchronized RpcSession rpcSession() {
        if (rpc != null && rpc.alive()) {
            return rpc;
        }
        if (rpcFallback && System.nanoTime() - rpcUntil < 0) {
            return null;
        }
        if (rpc != null && rpc.wasOpen()) {
            rpcTold = false; // a stream opened since the log last heard
            if (bases.size() > 1) {
                current.incrementAndGet(); // a broken stream: the next node
            }
        }
        rpcFallback = false;
        rpc = new RpcSession(this);
        return rpc;
    }

    /**
     * Opens a websocket to path (with its query) at the current node, with the
     * ordinary credential.
     */
    CompletableFuture<java.net.http.WebSocket> webSocket(String pathAndQuery, java.net.http.WebSocket.Listener listener) {
        if (closed) {
            return CompletableFuture.failedFuture(new FenceviewException(0, "fenceview: the client is closed"));
        }
        URI base = bases.get(Math.floorMod(current.get(), bases.size()));
        String u = base.toString().replaceFirst("^http", "ws") + pathAndQuery;
        java.net.http.WebSocket.Builder b = http.newWebSocketBuilder().connectTimeout(connectTimeout);
        String credential = apiKey != null ? apiKey : adminToken;
        if (credential != null && !credential.isEmpty()) {
            b.header("Authorization", "Bearer " + credential);
        }
        return b.buildAsync(URI.create(u), listener);
    }

    /** Sends an admin call: the admin token, else the API key. */
    CompletableFuture<Answer> admin(String method, String path, Map<String, Object> body) {
        return call(method, path, body, requestTimeout, adminToken != null ? adminToken : apiKey);
    }

    Duration requestTimeout() {
        return requestTimeout;
    }

    private CompletableFuture<Answer> call(String method, String path, Map<String, Object> body, Duration timeout, String credential) {
        if (closed) {
            return CompletableFuture.failedFuture(new FenceviewException(0, "fenceview: the client is closed"));
        }
        String json = body == null ? null : Json.write(body);
        Duration t = timeout == null ? requestTimeout : timeout;
        long deadline = System.nanoTime() + t.toNanos();
        return overloadRetry(left -> attempt(method, path, json, left, credential, 0), t, deadline, 0);
    }

    /** The first wait before retrying a shed call that gave no Retry-After. */
    static final long RETRY_BASE_MS = 50;
    /** The longest wait between two tries of a shed call, Retry-After aside. */
    static final long RETRY_CAP_MS = 5_000;

    /**
     * Sends a call (send, given the time a try may take, over HTTP or the RPC stream)
     * and, while the server sheds it (429; 503 with a Retry-After: nothing was done),
     * tries again after the wait the server asked for or an exponential
     * backoff, whichever is longer, plus up to a quarter more of jitter so that shed
     * callers do not come back in step, as long as the next try can start before
     * deadline. Then the last answer stands (an {@link OverloadedException} for the caller).
     */
    private CompletableFuture<Answer> overloadRetry(java.util.function.Function<Duration, CompletableFuture<Answer>> send,
            Duration timeout, long deadline, int tries) {
        return send.apply(timeout).thenCompose(a -> {
            Duration asked = Refusals.retryAfter(a.body, a.headers);
            boolean shed = a.status == 429 || (a.status == 503 && asked != null);
            if (!shed || closed) {
                return CompletableFuture.completedFuture(a);
            }
            long backoff = Math.min(RETRY_CAP_MS, RETRY_BASE_MS << Math.min(tries, 16));
            long wait = Math.max(asked == null ? 0 : asked.toMillis(), backoff);
            wait += java.util.concurrent.ThreadLocalRandom.current().nextLong(wait / 4 + 1);
            long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (wait >= left) {
                return CompletableFuture.completedFuture(a);
            }
            Duration rest = Duration.ofMillis(left - wait);
            return CompletableFuture.supplyAsync(() -> null, CompletableFuture.delayedExecutor(wait, TimeUnit.MILLISECONDS))
                    .thenCompose(x -> overloadRetry(send, rest.compareTo(timeout) < 0 ? rest : timeout, deadline, tries + 1));
        });
    }

    private CompletableFuture<Answer> attempt(String method, String path, String json, Duration timeout, String credential, int attempt) {
        int at = current.get();
        URI base = bases.get(Math.floorMod(at, bases.size()));
        HttpRequest.Builder rb = HttpRequest.newBuilder(URI.create(base.toString() + path))
                .timeout(timeout)
                .header("Accept", "application/json");
        if (credential != null && !credential.isEmpty()) {
            rb.header("Authorization", "Bearer " + credential);
        }
        if (json != null) {
            rb.header("Content-Type", "application/json");
            rb.method(method, HttpRequest.BodyPublishers.ofString(json, StandardCharsets.UTF_8));
        } else {
            rb.method(method, HttpRequest.BodyPublishers.noBody());
        }
        return http.sendAsync(rb.build(), limited())
                .handle((resp, err) -> {
                    if (err == null) {
                        return CompletableFuture.completedFuture(answer(resp, path));
                    }
                    Throwable cause = unwrap(err);
                    if (bases.size() > 1) {
                        // The next call starts at the next node, whatever failed here.
                        current.compareAndSet(at, at + 1);
                        if (notSent(cause) && attempt + 1 < bases.size()) {
                            return attempt(method, path, json, timeout, credential, attempt + 1);
                        }
                    }
                    return CompletableFuture.<Answer>failedFuture(cause instanceof FenceviewException ? cause
                            : new FenceviewException("fenceview: " + method + " " + path + " at " + base + ": " + cause, cause));
                })
                .thenCompose(f -> f);
    }

    /** Whether a failure certainly happened before the request was sent. */
    private static boolean notSent(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof ConnectException || c instanceof HttpConnectTimeoutException || c instanceof UnresolvedAddressException) {
                return true;
            }
        }
        return false;
    }

    static Throwable unwrap(Throwable t) {
        while ((t instanceof CompletionException || t instanceof java.util.concurrent.ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    private static Answer answer(HttpResponse<byte[]> resp, String path) {
        String text = new String(resp.body(), StandardCharsets.UTF_8);
        Map<String, Object> body;
        if (text.isBlank()) {
            body = Collections.emptyMap();
        } else {
            try {
                body = Json.parseObject(text);
            } catch (IllegalArgumentException e) {
                if (resp.statusCode() == 200) {
                    throw new FenceviewException(200, "fenceview: decoding " + path + " answer: " + e.getMessage());
                }
                // An error page of a proxy: keep the start of it as the message.
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("error", text.strip().substring(0, Math.min(200, text.strip().length())));
                body = m;
            }
        }
        return new Answer(resp.statusCode(), body, resp.headers());
    }

    /** A body handler reading at most MAX_RESPONSE bytes. */
    private static HttpResponse.BodyHandler<byte[]> limited() {
        return info -> new HttpResponse.BodySubscriber<>() {
            private final CompletableFuture<byte[]> result = new CompletableFuture<>();
            private final List<ByteBuffer> parts = new ArrayList<>();
            private Flow.Subscription sub;
            private int size;

            @Override
            public CompletionStage<byte[]> getBody() {
                return result;
            }

            @Override
            public void onSubscribe(Flow.Subscription s) {
                sub = s;
                s.request(Long.MAX_VALUE);
            }

            @Override
            public void onNext(List<ByteBuffer> items) {
                for (ByteBuffer b : items) {
                    size += b.remaining();
                    if (size > MAX_RESPONSE) {
                        sub.cancel();
                        result.completeExceptionally(new IOException("fenceview: response over " + MAX_RESPONSE + " bytes"));
                        return;
                    }
                    parts.add(b);
                }
            }

            @Override
            public void onError(Throwable t) {
                result.completeExceptionally(t);
            }

            @Override
            public void onComplete() {
                byte[] out = new byte[size];
                int off = 0;
                for (ByteBuffer b : parts) {
                    int n = b.remaining();
                    b.get(out, off, n);
                    off += n;
                }
                result.complete(out);
            }
        };
    }

    /** Waits for a call made by a blocking method, keeping the thread's interrupt. */
    static <T> T await(CompletableFuture<T> f) {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return f.get();
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (java.util.concurrent.ExecutionException e) {
                    throw rethrow(e.getCause());
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    static RuntimeException rethrow(Throwable t) {
        t = unwrap(t);
        if (t instanceof RuntimeException) {
            return (RuntimeException) t;
        }
        if (t instanceof Error) {
            throw (Error) t;
        }
        return new FenceviewException("fenceview: " + t, t);
    }

    // ---- server-wide calls ----

    /** The lock's state as the server sees it ({@code GET /v1/locks/{resource}}). */
    public LockState getLockState(String resource) {
        Answer a = await(call("GET", lockPath(Ids.resource(resource), ""), null, null));
        if (!a.ok()) {
            throw a.failure("lock state of " + resource);
        }
        return LockState.of(a.body);
    }

    /**
     * Presents a token to the server's own guard ({@code POST /v1/fence/{resource}}):
     * accepted when it is at least the resource's high-water mark, which it then becomes.
     */
    public Decision fence(FencingToken token) {
        Map<String, Object> in = new LinkedHashMap<>();
        in.put("token", token.number());
        if (!token.signature().isEmpty()) {
            in.put("signature", token.signature());
        }
        if (!token.issuer().isEmpty()) {
            in.put("issuer", token.issuer());
        }
        if (!token.scope().isEmpty()) {
            in.put("scope", token.scope());
        }
        if (token.shared()) {
            in.put("access", "read"); // a reader's token fences reads
        }
        Answer a = await(call("POST", "/v1/fence/" + segment(token.resource()), in, null));
        if (a.ok()) {
            return Decision.accept(token.number());
        }
        if (a.status == 409) {
            // A refused fence is a decision, not an error: its code is its reason.
            String reason = Refusals.code(a.status, a.body, Refusals.Op.FENCE, 0);
            return new Decision(false, reason, token.number(), Json.lng(a.body, "required"));
        }
        throw a.failure(Refusals.Op.FENCE, token.resource(), "fence " + token.resource());
    }

    /**
     * Reports a guard's decision to the server ({@code POST /v1/decisions}) so it shows
     * in the rejection history, the dashboard and the event stream.
     *
     * @param signature the token's signature as the guard received it ("" if none):
     *                  a valid one proves the token was issued
     */
    public void report(String resource, Decision d, String source, String signature) {
        Map<String, Object> dec = new LinkedHashMap<>();
        dec.put("resourceId", Ids.resource(resource));
        dec.put("token", Ids.token(d.presented()));
        dec.put("accepted", d.accepted());
        if (d.required() > 0) {
            dec.put("required", d.required());
        }
        if (d.reason() != null && !d.reason().isEmpty()) {
            dec.put("reason", d.reason());
        }
        dec.put("source", source == null ? "" : source);
        if (signature != null && !signature.isEmpty()) {
            dec.put("signature", signature);
        }
        Map<String, Object> in = new LinkedHashMap<>();
        in.put("decisions", List.of(dec));
        Answer a = await(call("POST", "/v1/decisions", in, null));
        if (!a.ok()) {
            throw a.failure("report a decision on " + resource);
        }
    }

    /** {@code GET /v1/signing-keys}: the body, for {@link TokenVerifier}. */
    Map<String, Object> signingKeys() {
        Answer a = await(call("GET", "/v1/signing-keys", null, null));
        if (!a.ok()) {
            throw a.failure("signing keys");
        }
        return a.body;
    }
}
