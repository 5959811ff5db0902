package io.fenceview;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * One period of ownership of one lock by one thread, from its first grant to its
 * last unlock or the loss of its lease, with the watchdog that renews it.
 *
 * <p>The watchdog renews at a third of the lease and retries failed renewals more
 * often; the lease is counted from when the last successful request was sent, so the
 * client never believes in a lease the server has already ended. A refused renewal,
 * or a lease that runs out unrenewed, ends the hold as lost.
 */
final class Hold {
    /**
     * Whose hold: a lock's per thread, a permit's per slot, a multi-lock's per list
     * and thread, a leadership's per election (kind tells them apart).
     */
    record Key(String resource, long threadId, String kind) {
        Key(String resource, long threadId) {
            this(resource, threadId, "lock");
        }
    }

    /** One renewal of the hold's lease: a call whose answer is a lock's renew answer. */
    interface Renewal {
        CompletableFuture<FenceviewClient.Answer> renew(long leaseMs, java.time.Duration timeout);
    }

    private final FenceviewClient c;
    final Key key;
    final String holder;
    private final boolean renewing;
    private final Renewal renewal;
    final CompletableFuture<LeaseLostException> lost = new CompletableFuture<>();
    /** A multi-lock's tokens, by resource in the order asked; null for other holds. */
    volatile Map<String, FencingToken> tokens;

    // Guarded by this.
    private long leaseMs;
    private FencingToken token;
    private int count;
    private long leaseEnd; // System.nanoTime()
    private boolean releasing;
    private ScheduledFuture<?> renewTask;
    private ScheduledFuture<?> expiryTask;
    volatile boolean ended;
    /**
     * Ended by the loss of its lease, not by a last unlock. A lost hold stays in the
     * client's map, with its last token, until its holder has unlocked it as often as
     * it locked it (or a new grant replaces it): the token can still be reported and
     * shown to a guard, which refuses it, and those unlocks return quietly.
     */
    private boolean wasLost;

    Hold(FenceviewClient c, Key key, String holder, long leaseMs, boolean renewing) {
        this(c, key, holder, leaseMs, renewing, null);
    }

    /** A hold renewed by renewal (null: the renew of the lock key.resource()). */
    Hold(FenceviewClient c, Key key, String holder, long leaseMs, boolean renewing, Renewal renewal) {
        this.c = c;
        this.key = key;
        this.holder = holder;
        this.leaseMs = leaseMs;
        this.renewing = renewing;
        this.renewal = renewal != null ? renewal : (ms, timeout) -> {
            Map<String, Object> in = new LinkedHashMap<>();
            in.put("holder", holder);
            return c.call("POST", FenceviewClient.lockPath(key.resource(), "renew"), in, timeout);
        };
    }

    synchronized FencingToken token() {
        return token;
    }

    synchronized int count() {
        return count;
    }

    synchronized void granted(FencingToken t, int holdCount) {
        token = t;
        count = holdCount;
    }

    /**
     * Starts a new hold whose grant was asked for at sentNanos, or loses it at once
     * when its client was closed meanwhile (no watchdog would ever stop).
     */
    void begin(long sentNanos) {
        if (c.isClosed()) {
            lose("the client was closed", null);
        } else {
            start(sentNanos);
        }
    }

