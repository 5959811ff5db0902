package io.fenceview;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * A fenced lock on one resource, in the shape of Redisson's {@code RFencedLock}:
 * ownership per thread, re-entrant, and every grant (re-entrant ones included) takes a
 * new, larger fencing token from the server. Pass the token of the outermost grant to
 * every write made under the lock; the resource's guard refuses it once a newer
 * holder has written.
 *
 * <p>Without a lease time the lock's lease is the client's watchdog timeout (30 s by
 * default), renewed by a watchdog at a third of it until the last unlock. With a lease
 * time the lock is held for exactly that long and not renewed. Either way
 * {@link #leaseLost()} completes the moment the client learns the lease is gone.
 *
 * <p>A thread is a holder: the server knows it as {@link FenceviewClient#holderId(long)},
 * and only that thread (or code passing its id to the async methods) may unlock.
 * Waiting happens on the server, first come first served. One FencedLock may be
 * shared by all threads; several for the same resource see the same holds.
 */
public final class FencedLock extends Named implements Lock {
    /** One server-side wait of a blocking lock: long enough to be cheap, short enough for proxies. */
    static final long MAX_WAIT_CHUNK_MS = 60_000;

    /** The longest lock-delay the server takes. */
    public static final Duration MAX_LOCK_DELAY = Duration.ofSeconds(60);

    private final long lockDelayMs;
    private final boolean shared;

    FencedLock(FenceviewClient c, String resource) {
        this(c, resource, 0, false);
    }

    FencedLock(FenceviewClient c, String resource, long lockDelayMs, boolean shared) {
        super(c, "locks", resource);
        this.lockDelayMs = lockDelayMs;
        this.shared = shared;
    }

    /** Whether this is a read lock: held together with other readers, never beside a writer. */
    public boolean isShared() {
        return shared;
    }

    /** The key of threadId's hold: read and write holds of one thread are apart. */
    private Hold.Key key(long threadId) {
        return new Hold.Key(name, threadId, shared ? "read" : "lock");
    }

    /**
     * This lock with a lock-delay (Chubby's, Consul's) on every grant: should a lease
     * run out without an unlock (its holder vanished or stalled), nobody may take the
     * lock until delay after, so a write still in flight from the old holder lands or
     * dies first. Meanwhile the try methods answer null, {@link #tryAcquire} throws
     * {@link LockDelayException} and waiters keep waiting.
     */
    public FencedLock withLockDelay(Duration delay) {
        long ms = delay.toMillis();
        if (delay.isNegative() || delay.compareTo(MAX_LOCK_DELAY) > 0) {
            throw InvalidRequestException.beforeSending("lockDelayMs", "lock-delay " + delay + ": want 0..60s");
        }
        return new FencedLock(c, name, ms, shared);
    }

    /** The lock-delay of this lock's grants, 0 for none. */
    public Duration getLockDelay() {
        return Duration.ofMillis(lockDelayMs);
    }

    /**
     * As {@link #tryLockAndGetToken(long, long, TimeUnit)}, but the grant's whole token
     * comes back, and a refusal is an exception that says why.
     *
     * @throws LockHeldException  another holder has the lock (its holder and expiry)
     * @throws LockDelayException the lock is in its lock-delay (until when)
     */
    public FencingToken tryAcquire(long waitTime, long leaseTime, TimeUnit unit) {
        FenceviewClient.Answer[] refusal = new FenceviewClient.Answer[1];
        Long t = Waiting.tryAwait(acquire(me(), Waiting.waitMs(waitTime, unit), Waiting.lease(leaseTime, unit), refusal));
        if (t == null) {
            if (refusal[0] == null) {
                throw new FenceviewException(0, "fenceview: acquire " + name + " gave up");
            }
            throw Refusals.held(refusal[0], 0, name);
        }
        return getFencingToken();
    }

    private static long me() {
        return Thread.currentThread().getId();
    }

    // ---- acquiring ----

    /** Blocks until granted and returns the token; the watchdog renews the lease. */
    public Long lockAndGetToken() {
        return FenceviewClient.await(acquire(me(), -1, -1));
    }

    /** Blocks until granted, for a fixed lease (not renewed), and returns the token. */
    public Long lockAndGetToken(long leaseTime, TimeUnit unit) {
        return FenceviewClient.await(acquire(me(), -1, Waiting.lease(leaseTime, unit)));
    }

    /** Takes the lock if it is free now; the token, or null when it is held. */
    public Long tryLockAndGetToken() {
        return Waiting.tryAwait(acquire(me(), 0, -1));
    }

    /** Waits up to waitTime for the lock; the token, or null when it stayed held. */
    public Long tryLockAndGetToken(long waitTime, TimeUnit unit) {
        return Waiting.tryAwait(acquire(me(), Waiting.waitMs(waitTime, unit), -1));
    }

    /**
     * Waits up to waitTime for the lock, held for leaseTime (not renewed; -1 for the
     * watchdog); the token, or null when it stayed held.
     */
    public Long tryLockAndGetToken(long waitTime, long leaseTime, TimeUnit unit) {
        return Waiting.tryAwait(acquire(me(), Waiting.waitMs(waitTime, unit), Waiting.lease(leaseTime, unit)));
    }

    @Override
    public void lock() {
        lockAndGetToken();
    }

    /** Blocks until granted, for a fixed lease (Redisson's {@code lock(leaseTime, unit)}). */
    public void lock(long leaseTime, TimeUnit unit) {
        lockAndGetToken(leaseTime, unit);
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        Waiting.interruptibly(acquire(me(), -1, -1));
    }

    @Override
    public boolean tryLock() {
        return tryLockAndGetToken() != null;
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        return Waiting.interruptibly(acquire(me(), Waiting.waitMs(time, unit), -1)) != null;
    }

    /** Redisson's {@code tryLock(waitTime, leaseTime, unit)}; leaseTime -1 for the watchdog. */
    public boolean tryLock(long waitTime, long leaseTime, TimeUnit unit) throws InterruptedException {
        return Waiting.interruptibly(acquire(me(), Waiting.waitMs(waitTime, unit), Waiting.lease(leaseTime, unit))) != null;
    }

    public CompletableFuture<Long> lockAndGetTokenAsync() {
        return acquire(me(), -1, -1);
    }

    /** Takes the lock for the thread threadId (Redisson's {@code lockAsync(threadId)}). */
    public CompletableFuture<Long> lockAndGetTokenAsync(long threadId) {
        return acquire(threadId, -1, -1);
    }

    public CompletableFuture<Long> lockAndGetTokenAsync(long leaseTime, TimeUnit unit) {
        return acquire(me(), -1, Waiting.lease(leaseTime, unit));
    }

    public CompletableFuture<Long> tryLockAndGetTokenAsync() {
        return acquire(me(), 0, -1);
    }

    public CompletableFuture<Long> tryLockAndGetTokenAsync(long waitTime, TimeUnit unit) {
        return acquire(me(), Waiting.waitMs(waitTime, unit), -1);
    }

    public CompletableFuture<Long> tryLockAndGetTokenAsync(long waitTime, long leaseTime, TimeUnit unit) {
        return tryLockAndGetTokenAsync(waitTime, leaseTime, unit, me());
    }

    /** The same for the thread threadId, whose id the async unlock must then be given. */
    public CompletableFuture<Long> tryLockAndGetTokenAsync(long waitTime, long leaseTime, TimeUnit unit, long threadId) {
        return acquire(threadId, Waiting.waitMs(waitTime, unit), Waiting.lease(leaseTime, unit));
    }

    /**
     * Asks for the lock for threadId, waiting up to waitMs (-1: until granted), for
     * leaseMs (-1: the watchdog's lease, renewed). Completes with the token, or null when
     * the lock stayed held. Cancelling the future gives up; a grant that arrives after
     * that is released at once.
     */
    private CompletableFuture<Long> acquire(long threadId, long waitMs, long leaseMs) {
        return acquire(threadId, waitMs, leaseMs, null);
    }

    /** The same, keeping the last refusal in refusal[0] when refusal is not null. */
    private CompletableFuture<Long> acquire(long threadId, long waitMs, long leaseMs, FenceviewClient.Answer[] refusal) {
        boolean renewing = leaseMs < 0;
        long lease = renewing ? c.watchdogTimeout().toMillis() : leaseMs;
        String holder = c.holderId(threadId);
        return Waiting.run(c, "acquire " + name, waitMs, chunk -> {
            Map<String, Object> in = Waiting.acquireBody(holder, lease, chunk, lockDelayMs);
            if (shared) {
                in.put("shared", true);
            }
            return c.call("POST", path("acquire"), in, c.requestTimeout().plusMillis(chunk));
        }, (a, sent) -> granted(threadId, holder, a.body, lease, renewing, sent),
                // Nobody will unlock a grant its asker gave up on.
                a -> releaseQuietly(holder), token -> unlockAsync(threadId), refusal, 0);
    }

    private void releaseQuietly(String holder) {
        Map<String, Object> in = new LinkedHashMap<>();
        in.put("holder", holder);
        c.call("POST", path("release"), in, null);
    }

    /** Records a grant: a new hold with its watchdog, or one more re-entrant grant. */
    private long granted(long threadId, String holder, Map<String, Object> body, long lease, boolean renewing, long sent) {
        FencingToken t = FencingToken.ofGrant(name, body);
        long ms = Json.lng(body, "leaseMs");
        long leaseMs = ms > 0 ? ms : lease;
        Hold.Key key = key(threadId);
        Hold[] created = new Hold[1];
        Hold h = c.holds.compute(key, (k, old) -> {
            if (old != null && !old.ended) {
                return old;
            }
            created[0] = new Hold(c, k, holder, leaseMs, renewing);
            return created[0];
        });
        h.granted(t, (int) Json.lng(body, "holdCount"));
        if (created[0] != null) {
            h.begin(sent);
        }
        return t.number();
    }

    // ---- releasing ----

    /**
     * Releases one hold of the current thread; at the last one the watchdog stops.
     * After the thread's lease was lost it returns quietly: the loss was already
     * signalled by {@link #leaseLost()} (and a guard refuses the token), and an
     * exception here would only hide the one that explains what happened.
     *
     * @throws IllegalMonitorStateException when this thread does not hold the lock and
     *                                      its lease was not lost: it never locked it, or
     *                                      unlocked it already (a {@link LockOwnershipException}
     *                                      with the server's code)
     */
    @Override
    public void unlock() {
        FenceviewClient.await(unlockAsync(me()));
    }

    public CompletableFuture<Void> unlockAsync() {
        return unlockAsync(me());
    }

    /**
     * Releases one hold of the thread threadId, from any thread (Redisson's
     * {@code unlockAsync(threadId)}). Completes quietly after that thread's lease was
     * lost, and exceptionally with {@link IllegalMonitorStateException} when that thread
     * does not hold the lock otherwise.
     */
    public CompletableFuture<Void> unlockAsync(long threadId) {
        Hold.Key key = key(threadId);
        Hold h = c.holds.get(key);
        if (h != null && h.isLost()) {
            h.unlockLost();
            return CompletableFuture.completedFuture(null);
        }
        if (h != null && h.count() <= 1) {
            h.releasing(true);
        }
        String holder = c.holderId(threadId);
        Map<String, Object> in = new LinkedHashMap<>();
        in.put("holder", holder);
        return c.call("POST", path("release"), in, null).handle((a, err) -> {
            if (err != null) {
                if (h != null) {
                    h.releasing(false);
                }
                throw FenceviewClient.rethrow(err);
            }
            if (a.ok()) {
                int left = (int) Json.lng(a.body, "holdCount");
                if (h != null) {
                    if (left == 0) {
                        h.finish();
                    } else {
                        h.released(left);
                    }
                }
                return null;
            }
            RuntimeException refused = a.failure(Refusals.Op.OWNERSHIP, name,
                    "unlock " + name + " by thread " + threadId + " (holder " + holder + ")");
            if (h != null && refused instanceof LockOwnershipException) {
                // The thread held the lock and the server no longer counts it as the
                // holder: its lease was lost, and this is where the client learns it.
                h.lose("unlock refused: " + refused.getMessage(), refused);
                h.unlockLost();
                return null;
            }
            if (h != null) {
                h.releasing(false);
            }
            throw refused;
        });
    }

    /**
     * Frees the lock whoever holds it (admin; the server's expire). The holder's next
     * renewal is refused and its lease-lost future completes. Returns whether it was
     * locked just before.
     */
    public boolean forceUnlock() {
        boolean was = isLocked();
        FenceviewClient.Answer a = FenceviewClient.await(c.admin("POST", path("expire"), null));
        if (!a.ok()) {
            throw a.failure(Refusals.Op.OTHER, name, "force-expire " + name);
        }
        return was;
    }

    // ---- state ----

    /** Whether anyone holds the lock now (asks the server). */
    public boolean isLocked() {
        return c.getLockState(name).locked();
    }

    /** Whether the current thread holds the lock now (asks the server). */
    public boolean isHeldByCurrentThread() {
        return isHeldByThread(me());
    }

    public boolean isHeldByThread(long threadId) {
        LockState s = c.getLockState(name);
        return s.locked() && c.holderId(threadId).equals(s.holder());
    }

    /** The current thread's hold count on the server (0 when it does not hold the lock). */
    public int getHoldCount() {
        LockState s = c.getLockState(name);
        return s.locked() && c.holderId(me()).equals(s.holder()) ? s.holdCount() : 0;
    }

    /** Milliseconds left of the lease, as Redisson: -2 when the lock is free. */
    public long remainTimeToLive() {
        LockState s = c.getLockState(name);
        return s.locked() ? s.remainingMs() : -2;
    }

    /**
     * The token of the current thread's latest grant; after its lease was lost, still
     * that token (until the thread's unlocks), so the refusal can be reported and a
     * guard refuses it. Null when the thread holds no lock.
     */
    public Long getToken() {
        FencingToken t = getFencingToken();
        return t == null ? null : t.number();
    }

    /** The current thread's latest grant's token with its signature, as {@link #getToken()}. */
    public FencingToken getFencingToken() {
        Hold h = c.holds.get(key(me()));
        return h == null ? null : h.token();
    }

    /**
     * Completes with the cause the moment the current thread's lease is found lost
     * (a renewal refused, the server unreachable until the lease ran out, a fixed lease
     * over). When the hold ends by its last unlock it completes exceptionally with a
     * {@link java.util.concurrent.CancellationException}: it will never be lost. When
     * the thread holds no lease it is already cancelled.
     */
    public CompletableFuture<LeaseLostException> leaseLost() {
        return leaseLost(me());
    }

    public CompletableFuture<LeaseLostException> leaseLost(long threadId) {
        Hold h = c.holds.get(key(threadId));
        if (h == null) {
            CompletableFuture<LeaseLostException> f = new CompletableFuture<>();
            f.cancel(false);
            return f;
        }
        // A relay, so that a caller completing or cancelling it cannot touch the hold's own.
        CompletableFuture<LeaseLostException> f = new CompletableFuture<>();
        h.lost.whenComplete((e, cancelled) -> {
            if (cancelled != null) {
                f.cancel(false);
            } else {
                f.complete(e);
            }
        });
        return f;
    }

    /** Not supported, as in Redisson's fenced lock. */
    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException("fenceview: a FencedLock has no conditions");
    }
}
