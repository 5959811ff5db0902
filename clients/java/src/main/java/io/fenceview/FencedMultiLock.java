package io.fenceview;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * Several locks taken in one atomic change or not at all, in the shape of Redisson's
 * {@code RedissonMultiLock}, fenced: every lock's grant takes its own new token
 * ({@link #getTokens()}), and one watchdog renews them together. A waiting multi-lock
 * holds none of its locks while it waits (the server grants all at once when all are
 * free), so two multi-locks can never deadlock.
 *
 * <p>Ownership is per thread, as {@link FencedLock}'s; {@link #leaseLost()} completes
 * when any of the leases is lost.
 */
public final class FencedMultiLock implements Lock {
    /** The most locks one multi-lock takes. */
    public static final int MAX_LOCKS = 64;

    private final FenceviewClient c;
    private final List<String> resources;
    private final long lockDelayMs;

    FencedMultiLock(FenceviewClient c, List<String> resources, long lockDelayMs) {
        if (resources.isEmpty() || resources.size() > MAX_LOCKS) {
            throw InvalidRequestException.beforeSending("resources", "a multi-lock takes 1.." + MAX_LOCKS + " resources, not " + resources.size());
        }
        for (String r : resources) {
            Ids.resource(r, "resources");
        }
        if (new HashSet<>(resources).size() != resources.size()) {
            throw InvalidRequestException.beforeSending("resources", "a multi-lock lists a resource twice");
        }
        this.c = c;
        this.resources = List.copyOf(resources);
        this.lockDelayMs = lockDelayMs;
    }

    public List<String> getResources() {
        return resources;
    }

    /** This multi-lock with a lock-delay on each of its locks (see {@link FencedLock#withLockDelay}). */
    public FencedMultiLock withLockDelay(Duration delay) {
        if (delay.isNegative() || delay.compareTo(FencedLock.MAX_LOCK_DELAY) > 0) {
            throw InvalidRequestException.beforeSending("lockDelayMs", "lock-delay " + delay + ": want 0..60s");
        }
        return new FencedMultiLock(c, resources, delay.toMillis());
    }

    private static long me() {
        return Thread.currentThread().getId();
    }

    // Its kind keeps the key apart from any lock's, whatever the resources are called.
    private Hold.Key key(long threadId) {
        return new Hold.Key(String.join(", ", resources), threadId, "multi");
    }

    // ---- acquiring ----

    /** Blocks until every lock is granted; each resource's token, in the order given. */
    public Map<String, Long> lockAndGetTokens() {
        return FenceviewClient.await(acquire(me(), -1, -1, null));
    }

    public Map<String, Long> lockAndGetTokens(long leaseTime, TimeUnit unit) {
        return FenceviewClient.await(acquire(me(), -1, Waiting.lease(leaseTime, unit), null));
    }

    /** Takes every lock if all are free now; null when any is held. */
    public Map<String, Long> tryLockAndGetTokens() {
        return Waiting.tryAwait(acquire(me(), 0, -1, null));
    }

    public Map<String, Long> tryLockAndGetTokens(long waitTime, TimeUnit unit) {
        return Waiting.tryAwait(acquire(me(), Waiting.waitMs(waitTime, unit), -1, null));
    }

    /** Waits up to waitTime for all, held for leaseTime (-1: the watchdog); null when they did not come free together. */
    public Map<String, Long> tryLockAndGetTokens(long waitTime, long leaseTime, TimeUnit unit) {
        return Waiting.tryAwait(acquire(me(), Waiting.waitMs(waitTime, unit), Waiting.lease(leaseTime, unit), null));
    }

    /**
     * As {@link #tryLockAndGetTokens(long, long, TimeUnit)}, but a refusal is a
     * {@link LockHeldException} whose {@link LockHeldException#held()} lists the locks
     * others hold.
     */
    public Map<String, Long> tryAcquire(long waitTime, long leaseTime, TimeUnit unit) {
        FenceviewClient.Answer[] refusal = new FenceviewClient.Answer[1];
        Map<String, Long> t = Waiting.tryAwait(acquire(me(), Waiting.waitMs(waitTime, unit), Waiting.lease(leaseTime, unit), refusal));
        if (t == null) {
            throw refusal[0] == null ? new FenceviewException(0, "fenceview: acquire-all gave up")
                    : Refusals.held(refusal[0], 0, String.join(", ", resources));
        }
        return t;
    }

    public CompletableFuture<Map<String, Long>> lockAndGetTokensAsync() {
        return acquire(me(), -1, -1, null);
    }

    public CompletableFuture<Map<String, Long>> tryLockAndGetTokensAsync(long waitTime, long leaseTime, TimeUnit unit, long threadId) {
        return acquire(threadId, Waiting.waitMs(waitTime, unit), Waiting.lease(leaseTime, unit), null);
    }

    private CompletableFuture<Map<String, Long>> acquire(long threadId, long waitMs, long leaseMs, FenceviewClient.Answer[] refusal) {
        boolean renewing = leaseMs < 0;
        long lease = renewing ? c.watchdogTimeout().toMillis() : leaseMs;
        String holder = c.holderId(threadId);
        return Waiting.run(c, "acquire-all", waitMs, chunk -> {
            Map<String, Object> in = Waiting.acquireBody(holder, lease, chunk, lockDelayMs);
            in.put("resources", resources);
            return c.call("POST", "/v1/locks/acquire-all", in, c.requestTimeout().plusMillis(chunk));
        }, (a, sent) -> granted(threadId, holder, a, lease, renewing, sent), a -> release(holder), refusal,
                0);
    }

    private Map<String, Long> granted(long threadId, String holder, FenceviewClient.Answer a, long lease, boolean renewing, long sent) {
        List<Object> grants = Json.list(a.body, "grants");
        if (grants.size() != resources.size()) {
            throw new FenceviewException(200, "fenceview: acquire-all answered " + grants.size() + " grants for " + resources.size() + " locks");
        }
        Map<String, FencingToken> tokens = new LinkedHashMap<>();
        long ms = 0;
        for (Object o : grants) {
            @SuppressWarnings("unchecked")
            Map<String, Object> g = (Map<String, Object>) o;
            String r = Json.str(g, "resourceId");
            tokens.put(r, FencingToken.ofGrant(r, g));
            ms = Json.lng(g, "leaseMs");
        }
        long leaseMs = ms > 0 ? ms : lease;
        Hold[] created = new Hold[1];
        Hold h = c.holds.compute(key(threadId), (k, old) -> {
            if (old != null && !old.ended) {
                return old;
            }
            created[0] = new Hold(c, k, holder, leaseMs, renewing, (renewMs, timeout) -> renewAll(holder, timeout));
            return created[0];
        });
        h.tokens = Collections.unmodifiableMap(tokens);
        h.granted(tokens.get(resources.get(0)), created[0] != null ? 1 : h.count() + 1);
        if (created[0] != null) {
            h.begin(sent);
        }
        Map<String, Long> out = new LinkedHashMap<>();
        tokens.forEach((r, t) -> out.put(r, t.number()));
        return Collections.unmodifiableMap(out);
    }

    /** Renews every lock at once: the answer is the first refusal, or the last success. */
    private CompletableFuture<FenceviewClient.Answer> renewAll(String holder, Duration timeout) {
        List<CompletableFuture<FenceviewClient.Answer>> calls = new ArrayList<>();
        for (String r : resources) {
            Map<String, Object> in = new LinkedHashMap<>();
            in.put("holder", holder);
            calls.add(c.call("POST", FenceviewClient.lockPath(r, "renew"), in, timeout));
        }
        return CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new)).thenApply(v -> {
            FenceviewClient.Answer last = null;
            for (CompletableFuture<FenceviewClient.Answer> f : calls) {
                last = f.join();
                if (!last.ok()) {
                    return last;
                }
            }
            return last;
        });
    }

    private CompletableFuture<FenceviewClient.Answer> release(String holder) {
        Map<String, Object> in = new LinkedHashMap<>();
        in.put("resources", resources);
        in.put("holder", holder);
        return c.call("POST", "/v1/locks/release-all", in, null);
    }

    // ---- releasing ----

    /**
     * Releases one hold of each lock for the current thread; at the last the watchdog
     * stops. After a lease of the thread's hold was lost it returns quietly (the others
     * are released all the same): {@link #leaseLost()} already said so.
     *
     * @throws IllegalMonitorStateException when this thread holds none of the locks
     *                                      and lost no lease of them
     */
    @Override
    public void unlock() {
        FenceviewClient.await(unlockAsync(me()));
    }

    public CompletableFuture<Void> unlockAsync(long threadId) {
        Hold h = c.holds.get(key(threadId));
        if (h != null && h.isLost()) {
            // As FencedLock's: the loss was signalled by leaseLost() and the guards.
            // The locks whose leases were not lost are still this thread's on the
            // server: give them back now rather than at the end of their leases.
            h.unlockLost();
            return release(c.holderId(threadId)).handle((a, err) -> null);
        }
        if (h != null && h.count() <= 1) {
            h.releasing(true);
        }
        return release(c.holderId(threadId)).handle((a, err) -> {
            if (err != null) {
                if (h != null) {
                    h.releasing(false);
                }
                throw FenceviewClient.rethrow(err);
            }
            if (!a.ok()) {
                if (h != null) {
                    h.releasing(false);
                }
                throw a.failure(Refusals.Op.OWNERSHIP, String.join(", ", resources), "release-all");
            }
            List<Object> notHeld = Json.list(a.body, "notHeld");
            if (!notHeld.isEmpty()) {
                if (h != null) {
                    // The thread held them all: a lease was lost, learnt here.
                    h.lose("not held at unlock: " + notHeld, null);
                    h.unlockLost();
                    return null;
                }
                throw new NotHeldException(String.join(", ", resources), "fenceview: attempt to unlock " + notHeld
                        + ", not locked by thread " + threadId);
            }
            if (h != null) {
                if (h.count() <= 1) {
                    h.finish();
                } else {
                    h.released(h.count() - 1);
                }
            }
            return null;
        });
    }

    // ---- state ----

    /**
     * The current thread's tokens by resource, in the order given, still there after a
     * lease was lost (to report it; guards refuse them); empty when it holds none.
     */
    public Map<String, Long> getTokens() {
        Hold h = c.holds.get(key(me()));
        Map<String, Long> out = new LinkedHashMap<>();
        if (h != null && h.tokens != null) {
            h.tokens.forEach((r, t) -> out.put(r, t.number()));
        }
        return Collections.unmodifiableMap(out);
    }

    /** The current thread's token of one lock with its signature, as {@link #getTokens()}; null when it holds none. */
    public FencingToken getFencingToken(String resource) {
        Hold h = c.holds.get(key(me()));
        return h == null || h.tokens == null ? null : h.tokens.get(resource);
    }

    /** Completes when any lease of the current thread's hold is found lost; cancelled after its last unlock. */
    public CompletableFuture<LeaseLostException> leaseLost() {
        Hold h = c.holds.get(key(me()));
        if (h == null) {
            CompletableFuture<LeaseLostException> f = new CompletableFuture<>();
            f.cancel(false);
            return f;
        }
        return FenceviewClient.relay(h.lost);
    }

    // ---- Lock ----

    @Override
    public void lock() {
        lockAndGetTokens();
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        Waiting.interruptibly(acquire(me(), -1, -1, null));
    }

    @Override
    public boolean tryLock() {
        return tryLockAndGetTokens() != null;
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit) {
        return tryLockAndGetTokens(time, unit) != null;
    }

    /** Redisson's {@code tryLock(waitTime, leaseTime, unit)}; leaseTime -1 for the watchdog. */
    public boolean tryLock(long waitTime, long leaseTime, TimeUnit unit) {
        return tryLockAndGetTokens(waitTime, leaseTime, unit) != null;
    }

    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException("fenceview: a multi-lock has no conditions");
    }
}
