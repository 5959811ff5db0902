package io.fenceview;

import java.net.http.HttpHeaders;
import java.net.http.WebSocket;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One websocket to the server's RPC stream ({@code GET /v1/rpc}), carrying many
 * threads' lock calls: requests go one JSON object a line, those queued while a
 * message is being sent going together as the next one; answers come back as
 * {@code {"id","status","body"}} lines in any order, the body being what the JSON
 * API answers. When the stream breaks every waiting call fails as a call without an
 * answer (status 0), and the next call opens a new stream; but when the server ends it
 * for its service's end ({@link #SERVICE_ENDED}), a waiting call was not taken, and is
 * answered as the server refuses a call it did not do (503 unavailable), which the
 * client sends once more on a new stream.
 */
final class RpcSession implements WebSocket.Listener {
    /** The largest message sent, in chars: well under the server's 1 MiB of bytes. */
    static final int MAX_MESSAGE = 256 << 10;
    /** The most calls waiting for their answers on one stream. */
    static final int MAX_PENDING = 100_000;

    private static final HttpHeaders NO_HEADERS = HttpHeaders.of(Map.of(), (a, b) -> true);

    /** Close code 1012, service restart: with {@link #SERVICE_ENDED}, the server's service ended. */
    static final int SERVICE_RESTART = 1012;
    /**
     * The reason of the close (code 1012) with which the server ends an RPC stream whose
     * service ended, as a cluster leader's does with its term: the same string as the
     * server's wire.ServiceEnded (internal/wire/rpcclose.go). Every request the stream
     * took was answered before that close, so one left without an answer was not taken,
     * changed nothing, and may be sent again on a new stream. The reason is matched
     * exactly: a 1012 from something else on the way (a proxy restarting) says nothing
     * of what the server took.
     */
    static final String SERVICE_ENDED = "the service ended (a cluster leader's term ended); reconnect: requests left unanswered were not taken";

    /** The answer of a call the server's service ended without taking: its refusal of a call it did not do. */
    private static final Map<String, Object> NOT_TAKEN = Map.of(
            "error", "the server's service ended before it read the request; nothing was changed",
            "code", "unavailable");

    private final CompletableFuture<WebSocket> ws;
    private final ConcurrentHashMap<Long, CompletableFuture<FenceviewClient.Answer>> pending = new ConcurrentHashMap<>();
    private final AtomicLong nextId = new AtomicLong();
    private final AtomicLong answered = new AtomicLong();
    private final StringBuilder incoming = new StringBuilder();
    // Guarded by this.
    private final ArrayDeque<String> queue = new ArrayDeque<>();
    private boolean sending;
    private volatile FenceviewException dead;
    // Set with dead when the server closed the stream for its service's end.
    private volatile boolean notTaken;

    RpcSession(FenceviewClient c) {
        ws = c.webSocket("/v1/rpc", this);
        ws.whenComplete((w, err) -> {
            if (err != null) {
                fail(new FenceviewException("fenceview: rpc stream: " + FenceviewClient.unwrap(err), FenceviewClient.unwrap(err)));
            }
        });
    }

    boolean alive() {
        return dead == null;
    }

    /** Completes when the websocket is open; fails when it could not be opened. */
    CompletableFuture<WebSocket> opened() {
        return ws;
    }

    /** Whether the websocket ever opened. */
    boolean wasOpen() {
        return ws.isDone() && !ws.isCompletedExceptionally();
    }

    /** Answers read so far: how a test sees that calls went over the stream. */
    long answered() {
        return answered.get();
    }

    /**
     * Sends op on name (the request's member key: "resource", "name", or null for
     * none) with the fields of body; the answer the JSON API would give.
     */
    CompletableFuture<FenceviewClient.Answer> call(String op, String key, String name, Map<String, Object> body, Duration timeout) {
        if (dead != null) {
            return ended();
        }
        if (pending.size() >= MAX_PENDING) {
            return CompletableFuture.failedFuture(new FenceviewException(0, "fenceview: rpc stream: " + MAX_PENDING + " calls already waiting"));
        }
        long id = nextId.incrementAndGet();
        Map<String, Object> req = new LinkedHashMap<>();
        req.put("id", id);
        req.put("op", op);
        if (key != null) {
            req.put(key, name);
        }
        if (body != null) {
            req.putAll(body);
        }
        CompletableFuture<FenceviewClient.Answer> answer = new CompletableFuture<>();
        pending.put(id, answer);
        if (dead != null && pending.remove(id) != null) {
            // The stream ended after the check above, and its end did not see this call.
            return ended();
        }
        enqueue(Json.write(req));
        return answer.orTimeout(timeout.toMillis(), TimeUnit.MILLISECONDS).whenComplete((a, err) -> {
            pending.remove(id);
        }).exceptionally(err -> {
            Throwable t = FenceviewClient.unwrap(err);
            if (t instanceof TimeoutException) {
                throw new FenceviewException("fenceview: rpc " + op + (name == null ? "" : " " + name) + ": no answer within " + timeout, t);
            }
            throw FenceviewClient.rethrow(t);
        });
    }

