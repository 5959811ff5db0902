package io.fenceview;

import java.net.URLEncoder;
import java.net.http.WebSocket;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * One candidate of an election, in the shape of etcd's {@code concurrency.Election}:
 * the leader is the holder of the lock {@code name}, and its term is that lock's
 * token, so a leader fences its writes with its term and a deposed leader's writes
 * are refused by every guard. Campaigns go through the lock's wait queue, first come
 * first served; a watchdog renews the leadership until {@link #resign()}, and
 * {@link #leaseLost()} completes the moment it is lost.
 */
public final class LeaderElection extends Named {
    /** The longest value a leader may proclaim, in bytes of UTF-8. */
    public static final int MAX_VALUE = 4096;

    private final String candidate;

    LeaderElection(FenceviewClient c, String name, String candidate) {
        super(c, "elections", name);
        this.candidate = candidate;
    }

    public String getCandidate() {
        return candidate;
    }

    private Hold.Key key() {
        return new Hold.Key(name, 0, "election:" + candidate);
    }

    private static String checkValue(String value) {
        String v = value == null ? "" : value;
        if (v.getBytes(StandardCharsets.UTF_8).length > MAX_VALUE) {
            throw InvalidRequestException.beforeSending("value", "an election value is at most " + MAX_VALUE + " bytes");
        }
        return v;
    }

    // ---- campaigning ----

    /** Blocks until elected and returns the term; the watchdog renews the leadership. */
    public long campaign(String value) {
        return FenceviewClient.await(campaignAsync(value, -1, -1, null));
    }

    /** Waits up to waitTime to be elected; the term, or null when another still leads. */
    public Long tryCampaign(String value, long waitTime, TimeUnit unit) {
        return Waiting.tryAwait(campaignAsync(value, Waiting.waitMs(waitTime, unit), -1, null));
    }

    /**
     * As {@link #tryCampaign}, with a fixed lease (leaseTime, not renewed; -1 for the
     * watchdog), and a refusal is a {@link LockHeldException} whose holder is the leader.
     */
    public long tryCampaignOrThrow(String value, long waitTime, long leaseTime, TimeUnit unit) {
        FenceviewClient.Answer[] refusal = new FenceviewClient.Answer[1];
        Long t = Waiting.tryAwait(campaignAsync(value, Waiting.waitMs(waitTime, unit), Waiting.lease(leaseTime, unit), refusal));
        if (t == null) {
            throw refusal[0] == null ? new FenceviewException(0, "fenceview: campaign in " + name + " gave up")
                    : Refusals.held(refusal[0], 0, name);
        }
        return t;
    }

    /** Completes with the term once elected. Campaigning while leading keeps the term and sets the value. */
    public CompletableFuture<Long> campaignAsync(String value) {
        return campaignAsync(value, -1, -1, null);
    }

    private CompletableFuture<Long> campaignAsync(String value, long waitMs, long leaseMs, FenceviewClient.Answer[] refusal) {
        String v = checkValue(value);
        boolean renewing = leaseMs < 0;
        long lease = renewing ? c.watchdogTimeout().toMillis() : leaseMs;
        return Waiting.run(c, "campaign in " + name, waitMs, chunk -> {
            Map<String, Object> in = new LinkedHashMap<>();
            in.put("candidate", candidate);
            in.put("value", v);
            in.put("leaseMs", lease);
            in.put("waitMs", chunk);
            return c.call("POST", path("campaign"), in, c.requestTimeout().plusMillis(chunk));
        }, (a, sent) -> elected(a, lease, renewing, sent), a -> resignQuietly(), refusal, 0);
    }

    private long elected(FenceviewClient.Answer a, long lease, boolean renewing, long sent) {
        Leader l = Leader.of(Json.obj(a.body, "leader"));
        FencingToken t = FencingToken.ofGrant(name, a.body);
        Hold[] created = new Hold[1];
        Hold h = c.holds.compute(key(), (k, old) -> {
            if (old != null && !old.ended) {
                return old;
            }
            created[0] = new Hold(c, k, candidate, lease, renewing, (ms, timeout) -> {
                Map<String, Object> in = new LinkedHashMap<>();
                in.put("candidate", candidate);
                in.put("leaseMs", ms);
                return c.call("POST", path("renew"), in, timeout);
            });
            return created[0];
        });
        h.granted(t, 1);
        if (created[0] != null) {
            h.begin(sent);
        }
        return l.term();
    }

    private void resignQuietly() {
        Map<String, Object> in = new LinkedHashMap<>();
        in.put("candidate", candidate);
        c.call("POST", path("resign"), in, null);
    }

    /**
     * Changes the leader's value, same term.
     *
     * @throws IllegalMonitorStateException when this candidate does not lead
     */
    public Leader proclaim(String value) {
        Map<String, Object> in = new LinkedHashMap<>();
        in.put("candidate", candidate);
        in.put("value", checkValue(value));
        FenceviewClient.Answer a = FenceviewClient.await(c.call("POST", path("proclaim"), in, null));
        if (!a.ok()) {
            throw a.failure(Refusals.Op.OWNERSHIP, name, candidate + " proclaims in " + name);
        }
        return Leader.of(Json.obj(a.body, "leader"));
    }

    /**
     * Gives up the leadership (every hold of the election's lock); the watchdog stops.
     * After this candidate's lease was lost it returns quietly, as
     * {@link FencedLock#unlock()} does: someone else may lead by now, nothing is given
     * up, and {@link #leaseLost()} (completed, here if not before) already said so.
     *
     * @throws IllegalMonitorStateException (a {@link NotLeaderException}) when this
     *                                      candidate did not lead: it never won, or
     *                                      resigned already
     */
    public void resign() {
        Hold h = c.holds.get(key());
        if (h != null && h.isLost()) {
            h.unlockLost();
            return;
        }
        if (h != null) {
            h.releasing(true);
        }
        Map<String, Object> in = new LinkedHashMap<>();
        in.put("candidate", candidate);
        FenceviewClient.Answer a;
        try {
            a = FenceviewClient.await(c.call("POST", path("resign"), in, null));
        } catch (RuntimeException e) {
            if (h != null) {
                h.releasing(false);
            }
            throw e;
        }
        if (a.ok()) {
            if (h != null) {
                h.finish();
            }
            return;
        }
        RuntimeException refused = a.failure(Refusals.Op.OWNERSHIP, name, candidate + " resigns from " + name);
        if (h != null) {
            if (refused instanceof LockOwnershipException) {
                // The client counted this candidate as the leader: its lease was lost,
                // and this is where the client learns it.
                h.lose("resign refused: " + refused.getMessage(), refused);
                if (h.isLost()) {
                    h.unlockLost();
                    return;
                }
            } else {
                h.releasing(false);
            }
        }
        throw refused;
    }

    // ---- state ----

    /** Who leads now (asks the server); empty when nobody does. */
    public Optional<Leader> leader() {
        FenceviewClient.Answer a = FenceviewClient.await(c.call("GET", path(""), null, null));
        if (!a.ok()) {
            throw a.failure("election " + name);
        }
        Map<String, Object> l = Json.obj(a.body, "leader");
        return l.isEmpty() ? Optional.empty() : Optional.of(Leader.of(l));
    }

    /** Whether this candidate leads, as far as the client knows. */
    public boolean isLeader() {
        Hold h = c.holds.get(key());
        return h != null && !h.ended;
    }

    /** The term of this candidate's leadership (its fencing token), null when it does not lead. */
    public Long getTerm() {
        FencingToken t = getFencingToken();
        return t == null ? null : t.number();
    }

    public FencingToken getFencingToken() {
        Hold h = c.holds.get(key());
        return h == null || h.ended ? null : h.token();
    }

    /** Completes the moment the leadership is found lost; cancelled after a resign; already cancelled when not leading. */
    public CompletableFuture<LeaseLostException> leaseLost() {
        Hold h = c.holds.get(key());
        if (h == null) {
            CompletableFuture<LeaseLostException> f = new CompletableFuture<>();
            f.cancel(false);
            return f;
        }
        return FenceviewClient.relay(h.lost);
    }

    // ---- observing ----

    /**
     * Follows the election's leader changes, as etcd's {@code Observe}: listener gets
     * the leader at the time (empty when nobody leads), then a leader at every new term
     * and every proclaimed value, and empty when the leader resigns or its lease runs
     * out, in order, on one thread of its own. It follows the event stream
     * ({@code /v1/events?resource=<name>}) and, when the stream breaks, resumes after the
     * last event seen, so no change is skipped. Close the observation to stop.
     */
    public Observation observe(Consumer<Optional<Leader>> listener) {
        Observation o = new Observation(listener);
        o.exec.execute(o::connect);
        return o;
    }

    /** A running {@link #observe}; {@link #close()} stops it. */
    public final class Observation implements AutoCloseable {
        private final Consumer<Optional<Leader>> listener;
        private final ExecutorService exec = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "fenceview-observe-" + name);
            t.setDaemon(true);
            return t;
        });
        private volatile boolean closed;
        private volatile WebSocket ws;
        // Read and written on exec only.
        private Leader cur;
        private boolean sent;
        private long seq;
        private long backoffMs = 100;

        private Observation(Consumer<Optional<Leader>> listener) {
            this.listener = listener;
        }

        private void run(Runnable r) {
            try {
                exec.execute(r);
            } catch (RejectedExecutionException e) {
                // closed
            }
        }

        private void connect() {
            if (closed || c.isClosed()) {
                return;
            }
            String q = "/v1/events?resource=" + URLEncoder.encode(name, StandardCharsets.UTF_8) + (seq > 0 ? "&since=" + seq : "");
            Listener l = new Listener();
            c.webSocket(q, l).whenComplete((w, err) -> {
                if (err != null) {
                    retry();
                } else {
                    ws = w;
                    if (closed) {
                        w.abort();
                    }
                }
            });
        }

        private void retry() {
            if (closed || c.isClosed()) {
                return;
            }
            long ms = backoffMs;
            backoffMs = Math.min(2 * backoffMs, 5_000);
            try {
                c.scheduler.schedule(() -> run(this::connect), ms, TimeUnit.MILLISECONDS);
            } catch (RejectedExecutionException e) {
                // the client is closing
            }
        }

        /** Subscribed: with no event seen yet, the leader is asked now (a change after the answer comes on the stream). */
        private void opened() {
            backoffMs = 100;
            if (seq != 0) {
                return;
            }
            Optional<Leader> l;
            try {
                l = leader();
            } catch (RuntimeException e) {
                WebSocket w = ws;
                if (w != null) {
                    w.abort();
                }
                return;
            }
            if (!sent || !l.map(x -> x.same(cur)).orElse(cur == null)) {
                send(l.orElse(null));
            }
        }

        private void send(Leader l) {
            cur = l;
            sent = true;
            if (!closed) {
                listener.accept(Optional.ofNullable(l));
            }
        }

        private void event(String text) {
            Map<String, Object> e;
            try {
                e = Json.parseObject(text);
            } catch (IllegalArgumentException bad) {
                return;
            }
            long s = Json.lng(e, "seq");
            if (s > seq) {
                seq = s;
            }
            if (!name.equals(Json.str(e, "resourceId"))) {
                return;
            }
            long term = cur == null ? 0 : cur.term();
            long token = Json.lng(e, "token");
            String type = Json.str(e, "type");
            String value = java.util.Objects.requireNonNullElse(Json.str(e, "value"), "");
            if ("grant".equals(type) || "proclaim".equals(type)) {
                if (token > term) {
                    send(new Leader(Json.str(e, "holder"), value, token, Json.instant(e, "at"), null));
                } else if ("proclaim".equals(type) && cur != null && token == term && !value.equals(cur.value())) {
                    send(new Leader(cur.candidate(), value, term, cur.since(), cur.expiresAt()));
                }
            } else if (("release".equals(type) || "expire".equals(type)) && cur != null && token >= term) {
                send(null);
            }
        }

        /** Stops the observation: no more calls of the listener after this returns, but one already running. */
        @Override
        public void close() {
            closed = true;
            WebSocket w = ws;
            if (w != null) {
                w.abort();
            }
            exec.shutdownNow();
        }

        private final class Listener implements WebSocket.Listener {
            private final StringBuilder part = new StringBuilder();

            @Override
            public void onOpen(WebSocket w) {
                run(Observation.this::opened);
                w.request(1);
            }

            @Override
            public CompletionStage<?> onText(WebSocket w, CharSequence data, boolean last) {
                part.append(data);
                if (part.length() > FenceviewClient.MAX_RESPONSE) {
                    w.abort();
                    return null;
                }
                if (last) {
                    String text = part.toString();
                    part.setLength(0);
                    run(() -> event(text));
                }
                w.request(1);
                return null;
            }

            @Override
            public CompletionStage<?> onClose(WebSocket w, int status, String reason) {
                run(Observation.this::retry);
                return null;
            }

            @Override
            public void onError(WebSocket w, Throwable error) {
                run(Observation.this::retry);
            }
        }
    }
}