    /** Starts the watchdog of a new hold whose grant was asked for at sentNanos. */
    synchronized void start(long sentNanos) {
        leaseEnd = sentNanos + TimeUnit.MILLISECONDS.toNanos(leaseMs);
        armExpiry();
        if (renewing) {
            // A third of the lease after the grant was asked for, not after its answer
            // was read: a slow answer (a cold JVM, a loaded machine) must not eat into
            // the time the first renewal has.
            long elapsed = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sentNanos);
            scheduleRenewal(Math.max(1, interval() - elapsed));
        }
    }

    private long interval() {
        return Math.max(leaseMs / 3, 1);
    }

    private long retry() {
        return Math.min(Math.max(leaseMs / 10, 10), interval());
    }

    private void armExpiry() {
        if (expiryTask != null) {
            expiryTask.cancel(false);
        }
        long delay = leaseEnd - System.nanoTime();
        expiryTask = schedule(this::checkExpiry, Math.max(delay, 0), TimeUnit.NANOSECONDS);
    }

    private void scheduleRenewal(long ms) {
        renewTask = schedule(this::renew, ms, TimeUnit.MILLISECONDS);
    }

    private ScheduledFuture<?> schedule(Runnable r, long delay, TimeUnit unit) {
        try {
            return c.scheduler.schedule(r, delay, unit);
        } catch (RejectedExecutionException e) {
            return null; // the client is closing; close() ends this hold
        }
    }

    private void checkExpiry() {
        boolean over;
        synchronized (this) {
            over = !ended && System.nanoTime() - leaseEnd >= 0;
        }
        if (over) {
            lose(renewing ? "no renewal answered before the lease ran out" : "the fixed lease ran out", null);
        }
    }

    private void renew() {
        long interval;
        long ms;
        synchronized (this) {
            if (ended) {
                return;
            }
            interval = interval();
            ms = leaseMs;
        }
        long sent = System.nanoTime();
        // A hung renewal must not outlive the interval: the next one gets a fresh try.
        CompletableFuture<FenceviewClient.Answer> f;
        try {
            f = renewal.renew(ms, java.time.Duration.ofMillis(interval));
        } catch (RuntimeException e) {
            f = CompletableFuture.failedFuture(e);
        }
        f.whenComplete((a, err) -> renewed(sent, a, err));
    }

    private void renewed(long sent, FenceviewClient.Answer a, Throwable err) {
        String lostWhy = null;
        Throwable lostCause = null;
        synchronized (this) {
            if (ended) {
                return;
            }
            if (err == null && a.ok()) {
                long ms = Json.lng(a.body, "leaseMs");
                if (ms > 0) {
                    leaseMs = ms;
                }
                leaseEnd = sent + TimeUnit.MILLISECONDS.toNanos(leaseMs);
                armExpiry();
                scheduleRenewal(interval());
                return;
            }
            Throwable cause = err != null ? FenceviewClient.unwrap(err) : a.failure(Refusals.Op.OWNERSHIP, key.resource(), "renew " + key.resource());
            RuntimeException fe = cause instanceof RuntimeException ? (RuntimeException) cause
                    : new FenceviewException("fenceview: renewal: " + cause, cause);
            // No answer, overload, no leader: try again while the lease lasts.
            boolean temporary = fe instanceof FenceviewException && ((FenceviewException) fe).isTemporary();
            if (!temporary) {
                if (releasing) {
                    return; // the last unlock is on its way: its answer ends the hold
                }
                lostWhy = "renewal refused: " + fe.getMessage();
                lostCause = fe;
            } else if (System.nanoTime() - leaseEnd >= 0) {
                lostWhy = "server unreachable until the lease ran out";
                lostCause = fe;
            } else {
                scheduleRenewal(retry());
                return;
            }
        }
        lose(lostWhy, lostCause);
    }

    /** Marks that the last unlock was sent (or, with false, that it failed to arrive). */
    synchronized void releasing(boolean on) {
        releasing = on;
    }

    synchronized void released(int left) {
        count = left;
        releasing = false;
    }

    /**
     * Ends the hold because its lease is gone; completes {@link #lost}. The hold stays
     * in the client's map (see {@link #wasLost}).
     */
    void lose(String why, Throwable cause) {
        LeaseLostException e;
        synchronized (this) {
            if (ended) {
                return;
            }
            end();
            wasLost = true;
            e = new LeaseLostException(key.resource(), token == null ? 0 : token.number(), why, cause);
        }
        lost.complete(e);
    }

    /** Whether the hold ended by the loss of its lease. */
    synchronized boolean isLost() {
        return wasLost;
    }

    /**
     * One unlock of a lost hold: nothing to release on the server (the lease is gone),
     * so it only counts; the last one forgets the hold.
     */
    void unlockLost() {
        boolean last;
        synchronized (this) {
            count = Math.max(0, count - 1);
            last = count == 0;
        }
        if (last) {
            c.holds.remove(key, this);
        }
    }

    /** Ends the hold after its last unlock; {@link #lost} is cancelled: it will never be lost. */
    void finish() {
        synchronized (this) {
            if (ended) {
                return;
            }
            end();
        }
        c.holds.remove(key, this);
        lost.cancel(false);
    }

    private void end() {
        ended = true;
        if (renewTask != null) {
            renewTask.cancel(false);
        }
        if (expiryTask != null) {
            expiryTask.cancel(false);
        }
    }
}