    private void enqueue(String line) {
        synchronized (this) {
            queue.add(line);
            if (sending) {
                return; // the send in flight sends it next
            }
            sending = true;
        }
        sendMore();
    }

    /** Sends what is queued as one message, and again once that is sent, until the queue is empty. */
    private void sendMore() {
        String msg;
        synchronized (this) {
            if (queue.isEmpty() || dead != null) {
                sending = false;
                return;
            }
            StringBuilder b = new StringBuilder();
            while (!queue.isEmpty() && (b.length() == 0 || b.length() + queue.peek().length() + 1 <= MAX_MESSAGE)) {
                if (b.length() > 0) {
                    b.append('\n');
                }
                b.append(queue.poll());
            }
            msg = b.toString();
        }
        // One send at a time: the JDK's WebSocket refuses a send while one is in flight.
        ws.thenCompose(w -> w.sendText(msg, true)).whenComplete((w, err) -> {
            if (err != null) {
                fail(new FenceviewException("fenceview: rpc stream: " + FenceviewClient.unwrap(err), FenceviewClient.unwrap(err)));
            } else {
                sendMore();
            }
        });
    }

    @Override
    public void onOpen(WebSocket w) {
        w.request(1);
    }

    @Override
    public CompletionStage<?> onText(WebSocket w, CharSequence data, boolean last) {
        String msg = null;
        synchronized (incoming) {
            incoming.append(data);
            if (incoming.length() > FenceviewClient.MAX_RESPONSE * 64) {
                fail(new FenceviewException(0, "fenceview: rpc stream: a message over " + (FenceviewClient.MAX_RESPONSE * 64) + " chars"));
                return null;
            }
            if (last) {
                msg = incoming.toString();
                incoming.setLength(0);
            }
        }
        if (msg != null) {
            receive(msg);
        }
        w.request(1);
        return null;
    }

    private void receive(String msg) {
        for (String line : msg.split("\n")) {
            if (line.isBlank()) {
                continue;
            }
            Map<String, Object> a;
            try {
                a = Json.parseObject(line);
            } catch (IllegalArgumentException e) {
                fail(new FenceviewException("fenceview: rpc stream: an answer that is not JSON: " + e.getMessage(), e));
                return;
            }
            if (!(a.get("id") instanceof Long) || !(a.get("status") instanceof Long)) {
                continue; // not ours to match: every request this session writes has an id
            }
            CompletableFuture<FenceviewClient.Answer> f = pending.remove((Long) a.get("id"));
            if (f == null) {
                continue; // its caller gave up
            }
            Object body = a.get("body");
            @SuppressWarnings("unchecked")
            Map<String, Object> b = body instanceof Map ? (Map<String, Object>) body : Map.of();
            answered.incrementAndGet();
            int status = (int) (long) (Long) a.get("status");
            f.complete(new FenceviewClient.Answer(status, b, NO_HEADERS));
            if (status == 503 && stopped(b)) {
                // The server stopped serving this connection (shutting down, or a
                // cluster leader's term ended under it): every later call would get the
                // same, so the next one opens a new stream.
                fail(new FenceviewException(0, "fenceview: rpc stream: the server stopped serving this connection"));
                return;
            }
        }
    }

    /** Whether a 503's body says the server stopped serving the stream: unavailable, with no time to come back. */
    static boolean stopped(Map<String, Object> body) {
        return "unavailable".equals(body.get("code")) && body.get("retryAfterMs") == null;
    }

    @Override
    public CompletionStage<?> onClose(WebSocket w, int status, String reason) {
        end(new FenceviewException(0, "fenceview: rpc stream closed (" + status + " " + reason + ")"),
                status == SERVICE_RESTART && SERVICE_ENDED.equals(reason));
        return null;
    }

    @Override
    public void onError(WebSocket w, Throwable err) {
        fail(new FenceviewException("fenceview: rpc stream: " + err, err));
    }

    private static FenceviewClient.Answer notTakenAnswer() {
        return new FenceviewClient.Answer(503, NOT_TAKEN, NO_HEADERS);
    }

    /** What a call on the ended stream gets. */
    private CompletableFuture<FenceviewClient.Answer> ended() {
        return notTaken ? CompletableFuture.completedFuture(notTakenAnswer()) : CompletableFuture.failedFuture(dead);
    }

    /**
     * Ends the stream: every waiting call fails with e, or, when the server closed it for
     * its service's end, is answered as not taken.
     */
    void fail(FenceviewException e) {
        end(e, false);
    }

    private void end(FenceviewException e, boolean serviceEnded) {
        synchronized (this) {
            if (dead != null) {
                return;
            }
            notTaken = serviceEnded;
            dead = e;
            queue.clear();
        }
        List<CompletableFuture<FenceviewClient.Answer>> waiting = new ArrayList<>(pending.values());
        pending.clear();
        for (CompletableFuture<FenceviewClient.Answer> f : waiting) {
            if (notTaken) {
                f.complete(notTakenAnswer());
            } else {
                f.completeExceptionally(e);
            }
        }
        ws.thenAccept(WebSocket::abort);
    }

    void close() {
        fail(new FenceviewException(0, "fenceview: rpc stream closed by the client"));
    }
}
